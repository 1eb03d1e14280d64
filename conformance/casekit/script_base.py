"""What the connection, session and link scripts share.

This module owns `AUTO` (fill a field from tracked state), `Excess` (what a broker did with transfers sent
beyond its credit or window), `ScriptError`, the message body of transfer frames (`_body_of`: an undecodable
one is a suite error), the text of what arrived before a wait ran out, and `LinkScript`, the base of the
receiver and sender scripts (its attach, state and the checks on a flow's link-credit and delivery-count).
"""

from __future__ import annotations

from enum import Enum

from ..peer import ExpectationTimeout, PeerError, summarize
from ..wire import Attach, Close, Data, Detach, End, Flow, SequenceNo, DecodeError, decode_all
from .findings import SuiteError

AUTO = object()   # "fill this field from tracked state"


class Excess(str, Enum):
    """What a broker did with transfers sent beyond the credit it granted (2.6.7)."""

    HANDLED = "handled"          # no error: handled as usual (queued)
    DETACHED = "detached"        # detached the link with transfer-limit-exceeded
    OTHER = "other"              # answered with another detach/end/close
    DROPPED = "dropped"          # dropped the connection without a close frame

    def __str__(self) -> str:
        return self.value


class ScriptError(Exception):
    """The case asked for something it cannot do (a bug in the case, or the broker gave too little)."""


def _body_of(frames) -> bytes:
    """The data section of the message the transfer frames carry (the payload when it has none). A payload
    that does not decode is a suite error naming the transfer: never raw bytes judged as if they were a body."""
    payload = b"".join(f.payload for f in frames)
    try:
        return next((section.value for section in decode_all(payload) if isinstance(section, Data)), payload)
    except DecodeError as exc:
        raise SuiteError(f"the message in {summarize(frames[0])} does not decode ({exc}): no body to judge") from None


def _arrived_text(exc: PeerError) -> str:
    arrived = getattr(exc, "arrived", []) or []
    return "; ".join(summarize(f) for f in arrived[-6:]) or "nothing"


class LinkScript:
    is_sender = False

    def __init__(self, session: SessionScript, queue: str, name: str, handle: int):
        self.session = session
        self.ctx = session.ctx
        self.peer = session.peer
        self.queue = queue
        self.name = name
        self.handle = handle
        self.connection = session.connection
        self.broker_attach: Attach | None = None
        self._mark = 0

    @property
    def state(self):
        return self.session.state.links[self.handle]

    @property
    def broker_handle(self) -> int:
        return self.state.remote_handle

    def ended_by(self, frame) -> bool:
        """Whether `frame` (one the broker sent) ends this link (its detach of it), its session or the
        connection."""
        return self.session.ended_by(frame) or (isinstance(frame.body, Detach) and self._is_for_link(frame))

    def is_flow_for(self, frame) -> bool:
        """Whether `frame` (one the broker sent) is a flow for this link."""
        return isinstance(getattr(frame, "body", None), Flow) and self._is_for_link(frame)

    def _is_for_link(self, frame) -> bool:
        return frame.channel == self.session.remote_channel and frame.body.handle == self.broker_handle

    def _await_attach(self) -> None:
        try:
            frame = self.peer.expect((Attach, Detach, End, Close),
                                     where=lambda f: not isinstance(f.body, Attach) or f.body.name == self.name)
        except ExpectationTimeout as exc:
            raise ScriptError(f"the broker did not answer the attach of {self.name}: {exc}") from None
        if not isinstance(frame.body, Attach):
            raise ScriptError(f"the broker refused the link to {self.queue}: {summarize(frame)}")
        self.broker_attach = frame.body
        if frame.body.source is None and frame.body.target is None:
            # a refused attach is followed by a detach (2.6.3)
            try:
                detach = self.peer.expect(Detach, timeout=self.ctx.options.quiet_period)
                raise ScriptError(f"the broker refused the link to {self.queue}: {summarize(detach)}")
            except ExpectationTimeout:
                pass

    @property
    def delivery_count(self):
        return SequenceNo(self.state.delivery_count)

    def require_credit(self, flow: Flow, expected: int, *, requirement: str, why: str) -> None:
        got = flow.link_credit
        self.ctx.require(got is not None and int(got) == expected, requirement,
                         f"link-credit {got} in the broker's flow, expected {expected}: {why}",
                         expected=f"link-credit {expected}", actual=f"link-credit {got}")

    def require_delivery_count(self, flow: Flow, expected: int, *, requirement: str, why: str) -> None:
        expected = int(expected) & 0xFFFFFFFF
        got = flow.delivery_count
        self.ctx.require(got is not None and int(got) == expected, requirement,
                         f"delivery-count {'missing' if got is None else f'{int(got):#x}'}, expected {expected:#x}: {why}",
                         expected=f"delivery-count {expected:#x}",
                         actual="delivery-count absent" if got is None else f"delivery-count {int(got):#x}")
