"""Codec benchmark: encode and decode rates of a flow frame and a transfer frame (100-byte payload),
ours against python-qpid-proton's Data codec in the same run. Prints one JSON object.

What each side does per operation (details and rationale in benchmarks/README.md):
- encode, ours: build the composite (`Flow(...)` / `Transfer(...)`) and `encode_frame` it (header +
  performative + payload bytes); proton: build the same described list with the Data API (put_described,
  put_ulong, put_list, put_uint/put_binary/put_bool/put_null), `encode()` it, prepend the 8-byte frame header
  and append the payload.
- decode, ours: `decode_frame` of the whole frame (header checks, every field decoded and type-checked into
  the composite, payload sliced off); proton: `Data.decode` of the frame body, `get_object()` of the described
  list (every field as a Python value), payload sliced off.

Each cell alternates ours and proton in 5 short rounds and reports the median rate of each side.

Usage: .venv/bin/python benchmarks/codec.py [--quick]      (target: ours >= 2x proton in all four cells)
"""

from __future__ import annotations

import json
import platform
import statistics
import struct
import sys
import time

import proton
from proton import Data

from conformance.wire import Flow, Transfer, decode_frame, encode_frame, encode_message, Data as DataSection

PAYLOAD = encode_message(DataSection(b"x" * 95))     # a data section of exactly 100 bytes
assert len(PAYLOAD) == 100
HEADER = struct.Struct(">IBBH")

FLOW_FIELDS = dict(next_incoming_id=0xFFFFFFFC, incoming_window=2048, next_outgoing_id=17, outgoing_window=2048,
                   handle=0, delivery_count=0xFFFFFFFB, link_credit=100, drain=False)


def ours_encode_flow():
    return encode_frame(Flow(**FLOW_FIELDS))


def ours_encode_transfer():
    return encode_frame(Transfer(handle=0, delivery_id=42, delivery_tag=b"\x00\x00\x00\x2a", message_format=0,
                                 settled=False), payload=PAYLOAD)


def proton_encode_flow():
    d = Data()
    d.put_described()
    d.enter()
    d.put_ulong(0x13)
    d.put_list()
    d.enter()
    d.put_uint(0xFFFFFFFC)
    d.put_uint(2048)
    d.put_uint(17)
    d.put_uint(2048)
    d.put_uint(0)
    d.put_uint(0xFFFFFFFB)
    d.put_uint(100)
    d.put_null()          # available
    d.put_bool(False)
    d.exit()
    d.exit()
    body = d.encode()
    return HEADER.pack(8 + len(body), 2, 0, 0) + body


def proton_encode_transfer():
    d = Data()
    d.put_described()
    d.enter()
    d.put_ulong(0x14)
    d.put_list()
    d.enter()
    d.put_uint(0)
    d.put_uint(42)
    d.put_binary(b"\x00\x00\x00\x2a")
    d.put_uint(0)
    d.put_bool(False)
    d.exit()
    d.exit()
    body = d.encode()
    return HEADER.pack(8 + len(body) + len(PAYLOAD), 2, 0, 0) + body + PAYLOAD


def proton_decoder(frame: bytes):
    def decode():
        d = Data()
        doff = frame[4] * 4
        consumed = d.decode(frame[doff:])
        d.rewind()
        d.next()
        obj = d.get_object()
        payload = frame[doff + consumed:]
        return obj, payload
    return decode


def rate(fn, seconds: float) -> float:
    """Calls per second of `fn` over at least `seconds` (batches of 200 calls between clock reads)."""
    n = 0
    batch = 200
    t0 = time.perf_counter()
    deadline = t0 + seconds
    while True:
        for _ in range(batch):
            fn()
        n += batch
        now = time.perf_counter()
        if now >= deadline:
            return n / (now - t0)


def check_equivalent_work() -> None:
    """Both sides produce and read the same frames (so the rates compare like with like)."""
    for ours, theirs in ((ours_encode_flow, proton_encode_flow), (ours_encode_transfer, proton_encode_transfer)):
        a, b = decode_frame(ours()), decode_frame(theirs())
        if (a.body, a.payload) != (b.body, b.payload):
            raise SystemExit(f"benchmark frames differ: {a.body!r} vs {b.body!r}")
        obj, payload = proton_decoder(ours())()
        if int(obj.descriptor) != a.body.DESCRIPTOR or len(obj.value) != len(b.body.present_fields()) + (
                1 if a.body.NAME == "flow" else 0) or payload != a.payload:
            raise SystemExit(f"proton reads a different {a.body.NAME} frame: {obj!r}")


def main(argv: list[str]) -> int:
    unknown = [a for a in argv if a not in ("--quick",)]
    if unknown:
        print(f"codec.py: unknown argument {unknown[0]!r}; usage: python benchmarks/codec.py [--quick]",
              file=sys.stderr)
        return 2
    seconds = 0.2 if "--quick" in argv else 1.0
    rounds = 5                 # ours and proton alternate in short rounds; the median resists machine noise
    check_equivalent_work()
    flow_frame = ours_encode_flow()
    transfer_frame = ours_encode_transfer()
    cells = {
        "flow_encode": (ours_encode_flow, proton_encode_flow),
        "flow_decode": (lambda: decode_frame(flow_frame), proton_decoder(flow_frame)),
        "transfer_encode": (ours_encode_transfer, proton_encode_transfer),
        "transfer_decode": (lambda: decode_frame(transfer_frame), proton_decoder(transfer_frame)),
    }
    results = {}
    for name, (ours, theirs) in cells.items():
        r_ours, r_proton = [], []
        for _ in range(rounds):
            r_ours.append(rate(ours, seconds / rounds))
            r_proton.append(rate(theirs, seconds / rounds))
        r_ours, r_proton = statistics.median(r_ours), statistics.median(r_proton)
        results[name] = {"ours_frames_per_s": round(r_ours), "proton_frames_per_s": round(r_proton),
                         "ratio": round(r_ours / r_proton, 2)}
    report = {
        "benchmark": "codec",
        "python": platform.python_version(),
        "proton": ".".join(map(str, proton.VERSION)),
        "seconds_per_cell_per_side": seconds,
        "frames": {"flow_bytes": len(flow_frame), "transfer_bytes": len(transfer_frame),
                   "transfer_payload_bytes": len(PAYLOAD)},
        "cells": results,
        "target": "ours >= 2x proton in every cell",
        "target_met": all(c["ratio"] >= 2.0 for c in results.values()),
    }
    print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
