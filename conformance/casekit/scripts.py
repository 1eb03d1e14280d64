"""The scripts a case is written in: connections, sessions, receiver and sender links.

This module owns `ConnectionScript` and `SessionScript` (`session.echo`, `session.barrier`, ...); the link
scripts are `ReceiverScript` (receiver_script.py) and `SenderScript` (sender_script.py), their shared base `script_base.py`,
and all are importable from here (`link.flow`, `link.expect_transfers`, ...). Each helper sends exactly the frames its name says, through
the scripted peer, and nothing behind the case's back. An expectation that names a requirement records a
finding on it when the frame does not come (or a wrong one does) and halts the case body (`CaseHalted`);
a check on a value records a finding and goes on; a drain opens an obligation. Everything else that fails
is an ERROR. Outcomes the scripts report are enums (`Excess`), never prose to compare.
"""

from __future__ import annotations

from typing import Any, Callable

from ..peer import ConnectionLost, ExpectationTimeout, Peer, UnexpectedFrame, settle, summarize
from ..wire import Attach, Begin, Close, Detach, End, Flow, Source, Target, serial_diff
from ..peer.barrier import absence_window, answer_or_absence, begin_end_round_trip, link_round_trip
from . import crossing as crossings
from .script_base import AUTO, Excess, LinkScript, ScriptError, _arrived_text, _body_of  # noqa: F401 (re-exported)
from .receiver_script import ReceiverScript
from .sender_script import SenderScript

__all__ = ["AUTO", "ConnectionScript", "Excess", "LinkScript", "ReceiverScript", "ScriptError", "SenderScript",
           "SessionScript"]


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
        """A round trip on the connection (`peer.barrier.begin_end_round_trip`). Its end's answer is taken
        when it comes (RabbitMQ 3.10 sometimes never answers that end, which cost a frame timeout), and its
        channel stays out of use until then."""
        channel = self._free_channel()
        self._ending[channel] = begin_end_round_trip(self.peer, channel)

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
        self._unanswered: set[int] = set()    # handles of barrier links whose attach went unanswered: the broker
                                              # may still attach them, so no later link takes them

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
        """The lowest handle no link of this session uses and no unanswered barrier link may hold."""
        used = {link.handle for link in self.links} | self._unanswered
        return next(h for h in range(len(used) + 1) if h not in used)

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

    # -- the session window as a barrier (crossing.py) -------------------------------------------------------

    def window_limit(self) -> int | None:
        """The transfer-id up to which (exclusive) our incoming-window lets the broker send: what our latest
        begin or flow announced."""
        return crossings.window_limit(self.peer, self.channel, self.broker_initial_outgoing_id)

    def keep_window(self) -> dict:
        """Session fields for a flow that leaves our window limit where it is (the barrier stays)."""
        return crossings.keep_window(self.state, self.window_limit())

    def transfer_ids(self) -> list:
        """(transfer-id, frame) of every transfer the broker sent on this session so far."""
        return crossings.transfer_ids(self.peer, self.remote_channel, self.broker_initial_outgoing_id)

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
                Flow, channel=self.remote_channel, after=mark, where=current, timeout=timeout, unless=self.ended_by)).body
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

    def ended_by(self, frame) -> bool:
        """Whether `frame` (one the broker sent) ends this session (its end) or the connection (close)."""
        return isinstance(frame.body, Close) or (isinstance(frame.body, End) and frame.channel == self.remote_channel)

    def barrier(self, queue: str | None = None, *, through_queue: bool = False, on_connection: bool = False,
                timeout: float | None = None, give_up: Callable[[], bool] | None = None) -> None:
        """A round trip the broker must answer, ordered after everything sent so far on this session.

        With a queue (`queue`, default the first link's): a link attached and detached on this session; with
        `through_queue`, a receiving link on that queue, whose attach the broker answers only after its queue
        took it as a consumer, so on brokers that run queues apart from sessions (RabbitMQ) the answer comes
        after what the queue did for requests sent before it (drain answers, deliveries for credit granted).
        Without a queue, or `on_connection`: a begin and end on a fresh channel, which leaves this session
        alone (RabbitMQ 3.10 resets the connection on a frame for a session it is ending after a drain it could
        not do; its connection answers a begin whatever its sessions do). The frame timeout bounds each wait
        (ExpectationTimeout: the broker stopped answering); `Precluded` when the broker ends the session or
        closes the connection first. `timeout` and `give_up`: a shorter first bound on a link barrier's answer
        for a caller holding the broker's own evidence that it is not reading this connection (`take_transfers`;
        `peer.barrier.link_round_trip`)."""
        if queue is None and self.links:
            queue = self.links[0].queue
        if on_connection or queue is None or self.state.ended_by_remote is not None or self.state.ended_by_us:
            return self.connection.begin_end_barrier()
        handle = self._next_handle()          # free again once the barrier link is detached
        self._barriers += 1
        name = f"{self._link_name('barrier')}.{self._barriers}"    # a new name each time: a link's name is its identity
        try:
            link_round_trip(self.peer, self.channel, self.remote_channel, handle, name, through_queue=through_queue,
                            address=self.ctx.address(queue, "source" if through_queue else "target"),
                            gone=self.ended_by, timeout=timeout, give_up=give_up)
        except ExpectationTimeout:
            self._unanswered.add(handle)
            raise

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
        """The answer to a request just sent, or proof that none is coming (`peer.barrier.answer_or_absence`),
        the barrier being this session's (`barrier`)."""
        return answer_or_absence(
            expect, lambda: self.barrier(queue, through_queue=through_queue, on_connection=on_connection),
            self.absence_window())

    def absence_window(self) -> float:
        """How long an answer may still come after the barrier's (`peer.barrier.absence_window`)."""
        return absence_window(self.peer, self.ctx.options.quiet_period)

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
