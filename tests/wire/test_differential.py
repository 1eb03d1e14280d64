"""Differential tests against python-qpid-proton's `Data` codec (hypothesis).

- Values of every AMQP type (null, boolean, ubyte..ulong, byte..long, float, double, decimal32/64/128, char,
  timestamp, uuid, binary, string, symbol, list, map, array of every element type, described) encoded by us
  decode identically in proton; proton's encodings of the same values decode identically in ours.
- Composites: every list composite we encode decodes in proton as a described list whose descriptor and
  fields match our own decoding; the same composites built field by field with proton's Data API (list32 and
  full-width codes, i.e. forms we never emit) decode in ours to the composite we started from.

Proton quirks handled here (documented, not worked around in the codec):
- binary values come back from `Data.get_object` as memoryviews into the Data buffer: copied at once.
- decimal32/decimal64 are ints in proton, bytes in ours; decimal128 is bytes in both.
- binary map keys make proton's `get_object` fail (a writable memoryview is unhashable): keys are never
  binary here.
- proton's Python dicts merge keys that are equal in Python (symbol "a" and string "a", long 1 and uint 1),
  exactly like ours refuses them; decimal32 0 and false collide there too (proton's decimal32 is an int):
  generated maps keep keys distinct as Python values on both sides.
- proton 0.40 loses the value that follows a described value whose value is itself described: the list
  `[@256 @256 null, null]` (ours or proton's own encoding) reads back from `Data` as one element, and such a
  map fails in `get_object`. Our decoder reads those bytes correctly; the generated values never nest a
  described value directly in another.
- proton encodes an array of described values as one described array (descriptor at the array level);
  ours represents it the same way (`Array.descriptor`).
- floats compare bit-exact (so -0.0 != 0.0), NaNs compare as "some NaN" (payload bits may change when proton
  converts between C float and double).
"""

import math
import struct
import uuid

import proton
from hypothesis import given, strategies as st
from proton import Data as ProtonData
from wire_strategies import LIST_COMPOSITES, any_composite

from conformance.wire import (
    Array, Byte, Char, Composite, Decimal32, Decimal64, Decimal128, Described, Float, Int, Long, Short, Symbol,
    Timestamp, UByte, UInt, ULong, UShort, decode_value, encode_composite, encode_value,
)
from conformance.wire.performatives import wire_type

ascii_text = st.text(alphabet=st.characters(max_codepoint=127), max_size=20)

# element type -> (our strategy, converter to proton's value, proton's type code for arrays)
SCALARS = {
    "null": (st.none(), lambda v: None, ProtonData.NULL),
    "boolean": (st.booleans(), lambda v: v, ProtonData.BOOL),
    "ubyte": (st.integers(0, 0xFF).map(UByte), proton.ubyte, ProtonData.UBYTE),
    "ushort": (st.integers(0, 0xFFFF).map(UShort), proton.ushort, ProtonData.USHORT),
    "uint": (st.integers(0, 0xFFFFFFFF).map(UInt), proton.uint, ProtonData.UINT),
    "ulong": (st.integers(0, 2 ** 64 - 1).map(ULong), proton.ulong, ProtonData.ULONG),
    "byte": (st.integers(-128, 127).map(Byte), proton.byte, ProtonData.BYTE),
    "short": (st.integers(-2 ** 15, 2 ** 15 - 1).map(Short), proton.short, ProtonData.SHORT),
    "int": (st.integers(-2 ** 31, 2 ** 31 - 1).map(Int), proton.int32, ProtonData.INT),
    "long": (st.integers(-2 ** 63, 2 ** 63 - 1).map(Long), int, ProtonData.LONG),
    "float": (st.floats(width=32).map(Float), proton.float32, ProtonData.FLOAT),
    "double": (st.floats(), float, ProtonData.DOUBLE),
    "decimal32": (st.binary(min_size=4, max_size=4).map(Decimal32),
                  lambda v: proton.decimal32(int.from_bytes(v, "big")), ProtonData.DECIMAL32),
    "decimal64": (st.binary(min_size=8, max_size=8).map(Decimal64),
                  lambda v: proton.decimal64(int.from_bytes(v, "big")), ProtonData.DECIMAL64),
    "decimal128": (st.binary(min_size=16, max_size=16).map(Decimal128), lambda v: proton.decimal128(bytes(v)),
                   ProtonData.DECIMAL128),
    "char": (st.characters(exclude_categories=("Cs",)).map(Char), proton.char, ProtonData.CHAR),
    "timestamp": (st.integers(-2 ** 63, 2 ** 63 - 1).map(Timestamp), proton.timestamp, ProtonData.TIMESTAMP),
    "uuid": (st.uuids(), lambda v: v, ProtonData.UUID),
    "binary": (st.binary(max_size=300), bytes, ProtonData.BINARY),
    "string": (st.text(max_size=300), str, ProtonData.STRING),
    "symbol": (st.text(alphabet=st.characters(max_codepoint=127), max_size=300).map(Symbol), proton.symbol,
               ProtonData.SYMBOL),
}


def _pair(name):
    strategy, convert, _ = SCALARS[name]
    return strategy.map(lambda v: (v, convert(v)))


scalar_pairs = st.one_of(*[_pair(name) for name in SCALARS])
key_pairs = st.one_of(*[_pair(name) for name in SCALARS if name not in ("float", "double", "binary")])


def _array_pairs(name, descriptor=None):
    strategy, convert, code = SCALARS[name]
    return st.lists(strategy, max_size=6).map(lambda xs: (
        Array(name, xs, descriptor),
        proton.Array(proton.UNDESCRIBED if descriptor is None else proton.symbol(descriptor), code,
                     *[convert(x) for x in xs])))


array_pairs = st.one_of(
    *[_array_pairs(name) for name in SCALARS],
    _array_pairs("symbol", descriptor=Symbol("x:d")), _array_pairs("ulong", descriptor=Symbol("y:d")),
)


def _not_described(pair):
    """A described value directly inside another is wrapped in a list (see the proton quirk above)."""
    return ([pair[0]], [pair[1]]) if isinstance(pair[0], Described) else pair


def _maps(children):
    # keys distinct as Python values on both sides (proton's may collide where ours do not)
    return st.lists(st.tuples(key_pairs, children), max_size=5,
                    unique_by=(lambda kv: kv[0][0], lambda kv: kv[0][1])).map(
        lambda kvs: ({k: o for (k, _), (o, _) in kvs}, {pk: p for (_, pk), (_, p) in kvs}))


value_pairs = st.recursive(
    st.one_of(scalar_pairs, array_pairs),
    lambda children: st.one_of(
        st.lists(children, max_size=5).map(lambda items: ([o for o, _ in items], [p for _, p in items])),
        _maps(children),
        st.tuples(st.one_of(st.integers(0x100, 2 ** 64 - 1).map(ULong), ascii_text.map(Symbol)),
                  children.map(_not_described)).map(
            lambda t: (Described(t[0], t[1][0]), proton.Described(
                proton.ulong(t[0]) if isinstance(t[0], int) else proton.symbol(t[0]), t[1][1]))),
        st.lists(st.lists(scalar_pairs, max_size=3), max_size=3).map(lambda lists: (
            Array("list", [[o for o, _ in xs] for xs in lists]),
            proton.Array(proton.UNDESCRIBED, ProtonData.LIST, *[[p for _, p in xs] for xs in lists]))),
        st.lists(array_pairs, max_size=1).map(lambda arrays: (
            Array("array", [o for o, _ in arrays]),
            proton.Array(proton.UNDESCRIBED, ProtonData.ARRAY, *[p for _, p in arrays]))),
    ),
    max_leaves=12,
)

# -- one comparable form for our values and proton's ------------------------------------------------------

_INTS = ((UByte, proton.ubyte, "ubyte"), (UShort, proton.ushort, "ushort"), (UInt, proton.uint, "uint"),
         (ULong, proton.ulong, "ulong"), (Byte, proton.byte, "byte"), (Short, proton.short, "short"),
         (Int, proton.int32, "int"), (Timestamp, proton.timestamp, "timestamp"))


def canon(v):
    """(type name, value) recursively; the same for our objects and proton's."""
    if isinstance(v, Composite):
        fields = [getattr(v, f.attr) for f in v.FIELDS]
        while fields and fields[-1] is None:
            fields.pop()
        return ("described", ("ulong", v.DESCRIPTOR), ("list", [canon(x) for x in fields]))
    if isinstance(v, (proton.Described, Described)):
        return ("described", canon(v.descriptor), canon(v.value))
    if isinstance(v, proton.Array):
        return ("array", canon(v.descriptor) if v.descriptor is not proton.UNDESCRIBED else None,
                [canon(x) for x in v.elements])
    if isinstance(v, Array):
        return ("array", canon(v.descriptor) if v.descriptor is not None else None, [canon(x) for x in v.items])
    if isinstance(v, dict):
        return ("map", [(canon(k), canon(x)) for k, x in v.items()])     # maps are ordered (§1.6.23)
    if isinstance(v, list):
        return ("list", [canon(x) for x in v])
    for ours, theirs, name in _INTS:
        if isinstance(v, (ours, theirs)):
            return (name, int(v))
    if isinstance(v, (Float, proton.float32)):
        return ("float", "nan" if math.isnan(v) else struct.pack(">f", v))
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
    if v is None:
        return ("null", None)
    if isinstance(v, bool):
        return ("boolean", v)
    if isinstance(v, int):
        return ("long", int(v))
    if isinstance(v, float):
        return ("double", "nan" if math.isnan(v) else struct.pack(">d", v))
    if isinstance(v, uuid.UUID):
        return ("uuid", v.bytes)
    if isinstance(v, (bytes, memoryview)):
        return ("binary", bytes(v))
    if isinstance(v, str):
        return ("string", v)
    raise TypeError(f"no canonical form for {type(v).__name__}")


def _materialize(v):
    """Copy proton's memoryviews out before the Data object that owns them is freed."""
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


def proton_decode(data: bytes):
    d = ProtonData()
    assert d.decode(data) == len(data)
    d.rewind()
    assert d.next() is not None
    return _materialize(d.get_object())


def proton_encode(value) -> bytes:
    d = ProtonData()
    d.put_object(value)
    return d.encode()


# -- values ---------------------------------------------------------------------------------------------------

@given(value_pairs)
def test_ours_decodes_identically_in_proton(pair):
    ours, theirs = pair
    assert canon(proton_decode(encode_value(ours))) == canon(theirs)


@given(value_pairs)
def test_protons_encodings_decode_identically_in_ours(pair):
    ours, theirs = pair
    wire = proton_encode(theirs)
    value, end = decode_value(wire)
    assert end == len(wire)
    assert canon(value) == canon(ours)


SPECIAL = [0.0, -0.0, math.inf, -math.inf, math.nan]


@given(st.sampled_from(SPECIAL + [5e-324, 1.7976931348623157e308]).map(lambda x: (x, float(x)))
       | st.sampled_from(SPECIAL + [1.401298464324817e-45, 3.4028234663852886e38]).map(
           lambda x: (Float(x), proton.float32(x))))
def test_special_doubles_and_floats(pair):
    ours, theirs = pair
    assert canon(proton_decode(encode_value(ours))) == canon(theirs)
    assert canon(decode_value(proton_encode(theirs))[0]) == canon(ours)


def test_compact_array_constructors_decode_in_proton():
    for ours in (Array(0x52, [UInt(3), UInt(200)]), Array(0x43, [UInt(0)] * 3), Array(0x41, [True] * 2),
                 Array(0x53, [ULong(9)]), Array(0x54, [Int(-3)]), Array(0x55, [Long(-3)]), Array(0xB3, [Symbol("s")])):
        assert canon(proton_decode(encode_value(ours))) == canon(ours)


# -- composites ---------------------------------------------------------------------------------------------

@given(any_composite)
def test_our_composites_decode_in_proton_as_described_lists(obj):
    theirs = proton_decode(encode_composite(obj))
    assert isinstance(theirs, proton.Described) and theirs.descriptor == obj.DESCRIPTOR
    assert isinstance(theirs.descriptor, proton.ulong)
    ours = decode_value(encode_composite(obj))[0]
    assert ours == obj and canon(theirs) == canon(ours)


_PROTON_OF = {"uint": proton.uint, "ulong": proton.ulong, "ushort": proton.ushort, "ubyte": proton.ubyte,
              "int": proton.int32, "long": int, "byte": proton.byte, "short": proton.short, "symbol": proton.symbol,
              "timestamp": proton.timestamp, "boolean": bool, "string": str, "binary": bytes, "uuid": lambda v: v}
_ARRAY_CODE = {"symbol": ProtonData.SYMBOL, "uint": ProtonData.UINT, "string": ProtonData.STRING}


def to_proton(value, prim: str = "*", multiple: bool = False):
    """Our field value as proton's typed value, the declared type applied to plain values."""
    if value is None:
        return None
    if isinstance(value, Composite):
        fields = [getattr(value, f.attr) for f in value.FIELDS]
        while fields and fields[-1] is None:
            fields.pop()
        return proton.Described(proton.ulong(value.DESCRIPTOR),
                                [to_proton(v, wire_type(f.type), f.multiple) for v, f in zip(fields, value.FIELDS)])
    if multiple and isinstance(value, list):
        return proton.Array(proton.UNDESCRIBED, _ARRAY_CODE[prim], *[to_proton(v, prim) for v in value])
    if prim == "map":
        return {to_proton(k, "symbol" if type(k) is str else "*"): to_proton(v) for k, v in value.items()}
    if prim in _PROTON_OF and not isinstance(value, (UInt, ULong, Long, Symbol)):
        return _PROTON_OF[prim](value)
    if isinstance(value, dict):
        return {to_proton(k): to_proton(v) for k, v in value.items()}
    for ours, theirs, _ in _INTS:
        if type(value) is ours:
            return theirs(value)
    if type(value) is Symbol:
        return proton.symbol(value)
    return value


@given(any_composite)
def test_composites_built_with_protons_data_api_decode_in_ours(obj):
    d = ProtonData()
    d.put_described()
    d.enter()
    d.put_ulong(obj.DESCRIPTOR)
    d.put_list()
    d.enter()
    fields = [getattr(obj, f.attr) for f in obj.FIELDS]
    while fields and fields[-1] is None:
        fields.pop()
    for value, spec in zip(fields, obj.FIELDS):
        converted = to_proton(value, wire_type(spec.type), spec.multiple)
        if converted is None:
            d.put_null()
        else:
            d.put_object(converted)
    d.exit()
    d.exit()
    wire = d.encode()
    decoded, end = decode_value(wire)
    assert end == len(wire)
    assert type(decoded) is type(obj) and decoded == obj


def test_every_list_composite_class_is_covered():
    assert len(LIST_COMPOSITES) == 33
