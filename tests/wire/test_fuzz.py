"""Fuzz (hypothesis): random bytes and mutated valid frames fed to FrameDecoder, decode_frame and
decode_value. Only DecodeError may escape, its offset lies within the input, and it always comes from an
explicit check (never from the decoder's defensive catch-all, whose reason starts "malformed value (")."""

from hypothesis import given, strategies as st
from wire_strategies import LIST_COMPOSITES, any_composite, composite_instances

from conformance.wire import (
    AMQP_HEADER, SASL_FRAME, DecodeError, FrameDecoder, SaslInit, decode_frame, decode_value, encode_frame,
    encode_value,
)

MUTATIONS = ("flip", "truncate", "insert", "delete", "size", "byte", "doff", "duplicate")


def _check_error(exc: DecodeError, length: int) -> None:
    assert 0 <= exc.offset <= length, exc
    assert not exc.reason.startswith("malformed value ("), f"a check is missing: {exc}"


def _feed_all(data: bytes, chunks: list[int] | None = None) -> None:
    """Every entry point: the incremental decoder (whole and chunked), decode_frame, decode_value."""
    for cuts in ([], chunks or []):
        decoder = FrameDecoder()
        points = sorted({0, len(data), *[c % (len(data) + 1) for c in cuts]})
        try:
            for a, b in zip(points, points[1:]):
                decoder.feed(data[a:b])
        except DecodeError as exc:
            _check_error(exc, len(data))
    if len(data) >= 8:
        try:
            decode_frame(data)
        except DecodeError as exc:
            _check_error(exc, len(data))
    try:
        decode_value(data)
    except DecodeError as exc:
        _check_error(exc, len(data))


@given(st.binary(max_size=400), st.lists(st.integers(0, 400), max_size=4))
def test_random_bytes(data, chunks):
    _feed_all(data, chunks)
    _feed_all(AMQP_HEADER + data, chunks)


@given(st.binary(min_size=1, max_size=200))
def test_random_bytes_behind_a_described_constructor(data):
    for prefix in (b"\x00\x53\x13", b"\x00\x53\x12\xc0", b"\xe0", b"\xf0", b"\xc1", b"\x00\x00"):
        _feed_all(prefix + data)


def _mutate(raw: bytearray, data) -> bytearray:
    kind = data.draw(st.sampled_from(MUTATIONS))
    if kind == "flip" and raw:
        i = data.draw(st.integers(0, len(raw) - 1))
        raw[i] ^= 1 << data.draw(st.integers(0, 7))
    elif kind == "truncate":
        raw = raw[:data.draw(st.integers(0, len(raw)))]
        if len(raw) >= 4 and data.draw(st.booleans()):
            raw[0:4] = len(raw).to_bytes(4, "big")        # keep SIZE consistent so the body gets parsed
    elif kind == "insert":
        i = data.draw(st.integers(0, len(raw)))
        raw[i:i] = data.draw(st.binary(min_size=1, max_size=8))
    elif kind == "delete" and raw:
        i = data.draw(st.integers(0, len(raw) - 1))
        del raw[i:i + data.draw(st.integers(1, 8))]
    elif kind == "size" and len(raw) >= 4:
        raw[0:4] = data.draw(st.one_of(st.integers(0, 2 ** 32 - 1), st.integers(0, len(raw) + 8))).to_bytes(4, "big")
    elif kind == "byte" and raw:
        raw[data.draw(st.integers(0, len(raw) - 1))] = data.draw(st.integers(0, 255))
    elif kind == "doff" and len(raw) >= 5:
        raw[4] = data.draw(st.integers(0, 255))
    elif kind == "duplicate" and raw:
        i = data.draw(st.integers(0, len(raw) - 1))
        raw[i:i] = raw[i:i + data.draw(st.integers(1, 16))]
    return raw


performatives = st.sampled_from([c for c in LIST_COMPOSITES if c.PROVIDES in ("frame", "sasl-frame")]).flatmap(
    composite_instances)
valid_frames = st.one_of(
    st.tuples(performatives, st.integers(0, 0xFFFF), st.binary(max_size=30)).map(
        lambda t: encode_frame(t[0], t[1], t[2]) if t[0].PROVIDES == "frame" else
        encode_frame(t[0], 0, frame_type=SASL_FRAME)),
    st.just(encode_frame(SaslInit(mechanism="PLAIN", initial_response=b"\0u\0p"), frame_type=SASL_FRAME)),
)


@given(valid_frames, st.data())
def test_mutated_valid_frames(frame, data):
    raw = bytearray(frame)
    for _ in range(data.draw(st.integers(1, 3))):
        raw = _mutate(raw, data)
    _feed_all(bytes(raw), data.draw(st.lists(st.integers(0, 400), max_size=3)))
    _feed_all(AMQP_HEADER + bytes(raw))


@given(any_composite, st.data())
def test_mutated_valid_values(value, data):
    raw = bytearray(encode_value(value))
    raw = _mutate(raw, data)
    try:
        decode_value(bytes(raw))
    except DecodeError as exc:
        _check_error(exc, len(raw))


@given(st.lists(valid_frames, min_size=1, max_size=4), st.lists(st.integers(0, 2000), max_size=6))
def test_valid_streams_decode_identically_in_any_chunking(frames, cuts):
    stream = AMQP_HEADER + b"".join(frames)
    whole = FrameDecoder().feed(stream)
    decoder = FrameDecoder()
    points = sorted({0, len(stream), *[c % (len(stream) + 1) for c in cuts]})
    items = []
    for a, b in zip(points, points[1:]):
        items += decoder.feed(stream[a:b])
    assert [(i.raw, i.offset) for i in items] == [(i.raw, i.offset) for i in whole]
    assert len(whole) == len(frames) + 1
