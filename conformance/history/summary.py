"""The history's summary tables: the mergeable aggregates the report is built from.

Every batch keeps, beside its records, three small tables computed from them once, at ingest (or compaction):

    summary/cells     one row per (case, broker, version): counts per verdict, duration sums (integer
                      microseconds, so sums are exact in any order), min and max, and the latest record (the
                      greatest (started_at, run_id, verdict, duration_s, ...) struct: ties broken by value)
    summary/columns   one row per (broker, version): the number of runs, the latest (started_at, run_id), product
    summary/daily     one row per (case, broker, version, day of started_at): records and duration sum

Each is a sum, min or max over records, so the summary of a union of batches is the merge (`merge`) of their
summaries: the report reads the summaries of all batches, a few rows per case and column each, and never the
records again. The result is exactly that of `merge(summarize(all records))` (tests/history/test_incremental.py).
"""

from __future__ import annotations

from ..verdict import VERDICTS   # the vocabulary is defined once, in conformance.verdict

KEY = ("case_id", "broker", "broker_version")
LATEST = ("started_at", "run_id", "verdict", "duration_s", "reason", "violated", "section", "level",
          "requirement_ids", "findings", "observations")
TABLES = ("cells", "columns", "daily")
CELL_COLUMNS = (*KEY, "records", *[f"n_{v}" for v in VERDICTS], "sum_us", "min_s", "max_s", "latest")


def summarize(records_df, reread=None) -> dict:
    """The summary tables (DataFrames) of a records DataFrame (store.RECORD_COLUMNS), plus `runs`: records
    and errors per run_id. The records are reduced first, on narrow columns only, to one row per (case,
    broker, version, run, day), which every table is derived from; the text of the latest record of each cell
    (reason, findings, ...) is then read from the few runs that hold one, and the cells (as small as cases x
    columns) are completed in the driver. `reread`, when given, is called with the (run_id, case_id) pairs
    found (and `bad`: their records with a verdict outside VERDICTS) and returns the records to read the latest
    records from (e.g. once the batch's cases table is written)."""
    from pyspark.sql import functions as F

    micros = F.round(F.col("duration_s") * 1_000_000).cast("long")
    # first, a hash aggregation (every buffer fixed-width: no sort of the records) to one row per distinct
    # (cell, run, product, started_at, verdict): the records of a run that share a start and a verdict
    atoms = (records_df.groupBy(*KEY, "run_id", "broker_product", "started_at", "verdict")
             .agg(F.count(F.lit(1)).alias("records"), F.sum(micros).alias("sum_us"),
                  F.min("duration_s").alias("min_s"), F.max("duration_s").alias("max_s")))
    # then, on those few rows, what needs a string maximum: the greatest (started_at, run_id, verdict,
    # duration_s) of a group is that of its atoms, each with its greatest duration
    fine = (atoms.groupBy(*KEY, "run_id", F.substring("started_at", 1, 10).alias("day"))
            .agg(F.sum("records").alias("records"),
                 *[F.sum(F.when(F.col("verdict") == v, F.col("records")).otherwise(F.lit(0)))
                   .alias(f"n_{v}") for v in VERDICTS],
                 F.sum("sum_us").alias("sum_us"), F.min("min_s").alias("min_s"),
                 F.max("max_s").alias("max_s"),
                 F.max(F.struct("started_at", "run_id", "verdict", F.col("max_s").alias("duration_s")))
                 .alias("latest"),
                 F.max("broker_product").alias("product"))
            .localCheckpoint())
    # the cells without their text: as small as cases x columns, so taken to the driver (one job) and completed
    # there, with no further checkpoint or join job
    if reread is not None:       # the records read again (e.g. once their cases table is written), given the pairs
        records_df = reread(fine.groupBy("run_id", "case_id").agg(
            F.sum(F.col("records") - sum(F.col(f"n_{v}") for v in VERDICTS)).alias("bad")).toArrow())
    narrow = merge({"cells": fine}, only="cells")["cells"].toArrow()
    tops = narrow.select(list(KEY)).append_column("top", narrow.column("latest"))
    run_ids = sorted(set(narrow.column("latest").combine_chunks().field("run_id").to_pylist()))
    tops = records_df.sparkSession.createDataFrame(tops).select(
        *KEY, *[F.col(f"top.{c}").alias(f"top_{c}") for c in LATEST[:4]])
    # the greatest (started_at, run_id, verdict, duration_s) of each cell is known; among its records with
    # exactly those values, the greatest rest of the struct completes it (the same as max over all records)
    match = None
    for c in KEY + LATEST[:4]:
        other = F.col(f"top_{c}") if c in LATEST[:4] else tops[c]
        cond = records_df[c].eqNullSafe(other)
        match = cond if match is None else match & cond
    latest = (records_df.where(F.col("run_id").isin(run_ids))
              .join(F.broadcast(tops), match)
              .groupBy(*[records_df[c] for c in KEY])
              .agg(F.max(F.struct(*[records_df[c] for c in LATEST])).alias("latest"))).toArrow()
    at = {key: i for i, key in enumerate(zip(*[latest.column(c).to_pylist() for c in KEY]))}
    pairs = [(i, at[key]) for i, key in enumerate(zip(*[narrow.column(c).to_pylist() for c in KEY])) if key in at]
    cells = narrow.drop_columns(["latest"]).take([i for i, _ in pairs])
    cells = records_df.sparkSession.createDataFrame(
        cells.append_column("latest", latest.column("latest").take([j for _, j in pairs])).select(list(CELL_COLUMNS)))
    columns = (fine.groupBy("broker", "broker_version")
               .agg(F.countDistinct("run_id").alias("runs"),
                    F.max(F.struct(F.col("latest.started_at").alias("started_at"), "run_id")).alias("last"),
                    F.max("product").alias("product")))
    daily = fine.groupBy(*KEY, "day").agg(F.sum("records").alias("records"), F.sum("sum_us").alias("sum_us"))
    runs = fine.groupBy("run_id").agg(F.sum("records").alias("records"), F.sum("n_error").alias("errors"))
    return {"cells": cells, "columns": columns, "daily": daily, "runs": runs}


def merge(tables: dict, only: str | None = None) -> dict:
    """Summaries of several batches (each table a union of theirs) merged into the summary of all of them.
    A batch's runs are its own (ingest skips a run_id already in the history), so run counts add up."""
    from pyspark.sql import functions as F

    cells = (tables["cells"].groupBy(*KEY)
             .agg(F.sum("records").alias("records"), *[F.sum(f"n_{v}").alias(f"n_{v}") for v in VERDICTS],
                  F.sum("sum_us").alias("sum_us"), F.min("min_s").alias("min_s"), F.max("max_s").alias("max_s"),
                  F.max("latest").alias("latest")))
    if only == "cells":
        return {"cells": cells}
    columns = (tables["columns"].groupBy("broker", "broker_version")
               .agg(F.sum("runs").alias("runs"), F.max("last").alias("last"), F.max("product").alias("product")))
    daily = (tables["daily"].groupBy(*KEY, "day")
             .agg(F.sum("records").alias("records"), F.sum("sum_us").alias("sum_us")))
    return {"cells": cells, "columns": columns, "daily": daily}


def write(tables: dict, dest) -> None:
    """Write summary tables under `dest` (summary/<table>/part-0.parquet), one small file each. They are as
    small as cases x brokers x versions (x days), so the driver writes them from Arrow: no Spark write job
    (its commit protocol costs more than the rows, at every small ingest)."""
    import pyarrow.parquet as pq

    for name in TABLES:
        (dest / name).mkdir(parents=True, exist_ok=True)
        pq.write_table(tables[name].toArrow(), str(dest / name / "part-0.parquet"))
