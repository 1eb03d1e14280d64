"""The grading rules, one test each, on the in-process reference broker (conformance.reference): a case judges
the whole exchange (findings, not a first exception), a broken obligation fails, a subject seen only through
an optional behaviour the broker does not show is not observable (never non-strict), an unrelated early
finding does not hide the case's subject, a finding on an undeclared requirement is a suite error, and a MAY
never fails. Each test fails against the grading of the suite before issue #10 (first shortfall decides).
"""

from __future__ import annotations

import pytest

from conformance.casekit import CaseSpec
from conformance.cases import load_all
from conformance.options import RunOptions
from conformance.casekit.executor import run_case
from conformance.reference.broker import Faults
from conformance.reference.handle import ReferenceBrokerHandle

OPTIONS = RunOptions(frame_timeout=2.0, quiet_period=0.25, connect_timeout=2.0)
CASES = load_all()


def run(case_id_or_spec, faults: Faults):
    spec = CASES[case_id_or_spec] if isinstance(case_id_or_spec, str) else case_id_or_spec
    broker = ReferenceBrokerHandle(faults)
    try:
        return run_case(spec, broker, OPTIONS)
    finally:
        broker.stop()


def requirements_found(result) -> list[str]:
    return [f["requirement"] for f in result.findings]


def test_a_broker_ending_the_session_during_a_drain_breaks_the_drain_obligation():
    """2.6.7/1 against a broker that sends 2 of 3 messages and then ends the session with an error (as
    RabbitMQ 3.10 does): the missing transfer is a SHOULD, the unanswered drain a MUST -> fail."""
    result = run("2.6.7/1", Faults(end_session_on_drain=True))
    assert result.verdict.value == "fail", result.reason
    assert result.violated == "2.6.7/drain-advance"
    assert "amqp:internal-error" in result.reason and "drain" in result.reason
    assert requirements_found(result) == ["2.6.7/drain-advance", "2.6.7/drain-behaviour"]
    assert result.findings[0]["source"] == "obligation" and result.findings[0]["frame_index"] is not None


def test_a_subject_seen_only_through_an_unanswered_echo_is_not_observable():
    """2.6.7/11 against a broker that answers no echo and never tops up a publisher's credit (no flow of its
    own after the transfers): the wrap cannot be read from any frame, so informational 'not observable',
    never non-strict for the echo."""
    result = run("2.6.7/11", Faults(ignore_echo=True, drop_on_excess=True))
    assert result.verdict.value == "informational", result.reason
    assert "not observable on this broker, because" in result.reason
    assert result.outcome == "unobservable" and result.findings == []


def test_the_wrap_is_judged_from_flows_the_broker_sends_on_its_own():
    """2.6.7/11 with a wrong delivery-count in the broker's own credit flows and no echo: still judged."""
    result = run("2.6.7/11", Faults(ignore_echo=True, receiver_delivery_count_offset=1))
    assert result.verdict.value == "fail", result.reason
    assert result.violated == "2.7.4/receiver-delivery-count"


def test_an_unrelated_early_finding_does_not_hide_the_subject():
    """2.5.6/4 against a broker whose publisher flows lack delivery-count (a MUST, like RabbitMQ 3.10) and
    whose alarm closes the connection: both findings are reported, and the alarm scenario ran to its end."""
    result = run("2.5.6/4", Faults(omit_receiver_delivery_count=True, close_on_alarm=True))
    assert result.verdict.value == "fail", result.reason
    assert result.violated == "2.7.4/receiver-delivery-count"
    assert result.outcome == "recorded"
    assert result.observations["throttled_by"] == "connection ended"
    assert "consumers_continued" in result.observations and "lost" in result.observations


def test_the_alarm_subject_is_reported_whatever_else_was_found():
    result = run("2.5.6/4", Faults(omit_receiver_delivery_count=True))
    assert result.verdict.value == "fail" and result.violated == "2.7.4/receiver-delivery-count"
    assert result.observations["throttled_by"] in ("session incoming-window 0", "link-credit withheld")
    assert result.observations["consumers_continued"] is True and result.observations["lost"] == 0


def test_a_finding_on_an_undeclared_requirement_is_a_suite_error():
    def body(ctx):
        ctx.require(False, "2.7.2/handle-max", "a check the case does not declare")
        return ctx.passed("never")

    spec = CaseSpec("9.9/1", "undeclared", ("2.6.7/drain-behaviour",), body, subject=("2.6.7/drain-behaviour",))
    result = run(spec, Faults())
    assert result.verdict.value == "error", result.reason
    assert result.reason.startswith("suite error in case 9.9/1") and "2.7.2/handle-max" in result.reason


def test_a_may_never_fails():
    """2.6.7/12 against a broker that handles excess transfers but loses them: excess-transfers is a MAY,
    so informational (the verdict rule, VERDICT_FOR_LEVEL; no check raises a verdict of its own)."""
    result = run("2.6.7/12", Faults(detach_on_excess=False, lose_after=100))
    assert result.verdict.value == "informational", result.reason
    assert result.violated == "2.6.7/excess-transfers"
    assert [f["level"] for f in result.findings] == ["MAY"]


@pytest.mark.parametrize("case_id", list(CASES))
def test_every_case_names_its_subject(case_id):
    spec = CASES[case_id]
    assert spec.subject and set(spec.subject) <= set(spec.requirements)


def test_losing_accepted_durable_messages_fails():
    """2.5.6/4 against a broker that accepts a publisher's durable messages and then loses all but the first:
    data loss cites 3.2.1 ("Durable messages MUST NOT be lost ..."), a MUST -> fail (was informational when it
    cited the informative 3.4.2/accepted-at-target); the alarm subject is still reported."""
    result = run("2.5.6/4", Faults(lose_after=1))
    assert result.verdict.value == "fail", result.reason
    assert result.violated == "3.2.1/durable-not-lost"
    assert result.observations["lost"] > 0 and "lost" in result.reason


def test_messages_a_case_loses_track_of_are_not_counted_lost():
    """Transfers the broker sends beyond credit are delivered, not lost: 2.5.6/4 with extra transfers fails on
    no-send-without-credit only, never on 3.2.1/durable-not-lost."""
    result = run("2.5.6/4", Faults(extra_transfers=1))
    assert "3.2.1/durable-not-lost" not in requirements_found(result), result.reason


def _drain_obligation(frames):
    """The drain obligation of a flow(link-credit=2, drain=true) at delivery-count 0xfffffffe on the broker's
    channel 0, handle 0, scanned over the broker's `frames` that followed it (a session end with an error last)."""
    from types import SimpleNamespace

    from conformance.casekit.record import _ended_while_open
    from conformance.casekit.findings import Obligation
    from conformance.casekit.scripts import ReceiverScript
    from conformance.peer.transcript import Entry
    from conformance.wire import End, Error, Frame, Symbol

    link = SimpleNamespace(session=SimpleNamespace(remote_channel=0), broker_handle=0,
                           state=SimpleNamespace(delivery_count=0xFFFFFFFE))
    answers = ReceiverScript._drain_answer(link, 0)               # limit 0xfffffffe + 2, across the wrap
    end = Frame(0, End(error=Error(condition=Symbol("amqp:internal-error"))))
    entries = [Entry(i + 1, 0.0, "in", f, b"") for i, f in enumerate([*frames, end])]
    conn = SimpleNamespace(peer=SimpleNamespace(transcript=SimpleNamespace(snapshot=lambda: entries)))
    return _ended_while_open(Obligation("2.6.7/drain-advance", "the drain", conn, 0, answers, 0))


def test_transfers_that_use_the_drained_credit_answer_the_drain_obligation():
    """A drained flow is owed only when credit is left: a session ended after transfers that used the credit
    up leaves no drain open; ended after fewer, it breaks the obligation."""
    from conformance.wire import Frame, Transfer

    def transfer(more=False):
        return Frame(0, Transfer(handle=0, delivery_id=1, delivery_tag=b"t", more=more))
    assert _drain_obligation([transfer(), transfer()]) is None
    assert _drain_obligation([transfer(), transfer(more=True)]) is not None     # the second message unfinished
    assert _drain_obligation([transfer()]) is not None
