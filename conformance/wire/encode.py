"""Encoder for AMQP 1.0 values and composite types (Part 1 §1.6 encodings, Part 1 §1.4 composites).

This module owns turning Python values into bytes. It chooses the most compact legal encoding (uint0,
smalluint, ulong0, smallulong, smallint, smalllong, list0, list8, map8, vbin8, str8, sym8, array8, true/false)
unless told otherwise: an explicit wrapper type, an `Array` with an element constructor, or `Raw` bytes are
sent exactly as given, which is how negative cases put invalid frames on the wire. Array elements of number
types use their fixed-width constructor unless one is given. Composite encoders are generated per class from
the field tables at import (see `_compile`). It never decodes and never does I/O.
"""

from __future__ import annotations

import struct
import uuid as _uuid
from typing import Any

from .performatives import COMPOSITES, Composite, ValueSection, wire_type
from .types import (
    Array, Binary, Byte, Char, Decimal32, Decimal64, Decimal128, Described, Double, Float, Int, Long, Raw,
    Short, String, Symbol, Timestamp, UByte, UInt, ULong, UShort, _Fixed,
)


class EncodeError(ValueError):
    """A value cannot be encoded as asked (wrong Python type for a field, value out of range)."""


_B = struct.Struct(">B").pack
_b = struct.Struct(">b").pack
_H = struct.Struct(">H").pack
_h = struct.Struct(">h").pack
_I = struct.Struct(">I").pack
_i = struct.Struct(">i").pack
_Q = struct.Struct(">Q").pack
_q = struct.Struct(">q").pack
_f = struct.Struct(">f").pack
_d = struct.Struct(">d").pack
_BB = struct.Struct(">BB").pack
_II = struct.Struct(">II").pack
_BI = struct.Struct(">BI").pack

NULL = b"\x40"
TRUE = b"\x41"
FALSE = b"\x42"


# -- scalar encoders: value -> bytes (constructor included) ------------------------------------------------

_SMALL_UINT = [b"\x43"] + [bytes((0x52, i)) for i in range(1, 256)]
_SMALL_ULONG = [b"\x44"] + [bytes((0x53, i)) for i in range(1, 256)]


_CODE_I = struct.Struct(">BI").pack


def _uint(v: int) -> bytes:
    if 0 <= v < 256:
        return _SMALL_UINT[v]
    if v > 0xFFFFFFFF or v < 0:
        raise EncodeError(f"uint out of range: {v}")
    return _CODE_I(0x70, v)


def _ulong(v: int) -> bytes:
    if 0 <= v < 256:
        return _SMALL_ULONG[v]
    if v > 0xFFFFFFFFFFFFFFFF or v < 0:
        raise EncodeError(f"ulong out of range: {v}")
    return b"\x80" + _Q(v)


def _int(v: int) -> bytes:
    if -128 <= v <= 127:
        return b"\x54" + _b(v)
    if not -0x80000000 <= v <= 0x7FFFFFFF:
        raise EncodeError(f"int out of range: {v}")
    return b"\x71" + _i(v)


def _long(v: int) -> bytes:
    if -128 <= v <= 127:
        return b"\x55" + _b(v)
    if not -0x8000000000000000 <= v <= 0x7FFFFFFFFFFFFFFF:
        raise EncodeError(f"long out of range: {v}")
    return b"\x81" + _q(v)


def _ubyte(v: int) -> bytes:
    if not 0 <= v <= 0xFF:
        raise EncodeError(f"ubyte out of range: {v}")
    return b"\x50" + _B(v)


def _ushort(v: int) -> bytes:
    if not 0 <= v <= 0xFFFF:
        raise EncodeError(f"ushort out of range: {v}")
    return b"\x60" + _H(v)


def _byte(v: int) -> bytes:
    if not -128 <= v <= 127:
        raise EncodeError(f"byte out of range: {v}")
    return b"\x51" + _b(v)


def _short(v: int) -> bytes:
    if not -0x8000 <= v <= 0x7FFF:
        raise EncodeError(f"short out of range: {v}")
    return b"\x61" + _h(v)


def _bool(v: Any) -> bytes:
    return TRUE if v else FALSE


def _binary(v: bytes) -> bytes:
    n = len(v)
    return (b"\xa0" + _B(n) if n < 256 else b"\xb0" + _I(n)) + bytes(v)


def _string(v: str) -> bytes:
    data = v.encode("utf-8")
    n = len(data)
    return (b"\xa1" + _B(n) if n < 256 else b"\xb1" + _I(n)) + data


def _symbol(v: str) -> bytes:
    try:
        data = v.encode("ascii")
    except UnicodeEncodeError as exc:
        raise EncodeError(f"symbol must be ASCII: {v!r}") from exc
    n = len(data)
    return (b"\xa3" + _B(n) if n < 256 else b"\xb3" + _I(n)) + data


def _timestamp(v: int) -> bytes:
    return b"\x83" + _q(v)


def _char(v: str) -> bytes:
    return b"\x73" + _I(ord(v))


def _uuid_bytes(v) -> bytes:
    return b"\x98" + v.bytes


def _float(v: float) -> bytes:
    return b"\x72" + _f(v)


def _double(v: float) -> bytes:
    return b"\x82" + _d(v)


def _compound(body: bytes, count: int, small: int, large: int, empty: bytes | None) -> bytes:
    if count == 0 and empty is not None:
        return empty
    size = len(body)
    if size + 1 <= 255 and count <= 255:
        return _BB(small, size + 1) + _B(count) + body
    return _B(large) + _II(size + 4, count) + body


def _list(v) -> bytes:
    return _compound(b"".join([encode_value(x) for x in v]), len(v), 0xC0, 0xD0, b"\x45")


def _map(v: dict) -> bytes:
    parts = []
    for k, x in v.items():
        parts.append(encode_value(k))
        parts.append(encode_value(x))
    return _compound(b"".join(parts), 2 * len(v), 0xC1, 0xD1, None)


def _fields_map(v: dict) -> bytes:
    """A `fields` map: keys are symbols (plain str keys are sent as symbols)."""
    parts = []
    for k, x in v.items():
        parts.append(_symbol(k) if type(k) is str else encode_value(k))
        parts.append(encode_value(x))
    return _compound(b"".join(parts), 2 * len(v), 0xC1, 0xD1, None)


def _described(v: Described) -> bytes:
    return b"\x00" + encode_value(v.descriptor) + encode_value(v.value)


def _raw(v: Raw) -> bytes:
    return bytes(v.data)


# Exact Python type -> encoder. Subclass lookups fall back to isinstance checks in encode_value.
_ENCODERS: dict[type, Any] = {
    type(None): lambda v: NULL,
    bool: _bool,
    int: _long,
    float: _double,
    str: _string,
    bytes: _binary,
    bytearray: _binary,
    list: _list,
    tuple: _list,
    dict: _map,
    _uuid.UUID: _uuid_bytes,
    UByte: _ubyte,
    UShort: _ushort,
    UInt: _uint,
    ULong: _ulong,
    Byte: _byte,
    Short: _short,
    Int: _int,
    Long: _long,
    Timestamp: _timestamp,
    Float: _float,
    Double: _double,
    Symbol: _symbol,
    Char: _char,
    String: _string,
    Binary: _binary,
    Decimal32: lambda v: b"\x74" + bytes(v),
    Decimal64: lambda v: b"\x84" + bytes(v),
    Decimal128: lambda v: b"\x94" + bytes(v),
    Described: _described,
    Raw: _raw,
}


def encode_value(value: Any) -> bytes:
    """Encode any supported value (primitive, wrapper, list, map, Array, Described, composite, Raw)."""
    enc = _ENCODERS.get(type(value))
    try:
        if enc is not None:
            return enc(value)
        if isinstance(value, Composite):
            return encode_composite(value)
        if isinstance(value, ValueSection):
            return encode_value_section(value)
        if isinstance(value, Array):
            return encode_array(value)
    except (struct.error, OverflowError, UnicodeEncodeError) as exc:
        raise EncodeError(f"cannot encode {value!r}: {exc}") from None
    raise EncodeError(f"cannot encode a value of Python type {type(value).__name__}: {value!r}")


# -- arrays ----------------------------------------------------------------------------------------------

def _zero_width(ok, what: str):
    def body(v):
        if not ok(v):
            raise EncodeError(f"array element {v!r} cannot use the zero-width {what} constructor")
        return b""
    return body


def _sized(width: int, what: str):
    def body(v):
        data = bytes(v)
        if len(data) != width:
            raise EncodeError(f"array element of type {what} must be {width} bytes, got {len(data)}")
        return data
    return body


def _variable_body(to_bytes, wide: bool):
    def body(v):
        data = to_bytes(v)
        if wide:
            return _I(len(data)) + data
        if len(data) > 255:
            raise EncodeError(f"array element of {len(data)} bytes does not fit an 8-bit size (use the wide code)")
        return _B(len(data)) + data
    return body


def _ascii(v: str) -> bytes:
    try:
        return v.encode("ascii")
    except UnicodeEncodeError as exc:
        raise EncodeError(f"symbol must be ASCII: {v!r}") from exc


# Element constructor -> encoder of one element's bytes (without the constructor), fixed and variable widths.
_ELEMENT_BODY: dict[int, Any] = {
    0x40: _zero_width(lambda v: v is None, "null"),
    0x41: _zero_width(lambda v: v is True, "true"),
    0x42: _zero_width(lambda v: v is False, "false"),
    0x43: _zero_width(lambda v: type(v) is not bool and v == 0, "uint0"),
    0x44: _zero_width(lambda v: type(v) is not bool and v == 0, "ulong0"),
    0x45: _zero_width(lambda v: isinstance(v, (list, tuple)) and not v, "list0"),
    0x56: lambda v: b"\x01" if v else b"\x00",
    0x50: _B, 0x51: _b, 0x52: _B, 0x53: _B, 0x54: _b, 0x55: _b, 0x60: _H, 0x61: _h,
    0x70: _I, 0x71: _i, 0x72: _f, 0x73: lambda v: _I(ord(v)), 0x74: _sized(4, "decimal32"),
    0x80: _Q, 0x81: _q, 0x82: _d, 0x83: _q, 0x84: _sized(8, "decimal64"), 0x94: _sized(16, "decimal128"),
    0x98: lambda v: v.bytes,
    0xA0: _variable_body(bytes, False), 0xB0: _variable_body(bytes, True),
    0xA1: _variable_body(lambda v: v.encode("utf-8"), False), 0xB1: _variable_body(lambda v: v.encode("utf-8"), True),
    0xA3: _variable_body(_ascii, False), 0xB3: _variable_body(_ascii, True),
}

# Element type -> the constructor the encoder picks by default. Numbers use their fixed-width code (as
# proton does: a compact code like smalluint is only used when asked for with Array(0x52, ...)).
_DEFAULT_ELEMENT_CODE = {
    "null": 0x40, "boolean": 0x56, "ubyte": 0x50, "ushort": 0x60, "uint": 0x70, "ulong": 0x80, "byte": 0x51,
    "short": 0x61, "int": 0x71, "long": 0x81, "float": 0x72, "double": 0x82, "decimal32": 0x74,
    "decimal64": 0x84, "decimal128": 0x94, "char": 0x73, "timestamp": 0x83, "uuid": 0x98,
}
_NARROW_WIDE = {"binary": (0xA0, 0xB0, bytes), "string": (0xA1, 0xB1, lambda v: v.encode("utf-8")),
                "symbol": (0xA3, 0xB3, _ascii)}
_COMPOUND_CODES = {"list": (0xC0, 0xD0), "map": (0xC1, 0xD1), "array": (0xE0, 0xF0)}


def _compound_element(kind: str, v) -> tuple[bytes, int]:
    """(inner bytes, count) of one list/map/array element of an array."""
    if kind == "list":
        if not isinstance(v, (list, tuple)):
            raise EncodeError(f"array of list holds a {type(v).__name__}")
        return b"".join([encode_value(x) for x in v]), len(v)
    if kind == "map":
        if not isinstance(v, dict):
            raise EncodeError(f"array of map holds a {type(v).__name__}")
        return b"".join([encode_value(p) for kv in v.items() for p in kv]), 2 * len(v)
    if not isinstance(v, Array):
        raise EncodeError(f"array of array holds a {type(v).__name__}")
    return _array_inner(v), len(v.items)


def _array_inner(array: Array) -> bytes:
    """The element constructor (with the descriptor, if any) followed by the element bodies."""
    element_type, items, code = array.element_type, array.items, array.element_code
    if element_type in _COMPOUND_CODES:
        small, wide = _COMPOUND_CODES[element_type]
        if code == 0x45:
            body = b"".join([_ELEMENT_BODY[0x45](x) for x in items])
        else:
            parts = [_compound_element(element_type, x) for x in items]
            fits = all(len(inner) + 1 <= 255 and count <= 255 for inner, count in parts)
            if code is None:
                code = small if fits else wide
            if code == small:
                if not fits:
                    raise EncodeError(f"an element does not fit the 8-bit {element_type} constructor 0x{small:02x}")
                body = b"".join([_BB(len(inner) + 1, count) + inner for inner, count in parts])
            else:
                body = b"".join([_II(len(inner) + 4, count) + inner for inner, count in parts])
    elif element_type in _NARROW_WIDE:
        narrow, wide, to_bytes = _NARROW_WIDE[element_type]
        if code is None:
            datas = [to_bytes(x) for x in items]
            code = narrow if all(len(d) < 256 for d in datas) else wide
        enc = _ELEMENT_BODY[code]
        body = b"".join([enc(x) for x in items])
    else:
        if code is None:
            code = _DEFAULT_ELEMENT_CODE.get(element_type)
            if code is None:
                raise EncodeError(f"unsupported array element type {element_type!r}")
        enc = _ELEMENT_BODY[code]
        try:
            body = b"".join([enc(x) for x in items])
        except (struct.error, TypeError, AttributeError, OverflowError) as exc:
            raise EncodeError(f"array of {element_type}: {exc}") from None
    ctor = _B(code)
    if array.descriptor is not None:
        ctor = b"\x00" + encode_value(array.descriptor) + ctor
    return ctor + body


def encode_array(array: Array) -> bytes:
    """Encode an Array with array8 when it fits, else array32."""
    inner = _array_inner(array)
    count = len(array.items)
    if len(inner) + 1 <= 255 and count <= 255:
        return b"\xe0" + _BB(len(inner) + 1, count) + inner
    return b"\xf0" + _II(len(inner) + 4, count) + inner


# -- typed fields of composites ----------------------------------------------------------------------------

_FIELD_ENCODERS: dict[str, Any] = {
    "uint": _uint, "ulong": _ulong, "ushort": _ushort, "ubyte": _ubyte, "int": _int, "long": _long,
    "byte": _byte, "short": _short, "boolean": _bool, "string": _string, "symbol": _symbol,
    "binary": _binary, "map": _fields_map, "timestamp": _timestamp, "uuid": _uuid_bytes, "float": _float,
    "double": _double, "char": _char, "list": _list,
}

_PYTHON_TYPES_FOR: dict[str, tuple] = {
    "uint": (int,), "ulong": (int,), "ushort": (int,), "ubyte": (int,), "int": (int,), "long": (int,),
    "byte": (int,), "short": (int,), "boolean": (bool, int), "string": (str,), "symbol": (str,),
    "binary": (bytes, bytearray), "map": (dict,), "timestamp": (int,), "uuid": (_uuid.UUID,),
    "float": (float, int), "double": (float, int), "char": (str,), "list": (list, tuple),
}


def encode_field(value: Any, declared: str, multiple: bool = False) -> bytes:
    """Encode a composite field: plain values take the declared type; wrappers and composites override it."""
    if value is None:
        return NULL
    if isinstance(value, (_Fixed, Composite, ValueSection, Described, Array, Raw)):
        return encode_value(value)
    prim = wire_type(declared)
    if multiple and isinstance(value, (list, tuple)):
        return encode_array(Array(prim, tuple(value)))
    enc = _FIELD_ENCODERS.get(prim)
    if enc is None:  # "*" or a composite archetype: encode the value as what it is
        return encode_value(value)
    if not isinstance(value, _PYTHON_TYPES_FOR[prim]) or (isinstance(value, bool) and prim not in ("boolean",)):
        raise EncodeError(f"field of type {declared} cannot hold {type(value).__name__} {value!r}")
    return enc(value)


_EXACT_WRAPPER = {"uint": UInt, "ulong": ULong, "ushort": UShort, "ubyte": UByte, "int": Int, "long": Long,
                  "byte": Byte, "short": Short, "symbol": Symbol, "timestamp": Timestamp, "float": Float}
_PLAIN_OK = {"uint": (int,), "ulong": (int,), "ushort": (int,), "ubyte": (int,), "int": (int,), "long": (int,),
             "byte": (int,), "short": (int,), "boolean": (bool,), "string": (str,), "symbol": (str,),
             "binary": (bytes,), "map": (dict,), "timestamp": (int,), "float": (float,), "double": (float,)}

_NULL_KEPT = bytearray(NULL)   # an explicit null (Raw(b"\x40")) in a composite: not trimmed as trailing
_FRAME_HEADER = struct.Struct(">IBBH").pack
_LIST8_FRAME = struct.Struct(">IIIH").pack     # frame header + descriptor + list8 header in one pack
_LIST8_HEAD = struct.Struct(">IH").pack        # descriptor + list8 header
_COMPILED: dict = {}           # class -> encoder of the described list
_COMPILED_FRAMES: dict = {}    # class -> encoder of a whole frame (header, performative, payload)


def _field_plan(cls) -> list:
    """Per field: (attr, mandatory, spec name, exact Python types for the direct encoder, encoder, declared, multiple)."""
    rows = []
    for f in cls.FIELDS:
        prim = wire_type(f.type)
        direct = _FIELD_ENCODERS.get(prim)
        exact = set(_PLAIN_OK.get(prim, ()))
        if prim in _EXACT_WRAPPER:
            exact.add(_EXACT_WRAPPER[prim])
        if prim in ("string", "binary"):
            exact = {str} if prim == "string" else {bytes}
        rows.append((f.attr, f.mandatory, f.name, frozenset(exact) if direct else frozenset(), direct, f.type,
                     f.multiple))
    return rows


def _compile(cls) -> None:
    """Generate the encoders of one composite class from its field table.

    One unrolled block per field: plain uints and booleans inline, other plain values of the declared type
    through their direct encoder, anything unusual (wrappers, arrays, Raw, wrong types) through `encode_field`.
    Trailing nulls are trimmed; the descriptor, list header and (for frames) frame header are one struct pack.
    """
    env = {"NULL": NULL, "NULL_KEPT": _NULL_KEPT, "SU": _SMALL_UINT, "CI": _CODE_I, "EncodeError": EncodeError,
           "encode_field": encode_field, "TRUE": TRUE, "FALSE": FALSE, "_II": _II, "HDR": _FRAME_HEADER,
           "L8F": _LIST8_FRAME, "L8": _LIST8_HEAD}
    lines = []
    plan = _field_plan(cls)
    for i, (attr, mandatory, name, exact, direct, declared, multiple) in enumerate(plan):
        env[f"E{i}"], env[f"D{i}"], env[f"T{i}"], env[f"M{i}"] = exact, direct, declared, multiple
        prim = wire_type(declared)
        lines.append(f"    v = obj.{attr}")
        first = "if"
        if prim == "uint" and not multiple:      # the common case first: a plain int
            lines += ["    if v.__class__ is int and 0 <= v <= 0xFFFFFFFF:",
                      f"        e{i} = SU[v] if v < 256 else CI(0x70, v)"]
            first = "elif"
        lines.append(f"    {first} v is None:")
        if mandatory:
            message = f"{cls.NAME}: mandatory field {name} is not set (or pass validate=False to send null)"
            lines.append(f"        if validate: raise EncodeError({message!r})")
        lines.append(f"        e{i} = NULL")
        if prim == "boolean" and not multiple:
            lines += [f"    elif v is True: e{i} = TRUE", f"    elif v is False: e{i} = FALSE"]
        if exact:
            lines.append(f"    elif v.__class__ in E{i}: e{i} = D{i}(v)")
        lines += ["    else:", f"        e{i} = encode_field(v, T{i}, M{i})",
                  f"        if e{i} is NULL: e{i} = NULL_KEPT"]
    # trailing nulls are omitted: the last non-null field fixes the count
    for count in range(len(plan), 0, -1):
        keyword = "if" if count == len(plan) else "elif"
        items = ", ".join(f"e{i}" for i in range(count))
        lines += [f"    {keyword} e{count - 1} is not NULL:", f"        count = {count}",
                  f"        body = b''.join(({items},))"]
    lines += ["    else:" if plan else "    if True:", "        count = 0", "        body = b''"]
    lines.append("    size = len(body)")
    code = cls.DESCRIPTOR
    # Packed words: descriptor prefix 00 53 <code> C0 as one uint; list8 size and count as one ushort;
    # frame DOFF/TYPE/channel as one uint (fewer struct arguments is measurably faster).
    env.update(PREFIX8=0x00530000 | code << 8 | 0xC0, P0=bytes((0x00, 0x53, code, 0x45)),
               P32=bytes((0x00, 0x53, code, 0xD0)))
    source = "\n".join([
        "def enc(obj, validate):", *lines,
        "    if not count: return P0",
        "    if size < 255 and count <= 255: return L8(PREFIX8, (size + 1) << 8 | count) + body",
        "    return b''.join((P32, _II(size + 4, count), body))",
        "def frame(obj, channel, payload, validate, frame_type):",
        "    if channel >> 16 or frame_type >> 8:",
        "        raise EncodeError(f'channel {channel} or frame type {frame_type} does not fit the frame header')",
        *lines,
        "    if not count: return b''.join((HDR(12 + len(payload), 2, frame_type, channel), P0, payload))",
        "    if size < 255 and count <= 255:",
        "        return L8F(14 + size + len(payload), 0x02000000 | frame_type << 16 | channel, PREFIX8,"
        " (size + 1) << 8 | count) + body + payload",
        "    return b''.join((HDR(20 + size + len(payload), 2, frame_type, channel), P32, _II(size + 4, count), body,"
        " payload))",
    ])
    exec(source, env)   # noqa: S102 - generated from the static field table above
    _COMPILED[cls] = env["enc"]
    _COMPILED_FRAMES[cls] = env["frame"]


def encode_composite(obj: Composite, validate: bool = True) -> bytes:
    """Encode a list-based composite as a described list; trailing null fields are omitted.

    With validate=False a missing mandatory field is sent as null (for negative cases).
    """
    enc = _COMPILED.get(obj.__class__)
    if enc is None:
        if not isinstance(obj, Composite):
            raise EncodeError(f"not a composite: {type(obj).__name__}")
        _compile(type(obj))
        enc = _COMPILED[type(obj)]
    try:
        return enc(obj, validate)
    except (struct.error, OverflowError, UnicodeEncodeError) as exc:
        raise EncodeError(f"{obj.NAME}: a field value does not fit its type ({exc})") from None


def encode_value_section(obj: ValueSection) -> bytes:
    """Encode a message section whose body is one value (data, amqp-value, application-properties...)."""
    if obj.VALUE_TYPE == "binary":
        body = _binary(obj.value) if not isinstance(obj.value, Raw) else _raw(obj.value)
    elif obj.VALUE_TYPE == "annotations":
        body = _fields_map(obj.value or {}) if not isinstance(obj.value, Raw) else _raw(obj.value)
    elif obj.VALUE_TYPE == "map":
        body = _map(obj.value or {}) if not isinstance(obj.value, Raw) else _raw(obj.value)
    else:
        body = encode_value(obj.value)
    return b"\x00\x53" + _B(obj.DESCRIPTOR) + body


def encode_message(*sections: Any) -> bytes:
    """A bare message: its sections encoded one after another (Part 3 §3.2)."""
    return b"".join([encode_value(s) for s in sections])


for _cls in list(COMPOSITES.values()):
    if issubclass(_cls, Composite):
        _compile(_cls)
