"""What a case works with: queues on the broker, scripted connections, sessions and links, and the
checks that turn what came back into a verdict.

This module owns the vocabulary cases are written in (`ctx.queue`, `ctx.session`, `link.flow`,
`link.expect_transfers`, ...). Each helper sends exactly the frames its name says, through the scripted
peer, and nothing behind the case's back. Expectations that name a requirement turn a timeout or an
unexpected frame into a violation of that requirement; everything else that fails is an ERROR.
"""

from __future__ import annotations

import contextlib
import itertools
import re
from typing import Any

from .. import catalogue
from ..peer import ConnectionLost, ExpectationTimeout, Peer, PeerError, Timeouts, UnexpectedFrame, summarize
from ..verdict import Verdict
from ..wire import (
    Accepted, Attach, Begin, Close, Data, Detach, Disposition, End, Flow, Source, Target, Transfer, decode_all,
    encode_message, serial_add, serial_diff,
)
from .base import CaseConclusion, CaseUnsupported, Outcome, violation

AUTO = object()   # "fill this field from tracked state"
_counter = itertools.count(1)


class ScriptError(Exception):
    """The case asked for something it cannot do (a bug in the case, or the broker gave too little)."""


def _body_of(frames) -> bytes:
    payload = b"".join(f.payload for f in frames)
    try:
        for section in decode_all(payload):
            if isinstance(section, Data):
                return section.value
    except Exception:
        pass
    return payload


class CaseContext:
    def __init__(self, spec, broker, options):
        self.spec = spec
        self.broker = broker
        self.options = options
        self.observations: dict[str, Any] = {}
        self.connections: list[ConnectionScript] = []
        self._queues: list[str] = []
        self._preloaded: dict[str, list[bytes]] = {}
        self._slug = re.sub(r"[^a-z0-9]+", "-", spec.id.lower()).strip("-")

    # -- timeouts ----------------------------------------------------------------------------------------

    @property
    def timeouts(self) -> Timeouts:
        return Timeouts(frame=self.options.frame_timeout, quiet=self.options.quiet_period,
                        connect=self.options.connect_timeout)

    # -- queues ------------------------------------------------------------------------------------------

    def queue(self, preload: int = 0, *, body_size: int | None = None, max_length: int | None = None) -> str:
        """A fresh queue for this case only (deleted afterwards), optionally preloaded with N messages."""
        if max_length is not None:
            self.need_hook("queue_length_limit")
        name = self.broker.unique_queue(f"c{self._slug}")
        self.broker.create_queue(name, max_length=max_length)
        self._queues.append(name)
        self._preloaded[name] = []
        if preload:
            self.preload(name, preload, body_size=body_size)
        return name

    def preload(self, queue: str, count: int, *, body_size: int | None = None) -> None:
        start = len(self._preloaded.setdefault(queue, []))
        bodies = []
        for i in range(start, start + count):
            body = f"{queue}#{i}".encode()
            if body_size:
                body = (body + b"." * body_size)[:body_size]
            bodies.append(body)
        self.broker.preload(queue, bodies)
        self._preloaded[queue].extend(bodies)

    def preloaded_bodies(self, queue: str) -> list[bytes]:
        return list(self._preloaded.get(queue, []))

    def address(self, queue: str, role: str) -> str:
        return self.broker.queue_address(queue, role)

    # -- connections -------------------------------------------------------------------------------------

    def connect(self, **open_fields) -> "ConnectionScript":
        peer = Peer.connect(self.broker.url, timeouts=self.timeouts, tls=self.broker.tls)
        conn = ConnectionScript(self, peer, len(self.connections) + 1)
        self.connections.append(conn)
        peer.transcript.label = "broker"
        conn.broker_open = peer.handshake(sasl=self.broker.sasl_mechanism,
                                          container_id=f"amqp-conformance-{self._slug}-{next(_counter)}",
                                          **open_fields)
        return conn

    def session(self, *, max_frame_size: int | None = None, **begin_fields) -> "SessionScript":
        """A new connection with one session on it."""
        open_fields = {"max_frame_size": max_frame_size} if max_frame_size else {}
        return self.connect(**open_fields).begin(**begin_fields)

    # -- broker-wide hooks ---------------------------------------------------------------------------------

    def need_hook(self, name: str) -> None:
        if not self.broker.has_hook(name):
            raise CaseUnsupported(f"the broker profile has no {name!r} hook; add one to the profile to run this case")

    @contextlib.contextmanager
    def alarm(self, kind: str):
        self.need_hook(f"{kind}_alarm")
        self.broker.set_alarm(kind, True)
        try:
            yield
        finally:
            self.broker.set_alarm(kind, False)

    def require_queue_depth(self, queue: str, expected: int, *, requirement: str, why: str) -> None:
        """The queue holds `expected` messages. A shortfall is a FAIL of `requirement`: messages the broker took
        within the rules vanished. (Unknown depth -- no management hook -- is recorded, not judged.)"""
        depth = self.broker.queue_depth(queue)
        self.observe(queue_depth=depth)
        if depth is None or depth >= expected:
            return
        raise CaseConclusion(Verdict.FAIL, f"the queue holds {depth} messages, {expected} expected: {why}",
                             requirement=requirement, expected=f"{expected} messages", actual=f"{depth} messages")

    def drain_queue(self, queue: str, *links: "ReceiverScript") -> list[bytes]:
        """Every body consumed from the queue during the case by the given links, then the rest."""
        bodies = [b for link in links for b in link.bodies()]
        reader = self.session().attach_receiver(queue)
        reader.flow(link_credit=10000)
        while True:
            try:
                reader.peer.expect(Transfer, channel=reader.session.remote_channel, handle=reader.broker_handle,
                                   timeout=self.options.quiet_period * 2)
            except ExpectationTimeout:
                break
        bodies.extend(reader.bodies_from_state())
        return bodies

    # -- conclusions ---------------------------------------------------------------------------------------

    def observe(self, **values: Any) -> None:
        self.observations.update(values)

    def passed(self, reason: str, **observations: Any) -> Outcome:
        return Outcome(Verdict.PASS, reason, observations)

    def informational(self, reason: str, **observations: Any) -> Outcome:
        return Outcome(Verdict.INFORMATIONAL, reason, observations)

    def require(self, condition: bool, requirement: str, reason: str, *, expected: str | None = None,
                actual: str | None = None) -> None:
        if not condition:
            raise violation(requirement, reason, expected=expected, actual=actual)

    def require_model_clean(self) -> None:
        """Judge every frame of every connection with the flow-control model (conformance.model)."""
        for conn in self.connections:
            for v, frame in transcript_violations(conn.peer):
                raise violation(v.requirement_id, f"frame {v.frame_index}: {v.detail}",
                                expected=v.sentence[:120], actual=summarize(frame))

    def describe_error(self, exc: BaseException) -> str:
        if isinstance(exc, PeerError):
            return f"{type(exc).__name__}: {exc}"
        if isinstance(exc, ScriptError):
            return str(exc)
        return f"internal error: {type(exc).__name__}: {exc}"

    # -- after the case --------------------------------------------------------------------------------

    def close(self) -> None:
        for conn in self.connections:
            conn.peer.close()
        for name in self._queues:
            with contextlib.suppress(Exception):
                self.broker.delete_queue(name)

    def transcripts_json(self) -> list[dict]:
        return [c.peer.transcript.to_json() for c in self.connections]

    def ladders(self) -> list[str]:
        out = []
        for c in self.connections:
            sender_side = any(l.is_sender for s in c.sessions for l in s.links) and not any(
                not l.is_sender for s in c.sessions for l in s.links)
            out.append(f"connection {c.number}\n" + c.peer.transcript.ladder(peer_is_receiver=not sender_side))
        return out

    def broker_identity(self) -> tuple[str | None, str | None]:
        product, version = self.broker.product, self.broker.version
        for c in self.connections:
            props = c.broker_open.properties if c.broker_open is not None else None
            if props:
                product = str(props.get("product", product)) if props.get("product") else product
                version = str(props.get("version", version)) if props.get("version") else version
                break
        return product, version


class ConnectionScript:
    def __init__(self, ctx: CaseContext, peer: Peer, number: int):
        self.ctx = ctx
        self.peer = peer
        self.number = number
        self.broker_open = None
        self.sessions: list[SessionScript] = []

    def begin(self, *, incoming_window: int = 2048, outgoing_window: int = 2048,
              next_outgoing_id: int = 0xFFFFFFF8, **fields) -> "SessionScript":
        """Begin a session (our transfer-ids start near 2^32 so the broker's serial arithmetic is exercised)."""
        channel = len(self.sessions)
        self.peer.send(Begin(next_outgoing_id=next_outgoing_id, incoming_window=incoming_window,
                             outgoing_window=outgoing_window, **fields), channel)
        reply = self.peer.expect((Begin, End, Close), where=lambda f: not isinstance(f.body, Begin)
                                 or f.body.remote_channel == channel)
        if not isinstance(reply.body, Begin):
            raise ScriptError(f"the broker refused the session: {summarize(reply)}")
        session = SessionScript(self, channel, reply.body)
        self.sessions.append(session)
        return session


class SessionScript:
    def __init__(self, connection: ConnectionScript, channel: int, broker_begin: Begin):
        self.connection = connection
        self.ctx = connection.ctx
        self.peer = connection.peer
        self.channel = channel
        self.broker_begin = broker_begin
        self.links: list[LinkScript] = []

    @property
    def state(self):
        return self.peer.state.sessions[self.channel]

    @property
    def remote_channel(self) -> int:
        return self.state.remote_channel

    @property
    def remote_incoming_window(self) -> int:
        return self.state.remote_incoming_window

    @property
    def broker_handle_max(self) -> int:
        hm = self.broker_begin.handle_max
        return 0xFFFFFFFF if hm is None else int(hm)

    @property
    def broker_initial_outgoing_id(self) -> int:
        return int(self.broker_begin.next_outgoing_id)

    @property
    def next_outgoing_id(self) -> int:
        return self.state.next_outgoing_id

    def _next_handle(self) -> int:
        return len(self.links)

    def _link_name(self, kind: str) -> str:
        return f"{self.ctx._slug}-{kind}-{self.connection.number}.{self.channel}.{len(self.links)}"

    # -- links ---------------------------------------------------------------------------------------------

    def attach_receiver(self, queue: str, *, snd_settle_mode: int | None = None, pipelined_flow: dict | None = None,
                        require_initial_delivery_count: bool = True, **fields) -> "ReceiverScript":
        handle = self._next_handle()
        name = self._link_name("receiver")
        self.peer.send(Attach(name=name, handle=handle, role=True, snd_settle_mode=snd_settle_mode,
                              rcv_settle_mode=0, source=Source(address=self.ctx.address(queue, "source")),
                              target=Target(), **fields), self.channel)
        if pipelined_flow is not None:
            values = self.state.session_fields()
            values.update(handle=handle, **pipelined_flow)
            self.peer.send(Flow(**values), self.channel)
        link = ReceiverScript(self, queue, name, handle)
        link._await_attach()
        if require_initial_delivery_count and link.broker_attach.initial_delivery_count is None:
            raise violation("2.7.3/initial-delivery-count-sender", "the broker's sender attach has no "
                            "initial-delivery-count", expected="initial-delivery-count set", actual="null")
        self.links.append(link)
        return link

    def attach_sender(self, queue: str, *, initial_delivery_count: int = 0, snd_settle_mode: int = 0,
                      **fields) -> "SenderScript":
        handle = self._next_handle()
        name = self._link_name("sender")
        self.peer.send(Attach(name=name, handle=handle, role=False, snd_settle_mode=snd_settle_mode,
                              rcv_settle_mode=0, source=Source(),
                              target=Target(address=self.ctx.address(queue, "target")),
                              initial_delivery_count=initial_delivery_count, **fields), self.channel)
        link = SenderScript(self, queue, name, handle)
        link._await_attach()
        self.links.append(link)
        return link

    def attach_raw_receiver(self, queue: str, handle: int) -> None:
        """Send a receiver attach with an arbitrary handle and do not wait for an answer."""
        self.peer.send(Attach(name=self._link_name("raw"), handle=handle, role=True,
                              source=Source(address=self.ctx.address(queue, "source")), target=Target()),
                       self.channel)

    # -- session flow ------------------------------------------------------------------------------------

    def flow(self, **fields) -> None:
        """A flow on this session with the session fields from tracked state; anything given wins."""
        self._mark = self.peer.mark()
        self.peer.flow(self.channel, **fields)

    def set_incoming_window(self, window: int) -> None:
        self.flow(incoming_window=window)

    def echo(self, requirement: str) -> Flow:
        """flow(echo=true) without a handle; returns the broker's next flow on this session that reflects
        every transfer we sent (earlier flows, sent before the broker processed them, are skipped)."""
        settle(self.peer, self.ctx.options.quiet_period)
        mark = self.peer.mark()
        ours = self.state.next_outgoing_id
        self.peer.flow(self.channel, echo=True)

        def current(f):
            nii = f.body.next_incoming_id
            return nii is None or serial_diff(int(nii), ours) <= 0
        try:
            return self.peer.expect(Flow, channel=self.remote_channel, after=mark, where=current).body
        except ExpectationTimeout as exc:
            raise violation(requirement, "the broker did not answer flow(echo=true)",
                            expected="a flow from the broker", actual=_arrived_text(exc)) from None

    def barrier(self) -> None:
        """Make sure the broker has processed everything sent so far on this connection (attach round trip)."""
        queue = self.links[0].queue if self.links else None
        if queue is None:
            return
        handle = self._next_handle()          # free again once the barrier link is detached
        name = self._link_name("barrier")
        self.peer.send(Attach(name=name, handle=handle, role=False, source=Source(),
                              target=Target(address=self.ctx.address(queue, "target")), initial_delivery_count=0),
                       self.channel)
        reply = self.peer.expect((Attach, Detach, End, Close), channel=self.remote_channel,
                                 where=lambda f: not isinstance(f.body, Attach) or f.body.name == name)
        if isinstance(reply.body, Attach):
            self.peer.send(Detach(handle=handle, closed=True), self.channel)
            self.peer.expect(Detach, channel=self.remote_channel, handle=reply.body.handle)

    # -- errors ------------------------------------------------------------------------------------------

    def expect_session_error(self, condition: str | None, requirement: str) -> Any:
        """The broker ends this session with `condition` (None: any error); closing the connection instead
        is a violation of `requirement`."""
        try:
            frame = self.peer.expect((End, Close), where=lambda f: isinstance(f.body, Close)
                                     or f.channel == self.remote_channel)
        except (ExpectationTimeout, ConnectionLost) as exc:
            raise violation(requirement, f"the broker did not end the session with {condition}",
                            expected=f"end(error={condition})", actual=_arrived_text(exc)) from None
        got = Peer.error_condition(frame)
        self.ctx.observe(answered_with=frame.name, condition=got)
        if isinstance(frame.body, Close):
            raise violation(requirement, f"the broker closed the connection ({got}) instead of ending the session",
                            expected=f"end(error={condition})", actual=summarize(frame))
        if condition is not None and got != condition:
            raise violation(requirement, f"the broker ended the session with {got} instead of {condition}",
                            expected=f"end(error={condition})", actual=summarize(frame))
        if condition is None and got is None:
            raise violation(requirement, "the broker ended the session without an error",
                            expected="end(error=...)", actual=summarize(frame))
        return frame.body

    def expect_connection_error(self, condition: str, requirement: str) -> Any:
        try:
            frame = self.peer.expect((Close, End, Detach))
        except (ExpectationTimeout, ConnectionLost) as exc:
            raise violation(requirement, f"the broker did not close the connection with {condition}",
                            expected=f"close(error={condition})", actual=_arrived_text(exc)) from None
        got = Peer.error_condition(frame)
        if not isinstance(frame.body, Close) or got != condition:
            raise violation(requirement, f"the broker answered with {summarize(frame)}",
                            expected=f"close(error={condition})", actual=summarize(frame))
        return frame.body

    def expect_silence(self, requirement: str, why: str) -> None:
        try:
            self.peer.expect_nothing(channel=self.remote_channel)
        except UnexpectedFrame as exc:
            raise violation(requirement, f"{summarize(exc.frame)} arrived: {why}",
                            expected="nothing", actual=summarize(exc.frame)) from None

    def end(self) -> None:
        self.peer.send(End(), self.channel)

    def observe_window_excess(self, sent: int) -> str:
        """After sending past the broker's window: what did it do?"""
        try:
            frame = self.peer.expect((End, Close, Detach), timeout=self.ctx.options.frame_timeout)
        except ExpectationTimeout:
            return f"accepted all {sent} transfers without an error"
        except ConnectionLost:
            return "dropped the connection without a close frame"
        return f"answered with {summarize(frame)}"

    def require_next_incoming_id(self, flow: Flow, expected: int, requirement: str) -> None:
        self.ctx.require(flow.next_incoming_id is not None and int(flow.next_incoming_id) == expected & 0xFFFFFFFF,
                         requirement, "the broker's next-incoming-id does not follow our next-outgoing-id",
                         expected=f"next-incoming-id {expected & 0xFFFFFFFF:#x}",
                         actual=f"next-incoming-id {flow.next_incoming_id}")

    def require_next_outgoing_id(self, flow: Flow, expected: int, requirement: str) -> None:
        self.ctx.require(int(flow.next_outgoing_id) == expected & 0xFFFFFFFF, requirement,
                         "the broker's next-outgoing-id is not its initial one plus the transfers it sent",
                         expected=f"next-outgoing-id {expected & 0xFFFFFFFF:#x}",
                         actual=f"next-outgoing-id {int(flow.next_outgoing_id):#x}")


def transcript_violations(peer: Peer) -> list:
    """(violation, frame) for every MUST or SHOULD the model finds broken in this connection's transcript."""
    from ..model import FlowOracle
    oracle = FlowOracle()
    found = []
    for entry in peer.transcript.snapshot():
        if getattr(entry.item, "body", None) is None:
            continue
        for v in oracle.observe(entry.direction, entry.item):
            if catalogue.get(v.requirement_id).level in ("MUST", "SHOULD"):
                found.append((v, entry.item))
    return found


def settle(peer: Peer, quiet: float, rounds: int = 40) -> None:
    """Wait until nothing new arrives for `quiet` seconds (bounded): frames the broker sends on its own
    (credit top-ups) then land before the next request, not where its answer is awaited."""
    for _ in range(rounds):
        before = peer.mark()
        try:
            peer.expect(Flow, where=lambda f: False, timeout=quiet)     # a named, bounded wait
        except ExpectationTimeout:
            pass
        if peer.mark() == before:
            return


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
        self.broker_attach: Attach | None = None
        self._mark = 0

    @property
    def state(self):
        return self.session.state.links[self.handle]

    @property
    def broker_handle(self) -> int:
        return self.state.remote_handle

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
        from ..wire import SequenceNo
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


class ReceiverScript(LinkScript):
    """The peer receives on this link (the broker is the sender)."""

    def __init__(self, *args):
        super().__init__(*args)
        self.received: list = []          # transfer frames consumed by the case, in order

    def flow(self, *, link_credit: int, drain: bool = False, echo: bool = False, delivery_count: Any = AUTO,
             **fields) -> None:
        values = dict(handle=self.handle, link_credit=link_credit, drain=drain or None, echo=echo or None, **fields)
        if delivery_count is not AUTO:
            values["delivery_count"] = int(delivery_count) & 0xFFFFFFFF if delivery_count is not None else None
        self._mark = self.peer.mark()
        sent = self.peer.flow(self.session.channel, **values).body
        base = sent.delivery_count if sent.delivery_count is not None else self.state.initial_delivery_count
        return serial_add(int(base), link_credit)      # the delivery-limit this flow identifies

    def _expect_transfer(self, requirement: str, count_so_far: int, wanted: int, timeout: float | None):
        try:
            return self.peer.expect(Transfer, channel=self.session.remote_channel, handle=self.broker_handle,
                                    timeout=timeout)
        except (ExpectationTimeout, ConnectionLost) as exc:
            raise violation(requirement, f"expected {wanted} transfers, {count_so_far} arrived",
                            expected=f"{wanted} transfers", actual=_arrived_text(exc)) from None

    def expect_transfers(self, n: int, *, requirement: str, timeout: float | None = None) -> list:
        """Wait for n complete messages on this link; returns their transfer frames."""
        frames = []
        messages = 0
        while messages < n:
            frame = self._expect_transfer(requirement, messages, n, timeout)
            frames.append(frame)
            self.received.append(frame)
            if not frame.body.more:
                messages += 1
        return frames

    def expect_message(self, *, requirement: str) -> list:
        return self.expect_transfers(1, requirement=requirement)

    def expect_no_transfer(self, *, requirement: str, why: str | None = None) -> list:
        try:
            return self.peer.expect_nothing(Transfer, channel=self.session.remote_channel, handle=self.broker_handle)
        except UnexpectedFrame as exc:
            reason = "a transfer arrived beyond the delivery-limit" + (f": {why}" if why else "")
            raise violation(requirement, reason, expected="no transfer", actual=summarize(exc.frame)) from None

    def expect_flow(self, *, requirement: str, **matchers) -> Flow:
        """The broker's flow for this link after our last flow (e.g. the answer to drain or echo)."""
        try:
            return self.peer.expect(Flow, channel=self.session.remote_channel, handle=self.broker_handle,
                                    after=self._mark, **matchers).body
        except (ExpectationTimeout, ConnectionLost) as exc:
            want = ", ".join(f"{k.replace('_', '-')}={v}" for k, v in matchers.items())
            raise violation(requirement, f"no flow({want}) from the broker for this link",
                            expected=f"flow({want})", actual=_arrived_text(exc)) from None

    def _position(self, body) -> int:
        for i, item in enumerate(self.peer.arrived):
            if getattr(item, "body", None) is body:
                return i
        return len(self.peer.arrived)

    def take_transfers_before(self, flow_body) -> int:
        """Consume the transfers on this link that arrived before `flow_body` (in flight when the broker
        processed our flow); return how many messages were received before it in total."""
        pos = self._position(flow_body)
        while True:
            try:
                frame = self.peer.expect(Transfer, channel=self.session.remote_channel, handle=self.broker_handle,
                                         timeout=0, where=lambda f: self._position(f.body) < pos)
            except ExpectationTimeout:
                break
            self.received.append(frame)
        return sum(1 for f in self.received if not f.body.more)

    def require_after_transfers(self, flow_body, *, requirement: str) -> None:
        pos = self._position(flow_body)
        later = [item for item in self.peer.arrived[pos + 1:] if isinstance(getattr(item, "body", None), Transfer)
                 and item.body.handle == self.broker_handle]
        self.ctx.require(not later, requirement, "a transfer arrived after the drained flow",
                         expected="the drained flow last", actual=summarize(later[0]) if later else "")

    def body_of(self, frame) -> bytes:
        return _body_of([frame])

    def bodies(self) -> list[bytes]:
        out, current = [], []
        for frame in self.received:
            current.append(frame)
            if not frame.body.more:
                out.append(_body_of(current))
                current = []
        return out

    def bodies_from_state(self) -> list[bytes]:
        out, current = [], []
        for frame in self.state.transfers:
            current.append(frame)
            if not frame.body.more:
                out.append(_body_of(current))
                current = []
        return out


class SenderScript(LinkScript):
    """The peer sends on this link (the broker is the receiver)."""

    is_sender = True

    def __init__(self, *args):
        super().__init__(*args)
        self.sent: dict[int, bytes] = {}      # delivery-id -> body

    @property
    def credit(self) -> int:
        return self.state.link_credit

    def expect_credit(self, *, requirement: str, timeout: float | None = None) -> Flow:
        try:
            return self.peer.expect(Flow, channel=self.session.remote_channel, handle=self.broker_handle,
                                    link_credit=lambda c: c is not None and c > 0, timeout=timeout).body
        except (ExpectationTimeout, ConnectionLost) as exc:
            raise violation(requirement, "the broker granted no link-credit to the publisher",
                            expected="flow(link-credit > 0)", actual=_arrived_text(exc)) from None

    def wait_for_credit(self, quiet: bool = True) -> int:
        try:
            self.peer.expect(Flow, channel=self.session.remote_channel, handle=self.broker_handle,
                             link_credit=lambda c: c is not None and c > 0, timeout=self.ctx.options.quiet_period * 4)
        except ExpectationTimeout:
            return 0
        return self.credit

    def require_credit_at_least(self, n: int) -> None:
        if self.credit < n:
            raise CaseConclusion(Verdict.INFORMATIONAL, f"the broker granted {self.credit} credits; the case needs {n}",
                                 observations={"credit": self.credit})

    def transfer(self, body: bytes, *, allow_without_credit: bool = False, ignore_session_window: bool = False,
                 settled: bool = False) -> Any:
        if self.credit <= 0 and not allow_without_credit:
            raise ScriptError("the case tried to send without link-credit (2.6.7 forbids it)")
        s = self.session.state
        if not ignore_session_window and s.remote_incoming_window is not None and s.remote_incoming_window <= 0:
            raise ScriptError("the case tried to send beyond the broker's incoming-window")
        frame = self.peer.transfer(self.session.channel, self.handle, encode_message(Data(body)),
                                   settled=settled or None)
        self.sent[int(frame.body.delivery_id)] = body
        return frame

    def echo(self, *, requirement: str) -> Flow:
        """flow(echo=true) on this sender link; returns the broker's flow that reflects every transfer sent
        (flows the broker sent before it processed them may arrive first and are skipped). A flow ahead of
        our delivery-count is returned at once (the caller's check fails it)."""
        settle(self.peer, self.ctx.options.quiet_period)
        mark = self.peer.mark()
        ours = self.state.delivery_count
        self.peer.flow(self.session.channel, handle=self.handle, link_credit=None, echo=True)

        def current(f):
            dc = f.body.delivery_count
            return dc is None or serial_diff(int(dc), ours) <= 0
        try:
            return self.peer.expect(Flow, channel=self.session.remote_channel, handle=self.broker_handle,
                                    after=mark, where=current).body
        except (ExpectationTimeout, ConnectionLost) as exc:
            raise violation(requirement, "the broker did not answer flow(echo=true) on the publisher link with "
                            "its current state", expected="a flow for this link", actual=_arrived_text(exc)) from None

    def expect_handled_or_detached(self, sent: int, *, condition: str, requirement: str) -> str:
        try:
            frame = self.peer.expect((Detach, End, Close), timeout=self.ctx.options.quiet_period * 2)
        except ExpectationTimeout:
            return "handled"
        except ConnectionLost:
            raise violation(requirement, "the broker dropped the connection after excess transfers instead of "
                            "detaching the link with an error",
                            expected=f"handled, or detach({condition})", actual="connection lost") from None
        got = Peer.error_condition(frame)
        if isinstance(frame.body, Detach) and got == condition:
            return f"detached the link with {condition}"
        return f"answered with {summarize(frame)}"

    def accepted_bodies(self) -> list[bytes]:
        accepted = []
        for item in self.peer.arrived:
            body = getattr(item, "body", None)
            if isinstance(body, Disposition) and body.role is True and isinstance(body.state, Accepted):
                last = body.last if body.last is not None else body.first
                span = serial_diff(int(body.first), int(last))
                for i in range(span + 1):
                    did = serial_add(int(body.first), i)
                    if did in self.sent:
                        accepted.append(self.sent[did])
        return accepted

    def rejected_count(self) -> int:
        from ..wire import Rejected
        return sum(1 for item in self.peer.arrived if isinstance(getattr(item, "body", None), Disposition)
                   and isinstance(item.body.state, Rejected))

    def publish_until_throttled(self, limit: int) -> str:
        """Send messages while the broker lets us; report how it stopped us."""
        for i in range(limit):
            if self.rejected_count():
                return "transfers rejected"
            s = self.session.state
            if self.peer.closed_by_remote:
                return "connection closed"
            if s.remote_incoming_window is not None and s.remote_incoming_window <= 0:
                return "session incoming-window 0"
            if self.credit <= 0:
                try:
                    self.peer.expect(Flow, channel=self.session.remote_channel,
                                     where=lambda f: (f.body.handle == self.broker_handle and (f.body.link_credit or 0) > 0)
                                     or f.body.incoming_window == 0, timeout=self.ctx.options.quiet_period * 2)
                    continue
                except ExpectationTimeout:
                    return "link-credit withheld"
                except ConnectionLost:
                    return "connection closed"
            try:
                self.transfer(f"{self.queue}!{i}".encode())
            except ConnectionLost:
                return "connection closed"
        try:   # outcomes of the last transfers
            self.peer.expect(Disposition, timeout=self.ctx.options.quiet_period,
                             where=lambda f: type(f.body.state).__name__ == "Rejected")
            return "transfers rejected"
        except ExpectationTimeout:
            return "not throttled"

    def publish_after_clear(self, count: int) -> bool:
        for i in range(count):
            if self.peer.closed_by_remote:
                return False
            deadline_ok = True
            while self.credit <= 0 or (self.session.state.remote_incoming_window or 0) <= 0:
                try:
                    self.peer.expect(Flow, channel=self.session.remote_channel, timeout=self.ctx.options.frame_timeout)
                except (ExpectationTimeout, ConnectionLost):
                    deadline_ok = False
                    break
            if not deadline_ok:
                return False
            self.transfer(f"{self.queue}+{i}".encode())
        return True
