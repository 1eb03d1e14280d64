"""The case facts (section, level, requirement_ids) kept once per (run, case) in a batch's cases table, and
histories written before it (the facts in every record row, no cases table): both read alike."""

from __future__ import annotations

import json
import shutil

from conformance.history.analysis import build_model
from conformance.history.records import CASE_FACTS, RECORD_COLUMNS, RECORD_SCHEMA
from conformance.history.store import History
from conformance.history.synthetic import write_matrix_run, write_synthetic_runs


def same(model: dict) -> dict:
    return {k: v for k, v in model.items() if k != "generated_at"}


def to_old_layout(spark, batch) -> None:
    """Rewrite a batch as main's code before the cases table wrote it: every column in every record row."""
    from conformance.history.records import read_records_of
    wide = batch.parent / f".wide-{batch.name}"
    read_records_of(spark, [str(batch / "records")]).write.partitionBy("broker").parquet(str(wide))
    shutil.rmtree(batch / "records")
    shutil.rmtree(batch / "cases")
    wide.rename(batch / "records")


def rows(df) -> list:
    return sorted(tuple(r) for r in df.select(*RECORD_COLUMNS).collect())


def test_a_history_written_before_the_cases_table_reads_and_reports_the_same(spark, tmp_path):
    runs = write_synthetic_runs(tmp_path / "synthetic", 1200, records_per_run=300)
    new, old = History(tmp_path / "new"), History(tmp_path / "old")
    for history in (new, old):
        history.ingest(spark, runs[:2], compact=False)
        history.ingest(spark, runs[2:], compact=False)
    for i, batch in enumerate(old.batch_dirs()):
        assert (batch / "cases").is_dir()
        to_old_layout(spark, batch)
        if i == 0:
            shutil.rmtree(batch / "summary")      # older still: summarized when the report is built
    assert rows(old.records(spark)) == rows(new.records(spark))
    assert same(build_model(spark, old)) == same(build_model(spark, new))
    # a new batch beside the old ones, then all compacted: the old rows keep their facts
    for history in (new, old):
        history.ingest(spark, [write_matrix_run(tmp_path / "nightly", 0)], compact=False)
    assert same(build_model(spark, old)) == same(build_model(spark, new))
    assert old.compact(spark) == 3 and new.compact(spark) == 3
    (merged_old,), (merged_new,) = old.batch_dirs(), new.batch_dirs()
    assert not (merged_old / "cases").exists() and (merged_new / "cases").is_dir()
    assert rows(old.records(spark)) == rows(new.records(spark))
    assert same(build_model(spark, old)) == same(build_model(spark, new))


def test_the_cases_table_holds_what_the_json_reader_reads(spark, tmp_path):
    """The facts are taken from the first record of each case in plain Python: the same text as Spark's JSON
    reader gives for the record columns (lists compact, non-ASCII as is, numbers as JSON)."""
    run_dir = tmp_path / "reports" / "runs" / "r1"
    run_dir.mkdir(parents=True)
    (run_dir / "run.json").write_text(json.dumps({"run_id": "r1", "started_at": "2026-01-01T00:00:00+00:00",
                                                  "brokers": {"b": {"product": "P", "version": "1"}}}))
    facts = [("2.6.7", "MUST", ["2.6.7/a", "2.6.7/ü \"q\""]), (None, "SHOULD", []), ("2.7", None, None),
             (3.5, "MAY", ["x/1"])]
    lines = []
    for i, (section, level, reqs) in enumerate(facts * 3):
        record = {"run_id": "r1", "case_id": f"c{i % len(facts)}", "verdict": "pass", "reason": f"r {i}",
                  "broker": "b", "broker_version": "1", "duration_s": 0.1, "started_at": "2026-01-01T00:00:00+00:00"}
        record.update({k: v for k, v in zip(CASE_FACTS, (section, level, reqs)) if v is not None})
        lines.append(json.dumps(record, ensure_ascii=i % 2 == 0) + "\n")
    (run_dir / "results.jsonl").write_text("".join(lines), "utf-8")
    history = History(tmp_path / "history")
    history.ingest(spark, [run_dir])
    read = spark.read.schema(RECORD_SCHEMA).json(str(run_dir / "results.jsonl"))
    key = ("case_id", "reason", *CASE_FACTS)
    assert sorted(tuple(r) for r in history.records(spark).select(*key).collect()) == \
        sorted(tuple(r) for r in read.select(*key).collect())


def test_a_record_without_a_version_takes_its_runs_from_run_json(spark, tmp_path):
    """A case that ended before its broker's open has no broker_version of its own: the history gives it the
    version run.json holds for its run and broker (one map for all runs), and "unknown" where run.json has none."""
    runs = []
    for n, version in (("r1", "1.0"), ("r2", "2.0")):
        run_dir = tmp_path / "reports" / "runs" / n
        run_dir.mkdir(parents=True)
        (run_dir / "run.json").write_text(json.dumps({"run_id": n, "started_at": "2026-01-01T00:00:00+00:00",
                                                      "brokers": {"b": {"product": "P", "version": version}}}))
        lines = [{"run_id": n, "case_id": "c1", "verdict": "pass", "broker": "b", "broker_version": version},
                 {"run_id": n, "case_id": "c2", "verdict": "error", "broker": "b"},
                 {"run_id": n, "case_id": "c3", "verdict": "error", "broker": "other"}]
        (run_dir / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in lines))
        runs.append(run_dir)
    history = History(tmp_path / "history")
    history.ingest(spark, runs)
    got = {(r["run_id"], r["case_id"]): r["broker_version"]
           for r in history.records(spark).select("run_id", "case_id", "broker_version").collect()}
    assert got == {("r1", "c1"): "1.0", ("r1", "c2"): "1.0", ("r1", "c3"): "unknown",
                   ("r2", "c1"): "2.0", ("r2", "c2"): "2.0", ("r2", "c3"): "unknown"}
