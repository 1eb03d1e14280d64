"""Suite bugs surface as suite errors: a predicate that raises, a message body that does not decode and an
import that fails, each an `error` verdict naming the case (never a broker finding after the frame timeout);
a case module that does not import is the run's documented error naming the module."""

from __future__ import annotations

import time

import pytest

from conformance.casekit import CaseSpec
from conformance.casekit.scripts import _body_of
from conformance.cases import _import_section
from conformance.errors import EXIT_CASE_ERROR, RunBroken
from conformance.options import RunOptions
from conformance.casekit.executor import run_case
from conformance.reference.broker import Faults
from conformance.reference.handle import ReferenceBrokerHandle
from conformance.wire import Begin, Frame, Transfer

OPTIONS = RunOptions(frame_timeout=3.0, quiet_period=0.25, connect_timeout=2.0)
SUBJECT = ("2.6.7/drain-behaviour",)


def run(case_id: str, body):
    broker = ReferenceBrokerHandle(Faults())
    try:
        return run_case(CaseSpec(case_id, "a suite bug", SUBJECT, body, subject=SUBJECT), broker, OPTIONS)
    finally:
        broker.stop()


def test_a_raising_where_predicate_is_a_suite_error_naming_the_case_at_once():
    def body(ctx):
        peer = ctx.connect().peer
        peer.begin(3)
        peer.expect(Begin, where=lambda f: f.body.no_such_field)   # a typo in a case
        return ctx.passed("never")

    started = time.monotonic()
    result = run("9.9/2", body)
    assert time.monotonic() - started < OPTIONS.frame_timeout, "it must not wait out the frame timeout"
    assert result.verdict.value == "error", result.reason
    assert result.reason.startswith("suite error in case 9.9/2: the where= predicate"), result.reason
    assert "AttributeError" in result.reason and result.findings == []


def test_a_body_that_does_not_decode_is_a_suite_error_naming_the_case():
    frame = Frame(1, Transfer(handle=0, delivery_id=0, more=False), b"\x00\x53\x75\xb0\x00\x00\x00\x09ab")

    def body(ctx):
        _body_of([frame])             # what ReceiverScript.bodies() does with each received message
        return ctx.passed("never")

    result = run("9.9/3", body)
    assert result.verdict.value == "error", result.reason
    assert result.reason.startswith("suite error in case 9.9/3: the message in ch1 transfer(") and "does not decode" \
        in result.reason, result.reason


def test_an_import_of_our_package_failing_in_a_case_is_a_suite_error_naming_the_case():
    def body(ctx):
        from conformance.casekit import no_such_name  # noqa: F401
        return ctx.passed("never")

    result = run("9.9/4", body)
    assert result.verdict.value == "error", result.reason
    assert result.reason.startswith("suite error in case 9.9/4: an import failed: ImportError"), result.reason
    assert "no_such_name" in result.reason


def test_a_case_module_that_does_not_import_is_the_runs_error_naming_it():
    with pytest.raises(RunBroken) as caught:
        _import_section("conformance.cases.s9_9_no_such_section")
    assert caught.value.exit_code == EXIT_CASE_ERROR
    assert "conformance.cases.s9_9_no_such_section does not import (ModuleNotFoundError" in str(caught.value)
