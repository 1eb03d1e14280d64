"""Byte-exact encodings of every primitive format code (Part 1 §1.6), the compact-form choices and their
thresholds, arrays of every element constructor, non-canonical forms other peers send, and decode errors
with their exact byte offsets."""

import math
import uuid

import pytest

from conformance.wire import (
    Array, Byte, Char, DecodeError, Decimal32, Decimal64, Decimal128, Described, Double, EncodeError, Float, Int,
    Long, Raw, Short, Symbol, Timestamp, UByte, UInt, ULong, UShort, decode_all, decode_value, encode_value,
)
from conformance.wire.decode import MAX_ZERO_WIDTH_ELEMENTS


def h(text: str) -> bytes:
    return bytes.fromhex(text.replace(" ", ""))


# (value, exact encoding): one row per format code, boundaries of the compact forms included
ENCODINGS = [
    (None, "40"),
    (True, "41"), (False, "42"),
    (UByte(0), "50 00"), (UByte(255), "50 ff"),
    (UShort(0x1234), "60 1234"), (UShort(0), "60 0000"),
    (UInt(0), "43"), (UInt(1), "52 01"), (UInt(255), "52 ff"), (UInt(256), "70 00000100"),
    (UInt(0xFFFFFFFF), "70 ffffffff"),
    (ULong(0), "44"), (ULong(255), "53 ff"), (ULong(256), "80 0000000000000100"),
    (ULong(2 ** 64 - 1), "80 ffffffffffffffff"),
    (Byte(-128), "51 80"), (Byte(127), "51 7f"),
    (Short(-2), "61 fffe"),
    (Int(0), "54 00"), (Int(127), "54 7f"), (Int(-128), "54 80"), (Int(128), "71 00000080"),
    (Int(-129), "71 ffffff7f"),
    (Long(0), "55 00"), (Long(-128), "55 80"), (Long(128), "81 0000000000000080"), (5, "55 05"),
    (-(2 ** 63), "81 8000000000000000"),
    (Float(1.5), "72 3fc00000"), (Float(-0.0), "72 80000000"),
    (1.5, "82 3ff8000000000000"), (Double(-0.0), "82 8000000000000000"), (math.inf, "82 7ff0000000000000"),
    (Decimal32(h("01020304")), "74 01020304"),
    (Decimal64(h("0102030405060708")), "84 0102030405060708"),
    (Decimal128(bytes(range(16))), "94 000102030405060708090a0b0c0d0e0f"),
    (Char("A"), "73 00000041"), (Char("\U0001F600"), "73 0001f600"),
    (Timestamp(1), "83 0000000000000001"), (Timestamp(-1), "83 ffffffffffffffff"),
    (uuid.UUID(int=1), "98 00000000000000000000000000000001"),
    (b"", "a0 00"), (b"ab", "a0 02 6162"), (b"x" * 255, "a0 ff" + "78" * 255),
    (b"x" * 256, "b0 00000100" + "78" * 256),
    ("", "a1 00"), ("é", "a1 02 c3a9"), ("x" * 255, "a1 ff" + "78" * 255), ("x" * 256, "b1 00000100" + "78" * 256),
    (Symbol(""), "a3 00"), (Symbol("ab"), "a3 02 6162"), (Symbol("s" * 256), "b3 00000100" + "73" * 256),
    ([], "45"), ([UInt(1)], "c0 03 01 5201"), ([None, True], "c0 03 02 4041"),
    ({}, "c1 01 00"), ({Symbol("k"): 1}, "c1 06 02 a3016b 5501"),
    (Described(ULong(0x99), 1), "00 5399 5501"),
    (Described(Symbol("x:y"), None), "00 a303783a79 40"),
    (Described(ULong(1 << 32 | 1), []), "00 800000000100000001 45"),
]


@pytest.mark.parametrize("value,hexed", ENCODINGS, ids=[h_[:14] for _, h_ in ENCODINGS])
def test_encoding_is_byte_exact_and_round_trips(value, hexed):
    wire = h(hexed)
    assert encode_value(value) == wire
    decoded, end = decode_value(wire)
    assert end == len(wire)
    assert decoded == value or (isinstance(value, float) and math.isnan(value))
    if isinstance(value, (UByte, UShort, UInt, ULong, Byte, Short, Int, Long, Float, Timestamp, Symbol, Char,
                          Decimal32, Decimal64, Decimal128)):
        assert type(decoded) is type(value)
    if isinstance(value, float) and value == 0:
        assert math.copysign(1, decoded) == math.copysign(1, value)    # -0.0 keeps its sign


def test_plain_python_values_take_their_natural_type():
    assert type(decode_value(encode_value(5))[0]) is Long
    assert type(decode_value(encode_value(1.0))[0]) is float
    assert type(decode_value(encode_value("s"))[0]) is str
    assert type(decode_value(encode_value(uuid.UUID(int=7)))[0]) is uuid.UUID
    assert decode_value(encode_value((1, 2)))[0] == [1, 2]          # tuples encode as lists


def test_nan_round_trips_bit_exact():
    wire = encode_value(float("nan"))
    assert wire[0] == 0x82 and math.isnan(decode_value(wire)[0])
    assert math.isnan(decode_value(encode_value(Float(float("nan"))))[0])


# -- list8/list32, map8/map32, array8/array32 thresholds: the 8-bit form while size (count + body) <= 255

def test_list8_up_to_255_size_bytes_then_list32():
    fits = [b"x" * 252]                       # body: a0 fc + 252 = 254 bytes; size = 255
    assert encode_value(fits) == h("c0 ff 01 a0fc") + b"x" * 252
    over = [b"x" * 253]                       # body 255 bytes; size would be 256
    assert encode_value(over) == h("d0 00000103 00000001 a0fd") + b"x" * 253
    assert decode_value(encode_value(over))[0] == over


def test_map8_up_to_255_size_bytes_then_map32():
    fits = {Symbol("k"): b"x" * 249}          # a3016b (3) + a0f9 (2) + 249 = 254
    assert encode_value(fits)[:3] == h("c1 ff 02")
    over = {Symbol("k"): b"x" * 250}
    assert encode_value(over)[:9] == h("d1 00000103 00000002")
    assert decode_value(encode_value(over))[0] == over


def test_array8_up_to_255_size_bytes_then_array32():
    fits = Array("ubyte", [UByte(1)] * 253)          # count (1) + constructor (1) + 253 = 255
    assert encode_value(fits)[:4] == h("e0 ff fd 50")
    over = Array("ubyte", [UByte(1)] * 254)
    assert encode_value(over)[:10] == h("f0 00000103 000000fe 50")
    assert decode_value(encode_value(over))[0] == over


def test_more_than_255_elements_force_the_32_bit_forms():
    many = [None] * 256
    assert encode_value(many)[:9] == h("d0 00000104 00000100")
    nulls = Array("null", [None] * 256)       # zero-width elements: tiny size, big count
    assert encode_value(nulls) == h("f0 00000005 00000100 40")
    assert decode_value(encode_value(nulls))[0] == nulls


# -- arrays: one constructor for every element ------------------------------------------------------------

ARRAYS = [
    (Array("boolean", [True, False]), "e0 04 02 56 0100"),
    (Array("ubyte", [UByte(1)]), "e0 03 01 50 01"),
    (Array("ushort", [UShort(1)]), "e0 04 01 60 0001"),
    (Array("uint", [UInt(1), UInt(0x10000)]), "e0 0a 02 70 00000001 00010000"),
    (Array("ulong", [ULong(1)]), "e0 0a 01 80 0000000000000001"),
    (Array("byte", [Byte(-1)]), "e0 03 01 51 ff"),
    (Array("short", [Short(-1)]), "e0 04 01 61 ffff"),
    (Array("int", [Int(-1)]), "e0 06 01 71 ffffffff"),
    (Array("long", [Long(-1)]), "e0 0a 01 81 ffffffffffffffff"),
    (Array("float", [Float(1.5)]), "e0 06 01 72 3fc00000"),
    (Array("double", [1.5]), "e0 0a 01 82 3ff8000000000000"),
    (Array("decimal32", [Decimal32(h("01020304"))]), "e0 06 01 74 01020304"),
    (Array("decimal64", [Decimal64(bytes(8))]), "e0 0a 01 84 0000000000000000"),
    (Array("decimal128", [Decimal128(bytes(16))]), "e0 12 01 94" + "00" * 16),
    (Array("char", [Char("a")]), "e0 06 01 73 00000061"),
    (Array("timestamp", [Timestamp(2)]), "e0 0a 01 83 0000000000000002"),
    (Array("uuid", [uuid.UUID(int=0)]), "e0 12 01 98" + "00" * 16),
    (Array("binary", [b"a", b""]), "e0 05 02 a0 0161 00"),
    (Array("string", ["a"]), "e0 04 01 a1 0161"),
    (Array("symbol", [Symbol("a"), Symbol("b")]), "e0 06 02 a3 0161 0162"),
    (Array("symbol", []), "e0 02 00 a3"),
    (Array("null", [None, None]), "e0 02 02 40"),
    (Array("list", [[1], []]), "e0 08 02 c0 03015501 0100"),
    (Array("map", [{}]), "e0 04 01 c1 0100"),
    (Array("array", [Array("uint", [UInt(1)])]), "e0 09 01 e0 06 01 70 00000001"),
    (Array("symbol", [Symbol("a")], descriptor=Symbol("d")), "e0 08 01 00 a30164 a3 0161"),
    (Array("symbol", [Symbol("s" * 256)]), "f0 00000109 00000001 b3 00000100" + "73" * 256),
    # explicit element constructors: the compact forms a peer may choose
    (Array(0x52, [UInt(1), UInt(2)]), "e0 04 02 52 0102"),
    (Array(0x43, [UInt(0), UInt(0)]), "e0 02 02 43"),
    (Array(0x44, [ULong(0)]), "e0 02 01 44"),
    (Array(0x53, [ULong(7)]), "e0 03 01 53 07"),
    (Array(0x54, [Int(-1)]), "e0 03 01 54 ff"),
    (Array(0x55, [Long(-1)]), "e0 03 01 55 ff"),
    (Array(0x41, [True, True, True]), "e0 02 03 41"),
    (Array(0x42, [False]), "e0 02 01 42"),
    (Array(0xB3, [Symbol("a")]), "e0 07 01 b3 00000001 61"),
    (Array(0xB1, ["a"]), "e0 07 01 b1 00000001 61"),
    (Array(0xB0, [b"a"]), "e0 07 01 b0 00000001 61"),
    (Array(0xD0, [[]]), "e0 0a 01 d0 00000004 00000000"),
    (Array(0x45, [[], []]), "e0 02 02 45"),
]


@pytest.mark.parametrize("array,hexed", ARRAYS, ids=[h_[:16] for _, h_ in ARRAYS])
def test_array_encoding_is_byte_exact_and_round_trips(array, hexed):
    wire = h(hexed)
    assert encode_value(array) == wire
    decoded, end = decode_value(wire)
    assert end == len(wire) and decoded == array
    assert decoded.element_code == wire[wire.index(bytes([decoded.element_code]), 3)]
    if array.element_code is not None:
        assert decoded.element_code == array.element_code


def test_array_element_code_must_match_the_values():
    with pytest.raises(EncodeError, match="uint0"):
        encode_value(Array(0x43, [UInt(1)]))
    with pytest.raises(EncodeError, match="8-bit"):
        encode_value(Array(0xA3, [Symbol("s" * 256)]))
    with pytest.raises(EncodeError):
        encode_value(Array("uint", [-1]))
    with pytest.raises(ValueError, match="not an AMQP format code"):
        Array(0x99, [])


def test_proton_style_arrays_decode():
    """proton always sends array32 with the full-width element constructor."""
    assert decode_value(h("f0 0000000d 00000002 70 00000000 00000001"))[0] == Array("uint", [0, 1])
    assert decode_value(h("f0 00000007 00000002 56 01 00"))[0] == Array("boolean", [True, False])
    described = decode_value(h("f0 00000011 00000001 00 a304 64657363 b3 00000001 61"))[0]
    assert described.descriptor == "desc" and described.items == (Symbol("a"),)


# -- non-canonical forms: legal encodings our encoder never chooses, decoded all the same ----------------

NON_CANONICAL = [
    ("56 01", True), ("56 00", False), ("70 00000001", UInt(1)), ("70 00000000", UInt(0)),
    ("80 0000000000000000", ULong(0)), ("53 00", ULong(0)), ("52 00", UInt(0)), ("71 00000001", Int(1)),
    ("81 0000000000000001", Long(1)), ("b0 00000001 61", b"a"), ("b1 00000001 61", "a"),
    ("b3 00000001 61", Symbol("a")), ("d0 00000004 00000000", []), ("c0 01 00", []),
    ("d0 00000006 00000001 5201", [UInt(1)]), ("d1 00000004 00000000", {}),
    ("f0 00000005 00000000 a3", Array("symbol", [])),
]


@pytest.mark.parametrize("hexed,value", NON_CANONICAL, ids=[x for x, _ in NON_CANONICAL])
def test_non_canonical_encodings_decode(hexed, value):
    decoded, end = decode_value(h(hexed))
    assert decoded == value and type(decoded) is type(value) and end == len(h(hexed))


def test_reserved_descriptor_types_decode_as_described_values():
    """Part 1 §1.5: descriptors other than ulong and symbol are reserved, not invalid."""
    decoded = decode_value(h("00 a1 01 78 40"))[0]
    assert decoded == Described("x", None)


def test_decode_all_reads_consecutive_values():
    assert decode_all(h("43 5201 40")) == [0, 1, None]


def test_raw_bytes_are_inserted_verbatim():
    assert encode_value([Raw(b"\x99")]) == h("c0 02 01 99")


# -- malformed input: DecodeError with the exact offset ---------------------------------------------------

MALFORMED = [
    ("", 0, "expected a format code"),
    ("ff", 0, "unknown format code 0xff"),
    ("56 02", 1, "boolean byte"),
    ("70 0000", 1, "truncated uint"),
    ("52", 1, "truncated smalluint"),
    ("98 00", 1, "truncated uuid"),
    ("a0 05 61", 2, "overruns"),
    ("b0 00000005", 5, "overruns"),
    ("a1 02 ff fe", 2, "UTF-8"),
    ("a3 01 80", 2, "ASCII"),
    ("73 0000d800", 1, "Unicode scalar"),
    ("73 00110000", 1, "Unicode scalar"),
    ("c0 05 02 5201", 3, "overruns"),
    ("c0 00 00", 1, "cannot hold its count"),
    ("c0 00", 1, "truncated list8 header"),
    ("d0 00000002 0000", 1, "truncated list32 header"),
    ("c0 02 05 40", 3, "count 5 exceeds"),
    ("c0 02 01 52 01", 4, "truncated smalluint"),
    ("c0 03 01 40 40", 4, "size disagrees"),
    ("c1 02 01 40", 1, "odd"),
    ("c1 07 04 5501 40 5501 40", 6, "duplicate map key"),
    ("c1 07 04 5501 40 5401 40", 6, "distinct AMQP values but equal Python"),
    ("c1 03 02 45 40", 3, "unhashable"),
    ("e0 01 00", 3, "element constructor"),
    ("e0 02 01 00", 4, "expected a format code"),
    ("e0 04 01 00 5301", 6, "element constructor after the descriptor"),
    ("e0 02 01 ff", 3, "invalid array element constructor"),
    ("e0 03 05 52 01", 4, "count 5 exceeds"),
    ("e0 04 01 52 01 02", 5, "size disagrees"),
    ("e0 03 01 56 07", 4, "boolean byte"),
    ("f0 00000005 00010001 40", 9, "zero-width"),
    ("00", 1, "expected a format code"),
    ("00 53", 2, "truncated smallulong"),
]


@pytest.mark.parametrize("hexed,offset,reason", MALFORMED, ids=[x or "empty" for x, _, _ in MALFORMED])
def test_malformed_values_raise_decode_error_at_the_offset(hexed, offset, reason):
    with pytest.raises(DecodeError) as info:
        decode_value(h(hexed))
    assert info.value.offset == offset, info.value
    assert reason in info.value.reason
    assert str(info.value).startswith(f"at byte {offset}: ")


def test_zero_width_arrays_up_to_the_limit_decode():
    wire = h("f0 00000005") + MAX_ZERO_WIDTH_ELEMENTS.to_bytes(4, "big") + h("40")
    assert len(decode_value(wire)[0]) == MAX_ZERO_WIDTH_ELEMENTS


def test_nesting_deeper_than_the_limit_is_a_decode_error():
    value = []
    for _ in range(80):
        value = [value]
    with pytest.raises(DecodeError, match="nesting too deep"):
        decode_value(encode_value(value))
    shallow = []
    for _ in range(30):
        shallow = [shallow]
    assert decode_value(encode_value(shallow))[0] == shallow


def test_offsets_are_absolute_with_a_start_offset_and_a_base():
    with pytest.raises(DecodeError) as info:
        decode_value(h("40 40 ff"), 2)
    assert info.value.offset == 2
    with pytest.raises(DecodeError) as info:
        decode_value(h("ff"), base=100)
    assert info.value.offset == 100


def test_encoding_errors_are_encode_errors():
    for bad in (UInt, ULong, UByte):
        with pytest.raises(ValueError):
            bad(-1)
    for value in (object(), Float(1e300), "\ud800", Symbol("é"), {1: object()}):
        with pytest.raises(EncodeError):
            encode_value(value)
