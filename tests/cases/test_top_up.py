"""A broker's own credit top-up crossed alone (casekit/top_up.py, used by 2.6.7/11): against the reference
broker topping a publisher's credit up as ActiveMQ Artemis does (at a low mark, so the top-up crosses the
pipelined burst and its delivery-count is behind ours), the case learns the mark and crosses it one transfer
at a time, so the wrap is judged from a flow the broker sent on its own; without the tactic the same broker
with no echo leaves the subject not observable; a wrong count in that flow still fails."""

from __future__ import annotations

from conformance.cases import load_all
from conformance.casekit.executor import run_case
from conformance.options import RunOptions
from conformance.reference.broker import BrokerConfig, Faults
from conformance.reference.handle import ReferenceBrokerHandle

OPTIONS = RunOptions(frame_timeout=2.0, quiet_period=0.25, connect_timeout=2.0)
CASES = load_all()
CREDIT, MARK = 100, 30      # top-ups when 30 of 100 are left: at 70 and 140 transfers received


def run(faults: Faults):
    broker = ReferenceBrokerHandle(faults, BrokerConfig(publisher_credit=CREDIT, publisher_top_up_at=MARK))
    try:
        return run_case(CASES["2.6.7/11"], broker, OPTIONS)
    finally:
        broker.stop()


def test_the_top_up_that_crossed_the_burst_is_crossed_again_alone():
    result = run(Faults(ignore_echo=True))
    assert result.verdict.value == "pass", result.reason
    assert result.observations["flow_source"] == "a flow the broker sent on its own"
    assert result.observations["sent"] == 2 * (CREDIT - MARK)      # up to the second top-up, then no more


def test_without_the_tactic_the_same_broker_leaves_the_wrap_not_observable(monkeypatch):
    import conformance.cases.s2_6_7_flow_control as cases
    monkeypatch.setattr(cases, "cross_top_up_alone", lambda link: None)
    result = run(Faults(ignore_echo=True))
    assert result.verdict.value == "informational" and result.outcome == "unobservable", result.reason
    assert result.observations["sent"] == CREDIT


def test_a_wrong_count_in_the_top_up_still_fails():
    result = run(Faults(ignore_echo=True, receiver_delivery_count_offset=1))
    assert result.verdict.value == "fail", result.reason
    assert result.violated == "2.7.4/receiver-delivery-count"
