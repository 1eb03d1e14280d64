"""Every client case passes against our correct client role and fails against the client that breaks its
subject (the reference client with one catalogue fault on); a hung driver is `error` within the bound and
the next case gets a fresh driver."""

from __future__ import annotations

import dataclasses
import time

import pytest

from conformance.catalogue import faults as fault_catalogue
from conformance.cases import load_clients
from conformance.options import RunOptions
from conformance.casekit.executor import run_case
from conformance.selftest.client import ClientFaults, subject

OPTIONS = RunOptions(frame_timeout=2.0, quiet_period=0.2, connect_timeout=5.0)

# case -> the fault that must make it fail (or non-strict, for a SHOULD); cases whose own subject is informative
# fail on the MUST their steps also check (the receiver's delivery-count)
FAULT_FOR = {
    "2.5.6/101": "client-ignore-session-window",
    "2.6.7/101": "client-receiver-count-zero",
    "2.6.7/102": "client-receiver-count-zero",
    "2.6.7/103": "client-send-without-credit",
    "2.6.7/104": "client-send-without-credit",
    "2.6.7/105": "client-ignore-drain",
    "2.6.8/101": "client-receiver-count-zero",
    "2.6.8/102": "client-receiver-count-zero",
    "2.6.8/103": "client-receiver-count-zero",
    "2.6.10/101": "client-receiver-count-zero",
    "2.7.4/101": "client-receiver-count-zero",
    "2.7.4/102": "client-ignore-echo",
    "2.7.4/103": "client-ignore-unattached-handle",
    "2.7.4/104": "client-ignore-echo",
}


@pytest.fixture(scope="module")
def correct():
    s = subject()
    yield s
    s.discard()


def test_there_are_at_least_twelve_client_cases_and_each_has_its_fault():
    cases = load_clients()
    assert len(cases) >= 12
    assert set(FAULT_FOR) == set(cases)
    assert all(c.kind == "client" for c in cases.values())


def test_every_client_fault_is_one_catalogue_entry():
    switches = [k for f in fault_catalogue.of_kind("client") for k in f.client]
    assert sorted(switches) == sorted(f.name for f in dataclasses.fields(ClientFaults) if f.name != "hang")
    for f in fault_catalogue.of_kind("client"):
        assert f.name in FAULT_FOR.values(), f"{f.name}: no client case is shown to notice it"


@pytest.mark.parametrize("case_id", sorted(FAULT_FOR))
def test_the_case_passes_against_the_correct_client(case_id, correct):
    result = run_case(load_clients()[case_id], correct, OPTIONS)
    assert result.verdict.value in ("pass", "informational"), (result.verdict, result.reason)
    assert result.transcripts and result.broker == correct.name


@pytest.mark.parametrize("case_id", sorted(FAULT_FOR))
def test_the_case_fails_against_its_faulty_client(case_id):
    fault = fault_catalogue.get(FAULT_FOR[case_id])
    faulty = subject(fault.name)
    try:
        result = run_case(load_clients()[case_id], faulty, OPTIONS)
    finally:
        faulty.discard()
    expected = "non-strict" if fault.level == "SHOULD" else "fail"
    assert result.verdict.value == expected, (result.verdict, result.reason)
    assert fault.requirement in {f["requirement"] for f in result.findings}


def test_a_hung_driver_is_error_within_the_bound_and_the_next_case_gets_a_fresh_driver():
    hung = subject(hang=True)
    case = load_clients()["2.7.4/102"]
    try:
        t0 = time.monotonic()
        result = run_case(case, hung, OPTIONS)
        assert result.verdict.value == "error" and "did not answer" in result.reason
        assert time.monotonic() - t0 < OPTIONS.frame_timeout + OPTIONS.connect_timeout + 3
        assert hung._driver is None                       # discarded: the next case starts another
        hung._argv = [a for a in hung._argv if a != "--hang"]
        again = run_case(case, hung, OPTIONS)
        assert again.verdict.value == "pass" and hung.starts == 2
    finally:
        hung.discard()
