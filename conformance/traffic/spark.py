"""`check --spark MASTER DIR...`: the same judging, parallel from the first byte read.

This module owns distributing `check`. Captures are read in Spark tasks, one per file (a ring buffer's
files, tshark/dumpcap `-b`, are one capture: `check.capture_sets`), so the files are read in parallel:
each task takes its file's packets to TCP segments (`pcap.tcp_of`; bare ACKs carry nothing to judge) and
packs them per connection (its 4-tuple within its capture) into chunks (`_pack_files`). The chunks are
then partitioned by connection, once (a shuffle; nothing is re-read), sorted by file and chunk within a
partition, and each task reassembles and judges its connections with the pure model (`_judge_packed`:
`pcap.Reassembler` and `check.CaptureJudge`, exactly what `check` runs without Spark), returning
findings and connection summaries as JSON rows. The suite's transcripts (small) are cut in the driver
and judged in tasks with `check.judge_cut`. The DataFrame API (`mapInPandas`) is used, not RDDs, so Spark
Connect (sc://) works as well as local[N] and spark:// masters; workers must be able to import
`conformance` and read the capture files (local[N]: the driver's environment and disk). The findings are
then written as the traffic table of the Parquet history (`history.traffic`) and as the traffic run
directory (`check.write_run`). A capture a task finds damaged comes back as an error row and is raised in
the driver as the same one-line error `check` gives.
"""

from __future__ import annotations

import json
import os
import pickle
import sys
import time
from collections import Counter
from functools import partial
from pathlib import Path

from .. import errors as _errors
from ..errors import CaptureEncrypted, CaptureWithoutAmqp, NotACapture, UsageError
from .check import (CheckResult, capture_sets, cut_connections, expand, is_transcript, new_run_id,
                    render_markdown, set_label, write_run)
from .judge import Finding

OUT_SCHEMA = "kind STRING, json STRING"
PACKED_SCHEMA = "conn STRING, fileno INT, chunk INT, blob BINARY"
CHUNK_BYTES = 2 << 20                  # packed bytes of one connection per row
_SEP = "\x1f"
# local[N]: the shuffle's blocks stay on this machine's disk (page cache), where compressing the captured
# bytes (the packed segments, ~the capture's size) costs CPU the judging needs and saves no network
LOCAL_CONFIG = {"spark.shuffle.compress": "false", "spark.shuffle.spill.compress": "false"}
# local[N]: the JVM only moves bytes between the Python tasks (Arrow in and out, the shuffle); its C2 JIT
# compiles cost more CPU than they save in a run of this length, so the JIT stops at C1 (measured, JVM CPU:
# session start 8 -> 5 s; a 975,835-frame file 15-18 -> 9-11 s; 11 million frames 34.6 -> 21.1 s)
LOCAL_JAVA_OPTIONS = "-XX:TieredStopAtLevel=1"
_ERROR = "\x00error"


def _pack_files(files, batches):
    """Spark task: ids of `files` ((label, fileno, path) rows) -> (conn, fileno, chunk, blob) rows, a blob
    holding the TCP segments of one connection in capture order: per segment <dir u8, flags u8, seq u32,
    t f64, len u32> and its payload (dir 0: from the lower endpoint of the connection's key to the higher)."""
    import struct

    import pandas as pd

    from conformance.errors import ConformanceError
    from conformance.traffic.pcap import SYN, read_packets, tcp_of
    rec = struct.Struct("<BBIdI").pack
    for pdf in batches:
        for label, fileno, path in (files[int(i)] for i in pdf["id"]):
            conns, chunks, blobs = [], [], []
            bufs: dict = {}

            def flush(key, b):
                conns.append(b[3])
                chunks.append(b[2])
                blobs.append(b"".join(b[0]))
                b[0], b[1], b[2] = [], 0, b[2] + 1
            try:
                for t, link, data in read_packets(path):
                    seg = tcp_of(link, data, t)
                    if seg is None:
                        continue
                    src, dst, seq, flags, payload, _t = seg
                    if not payload and not flags & SYN:
                        continue
                    if src <= dst:
                        key, d = (src, dst), 0
                    else:
                        key, d = (dst, src), 1
                    b = bufs.get(key)
                    if b is None:
                        name = _SEP.join((label, key[0][0], str(key[0][1]), key[1][0], str(key[1][1])))
                        b = bufs[key] = [[], 0, 0, name]
                    parts = b[0]
                    parts.append(rec(d, flags, seq, t, len(payload)))
                    parts.append(payload)
                    b[1] += 18 + len(payload)
                    if b[1] >= CHUNK_BYTES:
                        flush(key, b)
            except ConformanceError as exc:
                conns.append(_ERROR)
                chunks.append(0)
                blobs.append(json.dumps({"error": type(exc).__name__, "message": str(exc)}).encode())
            for key, b in bufs.items():
                if b[1]:
                    flush(key, b)
            yield pd.DataFrame({"conn": conns, "fileno": [int(fileno)] * len(conns), "chunk": chunks,
                                "blob": blobs})


def _judge_packed(batches):
    """Spark task: the rows of whole connections, sorted by connection, file and chunk -> JSON rows."""
    import struct

    import pandas as pd

    from conformance.traffic.check import CaptureJudge
    from conformance.traffic.pcap import Reassembler, TcpSegment
    head = struct.Struct("<BBIdI")
    size = head.size
    unpack = head.unpack_from
    state: dict = {"conn": None}

    def finish(kinds, jsons):
        judge, r = state.get("judge"), state.get("r")
        if judge is None:
            return
        for seg in r.finish():
            judge.segment(seg)
        for c in judge.connections:
            kinds.append("connection")
            jsons.append(json.dumps(c.summary()))
            for f in c.findings:
                kinds.append("finding")
                jsons.append(json.dumps(f.to_json()))
        state["judge"] = None

    for pdf in batches:
        kinds: list = []
        jsons: list = []
        for conn, blob in zip(pdf["conn"], pdf["blob"]):
            if conn == _ERROR:
                kinds.append("unreadable")
                jsons.append(bytes(blob).decode())
                continue
            if conn != state["conn"]:
                finish(kinds, jsons)
                label, a, ap, b, bp = conn.split(_SEP)
                state.update(conn=conn, judge=CaptureJudge(label), r=Reassembler(),
                             ends=((a, int(ap)), (b, int(bp))))
            feed, segment = state["r"].feed, state["judge"].segment
            lo, hi = state["ends"]
            blob = bytes(blob)
            pos, n = 0, len(blob)
            while pos < n:
                d, flags, seq, t, length = unpack(blob, pos)
                pos += size
                payload = blob[pos:pos + length]
                pos += length
                seg = TcpSegment(lo, hi, seq, flags, payload, t) if d == 0 else \
                    TcpSegment(hi, lo, seq, flags, payload, t)
                for out in feed(seg):
                    segment(out)
        if kinds:
            yield pd.DataFrame({"kind": kinds, "json": jsons})
    kinds, jsons = [], []
    finish(kinds, jsons)
    if kinds:
        yield pd.DataFrame({"kind": kinds, "json": jsons})


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
    files = expand(paths)
    transcripts = [f for f in files if is_transcript(f)]
    captures = capture_sets([f for f in files if not is_transcript(f)])
    classic = _classic(spark)
    cores = int(spark.sparkContext.defaultParallelism) if classic else 2
    frames = []
    if captures:
        rows = [(set_label(group), k, str(f)) for group in captures for k, f in enumerate(group)]
        rows = [(label, i, path) for i, (label, _k, path) in enumerate(rows)]   # fileno: capture order
        parts = partitions or max(2 * cores, 8)
        # one task per file: a range of the files' numbers, one per partition (no rows shipped from the
        # driver, no sampling job as repartitionByRange would run); the task reads `rows` from its closure
        packed = spark.range(0, len(rows), 1, len(rows)).mapInPandas(partial(_pack_files, rows), PACKED_SCHEMA)
        frames.append(packed.repartition(parts, "conn").sortWithinPartitions("conn", "fileno", "chunk")
                      .mapInPandas(_judge_packed, OUT_SCHEMA))
    if transcripts:
        conns = [c for p in transcripts for c in cut_connections(p)]
        bins = min(partitions or 2 * cores, len(conns)) or 1
        blobs = [pickle.dumps(c, protocol=pickle.HIGHEST_PROTOCOL) for c in conns]
        load = [0] * bins                        # biggest connection first into the emptiest bin
        trows = []
        for i in sorted(range(len(blobs)), key=lambda k: -len(blobs[k])):
            b = load.index(min(load))
            load[b] += len(blobs[i])
            trows.append((i, b, blobs[i]))
        df = spark.createDataFrame(trows, "cid INT, bin INT, blob BINARY").repartitionByRange(bins, "bin")
        frames.append(df.mapInPandas(_judge_partition, OUT_SCHEMA))
    t1 = time.perf_counter()
    if not frames:
        return [], [], {"cut_s": t1 - t0, "judge_s": 0.0}
    out_df = frames[0] if len(frames) == 1 else frames[0].unionByName(frames[1])
    batch = "spark.sql.execution.arrow.maxRecordsPerBatch"
    before = spark.conf.get(batch, None)
    spark.conf.set(batch, str(max(1, (64 << 20) // CHUNK_BYTES)))     # rows of up to CHUNK_BYTES each
    try:
        out = out_df.collect()
    finally:
        if before is None:
            spark.conf.unset(batch)
        else:
            spark.conf.set(batch, before)
    t2 = time.perf_counter()
    errors = [json.loads(r["json"]) for r in out if r["kind"] == "unreadable"]
    if errors:
        raise getattr(_errors, errors[0]["error"], NotACapture)(errors[0]["message"])
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
    spark = session(target, app_name="amqp-conformance-check", log_file=reports / "spark-check.log",
                    local_config=LOCAL_CONFIG, local_java_options=LOCAL_JAVA_OPTIONS)
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
    rows = write_traffic_findings(history, run_id, findings)
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
