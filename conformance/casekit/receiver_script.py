"""The receiver link script: the peer receives, the broker sends.

This module owns `ReceiverScript`: our flows (a drain opens the 2.6.7/drain-advance obligation), waiting for
transfers (late ones after a barrier through the queue), taking what comes where whether it comes is the
case's subject (`take_transfers`, `Taken`), proving none comes, the broker's answer to a drain or echo, and
the bodies of the messages received.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from ..peer import ConnectionLost, ExpectationTimeout, PeerError, Precluded, UnexpectedFrame, summarize
from ..wire import Detach, Flow, Transfer, serial_add, serial_diff
from . import crossing as crossings
from .findings import CaseHalted
from .script_base import AUTO, LinkScript, _arrived_text, _body_of


@dataclass
class Taken:
    """What `take_transfers` got: the transfer frames, the messages among them, and when fewer than wanted
    came, why the wait ended (`stalled`: the broker answered no round trip on the connection)."""

    wanted: int
    frames: list = field(default_factory=list)
    messages: int = 0
    stalled: bool = False
    detail: str = ""

    @property
    def complete(self) -> bool:
        return self.messages >= self.wanted

    def text(self) -> str:
        return f"{self.messages} of {self.wanted} messages" + (f" ({self.detail})" if self.detail else "")


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

    def hold_reads_after(self, transfers: int) -> None:
        """Arm a hold of our reads after the broker's `transfers`-th transfer on this link from now: what it
        sends next stays in our receive buffer, unread, until `send_crossing` (arm before granting credit)."""
        self.peer.hold_reads_after(crossings.transfers_held_after(transfers, self.session.remote_channel,
                                                                  self.broker_handle))

    def send_crossing(self, send: Callable[[], Any], what: str) -> crossings.Crossing:
        """Once a transfer of the broker's on this link is held unread (sent before the broker can have
        seen what we send now), `send()` our frame(s), then read on (crossing.py); recorded in the observations."""
        channel, handle = self.session.remote_channel, self.broker_handle
        return crossings.cross(self.ctx, self.peer, lambda f: isinstance(f.body, Transfer) and f.channel == channel
                               and f.body.handle == handle, send, what)

    def take_arrived(self) -> int:
        """Consume every transfer on this link that has arrived; how many messages were received in total."""
        while True:
            try:
                frame = self.peer.expect(Transfer, channel=self.session.remote_channel, handle=self.broker_handle,
                                         timeout=0)
            except ExpectationTimeout:
                break
            self.received.append(frame)
        return sum(1 for f in self.received if not f.body.more)

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
                                    timeout=t, unless=self.ended_by)
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

    def take_transfers(self, n: int, *, held: Callable[[], str | None] | None = None) -> Taken:
        """Up to n messages on this link, where whether they come is the case's subject and no requirement
        obliges the broker to send them (a sender MAY use its credit): no finding, the facts. Waits as
        `expect_transfers` does (the absence window, then a barrier round trip through the queue on this
        session, then the window again); a barrier the broker leaves unanswered within the frame timeout
        means it answers nothing on this connection any more (`stalled`).

        `held`: the broker's own evidence that it is not reading this connection (a text, or None when it
        shows none), asked before the first wait (evidence then: no window before the round trip) and when the
        absence window passed without a transfer. With evidence, the barrier's answer is awaited for one absence
        window only, as any absence is proven (a round trip, then a short quiet period), and the evidence is
        asked again once that ran out: still there, `stalled`; gone (the broker took something meanwhile), the
        answer is waited for up to the whole frame timeout, as without."""
        taken = Taken(n)
        window = self.session.absence_window()

        def ended(exc) -> Taken:
            taken.detail = f"the broker ended the session or connection first ({_arrived_text(exc)})"
            return taken
        while taken.messages < n:
            # evidence already before the first wait: the round trip goes out at once (what was sent before it is
            # as unread as the round trip itself); the window is then the one after it
            before = held() if held is not None and not taken.frames else None
            try:
                frame = self._next_transfer(0.0 if before else window)
            except (Precluded, ConnectionLost) as exc:
                return ended(exc)
            except ExpectationTimeout:             # none within the window: does the broker still answer here?
                evidence = [before or (held() if held is not None else None)]

                def still_held() -> bool:
                    evidence[0] = held()
                    return bool(evidence[0])
                try:
                    self.session.barrier(self.queue, through_queue=True, timeout=window if evidence[0] else None,
                                         give_up=still_held if evidence[0] else None)
                except (Precluded, ConnectionLost) as exc:
                    return ended(exc)
                except ExpectationTimeout:
                    taken.stalled = True
                    number = self.connection.number
                    taken.detail = (f"the broker answered nothing on connection {number} within {window:.2f} s of a "
                                    f"round trip (the attach of a link on this session), {evidence[0]}"
                                    if evidence[0] else
                                    f"the broker answered nothing on connection {number} within "
                                    f"{self.ctx.options.frame_timeout:g} s: the attach of a link on this session "
                                    "went unanswered")
                    return taken
                try:
                    frame = self._next_transfer(window)
                except (Precluded, ConnectionLost) as exc:
                    return ended(exc)
                except ExpectationTimeout:
                    taken.detail = "none within the absence window after a round trip the broker answered"
                    return taken
            taken.frames.append(frame)
            self.received.append(frame)
            if not frame.body.more:
                taken.messages += 1
        return taken

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
                                    after=self._mark, timeout=0, unless=self.ended_by).body
        except (ExpectationTimeout, ConnectionLost):
            return None

    def _answer(self, *, after: int | None = None, **matchers):
        """The broker's flow for this link after our last flow (or `after`): at once if here, else after a
        barrier through the queue and the absence window (the frame timeout only for a broker that answers
        nothing)."""
        after = self._mark if after is None else after
        return self.session.answer_or_absence(lambda timeout: self.peer.expect(
            Flow, channel=self.session.remote_channel, handle=self.broker_handle, after=after, timeout=timeout,
            unless=self.ended_by, **matchers), on_connection=True)

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

    def flows_after(self, position: int) -> list:
        """The broker's flows for this link that arrived at or after arrival position `position`."""
        return [item for item in self.peer.arrived[position:] if isinstance(getattr(item, "body", None), Flow)
                and item.channel == self.session.remote_channel and item.body.handle == self.broker_handle]

    def transfers_after(self, flow_body) -> list:
        """The broker's transfers on this link that arrived after its flow `flow_body` (e.g. an echoed flow)."""
        pos = self._position(flow_body)
        return [item for item in self.peer.arrived[pos + 1:] if isinstance(getattr(item, "body", None), Transfer)
                and item.channel == self.session.remote_channel and item.body.handle == self.broker_handle]

    def require_after_transfers(self, flow_body, *, requirement: str) -> None:
        pos = self._position(flow_body)
        later = [item for item in self.peer.arrived[pos + 1:] if isinstance(getattr(item, "body", None), Transfer)
                 and item.body.handle == self.broker_handle]
        self.ctx.require(not later, requirement, "a transfer arrived after the drained flow",
                         expected="the drained flow last", actual=summarize(later[0]) if later else "")

    def body_of(self, frame) -> bytes:
        return _body_of([frame])

    def bodies(self) -> list[bytes]:
        return _bodies(self.received)

    def bodies_from_state(self) -> list[bytes]:
        return _bodies(self.state.transfers)

    def accept_delivered(self, since: int = 0) -> int:
        """Accept (settle) the unsettled deliveries among the transfers this link got from position `since` on, in
        one disposition; returns the position reached (pass it back next time)."""
        frames = list(self.state.transfers)
        ids = [int(f.body.delivery_id) for f in frames[since:] if f.body.delivery_id is not None and not f.body.settled]
        if frames and frames[-1].body.more:          # a message still arriving: accepted with its last frame
            while frames and frames[-1].body.delivery_id is None:
                frames.pop()
            if frames:
                frames.pop()
            ids = ids[:-1]
        if ids:
            try:
                self.peer.disposition(self.session.channel, first=ids[0], last=ids[-1])
            except PeerError:
                pass
        return len(frames)


def _bodies(frames) -> list[bytes]:
    """The body of each complete message the transfer frames carry, in order."""
    out, current = [], []
    for frame in frames:
        current.append(frame)
        if not frame.body.more:
            out.append(_body_of(current))
            current = []
    return out
