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

import functools

from ..verdict import VERDICTS   # the vocabulary is defined once, in conformance.verdict

KEY = ("case_id", "broker", "broker_version")
LATEST = ("started_at", "run_id", "verdict", "duration_s", "reason", "violated", "section", "level",
          "requirement_ids", "findings", "observations")
TABLES = ("cells", "columns", "daily")
CELL_COLUMNS = (*KEY, "records", *[f"n_{v}" for v in VERDICTS], "sum_us", "min_s", "max_s", "latest")


def summarize(records_df, reread=None) -> dict:
    """The summary tables (Arrow tables; as_frames makes them DataFrames) of a records DataFrame
    (store.RECORD_COLUMNS), plus `runs`: records and errors per run_id. The records are reduced first, on
    narrow columns only, to one row per (case, broker, version, run, day), which every table is derived from;
    the text of the latest record of each cell (reason, findings, ...) is then read from the few runs that hold
    one, and the cells (as small as cases x columns) are completed in the driver. `reread`, when given, is
    called with the (run_id, case_id) pairs found (and `bad`: their records with a verdict outside VERDICTS)
    and returns the records to read the latest records from (e.g. once the batch's cases table is written)."""
    import pyarrow as pa
    import pyarrow.compute as pc
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
                 F.max("broker_product").alias("product")))
    # every small table in two jobs over the fine rows, taken to the driver as Arrow: the sums, a set of groupings
    # (the days, the (run, case) pairs, the runs of each column) in one hash aggregation split in the driver;
    # then the cells, whose string maxima (the latest struct, the product) sort their rows
    fine = fine.localCheckpoint()
    sets = {"daily": (*KEY, "day"), "pairs": ("run_id", "case_id"), "runs_of": ("broker", "broker_version", "run_id")}
    grouping = (*KEY, "day", "run_id")
    gid = {name: sum(1 << (len(grouping) - 1 - i) for i, c in enumerate(grouping) if c not in cols)
           for name, cols in sets.items()}
    sums = [F.sum("records").alias("records"), *[F.sum(f"n_{v}").alias(f"n_{v}") for v in VERDICTS],
            F.sum("sum_us").alias("sum_us")]
    summed = (fine.groupingSets([list(cols) for cols in sets.values()], *grouping)
              .agg(F.grouping_id().alias("gid"), *sums)).toArrow()
    part = {name: summed.filter(pc.equal(summed.column("gid"), gid[name])) for name in sets}
    narrow = (fine.groupBy(*KEY).agg(*sums, F.min("min_s").alias("min_s"), F.max("max_s").alias("max_s"),
                                     F.max("latest").alias("latest"), F.max("product").alias("product"))).toArrow()
    if reread is not None:       # the records read again (e.g. once their cases table is written), given the pairs
        pairs = part["pairs"]
        bad = pc.subtract(pairs.column("records"), functools.reduce(
            pc.add, [pairs.column(f"n_{v}") for v in VERDICTS]))
        records_df = reread(pa.table({"run_id": pairs.column("run_id"), "case_id": pairs.column("case_id"),
                                      "bad": bad}))
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
    cells = narrow.select([c for c in CELL_COLUMNS if c != "latest"]).take([i for i, _ in pairs])
    cells = cells.append_column("latest", latest.column("latest").take([j for _, j in pairs]))
    daily = part["daily"].select([*KEY, "day", "records", "sum_us"])
    columns = _columns(part["runs_of"], narrow)
    runs = pa.table({"run_id": part["pairs"].column("run_id"), "records": part["pairs"].column("records"),
                     "errors": part["pairs"].column("n_error")}).group_by("run_id").aggregate(
        [("records", "sum"), ("errors", "sum")]).rename_columns(["run_id", "records", "errors"])
    return {"cells": cells, "columns": columns, "daily": daily, "runs": runs}


def _columns(runs_of, cells):
    """The columns table: per broker@version its runs (the (broker, version, run) groups with a run_id, as
    countDistinct counts), its last (started_at, run_id) and product: the greatest over its cells, whose latest
    struct starts with the greatest (started_at, run_id) of their records (a few rows per column and run:
    done in the driver)."""
    import pyarrow as pa

    found: dict[tuple, list] = {}
    for broker, version, latest, product in zip(*[cells.column(c).to_pylist() for c in (
            "broker", "broker_version", "latest", "product")]):
        last = ((latest or {}).get("started_at"), (latest or {}).get("run_id"))
        entry = found.setdefault((broker, version), [0, last, product])
        entry[1] = max(entry[1], last, key=_nulls_first)
        entry[2] = max(entry[2], product, key=_null_first)
    for broker, version, run_id in zip(*[runs_of.column(c).to_pylist() for c in (
            "broker", "broker_version", "run_id")]):
        found[(broker, version)][0] += run_id is not None
    keys = list(found)
    last_type = pa.struct([("started_at", pa.string()), ("run_id", pa.string())])
    return pa.table({"broker": pa.array([k[0] for k in keys], pa.string()),
                     "broker_version": pa.array([k[1] for k in keys], pa.string()),
                     "runs": pa.array([found[k][0] for k in keys], pa.int64()),
                     "last": pa.array([{"started_at": found[k][1][0], "run_id": found[k][1][1]} for k in keys],
                                      last_type),
                     "product": pa.array([found[k][2] for k in keys], pa.string())})


def _null_first(value):
    """Spark's order of a value for max(): null below everything."""
    return (value is not None, value or "")


def _nulls_first(pair):
    return tuple(_null_first(v) for v in pair)


def as_frames(spark, tables: dict) -> dict:
    """Summary tables as DataFrames (summarize gives Arrow tables)."""
    return {name: spark.createDataFrame(table) if not hasattr(table, "sparkSession") else table
            for name, table in tables.items()}


def merge(tables: dict) -> dict:
    """Summaries of several batches (each table a union of theirs) merged into the summary of all of them.
    A batch's runs are its own (ingest skips a run_id already in the history), so run counts add up."""
    from pyspark.sql import functions as F

    cells = (tables["cells"].groupBy(*KEY)
             .agg(F.sum("records").alias("records"), *[F.sum(f"n_{v}").alias(f"n_{v}") for v in VERDICTS],
                  F.sum("sum_us").alias("sum_us"), F.min("min_s").alias("min_s"), F.max("max_s").alias("max_s"),
                  F.max("latest").alias("latest")))
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
        table = tables[name].toArrow() if hasattr(tables[name], "toArrow") else tables[name]
        pq.write_table(table, str(dest / name / "part-0.parquet"))
