"""Property: whatever file `check` is given -- a capture cut, flipped or padded anywhere, a transcript of any
JSON shape, frames in any order with any field values -- it answers with one of its documented exit codes
and never a traceback (an exception out of `main` fails the property, with the input that caused it)."""

from __future__ import annotations

import json
import struct
import tempfile
from pathlib import Path

from capwriter import Conversation, publisher, write_pcap, write_pcapng
from hypothesis import HealthCheck, given, settings, strategies as st

from conformance import errors
from conformance.cli import main
from conformance.wire import (AMQP_HEADER, Attach, Begin, Close, Detach, Disposition, End, Flow, Open, Source, Target,
                              Transfer, encode_frame)

DOCUMENTED = {errors.EXIT_OK, errors.EXIT_MUST_FAILED, errors.EXIT_PERMISSION, errors.EXIT_CAPTURE_TRUNCATED,
              errors.EXIT_CAPTURE_NO_AMQP, errors.EXIT_CAPTURE_TLS, errors.EXIT_NOT_A_CAPTURE,
              errors.EXIT_CAPTURE_ONE_SIDED}
FUZZ = settings(suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def run_check(files: dict[str, bytes]) -> int:
    with tempfile.TemporaryDirectory() as d:
        inputs = []
        for name, data in files.items():
            (Path(d) / name).write_bytes(data)
            inputs.append(str(Path(d) / name))
        code = main(["check", *inputs, "--reports-dir", str(Path(d) / "reports")])
    assert code in DOCUMENTED, code
    return code


def _capture_bytes(fmt: str, conv: Conversation) -> bytes:
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "c"
        (write_pcapng if fmt == "pcapng" else write_pcap)(path, conv.packets())
        return path.read_bytes()


BASES = {(fmt, name): _capture_bytes(fmt, conv) for fmt in ("pcap", "pcapng") for name, conv in (
    ("publisher", publisher()),
    ("http", Conversation().c(b"GET / HTTP/1.1\r\n\r\n").s(b"HTTP/1.1 200 OK\r\n\r\n")),
)}


@st.composite
def mutated(draw, base: bytes) -> bytes:
    data = bytearray(base)
    for _ in range(draw(st.integers(1, 6))):
        op = draw(st.sampled_from(["flip", "cut", "insert", "word"]))
        at = draw(st.integers(0, max(0, len(data) - 1)))
        if op == "flip" and data:
            data[at] ^= draw(st.integers(1, 255))
        elif op == "cut":
            del data[at:at + draw(st.integers(1, 64))]
        elif op == "insert":
            data[at:at] = draw(st.binary(min_size=1, max_size=32))
        elif op == "word" and len(data) >= at + 4:          # a length or type field set to an extreme
            data[at:at + 4] = struct.pack("<I", draw(st.sampled_from([0, 1, 3, 7, 8, 12, 0xFFFF, 0x7FFFFFFF,
                                                                        0xFFFFFFFF])))
    return bytes(data)


@FUZZ
@given(st.sampled_from(sorted(BASES)).flatmap(lambda key: mutated(BASES[key])))
def test_a_damaged_capture_is_an_answer_never_a_traceback(data):
    run_check({"c.pcap": data})


@FUZZ
@given(st.binary(max_size=300))
def test_random_bytes_are_an_answer_never_a_traceback(data):
    run_check({"x.cap": data})


def _block(btype: int, body: bytes) -> bytes:
    body += b"\x00" * (-len(body) % 4)
    return struct.pack("<II", btype, len(body) + 12) + body + struct.pack("<I", len(body) + 12)


PACKET = st.sampled_from([p for conv in (publisher(),) for p in conv.packets()])
BLOCK_BODY = st.one_of(st.binary(max_size=24), st.builds(lambda link, snap: struct.pack("<HHI", link, 0, snap),
                                                         st.sampled_from([0, 1, 101, 113, 276, 999]), U32 if False else
                                                         st.integers(0, 0xFFFFFFFF)),
                       st.builds(lambda iface, data: struct.pack("<IIIII", iface, 0, 0, len(data), len(data)) + data,
                                 st.integers(0, 2), PACKET))


@st.composite
def pcapng_files(draw) -> bytes:
    """pcapng made of blocks of any type with bodies too short, too long or well-formed, in any order."""
    out = _block(0x0A0D0D0A, struct.pack("<IHHq", 0x1A2B3C4D, 1, 0, -1))
    for _ in range(draw(st.integers(0, 8))):
        out += _block(draw(st.sampled_from([1, 2, 3, 5, 6, 6, 0x0A0D0D0A, 0x80000001])), draw(BLOCK_BODY))
    return out


@st.composite
def pcap_files(draw) -> bytes:
    """pcap of any link type with records whose lengths say anything."""
    link = draw(st.sampled_from([0, 1, 12, 101, 108, 113, 228, 229, 276, 147]))
    out = struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, link)
    for _ in range(draw(st.integers(0, 6))):
        data = draw(st.one_of(PACKET.map(lambda p: p[14:] if link in (12, 101, 228) else p), st.binary(max_size=60)))
        incl = draw(st.one_of(st.just(len(data)), st.integers(0, 80)))
        out += struct.pack("<IIII", 1, 0, incl, len(data)) + data
    return out


@FUZZ
@given(st.one_of(pcapng_files(), pcap_files()))
def test_a_capture_of_odd_blocks_and_records_is_an_answer_never_a_traceback(data):
    run_check({"c.pcapng": data})


JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(max_size=8),
                    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4),
                    max_leaves=12)


@st.composite
def entries(draw):
    """Transcript entries: mostly well-formed (so that frames reach the model), some of any JSON shape."""
    out = []
    for _ in range(draw(st.integers(0, 12))):
        if draw(st.integers(0, 9)) == 0:
            out.append(draw(JSON))
            continue
        entry = {"direction": draw(st.sampled_from(["out", "in", "out", "in", "sideways", None, 1])),
                 "raw": draw(st.one_of(FRAMES.map(bytes.hex), st.binary(max_size=40).map(bytes.hex),
                                       st.text(max_size=6), st.integers())),
                 "t": draw(st.one_of(st.none(), st.floats(allow_nan=True), st.text(max_size=3)))}
        out.append(entry)
    return out


# performatives with field values the codec accepts, in any order: what the model must take without raising
U32 = st.sampled_from([0, 1, 2, 5, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFE, 0xFFFFFFFF])
SMALL = st.integers(0, 3)
BODIES = st.one_of(
    st.builds(Open, container_id=st.just("c")),
    st.builds(Begin, remote_channel=st.none() | SMALL, next_outgoing_id=U32, incoming_window=U32, outgoing_window=U32),
    st.builds(Attach, name=st.sampled_from(["a", "b"]), handle=SMALL, role=st.booleans(),
              source=st.just(Source(address="q")), target=st.just(Target(address="q")),
              initial_delivery_count=st.none() | U32),
    st.builds(Flow, next_incoming_id=st.none() | U32, incoming_window=U32, next_outgoing_id=U32, outgoing_window=U32,
              handle=st.none() | SMALL, delivery_count=st.none() | U32, link_credit=st.none() | U32,
              available=st.none() | U32, drain=st.none() | st.booleans(), echo=st.none() | st.booleans()),
    st.builds(Transfer, handle=SMALL, delivery_id=st.none() | U32, delivery_tag=st.just(b"t"),
              more=st.none() | st.booleans(), aborted=st.none() | st.booleans(), settled=st.just(True)),
    st.builds(Disposition, role=st.booleans(), first=U32, last=st.none() | U32, settled=st.just(True)),
    st.builds(Detach, handle=SMALL, closed=st.booleans()),
    st.builds(End),
    st.builds(Close),
)
FRAMES = st.builds(lambda body, channel: encode_frame(body, channel=channel), BODIES, SMALL)


@FUZZ
@given(st.lists(st.tuples(st.sampled_from(["out", "in"]), FRAMES), max_size=40))
def test_frames_in_any_order_with_any_values_are_an_answer_never_a_traceback(frames):
    entries = [{"direction": d, "raw": AMQP_HEADER.hex()} for d in ("out", "in")]
    entries += [{"direction": d, "raw": raw.hex(), "t": float(k)} for k, (d, raw) in enumerate(frames)]
    run_check({"t.json": json.dumps([{"label": "b", "entries": entries}]).encode()})


@FUZZ
@given(st.one_of(JSON, st.lists(st.fixed_dictionaries({"label": st.text(max_size=4)}, optional={
    "entries": st.one_of(entries(), JSON)}), max_size=3)))
def test_a_transcript_of_any_shape_is_an_answer_never_a_traceback(doc):
    run_check({"t.json": json.dumps(doc, allow_nan=True).encode()})


@FUZZ
@given(st.lists(st.sampled_from(sorted(BASES)), min_size=2, max_size=3), st.integers(0, 2))
def test_several_inputs_mixed_good_and_bad_are_an_answer_never_a_traceback(keys, junk):
    files = {f"{k}-{fmt}-{name}.pcap": BASES[(fmt, name)] for k, (fmt, name) in enumerate(keys)}
    for j in range(junk):
        files[f"junk{j}.pcap"] = b"\x0a\x0d\x0d\x0a" + bytes(j * 7)
    run_check(files)
