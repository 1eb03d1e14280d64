"""`check --spark` at scale against tshark: record a large real capture, then time the three on it. Prints JSON.

Record (`--record DIR`): a managed broker (default qpid-proton-c), dumpcap on loopback filtered to its port,
writing a ring buffer (`-b filesize`: the way long captures are kept), while --pairs processes each stream
batches of messages through their own queue as real applications do (python-qpid-proton: a sender that
waits for the broker's outcomes, then a receiver under a credit window, benchmarks/stream.py's), until
about --frames AMQP frames were exchanged (estimated from the messages; the judging counts them exactly).

Time (`--capture DIR`, the files of one ring buffer or any capture files), each on an otherwise idle machine:
- `tshark`: its AMQP dissector over the files one after another (`-T fields -e amqp.performative`), the
  anchor; one process, as tshark runs;
- `check --spark local[1]` and `local[2]`: conformance.traffic.spark.judge_on_spark, the session started and
  warmed on a small file first (its start-up is not counted); the same findings at both;
- with --one-process, `check` without Spark too (conformance.traffic.check.judge_all).
The goal (issue #22): local[2] below tshark on >= 10 million frames, and local[2] faster than local[1].

Usage: .venv/bin/python benchmarks/capture_scale.py --record /var/tmp/cap [--frames 10500000] [--pairs 12]
       .venv/bin/python benchmarks/capture_scale.py --capture /var/tmp/cap [--one-process] [--skip-tshark]
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).parent))

FRAMES_PER_MESSAGE = 2.4        # measured on proton-c: proton batches frames and settles the receiver's in ranges


_HANDLE = None                  # the broker's handle, set before the workers fork (it does not pickle)


def _stream_batches(args) -> int:
    """One worker: `batches` rounds of preload (sender, outcomes) + receive (credit window) on its queue."""
    index, batches, size, window = args
    handle = _HANDLE
    from stream import bodies_for, preload, receive_proton
    queue = handle.unique_queue(f"capture-{index}")
    handle.create_queue(queue)
    done = 0
    for b in range(batches):
        bodies = bodies_for(size, f"{queue}-{b}")
        preload(handle, queue, bodies)
        got = receive_proton(handle, queue, size, window)["bodies"]
        if len(got) != size:
            raise SystemExit(f"error: worker {index} got {len(got)} of {size} messages")
        done += size
    return done


def record(out: Path, frames: int, pairs: int, broker: str, window: int, filesize_kb: int) -> dict:
    from conformance import brokers
    from conformance.peer.url import parse_url
    brokers.install_cleanup()
    handle = brokers.start(brokers.resolve(broker))
    port = parse_url(handle.url).port
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    dump = subprocess.Popen(["dumpcap", "-q", "-i", "lo", "-f", f"tcp port {port}", "-b", f"filesize:{filesize_kb}",
                             "-w", str(out / "amqp.pcapng")], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            text=True)
    deadline = time.monotonic() + 30
    while "Capturing on" not in (line := dump.stderr.readline()):
        if not line or time.monotonic() > deadline:
            raise SystemExit("error: dumpcap did not start capturing (is it installed? ./dev setup all)")
    size = 20_000
    batches = max(1, round(frames / FRAMES_PER_MESSAGE / size / pairs))
    global _HANDLE
    _HANDLE = handle
    t0 = time.perf_counter()
    with multiprocessing.get_context("fork").Pool(pairs) as pool:
        messages = sum(pool.map(_stream_batches, [(i, batches, size, window) for i in range(pairs)]))
    seconds = time.perf_counter() - t0
    # the last segments reach the file before dumpcap stops: a round trip of our own on the broker's port
    # goes through the same capture, then dumpcap flushes on SIGTERM
    from stream import bodies_for, preload
    q = handle.unique_queue("capture-end")
    handle.create_queue(q)
    preload(handle, q, bodies_for(1, q))
    dump.terminate()
    dump.wait(timeout=60)
    files = sorted(out.glob("*.pcapng"))
    (out / "amqp-port").write_text(str(port))        # for tshark's decode-as (check finds AMQP by itself)
    return {"port": port, "broker": f"{handle.product} {handle.version}", "pairs": pairs, "messages": messages,
            "record_s": round(seconds, 1), "files": len(files), "bytes": sum(f.stat().st_size for f in files)}


def tshark_time(files: list[Path], port: int | None) -> dict:
    decode = ["-d", f"tcp.port=={port},amqp"] if port else []
    t, cpu0, lines = time.perf_counter(), os.times(), 0
    for f in files:
        r = subprocess.run(["tshark", "-r", str(f), *decode, "-T", "fields", "-e", "amqp.performative"],
                           stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, check=False)
        lines += r.stdout.count(b"\n")
    cpu1 = os.times()
    return {"seconds": round(time.perf_counter() - t, 1),
            "cpu_s": round(cpu1.children_user + cpu1.children_system - cpu0.children_user - cpu0.children_system, 1),
            "lines": lines}


def spark_time(master: str, files: list[Path], warm: Path) -> tuple[dict, list]:
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from conformance.history.spark import SparkTarget, session
    from conformance.traffic.spark import LOCAL_CONFIG, LOCAL_JAVA_OPTIONS, judge_on_spark
    s = session(SparkTarget(master=master), log_file=Path(tempfile.gettempdir()) / "capture-scale-spark.log",
                local_config=LOCAL_CONFIG, local_java_options=LOCAL_JAVA_OPTIONS)     # as `check --spark` has it
    try:
        judge_on_spark(s, [warm])                          # Python workers started, JIT warmed
        t = time.perf_counter()
        summaries, findings, timing = judge_on_spark(s, files)
        sec = time.perf_counter() - t
    finally:
        s.stop()
    frames = sum(c.get("frames", 0) for c in summaries)
    return ({"seconds": round(sec, 1), "frames": frames, "connections": len(summaries), "findings": len(findings),
             "frames_per_s": round(frames / sec)}, sorted(json.dumps(f, sort_keys=True) for f in findings))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--record", type=Path, help="record a capture into this directory (emptied first)")
    ap.add_argument("--capture", type=Path, help="time tshark and check --spark on the capture files here")
    ap.add_argument("--frames", type=int, default=10_500_000)
    ap.add_argument("--pairs", type=int, default=12)
    ap.add_argument("--window", type=int, default=1000)
    ap.add_argument("--broker", default="qpid-proton-c")
    ap.add_argument("--filesize-kb", type=int, default=250_000, help="ring-buffer file size (dumpcap -b filesize)")
    ap.add_argument("--port", type=int, default=None, help="decode this TCP port as AMQP in tshark (default: the amqp-port file --record writes; else 5672 only)")
    ap.add_argument("--one-process", action="store_true", help="also time check without Spark")
    ap.add_argument("--skip-tshark", action="store_true")
    args = ap.parse_args(argv)
    if not args.record and not args.capture:
        ap.error("give --record DIR or --capture DIR")
    out: dict = {"benchmark": "capture_scale", "machine": {"cpus": os.cpu_count(), "python": platform.python_version(),
                                                          "load_avg_at_start": os.getloadavg()}}
    if args.record:
        out["record"] = record(args.record, args.frames, args.pairs, args.broker, args.window, args.filesize_kb)
    if args.capture:
        from conformance.traffic.check import capture_sets, expand
        files = [f for group in capture_sets(expand([args.capture])) for f in group]
        if not files:
            raise SystemExit(f"error: no capture files in {args.capture}")
        out["capture"] = {"files": len(files), "bytes": sum(f.stat().st_size for f in files)}
        port = args.port
        if port is None and (args.capture / "amqp-port").exists():
            port = int((args.capture / "amqp-port").read_text())
        out["capture"]["amqp_port"] = port
        warm = min(files, key=lambda f: f.stat().st_size)
        if not args.skip_tshark:
            out["tshark"] = tshark_time(files, port)
        for master in ("local[2]", "local[1]"):
            out[f"spark_{master}"], findings = spark_time(master, files, warm)
            out.setdefault("_findings", []).append(findings)
        out["same_findings"] = out["_findings"][0] == out["_findings"][1]
        del out["_findings"]
        if args.one_process:
            from conformance.traffic.check import judge_all
            t = time.perf_counter()
            result = judge_all(files)
            out["one_process"] = {"seconds": round(time.perf_counter() - t, 1), "findings": len(result.findings)}
        if "tshark" in out:
            out["goal_met"] = out["spark_local[2]"]["seconds"] < out["tshark"]["seconds"] and \
                out["spark_local[2]"]["frames"] >= 10_000_000
        out["scaling_local1_over_local2"] = round(out["spark_local[1]"]["seconds"] / out["spark_local[2]"]["seconds"], 2)
        out["load_avg_at_end"] = os.getloadavg()
    print(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
