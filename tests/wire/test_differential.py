"""Differential tests against python-qpid-proton's Data codec: our encodings decode identically in proton,
and proton's encodings decode identically in ours, for values of every AMQP type (hypothesis)."""

import uuid

import proton
from hypothesis import given, strategies as st
from proton import Data

from conformance.wire import (
    Array, Byte, Char, Decimal32, Decimal64, Decimal128, Described, Float, Int, Long, Short, Symbol, Timestamp,
    UByte, UInt, ULong, UShort, decode_value, encode_composite, encode_value, Flow, Transfer, Attach, Source, Target,
)

# (strategy of our values, converter to proton's value)
SCALARS = [
    (st.none(), lambda v: None),
    (st.booleans(), lambda v: v),
    (st.integers(0, 0xFF).map(UByte), proton.ubyte),
    (st.integers(0, 0xFFFF).map(UShort), proton.ushort),
    (st.integers(0, 0xFFFFFFFF).map(UInt), proton.uint),
    (st.integers(0, 2 ** 64 - 1).map(ULong), proton.ulong),
    (st.integers(-128, 127).map(Byte), proton.byte),
    (st.integers(-2 ** 15, 2 ** 15 - 1).map(Short), proton.short),
    (st.integers(-2 ** 31, 2 ** 31 - 1).map(Int), proton.int32),
    (st.integers(-2 ** 63, 2 ** 63 - 1).map(Long), int),
    (st.floats(width=32, allow_nan=False).map(Float), proton.float32),
    (st.floats(allow_nan=False), float),
    (st.binary(min_size=4, max_size=4).map(Decimal32), lambda v: proton.decimal32(int.from_bytes(v, "big"))),
    (st.binary(min_size=8, max_size=8).map(Decimal64), lambda v: proton.decimal64(int.from_bytes(v, "big"))),
    (st.binary(min_size=16, max_size=16).map(Decimal128), lambda v: proton.decimal128(bytes(v))),
    (st.characters(exclude_categories=("Cs",)).map(Char), proton.char),
    (st.integers(-2 ** 63, 2 ** 63 - 1).map(Timestamp), proton.timestamp),
    (st.uuids(), lambda v: v),
    (st.binary(max_size=300), bytes),
    (st.text(max_size=300), str),
    (st.text(alphabet=st.characters(max_codepoint=127), max_size=300).map(Symbol), proton.symbol),
]

scalar = st.one_of(*[s.map(lambda v, c=c: (v, c)) for s, c in SCALARS])


value_pairs = st.recursive(
    scalar.map(lambda p: (p[0], p[1](p[0]))),
    lambda children: st.one_of(
        st.lists(children, max_size=5).map(lambda items: ([o for o, _ in items], [p for _, p in items])),
        st.lists(st.tuples(st.text(alphabet=st.characters(max_codepoint=127), max_size=8), children), max_size=5,
                 unique_by=lambda kv: kv[0]).map(
            lambda kvs: ({Symbol(k): o for k, (o, _) in kvs}, {proton.symbol(k): p for k, (_, p) in kvs})),
        st.tuples(st.integers(0x100, 0xFFFF), children).map(
            lambda t: (Described(ULong(t[0]), t[1][0]), proton.Described(proton.ulong(t[0]), t[1][1]))),
    ),
    max_leaves=12,
)

symbol_arrays = st.lists(st.text(alphabet=st.characters(max_codepoint=127), max_size=10), max_size=8).map(
    lambda xs: (Array("symbol", tuple(Symbol(x) for x in xs)),
                proton.Array(proton.UNDESCRIBED, Data.SYMBOL, *[proton.symbol(x) for x in xs])))
uint_arrays = st.lists(st.integers(0, 0xFFFFFFFF), max_size=8).map(
    lambda xs: (Array("uint", tuple(UInt(x) for x in xs)),
                proton.Array(proton.UNDESCRIBED, Data.UINT, *[proton.uint(x) for x in xs])))


def canon(v):
    """A comparable form: (type name, value) recursively, the same for our and proton's objects."""
    if isinstance(v, proton.Described):
        return ("described", canon(v.descriptor), canon(v.value))
    if isinstance(v, Described):
        return ("described", canon(v.descriptor), canon(v.value))
    if isinstance(v, proton.Array):
        return ("array", [canon(x) for x in v.elements])
    if isinstance(v, Array):
        return ("array", [canon(x) for x in v.items])
    if isinstance(v, dict):
        return ("map", sorted((repr(canon(k)), canon(x)) for k, x in v.items()))
    if isinstance(v, list):
        return ("list", [canon(x) for x in v])
    for ours, theirs, name in ((UByte, proton.ubyte, "ubyte"), (UShort, proton.ushort, "ushort"),
                               (UInt, proton.uint, "uint"), (ULong, proton.ulong, "ulong"),
                               (Byte, proton.byte, "byte"), (Short, proton.short, "short"),
                               (Int, proton.int32, "int"), (Timestamp, proton.timestamp, "timestamp")):
        if isinstance(v, (ours, theirs)):
            return (name, int(v))
    if isinstance(v, (Float, proton.float32)):
        return ("float", float(v))
    if isinstance(v, (Symbol, proton.symbol)):
        return ("symbol", str(v))
    if isinstance(v, (Char, proton.char)):
        return ("char", str(v))
    if isinstance(v, (Decimal32, proton.decimal32)):
        return ("decimal32", int.from_bytes(v, "big") if isinstance(v, bytes) else int(v))
    if isinstance(v, (Decimal64, proton.decimal64)):
        return ("decimal64", int.from_bytes(v, "big") if isinstance(v, bytes) else int(v))
    if isinstance(v, (Decimal128, proton.decimal128)):
        return ("decimal128", bytes(v))
    if isinstance(v, bool) or v is None:
        return ("bool" if v is not None else "null", v)
    if isinstance(v, int):
        return ("long", int(v))
    if isinstance(v, float):
        return ("double", v)
    if isinstance(v, uuid.UUID):
        return ("uuid", v.bytes)
    if isinstance(v, (bytes, memoryview)):   # proton 0.40 returns binary as memoryview
        return ("binary", bytes(v))
    if isinstance(v, str):
        return ("string", v)
    raise TypeError(type(v))


def proton_decode(data: bytes):
    d = Data()
    consumed = d.decode(data)
    assert consumed == len(data)
    d.rewind()
    d.next()
    return _materialize(d.get_object())


def _materialize(v):
    """Proton quirk: binary values are memoryviews into the Data buffer, invalid once it is freed."""
    if isinstance(v, memoryview):
        return bytes(v)
    if isinstance(v, proton.Described):
        return proton.Described(_materialize(v.descriptor), _materialize(v.value))
    if isinstance(v, proton.Array):
        return proton.Array(v.descriptor, v.type, *[_materialize(x) for x in v.elements])
    if isinstance(v, dict):
        return {_materialize(k): _materialize(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_materialize(x) for x in v]
    return v


def proton_encode(value) -> bytes:
    d = Data()
    d.put_object(value)
    return d.encode()


@given(st.one_of(value_pairs, symbol_arrays, uint_arrays))
def test_ours_decodes_identically_in_proton(pair):
    ours, theirs = pair
    assert canon(proton_decode(encode_value(ours))) == canon(theirs)


@given(st.one_of(value_pairs, symbol_arrays, uint_arrays))
def test_protons_decode_identically_in_ours(pair):
    ours, theirs = pair
    value, end = decode_value(proton_encode(theirs))
    assert canon(value) == canon(ours)


@given(st.integers(0, 0xFFFFFFFF), st.integers(0, 0xFFFFFFFF), st.booleans())
def test_performatives_decode_in_proton_as_described_lists(count, credit, drain):
    flow = Flow(next_incoming_id=count, incoming_window=credit, next_outgoing_id=count, outgoing_window=1,
                handle=0, delivery_count=count, link_credit=credit, drain=drain)
    described = proton_decode(encode_composite(flow))
    assert int(described.descriptor) == 0x13
    fields = described.value
    assert fields[:7] == [count, credit, count, 1, 0, count, credit]
    assert (fields[8] if len(fields) > 8 else False) == drain
    attach = Attach(name="n", handle=1, role=True, source=Source(address="q"), target=Target(),
                    initial_delivery_count=count)
    d = proton_decode(encode_composite(attach))
    assert int(d.descriptor) == 0x12 and d.value[0] == "n" and d.value[2] is True and d.value[9] == count
    t = proton_decode(encode_composite(Transfer(handle=0, delivery_id=count, delivery_tag=b"x")))
    assert int(t.descriptor) == 0x14 and t.value[1] == count and bytes(t.value[2]) == b"x"
