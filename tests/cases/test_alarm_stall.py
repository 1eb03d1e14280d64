"""A publisher's connection the broker stops reading during an alarm (ActiveMQ Classic at its store limit: the
connection thread waits in Queue.checkUsage), against the reference broker that holds a connection the same way
(`BrokerConfig.hold_connection_on_alarm`): the alarm cases (2.5.6/4-6) call it `connection stalled`, never a
throttle by flow control. The stall is proven by a round trip left unanswered: within the absence window only
while the broker's own count of the queue shows that it took none of what the publisher sent (and nothing at
all arrived on that connection since); without that count, or with one that shows the transfers queued, within
the frame timeout, as before. Each test fails if the case calls the held connection throttled by flow control,
or if the short bound is used without the broker's evidence.
"""

from __future__ import annotations

from conformance.cases import load_all
from conformance.casekit.executor import run_case
from conformance.options import RunOptions
from conformance.reference.broker import BrokerConfig, Faults
from conformance.reference.handle import ReferenceBrokerHandle

OPTIONS = RunOptions(frame_timeout=2.0, quiet_period=0.25, connect_timeout=2.0)
CASE = load_all()["2.5.6/5"]
HOLD = BrokerConfig(hold_connection_on_alarm=True)
SHORT = "s of a round trip (the attach of a link on this session), nothing arrived on it since our last transfer"
LONG = "within 2 s: the attach of a link on this session went unanswered"


class NoQuickDepth(ReferenceBrokerHandle):
    """A profile that reads the queue's depth only through a command-line tool (RabbitMQ 3's rabbitmqctl)."""

    def queue_depth(self, queue, *, quick=False):
        return None if quick else super().queue_depth(queue)


class CountsUnansweredTransfers(ReferenceBrokerHandle):
    """A broker whose own count shows more messages than before the publisher sent (as if it had queued them)
    once the publisher's transfers are out: no evidence that it holds them."""

    published = False

    def queue_depth(self, queue, *, quick=False):
        depth = super().queue_depth(queue)
        if quick and self.published:
            return depth + 1
        if quick:
            self.published = True        # the first quick read is the case's own, before publishing
        return depth


def run(broker):
    try:
        return run_case(CASE, broker, OPTIONS)
    finally:
        broker.stop()


def detail(result) -> str:
    return result.observations["producer"]["detail"]


def test_a_held_connection_is_stalled_not_throttled_proven_within_the_absence_window():
    result = run(ReferenceBrokerHandle(config=HOLD))
    assert result.verdict.value == "informational", result.reason
    assert result.observations["throttled_by"] == "connection stalled"
    assert SHORT in detail(result) and "none of the 100 transfers without an outcome was queued" in detail(result)
    assert result.observations["lost"] == 0 and result.observations["resumed"]


def test_without_the_brokers_count_the_stall_waits_the_frame_timeout():
    result = run(NoQuickDepth(config=HOLD))
    assert result.observations["throttled_by"] == "connection stalled", result.reason
    assert LONG in detail(result) and SHORT not in detail(result)


def test_a_count_that_shows_the_transfers_queued_is_no_evidence():
    result = run(CountsUnansweredTransfers(config=HOLD))
    assert result.observations["throttled_by"] == "connection stalled", result.reason
    assert LONG in detail(result) and SHORT not in detail(result)


def test_a_broker_that_throttles_by_flow_control_is_not_called_stalled():
    result = run(ReferenceBrokerHandle())
    assert result.verdict.value == "pass", result.reason
    assert result.observations["throttled_by"] == "session incoming-window 0"


def test_a_held_connection_that_loses_an_accepted_message_still_fails():
    result = run(ReferenceBrokerHandle(Faults(lose_after=3), config=HOLD))
    assert result.verdict.value == "fail" and result.violated == "3.2.1/durable-not-lost", result.reason


def test_a_barrier_left_unanswered_keeps_its_handle():
    """The broker attaches a barrier link late (once it reads the connection again): that handle stays taken,
    so the next round trip on the session attaches another (attaching a handle in use is a protocol error;
    ActiveMQ closed the connection with decode-error when the drain's round trip reused it)."""
    from conformance.casekit.context import CaseContext
    from conformance.peer import ExpectationTimeout
    from conformance.wire import Attach
    broker = ReferenceBrokerHandle(config=HOLD)
    try:
        ctx = CaseContext(CASE, broker, OPTIONS)
        queue = ctx.queue(preload=1)
        session = ctx.session()
        session.attach_receiver(queue)
        publisher = session.attach_sender(queue, initial_delivery_count=0)
        publisher.expect_credit(requirement="2.6.7/initial-flow-state")
        broker.set_alarm("disk", True)
        publisher.transfer(b"held")               # the broker stops reading the connection here
        try:
            session.barrier(queue, through_queue=True, timeout=0.2, give_up=lambda: True)
            raise AssertionError("the held connection answered the barrier")
        except ExpectationTimeout:
            pass
        broker.set_alarm("disk", False)           # the held frames are read: the first barrier gets attached
        session.barrier(queue, through_queue=True)
        handles = [int(e.item.body.handle) for e in session.peer.transcript.entries
                   if e.direction == "out" and isinstance(getattr(e.item, "body", None), Attach)]
        assert len(handles) == 4 and len(set(handles)) == 4, handles
        for conn in ctx.connections:
            conn.peer.close()
    finally:
        broker.stop()
