"""Mutant-proxy overhead on the streaming case (2.6.9/1, asynchronous notification): messages per second
delivered to the peer, directly and through the proxy without fault. Prints one JSON object.

What is measured: the 2.6.9/1 case runs as in a conformance run (1000 messages under a credit window of
200 topped up below 100, plus the final grant). Its transcript gives the streaming rate: transfers received
divided by the time from the peer's first flow on the link to the last transfer received (queue creation
and preloading, which never go through the proxy, are left out). Direct and proxied runs alternate, ROUNDS
of each; the medians are reported, with overhead % = (direct - proxied) / direct * 100. Each run also
reports its verdict: the proxy must not change it.

Usage: .venv/bin/python benchmarks/proxy.py [--broker rabbitmq-4.0 | --reference] [--rounds 5]
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys

from conformance.cases import load_all
from conformance.faultproxy.handle import ProxiedBroker
from conformance.options import RunOptions
from conformance.casekit.executor import run_case

CASE = "2.6.9/1"


def streaming_rate(result) -> tuple[int, float]:
    """(transfers received, messages/s) from the case's first connection transcript."""
    entries = result.transcripts[0]["entries"]
    start = next(e["t"] for e in entries if e["direction"] == "out" and e["name"] == "flow"
                 and (e.get("fields") or {}).get("link_credit") is not None)
    transfers = [e["t"] for e in entries if e["direction"] == "in" and e["name"] == "transfer"]
    elapsed = transfers[-1] - start
    return len(transfers), len(transfers) / elapsed if elapsed > 0 else float("inf")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--broker", default="rabbitmq-4.0", help="managed broker name or amqp:// URL")
    ap.add_argument("--reference", action="store_true", help="use the suite's in-process reference broker")
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args(argv)
    spec = load_all()[CASE]
    options = RunOptions()
    if args.reference:
        from conformance.reference.handle import ReferenceBrokerHandle
        broker, stop = ReferenceBrokerHandle(), None
        stop = broker.stop
    else:
        from conformance import brokers
        brokers.install_cleanup()          # the node stops at exit and on SIGTERM
        broker = brokers.start(brokers.resolve(args.broker))
        stop = broker.managed.stop if broker.managed is not None else (lambda: None)
    proxied = ProxiedBroker(broker, None)
    runs = {"direct": [], "proxy": []}
    verdicts = {"direct": [], "proxy": []}
    try:
        run_case(spec, broker, options)                       # warm-up (imports, broker caches), not counted
        for _ in range(args.rounds):
            for label, target in (("direct", broker), ("proxy", proxied)):
                result = run_case(spec, target, options)
                verdicts[label].append(result.verdict.value)
                count, rate = streaming_rate(result)
                runs[label].append({"transfers": count, "messages_per_s": round(rate, 1)})
    finally:
        stats = proxied.proxy.stats
        proxied.stop_proxy()
        stop()
    direct = statistics.median(r["messages_per_s"] for r in runs["direct"])
    proxy = statistics.median(r["messages_per_s"] for r in runs["proxy"])
    print(json.dumps({
        "benchmark": "fault-injecting proxy overhead", "case": CASE,
        "broker": getattr(broker, "name", "reference"), "product": getattr(broker, "product", None),
        "version": getattr(broker, "version", None), "rounds": args.rounds,
        "python": platform.python_version(), "machine": platform.machine(),
        "messages_per_s": {"direct": round(direct, 1), "proxy": round(proxy, 1)},
        "overhead_pct": round((direct - proxy) / direct * 100, 1),
        "verdicts": verdicts,
        "proxy_frames": {"decoded": stats.frames, "reencoded_identically": stats.identical,
                         "reencoded_differently": stats.reencoded_differently, "passthrough": stats.passthrough},
        "runs": runs,
    }, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
