"""`run --write-expect` then `run --expect` end to end against the reference broker by URL (one with a fault that
breaks drain, one without): adoption in one command, the gate red only on what the file does not expect and
naming exactly that cell, JUnit as a JUnit consumer reads it (junitparser: an expected fail is not a failure,
an unexpected pass is), the run directory's gate summary, flaky cells, a bad file (exit 16, nothing runs),
`--start CMD --url URL --label` for a broker your build starts, and `--client` with --expect."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest
from junitparser import JUnitXml

from conformance.cli import main
from conformance.errors import EXIT_BAD_EXPECTATIONS, EXIT_BROKER_START_FAILED, EXIT_MUST_FAILED, EXIT_OK, \
    EXIT_USAGE
from conformance.reference.config import Faults
from conformance.reference.listener import ReferenceBroker

CASES = ["2.6.8", "2.6.7/1"]           # 2.6.8/2 and 2.6.7/1 fail when the broker ignores drain


@pytest.fixture
def drain_broken_url():
    with ReferenceBroker(faults=Faults(ignore_drain=True)) as broker:
        yield broker.url


def last_run(reports: Path) -> Path:
    return sorted((reports / "runs").iterdir())[-1]


def run(capsys, *argv) -> tuple[int, str]:
    code = main(["run", *CASES, "-n", "0", *argv])
    out, err = capsys.readouterr()
    return code, out + err


def test_adopt_then_gate_then_change_one_cell(tmp_path, drain_broken_url, reference_url, capsys, monkeypatch):
    monkeypatch.setenv("CI", "true")
    exp = tmp_path / "expectations.toml"
    common = ["--label", "mybroker", "--reports-dir", str(tmp_path / "reports")]

    code, out = run(capsys, "--broker", drain_broken_url, *common, "--write-expect", str(exp))
    assert code == EXIT_OK, out
    assert f"expectations written: {exp}" in out
    text = exp.read_text()
    assert 'labels = ["mybroker"]' in text and text.count("[[expect]]") >= 2, text
    failing = {r["case_id"] for r in map(json.loads, (last_run(tmp_path / "reports") / "results.jsonl")
                                         .read_text().splitlines()) if r["verdict"] == "fail"}
    assert {"2.6.8/2", "2.6.7/1"} <= failing

    code, out = run(capsys, "--broker", drain_broken_url, *common, "--expect", str(exp))
    assert code == EXIT_OK, out
    assert "[expected]" in out and "exit 0: every result as expected" in out
    run_dir = last_run(tmp_path / "reports")
    summary = json.loads((run_dir / "expectations.json").read_text())
    assert summary["exit"] == 0 and summary["counts"]["expected"] == 4
    assert "✅ as expected" in (run_dir / "expectations.md").read_text()
    suite = JUnitXml.fromfile(str(run_dir / "junit.xml"))
    assert suite.failures == 0 and suite.errors == 0 and suite.skipped == len(failing)   # expected fails: xfail

    # one expectation changed: exactly that cell is unexpected, and the exit code says which
    changed = re.sub(r'(case = "2\.6\.8/2"\non = "mybroker"\nverdict = )"fail"', r'\1"pass"', text)
    assert changed != text
    exp.write_text(changed)
    code, out = run(capsys, "--broker", drain_broken_url, *common, "--expect", str(exp))
    assert code == EXIT_MUST_FAILED, out
    exit_line = out.strip().splitlines()[-1]
    assert exit_line == "exit 1: 1 unexpected result: 2.6.8/2 on mybroker (unexpected fail: fail, expected pass)"
    run_dir = last_run(tmp_path / "reports")
    gating = [r for r in json.loads((run_dir / "expectations.json").read_text())["results"] if r["gating"]]
    assert [(r["case_id"], r["kind"]) for r in gating] == [("2.6.8/2", "unexpected fail")]
    suite = JUnitXml.fromfile(str(run_dir / "junit.xml"))
    assert suite.failures == 1

    # the bug fixed (a broker without the fault): unexpected passes, red until the lines go
    exp.write_text(text)
    code, out = run(capsys, "--broker", reference_url, *common, "--expect", str(exp))
    assert code == EXIT_MUST_FAILED, out
    assert "UNEXPECTED PASS 2.6.8/2 on mybroker: pass, expected fail" in out and "remove the entry" in out
    suite = JUnitXml.fromfile(str(last_run(tmp_path / "reports") / "junit.xml"))
    assert suite.failures == len(failing)                                      # an unexpected pass is a failure
    messages = [r.message for ts in suite for case in ts for r in case.result if r.message]
    assert any(m.startswith("Failed: UNEXPECTED PASS 2.6.8/2 on mybroker") for m in messages), messages
    # ... and --write-expect on that run removes them
    code, out = run(capsys, "--broker", reference_url, *common, "--write-expect", str(exp))
    assert code == EXIT_OK and "[[expect]]" not in exp.read_text()


def test_flaky_cells_and_new_cases_do_not_gate(tmp_path, drain_broken_url, capsys, monkeypatch):
    monkeypatch.setenv("CI", "true")
    exp = tmp_path / "e.toml"
    exp.write_text('labels = ["mybroker"]\ncases = ["2.6.8/1", "2.6.8/2", "2.6.8/3"]\n\n'
                   '[[expect]]\ncase = "2.6.8/2"\non = "mybroker"\nverdict = "pass"\nreason = "timing"\nflaky = true\n')
    common = ["--broker", drain_broken_url, "--label", "mybroker", "--reports-dir", str(tmp_path)]
    code, out = run(capsys, *common, "--expect", str(exp))
    assert code == EXIT_OK, out
    assert "UNEXPECTED FAIL (expected pass, flaky: not gating)" in out
    assert "NEW 2.6.7/1 on mybroker: fail, no expectation" in out
    code, out = run(capsys, *common, "--expect", str(exp), "--strict-flaky")
    assert code == EXIT_MUST_FAILED, out
    # flakiness the history knows (its report.json), for a file without the mark
    exp.write_text(exp.read_text().replace("flaky = true\n", ""))
    report = tmp_path / "report.json"
    report.write_text(json.dumps({"flaky": [{"case_id": "2.6.8/2", "column": "mybroker@1.0",
                                             "verdict_counts": {"pass": 3, "fail": 1}}], "cells": []}))
    assert run(capsys, *common, "--expect", str(exp))[0] == EXIT_MUST_FAILED
    code, out = run(capsys, *common, "--expect", str(exp), "--flaky-from", str(report))
    assert code == EXIT_OK, out


@pytest.mark.parametrize("content, message", [
    ("[[expect]]\ncase = '2.6.8/1'\n", "needs on ="),
    ("[[expect]]\ncase = '9.9.9/1'\non = 'x'\nverdict = 'fail'\nreason = 'r'\n", "case '9.9.9/1' does not exist"),
    ("[[expect]]\nrequirement = '2.6.7/nope'\non = 'x'\nverdict = 'fail'\nreason = 'r'\n",
     "requirement '2.6.7/nope' does not exist"),
    ("this is not toml", "not valid TOML"),
])
def test_a_bad_file_is_one_line_exit_16_before_anything_runs(tmp_path, content, message, capsys):
    exp = tmp_path / "e.toml"
    exp.write_text(content)
    code = main(["run", "2.6.8/1", "--broker", "amqp://127.0.0.1:1", "--expect", str(exp),
                 "--reports-dir", str(tmp_path)])
    err = capsys.readouterr().err
    assert code == EXIT_BAD_EXPECTATIONS, err
    assert err.count("\n") == 1 and err.startswith("error: ") and message in err and "Traceback" not in err
    assert not (tmp_path / "runs").exists()                  # nothing started, nothing written
    # --write-expect on a malformed existing file refuses too (it would be overwritten)
    code = main(["run", "2.6.8/1", "--broker", "amqp://127.0.0.1:1", "--write-expect", str(exp),
                 "--reports-dir", str(tmp_path)])
    assert code == EXIT_BAD_EXPECTATIONS


def test_usage_errors(tmp_path, capsys):
    for argv in (["--strict-flaky"], ["--start", "x"], ["--url", "amqp://h:1"], ["--label", "x"],
                 ["--start", "x {port}", "--url", "amqp://127.0.0.1:{port}", "--broker", "qpid-proton-c"]):
        assert main(["run", "2.6.8/1", *argv, "--reports-dir", str(tmp_path)]) == EXIT_USAGE, argv
        assert capsys.readouterr().err.startswith("error: ")


def test_start_runs_your_broker_build_and_stops_it(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("CI", "true")
    start = f"{sys.executable} -m conformance.reference --port {{port}} --fault ignore_drain"
    code, out = run(capsys, "--start", start, "--url", "amqp://127.0.0.1:{port}", "--label", "build",
                    "--reports-dir", str(tmp_path), "--write-expect", str(tmp_path / "e.toml"))
    assert code == EXIT_OK, out
    assert 'on = "build"' in (tmp_path / "e.toml").read_text()
    # the process is gone afterwards: a second run starts its own on another free port
    code, out = run(capsys, "--start", start, "--url", "amqp://127.0.0.1:{port}", "--label", "build",
                    "--reports-dir", str(tmp_path), "--expect", str(tmp_path / "e.toml"))
    assert code == EXIT_OK, out
    code, out = run(capsys, "--start", f"{sys.executable} -c 'import sys; print(\"no licence\"); sys.exit(3)' {{port}}",
                    "--url", "amqp://127.0.0.1:{port}", "--reports-dir", str(tmp_path))
    assert code == EXIT_BROKER_START_FAILED and "exited with 3 before listening (no licence)" in out, out


def test_selfcheck_expect_a_fault_shows_as_unexpected_fail_and_nothing_else(tmp_path, reference_url, capsys,
                                                                           monkeypatch):
    """The gate itself checked: the file written from a run of the broker; the same cases through the proxy
    with a fault are unexpected fails only; the direct and no-fault runs are as expected."""
    monkeypatch.setenv("CI", "true")
    exp = tmp_path / "e.toml"
    common = ["2.6.8/1", "2.6.7/1", "--broker", reference_url, "-n", "0", "--reports-dir", str(tmp_path)]
    assert main(["run", *common, "--write-expect", str(exp)]) == EXIT_OK
    label = reference_url.split("//")[1]
    capsys.readouterr()
    code = main(["selfcheck", *common, "--fault", "drain-stripped", "--expect", str(exp)])
    out = capsys.readouterr().out
    assert code == EXIT_OK, out
    assert "UNEXPECTED FAIL (expected pass)" in out
    lines = out[out.index("against the expectations in"):].splitlines()
    assert lines[1].split()[:2] == ["direct", "ok"] and lines[2].split()[:2] == ["proxy", "ok"]
    assert lines[3].startswith("  drain-stripped") and "ok  1 expected, 1 unexpected fail: 2.6.7/1 unexpected fail" \
        in lines[3], lines
    assert lines[-2] == "gate catches every fault and nothing else: yes"
    report = json.loads((last_run(tmp_path) / "selfcheck.json").read_text())
    assert report["expectations"]["configs"]["drain-stripped"]["gating"] == [
        {"case_id": "2.6.7/1", "kind": "unexpected fail", "verdict": "fail", "expected": ["pass"]}]
    assert label    # the file names the broker by its label; selfcheck judges each proxied run as that broker


def test_the_pytest_plugin_takes_expect_too(tmp_path, drain_broken_url):
    """`pytest --pyargs conformance.suite --broker URL --expect FILE`: pytest's outcome is the gate's."""
    import subprocess
    exp = tmp_path / "e.toml"
    label = drain_broken_url.split("//")[1]
    exp.write_text(f'labels = ["{label}"]\n\n[[expect]]\ncase = "2.6.7/1"\non = "{label}"\nverdict = "fail"\n'
                   'reason = "drain ignored"\n')
    base = [sys.executable, "-m", "pytest", "--pyargs", "conformance.suite", "-p", "no:cacheprovider", "-p",
            "no:randomly", "--broker", drain_broken_url, "--case", "2.6.7/1", "--case", "2.6.8/1",
            "--run-dir", str(tmp_path / "run"), "--junitxml", str(tmp_path / "j.xml"), "--expect", str(exp)]
    proc = subprocess.run(base, capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "1 passed, 1 xfailed" in proc.stdout and "2 results: 2 expected" in proc.stdout
    assert json.loads((tmp_path / "run" / "expectations.json").read_text())["exit"] == 0
    exp.write_text(exp.read_text().replace('"fail"', '"pass"'))
    proc = subprocess.run(base, capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert proc.returncode == 1 and "1 failed, 1 passed" in proc.stdout, proc.stdout
    assert f"UNEXPECTED FAIL 2.6.7/1 on {label}: fail, expected pass" in proc.stdout
    assert JUnitXml.fromfile(str(tmp_path / "j.xml")).failures == 1


def test_report_cells_are_marked_against_the_file():
    """`report --expect FILE`: every cell of the model gets its kind (the renderers show it), the history's own
    flaky cells do not gate."""
    from conformance.expectations import Expectations
    from conformance.report.model import validate_model
    from report_example import example_model
    from conformance.run.gate import Gate, mark_model
    model = example_model()
    cells = {(c["case_id"], c["column"]): c for c in model["cells"]}
    failing = next(c for c in model["cells"] if c["verdict"] == "fail" and c["column"].startswith("rabbitmq-4.0"))
    exp = Expectations.parse(f'labels = ["rabbitmq-*"]\n\n[[expect]]\ncase = "{failing["case_id"]}"\n'
                             f'on = "rabbitmq-4.0"\nverdict = "fail"\nreason = "RMQ-7"\n')
    mark_model(model, Gate(exp))
    validate_model(model)
    assert failing["expectation"] == "expected" and failing["expectation_reason"] == "RMQ-7"
    kinds = {c["expectation"] for c in model["cells"]}
    assert {"expected", "new"} <= kinds                                   # qpid-proton-c is not in labels
    assert all(c["expectation"] == "new" or c["expectation"] == "unexpected error"
               for c in model["cells"] if c["column"].startswith("qpid-proton-c"))
    flaky = cells[("2.7.4/1", "rabbitmq-4.0@4.0.5")]
    if flaky["verdict"] != "pass":
        assert flaky["expectation_flaky"]                                 # the history knows it flaky
    assert model["expectations"]["file"] == "expectations.toml"
    assert sum(v for k, v in model["expectations"]["counts"].items() if k != "flaky") == len(model["cells"])


def test_a_gated_run_that_did_not_finish_is_never_green():
    """Every recorded result as expected, but not every scheduled case recorded (pytest stopped early): 14."""
    from conformance.errors import EXIT_CASE_ERROR
    from conformance.expectations import Expectations
    from conformance.run.engine import Outcome
    j = Expectations().judge({"case_id": "2.6.8/1", "verdict": "pass", "broker": "m"})
    assert Outcome(None, [], True, [j]).exit_code == EXIT_OK
    assert Outcome(None, [], False, [j]).exit_code == EXIT_CASE_ERROR
