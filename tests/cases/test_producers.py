"""Producer flow control (2.6.7/14) against reference brokers that throttle in each way a real one does: a
broker that stops the publisher by any means and loses nothing passes; one that loses an accepted message
fails on 3.2.1/durable-not-lost; one that sends beyond credit fails (test_case_verdicts); one that never
throttles is informational. The facts the report's producer table reads are in observations["producer"].
"""

from __future__ import annotations

import pytest

from conformance.cases import load_all
from conformance.options import RunOptions
from conformance.casekit.executor import run_case
from conformance.reference.broker import BrokerConfig, Faults
from conformance.reference.handle import ReferenceBrokerHandle

OPTIONS = RunOptions(frame_timeout=2.0, quiet_period=0.25, connect_timeout=2.0)
CASE = load_all()["2.6.7/14"]


class UnlimitedQueues(ReferenceBrokerHandle):
    """Takes the queue-limit hook and ignores the limit: the publisher is never throttled."""

    def create_queue(self, queue, max_length=None, **limits):
        super().create_queue(queue, None)


def run(broker):
    try:
        return run_case(CASE, broker, OPTIONS)
    finally:
        broker.stop()


@pytest.mark.parametrize("config, means", [
    (BrokerConfig(withdraw_on_full=True), "link-credit withdrawn"),     # as Qpid Broker-J
    (BrokerConfig(), "credit not topped up"),                            # grants no more than the room left
    (BrokerConfig(reject_on_overflow=True), "rejected"),                 # as RabbitMQ 4 (reject-publish)
])
def test_a_broker_that_throttles_and_loses_nothing_passes(config, means):
    result = run(ReferenceBrokerHandle(config=config))
    producer = result.observations["producer"]
    assert result.verdict.value == "pass", result.reason
    assert producer["means"] == means
    assert producer["at_message"] == 11 and producer["depth"] == 10 and producer["limit"] == "10 messages"
    assert producer["resumed"] and producer["resume_depth"] is not None and producer["lost"] == 0


def test_credit_withdrawn_shows_the_drain_flag_and_the_pipelined_in_flight_count():
    producer = run(ReferenceBrokerHandle(config=BrokerConfig(withdraw_on_full=True))).observations["producer"]
    assert producer["drain"] is True
    assert producer["in_flight"] is not None and producer["in_flight"] >= 0
    assert producer["pipelined"]["means"] == "link-credit withdrawn"


def test_a_broker_that_loses_an_accepted_message_fails():
    result = run(ReferenceBrokerHandle(Faults(lose_after=3)))
    assert result.verdict.value == "fail" and result.violated == "3.2.1/durable-not-lost", result.reason
    assert result.observations["producer"]["lost"] > 0


def test_not_throttled_within_the_budget_is_informational_and_names_the_cap():
    result = run(UnlimitedQueues())
    assert result.verdict.value == "informational", result.reason
    assert "not throttled within 101 messages / 45 s" in result.reason
    assert result.observations["producer"]["means"] == "not throttled"
