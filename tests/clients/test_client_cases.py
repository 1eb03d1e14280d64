"""Every client case passes against our correct client role and fails against the client that breaks its
subject (the reference client with one catalogue fault on); a hung driver is `error` within the bound and
the next case gets a fresh driver; a driver that leaves unanswered a drain its library handed it is `error`;
the in-flight withdrawal of 2.6.7/104 is forced on every run, and what it catches the model catches too; the
scripted broker's own frames break nothing (but what a case breaks on purpose)."""

from __future__ import annotations

import dataclasses
import multiprocessing
import time

import pytest

from conformance.catalogue import faults as fault_catalogue
from conformance.model.oracle import FlowOracle
from conformance.wire import Frame
from conformance.wire.frames import decode_frame
from conformance.cases import load_clients
from conformance.options import RunOptions
from conformance.casekit.executor import run_case
from conformance.reference.client import ClientFaults, subject

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


# more faults that a case must notice: (case, fault)
ALSO_NOTICED = [("2.6.7/104", "client-credit-uint32"), ("2.6.7/104", "client-late-without-echo")]


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
    not_library_faults = ("hang", "leave_drain")         # the driver, not the library, breaks something
    assert sorted(switches) == sorted(f.name for f in dataclasses.fields(ClientFaults) if f.name not in not_library_faults)
    noticed = set(FAULT_FOR.values()) | {fault for _, fault in ALSO_NOTICED}
    for f in fault_catalogue.of_kind("client"):
        assert f.name in noticed, f"{f.name}: no client case is shown to notice it"


@pytest.mark.parametrize("case_id", sorted(FAULT_FOR))
def test_the_case_passes_against_the_correct_client(case_id, correct):
    result = run_case(load_clients()[case_id], correct, OPTIONS)
    assert result.verdict.value in ("pass", "informational"), (result.verdict, result.reason)
    assert result.transcripts and result.broker == correct.name


@pytest.mark.parametrize("case_id,fault_name", sorted(FAULT_FOR.items()) + ALSO_NOTICED)
def test_the_case_fails_against_its_faulty_client(case_id, fault_name):
    fault = fault_catalogue.get(fault_name)
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


def _frames(transcript: dict) -> list[tuple[str, Frame]]:
    """(direction, frame) of a transcript's AMQP frames, decoded again from their recorded bytes."""
    out = []
    for e in transcript["entries"]:
        if e.get("frame_type") == "amqp" and e.get("name") not in ("empty",):
            out.append((e["direction"], decode_frame(bytes.fromhex(e["raw"]))))
    return out


def test_the_uint32_credit_is_caught_by_the_case_and_by_the_model():
    """go-amqp and proton-c compute the sender's credit in uint32: the withdrawal that crossed a transfer wraps
    it to ~2^32. The case's barrier catches the late transfers; the model's judgement of the client's frames
    (direction "in") catches the sends beyond every limit the broker granted, on its own."""
    faulty = subject("client-credit-uint32")
    try:
        result = run_case(load_clients()["2.6.7/104"], faulty, OPTIONS)
    finally:
        faulty.discard()
    assert result.verdict.value == "fail" and result.violated == "2.6.7/no-send-without-credit"
    assert result.findings[0]["source"] == "case"
    oracle = FlowOracle(judge="in")
    model = [v for direction, frame in _frames(result.transcripts[0]) for v in oracle.observe(direction, frame)]
    assert "2.6.7/no-send-without-credit" in {v.requirement_id for v in model}


def _burn(stop):
    while not stop.is_set():
        pass


@pytest.mark.timeout(240)
def test_the_in_flight_withdrawal_crosses_on_every_run_of_a_loaded_machine(correct):
    """20 runs of 2.6.7/104 against the correct reference client, with every core kept busy: the withdrawing
    flow goes out while the client's next transfer is held unread in our receive buffer, every time."""
    stop = multiprocessing.Event()
    burners = [multiprocessing.Process(target=_burn, args=(stop,), daemon=True)
               for _ in range((multiprocessing.cpu_count() or 2) + 1)]
    for b in burners:
        b.start()
    try:
        crossed = []
        for _ in range(20):
            result = run_case(load_clients()["2.6.7/104"], correct, OPTIONS)
            assert result.verdict.value == "pass", result.reason
            crossing = result.observations["crossing"]
            crossed.append(crossing["happened"] and any("transfer" in h for h in crossing["held_unread"]))
    finally:
        stop.set()
        for b in burners:
            b.join(5)
    assert crossed == [True] * 20, crossed


def test_a_driver_that_leaves_a_drain_its_library_handed_it_is_error():
    """The drain handed to the application and left unanswered is the driver's bug, never the library's
    verdict (rhea's driver must answer `sender_draining` with `set_drained(true)`)."""
    leaving = subject(leave_drain=True)
    try:
        result = run_case(load_clients()["2.6.7/105"], leaving, OPTIONS)
    finally:
        leaving.discard()
    assert result.verdict.value == "error" and "left unanswered a drain" in result.reason, result.reason
    answered = subject()
    try:
        result = run_case(load_clients()["2.6.7/105"], answered, OPTIONS)
    finally:
        answered.discard()
    assert result.verdict.value == "pass"
    assert result.observations["drains_handed_to_the_application"][0]["answered"]


@pytest.mark.parametrize("case_id", sorted(FAULT_FOR))
def test_the_scripted_brokers_own_frames_break_nothing_but_what_the_case_declares(case_id, correct):
    result = run_case(load_clients()[case_id], correct, OPTIONS)
    spec = load_clients()[case_id]
    for transcript in result.transcripts:
        oracle = FlowOracle(judge="out")
        broken = {v.requirement_id for direction, frame in _frames(transcript)
                  for v in oracle.observe(direction, frame) if v.level in ("MUST", "SHOULD")}
        assert broken <= set(spec.deliberate), f"{case_id}: the scripted broker broke {broken - set(spec.deliberate)}"
