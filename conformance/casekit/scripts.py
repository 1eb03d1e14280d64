"""The scripts a case is written in: connections, sessions, receiver and sender links.

This module owns `ConnectionScript`, `SessionScript`, `ReceiverScript` and `SenderScript` (`link.flow`,
`link.expect_transfers`, `session.echo`, ...). Each helper sends exactly the frames its name says, through
the scripted peer, and nothing behind the case's back. An expectation that names a requirement records a
finding on it when the frame does not come (or a wrong one does) and halts the case body (`CaseHalted`);
a check on a value records a finding and goes on; a drain opens an obligation. Everything else that fails
is an ERROR. Outcomes the scripts report are enums (`Excess`), never prose to compare.
"""

from __future__ import annotations

from enum import Enum
from typing import Any, Callable

from ..peer import (
    ConnectionLost, ExpectationTimeout, Peer, PeerError, Precluded, UnexpectedFrame, settle, summarize,
)
from ..wire import (
    Accepted, Attach, Begin, Close, Data, Detach, Disposition, End, Flow, Header, Rejected, SequenceNo, Source, Target,
    Transfer, DecodeError, decode_all, encode_message, serial_add, serial_diff,
)
from .findings import CaseHalted, SubjectUnobservable, SuiteError

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


class ConnectionScript:
    def __init__(self, ctx: CaseContext, peer: Peer, number: int):
        self.ctx = ctx
        self.peer = peer
        self.number = number
        self.broker_open = None
        self.sessions: list[SessionScript] = []
        self._ending: dict[int, int] = {}    # barrier channels whose end is not answered yet -> the broker's channel

    def begin(self, *, incoming_window: int = 2048, outgoing_window: int = 2048,
              next_outgoing_id: int = 0xFFFFFFF8, **fields) -> "SessionScript":
        """Begin a session (our transfer-ids start near 2^32 so the broker's serial arithmetic is exercised)."""
        channel = self._free_channel()
        self.peer.send(Begin(next_outgoing_id=next_outgoing_id, incoming_window=incoming_window,
                             outgoing_window=outgoing_window, **fields), channel)
        reply = self.peer.expect((Begin, End, Close), where=lambda f: not isinstance(f.body, Begin)
                                 or f.body.remote_channel == channel)
        if not isinstance(reply.body, Begin):
            raise ScriptError(f"the broker refused the session: {summarize(reply)}")
        session = SessionScript(self, channel, reply.body)
        self.sessions.append(session)
        return session


    def begin_end_barrier(self) -> None:
        """A round trip on the connection: begin a session on a free channel; the broker's begin is the answer
        that orders it. The session is ended at once, but its end's answer is not part of the round trip: it
        is taken when it comes (RabbitMQ 3.10 sometimes never answers that end, which cost a frame timeout),
        and its channel stays out of use until then."""
        channel = self._free_channel()
        mark = self.peer.mark()
        self.peer.send(Begin(next_outgoing_id=0, incoming_window=0, outgoing_window=0), channel)
        gone = lambda f: isinstance(f.body, Close)
        reply = self.peer.expect(Begin, after=mark, where=lambda f: f.body.remote_channel == channel, unless=gone)
        self.peer.send(End(), channel)
        self._ending[channel] = reply.channel

    def _free_channel(self) -> int:
        """The lowest channel not used by a session of the case or by a barrier whose end is unanswered."""
        for channel, theirs in list(self._ending.items()):
            try:
                self.peer.expect(End, channel=theirs, timeout=0)
                del self._ending[channel]
            except (ExpectationTimeout, ConnectionLost):
                pass
        used = {s.channel for s in self.sessions} | set(self._ending)
        return next(c for c in range(len(used) + 1) if c not in used)


class SessionScript:
    def __init__(self, connection: ConnectionScript, channel: int, broker_begin: Begin):
        self.connection = connection
        self.ctx = connection.ctx
        self.peer = connection.peer
        self.channel = channel
        self.broker_begin = broker_begin
        self.links: list[LinkScript] = []
        self._barriers = 0                    # barrier links attached so far (each gets a new name)

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

    def attach_receiver(self, queue: str, *, snd_settle_mode: int | None = None,
                        pipelined_flow: dict | list[dict] | None = None,
                        require_initial_delivery_count: bool = True, **fields) -> "ReceiverScript":
        """A receiving link. `pipelined_flow`: flow(s) for the link written with the attach in one write, so
        before the broker's attach can have been seen: without delivery-count (2.7.4: "In the event that the
        receiving link endpoint has not yet seen the initial attach frame from the sender this field MUST NOT
        be set")."""
        handle = self._next_handle()
        name = self._link_name("receiver")
        attach = Attach(name=name, handle=handle, role=True, snd_settle_mode=snd_settle_mode, rcv_settle_mode=0,
                        source=Source(address=self.ctx.address(queue, "source")), target=Target(), **fields)
        flows = [pipelined_flow] if isinstance(pipelined_flow, dict) else list(pipelined_flow or ())
        self.peer.send_together([(attach, self.channel)] + [
            (Flow(**self.state.session_fields(), handle=handle, **flow), self.channel) for flow in flows])
        link = ReceiverScript(self, queue, name, handle)
        link._await_attach()
        if require_initial_delivery_count and link.broker_attach.initial_delivery_count is None:
            self.ctx.halt("2.7.3/initial-delivery-count-sender", "the broker's sender attach has no "
                          "initial-delivery-count", expected="initial-delivery-count set", actual="null",
                          conn=self.connection)
        self.links.append(link)
        return link

    def attach_sender(self, queue: str, *, initial_delivery_count: int = 0, snd_settle_mode: int = 0,
                      durable: bool = False, **fields) -> "SenderScript":
        """A sending link; `durable`: every message carries header(durable=true), so a broker that accepts one
        has promised not to lose it (3.2.1: "Durable messages MUST NOT be lost ...")."""
        handle = self._next_handle()
        name = self._link_name("sender")
        self.peer.send(Attach(name=name, handle=handle, role=False, snd_settle_mode=snd_settle_mode,
                              rcv_settle_mode=0, source=Source(),
                              target=Target(address=self.ctx.address(queue, "target")),
                              initial_delivery_count=initial_delivery_count, **fields), self.channel)
        link = SenderScript(self, queue, name, handle)
        link.durable = durable
        link._await_attach()
        self.links.append(link)
        return link

    def attach_raw_receiver(self, queue: str, handle: int) -> None:
        """Send a receiver attach with an arbitrary handle and do not wait for an answer."""
        self.peer.send(Attach(name=self._link_name("raw"), handle=handle, role=True,
                              source=Source(address=self.ctx.address(queue, "source")), target=Target()),
                       self.channel)

    # -- session flow ------------------------------------------------------------------------------------

    def flow(self, *, and_echo: bool = False, **fields) -> None:
        """A flow on this session with the session fields from tracked state; anything given wins. A flow
        naming a handle with no link on it opens the obligation 2.7.4/unattached-handle. `and_echo`: a
        flow(echo=true) right behind it in the same write (in flight when the broker answers the first)."""
        self._mark = self.peer.mark()
        if and_echo:
            values = {**self.state.session_fields(), **fields}
            self.peer.send_together([(Flow(**values), self.channel),
                                     (Flow(**self.state.session_fields(), echo=True), self.channel)])
        else:
            self.peer.flow(self.channel, **fields)
        handle = fields.get("handle")
        if handle is not None and handle not in self.state.links:
            remote = self.remote_channel
            self.ctx.oblige("2.7.4/unattached-handle", f"the flow on unattached handle {handle}", self.connection,
                            remote, lambda f: isinstance(f.body, End) and f.channel == remote
                            and Peer.error_condition(f) == "amqp:session:unattached-handle")

    def set_incoming_window(self, window: int) -> None:
        self.flow(incoming_window=window)

    def echo(self, requirement: str | None, *, settled: bool = False) -> Flow | None:
        """flow(echo=true) without a handle; returns the broker's next flow on this session that reflects
        every transfer we sent (earlier flows, sent before the broker processed them, are skipped).
        No answer: a finding on `requirement` (halts); with requirement None (echo is only the means), the
        latest flow the broker sent on its own that reflects every transfer, or None. `settled`: the caller has
        just let the connection go quiet (`own_flow_after_transfers`); no second quiet period first."""
        if not settled:
            settle(self.peer, self.ctx.options.quiet_period)
        mark = self.peer.mark()
        ours = self.state.next_outgoing_id
        self.peer.flow(self.channel, echo=True)

        def current(f):
            nii = f.body.next_incoming_id
            return nii is None or serial_diff(int(nii), ours) <= 0
        try:
            return self.answer_or_absence(lambda timeout: self.peer.expect(
                Flow, channel=self.remote_channel, after=mark, where=current, timeout=timeout, unless=self._gone)).body
        except (ExpectationTimeout, ConnectionLost) as exc:
            if requirement is None:
                own = [f.body for f in self.peer.received(Flow) if f.channel == self.remote_channel
                       and f.body.next_incoming_id is not None and int(f.body.next_incoming_id) == ours]
                return own[-1] if own else None
            self.ctx.halt(requirement, "the broker did not answer flow(echo=true)",
                          expected="a flow from the broker", actual=_arrived_text(exc), conn=self.connection)

    def own_flow_after_transfers(self) -> Flow | None:
        """After a bounded quiet period, the latest flow the broker sent on this session on its own whose
        next-incoming-id reflects every transfer we sent (a credit top-up); None if none came."""
        settle(self.peer, self.ctx.options.quiet_period)
        ours = self.state.next_outgoing_id
        own = [f.body for f in self.peer.received(Flow) if f.channel == self.remote_channel and not f.body.echo
               and f.body.next_incoming_id is not None and int(f.body.next_incoming_id) == ours]
        return own[-1] if own else None

    def _gone(self, frame) -> bool:
        """Whether `frame` ends this session (the broker's end) or the connection (close)."""
        return isinstance(frame.body, Close) or (isinstance(frame.body, End) and frame.channel == self.remote_channel)

    def barrier(self, queue: str | None = None, *, through_queue: bool = False, on_connection: bool = False) -> None:
        """A round trip the broker must answer, ordered after everything sent so far on this session.

        With a queue (`queue`, default the first link's): a link attached and detached on this session; with
        `through_queue`, a receiving link on that queue, whose attach the broker answers only after its queue
        took it as a consumer, so on brokers that run queues apart from sessions (RabbitMQ) the answer comes
        after what the queue did for requests sent before it (drain answers, deliveries for credit granted).
        Without a queue, or `on_connection`: a begin and end on a fresh channel, which leaves this session
        alone (RabbitMQ 3.10 resets the connection on a frame for a session it is ending after a drain it could
        not do; its connection answers a begin whatever its sessions do). The frame timeout bounds each wait
        (ExpectationTimeout: the broker stopped answering); `Precluded` when the broker ends the session or
        closes the connection first."""
        if queue is None and self.links:
            queue = self.links[0].queue
        if on_connection or queue is None or self.state.ended_by_remote is not None or self.state.ended_by_us:
            return self.connection.begin_end_barrier()
        handle = self._next_handle()          # free again once the barrier link is detached
        self._barriers += 1
        name = f"{self._link_name('barrier')}.{self._barriers}"    # a new name each time: a link's name is its identity
        if through_queue:
            attach = Attach(name=name, handle=handle, role=True, rcv_settle_mode=0,
                            source=Source(address=self.ctx.address(queue, "source")), target=Target())
        else:
            attach = Attach(name=name, handle=handle, role=False, source=Source(),
                            target=Target(address=self.ctx.address(queue, "target")), initial_delivery_count=0)
        mark = self.peer.mark()
        self.peer.send(attach, self.channel)
        reply = self.peer.expect(Attach, channel=self.remote_channel, after=mark, where=lambda f: f.body.name == name,
                                 unless=self._gone)
        self.peer.send(Detach(handle=handle, closed=True), self.channel)
        theirs = reply.body.handle
        self.peer.expect(Detach, channel=self.remote_channel, handle=theirs, after=mark, unless=self._gone)
        # the barrier link's own frames (a credit flow) must not be taken for a later link's on a reused handle
        own = {id(f) for f in self.peer.arrived[mark:] if getattr(f, "channel", None) == self.remote_channel
               and getattr(getattr(f, "body", None), "handle", None) == theirs}
        while own:
            try:
                own.discard(id(self.peer.expect(channel=self.remote_channel, after=mark, timeout=0,
                                                where=lambda f: id(f) in own)))
            except ExpectationTimeout:
                break

    def settle_by_barrier(self, queue: str | None = None, *, through_queue: bool = False) -> None:
        """Before watching a quiet period: a barrier round trip, so the quiet period starts once the broker
        has processed everything we sent. A broker that ends the session or answers no barrier changes
        nothing here (the quiet period and the checks after the case judge that)."""
        if self.peer.closed_by_remote:
            return
        try:
            self.barrier(queue, through_queue=through_queue)
        except (ExpectationTimeout, ConnectionLost):
            pass

    def answer_or_absence(self, expect: Callable[[float | None], Any], *, through_queue: bool = False,
                          queue: str | None = None, on_connection: bool = False) -> Any:
        """The answer to a request just sent, or proof that none is coming, without waiting the frame timeout:
        `expect(timeout)` waits for the answer (raising ExpectationTimeout when it does not come). If it is not
        here yet, a barrier round trip (`barrier`) shows the broker processed the request, then the answer
        may still come within `absence_window()`: an answer the broker sends on another
        path than the barrier's (another process, queue or link) lands in it. A broker that answers neither
        the request nor the barrier: ExpectationTimeout after the frame timeout, as before."""
        try:
            return expect(0)
        except Precluded:
            raise
        except ExpectationTimeout:
            pass
        try:
            self.barrier(queue, through_queue=through_queue, on_connection=on_connection)
        except Precluded:             # the session or connection ended: the answer came before it, or never
            return expect(0)
        return expect(self.absence_window())

    def absence_window(self) -> float:
        """How long an answer may still come after the barrier's: the quiet period plus the round trip measured
        at the handshake (as `expect_nothing` watches)."""
        return self.ctx.options.quiet_period + self.peer.round_trip

    # -- errors ------------------------------------------------------------------------------------------

    def expect_session_error(self, condition: str | None, requirement: str) -> Any:
        """The broker ends this session with `condition` (None: any error); closing the connection instead
        is a violation of `requirement`."""
        try:
            frame = self.peer.expect((End, Close), where=lambda f: isinstance(f.body, Close)
                                     or f.channel == self.remote_channel)
        except (ExpectationTimeout, ConnectionLost) as exc:
            self.ctx.halt(requirement, f"the broker did not end the session with {condition}",
                          expected=f"end(error={condition})", actual=_arrived_text(exc), conn=self.connection)
        got = Peer.error_condition(frame)
        self.ctx.observe(answered_with=frame.name, condition=got)
        if isinstance(frame.body, Close):
            self.ctx.halt(requirement, f"the broker closed the connection ({got}) instead of ending the session",
                          expected=f"end(error={condition})", actual=summarize(frame), conn=self.connection)
        if condition is not None and got != condition:
            self.ctx.halt(requirement, f"the broker ended the session with {got} instead of {condition}",
                          expected=f"end(error={condition})", actual=summarize(frame), conn=self.connection)
        if condition is None and got is None:
            self.ctx.halt(requirement, "the broker ended the session without an error",
                          expected="end(error=...)", actual=summarize(frame), conn=self.connection)
        return frame.body

    def await_session_error(self) -> Any:
        """The broker's end of this session or its close of the connection, whichever comes (None: neither
        came within the frame timeout). Judges nothing: the caller decides what the answer means."""
        try:
            return self.peer.expect((End, Close), where=lambda f: isinstance(f.body, Close)
                                    or f.channel == self.remote_channel)
        except (ExpectationTimeout, ConnectionLost):
            return None

    def expect_connection_error(self, condition: str, requirement: str) -> Any:
        try:
            frame = self.peer.expect((Close, End, Detach))
        except (ExpectationTimeout, ConnectionLost) as exc:
            self.ctx.halt(requirement, f"the broker did not close the connection with {condition}",
                          expected=f"close(error={condition})", actual=_arrived_text(exc), conn=self.connection)
        got = Peer.error_condition(frame)
        if not isinstance(frame.body, Close) or got != condition:
            self.ctx.halt(requirement, f"the broker answered with {summarize(frame)}",
                          expected=f"close(error={condition})", actual=summarize(frame), conn=self.connection)
        return frame.body

    def expect_silence(self, requirement: str, why: str) -> None:
        """Nothing arrives on this session: proved by a barrier round trip, then the quiet period."""
        self.settle_by_barrier()
        try:
            self.peer.expect_nothing(channel=self.remote_channel)
        except UnexpectedFrame as exc:
            self.ctx.halt(requirement, f"{summarize(exc.frame)} arrived: {why}",
                          expected="nothing", actual=summarize(exc.frame), conn=self.connection)

    def end(self) -> None:
        self.peer.send(End(), self.channel)

    def observe_window_excess(self, sent: int) -> tuple["Excess", str]:
        """After sending past the broker's window: what did it do, and how it looked."""
        try:
            frame = self.answer_or_absence(lambda timeout: self.peer.expect((End, Close, Detach), timeout=timeout))
        except ExpectationTimeout:
            return Excess.HANDLED, f"accepted all {sent} transfers without an error"
        except ConnectionLost:
            return Excess.DROPPED, "dropped the connection without a close frame"
        return Excess.OTHER, f"answered with {summarize(frame)}"

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

    def _gone(self, frame) -> bool:
        """Whether `frame` ends this link (the broker's detach of it), its session or the connection."""
        return self.session._gone(frame) or (isinstance(frame.body, Detach) and frame.channel == self.session.remote_channel
                                            and frame.body.handle == self.broker_handle)

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
        limit = serial_add(int(base), link_credit)      # the delivery-limit this flow identifies
        if drain:
            self.ctx.oblige("2.6.7/drain-advance", f"the drain of link {self.name}", self.connection,
                            self.session.remote_channel, self._drain_answer(limit))
        return limit

    def _drain_answer(self, limit: int) -> Callable[[Any], bool]:
        """What answers our drain up to `limit`: a flow for the link with link-credit 0, a detach of it, or
        transfers that use the credit up (the drain rule: a drained flow is owed only when credit is left
        after the sender sent what it had; 2.7.4 drain: "how the sender SHOULD behave when insufficient
        messages are available to consume the current link-credit"; 2.6.7: "If the sender's drain flag is set
        and there are no available messages, ..."). Called on the broker's later frames in transcript order:
        it counts the messages it is shown from the receiver's delivery-count when the drain was sent."""
        channel, handle = self.session.remote_channel, self.broker_handle
        count = [int(self.state.delivery_count)]

        def answers(f) -> bool:
            body = f.body
            if f.channel != channel or getattr(body, "handle", None) != handle:
                return False
            if isinstance(body, Transfer) and not body.more:
                count[0] = serial_add(count[0], 1)
                return serial_diff(count[0], limit) <= 0          # the delivery-count reached the limit
            return isinstance(body, Detach) or (isinstance(body, Flow) and body.link_credit == 0)
        return answers

    def _next_transfer(self, timeout: float | None):
        """The next transfer on this link. One that is late: after the absence window, a barrier through the
        queue, then the window again (a broker that stopped answering: the frame timeout)."""
        def wait(t):
            return self.peer.expect(Transfer, channel=self.session.remote_channel, handle=self.broker_handle,
                                    timeout=t, unless=self._gone)
        if timeout is not None:
            return wait(timeout)
        try:
            return wait(self.session.absence_window())
        except Precluded:
            raise
        except ExpectationTimeout:
            pass
        return self.session.answer_or_absence(wait, through_queue=True, queue=self.queue)

    def _expect_transfer(self, requirement: str, count_so_far: int, wanted: int, timeout: float | None):
        """The next transfer on this link (`_next_transfer`); none: a finding on `requirement` (halts)."""
        try:
            return self._next_transfer(timeout)
        except (ExpectationTimeout, ConnectionLost) as exc:
            self.ctx.halt(requirement, f"expected {wanted} transfers, {count_so_far} arrived",
                          expected=f"{wanted} transfers", actual=_arrived_text(exc), conn=self.connection)

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
        """No transfer on this link: a barrier round trip through the queue (whatever the broker was going to
        send for our requests is on its way), then the quiet period."""
        self.session.settle_by_barrier(self.queue, through_queue=True)
        try:
            return self.peer.expect_nothing(Transfer, channel=self.session.remote_channel, handle=self.broker_handle)
        except UnexpectedFrame as exc:
            reason = "a transfer arrived beyond the delivery-limit" + (f": {why}" if why else "")
            self.ctx.halt(requirement, reason, expected="no transfer", actual=summarize(exc.frame),
                          conn=self.connection)

    def expect_flow(self, *, requirement: str, **matchers) -> Flow:
        """The broker's flow for this link after our last flow (e.g. the answer to drain or echo)."""
        try:
            return self._answer(**matchers).body
        except (ExpectationTimeout, ConnectionLost) as exc:
            want = ", ".join(f"{k.replace('_', '-')}={v}" for k, v in matchers.items())
            self.ctx.halt(requirement, f"no flow({want}) from the broker for this link",
                          expected=f"flow({want})", actual=_arrived_text(exc), conn=self.connection)

    def expect_drain_completed(self, start: int, credit: int, *, messages: int, requirement: str) -> Flow | None:
        """After flow(link-credit=`credit`, drain=true) at delivery-count `start` with at least `messages`
        messages queued: the transfers the broker sends for it (up to min(messages, credit); fewer is a finding
        on `requirement`, the case goes on), then the drain rule. Credit left after the transfers: the drained
        flow is owed (2.6.7: "If the sender's drain flag is set and there are no available messages, the sender
        MUST advance its delivery-count until link-credit is zero, and send its updated flow state"), its
        absence a finding on 2.6.7/drain-advance (halts). Credit used up by the transfers: the drain is
        complete (2.7.4 drain: "how the sender SHOULD behave when insufficient messages are available to
        consume the current link-credit"); a flow after them is recorded (`drained_flow`), never owed, and
        judged if it comes. Returns the broker's flow, or None."""
        wanted = min(messages, credit)
        got = 0
        after = self._mark          # the broker's flows from here on; once the credit is used, after the last transfer
        while got < wanted:
            try:
                frame = self._next_transfer(None)
            except (ExpectationTimeout, ConnectionLost) as exc:
                finding = self.ctx.add_finding(requirement, f"expected {wanted} transfers for the drain, {got} "
                                               "arrived", expected=f"{wanted} transfers", actual=_arrived_text(exc),
                                               conn=self.connection)
                if isinstance(exc, (Precluded, ConnectionLost)):
                    raise CaseHalted(finding) from None   # ended: the open drain obligation judges the rest
                break
            self.received.append(frame)
            after = self._position(frame.body) + 1
            if not frame.body.more:
                got += 1
        if got < credit:
            reply = self.expect_flow(requirement="2.6.7/drain-advance", link_credit=0)
            self.require_after_transfers(reply, requirement="2.6.7/drain-advance")
            self.require_delivery_count(reply, serial_add(int(start), credit), requirement="2.6.7/drain-advance",
                                        why=f"{got} transfers plus {credit - got} unused credits advance the "
                                            f"delivery-count by {credit}")
            self.ctx.observe(drained_flow="owed: credit was left after the transfers")
            return reply
        reply = self.await_flow(after=after)    # a flow sent before the transfers (RabbitMQ 3.10's) is not this one
        self.ctx.observe(drained_flow="sent after the transfers (not owed: they used the credit)" if reply is not None
                         else "none: the transfers used the credit (the drain is complete without one)")
        if reply is not None:
            self.require_delivery_count(reply, serial_add(int(start), credit),
                                        requirement="2.7.4/sender-delivery-count-set",
                                        why=f"the flow after {got} transfers carries the current delivery-count")
            self.require_credit(reply, 0, requirement="2.6.7/credit-decrease-on-send",
                                why=f"{got} transfers used the credit of {credit}")
        return reply

    def await_flow(self, *, after: int | None = None) -> Flow | None:
        """The broker's flow for this link after our last flow (or after the arrival position `after`), or None
        (judges nothing: for a case that uses an optional answer, e.g. to echo, only as a means)."""
        try:
            return self._answer(after=after).body
        except (ExpectationTimeout, ConnectionLost):
            return None

    def arrived_flow(self) -> Flow | None:
        """The broker's flow for this link after our last flow if it has arrived, else None, without waiting
        (after a barrier round trip, whatever the broker sent in answer is here): an optional answer."""
        try:
            return self.peer.expect(Flow, channel=self.session.remote_channel, handle=self.broker_handle,
                                    after=self._mark, timeout=0, unless=self._gone).body
        except (ExpectationTimeout, ConnectionLost):
            return None

    def _answer(self, *, after: int | None = None, **matchers):
        """The broker's flow for this link after our last flow (or `after`): at once if here, else after a
        barrier through the queue and the absence window (the frame timeout only for a broker that answers
        nothing)."""
        after = self._mark if after is None else after
        return self.session.answer_or_absence(lambda timeout: self.peer.expect(
            Flow, channel=self.session.remote_channel, handle=self.broker_handle, after=after, timeout=timeout,
            unless=self._gone, **matchers), on_connection=True)

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
        self.durable = False                  # header(durable=true) on every message

    @property
    def credit(self) -> int:
        return self.state.link_credit

    def expect_credit(self, *, requirement: str, timeout: float | None = None) -> Flow:
        try:
            return self.peer.expect(Flow, channel=self.session.remote_channel, handle=self.broker_handle,
                                    link_credit=lambda c: c is not None and c > 0, timeout=timeout).body
        except (ExpectationTimeout, ConnectionLost) as exc:
            self.ctx.halt(requirement, "the broker granted no link-credit to the publisher",
                          expected="flow(link-credit > 0)", actual=_arrived_text(exc), conn=self.connection)

    def wait_for_credit(self, quiet: bool = True) -> int:
        try:
            self.peer.expect(Flow, channel=self.session.remote_channel, handle=self.broker_handle,
                             link_credit=lambda c: c is not None and c > 0, timeout=self.ctx.options.quiet_period * 4)
        except ExpectationTimeout:
            return 0
        return self.credit

    def require_credit_at_least(self, n: int) -> None:
        if self.credit < n:
            raise SubjectUnobservable(f"the broker granted {self.credit} credits and the case needs {n}",
                                      observations={"credit": self.credit})

    def transfer(self, body: bytes, *, allow_without_credit: bool = False, ignore_session_window: bool = False,
                 settled: bool = False) -> Any:
        if self.credit <= 0 and not allow_without_credit:
            raise ScriptError("the case tried to send without link-credit (2.6.7 forbids it)")
        s = self.session.state
        if not ignore_session_window and s.remote_incoming_window is not None and s.remote_incoming_window <= 0:
            raise ScriptError("the case tried to send beyond the broker's incoming-window")
        sections = (Header(durable=True), Data(body)) if self.durable else (Data(body),)
        frame = self.peer.transfer(self.session.channel, self.handle, encode_message(*sections),
                                   settled=settled or None)
        self.sent[int(frame.body.delivery_id)] = body
        return frame

    def echo(self, *, requirement: str | None, settled: bool = False) -> Flow | None:
        """flow(echo=true) on this sender link; returns the broker's flow that reflects every transfer sent
        (flows the broker sent before it processed them may arrive first and are skipped). A flow ahead of
        our delivery-count is returned at once (the caller's check fails it). With requirement None (echo
        only as a means), no answer returns None. `settled`: the caller has just let the connection go quiet
        (`flow_after_transfers`); no second quiet period first."""
        if not settled:
            settle(self.peer, self.ctx.options.quiet_period)
        mark = self.peer.mark()
        ours = self.state.delivery_count
        self.peer.flow(self.session.channel, handle=self.handle, link_credit=None, echo=True)

        def current(f):
            dc = f.body.delivery_count
            return dc is None or serial_diff(int(dc), ours) <= 0
        try:
            return self.session.answer_or_absence(lambda timeout: self.peer.expect(
                Flow, channel=self.session.remote_channel, handle=self.broker_handle, after=mark, where=current,
                timeout=timeout, unless=self._gone), on_connection=True).body
        except (ExpectationTimeout, ConnectionLost) as exc:
            if requirement is None:       # echo only as a means: no answer is no finding
                return None
            self.ctx.halt(requirement, "the broker did not answer flow(echo=true) on the publisher link with "
                          "its current state", expected="a flow for this link", actual=_arrived_text(exc),
                          conn=self.connection)

    def await_outcomes(self, n: int) -> int:
        """Wait (bounded) until the broker settled or gave outcomes for `n` of our deliveries; how many did."""
        def count() -> int:
            return len(self.accepted_bodies()) + self.rejected_count()
        while count() < n:
            try:
                self.peer.expect(Disposition, channel=self.session.remote_channel,
                                 timeout=self.ctx.options.quiet_period * 2)
            except (ExpectationTimeout, ConnectionLost):
                break
        return count()

    def ended_by_broker(self) -> str | None:
        """The broker's detach of this link, end of its session or close, if one arrived (summarized)."""
        for item in self.peer.arrived:
            body = getattr(item, "body", None)
            if (isinstance(body, Detach) and item.channel == self.session.remote_channel
                    and body.handle == self.broker_handle) or isinstance(body, Close) or (
                    isinstance(body, End) and item.channel == self.session.remote_channel):
                return summarize(item)
        return None

    def flow_after_transfers(self) -> Flow | None:
        """The latest flow the broker sent for this link on its own whose delivery-count is not behind ours
        (it was sent after every transfer of ours arrived: a credit top-up), after a bounded quiet period;
        None if none came. Earlier flows, crossing our transfers, are the model's to judge."""
        ours = self.state.delivery_count
        settle(self.peer, self.ctx.options.quiet_period)
        flows = [f.body for f in self.peer.received(Flow) if f.channel == self.session.remote_channel
                 and f.body.handle == self.broker_handle and f.body.delivery_count is not None
                 and serial_diff(ours, int(f.body.delivery_count)) >= 0]
        return flows[-1] if flows else None

    def expect_handled_or_detached(self, sent: int, *, condition: str, requirement: str) -> tuple["Excess", str]:
        """After transfers beyond credit: (what the broker did, how it looked). A dropped connection
        halts the case with a finding on `requirement`."""
        try:
            frame = self.session.answer_or_absence(
                lambda timeout: self.peer.expect((Detach, End, Close), timeout=timeout), queue=self.queue)
        except ExpectationTimeout:
            return Excess.HANDLED, "handled"
        except ConnectionLost:
            self.ctx.halt(requirement, "the broker dropped the connection after excess transfers instead of "
                          "detaching the link with an error",
                          expected=f"handled, or detach({condition})", actual="connection lost", conn=self.connection)
        got = Peer.error_condition(frame)
        if isinstance(frame.body, Detach) and got == condition:
            return Excess.DETACHED, f"detached the link with {condition}"
        return Excess.OTHER, f"answered with {summarize(frame)}"

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
        return sum(1 for item in self.peer.arrived if isinstance(getattr(item, "body", None), Disposition)
                   and isinstance(item.body.state, Rejected))

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
            try:     # a connection the broker dropped shows here when its FIN was not read yet
                self.transfer(f"{self.queue}+{i}".encode())
            except ConnectionLost:
                return False
        return True
