"""The expectations file and the gate (conformance.expectations): pure, no broker.

Every pair of (expected verdict, actual verdict) has one kind, taken from the results layer's change table;
the file's errors are one line with exit 16; --write-expect's file expects exactly what the run showed and
parses back; flaky cells do not gate unless asked.
"""

from __future__ import annotations

import itertools
import json

import pytest

from conformance import expectations as ex
from conformance.run.gate import flaky_from_report
from conformance.errors import EXIT_BAD_EXPECTATIONS, EXIT_CASE_ERROR, EXIT_MUST_FAILED, EXIT_OK, BadExpectations
from conformance.results import CHANGE
from conformance.verdict import VERDICTS

P, F, N, I, U, E = VERDICTS      # pass, fail, non-strict, informational, unsupported, error (the order is verdict.py's)


def record(case_id="2.7.2/1", verdict=P, broker="rabbitmq-4.0", violated=None, subject=(), reason="why"):
    return {"case_id": case_id, "verdict": verdict, "broker": broker, "violated": violated,
            "subject": list(subject), "reason": reason}


def parse(text):
    return ex.Expectations.parse(text, "exp.toml")


FILE = """
version = 1
labels = ["rabbitmq-4.0", "artemis-*"]

[[expect]]
case = "2.7.2/1"
on = "rabbitmq-4.0"
verdict = "fail"
reason = "RMQ-1: handle-max"

[[expect]]
case = "2.7.4/3"
on = "artemis-*"
verdict = "fail"
reason = "ARTEMIS-2: unattached handle"

[[expect]]
case = "2.7.4/3"
on = "artemis-2.17.*"
verdict = "non-strict"
reason = "older: closes instead"

[[expect]]
requirement = "2.7.4/echo"
on = "artemis-*"
verdict = ["non-strict", "pass"]
reason = "ARTEMIS-3: echo sometimes"
flaky = true
"""


def test_every_verdict_pair_has_one_kind_from_the_change_table():
    for expected, actual in itertools.product(VERDICTS, VERDICTS):
        kind = ex.classify((expected,), actual)
        change = CHANGE[(expected, actual)]
        if expected == actual:
            assert kind == ex.EXPECTED
        elif actual == E:
            assert kind == ex.UNEXPECTED_ERROR
        else:
            assert kind == {"regression": ex.UNEXPECTED_FAIL, "fix": ex.UNEXPECTED_PASS,
                            "change": ex.UNEXPECTED_CHANGE}[change], (expected, actual)
    # the release manager's cases, spelled out
    assert ex.classify((P,), F) == ex.UNEXPECTED_FAIL
    assert ex.classify((N,), F) == ex.UNEXPECTED_FAIL
    assert ex.classify((F,), N) == ex.UNEXPECTED_PASS
    assert ex.classify((F,), P) == ex.UNEXPECTED_PASS
    assert ex.classify((P,), U) == ex.UNEXPECTED_CHANGE
    assert ex.classify((F,), E) == ex.UNEXPECTED_ERROR
    assert ex.classify((E,), E) == ex.EXPECTED
    assert ex.classify(None, F) == ex.NEW
    assert ex.classify(None, E) == ex.UNEXPECTED_ERROR        # an error is never new, never silent
    assert ex.classify((F, N), P) == ex.UNEXPECTED_PASS
    assert ex.classify((P, N), F) == ex.UNEXPECTED_FAIL
    assert ex.classify((P, I), N) == ex.UNEXPECTED_FAIL


def test_the_most_specific_entry_speaks_and_covered_cells_expect_pass():
    exp = parse(FILE)
    assert exp.judge(record("2.7.2/1", F)).kind == ex.EXPECTED
    j = exp.judge(record("2.7.2/1", P))
    assert j.kind == ex.UNEXPECTED_PASS and j.entry.line == 5 and j.gating
    assert "exp.toml:5" in j.describe("exp.toml") and "remove the entry" in j.describe("exp.toml")
    # a covered cell without an entry expects pass
    j = exp.judge(record("2.6.8/1", F))
    assert (j.kind, j.expected, j.entry) == (ex.UNEXPECTED_FAIL, (P,), None)
    assert j.describe("exp.toml").startswith("UNEXPECTED FAIL 2.6.8/1 on rabbitmq-4.0: fail, expected pass")
    # globs: the longer glob wins over the shorter one
    assert exp.judge(record("2.7.4/3", F, "artemis-2.40.0")).kind == ex.EXPECTED
    assert exp.judge(record("2.7.4/3", N, "artemis-2.17.0")).kind == ex.EXPECTED
    assert exp.judge(record("2.7.4/3", F, "artemis-2.17.0")).kind == ex.UNEXPECTED_FAIL
    # an uncovered label is new (an error there is not)
    assert exp.judge(record("2.7.4/3", F, "qpid-proton-c")).kind == ex.NEW
    assert exp.judge(record("2.7.4/3", E, "qpid-proton-c")).kind == ex.UNEXPECTED_ERROR


def test_requirement_entries_speak_for_the_deciding_finding_then_the_subject():
    exp = parse(FILE)
    by_violated = record("2.6.7/13", N, "artemis-2.40.0", violated="2.7.4/echo")
    assert exp.judge(by_violated).kind == ex.EXPECTED
    by_subject = record("2.7.4/1", P, "artemis-2.40.0", subject=["2.7.4/echo"])
    assert exp.judge(by_subject).kind == ex.EXPECTED
    # a case entry outranks a requirement entry
    exp2 = parse(FILE + '\n[[expect]]\ncase = "2.7.4/1"\non = "artemis-2.40.0"\nverdict = "fail"\nreason = "x"\n')
    assert exp2.judge(by_subject).kind == ex.UNEXPECTED_PASS


def test_flaky_cells_do_not_gate_unless_strict():
    exp = parse(FILE)
    r = record("2.7.4/1", F, "artemis-2.40.0", subject=["2.7.4/echo"])       # entry flaky = true
    j = exp.judge(r)
    assert j.kind == ex.UNEXPECTED_FAIL and j.flaky and not j.gating
    assert exp.judge(r, strict_flaky=True).gating
    # flaky from the history (report.json), not from the file
    r2 = record("2.6.8/1", F)
    assert exp.judge(r2).gating and not exp.judge(r2, flaky=True).gating
    assert ex.gate_exit_code([exp.judge(r)]) == EXIT_OK
    assert ex.gate_exit_code([exp.judge(r), exp.judge(r2)]) == EXIT_MUST_FAILED
    assert ex.gate_exit_code([exp.judge(r2), exp.judge(record("2.6.8/2", E))]) == EXIT_CASE_ERROR
    assert ex.counts([exp.judge(r), exp.judge(r2)])["flaky"] == 1


def test_flaky_from_a_report_json(tmp_path):
    model = {"flaky": [{"case_id": "2.6.9/1", "column": "artemis-2.40.0@2.40.0", "verdict_counts": {"pass": 2}}],
             "cells": [{"case_id": "2.6.8/1", "column": "rabbitmq-4.0@4.0.5", "flaky": True},
                       {"case_id": "2.6.8/2", "column": "rabbitmq-4.0@4.0.5", "flaky": False}]}
    (tmp_path / "report.json").write_text(json.dumps(model))
    assert flaky_from_report(tmp_path) == {("2.6.9/1", "artemis-2.40.0"), ("2.6.8/1", "rabbitmq-4.0")}
    with pytest.raises(BadExpectations, match="no report.json"):
        flaky_from_report(tmp_path / "nowhere.json")
    (tmp_path / "bad.json").write_text("[1, 2]")
    with pytest.raises(BadExpectations, match="not a report.json"):
        flaky_from_report(tmp_path / "bad.json")


@pytest.mark.parametrize("text, message", [
    ("expect = 3", "must be [[expect]] tables"),
    ("[[expect]\n", "not valid TOML"),
    ("colour = 1", "unknown key 'colour'"),
    ("version = 2", "version 2"),
    ("labels = 'x'", "labels must be a list"),
    ('[[expect]]\non = "a"\nverdict = "fail"\nreason = "r"', "exactly one of case or requirement"),
    ('[[expect]]\ncase = "2.7.2/1"\nverdict = "fail"\nreason = "r"', "needs on ="),
    ('[[expect]]\ncase = "2.7.2/1"\non = "a"\nverdict = "failed"\nreason = "r"', "unknown verdict 'failed'"),
    ('[[expect]]\ncase = "2.7.2/1"\non = "a"\nreason = "r"', "needs verdict"),
    ('[[expect]]\ncase = "2.7.2/1"\non = "a"\nverdict = "fail"', "needs a reason"),
    ('[[expect]]\ncase = "2.7.2/1"\non = "a"\nverdict = "fail"\nreason = "r"\nflaky = "yes"', "flaky must be"),
    ('[[expect]]\ncase = "2.7.2/1"\non = "a"\nverdict = "fail"\nreason = "r"\nbroker = "b"', "unknown key 'broker'"),
    ('[[expect]]\ncase = "2.7.2/1"\non = "a"\nverdict = "fail"\nreason = "r"\n\n'
     '[[expect]]\ncase = "2.7.2/1"\non = "a"\nverdict = "pass"\nreason = "s"', "exp.toml:7: a second entry"),
])
def test_a_malformed_file_is_one_line_with_its_own_exit_code(text, message):
    with pytest.raises(BadExpectations) as caught:
        parse(text)
    assert message in caught.value.message and "\n" not in caught.value.message
    assert caught.value.exit_code == EXIT_BAD_EXPECTATIONS == 16


def test_ids_the_suite_lacks_are_errors_naming_the_line(tmp_path):
    exp = parse(FILE)
    exp.check_ids(["2.7.2/1", "2.7.4/3"], ["2.7.4/echo"])
    with pytest.raises(BadExpectations, match=r"exp.toml:5: case '2.7.2/1' does not exist"):
        exp.check_ids(["2.7.4/3"], ["2.7.4/echo"])
    with pytest.raises(BadExpectations, match=r"exp.toml:23: requirement '2.7.4/echo' does not exist"):
        exp.check_ids(["2.7.2/1", "2.7.4/3"], [])
    with pytest.raises(BadExpectations, match="no expectations file at .*--write-expect"):
        ex.Expectations.load(tmp_path / "missing.toml")


def test_write_expect_expects_exactly_the_run_and_parses_back():
    run = [record("2.5.4/1", P), record("2.7.2/1", F, reason="closed with the wrong error", violated="2.7.2/x"),
           record("2.6.8/1", I), record("2.5.6/4", U), record("2.6.8/2", E)]
    written, skipped = ex.written_from(run, None, labels=["rabbitmq-4.0"], cases=[r["case_id"] for r in run])
    assert [r["case_id"] for r in skipped] == ["2.6.8/2"]                  # errors are never written
    text = ex.render(written, header=["written by a test"])
    again = parse(text)
    assert again.labels == ("rabbitmq-4.0",) and again.cases == tuple(r["case_id"] for r in run)
    assert {(e.case, e.verdicts) for e in again.entries} == {("2.7.2/1", (F,)), ("2.6.8/1", (I,)), ("2.5.6/4", (U,))}
    assert [j.kind for j in map(again.judge, run[:4])] == [ex.EXPECTED] * 4
    assert again.judge(run[4]).kind == ex.UNEXPECTED_ERROR
    assert "2.7.2/x: closed with the wrong error" in text
    # a case the suite adds later is new
    assert again.judge(record("2.7.5/2", F)).kind == ex.NEW


def test_rewriting_keeps_what_holds_and_changes_what_does_not():
    exp = parse(FILE)
    run = [record("2.7.2/1", P),                                  # fixed: its own line goes
           record("2.7.4/3", F, "artemis-2.40.0"),                # the glob holds: kept as it is
           record("2.7.4/3", U, "artemis-2.39.0"),                # the glob does not hold: an exact entry
           record("2.7.4/1", F, "artemis-2.40.0", subject=["2.7.4/echo"]),   # flaky requirement entry: exact entry
           record("2.6.8/1", N)]                                  # new failure: an entry
    written, _ = ex.written_from(run, exp, labels=["rabbitmq-4.0", "artemis-2.40.0", "artemis-2.39.0"],
                                 cases=[])
    again = parse(ex.render(written))
    assert all(again.judge(r).kind == ex.EXPECTED for r in run)
    keys = {(e.case or e.requirement, e.on): e for e in again.entries}
    assert ("2.7.2/1", "rabbitmq-4.0") not in keys
    assert keys[("2.7.4/3", "artemis-*")].reason == "ARTEMIS-2: unattached handle"
    assert keys[("2.7.4/3", "artemis-2.39.0")].verdicts == (U,)
    assert keys[("2.7.4/echo", "artemis-*")].flaky
    assert again.labels == ("rabbitmq-4.0", "artemis-*", "artemis-2.40.0", "artemis-2.39.0")


def test_a_flaky_entry_of_the_cell_gains_the_verdict():
    exp = parse('[[expect]]\ncase = "2.6.9/1"\non = "b"\nverdict = "pass"\nreason = "timing"\nflaky = true\n')
    written, _ = ex.written_from([record("2.6.9/1", N, "b")], exp, labels=["b"], cases=["2.6.9/1"])
    [entry] = parse(ex.render(written)).entries
    assert entry.verdicts == (P, N) and entry.flaky and entry.reason == "timing"


def test_strings_that_need_escaping_round_trip():
    odd = 'a "quoted" \\ back\tslash\x7f and ünïcode\nnewline'
    exp = ex.Expectations([ex.Entry("lab*", (F,), odd, "2.7.2/1")], ("lab*",), None)
    [entry] = parse(ex.render(exp)).entries
    assert entry.reason == odd.strip()


def test_it_crosses_to_workers_as_plain_json():
    exp = parse(FILE)
    again = ex.Expectations.from_json(json.loads(json.dumps(exp.to_json())))
    assert again == exp
