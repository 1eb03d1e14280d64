"""The records table of a history batch: its schema, reading it back, and writing it from results.jsonl.

`write_records` turns the results.jsonl of some runs into a batch's Parquet records (partitioned by broker)
in one Spark pass, the JSON read with the schema given; `write_summary` derives the batch's summary tables
(conformance.history.summary) from the written Parquet. A line that does not parse or is not a case record
stops the ingest with a BadResults error naming it (`check_lines`). conformance.history.store owns the
batches these are written into.
"""

from __future__ import annotations

import functools
import json
import os
import shutil
from pathlib import Path

from ..errors import BadResults
from ..verdict import VERDICTS   # the vocabulary is defined once, in conformance.verdict
from . import summary as _summary


# What the history keeps of a record (titles come from the catalogue; run-level facts stay in runs.json).
# requirement_ids is kept as the record's JSON text (e.g. '["2.6.7/credit-formula"]'): one dictionary-encoded
# string per record instead of a repeated Parquet field, a third cheaper to write; readers json-decode it.
# findings likewise: the record's list of findings (deciding first) as JSON text; null in batches ingested
# before findings were recorded. observations: the record's observations (a JSON object, e.g. "producer": the
# producer-flow-control facts) as JSON text; null in batches ingested before it was kept.
RECORD_SCHEMA = (
    "run_id STRING, case_id STRING, section STRING, level STRING, requirement_ids STRING, "
    "verdict STRING, reason STRING, violated STRING, broker STRING, broker_product STRING, "
    "broker_version STRING, duration_s DOUBLE, started_at STRING, findings STRING, observations STRING"
)
# Columns of the records table, in order (`broker` is the partition column and comes last when read back).
RECORD_COLUMNS = ("run_id", "case_id", "section", "level", "requirement_ids", "verdict", "reason", "violated",
                  "broker_product", "broker_version", "duration_s", "started_at", "findings", "broker",
                  "observations")
# The records table as stored (Parquet files under broker=<name>/ directories: `broker` is the partition column).
STORED_SCHEMA = ", ".join(f for f in RECORD_SCHEMA.split(", ") if not f.startswith("broker ")) + ", broker STRING"


def write_records(spark, metas: dict[str, tuple[Path, dict]], staging: Path) -> dict[str, tuple[int, int]]:
    """Write the records of these runs into `staging`/records and their summary into `staging`/summary;
    return (records, errors) per run_id. Spark reads the JSON once (schema given) and the written
    Parquet once more (the summary: narrow columns, one aggregation)."""
    from pyspark.sql import functions as F

    files = [str((run_dir / "results.jsonl").resolve()) for run_dir, _ in metas.values()]
    parsed = spark.read.schema(RECORD_SCHEMA).json(files)
    run_id = F.col("run_id")
    if not all(_first_record_has_run_id(run_dir) for run_dir, _ in metas.values()):
        # results written before records carried their run_id: take it from the directory name
        by_dir = F.create_map(*[F.lit(x) for run_id_, (run_dir, _) in metas.items()
                                for x in (run_dir.resolve().name, run_id_)])
        run_id = F.coalesce(run_id, F.element_at(
            by_dir, F.element_at(F.split(F.col("_metadata.file_path"), "/"), -2)))
    versions = {f"{rid}\x00{name}": (info or {}).get("version")
                for rid, (_, meta) in metas.items() for name, info in (meta.get("brokers") or {}).items()}
    versions = {k: v for k, v in versions.items() if v}
    version = F.col("broker_version")
    if versions:   # a record of a case that broke before the broker's open arrived has no version of its own
        version_map = F.create_map(*[F.lit(x) for kv in versions.items() for x in kv])
        version = F.coalesce(version, F.element_at(version_map, F.concat_ws("\x00", "run_id", "broker")))
    # a line that does not parse comes back as all nulls (PERMISSIVE mode): it fails this check
    ok = F.col("case_id").isNotNull() & F.col("broker").isNotNull() & F.col("verdict").isin(*VERDICTS)
    rows = (parsed.withColumn("run_id", run_id)
            .withColumn("broker_version", F.coalesce(version, F.lit("unknown")))
            .withColumn("broker", F.coalesce("broker", F.lit("unknown")))
            .withColumn("line_ok", F.coalesce(ok, F.lit(False)))
            .select("line_ok", *RECORD_COLUMNS))
    rows.write.partitionBy("line_ok", "broker").parquet(str(staging / "parts"))
    bad = staging / "parts" / "line_ok=false"
    if bad.exists():
        for run_dir, _ in metas.values():     # find the first bad line, in plain Python, for the message
            check_lines(run_dir / "results.jsonl")
        raise BadResults("a results.jsonl line has a missing case_id, broker or unknown verdict; fix or remove "
                         "that run directory")
    good = staging / "parts" / "line_ok=true"
    if good.exists():
        os.replace(good, staging / "records")
    shutil.rmtree(staging / "parts", ignore_errors=True)
    if not (staging / "records").exists():
        return {}
    return write_summary(spark, staging)


def read_records_of(spark, paths: list[str]):
    """The records tables at `paths` as one DataFrame (RECORD_COLUMNS): one read per table (each is its own
    partitioned table), then one union; the schema is given, so a column a batch lacks (findings, observations
    written before they were recorded) reads as null."""
    frames = [spark.read.schema(STORED_SCHEMA).parquet(path).select(*RECORD_COLUMNS) for path in paths]
    return functools.reduce(lambda a, b: a.unionByName(b), frames)


def write_summary(spark, batch: Path) -> dict[str, tuple[int, int]]:
    """Summarize the records of `batch` into batch/summary/ (marked complete last); (records, errors) per run."""
    tables = _summary.summarize(read_records_of(spark, [str(batch / "records")]))
    shutil.rmtree(batch / "summary", ignore_errors=True)
    _summary.write(tables, batch / "summary")
    (batch / "summary" / ".complete").write_text("ok")
    return {r["run_id"]: (r["records"], r["errors"]) for r in tables["runs"].collect()}


def _first_record_has_run_id(run_dir: Path) -> bool:
    with open(run_dir / "results.jsonl", encoding="utf-8", errors="replace") as fh:
        for line in fh:
            if line.strip():
                return '"run_id"' in line
    return True


def check_lines(path: Path) -> None:
    """Raise BadResults naming the first line of `path` that is not a complete case record."""
    with open(path, encoding="utf-8", errors="replace") as fh:
        for number, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError:
                raise BadResults(f"{path}:{number} is cut off or corrupted; delete that line (an interrupted "
                                 "write) or re-run the case") from None
            if not isinstance(record, dict) or not record.get("case_id") or not record.get("broker") \
                    or record.get("verdict") not in VERDICTS:
                raise BadResults(f"{path}:{number} is not a case record (needs case_id, broker and a known "
                                 "verdict); delete that line or re-run the case") from None
