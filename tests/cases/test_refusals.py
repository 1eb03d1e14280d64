"""A broker's refusal is read for what it says, and our peer falls silent when the broker closes (issue #23).

Configurations real brokers are run with, on the reference broker (conformance.reference: `BrokerConfig`):
a non-durable store (refuses a durable message with precondition-failed, as Qpid Broker-J with a Memory
virtual host), a broker that refuses unknown addresses (no auto-creation: not-found), and one that offers
PLAIN over TLS only. Each gives a clear refusal line and no finding on an unrelated requirement; the
wrap case still judges its subject on the non-durable store. Every transcript shows no frame of ours after
the broker's close, or after its end of a session other than our end (`frames_after_the_end`; the peer's
own tests: tests/peer/test_peer_stops.py; every case's transcripts: tests/cases/test_case_verdicts.py).
"""

from __future__ import annotations

import pytest

from conformance.cases import load_all
from conformance.peer import frames_after_the_end
from conformance.options import RunOptions
from conformance.casekit.executor import run_case
from conformance.reference.broker import NON_DURABLE, BrokerConfig, Faults
from conformance.reference.handle import ReferenceBrokerHandle

OPTIONS = RunOptions(frame_timeout=2.0, quiet_period=0.25, connect_timeout=2.0)
CASES = load_all()


def run(case_id: str, config: BrokerConfig, faults: Faults | None = None, **handle):
    broker = ReferenceBrokerHandle(faults, config, **handle)
    try:
        return run_case(CASES[case_id], broker, OPTIONS)
    finally:
        broker.stop()


def silent_after_the_end(result) -> list[str]:
    return [line for doc in result.transcripts for line in frames_after_the_end(doc)]


# -- the transcript checker ---------------------------------------------------------------------------------

def _entry(index, direction, name, channel=0, **fields):
    return {"index": index, "direction": direction, "name": name, "channel": channel, "frame_type": "amqp",
            "summary": name, "fields": {"type": name, **fields}}


def test_the_checker_finds_frames_after_the_close_and_after_the_end():
    doc = {"entries": [
        _entry(0, "out", "begin", 0), _entry(1, "in", "begin", 3, remote_channel=0),
        _entry(2, "in", "end", 3), _entry(3, "out", "flow", 0), _entry(4, "out", "end", 0),
        _entry(5, "out", "begin", 0), _entry(6, "in", "close"), _entry(7, "out", "close"),
        _entry(8, "out", "begin", 1)]}
    found = frames_after_the_end(doc)
    assert len(found) == 2, found
    assert found[0].startswith("frame 3 flow on channel 0 after the other side's end")
    assert found[1].startswith("frame 8 begin after the other side's close")


def test_the_checker_passes_our_end_and_close_and_a_new_session():
    doc = {"entries": [
        _entry(0, "out", "begin", 0), _entry(1, "in", "begin", 0, remote_channel=0), _entry(2, "in", "end", 0),
        _entry(3, "out", "end", 0), _entry(4, "out", "begin", 0), _entry(5, "in", "close"),
        _entry(6, "out", "close")]}
    assert frames_after_the_end(doc) == []
    ours_first = {"entries": [       # our end first, their end answers it: the channel is free for a new begin
        _entry(0, "out", "begin", 1), _entry(1, "in", "begin", 1, remote_channel=1), _entry(2, "out", "end", 1),
        _entry(3, "in", "end", 1), _entry(4, "out", "begin", 1), _entry(5, "out", "attach", 1)]}
    assert frames_after_the_end(ours_first) == []


# -- a non-durable store ----------------------------------------------------------------------------------------

NON_DURABLE_STORE = BrokerConfig(durable_store=False)


def test_the_wrap_is_judged_with_non_durable_messages_where_durable_ones_are_refused():
    result = run("2.6.7/11", NON_DURABLE_STORE)
    assert result.verdict.value == "pass", result.reason
    assert result.findings == []
    assert "amqp:precondition-failed" in result.observations["durable_refused"]
    assert NON_DURABLE in result.observations["durable_refused"]
    assert silent_after_the_end(result) == []


def test_the_wrap_still_fails_on_a_non_durable_store_that_breaks_it():
    result = run("2.6.7/11", NON_DURABLE_STORE, Faults(receiver_delivery_count_offset=1))
    assert result.verdict.value == "fail", result.reason
    assert result.violated == "2.7.4/receiver-delivery-count"
    assert "3.2.1/durable-not-lost" not in [f["requirement"] for f in result.findings]


@pytest.mark.parametrize("case_id", ["2.5.6/4"])
def test_a_durable_publisher_refused_is_a_refusal_line_not_a_finding(case_id):
    """The alarm case publishes durable messages: on a non-durable store it cannot reach its subject. The
    verdict quotes the refusal; no finding on an unrelated requirement; nothing of ours after the close."""
    result = run(case_id, NON_DURABLE_STORE)
    assert result.verdict.value == "unsupported", result.reason
    assert "could not reach its subject" in result.reason
    assert "amqp:precondition-failed" in result.reason and NON_DURABLE in result.reason
    assert result.findings == []
    assert result.observations["refusal"]["description"] == NON_DURABLE
    assert silent_after_the_end(result) == []


@pytest.mark.parametrize("durable_store", [True, False], ids=["durable-store", "non-durable-store"])
def test_publishing_resumed_only_when_the_broker_took_the_messages(durable_store):
    """`publish_after_clear` is the alarm cases' "publishing resumed". Sending is not enough: a broker that
    detaches the link for the messages (a non-durable store refusing durable ones) has not resumed publishing.
    Once, the memory alarm's window 0 reached our publisher before its first transfer, so the only durable
    messages went out after the clear, were refused, and the case passed on "resumed" with nothing published
    (seen in a test run on a loaded machine)."""
    from conformance.casekit.context import CaseContext
    broker = ReferenceBrokerHandle(None, BrokerConfig(durable_store=durable_store))
    try:
        ctx = CaseContext(CASES["2.5.6/4"], broker, OPTIONS)
        queue = ctx.queue()
        publisher = ctx.session().attach_sender(queue, initial_delivery_count=0, durable=True)
        publisher.expect_credit(requirement="2.6.7/initial-flow-state")
        assert publisher.publish_after_clear(count=2) is durable_store
        assert (publisher.ended_by_broker() is None) is durable_store
        assert len(publisher.accepted_bodies()) == (2 if durable_store else 0)
        for conn in ctx.connections:
            conn.peer.close()
    finally:
        broker.stop()


def test_a_refusal_the_spec_forbids_stays_a_finding_on_the_sentence_that_forbids_it():
    """Ending the session with not-allowed while a drain is unanswered: the drain obligation is broken."""
    result = run("2.6.7/1", BrokerConfig(drain_end_condition="amqp:not-allowed"), Faults(end_session_on_drain=True))
    assert result.verdict.value == "fail", result.reason
    assert result.violated == "2.6.7/drain-advance" and result.findings[0]["source"] == "obligation"
    assert "amqp:not-allowed" in result.reason
    assert silent_after_the_end(result) == []


# -- a broker that refuses unknown addresses -------------------------------------------------------------------

NO_AUTO_CREATE = BrokerConfig(create_on_attach=False)


@pytest.mark.parametrize("case_id", ["2.6.7/10", "2.6.7/13", "2.7.3/1"])
def test_an_unknown_address_refused_is_a_refusal_line_not_a_finding(case_id):
    """The profile creates no queue (create = "auto") and the broker creates none on attach: not-found."""
    result = run(case_id, NO_AUTO_CREATE, create_queues=False)
    assert result.verdict.value == "unsupported", result.reason
    assert "amqp:not-found" in result.reason and "could not reach its subject" in result.reason
    assert result.findings == []
    assert silent_after_the_end(result) == []


def test_a_refusal_on_a_queue_that_exists_is_not_read_into_a_case_that_needs_none():
    result = run("2.6.7/1", NO_AUTO_CREATE)        # queues created by the profile: nothing refused
    assert result.verdict.value == "pass", result.reason
    assert "refusal" not in result.observations


# -- PLAIN over TLS only ----------------------------------------------------------------------------------------

def test_plain_refused_without_tls_is_one_clear_line():
    broker = ReferenceBrokerHandle(config=BrokerConfig(sasl_mechanisms=("SCRAM-SHA-256", "CRAM-MD5")))
    broker.sasl_mechanism = "PLAIN"
    try:
        result = run_case(CASES["2.6.7/1"], broker, OPTIONS)
    finally:
        broker.stop()
    assert result.verdict.value == "error"
    assert "offers SASL SCRAM-SHA-256, CRAM-MD5, not PLAIN" in result.reason and "amqps://" in result.reason
    assert result.findings == [] and "Traceback" not in result.reason

