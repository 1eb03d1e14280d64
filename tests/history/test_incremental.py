"""The history's summaries and compaction: the report built from the batches' summary tables equals the one
computed from every record; many small ingests leave a bounded number of batches; a compaction killed with
SIGKILL at a random point, then run again, loses and duplicates nothing."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

from conformance.history import store
from conformance.history.analysis import build_model
from conformance.history.store import History
from conformance.history.synthetic import write_matrix_run, write_synthetic_runs

ROOT = Path(__file__).resolve().parents[2]


def same(model: dict) -> dict:
    return {k: v for k, v in model.items() if k != "generated_at"}


def test_the_report_from_summaries_equals_the_full_computation(spark, reference_reports, tmp_path):
    history = History(tmp_path / "history")
    runs = write_synthetic_runs(tmp_path / "synthetic", 3000, records_per_run=300)
    history.ingest(spark, runs[:4], compact=False)
    history.ingest(spark, runs[4:] + [reference_reports], compact=False)
    for i in range(2):       # later runs of the whole matrix: they change the latest verdicts
        history.ingest(spark, [write_matrix_run(tmp_path / "nightly", i)], compact=False)
    assert len(history.batch_dirs()) == 4
    model = build_model(spark, history)
    assert same(model) == same(build_model(spark, history, full=True))
    assert model["history"]["records"] == 3000 + 2 * 510 + sum(
        len(p.read_text().splitlines()) for p in reference_reports.glob("runs/*/results.jsonl"))
    assert {c["run_id"] for c in model["cells"] if c["column"] == "synthetic-d@3.0"} == {"matrix-0000001"}
    assert history.compact(spark) == 4 and len(history.batch_dirs()) == 1
    assert same(build_model(spark, history)) == same(model)
    assert history.compact(spark) == 0                 # idempotent


def test_many_small_ingests_are_compacted(spark, tmp_path, monkeypatch):
    monkeypatch.setattr(store, "COMPACT_FANIN", 3)
    history = History(tmp_path / "history")
    for i in range(7):
        history.ingest(spark, [write_matrix_run(tmp_path / "nightly", i)])
    # 510 records a batch (tier 3): three of them become one of 1530 (tier 4), twice; the seventh waits
    assert sorted(store._batch_records(b) for b in history.batch_dirs()) == [510, 1530, 1530]
    assert history.records(spark).count() == 7 * 510
    assert len(history.runs()) == 7 and not list(tmp_path.glob("history/.trash-*"))
    assert same(build_model(spark, history)) == same(build_model(spark, history, full=True))


KILLED_COMPACTION = """
import sys
from pathlib import Path
from conformance.history.spark import session
from conformance.history.store import History
spark = session()
print("ready", flush=True)
History(Path(sys.argv[1])).compact(spark)
print("done", flush=True)
"""


def test_a_compaction_killed_at_a_random_point_loses_nothing(spark, tmp_path):
    history = History(tmp_path / "history")
    for i in range(4):
        history.ingest(spark, [write_matrix_run(tmp_path / "nightly", i)], compact=False)
    before = same(build_model(spark, history))
    seed = random.randrange(1 << 30)
    delay = random.Random(seed).uniform(0.0, 4.0)
    proc = subprocess.Popen([sys.executable, "-c", KILLED_COMPACTION, str(history.root)], cwd=ROOT,
                            env={**os.environ, "PYTHONPATH": str(ROOT)}, stdout=subprocess.PIPE, text=True,
                            start_new_session=True)
    try:
        assert proc.stdout.readline().strip() == "ready"
        time.sleep(delay)      # bounded-wait-ok: the random point at which the compaction is killed
    finally:
        os.killpg(proc.pid, signal.SIGKILL)        # the compaction and its JVM, mid-write
        proc.wait(timeout=30)
    # whatever it left, the history reads whole: every record once
    assert history.records(spark).count() == 4 * 510, f"seed {seed}, killed after {delay:.2f} s"
    history.compact(spark)                           # run again: finishes (or finds nothing left to do)
    assert len(history.batch_dirs()) == 1
    assert history.records(spark).count() == 4 * 510
    assert same(build_model(spark, history)) == before
    assert not list(history.root.glob(".staging-*")) and not list(history.root.glob(".trash-*"))


def test_the_columns_table_is_what_spark_computes_from_the_records(spark, reference_reports, tmp_path):
    """The columns table (runs, last run, product of each broker@version) is completed in the driver from the
    summary's groupings: it must equal Spark's own aggregation of every record."""
    from pyspark.sql import functions as F

    from conformance.history.summary import merge

    history = History(tmp_path / "history")
    history.ingest(spark, write_synthetic_runs(tmp_path / "synthetic", 600, records_per_run=200), compact=False)
    history.ingest(spark, [reference_reports, write_matrix_run(tmp_path / "nightly", 0)], compact=False)
    expected = (history.records(spark).groupBy("broker", "broker_version")
                .agg(F.countDistinct("run_id").alias("runs"), F.max(F.struct("started_at", "run_id")).alias("last"),
                     F.max("broker_product").alias("product")))
    got = merge(history.summary(spark))["columns"].select("broker", "broker_version", "runs", "last", "product")
    assert sorted(map(tuple, got.collect())) == sorted(map(tuple, expected.collect()))
    assert expected.count() > 3
