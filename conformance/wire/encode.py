"""Encoder for AMQP 1.0 values and composite types (Part 1 §1.6 encodings, Part 1 §1.4 composites).

This module owns turning Python values into bytes. It chooses the most compact legal encoding (uint0,
smalluint, list0, list8, vbin8, str8, sym8, map8, ...) unless a value is an explicit `Raw`. It never decodes
and never does I/O.
"""

from __future__ import annotations

import struct
import uuid as _uuid
from typing import Any

from .performatives import Composite, ValueSection, wire_type
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
    if enc is not None:
        return enc(value)
    if isinstance(value, Composite):
        return encode_composite(value)
    if isinstance(value, ValueSection):
        return encode_value_section(value)
    if isinstance(value, Array):
        return encode_array(value)
    raise EncodeError(f"cannot encode a value of Python type {type(value).__name__}: {value!r}")


# -- arrays ----------------------------------------------------------------------------------------------

# Element type -> (constructor byte, element body encoder) for fixed-width element types.
_FIXED_ELEMENT: dict[str, tuple[int, Any]] = {
    "boolean": (0x56, lambda v: b"\x01" if v else b"\x00"),
    "ubyte": (0x50, lambda v: _B(v)),
    "ushort": (0x60, lambda v: _H(v)),
    "byte": (0x51, lambda v: _b(v)),
    "short": (0x61, lambda v: _h(v)),
    "int": (0x71, lambda v: _i(v)),
    "long": (0x81, lambda v: _q(v)),
    "ulong": (0x80, lambda v: _Q(v)),
    "uint": (0x70, lambda v: _I(v)),
    "float": (0x72, lambda v: _f(v)),
    "double": (0x82, lambda v: _d(v)),
    "timestamp": (0x83, lambda v: _q(v)),
    "char": (0x73, lambda v: _I(ord(v))),
    "uuid": (0x98, lambda v: v.bytes),
    "decimal32": (0x74, bytes),
    "decimal64": (0x84, bytes),
    "decimal128": (0x94, bytes),
}

# Variable-width element types -> (narrow constructor, wide constructor, to-bytes).
_VARIABLE_ELEMENT: dict[str, tuple[int, int, Any]] = {
    "binary": (0xA0, 0xB0, bytes),
    "string": (0xA1, 0xB1, lambda v: v.encode("utf-8")),
    "symbol": (0xA3, 0xB3, lambda v: v.encode("ascii")),
}


def _array_elements(element_type: str, items: tuple) -> tuple[bytes, bytes]:
    """Return (element constructor, concatenated element bodies) for an array."""
    if element_type in _FIXED_ELEMENT:
        code, enc = _FIXED_ELEMENT[element_type]
        try:
            return _B(code), b"".join([enc(x) for x in items])
        except (struct.error, TypeError, ValueError, AttributeError) as exc:
            raise EncodeError(f"array of {element_type}: {exc}") from exc
    if element_type in _VARIABLE_ELEMENT:
        narrow, wide, to_bytes = _VARIABLE_ELEMENT[element_type]
        datas = [to_bytes(x) for x in items]
        if all(len(d) < 256 for d in datas):
            return _B(narrow), b"".join([_B(len(d)) + d for d in datas])
        return _B(wide), b"".join([_I(len(d)) + d for d in datas])
    if element_type in ("list", "map"):
        # All elements share one constructor: every element uses the 32-bit form.
        wide = 0xD0 if element_type == "list" else 0xD1
        bodies = []
        for x in items:
            if element_type == "list":
                inner, count = b"".join([encode_value(e) for e in x]), len(x)
            else:
                inner, count = b"".join([encode_value(p) for kv in x.items() for p in kv]), 2 * len(x)
            bodies.append(_II(len(inner) + 4, count) + inner)
        return _B(wide), b"".join(bodies)
    if element_type == "array":
        bodies = []
        for x in items:
            ctor, body = _array_elements(x.element_type, x.items)
            if x.descriptor is not None:
                ctor = b"\x00" + encode_value(x.descriptor) + ctor
            inner = ctor + body
            bodies.append(_II(len(inner) + 4, len(x.items)) + inner)
        return b"\xf0", b"".join(bodies)
    raise EncodeError(f"unsupported array element type: {element_type!r}")


def encode_array(array: Array) -> bytes:
    """Encode an Array with array8 when it fits, else array32."""
    ctor, body = _array_elements(array.element_type, array.items)
    if array.descriptor is not None:
        ctor = b"\x00" + encode_value(array.descriptor) + ctor
    count = len(array.items)
    inner = ctor + body
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

_FIELD_PLANS: dict = {}
_FAST_PLANS: dict = {}


def _plan(cls) -> tuple:
    """Per field: (attr, mandatory, name, exact types that take the direct encoder, encoder, declared, multiple)."""
    plan = _FIELD_PLANS.get(cls)
    if plan is None:
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
        plan = _FIELD_PLANS[cls] = tuple(rows)
    return plan


_COMPILED: dict = {}
_COMPILED_FRAMES: dict = {}     # class -> encoder of a whole AMQP frame (header, performative, payload)
_FRAME_HEADER = struct.Struct(">IBBH").pack


def _compile(cls):
    """Generate an encoder for one composite class from its field table: one unrolled block per field, a
    table lookup for small uints, the general `encode_field` for anything unusual (wrappers, arrays, errors)."""
    plan = _plan(cls)
    env = {"NULL": NULL, "SU": _SMALL_UINT, "CI": _CODE_I, "EncodeError": EncodeError, "encode_field": encode_field,
           "TRUE": TRUE, "FALSE": FALSE, "_II": _II, "bytes": bytes, "len": len}
    fields = ["    d = obj.__dict__", "    p = []", "    a = p.append"]
    for i, (attr, mandatory, name, exact, direct, declared, multiple) in enumerate(plan):
        env[f"E{i}"], env[f"D{i}"], env[f"T{i}"], env[f"M{i}"] = exact, direct, declared, multiple
        prim = wire_type(declared)
        fields.append(f"    v = d[{attr!r}]")
        if prim == "uint" and not multiple:      # the common case first: a plain int
            fields += ["    if v.__class__ is int and 0 <= v <= 0xFFFFFFFF:",
                       "        a(SU[v] if v < 256 else CI(0x70, v))",
                       "    elif v is None:"]
        else:
            fields.append("    if v is None:")
        if mandatory:
            fields.append(f"        if validate: raise EncodeError({cls.NAME + ': mandatory field ' + name + ' is not set'!r})")
        fields.append("        a(NULL)")
        if prim == "boolean" and not multiple:
            fields += ["    elif v is True: a(TRUE)", "    elif v is False: a(FALSE)"]
        fields += [f"    elif type(v) in E{i}: a(D{i}(v))", f"    else: a(encode_field(v, T{i}, M{i}))"]
    fields += ["    while p and p[-1] is NULL: p.pop()      # trailing nulls are omitted",
               "    body = b''.join(p)", "    count = len(p)", "    size = len(body)"]
    code = cls.DESCRIPTOR
    env.update(P0=bytes((0x00, 0x53, code, 0x45)), P8=bytes((0x00, 0x53, code, 0xC0)),
               P32=bytes((0x00, 0x53, code, 0xD0)), HDR=_FRAME_HEADER)
    lines = ["def enc(obj, validate):", *fields,
             "    if not count: return P0",
             "    if size < 255 and count <= 255: return b''.join((P8, bytes((size + 1, count)), body))",
             "    return b''.join((P32, _II(size + 4, count), body))",
             "def frame(obj, channel, payload, validate):", *fields,
             "    if not count: return b''.join((HDR(12 + len(payload), 2, 0, channel), P0, payload))",
             "    if size < 255 and count <= 255:",
             "        return b''.join((HDR(14 + size + len(payload), 2, 0, channel), P8, bytes((size + 1, count)), body, payload))",
             "    return b''.join((HDR(20 + size + len(payload), 2, 0, channel), P32, _II(size + 4, count), body, payload))"]
    exec("\n".join(lines), env)   # noqa: S102 - generated from the static field table above
    _COMPILED_FRAMES[cls] = env["frame"]
    return env["enc"]


def encode_composite(obj: Composite, validate: bool = True) -> bytes:
    """Encode a list-based composite as described list; trailing null fields are omitted.

    With validate=False a missing mandatory field is sent as null (for negative cases).
    """
    enc = _COMPILED.get(type(obj))
    if enc is None:
        enc = _COMPILED[type(obj)] = _compile(type(obj))
    return enc(obj, validate)


def _encode_composite_table(obj: Composite, validate: bool = True) -> bytes:
    cls = type(obj)
    fast = _FAST_PLANS.get(cls)
    if fast is None:
        plan = _plan(cls)
        fast = _FAST_PLANS[cls] = tuple((row[0], row[3], row[4], i) for i, row in enumerate(plan))
    plan = _FIELD_PLANS[cls]
    d = obj.__dict__
    parts = []
    append = parts.append
    nulls = 0
    for attr, exact, direct, i in fast:
        v = d[attr]
        if v is None:
            if validate and plan[i][1]:
                raise EncodeError(f"{obj.NAME}: mandatory field {plan[i][2]} is not set")
            nulls += 1
            continue
        if nulls:
            parts.extend([NULL] * nulls)
            nulls = 0
        if type(v) in exact:
            append(direct(v))
        else:
            append(encode_field(v, plan[i][5], plan[i][6]))
    last = len(parts)
    body = b"".join(parts)
    size = len(body)
    if size < 255 and last <= 255:
        return b"\x00\x53" + bytes((obj.DESCRIPTOR, 0xC0, size + 1, last)) + body if last else \
            b"\x00\x53" + bytes((obj.DESCRIPTOR, 0x45))
    return b"\x00\x53" + bytes((obj.DESCRIPTOR, 0xD0)) + _II(size + 4, last) + body


def _encode_composite_generic(obj: Composite, validate: bool = True) -> bytes:
    specs = obj.FIELDS
    values = [getattr(obj, f.attr) for f in specs]
    last = len(values)
    while last and values[last - 1] is None:
        last -= 1
    parts = []
    for i in range(last):
        spec = specs[i]
        v = values[i]
        if v is None:
            if validate and spec.mandatory:
                raise EncodeError(f"{obj.NAME}: mandatory field {spec.name} is not set")
            parts.append(NULL)
        else:
            parts.append(encode_field(v, spec.type, spec.multiple))
    if validate:
        for spec in specs[last:]:
            if spec.mandatory:
                raise EncodeError(f"{obj.NAME}: mandatory field {spec.name} is not set")
    code = obj.DESCRIPTOR
    return b"\x00\x53" + _B(code) + _compound(b"".join(parts), last, 0xC0, 0xD0, b"\x45")


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
