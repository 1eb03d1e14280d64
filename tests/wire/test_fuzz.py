"""Malformed input raises DecodeError with an offset inside the input, and never any other exception."""

from hypothesis import given, strategies as st

from conformance.wire import (
    AMQP_HEADER, Attach, Begin, DecodeError, Flow, FrameDecoder, Open, Source, Target, Transfer, decode_frame,
    decode_value, encode_frame,
)

VALID = [
    encode_frame(Open(container_id="c", max_frame_size=512, properties={"a": [1, 2]})),
    encode_frame(Begin(next_outgoing_id=1, incoming_window=2, outgoing_window=3)),
    encode_frame(Attach(name="n", handle=0, role=True, source=Source(address="q"), target=Target())),
    encode_frame(Flow(incoming_window=1, next_outgoing_id=2, outgoing_window=3, handle=0, delivery_count=4,
                      link_credit=5, drain=True)),
    encode_frame(Transfer(handle=0, delivery_id=1, delivery_tag=b"t"), payload=b"\x00\x53\x75\xa0\x01x"),
]


def _check(data: bytes) -> None:
    try:
        FrameDecoder().feed(data)
    except DecodeError as exc:
        assert 0 <= exc.offset <= len(data)
    try:
        decode_value(data)
    except DecodeError as exc:
        assert 0 <= exc.offset <= len(data)


@given(st.binary(max_size=300))
def test_random_bytes(data):
    _check(data)
    _check(AMQP_HEADER + data)


@given(st.sampled_from(VALID), st.data())
def test_mutated_frames(frame, data):
    raw = bytearray(frame)
    kind = data.draw(st.sampled_from(["flip", "truncate", "insert", "size", "byte"]))
    if kind == "flip":
        i = data.draw(st.integers(0, len(raw) - 1))
        raw[i] ^= 1 << data.draw(st.integers(0, 7))
    elif kind == "truncate":
        raw = raw[:data.draw(st.integers(0, len(raw)))]
        raw[0:4] = len(raw).to_bytes(4, "big") if len(raw) >= 4 else raw[0:4]
    elif kind == "insert":
        i = data.draw(st.integers(0, len(raw)))
        raw[i:i] = data.draw(st.binary(min_size=1, max_size=8))
    elif kind == "size":
        raw[0:4] = data.draw(st.integers(0, 2 ** 32 - 1)).to_bytes(4, "big")
    else:
        i = data.draw(st.integers(8, len(raw) - 1))
        raw[i] = data.draw(st.integers(0, 255))
    _check(bytes(raw))
    if len(raw) >= 8 and int.from_bytes(raw[:4], "big") == len(raw):
        try:
            decode_frame(bytes(raw))
        except DecodeError as exc:
            assert 0 <= exc.offset <= len(raw)
