"""`selfcheck`: the report and its files (against the reference broker, in-process), the command's one-line
errors and exit codes, and (marker `broker`) a few faults against rabbitmq-4.0."""

from __future__ import annotations

import json

import pytest

from conformance.cli import main
from conformance.run.selection import select_cases
from conformance.options import RunOptions
from conformance.casekit.executor import run_case

OPTIONS = RunOptions(frame_timeout=2.0, quiet_period=0.25, connect_timeout=2.0)


def test_selfcheck_report_against_the_reference_broker(tmp_path, own_reference_broker):
    from conformance.faultproxy.selfcheck import render_text, run_selfcheck
    broker = own_reference_broker
    options = RunOptions(frame_timeout=2.0, quiet_period=0.25, connect_timeout=2.0, reports_dir=tmp_path)
    report, outcome = run_selfcheck(broker, select_cases(["2.6.8/1", "2.6.7/1"]),
                                    ["drain-stripped", "transfer-beyond-credit"], options=options)

    run = outcome.run
    assert run.read_meta()["kind"] == "selfcheck" and run.read_meta()["scheduled"] == 8 and outcome.complete
    assert list(report["verdicts"]) == ["direct", "proxy", "drain-stripped", "transfer-beyond-credit"]
    assert report["transparent"] and report["ok"]
    assert report["faults"]["drain-stripped"]["flipped"] == {
        "2.6.7/1": {"from": "pass", "to": "fail", "violated": "2.6.7/drain-advance",
                    "reason": report["faults"]["drain-stripped"]["flipped"]["2.6.7/1"]["reason"]}}
    assert set(report["faults"]["transfer-beyond-credit"]["flipped"]) == {"2.6.8/1", "2.6.7/1"}
    on_disk = json.loads((run.path / "selfcheck.json").read_text())
    assert on_disk["verdicts"] == report["verdicts"]
    md = (run.path / "selfcheck.md").read_text()
    assert "| drain-stripped | 2.6.7/drain-advance | MUST | yes | 2.6.7/1 pass->fail |" in md
    records = run.records()
    assert {r["broker"] for r in records} == {"reference", "reference+proxy", "reference+drain-stripped",
                                              "reference+transfer-beyond-credit"}
    assert len(records) == 8
    transcripts = {p.name for p in (run.path / "transcripts").glob("*.json")}
    assert "2.6.7_1__reference.json" in transcripts                       # the direct run keeps its frames
    assert "2.6.7_1__reference_drain-stripped.json" in transcripts         # so does a changed verdict
    assert "2.6.8_1__reference_drain-stripped.json" not in transcripts     # an unchanged one does not
    text = render_text(report)
    assert "faults detected: 2 of 2" in text and "same verdicts as direct" in text


@pytest.mark.parametrize("argv, code, message", [
    (["selfcheck", "--broker", "rabbitmq-4.0", "--fault", "drain-strip"], 2, "did you mean drain-stripped?"),
    (["selfcheck", "--broker", "rabbitmq-4.0", "-n", "many"], 2, "-n takes a number"),
    (["selfcheck", "--broker", "rabbitmq-4.0", "-k", "no-such-words"], 2, "matches no case"),
    (["selfcheck", "--broker", "rabbitmq-4.0", "9.9.9"], 3, "unknown case"),
    (["selfcheck", "--broker", "no-such-broker"], 2, "unknown broker"),
    (["selfcheck", "--broker", "amqps://u:p@127.0.0.1:5671"], 2, "cannot sit inside TLS"),
    (["selfcheck"], 2, "--broker"),
])
def test_bad_input_is_one_line_and_an_exit_code(argv, code, message, capsys):
    assert main(argv) == code
    err = capsys.readouterr().err
    assert err.startswith("error: ") and message in err and err.count("\n") == 1
    assert "p@" not in err


@pytest.mark.broker
def test_faults_flip_cases_on_rabbitmq_40():
    from conformance import brokers
    from conformance.cases import load_all
    from conformance.faultproxy.handle import ProxiedBroker
    cases = load_all()
    handle = brokers.start(brokers.resolve("rabbitmq-4.0"))
    try:
        for fault, case_id, requirement in (("cumulative-credit", "2.6.7/3", "2.6.7/credit-formula"),
                                             ("drain-stripped", "2.6.7/1", "2.6.7/drain-advance"),
                                             ("transfer-beyond-credit", "2.6.8/1", "2.6.7/no-send-without-credit")):
            for f, verdict in ((None, "pass"), (fault, "fail")):
                proxied = ProxiedBroker(handle, f)
                try:
                    result = run_case(cases[case_id], proxied, RunOptions())
                finally:
                    proxied.stop_proxy()
                assert result.verdict.value == verdict, f"{case_id} via {f}: {result.reason}"
                if f is not None:
                    assert result.violated == requirement
    finally:
        handle.managed.stop()
