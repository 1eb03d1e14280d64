"""The traffic table of the Parquet history: findings of `check --spark` (and of any traffic run), beside
the case batches.

Layout, next to `batches/` (conformance/history/store.py), written here only:

    traffic/run_id=<run-id>/part-*.parquet     one row per finding (TRAFFIC_SCHEMA)
    traffic/.staging-<run-id>/                 a write in progress, renamed into place in one step

`traffic_counts(spark, root)` aggregates it for the report: requirement x endpoint product@version, the
number of findings, of connections, and the first finding's connection and frame.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

TRAFFIC_SCHEMA = ("connection STRING, requirement_id STRING, level STRING, endpoint STRING, container_id STRING, "
                  "product STRING, version STRING, frame_index LONG, frame STRING, detail STRING, t DOUBLE")
COLUMNS = [c.split()[0] for c in TRAFFIC_SCHEMA.split(", ")]


def traffic_dir(root: Path) -> Path:
    return Path(root) / "traffic"


def write_traffic_findings(root: Path, run_id: str, findings: list[dict]) -> int:
    """Add one run's findings as its own partition (atomically: whole or not at all); returns the rows. The one
    Parquet file is written by pyarrow (which Spark's Python side needs anyway): the columns and types of
    TRAFFIC_SCHEMA, with no Spark job for a few hundred rows."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    base = traffic_dir(root)
    final = base / f"run_id={run_id}"
    if final.exists():
        return 0                                      # already there: a run is added once
    base.mkdir(parents=True, exist_ok=True)
    staging = base / f".staging-{run_id}"
    shutil.rmtree(staging, ignore_errors=True)
    types = {"STRING": pa.string(), "LONG": pa.int64(), "DOUBLE": pa.float64()}
    schema = pa.schema([(name, types[kind]) for name, kind in (c.split() for c in TRAFFIC_SCHEMA.split(", "))])
    table = pa.table({c: [f.get(c) for f in findings] for c in COLUMNS}, schema=schema)
    staging.mkdir(parents=True)
    pq.write_table(table, staging / "part-00000.snappy.parquet", compression="snappy")
    (staging / "_SUCCESS").touch()
    os.replace(staging, final)
    return len(findings)


def traffic_counts(spark, root: Path) -> list[dict]:
    """Per requirement, level and endpoint product@version: findings, connections, runs, and the first
    finding's connection and frame (sorted by requirement, then endpoint)."""
    base = traffic_dir(root)
    if not base.is_dir() or not any(p.name.startswith("run_id=") for p in base.iterdir()):
        return []
    from pyspark.sql import functions as F
    df = spark.read.option("basePath", str(base)).parquet(*[str(p) for p in sorted(base.glob("run_id=*"))])
    who = F.concat_ws("@", F.coalesce("product", F.lit("unknown")), F.coalesce("version", F.lit("unknown")))
    grouped = (df.withColumn("who", F.concat_ws(" ", "endpoint", who))
               .groupBy("requirement_id", "level", "who")
               .agg(F.count(F.lit(1)).alias("findings"), F.countDistinct("connection").alias("connections"),
                    F.countDistinct("run_id").alias("runs"),
                    F.min(F.struct("run_id", "connection", "frame_index", "frame")).alias("first")))
    out = []
    for r in grouped.collect():
        first = r["first"]
        out.append({"requirement_id": r["requirement_id"], "level": r["level"], "endpoint": r["who"],
                    "findings": r["findings"], "connections": r["connections"], "runs": r["runs"],
                    "first": {"run_id": first["run_id"], "connection": first["connection"],
                              "frame_index": first["frame_index"], "frame": first["frame"]}})
    return sorted(out, key=lambda d: (d["requirement_id"], d["endpoint"]))
