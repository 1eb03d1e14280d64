"""The waits of client cases: an absence is proven by a round trip, then a short quiet period, so a library
that ignores what it must answer costs a quiet period, not the frame timeout (2.7.4/103: the message sent right
behind the flow on an unattached handle, received by the application). An answer is one that came after what it answers: a flow the client sent before our echo or
drain (as azure-servicebus's _pyamqp sends one on attach) is not taken for one."""

from __future__ import annotations

import time

import pytest

from conformance.cases import load_clients
from conformance.casekit.executor import run_case
from conformance.options import RunOptions
from conformance.reference.client import subject

# a frame timeout far above what a round trip plus a quiet period takes: a case that waited for it shows
SLOW = RunOptions(frame_timeout=8.0, quiet_period=0.2, connect_timeout=5.0)


def _run(case_id, s, options=SLOW):
    try:
        t0 = time.monotonic()
        result = run_case(load_clients()[case_id], s, options)
        return result, time.monotonic() - t0
    finally:
        s.discard()


def test_an_ignored_flow_on_an_unattached_handle_is_proven_by_a_round_trip_not_the_frame_timeout():
    result, took = _run("2.7.4/103", subject("client-ignore-unattached-handle"))
    assert result.verdict.value == "fail", result.reason
    assert result.observations["round_trip"].startswith("the application received 'after-the-flow'")
    assert "so the library had read the flow" in str(result.findings[0])
    assert took < SLOW.frame_timeout / 2, took


def test_the_round_trip_does_not_shorten_the_wait_for_a_client_that_ends_the_session():
    result, took = _run("2.7.4/103", subject())
    assert result.verdict.value == "pass", result.reason
    assert "round_trip" not in result.observations
    assert took < SLOW.frame_timeout / 2, took


@pytest.mark.parametrize("case_id,fault,level", [("2.7.4/102", "client-ignore-echo", "non-strict"),
                                                  ("2.7.4/104", "client-ignore-echo", "non-strict"),
                                                  ("2.6.7/105", "client-ignore-drain", "fail")])
def test_a_flow_sent_before_our_echo_or_drain_is_not_its_answer(case_id, fault, level):
    """The client sends a flow right after its attach and never answers: the case must not take that earlier
    flow for the answer (it did: azure-servicebus 7.15.0's 2.7.4/104 was a pass)."""
    result, _ = _run(case_id, subject(fault, flow_on_attach=True))
    assert result.verdict.value == level, (result.verdict, result.reason)
    result, _ = _run(case_id, subject(flow_on_attach=True))
    assert result.verdict.value == "pass", (result.verdict, result.reason)
