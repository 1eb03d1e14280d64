"""History pipeline benchmark: ingest N synthetic case records into a fresh Parquet history and build the
report from it on Spark (local[2] unless --spark-master), at several sizes, printing one JSON object.

Per size (the files read once first, untimed, so both come from the page cache): `floor_s` (Spark's own floor,
measured in the same session just before the ingest and again right after the report, the faster of the two: read
the same results.jsonl files with Spark's JSON reader and the record schema given, and count verdicts per case x
broker), `ingest_s` (run directories -> Parquet history, Spark), `report_s` (history -> report model with
Spark, then report.html / report.md / report.json), `total_s` = ingest + report, and `ratio` = total_s /
floor_s: the target is the ratio (the seconds move with the machine, the ratio does not). Spark's start-up is
measured once and reported apart (`spark_start_s`). Records are written in exactly the format
`amqp-conformance run` writes (see conformance/history/synthetic.py) and cached in --data between runs;
generating them is not timed.

After each size, one nightly run of the whole matrix (15 broker@versions x 34 cases, 510 records) is
appended to that history and the report built again: `append_ingest_s`, `append_report_s`, `append_total_s`
(they should not grow with the history). `--appends N` also ingests N such runs one at a time (the ingest
compacts as it goes) and prints the history's batch and file count and the report time over it, beside the
same runs ingested at once (`many_appends`).

The sizes' runs hold 10,000 records each (34 cases against one broker, each case many times). A real history
is made of nightly runs of 510 records, one per case x broker@version, each with its own start time:
`--nightly-runs N` also measures N such runs (N x 510 records) the same way (`nightly`: floor, ingest, report,
ratio), since the history's summary and its Parquet files are shaped by runs, not by records.

Target: ratio <= 2.0 for 10 million records on local[2]; the append within 20 % at 1M and 10M.

Usage: .venv/bin/python benchmarks/pipeline.py [--records 10000000] [--sizes 1000000,3000000,10000000]
       [--data /tmp/amqp-conformance-bench] [--nightly-runs 2000]
       .venv/bin/python benchmarks/pipeline.py --sizes '' --appends 1000 [--appends-base 1000000]
       [--appends-budget SECONDS]     (appends only: no size is measured)
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import sys
import tempfile
import time
from pathlib import Path

from conformance.history.analysis import build_model
from conformance.history.spark import session
from conformance.history.spark import SparkTarget
from conformance.history.store import RECORD_SCHEMA, VERDICTS, History, find_run_dirs
from conformance.history.synthetic import write_matrix_run, write_synthetic_runs
from conformance.report import render_html, render_markdown

TARGET_RATIO = 2.0
# The format of the generated runs: a dataset written by an older format is generated again (v2: run.json has
# `scheduled`, as a real run's has, so the ingest checks the record count as it does for real runs).
DATASET_FORMAT = "v2"


def dataset(root: Path, records: int) -> Path:
    path = root / f"records-{records}"
    done = path / ".complete"
    if not done.exists() or done.read_text().strip() != DATASET_FORMAT:
        shutil.rmtree(path, ignore_errors=True)
        print(f"generating {records} records into {path}", file=sys.stderr, flush=True)
        write_synthetic_runs(path, records)
        done.write_text(DATASET_FORMAT)
    return path


def nightly_dataset(root: Path, runs: int) -> Path:
    """`runs` nightly matrix runs (510 records each: every case against 15 broker@versions), cached in `root`."""
    path = root / f"nightly-{runs}"
    done = path / ".complete"
    if not done.exists() or done.read_text().strip() != DATASET_FORMAT:
        shutil.rmtree(path, ignore_errors=True)
        print(f"generating {runs} nightly runs into {path}", file=sys.stderr, flush=True)
        for index in range(runs):
            write_matrix_run(path, index)
        done.write_text(DATASET_FORMAT)
    return path


def read_once(data: Path) -> None:
    """Read the files once, untimed, so that neither the floor (measured first) nor the ingest pays for the disk:
    both then read them from the page cache."""
    for run_dir in find_run_dirs([data]):
        with open(run_dir / "results.jsonl", "rb") as fh:
            while fh.read(1 << 24):
                pass


def floor(spark, data: Path) -> tuple[float, int]:
    """Spark's own floor for these files: JSON reader, schema given, verdicts counted per case x broker."""
    from pyspark.sql import functions as F
    files = [str(p / "results.jsonl") for p in find_run_dirs([data])]
    t0 = time.perf_counter()
    rows = (spark.read.schema(RECORD_SCHEMA).json(files)
            .groupBy("case_id", "broker").agg(*[F.sum((F.col("verdict") == v).cast("long")).alias(v)
                                                 for v in VERDICTS]).collect())
    seconds = time.perf_counter() - t0
    return seconds, sum(sum(r[v] or 0 for v in VERDICTS) for r in rows)


def report(spark, history: History, out: Path) -> dict:
    model = build_model(spark, history)
    out.mkdir(parents=True, exist_ok=True)
    (out / "report.json").write_text(json.dumps({k: v for k, v in model.items() if k != "generated_at"},
                                                default=str, sort_keys=True))
    (out / "report.html").write_text(render_html(model))
    (out / "report.md").write_text(render_markdown(model))
    return model


def files_under(path: Path) -> int:
    return sum(len(files) for _, _, files in os.walk(path))


def append_one_run(spark, history: History, work: Path, index: int) -> dict:
    """One nightly matrix run (15 broker@versions x 34 cases = 510 records) appended, then the report."""
    run = write_matrix_run(work / "nightly", index)
    t0 = time.perf_counter()
    history.ingest(spark, [run])
    t1 = time.perf_counter()
    report(spark, history, work / "report-append")
    t2 = time.perf_counter()
    return {"append_ingest_s": round(t1 - t0, 2), "append_report_s": round(t2 - t1, 2),
            "append_total_s": round(t2 - t0, 2)}


def appends(spark, work: Path, count: int, base: Path | None = None, budget_s: float | None = None) -> dict:
    """`count` matrix runs ingested one at a time (with the ingest's compaction) into a history that holds the
    runs of `base` first (if given), then the report over it, beside the report over one history holding the
    same records ingested at once (`base` and the appended runs in one ingest). With `budget_s`, the appends
    stop when it is spent and the figures are those of the appends done (`appends`)."""
    small, big = History(work / "history-appends"), History(work / "history-at-once")
    base_records = 0
    if base is not None:
        base_records = small.ingest(spark, [base]).records
    runs = [write_matrix_run(work / "appends", i) for i in range(count)]
    times: list[float] = []
    t0 = time.perf_counter()
    for i, run in enumerate(runs):
        if budget_s is not None and time.perf_counter() - t0 > budget_s:
            break
        t = time.perf_counter()
        small.ingest(spark, [run])
        times.append(time.perf_counter() - t)
        if (i + 1) % 50 == 0:
            print(f"{i + 1} appends in {time.perf_counter() - t0:.0f} s, {len(small.batch_dirs())} batches, "
                  f"{files_under(small.root)} files", file=sys.stderr, flush=True)
    t1 = time.perf_counter()
    done = runs[:len(times)]
    big.ingest(spark, ([base] if base is not None else []) + done)
    t2 = time.perf_counter()
    report(spark, small, work / "report-appends")
    t3 = time.perf_counter()
    report(spark, big, work / "report-at-once")
    t4 = time.perf_counter()
    again = []
    for _ in range(2):                    # alternately, so one moment's load does not decide the comparison
        ta = time.perf_counter()
        report(spark, small, work / "report-appends")
        tb = time.perf_counter()
        report(spark, big, work / "report-at-once")
        again.append((round(tb - ta, 2), round(time.perf_counter() - tb, 2)))
    same = (work / "report-appends" / "report.json").read_text() == \
        (work / "report-at-once" / "report.json").read_text()
    times.sort()
    return {"appends": len(times), "asked": count, "base_records": base_records,
            "records": base_records + len(times) * 510, "appends_s": round(t1 - t0, 1),
            "append_median_s": round(times[len(times) // 2], 2) if times else None,
            "append_max_s": round(times[-1], 2) if times else None,
            "batches": len(small.batch_dirs()), "files": files_under(small.root),
            "report_s": [round(t3 - t2, 2)] + [a for a, _ in again], "at_once_ingest_s": round(t2 - t1, 2),
            "at_once_batches": len(big.batch_dirs()), "at_once_files": files_under(big.root),
            "at_once_report_s": [round(t4 - t3, 2)] + [b for _, b in again], "same_report": same}


def measure(spark, data: Path, work: Path, records: int, append: bool = True, keep: bool = False) -> dict:
    history = History(work / f"history-{records}")
    shutil.rmtree(history.root, ignore_errors=True)
    read_once(data)
    floor_before, counted = floor(spark, data)
    assert counted == records, (counted, records)
    t0 = time.perf_counter()
    ingested = history.ingest(spark, [data])
    t1 = time.perf_counter()
    model = report(spark, history, work / f"report-{records}")
    t2 = time.perf_counter()
    assert ingested.records == records == model["history"]["records"], (ingested.records, records)
    # the floor again, right after: the ratio is taken against the faster of the two (the stricter figure), so a
    # floor slowed by a moment's noise cannot flatter it
    floor_after = floor(spark, data)[0]
    floor_s = min(floor_before, floor_after)
    result = {"records": records, "runs": len(ingested.added_runs), "floor_s": round(floor_s, 2),
              "floors_s": [round(floor_before, 2), round(floor_after, 2)],
              "ingest_s": round(t1 - t0, 2), "report_s": round(t2 - t1, 2), "total_s": round(t2 - t0, 2),
              "ratio": round((t2 - t0) / floor_s, 2), "records_per_s": round(records / (t2 - t0))}
    if append:
        result.update(append_one_run(spark, history, work, records))
    if not keep:
        shutil.rmtree(history.root, ignore_errors=True)
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=10_000_000, help="the largest size (default 10 million)")
    parser.add_argument("--sizes", default=None, help="comma-separated sizes (default 1M, 3M and --records)")
    parser.add_argument("--data", default=os.path.join(tempfile.gettempdir(), "amqp-conformance-bench"))
    parser.add_argument("--work", default=None, help="where histories are built (default: a temporary directory)")
    parser.add_argument("--spark-master", default=None, help="spark://host:port (default local[2])")
    parser.add_argument("--appends", type=int, default=0, help="also: this many one-run ingests, then the report")
    parser.add_argument("--appends-base", type=int, default=0,
                        help="the appends go to a history holding this many synthetic records first (default none)")
    parser.add_argument("--appends-budget", type=float, default=None,
                        help="stop the appends after this many seconds (the number done is printed)")
    parser.add_argument("--keep", action="store_true", help="keep the histories and reports in --work")
    parser.add_argument("--nightly-runs", type=int, default=0,
                        help="also: this many nightly matrix runs (510 records each), measured like a size")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",") if s.strip()] if args.sizes is not None else \
        sorted({min(1_000_000, args.records), min(3_000_000, args.records), args.records})
    root = Path(args.data)
    data = {n: dataset(root, n) for n in sizes}
    work = Path(tempfile.mkdtemp(prefix="pipeline-bench-", dir=args.work))
    t = time.perf_counter()
    spark = session(SparkTarget(master=args.spark_master), log_file=work / "spark.log")
    spark_start = time.perf_counter() - t
    if sizes:
        warm = dataset(root, 100_000)                # one small pass so JIT warm-up is not charged to a size
        measure(spark, warm, work, 100_000, append=False)
    results = [measure(spark, data[n], work, n, keep=args.keep) for n in sizes]
    nightly = measure(spark, nightly_dataset(root, args.nightly_runs), work, args.nightly_runs * 510,
                      append=False, keep=args.keep) if args.nightly_runs else None
    base = dataset(root, args.appends_base) if args.appends_base else None
    many = appends(spark, work, args.appends, base, args.appends_budget) if args.appends else None
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)
    largest = max(results, key=lambda r: r["records"], default={"records": 0, "ratio": None})
    print(json.dumps({
        "benchmark": "pipeline", "spark": spark.version, "master": args.spark_master or "local[2]",
        "python": platform.python_version(), "cpus": os.cpu_count(), "spark_start_s": round(spark_start, 2),
        "sizes": results, **({"nightly": nightly} if nightly else {}),
        **({"many_appends": many} if many else {}), "target": f"ratio <= {TARGET_RATIO} for 10 million records",
        "target_met": largest["records"] >= 10_000_000 and largest["ratio"] <= TARGET_RATIO,
    }))
    return 0


if __name__ == "__main__":
    sys.exit(main())
