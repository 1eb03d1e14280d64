"""A run never passes for a smaller one: a finished run whose results.jsonl holds fewer records than it
scheduled is refused by `report` (exit 12, one line, nothing ingested, before Spark starts); a run that never
finished is ingested and shown as unfinished (report model flag, a marker in report.html and report.md)."""

from __future__ import annotations

import json
import shutil

import pytest

from conformance.cli import main
from conformance.errors import EXIT_BAD_RESULTS


def copy_run(reference_reports, tmp_path, name="run-1"):
    run = tmp_path / "reports" / "runs" / name
    shutil.copytree(reference_reports / "runs" / name, run)
    return run


def test_a_finished_run_with_records_missing_is_incomplete(reference_reports, tmp_path, capsys):
    run = copy_run(reference_reports, tmp_path)
    meta = json.loads((run / "run.json").read_text())
    assert meta["finished_at"] and meta["scheduled"] == 8
    results = run / "results.jsonl"
    results.write_text("".join(results.read_text().splitlines(keepends=True)[:3]))   # cut at a line boundary
    code = main(["report", "--reports-dir", str(tmp_path / "reports")])
    out, err = capsys.readouterr()
    assert code == EXIT_BAD_RESULTS
    assert err.startswith("error: ") and err.count("\n") == 1
    assert str(results) in err and "3 of the 8" in err and "nothing was ingested" in err
    assert "Spark" not in out, "refused before Spark starts"
    assert not (tmp_path / "reports" / "history").exists()


def test_a_run_that_never_finished_is_shown_as_unfinished(reference_reports, tmp_path, capsys):
    run = copy_run(reference_reports, tmp_path, "run-2")
    meta = json.loads((run / "run.json").read_text())
    meta["finished_at"] = None                                   # as a killed run leaves it
    (run / "run.json").write_text(json.dumps(meta))
    results = run / "results.jsonl"
    results.write_text("".join(results.read_text().splitlines(keepends=True)[:5]))
    copy_run(reference_reports, tmp_path, "run-1")
    out_dir = tmp_path / "out"
    assert main(["report", "--reports-dir", str(tmp_path / "reports"), "--out", str(out_dir)]) == 0, \
        capsys.readouterr()
    model = json.loads((out_dir / "report.json").read_text())
    [unfinished] = model["unfinished_runs"]
    assert unfinished["run_id"] == "run-2" and unfinished["records"] == 5 and unfinished["scheduled"] == 8
    assert {c["run_id"] for c in model["cells"] if c["unfinished"]} == {"run-2"}
    assert not any(c["unfinished"] for c in model["cells"] if c["run_id"] == "run-1")
    assert "UNFINISHED run `run-2`" in (out_dir / "report.md").read_text()
    html = (out_dir / "report.html").read_text()
    assert 'id="unfinished"' in html and "run <code>run-2</code>" in html and "5 of 8 cases recorded" in html


def test_a_finished_run_with_cases_in_error_is_shown_as_broken(reference_reports, tmp_path, capsys):
    """A run whose broker died finishes, but some of its cases ended in error: the report says it broke."""
    run = copy_run(reference_reports, tmp_path, "run-1")
    results = run / "results.jsonl"
    records = [json.loads(line) for line in results.read_text().splitlines()]
    for record in records[-3:]:
        record.update(verdict="error", reason="the broker died during the case: its process is gone; no verdict")
    results.write_text("".join(json.dumps(r) + "\n" for r in records))
    out_dir = tmp_path / "out"
    assert main(["report", "--reports-dir", str(tmp_path / "reports"), "--out", str(out_dir)]) == 0, \
        capsys.readouterr()
    model = json.loads((out_dir / "report.json").read_text())
    [broken] = model["unfinished_runs"]
    assert broken["run_id"] == "run-1" and broken["broken"] and "3 of 8 cases ended in error" in broken["reason"]
    assert not any(c["unfinished"] for c in model["cells"])
    assert "BROKEN run `run-1`" in (out_dir / "report.md").read_text()
    html = (out_dir / "report.html").read_text()
    assert "Unfinished or broken runs" in html and "broken run <code>run-1</code>" in html


def test_the_ingest_itself_refuses_a_cut_run_from_sparks_own_count(spark, reference_reports, tmp_path):
    """History.ingest (any caller, not only `report`, which checks before Spark starts) refuses a finished run
    whose results.jsonl was cut: the records Spark counted per run are fewer than it scheduled. Nothing lands."""
    from conformance.errors import BadResults
    from conformance.history.store import History

    run = copy_run(reference_reports, tmp_path)
    good = copy_run(reference_reports, tmp_path, "run-2")
    results = run / "results.jsonl"
    results.write_text("".join(results.read_text().splitlines(keepends=True)[:3]))
    history = History(tmp_path / "history")
    with pytest.raises(BadResults) as refused:
        history.ingest(spark, [run, good])
    message = str(refused.value)
    assert str(results) in message and "3 of the 8" in message and "nothing was ingested" in message
    assert history.batch_dirs() == [] and not list(history.root.glob(".staging-*"))
    assert history.ingest(spark, [good]).records == 8      # the complete run alone still goes in
