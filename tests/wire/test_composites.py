"""Composite types: round trips of every class, trailing nulls, mandatory fields, field type checks on
decode (and their deliberate leniencies), wrong-typed fields sent on purpose, descriptors in every form,
message sections."""

import pytest
from hypothesis import given, strategies as st
from wire_strategies import LIST_COMPOSITES, any_composite, composite_instances

from conformance.wire import (
    Accepted, AmqpValue, ApplicationProperties, Array, Attach, Begin, Close, Data, DecodeError, Described, Detach,
    Disposition, EncodeError, End, Error, Flow, Int, Long, MessageAnnotations, Modified, Open, Properties, Raw,
    Received, Rejected, Released, SaslInit, SaslMechanisms, SaslOutcome, Source, Symbol, Target, Transfer, UByte,
    UInt, ULong, decode_all, decode_value, encode_composite, encode_field, encode_message, encode_value,
)


def h(text: str) -> bytes:
    return bytes.fromhex(text.replace(" ", ""))


def reference_encoding(obj, validate=True) -> bytes:
    """The obvious encoder: every field through encode_field, trailing nulls trimmed, as a described list."""
    values = [getattr(obj, f.attr) for f in obj.FIELDS]
    while values and values[-1] is None:
        values.pop()
    return encode_value(Described(ULong(obj.DESCRIPTOR),
                                  [Raw(encode_field(v, f.type, f.multiple)) for v, f in zip(values, obj.FIELDS)]))


@pytest.mark.parametrize("cls", LIST_COMPOSITES, ids=lambda c: c.NAME)
@given(data=st.data())
def test_every_composite_round_trips_and_matches_the_reference_encoder(cls, data):
    obj = data.draw(composite_instances(cls))
    wire = encode_composite(obj)
    assert wire == reference_encoding(obj) == encode_value(obj)
    decoded, end = decode_value(wire)
    assert end == len(wire)
    assert type(decoded) is cls and decoded == obj


@given(any_composite)
def test_symbolic_and_ulong_descriptors_decode_to_the_same_composite(obj):
    body = encode_composite(obj)[3:]                  # the list after 00 53 <code>
    for descriptor in (Symbol(obj.SYMBOLIC_DESCRIPTOR), ULong(obj.DESCRIPTOR)):
        assert decode_value(b"\x00" + encode_value(descriptor) + body)[0] == obj
    long_form = b"\x00\x80" + obj.DESCRIPTOR.to_bytes(8, "big") + body
    assert decode_value(long_form)[0] == obj


def test_trailing_nulls_are_omitted_and_inner_nulls_kept():
    assert encode_composite(Close()) == h("00 53 18 45")
    assert encode_composite(Attach(name="l", handle=0, role=True)) == h("00 53 12 c0 06 03 a1016c 43 41")
    assert encode_composite(Flow(incoming_window=1, next_outgoing_id=2, outgoing_window=3, echo=True)) == \
        h("00 53 13 c0 0e 0a 40 5201 5202 5203 40 40 40 40 40 41")


def test_flow_frame_is_byte_exact():
    flow = Flow(next_incoming_id=1, incoming_window=2, next_outgoing_id=3, outgoing_window=4, handle=0,
                delivery_count=5, link_credit=6)
    assert encode_composite(flow) == h("00 53 13 c0 0e 07 5201 5202 5203 5204 43 5205 5206")
    big = Flow(next_incoming_id=0xFFFFFFFF, incoming_window=2048, next_outgoing_id=0, outgoing_window=256,
               drain=False)
    assert encode_composite(big) == h("00 53 13 c0 16 09 70ffffffff 7000000800 43 7000000100 40 40 40 40 42")


def test_an_explicit_raw_null_is_not_trimmed():
    flow = Flow(incoming_window=1, next_outgoing_id=2, outgoing_window=3, properties=Raw(b"\x40"))
    assert encode_composite(flow) == h("00 53 13 c0 0f 0b 40 5201 5202 5203 40 40 40 40 40 40 40")


def test_large_composites_use_list32():
    opened = Open(container_id="c" * 300)
    wire = encode_composite(opened)
    assert wire[:12] == h("00 53 10 d0 00000135 00000001")
    assert decode_value(wire)[0] == opened


# -- mandatory fields --------------------------------------------------------------------------------------

def test_missing_mandatory_field_refused_on_encode_unless_validate_is_false():
    with pytest.raises(EncodeError, match="outgoing-window"):
        encode_composite(Flow(incoming_window=1, next_outgoing_id=0))
    wire = encode_composite(Flow(incoming_window=1, next_outgoing_id=0, handle=0), validate=False)
    assert wire == h("00 53 13 c0 07 05 40 5201 43 40 43")
    with pytest.raises(DecodeError) as info:
        decode_value(h("4040") + wire, 2)
    assert info.value.offset == 2 and info.value.reason == "flow: mandatory field outgoing-window is missing"


def test_missing_trailing_mandatory_field_is_reported_on_decode():
    with pytest.raises(DecodeError, match="mandatory field handle is missing"):
        decode_value(h("00 53 14 45"))                         # transfer with no fields at all
    with pytest.raises(DecodeError, match="mandatory field condition"):
        decode_value(encode_composite(Error(), validate=False))


# -- field types on decode: strict where the spec is, lenient where real peers differ ----------------------

WRONG_TYPES = [
    (Flow(incoming_window=1, next_outgoing_id=0, outgoing_window=1, handle=Long(0)), "flow.handle must be handle"),
    (Flow(incoming_window=Int(1), next_outgoing_id=0, outgoing_window=1), "flow.incoming-window must be uint"),
    (Attach(name="l", handle=0, role=UByte(1)), "attach.role must be role"),
    (Open(container_id=Symbol("c")), "open.container-id must be string"),
    (Open(container_id="c", offered_capabilities=Array("string", ["x"])), "or an array of it"),
    (Open(container_id="c", properties=Raw(b"\x45")), "open.properties must be fields"),
    (Attach(name="l", handle=0, role=True, source=UInt(1)), "attach.source must be *"),
    (Transfer(handle=0, state=Source()), "transfer.state must be *"),
    (Detach(handle=0, error=Symbol("amqp:internal-error")), "detach.error must be error"),
    (Disposition(role=True, first=0, state=Accepted(), settled=Symbol("yes")), "disposition.settled"),
    (Begin(next_outgoing_id=0, incoming_window=1, outgoing_window=1, handle_max=ULong(5)), "begin.handle-max"),
]


@pytest.mark.parametrize("body,reason", WRONG_TYPES, ids=[r for _, r in WRONG_TYPES])
def test_wrong_field_types_are_sent_as_asked_and_rejected_on_decode(body, reason):
    wire = encode_composite(body)
    with pytest.raises(DecodeError) as info:
        decode_value(wire)
    assert reason in info.value.reason
    assert info.value.offset == 3             # the list of the performative


def test_the_wrapper_type_goes_on_the_wire():
    assert encode_composite(Flow(incoming_window=1, next_outgoing_id=0, outgoing_window=1, handle=Long(0))) == \
        h("00 53 13 c0 09 05 40 5201 43 5201 5500")


LENIENT = [
    Open(container_id="c", offered_capabilities=Symbol("one")),                # multiple: a single value
    Open(container_id="c", offered_capabilities=[Symbol("a"), Symbol("b")]),   # ... or an array
    Open(container_id="c", offered_capabilities=Array("ubyte", [])),           # empty array of another type
    Open(container_id="c", offered_capabilities=Array(0xB3, [Symbol("a")])),   # sym32 elements
    Attach(name="l", handle=0, role=True, source=Described(Symbol("x:custom-source"), [])),   # extension
    Attach(name="l", handle=0, role=True, target=Described(ULong(0x1234_0000_0001), None)),
    Transfer(handle=0, state=Received(section_number=0, section_offset=0)),
    Properties(message_id=ULong(1), to="q", correlation_id=b"c", user_id=b"u"),
]


@pytest.mark.parametrize("body", LENIENT, ids=lambda b: repr(b)[:40])
def test_legal_variants_of_field_values_decode(body):
    assert decode_value(encode_composite(body))[0] == body


def test_too_many_fields_and_non_list_bodies_are_rejected():
    with pytest.raises(DecodeError, match="close has 2 fields; the type defines 1"):
        decode_value(h("00 53 18 c0 03 02 40 40"))
    with pytest.raises(DecodeError, match="flow must be a list, got NoneType") as info:
        decode_value(h("00 53 13 40"))
    assert info.value.offset == 3
    with pytest.raises(DecodeError, match="must be a list"):
        decode_value(h("00 a3 0e") + b"amqp:open:list" + h("c1 01 00"))


def test_plain_values_of_the_wrong_python_type_are_encode_errors():
    for bad in (Flow(incoming_window="1", next_outgoing_id=0, outgoing_window=1),
                Flow(incoming_window=True, next_outgoing_id=0, outgoing_window=1),
                Flow(incoming_window=-1, next_outgoing_id=0, outgoing_window=1),
                Flow(incoming_window=2 ** 32, next_outgoing_id=0, outgoing_window=1),
                Attach(name=b"l", handle=0, role=True),
                Begin(remote_channel=70000, next_outgoing_id=0, incoming_window=1, outgoing_window=1)):
        with pytest.raises(EncodeError):
            encode_composite(bad)


def test_composites_nest_in_fields_and_plain_values():
    disposition = Disposition(role=True, first=1, last=5, settled=True,
                              state=Rejected(error=Error(condition=Symbol("amqp:x"), description="d",
                                                         info={"k": 1})))
    assert decode_value(encode_composite(disposition))[0] == disposition
    nested = [Accepted(), {Symbol("s"): Released()}, Modified(message_annotations={"a": 1})]
    assert decode_value(encode_value(nested))[0] == nested


def test_sasl_bodies_round_trip():
    for body in (SaslMechanisms(sasl_server_mechanisms=[Symbol("PLAIN"), Symbol("ANONYMOUS")]),
                 SaslMechanisms(sasl_server_mechanisms=Symbol("PLAIN")),
                 SaslInit(mechanism=Symbol("PLAIN"), initial_response=b"\0u\0p", hostname="h"),
                 SaslOutcome(code=0, additional_data=b"x")):
        assert decode_value(encode_composite(body))[0] == body


# -- message sections ----------------------------------------------------------------------------------------

def test_message_sections_are_byte_exact_and_round_trip():
    message = encode_message(MessageAnnotations({"x-opt": 1}), Properties(message_id="m"),
                             ApplicationProperties({"k": "v"}), Data(b"hello"))
    assert message == (h("00 53 72 c1 0a 02 a3 05") + b"x-opt" + h("5501") +
                       h("00 53 73 c0 04 01 a1 01 6d") +
                       h("00 53 74 c1 07 02 a1 01 6b a1 01 76") +
                       h("00 53 75 a0 05") + b"hello")
    sections = decode_all(message)
    assert [type(s) for s in sections] == [MessageAnnotations, Properties, ApplicationProperties, Data]
    assert sections[3].value == b"hello" and sections[0].value == {"x-opt": 1}
    assert decode_all(encode_message(AmqpValue([1, "two"])))[0] == AmqpValue([1, "two"])


def test_section_of_the_wrong_type_is_rejected():
    with pytest.raises(DecodeError, match="data section must hold a binary") as info:
        decode_value(h("00 53 75 a1 01 78"))
    assert info.value.offset == 3


def test_composite_repr_shows_the_set_fields():
    assert repr(Flow(incoming_window=1, next_outgoing_id=0, outgoing_window=1)) == \
        "Flow(incoming_window=1, next_outgoing_id=0, outgoing_window=1)"
    assert End().NAME == "end" and End.DESCRIPTOR == 0x17 and Target().present_fields() == {}
