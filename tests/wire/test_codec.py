"""Byte-exact encodings of every primitive format, composites, frames and serial numbers."""

import uuid

import pytest

from conformance.wire import (
    AMQP_HEADER, SASL_HEADER, Array, Attach, Begin, Byte, Char, Close, Data, DecodeError, Decimal32, Described,
    Detach, Disposition, EncodeError, End, Error, Float, Flow, Frame, FrameDecoder, Int, Long, Open,
    ProtocolHeader, Raw, Received, SaslInit, SaslMechanisms, SaslOutcome, SequenceNo, SerialUndefined, Short, Source,
    Symbol, Target, Timestamp, Transfer, UByte, UInt, ULong, UShort, Accepted, Rejected, Released, Modified,
    decode_frame, decode_value, encode_frame, encode_message, encode_value, heartbeat, serial_add, serial_diff,
    serial_lt,
)
from conformance.wire.frames import SASL_FRAME

ENCODINGS = [
    (None, "40"), (True, "41"), (False, "42"),
    (UByte(7), "5007"), (UShort(0x1234), "601234"),
    (UInt(0), "43"), (UInt(200), "52c8"), (UInt(0x10000), "7000010000"),
    (ULong(0), "44"), (ULong(5), "5305"), (ULong(1 << 40), "800000010000000000"),
    (Byte(-2), "51fe"), (Short(-2), "61fffe"), (Int(-2), "54fe"), (Int(1000), "71000003e8"),
    (Long(-2), "55fe"), (Long(1 << 40), "810000010000000000"), (5, "5505"),
    (Float(1.5), "723fc00000"), (1.5, "823ff8000000000000"),
    (Decimal32(b"\x01\x02\x03\x04"), "7401020304"),
    (Char("A"), "7300000041"), (Timestamp(1), "830000000000000001"),
    (uuid.UUID(int=1), "98" + "00" * 15 + "01"),
    (b"ab", "a0026162"), (b"x" * 256, "b000000100" + "78" * 256),
    ("é", "a102c3a9"), (Symbol("ab"), "a3026162"), (Symbol("s" * 300), "b30000012c" + "73" * 300),
    ([], "45"), ([UInt(1)], "c003015201"), ({Symbol("k"): 1}, "c10602a3016b5501"),
    (Array("symbol", (Symbol("a"), Symbol("b"))), "e00602a301610162"),
    (Described(ULong(0x99), 1), "0053995501"),
]


@pytest.mark.parametrize("value,hexed", ENCODINGS, ids=[h[:12] for _, h in ENCODINGS])
def test_encoding_is_byte_exact_and_round_trips(value, hexed):
    assert encode_value(value).hex() == hexed
    decoded, end = decode_value(bytes.fromhex(hexed))
    assert end == len(hexed) // 2
    assert decoded == value
    if value is not None and not isinstance(value, (bool, list, dict, Array, Described, bytes, str, float, int)):
        assert type(decoded) is type(value)


def test_list32_and_map32_when_large():
    big = [UInt(0x10000)] * 60
    assert encode_value(big)[0] == 0xD0
    assert decode_value(encode_value(big))[0] == big
    bigmap = {Symbol(f"k{i}"): i for i in range(60)}
    assert encode_value(bigmap)[0] == 0xD1
    assert decode_value(encode_value(bigmap))[0] == bigmap


def test_flow_encoding_is_byte_exact_and_omits_trailing_nulls():
    flow = Flow(next_incoming_id=1, incoming_window=2, next_outgoing_id=3, outgoing_window=4, handle=0,
                delivery_count=5, link_credit=6)
    assert encode_frame(flow).hex() == "0000001b02000000" + "005313c00e07" + "5201" + "5202" + "5203" + "5204" + "43" + "5205" + "5206"


COMPOSITES = [
    Open(container_id="c", max_frame_size=512, channel_max=3, idle_time_out=1000, offered_capabilities=["x"],
         properties={"product": "p"}),
    Begin(remote_channel=1, next_outgoing_id=0xFFFFFFFF, incoming_window=0, outgoing_window=10, handle_max=7),
    Attach(name="l", handle=1, role=True, snd_settle_mode=1, rcv_settle_mode=0,
           source=Source(address="q", outcomes=["amqp:accepted:list"]), target=Target(address="t"),
           initial_delivery_count=0xFFFFFFFB, max_message_size=1 << 40, properties={"paired": True}),
    Flow(incoming_window=0, next_outgoing_id=0, outgoing_window=0, echo=True),
    Transfer(handle=0, delivery_id=1, delivery_tag=b"t", message_format=0, settled=False, more=True,
             state=Received(section_number=1, section_offset=2)),
    Disposition(role=True, first=1, last=5, settled=True, state=Accepted()),
    Disposition(role=True, first=1, state=Rejected(error=Error(condition=Symbol("amqp:x"), description="d"))),
    Disposition(role=True, first=1, state=Modified(delivery_failed=True, message_annotations={"a": 1})),
    Disposition(role=True, first=1, state=Released()),
    Detach(handle=3, closed=True, error=Error(condition=Symbol("amqp:link:transfer-limit-exceeded"))),
    End(error=Error(condition=Symbol("amqp:session:window-violation"))),
    Close(),
]


@pytest.mark.parametrize("body", COMPOSITES, ids=lambda b: b.NAME)
def test_composites_round_trip_through_frames(body):
    raw = encode_frame(body, channel=2, payload=b"pp" if isinstance(body, Transfer) else b"")
    frame = decode_frame(raw)
    assert frame.body == body and frame.channel == 2
    assert frame.raw == raw


def test_sasl_frames_round_trip():
    for body in (SaslMechanisms(sasl_server_mechanisms=[Symbol("PLAIN")]), SaslInit(mechanism=Symbol("PLAIN"),
                 initial_response=b"\0u\0p"), SaslOutcome(code=0)):
        frame = decode_frame(encode_frame(body, frame_type=SASL_FRAME))
        assert frame.body == body and frame.frame_type == SASL_FRAME


def test_mandatory_fields_enforced_on_encode_and_decode():
    with pytest.raises(EncodeError):
        encode_frame(Flow(incoming_window=1, next_outgoing_id=0))
    raw = encode_frame(Flow(incoming_window=1, next_outgoing_id=0), validate=False)
    with pytest.raises(DecodeError) as info:
        decode_frame(raw)
    assert "outgoing-window" in info.value.reason and info.value.offset == 8


def test_wrong_field_type_can_be_sent_and_is_rejected_on_decode():
    raw = encode_frame(Flow(incoming_window=1, next_outgoing_id=0, outgoing_window=1, handle=Long(0)))
    with pytest.raises(DecodeError) as info:
        decode_frame(raw)
    assert "handle" in info.value.reason


def test_frame_header_errors_carry_offsets():
    good = encode_frame(Close())
    with pytest.raises(DecodeError) as info:
        FrameDecoder().feed(AMQP_HEADER + b"\x00\x00\x00\x04\x02\x00\x00\x00")
    assert info.value.offset == 8
    with pytest.raises(DecodeError) as info:
        FrameDecoder().feed(b"\x00\x00\x00\x0c\x01\x00\x00\x00" + b"\0" * 4)
    assert info.value.offset == 4 and "DOFF" in info.value.reason
    with pytest.raises(DecodeError):
        FrameDecoder(max_frame_size=512).feed(encode_frame(Close(), size=100000))
    assert FrameDecoder().feed(good)[0].body == Close()


def test_extended_header_is_skipped_and_heartbeat_decodes():
    raw = encode_frame(Close(), extended_header=b"\x01\x02\x03\x04")
    assert raw[4] == 3
    assert decode_frame(raw).body == Close()
    frame = decode_frame(heartbeat())
    assert frame.body is None and frame.is_heartbeat


def test_incremental_decoder_accepts_any_chunking():
    stream = SASL_HEADER + encode_frame(SaslOutcome(code=0), frame_type=SASL_FRAME) + AMQP_HEADER + \
        encode_frame(Open(container_id="x")) + heartbeat() + encode_frame(Transfer(handle=0), payload=b"abc")
    whole = FrameDecoder().feed(stream)
    for size in (1, 2, 3, 7, 64):
        dec = FrameDecoder()
        items = []
        for i in range(0, len(stream), size):
            items += dec.feed(stream[i:i + size])
        assert [type(i) for i in items] == [type(i) for i in whole]
        assert [getattr(i, "body", None) for i in items] == [getattr(i, "body", None) for i in whole]
    assert isinstance(whole[0], ProtocolHeader) and whole[0].protocol_id == 3
    assert whole[-1].payload == b"abc"


def test_message_sections():
    payload = encode_message(Data(b"hello"))
    assert payload.hex() == "005375a00568656c6c6f"


def test_raw_bytes_inserted_verbatim():
    assert encode_value([Raw(b"\x99")]).hex() == "c0020199"


def test_serial_numbers_wrap_and_refuse_undefined_comparisons():
    assert serial_add(0xFFFFFFFF, 1) == 0
    assert serial_lt(0xFFFFFFFE, 1)
    assert serial_diff(0xFFFFFFFB, 3) == 8
    assert SequenceNo(0xFFFFFFFF) + 2 == 1
    assert SequenceNo(1) > SequenceNo(0xFFFFFFFF)
    assert SequenceNo(1) - SequenceNo(0xFFFFFFFF) == 2
    with pytest.raises(SerialUndefined):
        serial_lt(0, 1 << 31)
    with pytest.raises(SerialUndefined):
        serial_add(0, 1 << 31)
