"""`check --spark MASTER DIR...`: the same judging, one Spark task per group of connections.

This module owns distributing `check`: the driver cuts every input into connections once
(`check.cut_connections`: pcap/pcapng read and TCP reassembled, transcripts split per connection), the
connections go to Spark as rows (connection number, pickled streams), put into as many bins as tasks (the
biggest connection first into the emptiest bin) and range-partitioned by bin, and each
task judges its connections with `check.judge_cut` (the pure model, exactly what `check` runs without
Spark), returning findings and connection summaries as JSON rows. The DataFrame API (`mapInPandas`) is used,
not RDDs, so Spark Connect (sc://) works as well as local[N] and spark:// masters; workers must be able to
import `conformance` (local[N]: the driver's environment). The findings are then written as the traffic
table of the Parquet history (`history.traffic`) and as the traffic run directory (`check.write_run`).
"""

from __future__ import annotations

import json
import os
import pickle
import sys
import time
from collections import Counter
from pathlib import Path

from ..errors import CaptureEncrypted, CaptureWithoutAmqp, UsageError
from .check import CheckResult, cut_connections, expand, new_run_id, render_markdown, write_run
from .judge import Finding

OUT_SCHEMA = "kind STRING, json STRING"


def _judge_partition(batches):
    import pandas as pd

    from conformance.traffic.check import judge_cut
    for pdf in batches:
        kinds, jsons = [], []
        for blob in pdf["blob"]:
            judge = judge_cut(pickle.loads(blob))
            kinds.append("connection")
            jsons.append(json.dumps(judge.summary()))
            for f in judge.findings:
                kinds.append("finding")
                jsons.append(json.dumps(f.to_json()))
        yield pd.DataFrame({"kind": kinds, "json": jsons})


def target_for(master: str):
    from ..history.spark import SparkTarget
    if master.startswith("sc://"):
        return SparkTarget(remote=master)
    if master.startswith(("local", "spark://")):
        return SparkTarget(master=master)
    raise UsageError(f"--spark {master!r}: use local[N], spark://HOST:PORT or sc://HOST:PORT")


def judge_on_spark(spark, paths, partitions: int | None = None) -> tuple[list[dict], list[dict], dict]:
    """(connection summaries, findings as dicts, timings) of every connection in `paths`, judged on Spark."""
    t0 = time.perf_counter()
    conns = [c for p in expand(paths) for c in cut_connections(p)]
    t1 = time.perf_counter()
    if not conns:
        return [], [], {"cut_s": t1 - t0, "judge_s": 0.0}
    parallel = partitions or max(2, int(spark.sparkContext.defaultParallelism) * 2
                                 if hasattr(spark, "sparkContext") and _classic(spark) else 4)
    bins = min(parallel, len(conns))
    blobs = [pickle.dumps(c, protocol=pickle.HIGHEST_PROTOCOL) for c in conns]
    del conns
    load = [0] * bins                        # biggest connection first into the emptiest bin (balanced tasks)
    rows = []
    for i in sorted(range(len(blobs)), key=lambda k: -len(blobs[k])):
        b = load.index(min(load))
        load[b] += len(blobs[i])
        rows.append((i, b, blobs[i]))
    df = spark.createDataFrame(rows, "cid INT, bin INT, blob BINARY").repartitionByRange(bins, "bin")
    out = df.mapInPandas(_judge_partition, OUT_SCHEMA).collect()
    t2 = time.perf_counter()
    summaries = [json.loads(r["json"]) for r in out if r["kind"] == "connection"]
    findings = [json.loads(r["json"]) for r in out if r["kind"] == "finding"]
    summaries.sort(key=lambda c: c["connection"])
    return summaries, findings, {"cut_s": t1 - t0, "judge_s": t2 - t1}


def _classic(spark) -> bool:
    try:
        spark.sparkContext
        return True
    except Exception:  # noqa: BLE001 - Spark Connect has no SparkContext
        return False


def check_on_spark(args, say) -> int:
    from ..history.spark import session
    from ..history.traffic import write_traffic_findings
    from ..options import default_reports_dir
    reports = Path(args.reports_dir) if getattr(args, "reports_dir", None) else default_reports_dir()
    target = target_for(args.spark)
    if target.master and target.master.startswith("local"):
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)   # the tasks import conformance as we do
    spark = session(target, app_name="amqp-conformance-check", log_file=reports / "spark-check.log")
    summaries, findings, timing = judge_on_spark(spark, args.captures)
    amqp = [c for c in summaries if c["kind"] == "amqp"]
    for c in summaries:
        if c["kind"] == "tls":
            say(f"skipped {c['connection']}: TLS-encrypted, nothing to judge")
        elif c["kind"] == "not-amqp":
            say(f"skipped {c['connection']}: not AMQP 1.0")
    if not amqp:
        kinds = Counter(c["kind"] for c in summaries)
        if kinds["tls"]:
            raise CaptureEncrypted(f"the {kinds['tls']} AMQP connection(s) given are TLS-encrypted, nothing can be "
                                   "judged; capture a plain port, or run `observe`")
        raise CaptureWithoutAmqp(f"no AMQP 1.0 traffic in {len(summaries)} TCP connection(s); capture the AMQP port")
    objs = [Finding(**f) for f in findings]
    for f in objs:
        say(f.line())
    run_id = new_run_id()
    result = CheckResult(inputs=[str(p) for p in args.captures],
                         skipped=[c["connection"] for c in summaries if c["kind"] != "amqp"])
    path = write_run(reports, _Findings(result, objs), command="check --spark", run_id=run_id,
                     connections=amqp, extra={"spark": target.label, "timing_s": timing})
    history = Path(args.history) if getattr(args, "history", None) else reports / "history"
    rows = write_traffic_findings(spark, history, run_id, findings)
    frames = sum(c["frames"] for c in amqp)
    say(f"{len(amqp)} connection(s) judged on Spark {target.label}, {frames} frames "
        f"(cut {timing['cut_s']:.1f} s, judged {timing['judge_s']:.1f} s), findings: "
        f"{dict(Counter(f.level for f in objs)) or 'none'}; results in {path}, {rows} rows added to {history}/traffic")
    return CheckResult.exit_code(_Findings(result, objs))


class _Findings(CheckResult):
    """A CheckResult whose findings come from Spark rows, not from local judges."""

    def __init__(self, base: CheckResult, findings: list[Finding]):
        super().__init__(connections=[], skipped=base.skipped, inputs=base.inputs)
        self._findings = findings

    @property
    def findings(self) -> list[Finding]:
        return self._findings


__all__ = ["judge_on_spark", "check_on_spark", "render_markdown"]
