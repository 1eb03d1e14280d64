"""Streaming receiver benchmark: the project's peer against python-qpid-proton's receiver, taking N messages
from a preloaded queue under a credit window (Part 2 §2.6.9, Figure 2.45), on managed brokers. Prints JSON.

Each run: a fresh queue is preloaded with N distinct 100-byte bodies by a proton sender (not timed); the
depth is checked where the profile can tell it (RabbitMQ: the management node; the Qpid Proton C example
broker has no depth query, so there the preload's N accepted dispositions are the check). Then one receiver
takes all N messages; the time runs from the connect to the last message received, and every body is
checked afterwards (all N, in queue order, byte-exact).

- ours: `conformance.peer.Peer` as a scripted receiver: header/SASL/open, begin (incoming-window 2048),
  attach (snd-settle-mode mixed, rcv-settle-mode first, like proton's), flow(link-credit=WINDOW); then
  `peer.expect(Transfer)` per message. When the credit left falls to WINDOW/2 (the 2.6.9 case's threshold)
  it sends one disposition(role=receiver, first..last, settled, accepted) covering every unsettled
  delivery received so far (§2.7.6: a disposition may cover a range of delivery-ids) and one flow setting
  link-credit back to WINDOW; deliveries the broker sent settled get no disposition (like proton).
  Every frame in and out is still recorded in the peer's transcript.
- proton: `proton.handlers.MessagingHandler(prefetch=WINDOW, auto_accept=True)` on a
  `proton.reactor.Container`: proton tops credit up on every delivery and accepts+settles each unsettled
  delivery; proton-c coalesces what it writes (flows, and dispositions of consecutive delivery-ids with
  the same outcome, into first..last ranges) per I/O cycle.

Every timed run, ours and proton's alike, runs under the same collector policy (`gc_policy`: the heap
collected, what lives before the run frozen, young collections every 50,000 allocations; restored after).
Runs alternate (ours, proton, ours, proton, ...; --repeat each). The JSON gives messages/s (median and
every run), ratio = median(ours) / median(proton), frames and bytes received and sent by ours (from its
transcript), frames in/out counted by proton's transport, the CPU time of the process during each run, and
`proton_wire`: what a traced proton receiver (one extra, untimed run) sent frame by frame.

Usage: .venv/bin/python benchmarks/stream.py [--broker rabbitmq-4.0|qpid-proton-c|all] [--messages 100000]
       [--window 1000] [--repeat 3] [--trace-messages 20000]
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import os
import platform
import re
import statistics
import sys
import time
import uuid
from collections import Counter

import proton
from proton import Message
from proton.handlers import MessagingHandler
from proton.reactor import Container

from conformance import brokers
from conformance.errors import ConformanceError
from conformance.peer import Peer, Timeouts
from conformance.wire import Attach, Data, Transfer, decode_all

BODY_SIZE = 100
BROKERS = ("rabbitmq-4.0", "qpid-proton-c")
TARGET_RATIO = 3.0


def bodies_for(n: int, tag: str) -> list[bytes]:
    head = tag.encode()[:40]
    return [(b"%08d:" % i + head).ljust(BODY_SIZE, b".") for i in range(n)]


def proton_url(handle) -> tuple[str, dict]:
    """The broker's URL and the connect options proton needs for the profile's SASL mechanism."""
    mech = handle.sasl_mechanism
    opts: dict = {}
    if mech == "PLAIN":
        opts = {"allowed_mechs": "PLAIN", "allow_insecure_mechs": True}
    elif mech == "ANONYMOUS":
        opts = {"allowed_mechs": "ANONYMOUS"}
    return handle.url, opts


# -- preloading (proton sender, not timed) -------------------------------------------------------------------

class _Preloader(MessagingHandler):
    def __init__(self, url, opts, address, bodies):
        super().__init__(auto_settle=True)
        self.url, self.opts, self.address, self.bodies = url, opts, address, bodies
        self.sent = self.accepted = 0
        self.error = None

    def on_start(self, event):
        conn = event.container.connect(self.url, **self.opts)
        event.container.create_sender(conn, self.address)

    def on_sendable(self, event):
        sender = event.sender
        while sender.credit and self.sent < len(self.bodies):
            sender.send(Message(body=self.bodies[self.sent], inferred=True))
            self.sent += 1

    def on_accepted(self, event):
        self.accepted += 1
        if self.accepted == len(self.bodies):
            event.connection.close()

    def on_rejected(self, event):
        self.error = "the broker rejected a preloaded message"
        event.connection.close()

    def on_transport_error(self, event):
        self.error = f"preload transport error: {event.transport.condition}"


def preload(handle, queue: str, bodies: list[bytes]) -> dict:
    url, opts = proton_url(handle)
    p = _Preloader(url, opts, handle.queue_address(queue, "target"), bodies)
    t = time.perf_counter()
    Container(p).run()
    if p.error or p.accepted != len(bodies):
        raise SystemExit(f"error: preloading {queue} failed ({p.error or f'{p.accepted} of {len(bodies)} accepted'})")
    depth = handle.queue_depth(queue)
    if depth is not None and depth != len(bodies):
        raise SystemExit(f"error: {queue} holds {depth} messages after preloading {len(bodies)}")
    return {"preload_s": round(time.perf_counter() - t, 2), "accepted": p.accepted,
            "queue_depth": depth if depth is not None else "not queryable (profile has no depth action)"}


# -- the two receivers ---------------------------------------------------------------------------------------

def receive_ours(handle, queue: str, n: int, window: int, threshold: int | None = None) -> dict:
    """The peer as a receiver (Figure 2.45): credit topped up to `window` when half of it is used."""
    cpu0, t0 = time.process_time(), time.perf_counter()
    peer = Peer.connect(handle.url, tls=handle.tls, timeouts=Timeouts(frame=30.0))
    try:
        peer.handshake(sasl=handle.sasl_mechanism, container_id=f"stream-bench-{uuid.uuid4().hex[:6]}")
        peer.begin(incoming_window=2048, outgoing_window=2048)
        peer.attach_receiver("stream-bench", handle.queue_address(queue, "source"), handle=0,
                             snd_settle_mode=2, rcv_settle_mode=0)
        peer.expect(Attach)
        peer.flow(handle=0, link_credit=window)
        payloads = []
        credit = window
        unsettled_first = unsettled_last = None
        settled_by_disposition = 0
        threshold = window // 2 if threshold is None else threshold
        for received in range(1, n + 1):
            frame = peer.expect(Transfer)
            t = frame.body
            payloads.append(frame.payload)
            credit -= 1
            if not t.settled:
                if unsettled_first is None:
                    unsettled_first = t.delivery_id
                unsettled_last = t.delivery_id
                settled_by_disposition += 1
            if credit <= threshold or received == n:
                if unsettled_first is not None:
                    peer.disposition(first=unsettled_first,
                                     last=unsettled_last if unsettled_last != unsettled_first else None,
                                     settled=True)
                    unsettled_first = unsettled_last = None
                if received < n:
                    peer.flow(handle=0, link_credit=window)
                    credit = window
        t1 = time.perf_counter()
        cpu1 = time.process_time()
        peer.detach(handle=0, closed=True)
        peer.close_connection()
    finally:
        peer.disconnect()
    entries = peer.transcript.snapshot()
    frames_in = [e for e in entries if e.direction == "in"]
    frames_out = [e for e in entries if e.direction == "out"]
    sent = Counter(e.name for e in frames_out)
    return {"seconds": t1 - t0, "cpu_s": cpu1 - cpu0, "payloads": payloads,
            "frames_in": len(frames_in), "bytes_in": sum(len(e.raw) for e in frames_in),
            "frames_out": len(frames_out), "bytes_out": sum(len(e.raw) for e in frames_out),
            "sent": dict(sent), "dispositions_cover_deliveries": settled_by_disposition,
            "received": dict(Counter(e.name for e in frames_in))}


class _ProtonReceiver(MessagingHandler):
    def __init__(self, url, opts, address, n, window, tracer=None):
        super().__init__(prefetch=window, auto_accept=True)
        self.url, self.opts, self.address, self.n = url, opts, address, n
        self.bodies: list = []
        self.t1 = None
        self.transport = None
        self.tracer = tracer
        self.error = None

    def on_start(self, event):
        conn = event.container.connect(self.url, **self.opts)
        event.container.create_receiver(conn, self.address)

    def on_connection_bound(self, event):
        self.transport = event.transport
        if self.tracer is not None:
            event.transport.trace(proton.Transport.TRACE_FRM)
            event.transport.tracer = self.tracer

    def on_message(self, event):
        self.bodies.append(bytes(event.message.body))   # a memoryview into a buffer proton reuses
        if len(self.bodies) == self.n:
            self.t1 = time.perf_counter()
            event.receiver.close()
            event.connection.close()

    def on_transport_error(self, event):
        self.error = f"transport error: {event.transport.condition}"



def receive_proton(handle, queue: str, n: int, window: int, tracer=None) -> dict:
    url, opts = proton_url(handle)
    r = _ProtonReceiver(url, opts, handle.queue_address(queue, "source"), n, window, tracer)
    cpu0, t0 = time.process_time(), time.perf_counter()
    Container(r).run()
    cpu1 = time.process_time()
    if r.t1 is None:
        raise SystemExit(f"error: proton's receiver got {len(r.bodies)} of {n} messages ({r.error or 'no error'})")
    return {"seconds": r.t1 - t0, "cpu_s": cpu1 - cpu0, "bodies": r.bodies,
            "frames_in": r.transport.frames_input if r.transport else None,
            "frames_out": r.transport.frames_output if r.transport else None}


def body_of(payload: bytes) -> bytes | None:
    for section in decode_all(payload):
        if isinstance(section, Data):
            return bytes(section.value)
    return None


# -- one broker ----------------------------------------------------------------------------------------------

GC_THRESHOLD = (50_000, 20, 100)   # gen-0 collection every 50 000 net container allocations (default 700)


@contextlib.contextmanager
def gc_policy():
    """The collector's settings for one timed run, the same for ours and proton's: the run starts from a
    collected heap, what lives before it (modules, the broker handle, earlier runs' garbage-free objects) is
    frozen out of the collector's scans (gc.freeze), and young collections come every GC_THRESHOLD[0]
    allocations instead of 700. Everything is restored afterwards. A stream keeps every frame (the
    transcript, the bodies): with the default settings the collector rescans them again and again."""
    old = gc.get_threshold()
    gc.collect()
    gc.freeze()
    gc.set_threshold(*GC_THRESHOLD)
    try:
        yield
    finally:
        gc.set_threshold(*old)
        gc.unfreeze()

def traced_proton(handle, n: int, window: int) -> dict:
    """An untimed proton run with frame tracing: what proton's receiver sends, frame by frame."""
    queue = handle.unique_queue("stream-trace")
    handle.create_queue(queue)
    bodies = bodies_for(n, queue)
    preload(handle, queue, bodies)
    lines: list[str] = []
    res = receive_proton(handle, queue, n, window, tracer=lambda transport, line: lines.append(line))
    if [bytes(b) for b in res["bodies"]] != bodies:
        raise SystemExit("error: the traced proton run did not get every body in order")
    out = [ln for ln in lines if "-> " in ln or "->" in ln.split("@", 1)[0]]
    kinds = Counter()
    ranges = 0
    covered = 0
    for ln in out:
        for name in ("@disposition", "@flow", "@transfer", "@detach", "@close", "@end", "@attach", "@begin",
                     "@open", "@sasl-init"):
            if name in ln:
                kinds[name[1:]] += 1
                if name == "@disposition":
                    covered += _disposition_span(ln)
                    ranges += 1
                break
    handle.delete_queue(queue)
    return {"messages": n, "frames_sent": dict(kinds),
            "dispositions_cover_deliveries": covered,
            "mean_deliveries_per_disposition": round(covered / ranges, 1) if ranges else None}


def _disposition_span(line: str) -> int:
    """Deliveries one traced disposition covers (first..last, or first alone)."""
    m = re.search(r"first=(0x[0-9a-fA-F]+|\d+)(?:, last=(0x[0-9a-fA-F]+|\d+))?", line)
    if not m:
        return 0
    first = int(m.group(1), 0)
    last = int(m.group(2), 0) if m.group(2) else first
    return ((last - first) % (1 << 32)) + 1


def bench_broker(name: str, n: int, window: int, repeat: int, trace_n: int, say) -> dict:
    say(f"starting {name}")
    t = time.perf_counter()
    brokers.install_cleanup()          # the node stops at exit and on SIGTERM
    handle = brokers.start(brokers.resolve(name))
    started = time.perf_counter() - t
    try:
        say(f"{name}: warm-up (2000 messages each side)")
        for side in ("ours", "proton"):
            q = handle.unique_queue("stream-warm")
            handle.create_queue(q)
            preload(handle, q, bodies_for(2000, q))
            (receive_ours if side == "ours" else receive_proton)(handle, q, 2000, window)
        proton_wire = None
        if trace_n:
            say(f"{name}: traced proton run ({trace_n} messages, untimed)")
            proton_wire = traced_proton(handle, trace_n, window)
        runs = {"ours": [], "proton": []}
        for i in range(repeat):
            for side in ("ours", "proton"):
                queue = handle.unique_queue(f"stream-{side}")
                handle.create_queue(queue)
                bodies = bodies_for(n, queue)
                say(f"{name}: run {i + 1}/{repeat} {side}: preloading {n}")
                pre = preload(handle, queue, bodies)
                with gc_policy():     # the same for both sides
                    if side == "ours":
                        res = receive_ours(handle, queue, n, window)
                    else:
                        res = receive_proton(handle, queue, n, window)
                if side == "ours":
                    got = [body_of(p) for p in res.pop("payloads")]
                else:
                    got = [bytes(b) for b in res.pop("bodies")]
                ok = got == bodies
                if not ok:
                    wrong = next((k for k, (a, b) in enumerate(zip(got, bodies)) if a != b), min(len(got), n))
                    raise SystemExit(f"error: {side} on {name} got wrong bodies (first difference at message "
                                     f"{wrong}, {len(got)} received)")
                rate = n / res["seconds"]
                run = {"messages_per_s": round(rate), "seconds": round(res["seconds"], 3),
                       "cpu_s": round(res["cpu_s"], 3), "bodies_ok": ok, **pre,
                       **{k: v for k, v in res.items() if k not in ("seconds", "cpu_s")}}
                runs[side].append(run)
                say(f"{name}: {side}: {rate:,.0f} messages/s (cpu {res['cpu_s']:.2f} s)")
                handle.delete_queue(queue)
        med = {side: statistics.median(r["messages_per_s"] for r in runs[side]) for side in runs}
        ratio = med["ours"] / med["proton"] if med["proton"] else None
        return {"broker": name, "product": handle.product, "version": handle.version,
                "start_s": round(started, 2), "messages": n, "window": window, "body_bytes": BODY_SIZE,
                "ours_messages_per_s": {"median": round(med["ours"]), "all": [r["messages_per_s"] for r in runs["ours"]]},
                "proton_messages_per_s": {"median": round(med["proton"]),
                                          "all": [r["messages_per_s"] for r in runs["proton"]]},
                "ratio": round(ratio, 2) if ratio else None,
                "target_met": bool(ratio and ratio >= TARGET_RATIO),
                "ours_cpu_s": {"median": statistics.median(r["cpu_s"] for r in runs["ours"]),
                               "all": [r["cpu_s"] for r in runs["ours"]]},
                "proton_cpu_s": {"median": statistics.median(r["cpu_s"] for r in runs["proton"]),
                                 "all": [r["cpu_s"] for r in runs["proton"]]},
                "proton_wire": proton_wire, "runs": runs}
    finally:
        if handle.managed is not None:
            handle.managed.stop()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--broker", default="all", help=f"one of {', '.join(BROKERS)} or all (default)")
    ap.add_argument("--messages", type=int, default=100_000)
    ap.add_argument("--window", type=int, default=1000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--trace-messages", type=int, default=20_000,
                    help="messages of the untimed, traced proton run (0: skip it)")
    ap.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    args = ap.parse_args(argv)
    names = BROKERS if args.broker == "all" else (args.broker,)
    bad = [b for b in names if b not in BROKERS]
    if bad:
        print(f"error: unknown broker {bad[0]!r}; use one of {', '.join(BROKERS)} or all", file=sys.stderr)
        return 2
    if args.messages < 1 or args.window < 2 or args.repeat < 1 or args.trace_messages < 0:
        print("error: --messages and --repeat must be at least 1, --window at least 2, --trace-messages >= 0",
              file=sys.stderr)
        return 2

    def say(msg):
        if not args.quiet:
            print(f"[stream] {msg}", file=sys.stderr, flush=True)

    results = []
    try:
        for name in names:
            results.append(bench_broker(name, args.messages, args.window, args.repeat, args.trace_messages, say))
    except ConformanceError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return exc.exit_code
    print(json.dumps({"benchmark": "stream", "python": platform.python_version(), "proton": proton.VERSION,
                      "cpus": os.cpu_count(), "target": f"ours >= {TARGET_RATIO:g} x proton on every broker",
                      "target_met": all(r["target_met"] for r in results), "brokers": results}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
