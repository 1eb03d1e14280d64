"""2.6.10/1 (Figure 2.46) on brokers: the stop crosses transfers in flight on every run, and the transfers a
broker sends after it read the stop are counted past the session window's barrier, whether or not it answers
echo. A reference broker that ignores a stop whose delivery-count is behind its own (as ActiveMQ Artemis did)
fails; the correct one passes."""

from __future__ import annotations

import pytest

from conformance.cases import load_all
from conformance.casekit.executor import run_case
from conformance.options import RunOptions
from conformance.reference.broker import BrokerConfig, Faults
from conformance.wire.serial import serial_add
from conformance.reference.handle import ReferenceBrokerHandle

OPTIONS = RunOptions(frame_timeout=2.0, quiet_period=0.25, connect_timeout=2.0)
CASE = load_all()["2.6.10/1"]


def _run(faults: Faults):
    broker = ReferenceBrokerHandle(faults)
    try:
        return run_case(CASE, broker, OPTIONS)
    finally:
        broker.stop()


def test_the_stop_crosses_transfers_in_flight_and_the_correct_broker_passes():
    result = _run(Faults())
    assert result.verdict.value == "pass", result.reason
    crossing = result.observations["crossing"]
    assert crossing["happened"] and crossing["held_unread"], crossing
    behind = serial_add(BrokerConfig().initial_delivery_count, 10)       # the 10 transfers read, across the wrap
    assert f"delivery-count={behind:#x}" in crossing["ours"] or f"delivery-count={behind}," in crossing["ours"]
    assert "link-credit=0" in crossing["ours"]
    assert result.observations["after_the_barrier"] == 0
    assert result.observations["in_flight_after_stop"] >= 1       # footnote (1): they came, and were fine


@pytest.mark.parametrize("echo", [True, False], ids=["echo answered", "echo never answered"])
def test_a_broker_ignoring_a_stop_behind_its_delivery_count_fails(echo):
    result = _run(Faults(ignore_stale_stop=True, ignore_echo=not echo))
    assert result.verdict.value == "fail", result.reason
    assert result.violated == "2.6.7/no-send-without-credit" and result.findings[0]["source"] == "case"
    assert result.observations["after_the_barrier"] > 0
    assert result.findings[0]["frame_index"] is not None and "transfer" in result.actual
