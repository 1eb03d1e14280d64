"""The decoder's fast path for frame bodies (`decode_performative`) against the generic decoder
(`decode_value`), which stays the reference: at every offset of random valid frames, of mutated ones, of
random bytes behind a performative's constructor and of the fuzz corpus (benchmarks/fuzz.py's seeds), both
give the same value (same types, same repr) or the same DecodeError (same offset, same reason)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from hypothesis import given, settings, strategies as st
from test_fuzz import _mutate, valid_frames

from conformance.wire import DecodeError, FrameDecoder, decode_value
from conformance.wire.decode import decode_performative

FUZZ = Path(__file__).resolve().parents[2] / "benchmarks" / "fuzz.py"


def _outcome(fn, buf, offset, end, base):
    try:
        value, pos = fn(buf, offset, end, base=base)
    except DecodeError as exc:
        return ("error", exc.offset, exc.reason)
    return ("value", type(value), repr(value), pos)


def _same_everywhere(buf: bytes, base: int = 0) -> None:
    for offset in range(len(buf)):
        for end in {len(buf), max(offset, len(buf) - 1)}:
            fast = _outcome(decode_performative, buf, offset, end, base)
            generic = _outcome(decode_value, buf, offset, end, base)
            assert fast == generic, (buf.hex(), offset, end)


def _corpus() -> list[bytes]:
    spec = importlib.util.spec_from_file_location("fuzz_bench", FUZZ)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module._seeds()


def test_fuzz_corpus():
    for seed in _corpus():
        _same_everywhere(seed)
        _same_everywhere(seed, base=1000)


@settings(max_examples=300)
@given(valid_frames)
def test_valid_frames(frame):
    _same_everywhere(frame)


@settings(max_examples=300)
@given(valid_frames, st.data())
def test_mutated_frames(frame, data):
    raw = bytearray(frame)
    for _ in range(data.draw(st.integers(1, 3))):
        raw = _mutate(raw, data)
    _same_everywhere(bytes(raw), base=data.draw(st.sampled_from([0, 17])))


@given(st.sampled_from([0x10, 0x11, 0x12, 0x13, 0x14, 0x15, 0x16, 0x17, 0x18, 0x40, 0x41, 0x44, 0x99]),
       st.sampled_from([0xC0, 0xD0, 0x45, 0xC1, 0xA0]), st.binary(max_size=60))
def test_random_bytes_behind_a_performative_constructor(code, list_code, data):
    _same_everywhere(bytes([0x00, 0x53, code, list_code]) + data)


def test_frames_decode_as_before_in_any_chunking():
    """The chunk-at-a-time FrameDecoder gives the same items fed whole, byte by byte, or in odd chunks."""
    stream = b"".join(seed[1:] for seed in _corpus()[3:])   # without each seed's selector byte: one frame each
    whole = [(type(i), repr(getattr(i, "body", i)), i.offset, i.raw) for i in FrameDecoder().feed(stream)]
    for step in (1, 3, 7, 64):
        decoder, items = FrameDecoder(), []
        for k in range(0, len(stream), step):
            items += decoder.feed(stream[k:k + step])
        assert [(type(i), repr(getattr(i, "body", i)), i.offset, i.raw) for i in items] == whole
