"""The sender link script: the peer sends, the broker receives.

This module owns `SenderScript`: waiting for credit, transfers within credit and window, echo, outcomes and
dispositions, how the broker ended the link, and the classification of what it did with transfers sent
beyond its credit (`Excess`).
"""

from __future__ import annotations

from typing import Any

from ..peer import ConnectionLost, ExpectationTimeout, Peer, settle, summarize
from ..wire import (
    Accepted, Close, Data, Detach, Disposition, End, Flow, Header, Rejected, encode_message, serial_add, serial_diff,
)
from .findings import SubjectUnobservable
from .script_base import Excess, LinkScript, ScriptError, _arrived_text


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
                timeout=timeout, unless=self.ended_by), on_connection=True).body
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
        """Publish `count` messages once credit and window allow; whether publishing resumed: they were sent
        and, after their outcomes (a bounded wait), the broker had not detached the link, ended the session
        or closed (a broker that refuses the messages by its configuration has not resumed publishing)."""
        outcomes = len(self.accepted_bodies()) + self.rejected_count()
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
        self.await_outcomes(outcomes + count)
        return self.ended_by_broker() is None
