"""History pipeline benchmark: ingest N synthetic case records into a fresh Parquet history and build the
report from it on local Spark (local[2]), at several sizes, printing one JSON object.

Per size: `ingest_s` (run directories -> Parquet history, Spark), `report_s` (history -> report model with
Spark, then report.html / report.md / report.json), `total_s` = ingest + report. Spark's start-up is measured
once and reported apart (`spark_start_s`): it does not grow with N and a Spark master or Connect server is
already up. Records are written in exactly the format `amqp-conformance run` writes (see
conformance/history/synthetic.py) and cached in --data between runs; generating them is not timed.

Target: total_s <= 60 for 10 million records, and roughly linear from 1 to 10 million
(`linearity` = (total_s(10M) / total_s(1M)) / 10; 1.0 is exactly linear, below 1 is better than linear).

Usage: .venv/bin/python benchmarks/pipeline.py [--records 10000000] [--sizes 1000000,3000000,10000000]
       [--data /tmp/amqp-conformance-bench]
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
from conformance.history.store import History
from conformance.history.synthetic import write_synthetic_runs
from conformance.report import render_html, render_markdown

TARGET_S = 60.0


def dataset(root: Path, records: int) -> Path:
    path = root / f"records-{records}"
    done = path / ".complete"
    if not done.exists():
        shutil.rmtree(path, ignore_errors=True)
        print(f"generating {records} records into {path}", file=sys.stderr, flush=True)
        write_synthetic_runs(path, records)
        done.write_text("ok")
    return path


def measure(spark, data: Path, work: Path, records: int) -> dict:
    history = History(work / f"history-{records}")
    shutil.rmtree(history.root, ignore_errors=True)
    t0 = time.perf_counter()
    ingested = history.ingest(spark, [data])
    t1 = time.perf_counter()
    model = build_model(spark, history)
    out = work / f"report-{records}"
    out.mkdir(parents=True, exist_ok=True)
    (out / "report.json").write_text(json.dumps(model, default=str))
    (out / "report.html").write_text(render_html(model))
    (out / "report.md").write_text(render_markdown(model))
    t2 = time.perf_counter()
    assert ingested.records == records == model["history"]["records"], (ingested.records, records)
    shutil.rmtree(history.root, ignore_errors=True)
    return {"records": records, "runs": len(ingested.added_runs), "ingest_s": round(t1 - t0, 2),
            "report_s": round(t2 - t1, 2), "total_s": round(t2 - t0, 2),
            "records_per_s": round(records / (t2 - t0))}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=10_000_000, help="the largest size (default 10 million)")
    parser.add_argument("--sizes", default=None, help="comma-separated sizes (default 1M, 3M and --records)")
    parser.add_argument("--data", default=os.path.join(tempfile.gettempdir(), "amqp-conformance-bench"))
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")] if args.sizes else \
        sorted({min(1_000_000, args.records), min(3_000_000, args.records), args.records})
    root = Path(args.data)
    data = {n: dataset(root, n) for n in sizes}
    work = Path(tempfile.mkdtemp(prefix="pipeline-bench-"))
    t = time.perf_counter()
    spark = session(log_file=work / "spark.log")
    spark_start = time.perf_counter() - t
    warm = dataset(root, 100_000)                    # one small pass so JIT warm-up is not charged to a size
    measure(spark, warm, work, 100_000)
    results = [measure(spark, data[n], work, n) for n in sizes]
    shutil.rmtree(work, ignore_errors=True)
    by_size = {r["records"]: r for r in results}
    largest, smallest = by_size[max(sizes)], by_size[min(sizes)]
    linearity = None
    if largest["records"] > smallest["records"]:
        linearity = round((largest["total_s"] / smallest["total_s"]) / (largest["records"] / smallest["records"]), 2)
    print(json.dumps({
        "benchmark": "pipeline", "spark": spark.version, "master": "local[2]", "python": platform.python_version(),
        "cpus": os.cpu_count(), "spark_start_s": round(spark_start, 2), "sizes": results,
        "linearity": linearity, "target": f"total_s <= {TARGET_S:.0f} for 10 million records",
        "target_met": largest["records"] >= 10_000_000 and largest["total_s"] <= TARGET_S,
    }))
    return 0


if __name__ == "__main__":
    sys.exit(main())
