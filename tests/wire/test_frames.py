"""Framing (Part 2 §2.2, §2.3; Part 5 §5.3.1): the 8-byte header, extended headers, heartbeats, protocol
headers, the incremental decoder over any chunking, and deliberately invalid frames rejected by our own
decoder with the right stream offset."""

import pytest
from hypothesis import given, strategies as st
from wire_strategies import any_composite

from conformance.wire import (
    AMQP_HEADER, SASL_FRAME, SASL_HEADER, TLS_HEADER, Close, Data, DecodeError, EncodeError, Flow, Frame,
    FrameDecoder, Long, Open, ProtocolHeader, SaslInit, SaslOutcome, Transfer, decode_frame, encode_composite,
    encode_frame, encode_message, heartbeat,
)


def h(text: str) -> bytes:
    return bytes.fromhex(text.replace(" ", ""))


FLOW = Flow(next_incoming_id=1, incoming_window=2, next_outgoing_id=3, outgoing_window=4, handle=0,
            delivery_count=5, link_credit=6)


def test_frame_header_is_byte_exact():
    assert encode_frame(FLOW, channel=0x0102) == h("0000001b 02 00 0102") + encode_composite(FLOW)
    assert encode_frame(Close(), channel=7) == h("0000000c 02 00 0007 00 53 18 45")
    payload = encode_message(Data(b"x"))
    assert encode_frame(Transfer(handle=0), payload=payload) == h("00000015 02 00 0000 00 53 14 c0 02 01 43") + payload
    sasl = encode_frame(SaslOutcome(code=0), frame_type=SASL_FRAME)
    assert sasl == h("00000010 02 01 0000 00 53 44 c0 03 01 50 00")


@given(any_composite, st.integers(0, 0xFFFF), st.binary(max_size=40))
def test_fast_and_general_frame_encoders_agree(body, channel, payload):
    fast = encode_frame(body, channel, payload)
    general = encode_frame(encode_composite(body), channel, payload)       # pre-encoded body: the general path
    assert fast == general
    assert int.from_bytes(fast[:4], "big") == len(fast)


def test_protocol_headers():
    assert AMQP_HEADER == b"AMQP\x00\x01\x00\x00" == ProtocolHeader(0).encode()
    assert SASL_HEADER == b"AMQP\x03\x01\x00\x00" == ProtocolHeader(3).encode()
    assert TLS_HEADER == b"AMQP\x02\x01\x00\x00" == ProtocolHeader(2).encode()
    items = FrameDecoder().feed(SASL_HEADER + AMQP_HEADER + TLS_HEADER + b"AMQP\x00\x00\x09\x01")
    assert [i.name for i in items] == ["SASL", "AMQP", "TLS", "AMQP"]
    assert items[3] == ProtocolHeader(0, 0, 9, 1) and items[3].raw == b"AMQP\x00\x00\x09\x01"
    assert [i.offset for i in items] == [0, 8, 16, 24]


def test_heartbeat_is_an_empty_frame():
    assert heartbeat() == h("00000008 02 00 0000") == encode_frame(None)
    frame = decode_frame(heartbeat())
    assert frame.body is None and frame.is_heartbeat and frame.name == "empty" and frame.payload == b""
    assert decode_frame(encode_frame(None, channel=3)).channel == 3


def test_extended_header_is_skipped():
    raw = encode_frame(Close(), extended_header=h("01020304"))
    assert raw[:8] == h("00000010 03 00 0000")
    assert decode_frame(raw).body == Close()
    raw = encode_frame(Close(), doff=4, extended_header=h("0102030405060708"))
    assert FrameDecoder().feed(raw)[0].body == Close()
    empty_with_extension = encode_frame(None, extended_header=h("aabbccdd"))
    assert decode_frame(empty_with_extension).is_heartbeat
    with pytest.raises(EncodeError, match="multiple of 4"):
        encode_frame(Close(), extended_header=b"\x01")


def test_frame_objects_and_pre_encoded_bodies_encode():
    frame = Frame(2, Transfer(handle=1), b"pp")
    assert encode_frame(frame) == encode_frame(Transfer(handle=1), 2, b"pp")
    assert encode_frame(encode_composite(Close()), 1) == encode_frame(Close(), 1)


def test_decoded_frames_carry_raw_bytes_offsets_and_payload():
    stream = AMQP_HEADER + encode_frame(Open(container_id="c")) + encode_frame(Transfer(handle=0), 1, b"abc")
    items = FrameDecoder().feed(stream)
    assert [i.offset for i in items] == [0, 8, 8 + len(encode_frame(Open(container_id="c")))]
    assert b"".join(i.raw for i in items) == stream
    assert items[2].payload == b"abc" and items[2].channel == 1 and items[2].name == "transfer"


# -- the incremental decoder ------------------------------------------------------------------------------

STREAM = (SASL_HEADER + encode_frame(SaslOutcome(code=0), frame_type=SASL_FRAME) + AMQP_HEADER
          + encode_frame(Open(container_id="x", properties={"p": "v" * 300})) + heartbeat()
          + encode_frame(Transfer(handle=0, delivery_tag=b"t"), payload=b"abc" * 100)
          + encode_frame(Close(), extended_header=h("00000000")) + encode_frame(FLOW, channel=9))


def _summary(items):
    return [(type(i).__name__, getattr(i, "body", None), getattr(i, "payload", None), i.raw, i.offset)
            for i in items]


WHOLE = _summary(FrameDecoder().feed(STREAM))


def test_whole_stream_decodes():
    assert [w[0] for w in WHOLE] == ["ProtocolHeader", "Frame", "ProtocolHeader", "Frame", "Frame", "Frame",
                                     "Frame", "Frame"]


def test_incremental_decoder_fed_byte_by_byte():
    decoder = FrameDecoder()
    items = []
    for i in range(len(STREAM)):
        items += decoder.feed(STREAM[i:i + 1])
    assert _summary(items) == WHOLE and decoder.buffered == 0


@given(st.lists(st.integers(1, len(STREAM)), max_size=30))
def test_incremental_decoder_fed_random_chunks(cuts):
    points = sorted(set(cuts) | {0, len(STREAM)})
    decoder = FrameDecoder()
    items = []
    for a, b in zip(points, points[1:]):
        items += decoder.feed(STREAM[a:b])
    assert _summary(items) == WHOLE


def test_incomplete_input_waits():
    decoder = FrameDecoder()
    assert decoder.feed(b"AMQ") == [] and decoder.feed(b"P\x00\x01\x00") == []
    assert decoder.feed(b"\x00") == [ProtocolHeader(0)]
    assert decoder.feed(heartbeat()[:7]) == [] and decoder.buffered == 7


# -- invalid frames: encodable on purpose, rejected by our decoder with the stream offset --------------------

PREFIX = AMQP_HEADER + heartbeat()     # 16 bytes before the bad frame: offsets are stream offsets


def _reject(raw: bytes, **decoder_options) -> DecodeError:
    with pytest.raises(DecodeError) as info:
        FrameDecoder(**decoder_options).feed(PREFIX + raw)
    return info.value


def test_size_smaller_than_the_header():
    err = _reject(encode_frame(None, size=7))
    assert err.offset == 16 and "SIZE 7" in err.reason


def test_doff_below_two():
    err = _reject(encode_frame(Close(), doff=1))
    assert err.offset == 20 and "DOFF 1" in err.reason


def test_doff_past_the_frame_end():
    err = _reject(encode_frame(Close(), doff=200))
    assert err.offset == 20 and "points past the frame end" in err.reason


def test_doff_pointing_into_the_body_gives_a_body_error():
    err = _reject(encode_frame(FLOW, doff=3))       # body read from byte 12, inside the list header: 0e ...
    assert err.offset == 16 + 12 and "unknown format code 0x0e" in err.reason
    assert decode_frame(encode_frame(Close(), doff=3)).is_heartbeat    # all 4 body bytes read as extended header


def test_oversized_frame_against_max_frame_size():
    raw = encode_frame(Transfer(handle=0), payload=b"x" * 600)
    err = _reject(raw, max_frame_size=512)
    assert err.offset == 16 and "exceeds max-frame-size 512" in err.reason
    assert FrameDecoder(max_frame_size=1024).feed(raw)[0].payload == b"x" * 600


def test_oversized_size_field_is_detected_before_the_bytes_arrive():
    err = _reject(encode_frame(Close(), size=1 << 20), max_frame_size=4096)
    assert err.offset == 16


def test_size_field_disagreeing_with_the_bytes():
    with pytest.raises(DecodeError, match="SIZE 13 disagrees") as info:
        decode_frame(encode_frame(Close(), size=13), offset=100)
    assert info.value.offset == 100


def test_unknown_frame_type():
    err = _reject(encode_frame(Close(), frame_type=5))
    assert err.offset == 21 and "TYPE 0x05" in err.reason


def test_missing_mandatory_field():
    err = _reject(encode_frame(Flow(incoming_window=1, next_outgoing_id=0), validate=False))
    assert err.offset == 24 and "outgoing-window is missing" in err.reason


def test_wrong_field_type():
    err = _reject(encode_frame(Flow(incoming_window=1, next_outgoing_id=0, outgoing_window=1, handle=Long(0))))
    assert err.offset == 27 and "flow.handle" in err.reason


def test_truncated_performative():
    good = encode_frame(FLOW)
    bad = (len(good) - 2).to_bytes(4, "big") + good[4:-2]
    err = _reject(bad)
    assert 24 <= err.offset <= 16 + len(bad) and "overruns" in err.reason


def test_body_that_is_not_a_performative():
    for body, why in ((h("40"), "not a performative"), (encode_message(Data(b"x")), "not a performative"),
                      (encode_composite(SaslInit(mechanism="PLAIN")), "not allowed in a AMQP frame")):
        err = _reject(encode_frame(body))
        assert err.offset == 24 and why in err.reason
    with pytest.raises(DecodeError, match="flow is not allowed in a SASL frame"):
        decode_frame(encode_frame(FLOW, frame_type=SASL_FRAME))


def test_sasl_frame_rules():
    with pytest.raises(DecodeError, match="empty SASL frame"):
        decode_frame(encode_frame(None, frame_type=SASL_FRAME))
    with pytest.raises(DecodeError, match="after its performative") as info:
        decode_frame(encode_frame(SaslOutcome(code=0), frame_type=SASL_FRAME, payload=b"x"))
    assert info.value.offset == 16


def test_decoder_stays_failed_after_an_error():
    decoder = FrameDecoder()
    with pytest.raises(DecodeError) as first:
        decoder.feed(encode_frame(None, size=3))
    with pytest.raises(DecodeError) as again:
        decoder.feed(heartbeat())
    assert again.value is first.value


def test_header_fields_out_of_range_are_encode_errors():
    for kwargs in ({"channel": 1 << 16}, {"channel": -1}, {"frame_type": 256}, {"doff": 256}, {"size": 1 << 32}):
        with pytest.raises(EncodeError):
            encode_frame(Close(), **kwargs)
