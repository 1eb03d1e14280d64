"""Absence proven by the broker, not by the clock (issue #11).

A case that waits for a frame that may not come (an answer to echo or drain, a transfer that must not
arrive) follows its request with a barrier round trip the broker must answer, then watches the quiet period.
On the reference broker:
- answers written late (after the broker's answer to the barrier, as a broker whose queues run apart from its
  sessions does: `BrokerConfig.late_by_frames`) are still seen as answers;
- a transfer beyond credit written late is still caught (without the barrier it is held until the peer's next
  frame, which the old quiet period never sent);
- a broker that never answers is judged as not answering without waiting the frame timeout: each case runs
  with a frame timeout of 120 s under a test timeout of 60 s (no timing is asserted; the verdict is).
"""

from __future__ import annotations

import pytest

from conformance.cases import load_all
from conformance.options import RunOptions
from conformance.casekit.executor import run_case
from conformance.reference.broker import BrokerConfig, Faults
from conformance.reference.handle import ReferenceBrokerHandle

CASES = load_all()
OPTIONS = RunOptions(frame_timeout=2.0, quiet_period=0.25, connect_timeout=2.0)
PATIENT = RunOptions(frame_timeout=120.0, quiet_period=0.25, connect_timeout=2.0)


def _run(case_id: str, broker, options=OPTIONS):
    return run_case(CASES[case_id], broker, options)


@pytest.fixture(scope="module")
def late_broker():
    broker = ReferenceBrokerHandle(config=BrokerConfig(late_by_frames=2))
    yield broker
    broker.stop()


# drain answers (2.6.7/1, 2.6.8/2, 2.6.8/3), echo on a receiving link (2.7.4/1), on a session without links
# (2.7.4/2, the barrier is a begin/end on another channel), on a publisher link (2.6.7/13), and the echoes
# used only as a means (2.6.7/8 available, 2.6.10/1 stopping a link)
LATE_ANSWERED = {"2.6.7/1": "pass", "2.6.8/2": "pass", "2.6.8/3": "pass", "2.7.4/1": "pass", "2.7.4/2": "pass",
                 "2.6.7/13": "pass", "2.6.7/8": "informational", "2.6.10/1": "pass"}


@pytest.mark.parametrize("case_id", sorted(LATE_ANSWERED))
def test_an_answer_written_after_the_barriers_is_seen(case_id, late_broker):
    result = _run(case_id, late_broker)
    assert result.verdict.value == LATE_ANSWERED[case_id], f"{case_id}: {result.verdict.value}: {result.reason}"
    if case_id == "2.6.7/8":
        assert result.outcome == "recorded", result.reason      # the echo was answered: available is recorded


@pytest.mark.parametrize("case_id", ["2.6.8/1", "2.7.4/4"])
def test_a_transfer_beyond_credit_written_after_the_barrier_is_caught(case_id):
    broker = ReferenceBrokerHandle(faults=Faults(extra_transfers=1), config=BrokerConfig(late_by_frames=2))
    try:
        result = _run(case_id, broker)
    finally:
        broker.stop()
    assert result.verdict.value == "fail", f"{case_id}: {result.verdict.value}: {result.reason}"
    assert {f["requirement"] for f in result.findings} & {"2.6.7/no-send-without-credit", "2.6.7/credit-formula"}


NEVER_ANSWERED = [
    ("2.6.7/1", Faults(ignore_drain=True), "fail", "2.6.7/drain-advance"),
    ("2.6.8/3", Faults(drain_leaves_credit=True), "fail", "2.6.7/drain-advance"),   # its transfer would answer it
    ("2.7.4/1", Faults(ignore_echo=True), "non-strict", "2.7.4/echo"),
    ("2.7.4/2", Faults(ignore_echo=True), "non-strict", "2.7.4/echo"),
    ("2.6.7/13", Faults(ignore_echo=True), "non-strict", "2.7.4/echo"),
    ("2.6.7/8", Faults(ignore_echo=True), "informational", None),
    ("2.6.10/1", Faults(ignore_echo=True), "pass", None),          # judged through the window barrier, no echo
]


@pytest.mark.timeout(60)
@pytest.mark.parametrize("case_id,faults,verdict,requirement", NEVER_ANSWERED, ids=[c[0] for c in NEVER_ANSWERED])
def test_a_request_never_answered_is_judged_without_the_frame_timeout(case_id, faults, verdict, requirement):
    broker = ReferenceBrokerHandle(faults=faults)
    try:
        result = _run(case_id, broker, PATIENT)
    finally:
        broker.stop()
    assert result.verdict.value == verdict, f"{case_id}: {result.verdict.value}: {result.reason}"
    if requirement is not None:
        assert result.violated == requirement, result.reason
    elif verdict == "pass":
        assert result.outcome == "passed", result.reason
    else:
        assert result.outcome == "unobservable", result.reason


@pytest.mark.parametrize("case_id", ["2.7.4/2", "2.6.8/2"])
def test_an_unanswered_end_of_the_begin_end_barrier_costs_nothing(case_id):
    """The begin/end barrier's round trip is the begin: RabbitMQ 3.10 sometimes never answers the end, which
    cost a frame timeout per barrier (2.6.8/2 and 2.6.10/1 took 5 s in 2 of 3 runs); its channel stays out of
    use until the end comes, so later sessions and barriers take other channels."""
    broker = ReferenceBrokerHandle(config=BrokerConfig(late_by_frames=2, answer_ends=False))
    try:
        result = _run(case_id, broker)
        again = _run(case_id, broker)
    finally:
        broker.stop()
    assert result.verdict.value == again.verdict.value == LATE_ANSWERED[case_id], result.reason
    assert result.waited_s["timeout"] < OPTIONS.frame_timeout, result.waited_s


def test_a_full_queue_that_rejects_is_seen_without_waiting_apart_for_the_outcomes():
    """2.6.7/14's synchronous publisher takes each outcome as it comes: a broker that rejects the transfers
    beyond the queue's limit (RabbitMQ's reject-publish) is seen rejecting the 11th, without a frame timeout."""
    broker = ReferenceBrokerHandle(config=BrokerConfig(reject_on_overflow=True))
    try:
        result = _run("2.6.7/14", broker)
    finally:
        broker.stop()
    assert result.verdict.value == "pass", result.reason
    producer = result.observations["producer"]
    assert producer["means"] == "rejected" and producer["at_message"] == 11, producer
    assert result.waited_s["timeout"] < OPTIONS.frame_timeout, result.waited_s
