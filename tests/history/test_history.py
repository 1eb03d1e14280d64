"""The history on Spark: ingest (atomic, no duplicates, bad input), the report model against a plain-Python
oracle, the `report` and `diff` commands, and their one-line errors."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections import Counter, defaultdict
from pathlib import Path

import pytest

from conformance.cli import main
from conformance.errors import BadResults
from conformance.history.analysis import build_model
from conformance.history.store import History
from conformance.history.synthetic import write_synthetic_runs
from conformance.report import validate_model


@pytest.fixture
def reports(reference_reports, tmp_path):
    dest = tmp_path / "reports"
    shutil.copytree(reference_reports, dest)
    return dest


def all_records(reports: Path) -> list[dict]:
    out = []
    for f in sorted(reports.glob("runs/*/results.jsonl")):
        out += [json.loads(line) for line in f.read_text().splitlines() if line.strip()]
    return out


def test_ingest_adds_each_run_once(spark, reports, tmp_path):
    history = History(tmp_path / "history")
    first = history.ingest(spark, [reports])
    assert sorted(first.added_runs) == ["run-1", "run-2"] and first.records == len(all_records(reports))
    again = history.ingest(spark, [reports / "runs" / "run-1", reports])
    assert again.added_runs == [] and sorted(again.skipped_runs) == ["run-1", "run-1", "run-2"]
    assert history.records(spark).count() == len(all_records(reports))
    assert len(history.batch_dirs()) == 1
    # partitioned by broker inside the batch
    assert {p.name for p in (history.batch_dirs()[0] / "records").iterdir() if p.is_dir()} == \
        {"broker=ref-a", "broker=ref-b"}


def test_a_cut_off_line_stops_the_ingest_and_writes_nothing(spark, reports, tmp_path):
    results = reports / "runs" / "run-2" / "results.jsonl"
    lines = results.read_text().splitlines(keepends=True)
    results.write_text("".join(lines[:3]) + lines[3][: len(lines[3]) // 2])   # an interrupted write
    history = History(tmp_path / "history")
    with pytest.raises(BadResults, match=r"run-2/results.jsonl:4 is cut off or corrupted"):
        history.ingest(spark, [reports])
    assert not (tmp_path / "history" / "batches").exists()
    assert list((tmp_path / "history").glob(".staging-*")) == []


def test_a_record_without_verdict_is_named(spark, reports, tmp_path):
    results = reports / "runs" / "run-1" / "results.jsonl"
    records = [json.loads(line) for line in results.read_text().splitlines()]
    records[1]["verdict"] = "maybe"
    results.write_text("".join(json.dumps(r) + "\n" for r in records))
    with pytest.raises(BadResults, match=r"run-1/results.jsonl:2 has an unknown verdict 'maybe'"):
        History(tmp_path / "history").ingest(spark, [reports])


@pytest.mark.parametrize("damage, message", [
    (lambda run: (run / "run.json").unlink(), "is not a run directory"),
    (lambda run: (run / "run.json").write_text('{"run_id": "x", '), "run.json is corrupted"),
    (lambda run: (run / "results.jsonl").unlink(), "has no results.jsonl"),
])
def test_damaged_run_directories(spark, reports, tmp_path, damage, message):
    run = reports / "runs" / "run-1"
    damage(run)
    with pytest.raises(BadResults, match=message):
        History(tmp_path / "history").ingest(spark, [run])


def test_model_of_reference_runs(spark, reports, tmp_path):
    history = History(tmp_path / "history")
    history.ingest(spark, [reports])
    model = build_model(spark, history)
    validate_model(model)
    assert [c["key"] for c in model["columns"]] == ["ref-a@1.0", "ref-a@1.1", "ref-b@2.0"]
    cell = {(c["case_id"], c["column"]): c for c in model["cells"]}
    assert cell["2.6.8/2", "ref-a@1.0"]["verdict"] == "pass"
    assert cell["2.6.8/2", "ref-a@1.1"]["verdict"] == "fail"
    assert cell["2.6.7/3", "ref-b@2.0"]["verdict"] == "fail"
    assert cell["2.6.7/3", "ref-b@2.0"]["verdict_counts"] == {"fail": 2}
    assert "<-" in cell["2.6.8/2", "ref-a@1.1"]["ladder"] or "->" in cell["2.6.8/2", "ref-a@1.1"]["ladder"]
    findings = cell["2.7.4/1", "ref-b@2.0"]["findings"]       # every finding kept, the deciding one first
    assert len(findings) >= 2 and findings[0].startswith(cell["2.7.4/1", "ref-b@2.0"]["violated"] + " (MUST, fail)")
    assert cell["2.6.7/3", "ref-a@1.0"]["findings"] == []
    regressions = [c for c in model["changes"] if c["kind"] == "regression"]
    assert {(c["case_id"], c["from_column"], c["to_column"]) for c in regressions} >= \
        {("2.6.8/2", "ref-a@1.0", "ref-a@1.1")}
    req = {(r["requirement_id"], r["column"]): r["verdict"] for r in model["requirement_cells"]}
    assert req["2.6.7/drain-advance", "ref-a@1.1"] == "fail"
    overall = {s["column"]: s for s in model["scores"]["overall"]}
    assert overall["ref-a@1.0"]["score"] > overall["ref-a@1.1"]["score"]


def test_model_aggregates_match_a_plain_python_oracle(spark, tmp_path):
    """Counts, latest verdicts, flaky cells and durations computed by Spark equal a direct computation."""
    runs = tmp_path / "synthetic"
    write_synthetic_runs(runs, 6000, records_per_run=300)
    history = History(tmp_path / "history")
    history.ingest(spark, [runs])
    model = build_model(spark, history)
    validate_model(model)
    counts: dict[tuple, Counter] = defaultdict(Counter)
    latest: dict[tuple, tuple] = {}
    durations: dict[tuple, list] = defaultdict(list)
    for r in all_records(runs):
        key = (r["case_id"], f"{r['broker']}@{r['broker_version']}")
        counts[key][r["verdict"]] += 1
        durations[key].append(r["duration_s"])
        if key not in latest or r["started_at"] >= latest[key][0]:
            latest[key] = (r["started_at"], r["verdict"])
    cells = {(c["case_id"], c["column"]): c for c in model["cells"]}
    assert set(cells) == set(counts)
    for key, counter in counts.items():
        assert cells[key]["verdict_counts"] == dict(counter)
        assert cells[key]["flaky"] == (len(counter) > 1)
    flaky = {(f["case_id"], f["column"]) for f in model["flaky"]}
    assert flaky == {k for k, c in counts.items() if len(c) > 1} and flaky
    assert model["history"]["records"] == 6000
    d = {(x["case_id"], x["column"]): x for x in model["durations"]}
    for key, values in durations.items():
        assert d[key]["min_s"] == pytest.approx(min(values)) and d[key]["max_s"] == pytest.approx(max(values))
        assert d[key]["mean_s"] == pytest.approx(sum(values) / len(values), abs=1e-3)


def test_report_command_writes_three_files(spark, reports, tmp_path, capsys, monkeypatch):
    summary = tmp_path / "step-summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    assert main(["report", "--reports-dir", str(reports)]) == 0
    out = capsys.readouterr().out
    assert "ingesting 2 run(s)" in out and "report:" in out
    html = (reports / "report" / "report.html").read_text()
    assert 'id="broker-matrix"' in html and 'data-column="ref-a@1.1"' in html and "ref-a 1.1" in html
    assert "| ref-a 1.1 |" in (reports / "report" / "report.md").read_text()
    assert list((reports / "report" / "report.files" / "case").glob("*.js"))          # the side pages beside it
    validate_model(json.loads((reports / "report" / "report.json").read_text()))
    assert "## " in summary.read_text()
    # a second report ingests nothing new: no batch written, no run counted twice
    batches = sorted(p.name for p in (reports / "history" / "batches").iterdir())
    records = json.loads((reports / "report" / "report.json").read_text())["history"]
    assert len(batches) == 1
    assert main(["report", "--reports-dir", str(reports)]) == 0
    out = capsys.readouterr().out
    assert "ingesting" not in out and "added" not in out, out
    assert sorted(p.name for p in (reports / "history" / "batches").iterdir()) == batches
    assert json.loads((reports / "report" / "report.json").read_text())["history"] == records


def test_report_on_a_corrupted_run_is_one_line_and_exit_12(spark, reports, capsys):
    results = reports / "runs" / "run-1" / "results.jsonl"
    results.write_text(results.read_text() + '{"case_id": "2.6.8/1", "verd')
    assert main(["report", "--reports-dir", str(reports)]) == 12
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: ") and "run-1/results.jsonl:" in err[0]
    assert not (reports / "history" / "batches").exists()
    assert not (reports / "report").exists()


def test_report_on_a_missing_directory(capsys, tmp_path):
    assert main(["report", str(tmp_path / "nowhere"), "--reports-dir", str(tmp_path)]) == 12
    assert "does not exist" in capsys.readouterr().err


def _cli(*args, env=None, timeout=120):
    return subprocess.run([sys.executable, "-m", "conformance.cli", *args], capture_output=True, text=True,
                          timeout=timeout, env={**os.environ, **(env or {})})


def test_spark_without_java_is_exit_13(reports, tmp_path):
    python_dir = str(Path(sys.executable).parent)
    done = _cli("report", "--reports-dir", str(reports), env={"JAVA_HOME": str(tmp_path / "no-java"),
                                                              "PATH": python_dir})
    assert done.returncode == 13, done.stderr
    assert done.stderr.strip().count("\n") == 0 and "Java" in done.stderr and "Traceback" not in done.stderr
    assert not (reports / "history").exists()


def test_unreachable_spark_master_is_exit_13(reports):
    with __import__("socket").socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]          # closed again: nothing listens there
    done = _cli("report", "--reports-dir", str(reports), "--spark-master", f"spark://127.0.0.1:{port}", timeout=60)
    assert done.returncode == 13, done.stderr
    assert f"cannot reach the Spark master at 127.0.0.1:{port}" in done.stderr
    assert "Traceback" not in done.stderr


def test_diff_of_two_runs(reports, capsys):
    runs = reports / "runs"
    assert main(["diff", str(runs / "run-1"), str(runs / "run-2")]) == 1
    out = capsys.readouterr().out
    assert "regressions (" in out and "2.6.8/2" in out and "REGRESSED" in out
    assert main(["diff", "run-2", "run-1", "--reports-dir", str(reports)]) == 0     # run ids work too
    assert "fixes (1)" in capsys.readouterr().out


def test_diff_of_two_versions_from_the_history(spark, reports, capsys):
    assert main(["report", "--reports-dir", str(reports)]) == 0
    capsys.readouterr()
    assert main(["diff", "ref-a@1.0", "ref-a@1.1", "--reports-dir", str(reports), "--json"]) == 1
    out = capsys.readouterr().out
    result = json.loads(out[out.index("{"):])
    assert result["regressed"] and {(c["case_id"], c["before"], c["after"]) for c in result["changes"]} == \
        {("2.6.8/2", "pass", "fail")}
    assert main(["diff", "ref-a@1.0", "ref-a@1.0", "--reports-dir", str(reports)]) == 0


def test_diff_bad_input(reports, capsys):
    assert main(["diff", "no-such-run", "run-1", "--reports-dir", str(reports)]) == 2
    assert "neither a run directory" in capsys.readouterr().err
    assert main(["diff", "nobroker@9.9", "run-1", "--reports-dir", str(reports)]) == 12


def test_selfcheck_runs_feed_the_sensitivity_matrix_not_the_compliance_matrix(spark, reports):
    run = reports / "runs" / "selfcheck-1"
    run.mkdir()
    (run / "run.json").write_text(json.dumps({"run_id": "selfcheck-1", "kind": "selfcheck",
                                              "started_at": "2026-11-23T10:00:00+00:00", "brokers": {}}))
    (run / "results.jsonl").write_text(json.dumps({"run_id": "selfcheck-1", "case_id": "2.6.8/2", "verdict": "fail",
                                                   "broker": "ref-a+drain-stripped", "broker_version": "1.0",
                                                   "started_at": "2026-11-23T10:00:01+00:00"}) + "\n")
    (run / "selfcheck.json").write_text(json.dumps({
        "broker": "ref-a", "version": "1.0", "ok": True, "transparent": True, "cases": ["2.6.8/2", "2.6.8/1"],
        "faults": {"drain-stripped": {"requirement": "2.6.7/drain-advance", "level": "MUST", "detected": True,
                                      "summary": "drain removed", "flipped": {"2.6.8/2": {
                                          "from": "pass", "to": "fail", "violated": "2.6.7/drain-advance",
                                          "reason": "no drained flow"}}}}}))
    assert main(["report", "--reports-dir", str(reports)]) == 0
    model = json.loads((reports / "report" / "report.json").read_text())
    assert [c["key"] for c in model["columns"]] == ["ref-a@1.0", "ref-a@1.1", "ref-b@2.0"]
    (check,) = model["selfcheck"]
    assert check["column"] == "ref-a@1.0" and check["faults"][0]["flipped"][0]["case_id"] == "2.6.8/2"
    html = (reports / "report" / "report.html").read_text()
    assert 'id="selfcheck"' in html and "drain-stripped" in html
    assert "Selfcheck on ref-a 1.0: 1 of 1 faults caught" in (reports / "report" / "report.md").read_text()


@pytest.mark.parametrize("verdict, violated, requirement, counts", [
    ("fail", "2.6.7/credit-formula", "2.6.7/credit-formula", True),
    ("fail", "2.6.7/credit-formula", "2.6.7/no-send-without-credit", False),   # stopped before judging it
    ("non-strict", "2.7.4/echo", "2.6.7/credit-formula", False),
    ("fail", None, "2.6.7/credit-formula", True),                            # no violated id: counts for all
    ("pass", None, "2.6.7/credit-formula", True),
    ("informational", None, "2.6.7/credit-formula", True),
    ("error", None, "2.6.7/credit-formula", True),
])
def test_a_case_verdict_speaks_for_the_requirement_it_names(verdict, violated, requirement, counts):
    from conformance.history.analysis import requirement_verdict_counts
    assert requirement_verdict_counts(verdict, violated, requirement) is counts


@pytest.mark.broker
def test_run_then_report_with_allure(spark, tmp_path, capsys):
    """The whole path on a real broker: `run` writes a run directory with allure-results, `report --allure`
    ingests it and builds the Allure 3 HTML report next to report.html."""
    from conformance.history.allure import allure_command
    if allure_command() is None:
        pytest.fail("Allure 3 is not installed; ./dev setup all installs it")
    reports = tmp_path / "reports"
    code = main(["run", "2.6.8/1", "2.6.7/3", "--broker", "qpid-proton-c", "-n", "0", "--reports-dir", str(reports)])
    assert code in (0, 1)
    assert main(["report", "--reports-dir", str(reports), "--allure"]) == 0
    out = capsys.readouterr().out
    assert "Allure report:" in out
    assert (reports / "report" / "allure" / "index.html").exists()
    model = json.loads((reports / "report" / "report.json").read_text())
    assert [c["broker"] for c in model["columns"]] == ["qpid-proton-c"]
    assert {c["case_id"] for c in model["cells"]} == {"2.6.8/1", "2.6.7/3"}
    assert all(c["has_ladder"] and c["ladder"] is None for c in model["cells"])       # the transcripts are beside it
    for cell in model["cells"]:
        assert list((reports / "report" / "report.files" / "ladder" / cell["case_id"].replace("/", "-")).glob("*.js"))


def test_runs_ingested_at_different_times_are_read_together(spark, reports, tmp_path):
    history = History(tmp_path / "history")
    history.ingest(spark, [reports / "runs" / "run-1"])
    history.ingest(spark, [reports / "runs" / "run-2"])
    assert len(history.batch_dirs()) == 2
    assert history.records(spark).count() == len(all_records(reports))
    model = build_model(spark, history)
    assert {c["key"] for c in model["columns"]} == {"ref-a@1.0", "ref-a@1.1", "ref-b@2.0"}
    assert model["history"]["runs"] == 2


def test_a_spark_failure_is_one_line(reports, capsys, monkeypatch, spark):
    from pyspark.errors import PySparkException
    import conformance.history.analysis as analysis

    def broken(*_args, **_kwargs):
        raise PySparkException("[SOMETHING] the executor went away\nlong Java stack")
    monkeypatch.setattr(analysis, "build_model", broken)
    assert main(["report", "--reports-dir", str(reports)]) == 13
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [err[0]] and "the Spark job failed while analysing the history ([SOMETHING] the executor" in err[0]


def test_the_driver_lists_many_run_files_itself(spark, tmp_path):
    """Reading the results.jsonl of many runs (here 200) starts no Spark job to list them: Spark's default
    (a job of one task per path above 32 paths) cost 4.5-8.8 s for 2,000 runs on two cores."""
    from conformance.history.records import RECORD_SCHEMA

    files = []
    for i in range(200):
        path = tmp_path / f"run-{i}" / "results.jsonl"
        path.parent.mkdir()
        path.write_text("{}\n")
        files.append(str(path))
    tracker = spark.sparkContext.statusTracker()
    spark.sparkContext.setJobGroup("listing-test", "listing only")
    try:
        spark.read.schema(RECORD_SCHEMA).json(files)
    finally:
        spark.sparkContext.setLocalProperty("spark.jobGroup.id", None)
    assert tracker.getJobIdsForGroup("listing-test") == [], "Spark listed the files in a job"


def test_many_small_runs_are_read_in_few_tasks(spark, tmp_path):
    """The results.jsonl of many nightly runs (small files: a few hundred KB) are packed into few read tasks, so
    an ingest writes a few Parquet files per broker, not one per broker for every ~30 runs (Spark's default
    open cost of 4 MB per file)."""
    from conformance.history.records import RECORD_SCHEMA

    line = '{"case_id": "c", "broker": "b", "verdict": "pass", "reason": "' + "x" * 400 + '"}\n'
    files = []
    for i in range(300):
        path = tmp_path / f"run-{i}" / "results.jsonl"
        path.parent.mkdir()
        path.write_text(line * 100)           # ~45 KB: a small nightly run's file
        files.append(str(path))
    tasks = spark.read.schema(RECORD_SCHEMA).json(files).rdd.getNumPartitions()
    assert tasks <= 3, f"{len(files)} small files read in {tasks} tasks (Spark's default packs them into 10)"


def test_a_commit_bisects_builds_are_not_releases_of_the_matrix():
    from conformance.history.analysis import commit_builds
    columns = {"artemis-2.35.0@2.35.0": {"last_run_id": "nightly"},
               "artemis-2.35.0-87-g1361e29739@2.36.0-SNAPSHOT": {"last_run_id": "step"},
               "artemis-2.39.0@2.39.0": {"last_run_id": "release-bisect"}}
    runs = [{"run_id": "nightly"}, {"run_id": "step", "kind": "bisect", "commit": "1361e29739"},
            {"run_id": "release-bisect", "kind": "bisect"}]
    assert commit_builds(columns, runs) == {"artemis-2.35.0-87-g1361e29739@2.36.0-SNAPSHOT"}
