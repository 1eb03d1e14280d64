"""Observe / check benchmark: what judging real traffic costs, and what the recording proxy costs the traffic.
Prints JSON.

In one run, against one broker (a URL with the profile of a managed broker, e.g. a node started with
`amqp-conformance brokers up rabbitmq-4.0`):

- proxy: python-qpid-proton's streaming receiver (benchmarks/stream.py's: N preloaded 100-byte messages under a
  credit window) directly and through `amqp-conformance observe` (a separate process, judging live), runs
  alternating; messages/s median of each and the ratio proxied / direct (the goal: >= 0.9). Added latency:
  a proton BlockingConnection sender's round trip per message (send, wait for the broker's disposition),
  median over K messages, directly and through the proxy.
- capture: one streaming run recorded by tshark on loopback (real traffic, not generated records); then the
  same file judged by `check` in one process (frames judged per second), by `check --spark` on local[1] and
  local[2] (driver cut + judging; the session's start-up is not counted), and dissected by tshark with its
  AMQP dissector, fields only (`-T fields -e amqp.performative`), as the anchor.

Figures depend on the machine's load: quote them with it (the development machine has 2 shared cores).

Usage: .venv/bin/python benchmarks/observe.py --url amqp://guest:guest@127.0.0.1:PORT|rabbitmq-4.0 [--profile rabbitmq-4]
       [--messages 20000] [--window 1000] [--repeat 3] [--latency 300] [--capture-messages 50000] [--no-spark]
       [--proxy-only]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).parent))

from stream import bodies_for, gc_policy, preload, receive_proton  # noqa: E402

from conformance import brokers  # noqa: E402
from conformance.peer.url import parse_url  # noqa: E402


class Via:
    """A broker handle whose URL points elsewhere (the proxy); everything else is the broker's."""

    def __init__(self, handle, url: str):
        self._handle, self.url = handle, url

    def __getattr__(self, name):
        return getattr(self._handle, name)


def start_observe(upstream: str, reports: Path) -> tuple[subprocess.Popen, str]:
    env = dict(os.environ, PYTHONPATH=str(ROOT), PYTHONUNBUFFERED="1")
    proc = subprocess.Popen([sys.executable, "-m", "conformance.cli", "observe", "--listen", "127.0.0.1:0",
                             "--upstream", upstream, "--reports-dir", str(reports)],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    m = re.search(r"amqp://127\.0\.0\.1:(\d+)", proc.stdout.readline())
    if not m:
        raise SystemExit("error: observe did not start")
    up = parse_url(upstream)
    auth = f"{up.user}:{up.password}@" if up.user is not None else ""
    return proc, f"amqp://{auth}127.0.0.1:{m.group(1)}"


def stop_observe(proc) -> dict:
    import signal
    proc.send_signal(signal.SIGINT)
    out, _ = proc.communicate(timeout=600)
    m = re.search(r"(\d+) connection\(s\) observed, (\d+) frames judged, (\d+) finding", out)
    return {"connections": int(m.group(1)), "frames": int(m.group(2)), "findings": int(m.group(3))} if m else \
        {"output_tail": out[-500:]}


def stream_once(handle, n: int, window: int) -> float:
    queue = handle.unique_queue("observe-bench")
    handle.create_queue(queue)
    bodies = bodies_for(n, queue)
    preload(handle, queue, bodies)
    with gc_policy():
        res = receive_proton(handle, queue, n, window)
    if [bytes(b) for b in res["bodies"]] != bodies:
        raise SystemExit("error: the streaming receiver got wrong bodies")
    try:
        handle.delete_queue(queue)
    except Exception:  # noqa: BLE001 - cleanup only
        pass
    return n / res["seconds"]


def latency(url: str, address: str, k: int) -> float:
    from proton import Message
    from proton.utils import BlockingConnection
    conn = BlockingConnection(url, timeout=30, allowed_mechs="PLAIN", allow_insecure_mechs=True)
    try:
        sender = conn.create_sender(address)
        times = []
        for i in range(k):
            t = time.perf_counter()
            sender.send(Message(body=f"ping {i}"))          # returns when the broker settled it
            times.append(time.perf_counter() - t)
    finally:
        conn.close()
    return statistics.median(times[min(10, k // 10):])


def capture(handle, port: int, n: int, window: int, out: Path) -> dict:
    ts = subprocess.Popen(["tshark", "-i", "lo", "-f", f"tcp port {port}", "-w", str(out)],
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 30
    while "Capturing on" not in (line := ts.stderr.readline()):
        if not line or time.monotonic() > deadline:
            raise SystemExit("error: tshark did not start capturing")
    rate = stream_once(handle, n, window)
    time.sleep(1.0)  # bounded-wait-ok: the last packets reach the capture file before tshark stops
    ts.terminate()
    ts.wait(timeout=60)
    return {"file": str(out), "bytes": out.stat().st_size, "streaming_msgs_per_s_while_capturing": round(rate)}


def judge_rates(path: Path, port: int, spark: bool) -> dict:
    from conformance.traffic.check import judge_all
    t = time.perf_counter()
    result = judge_all([path])
    one = time.perf_counter() - t
    frames = sum(c.frames for c in result.connections)
    out = {"frames": frames, "connections": len(result.connections), "findings": len(result.findings),
           "one_process": {"seconds": round(one, 2), "frames_per_s": round(frames / one)}}
    t = time.perf_counter()
    r = subprocess.run(["tshark", "-r", str(path), "-d", f"tcp.port=={port},amqp", "-T", "fields",
                        "-e", "amqp.performative"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    ts = time.perf_counter() - t
    out["tshark_fields"] = {"seconds": round(ts, 2), "frames_per_s": round(frames / ts), "lines": r.stdout.count(b"\n")}
    if spark:
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        from conformance.history.spark import SparkTarget, session
        from conformance.traffic.spark import judge_on_spark
        for master in ("local[1]", "local[2]"):
            s = session(SparkTarget(master=master), log_file=Path(tempfile.gettempdir()) / "observe-bench-spark.log")
            judge_on_spark(s, [path])                        # warm-up: Python workers started
            t = time.perf_counter()
            summaries, findings, timing = judge_on_spark(s, [path])
            sec = time.perf_counter() - t
            out[f"spark_{master}"] = {"seconds": round(sec, 2), "frames_per_s": round(frames / sec),
                                      "cut_s": round(timing["cut_s"], 2), "judge_s": round(timing["judge_s"], 2),
                                      "same_findings": len(findings) == len(result.findings)}
            s.stop()
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--url", required=True)
    ap.add_argument("--profile", default="rabbitmq-4")
    ap.add_argument("--messages", type=int, default=20_000)
    ap.add_argument("--window", type=int, default=1000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--latency", type=int, default=300)
    ap.add_argument("--capture-messages", type=int, default=50_000)
    ap.add_argument("--no-spark", action="store_true")
    ap.add_argument("--proxy-only", action="store_true", help="measure the proxy only (no capture, no judging)")
    args = ap.parse_args(argv)
    say = lambda m: print(f"[observe-bench] {m}", file=sys.stderr, flush=True)   # noqa: E731
    brokers.install_cleanup()          # a managed node (--url rabbitmq-4.0) stops at exit and on SIGTERM
    handle = brokers.start(brokers.resolve(args.url, args.profile if "://" in args.url else None))
    args.url = handle.url
    port = parse_url(args.url).port
    work = Path(tempfile.mkdtemp(prefix="observe-bench-"))
    report: dict = {"machine": {"cpus": os.cpu_count(), "load_avg": os.getloadavg(), "python": platform.python_version(),
                                "note": "loaded, shared machine: figures are indicative"},
                    "broker": f"{handle.product} {handle.version}", "messages": args.messages, "window": args.window}
    proc, proxy_url = start_observe(args.url, work / "reports")
    proxied = Via(handle, proxy_url)
    try:
        say("warm-up")
        stream_once(handle, 2000, args.window)
        stream_once(proxied, 2000, args.window)
        runs = {"direct": [], "proxied": []}
        for i in range(args.repeat):
            for side, h in (("direct", handle), ("proxied", proxied)):
                say(f"run {i + 1}/{args.repeat} {side}")
                runs[side].append(round(stream_once(h, args.messages, args.window)))
                say(f"  {side}: {runs[side][-1]} messages/s")
        q = handle.unique_queue("observe-latency")
        handle.create_queue(q)
        address = handle.queue_address(q, "target")
        say("latency")
        lat_direct = latency(args.url, address, args.latency) if args.latency else float("nan")
        lat_proxied = latency(proxy_url, address, args.latency) if args.latency else float("nan")
    finally:
        observed = stop_observe(proc)
    d, p = statistics.median(runs["direct"]), statistics.median(runs["proxied"])
    report["proxy"] = {"direct_msgs_per_s": runs["direct"], "proxied_msgs_per_s": runs["proxied"],
                       "ratio": round(p / d, 3), "goal": ">= 0.9",
                       "ratio_of_means": round(statistics.mean(runs["proxied"]) / statistics.mean(runs["direct"]), 3),
                       "pairwise_ratios": [round(b / a, 3) for a, b in zip(runs["direct"], runs["proxied"])],
                       "latency_ms": {"direct": round(lat_direct * 1e3, 3), "proxied": round(lat_proxied * 1e3, 3),
                                      "added": round((lat_proxied - lat_direct) * 1e3, 3)},
                       "observed": observed}
    if args.proxy_only:
        print(json.dumps(report, indent=2))
        return 0
    say(f"capture of {args.capture_messages} streamed messages")
    cap = work / "stream.pcapng"
    report["capture"] = capture(handle, port, args.capture_messages, args.window, cap)
    say("judging the capture")
    report["judging"] = judge_rates(cap, port, not args.no_spark)
    print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
