"""Barrier ordering: does a broker's answer to a request come before the answer to the barrier round trip that
follows it (`SessionScript.barrier`), and if not, how much later? Prints one JSON object.

Why: the cases prove that an answer (to drain, echo) or a transfer is not coming by a barrier round trip the
broker must answer, then a quiet period (`SessionScript.answer_or_absence`, `expect_no_transfer`). That is
sound only if whatever the broker sends for the request arrives before the barrier's answer, or within the
quiet period after it. This script measures it, per broker and per kind of request, against both barriers
(a receiving link on the same queue, `through_queue=True`; a sending link on the same session; a begin/end on
another channel, `on_connection=True`).

Probes (each repeated N times on a fresh queue and connection):
- drain:     3 queued, flow(link-credit=10, drain=true) -> the drained flow (link-credit 0) vs the barrier
- echo-link: 2 queued, flow(link-credit=0, echo=true) on a receiving link -> the broker's flow vs the barrier
- echo-send: flow(echo=true) on a sending link (publisher) -> the broker's flow vs the barrier
- credit:    100 queued, flow(link-credit=50) twice (2.6.7/3) -> the last transfer vs the barrier
For each: how often the answer came at all, how often after the barrier's answer, and by how much (ms).
The barrier is sent right after the request, so "after" measures the broker's reordering, not our latency.

Usage: .venv/bin/python benchmarks/barrier_order.py BROKER [N] [--url URL]     (BROKER: a managed broker name)
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from types import SimpleNamespace

from conformance import brokers
from conformance.casekit.context import CaseContext
from conformance.peer import settle
from conformance.options import RunOptions
from conformance.wire import Attach, Begin, Flow, Transfer

WATCH = 1.0          # how long late frames are watched for after the barrier (s): twice the default quiet period


def _times(peer, mark_index: int):
    """(arrival time, frame) of every incoming frame in the transcript from `mark_index` (transcript index)."""
    return [(e.t, e.item) for e in peer.transcript.snapshot() if e.direction == "in" and e.index >= mark_index]


def _last_out(peer) -> int:
    """The index the next transcript entry gets (frames from it on came after what we send next)."""
    return peer.transcript.snapshot()[-1].index + 1


def probe(ctx, kind: str, barrier: str) -> dict:
    if kind == "echo-send":
        queue = ctx.queue()
        session = ctx.session()
        link = session.attach_sender(queue, initial_delivery_count=0)
        link.expect_credit(requirement="2.6.7/initial-flow-state")
        settle(link.peer, 0.05)
        start = _last_out(link.peer)
        link.peer.flow(session.channel, handle=link.handle, link_credit=None, echo=True)
        answer = lambda f: isinstance(f.body, Flow) and f.body.handle == link.broker_handle
    else:
        queue = ctx.queue(preload={"drain": 3, "echo-link": 2, "credit": 100}[kind])
        session = ctx.session()
        link = session.attach_receiver(queue)
        start = _last_out(link.peer)
        if kind == "drain":
            link.flow(link_credit=10, drain=True)
            answer = lambda f: isinstance(f.body, Flow) and f.body.handle == link.broker_handle and f.body.link_credit == 0
        elif kind == "echo-link":
            link.flow(link_credit=0, echo=True)
            answer = lambda f: isinstance(f.body, Flow) and f.body.handle == link.broker_handle
        else:
            base = link.delivery_count
            link.flow(link_credit=50, delivery_count=base)
            link.flow(link_credit=50, delivery_count=base)
            answer = lambda f: isinstance(f.body, Transfer) and f.body.handle == link.broker_handle
    peer = link.peer
    t0 = time.monotonic()
    session.barrier(queue, through_queue=barrier == "queue", on_connection=barrier == "connection")
    barrier_rtt = time.monotonic() - t0
    settle(peer, WATCH, rounds=3)    # bounded-wait-ok: the measurement window for late frames
    frames = _times(peer, start)
    barrier_t = next(t for t, f in frames if (isinstance(getattr(f, "body", None), Attach) and "barrier" in f.body.name)
                     or isinstance(getattr(f, "body", None), Begin))
    answers = [t for t, f in frames if getattr(f, "body", None) is not None and answer(f)]
    last = max(answers) if answers else None
    return {"answered": bool(answers), "count": len(answers), "barrier_rtt_ms": barrier_rtt * 1000,
            "gap_ms": None if last is None else (last - barrier_t) * 1000}


def main(argv: list[str]) -> int:
    args = [a for a in argv if not a.startswith("--")]
    name = args[0]
    n = int(args[1]) if len(args) > 1 else 20
    brokers.install_cleanup()          # the node stops at exit and on SIGTERM
    handle = brokers.start(brokers.resolve(name), timeout=30)
    out = {"broker": name, "version": handle.version, "n": n, "watch_s": WATCH, "probes": {}}
    try:
        options = RunOptions()
        for kind in ("drain", "echo-link", "echo-send", "credit"):
            for barrier in (("queue", "session", "connection") if kind != "echo-send" else ("session", "connection")):
                rows = []
                for i in range(n):
                    ctx = CaseContext(SimpleNamespace(id=f"order/{i}"), handle, options)
                    try:
                        rows.append(probe(ctx, kind, barrier))
                    except Exception as exc:            # a probe that broke is counted, not fatal
                        rows.append({"error": f"{type(exc).__name__}: {exc}"[:200]})
                    finally:
                        ctx.close()
                ok = [r for r in rows if "error" not in r]
                gaps = [r["gap_ms"] for r in ok if r["gap_ms"] is not None]
                late = [g for g in gaps if g > 0]
                out["probes"][f"{kind}/{barrier}-barrier"] = {
                    "runs": len(rows), "errors": len(rows) - len(ok), "answered": sum(r["answered"] for r in ok),
                    "after_barrier": len(late), "max_late_ms": round(max(late), 2) if late else 0.0,
                    "median_gap_ms": round(statistics.median(gaps), 2) if gaps else None,
                    "counts": sorted({r["count"] for r in ok}),
                    "barrier_rtt_ms_median": round(statistics.median(r["barrier_rtt_ms"] for r in ok), 2) if ok else None,
                    "first_error": next((r["error"] for r in rows if "error" in r), None)}
    finally:
        handle.managed.stop()
    print(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
