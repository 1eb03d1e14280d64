"""The scripted broker's end of a link a client library attached: the verbs client cases are written in.

This module owns `SendingEnd` (the client receives: our end sends transfers, answers drains, reads the
client's credit) and `ReceivingEnd` (the client sends: our end grants credit, takes and settles transfers,
holds its reads so a frame of ours crosses the client's transfers in flight). They speak the broker cases'
language from the other seat: where our end does what a broker case's link does it has that link's name
(`link.flow`, `link.echo(requirement=)`, `link.expect_transfers(n, requirement=...)`, `link.expect_no_transfer`,
`link.flows_after`, `link.take_arrived`, `link.hold_reads_after`, `link.send_crossing`), and findings go
through `ctx.require` / `ctx.halt`. Session fields of our flows come from the peer's bookkeeping; a flow
that must not open the session window says so (`keep_window()`), because the window is the barrier the
client must respect in order.

Transfers we send are settled as the link's negotiated snd-settle-mode says: pre-settled only when the
client asked for `settled`; otherwise unsettled (as brokers send by default), and the client settles them
through its library's own API. Transfers we take are accepted and settled when they are unsettled.
"""

from __future__ import annotations

from typing import Any, Callable

from ..peer import ExpectationTimeout, PeerError, UnexpectedFrame
from ..wire import AmqpValue, Close, End, Flow, Transfer, encode_message, serial_add, serial_diff
from . import crossing as crossings
from .crossing import Crossing

SND_SETTLED = 1


class LinkEnd:
    """Our end of one link the client attached: its name, the client's handle and ours, our channel."""

    def __init__(self, conn, attach_frame, our_handle: int):
        body = attach_frame.body
        self.conn, self.ctx, self.peer = conn, conn.ctx, conn.peer
        self.name = str(body.name)
        self.client_handle = int(body.handle)
        self.handle = our_handle
        self.client_channel = attach_frame.channel
        self.channel = conn.our_channel(attach_frame.channel)
        self.attach = body
        self.attached_at = 0           # arrival position once our attach went out (frames after it saw it)

    @property
    def state(self):
        return self.peer.state.link(self.channel, self.handle)

    @property
    def session(self):
        return self.peer.state.sessions[self.channel]

    @property
    def delivery_count(self) -> int | None:
        return self.state.delivery_count

    # -- our frames ------------------------------------------------------------------------------------------

    def flow(self, **fields):
        """Our flow for this link; session fields and our delivery-count from the bookkeeping unless given."""
        return self.peer.flow(self.channel, handle=self.handle, **fields)

    def session_flow(self, **fields):
        """A flow on this link's session without this link's handle (e.g. `incoming_window=` to open our
        window; `handle=`: one the client never attached, 2.7.4/103)."""
        return self.peer.flow(self.channel, **fields)

    def echo(self, *, requirement: str | None, settled: bool = False, **fields):
        """Our flow for this link with `echo=true` (and `fields`); returns the client's next flow for the link
        after it, within the answer window. No answer: a finding on `requirement` (halts); with requirement
        None (echo only as a means), None. Unless `settled`, the client's own flows stop first (a flow it
        sends on attach is not the answer), as `SenderScript.echo` lets the broker settle."""
        if not settled:
            self.settle_flows()
        mark = self.peer.mark()             # its answer comes after our echo
        self.flow(echo=True, **fields)
        reply = self.await_flow(timeout=self.ctx.answer_window(), after=mark)
        if reply is None and requirement is not None:
            self.ctx.halt(requirement, f"the client's {'receiver' if isinstance(self, SendingEnd) else 'sender'} "
                          "did not answer our echo", expected="its flow state",
                          actual=f"no flow within {self.ctx.answer_window():.1f} s", conn=self.conn)
        return reply

    def detach(self, error: Any = None):
        """Our detach of this link (closed)."""
        return self.peer.detach(self.channel, self.handle, error=error)

    @property
    def their_initial_id(self) -> int:
        """The next-outgoing-id of the client's begin: its first transfer-id on this session."""
        begin = self.session.remote_begin
        return int(begin.next_outgoing_id) if begin is not None else 0

    def window_limit(self) -> int | None:
        """The transfer-id up to which (exclusive) our incoming-window lets the client send (crossing.py)."""
        return crossings.window_limit(self.peer, self.channel, self.their_initial_id)

    def keep_window(self) -> dict:
        """Session fields for a flow that leaves our window limit where it is: the window stays the barrier
        the client must respect."""
        return crossings.keep_window(self.session, self.window_limit())

    def end_session(self, error: Any = None):
        return self.peer.end(self.channel, error=error)

    # -- the client's flows ------------------------------------------------------------------------------------

    def expect_flow(self, *, timeout: float | None = None, after: int | None = None, **fields):
        """The client's next flow for this link (fields as `Peer.expect`); ExpectationTimeout if none."""
        return self.conn.expect(Flow, timeout=timeout, after=after, handle=self.client_handle, **fields)

    def await_flow(self, *, timeout: float | None = None, after: int | None = None, **fields):
        """The client's next flow for this link, or None (judges nothing)."""
        try:
            return self.expect_flow(timeout=timeout, after=after, **fields)
        except (ExpectationTimeout, PeerError):
            return None

    def await_flow_until(self, pending, *, timeout: float, **fields):
        """The client's next flow for this link, or None: bounded by `timeout`, and once the application's
        command `pending` is answered (the library is done with it) by one quiet period more
        (`ClientConnection.expect_until`)."""
        return self.conn.await_frame_until(Flow, pending, timeout=timeout, handle=self.client_handle, **fields)

    def flows_after(self, position: int = 0) -> list:
        """The client's flows for this link that arrived at or after arrival position `position` (default:
        all), as `ReceiverScript.flows_after`."""
        return [f for f in self.peer.arrived[position:] if isinstance(getattr(f, "body", None), Flow)
                and f.channel == self.client_channel and f.body.handle == self.client_handle]

    def settle_flows(self) -> None:
        """Wait until the client has sent no flow for a quiet period (bounded: `ClientConnection.settle_down`):
        its top-ups and a flow it sends on attach have come."""
        self.conn.settle_down(Flow)

    def await_ending(self, kinds=(End, Close), *, timeout: float | None = None):
        """The client's frame of `kinds` (a detach, its end of a session, its close of the connection), or None
        within `timeout` (default the answer window): judges nothing, the caller says what it means (as
        `SessionScript.await_session_error`)."""
        return self.conn.await_frame(kinds, timeout=self.ctx.answer_window() if timeout is None else timeout)

    def hold_reads(self) -> None:
        """From now on, hold our reads: what the client sends next stays in our receive buffer, unread, until
        `cross` reads on (arm before asking the application for the frame that must cross ours)."""
        self.peer.hold_reads_after(None)

    def cross(self, awaited: Callable[[Any], bool], send: Callable[[], Any], what: str, *,
              timeout: float | None = None) -> Crossing:
        """With our reads held (armed by the case): once a frame of the client's that `awaited` accepts is in
        our receive buffer, unread, `send()` ours, then read on (crossing.py); recorded in the observations."""
        return crossings.cross(self.ctx, self.peer, awaited, send, what, timeout=timeout)

    def position(self, frame) -> int:
        """The arrival position of a client frame (comparable with `peer.mark()`)."""
        return next((i for i, f in enumerate(self.peer.arrived) if f is frame), -1)


class SendingEnd(LinkEnd):
    """The client receives on this link: our end is the sender."""

    @property
    def presettled(self) -> bool:
        return self.attach.snd_settle_mode is not None and int(self.attach.snd_settle_mode) == SND_SETTLED

    def transfer(self, body: str, **fields):
        """One message (an AMQP value) as a transfer, settled as the negotiated settle mode says."""
        fields.setdefault("settled", True if self.presettled else None)
        return self.peer.transfer(self.channel, self.handle, encode_message(AmqpValue(body)), **fields)

    def expect_credit(self, *, timeout: float | None = None):
        """The client's flow granting credit (link-credit > 0)."""
        return self.expect_flow(timeout=timeout, link_credit=lambda c: c is not None and c > 0)

    def drained(self, request=None, *, drain: bool = True):
        """As the sender with nothing to send: advance delivery-count to the client's limit (its latest flow,
        or `request`) and send flow(link-credit=0), as 2.6.7 asks of a drained sender."""
        flow = request.body if request is not None else self.state.remote_flow
        dc = self.delivery_count
        if flow is not None and flow.link_credit is not None:
            base = flow.delivery_count if flow.delivery_count is not None else dc
            limit = serial_add(int(base), int(flow.link_credit))
            if serial_diff(dc, limit) > 0:
                dc = limit
        sent = self.flow(delivery_count=dc, link_credit=0, drain=drain)
        state = self.state                      # our sender's count moved without a transfer: the books say so
        state.delivery_count, state.link_credit = dc, 0
        return sent


class ReceivingEnd(LinkEnd):
    """The client sends on this link: our end is the receiver."""

    def settle(self, frame) -> None:
        """Accept and settle a transfer the client sent unsettled."""
        if not frame.body.settled:
            self.peer.disposition(self.channel, first=int(frame.body.delivery_id), role=True, settled=True)

    def expect_transfers(self, n: int, *, requirement: str | None = None, timeout: float | None = None) -> list:
        """The client's next `n` transfers on this link, each settled as taken. Fewer within the bound: a
        finding on `requirement` that halts the case (None: ExpectationTimeout)."""
        got = []
        while len(got) < n:
            try:
                frame = self.conn.expect(Transfer, timeout=timeout, handle=self.client_handle)
            except ExpectationTimeout as exc:
                if requirement is None:
                    raise
                self.ctx.halt(requirement, f"expected {n} transfers from the client, {len(got)} arrived",
                              expected=f"{n} transfers", actual=str(exc), conn=self.conn)
            self.settle(frame)
            got.append(frame)
        return got

    def take_arrived(self) -> list:
        """Every transfer of this link already read and not yet taken (settled as they are taken), as
        `ReceiverScript.take_arrived`."""
        taken = []
        while True:
            try:
                taken += self.expect_transfers(1, timeout=0)
            except (ExpectationTimeout, PeerError):
                return taken

    def hold_reads_after(self, transfers: int) -> None:
        """Arm a hold of our reads after the client's `transfers`-th transfer on this link from now: what it
        sends next stays in our receive buffer, unread, until `send_crossing` (arm before granting credit)."""
        self.peer.hold_reads_after(crossings.transfers_held_after(transfers, self.client_channel, self.client_handle))

    def send_crossing(self, send: Callable[[], Any], what: str, *, timeout: float | None = None) -> Crossing:
        """Once a transfer of the client's is held unread (sent before the client can have seen what we send
        now), `send()` our frame(s), then read on (`LinkEnd.cross`)."""
        handle, channel = self.client_handle, self.client_channel
        return self.cross(lambda f: isinstance(f.body, Transfer) and f.channel == channel
                          and f.body.handle == handle, send, what, timeout=timeout)

    # -- the session window as a barrier ---------------------------------------------------------------------

    def transfer_ids(self) -> list[tuple[int, Any]]:
        """(transfer-id, frame) of every transfer the client sent on this link's session so far."""
        return crossings.transfer_ids(self.peer, self.client_channel, self.their_initial_id)

    def beyond(self, limit: int, *, also_after=None) -> list:
        """The client's transfers on this link whose transfer-id is at or past `limit` (and, with `also_after`,
        those that arrived after that frame of the client's), in arrival order."""
        start = self.position(also_after) if also_after is not None else None
        late = []
        for tid, f in self.transfer_ids():
            if f.body.handle != self.client_handle:
                continue
            if serial_diff(limit, tid) >= 0 or (start is not None and self.position(f) > start):
                late.append(f)
        return late

    def take_until_quiet(self, quiet: float | None = None, limit: int = 10000) -> list:
        """Take (and settle) every transfer the client sends until none came for `quiet` seconds (default the
        answer window): a receiver handling what arrives, as brokers do."""
        taken: list = []
        wait = quiet if quiet is not None else self.ctx.answer_window()
        while len(taken) < limit:
            try:
                taken += self.expect_transfers(1, timeout=wait)
            except (ExpectationTimeout, PeerError):
                break
        return taken

    def expect_no_transfer(self, *, requirement: str, why: str, quiet: float | None = None) -> None:
        """No transfer on this link within a quiet period (`quiet`, default the answer window): the client
        is a local process on loopback; one that came is a finding on `requirement` naming it."""
        try:
            self.conn.expect_nothing(Transfer, quiet=quiet if quiet is not None else self.ctx.answer_window(),
                                     handle=self.client_handle)
        except UnexpectedFrame as extra:
            self.ctx.add_finding(requirement, f"the client sent a transfer {why}", conn=self.conn,
                                 frame=extra.frame, expected="no transfer")


__all__ = ["Crossing", "LinkEnd", "ReceivingEnd", "SendingEnd"]
