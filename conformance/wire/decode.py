"""Decoder for AMQP 1.0 values and composite types (Part 1 §1.6 encodings).

This module owns turning bytes into Python values. Every malformed input raises `DecodeError` with the
absolute byte offset of the problem; no other exception escapes `decode_value`. Known composite
descriptors decode to the classes of `performatives`, with mandatory fields and field types checked.
It never encodes and never does I/O.
"""

from __future__ import annotations

import struct
import uuid as _uuid
from typing import Any

from .performatives import BY_CODE, BY_SYMBOL, Composite, ValueSection, wire_type
from .types import (
    Array, Byte, Char, Decimal32, Decimal64, Decimal128, Described, Float, Int, Long, Short, Symbol,
    Timestamp, UByte, UInt, ULong, UShort,
)


class DecodeError(ValueError):
    """Malformed AMQP input. `offset` is the absolute byte offset where decoding failed."""

    def __init__(self, offset: int, reason: str):
        super().__init__(f"at byte {offset}: {reason}")
        self.offset = offset
        self.reason = reason


MAX_DEPTH = 64  # nesting of lists/maps/arrays/described values accepted before giving up

_u8 = struct.Struct(">B").unpack_from
_i8 = struct.Struct(">b").unpack_from
_u16 = struct.Struct(">H").unpack_from
_i16 = struct.Struct(">h").unpack_from
_u32 = struct.Struct(">I").unpack_from
_i32 = struct.Struct(">i").unpack_from
_u64 = struct.Struct(">Q").unpack_from
_i64 = struct.Struct(">q").unpack_from
_f32 = struct.Struct(">f").unpack_from
_f64 = struct.Struct(">d").unpack_from
_u32u32 = struct.Struct(">II").unpack_from
_u8u8 = struct.Struct(">BB").unpack_from

# Format code -> (type name, fixed width or None for variable/compound). Part 1 §1.6.
FORMAT_CODES: dict[int, str] = {
    0x40: "null", 0x41: "boolean", 0x42: "boolean", 0x56: "boolean", 0x50: "ubyte", 0x60: "ushort",
    0x70: "uint", 0x52: "uint", 0x43: "uint", 0x80: "ulong", 0x53: "ulong", 0x44: "ulong", 0x51: "byte",
    0x61: "short", 0x71: "int", 0x54: "int", 0x81: "long", 0x55: "long", 0x72: "float", 0x82: "double",
    0x74: "decimal32", 0x84: "decimal64", 0x94: "decimal128", 0x73: "char", 0x83: "timestamp", 0x98: "uuid",
    0xA0: "binary", 0xB0: "binary", 0xA1: "string", 0xB1: "string", 0xA3: "symbol", 0xB3: "symbol",
    0x45: "list", 0xC0: "list", 0xD0: "list", 0xC1: "map", 0xD1: "map", 0xE0: "array", 0xF0: "array",
}


def _need(buf, pos: int, n: int, end: int, what: str) -> None:
    if pos + n > end:
        raise DecodeError(pos, f"truncated {what}: need {n} bytes, {max(end - pos, 0)} left")


# -- element decoders: (buf, pos, end, code, depth) -> (value, next pos); pos is after the format code ----

def _fixed(width: int, conv, name: str):
    def dec(buf, pos, end, code, depth):
        if pos + width > end:
            raise DecodeError(pos, f"truncated {name}: need {width} bytes, {max(end - pos, 0)} left")
        return conv(buf, pos), pos + width
    return dec


def _dec_bool56(buf, pos, end, code, depth):
    _need(buf, pos, 1, end, "boolean")
    b = buf[pos]
    if b > 1:
        raise DecodeError(pos, f"boolean byte must be 0x00 or 0x01, got 0x{b:02x}")
    return b == 1, pos + 1


def _variable(width_code_small: bool, kind: str):
    def dec(buf, pos, end, code, depth):
        if width_code_small:
            _need(buf, pos, 1, end, kind + " size")
            n = buf[pos]
            pos += 1
        else:
            _need(buf, pos, 4, end, kind + " size")
            n = _u32(buf, pos)[0]
            pos += 4
        if pos + n > end:
            raise DecodeError(pos, f"{kind} of {n} bytes overruns its container ({end - pos} left)")
        data = bytes(buf[pos:pos + n])
        if kind == "binary":
            return data, pos + n
        try:
            if kind == "string":
                return data.decode("utf-8"), pos + n
            return Symbol(data.decode("ascii")), pos + n
        except UnicodeDecodeError as exc:
            raise DecodeError(pos + exc.start, f"invalid {'UTF-8' if kind == 'string' else 'ASCII'} in {kind}")
    return dec


def _compound_header(buf, pos, end, code, kind):
    if code in (0xC0, 0xC1, 0xE0):
        _need(buf, pos, 2, end, kind + " header")
        size, count = _u8u8(buf, pos)
        body = pos + 1
        stop = pos + 1 + size
        if size < 1:
            raise DecodeError(pos, f"{kind}8 size {size} cannot hold its count")
        pos += 2
    else:
        _need(buf, pos, 8, end, kind + " header")
        size, count = _u32u32(buf, pos)
        stop = pos + 4 + size
        if size < 4:
            raise DecodeError(pos, f"{kind}32 size {size} cannot hold its count")
        pos += 8
        body = None
    del body
    if stop > end:
        raise DecodeError(pos, f"{kind} of {size} bytes overruns its container ({end - pos} left)")
    return pos, stop, count


def _dec_list(buf, pos, end, code, depth):
    if code == 0x45:
        return [], pos
    pos, stop, count = _compound_header(buf, pos, end, code, "list")
    if count > stop - pos:
        raise DecodeError(pos, f"list count {count} exceeds its {stop - pos} body bytes")
    if depth > MAX_DEPTH:
        raise DecodeError(pos, "nesting too deep")
    items = []
    append = items.append
    decoders = _DECODERS
    for _ in range(count):
        if pos >= stop:
            raise DecodeError(pos, "truncated: expected a format code")
        code = buf[pos]
        dec = decoders[code]
        if dec is None:
            raise DecodeError(pos, f"unknown format code 0x{code:02x}")
        v, pos = dec(buf, pos + 1, stop, code, depth + 1)
        append(v)
    if pos != stop:
        raise DecodeError(pos, f"list size disagrees with its {count} elements ({stop - pos} bytes left over)")
    return items, pos


def _dec_map(buf, pos, end, code, depth):
    start = pos
    pos, stop, count = _compound_header(buf, pos, end, code, "map")
    if count % 2:
        raise DecodeError(start, f"map count {count} is odd")
    if count > stop - pos:
        raise DecodeError(pos, f"map count {count} exceeds its {stop - pos} body bytes")
    result = {}
    for _ in range(count // 2):
        kpos = pos
        k, pos = _decode(buf, pos, stop, depth + 1)
        v, pos = _decode(buf, pos, stop, depth + 1)
        try:
            if k in result:
                raise DecodeError(kpos, f"duplicate map key {k!r}")
            result[k] = v
        except TypeError:
            raise DecodeError(kpos, f"map key of unhashable type {type(k).__name__}") from None
    if pos != stop:
        raise DecodeError(pos, f"map size disagrees with its {count} elements ({stop - pos} bytes left over)")
    return result, pos


def _dec_array(buf, pos, end, code, depth):
    if depth > MAX_DEPTH:
        raise DecodeError(pos, "nesting too deep")
    pos, stop, count = _compound_header(buf, pos, end, code, "array")
    _need(buf, pos, 1, stop, "array element constructor")
    descriptor = None
    if buf[pos] == 0x00:
        descriptor, pos = _decode(buf, pos + 1, stop, depth + 1)
        _need(buf, pos, 1, stop, "array element constructor")
    ctor = buf[pos]
    pos += 1
    elem = _DECODERS[ctor]
    if elem is None or ctor == 0x00:
        raise DecodeError(pos - 1, f"invalid array element constructor 0x{ctor:02x}")
    items = []
    for _ in range(count):
        if pos >= stop and ctor not in _ZERO_WIDTH:
            raise DecodeError(pos, f"array holds fewer than its {count} elements")
        v, pos = elem(buf, pos, stop, ctor, depth + 1)
        items.append(v)
    if pos != stop:
        raise DecodeError(pos, f"array size disagrees with its {count} elements ({stop - pos} bytes left over)")
    return Array(FORMAT_CODES[ctor], tuple(items), descriptor), pos


def _dec_described(buf, pos, end, code, depth):
    if depth > MAX_DEPTH:
        raise DecodeError(pos, "nesting too deep")
    start = pos - 1
    if pos + 1 < end and buf[pos] == 0x53:          # smallulong descriptor: the common case
        cls = BY_CODE.get(buf[pos + 1])
        if cls is not None and not _is_value_section(cls):
            vpos = pos + 2
            value, pos = _decode(buf, vpos, end, depth + 1)
            return build_composite(cls, value, start, vpos), pos
    descriptor, pos = _decode(buf, pos, end, depth + 1)
    if type(descriptor) is ULong:
        cls = BY_CODE.get(descriptor) if descriptor < 0x100000000 else None
    elif type(descriptor) is Symbol:
        cls = BY_SYMBOL.get(descriptor)
    else:
        raise DecodeError(start + 1, f"descriptor must be ulong or symbol, got {type(descriptor).__name__}")
    vpos = pos
    value, pos = _decode(buf, pos, end, depth + 1)
    if cls is None:
        return Described(descriptor, value), pos
    if issubclass(cls, ValueSection):
        return _value_section(cls, value, vpos), pos
    return build_composite(cls, value, start, vpos), pos


def _value_section(cls, value, vpos):
    want = cls.VALUE_TYPE
    ok = {"binary": bytes, "map": dict, "annotations": dict, "list": list}.get(want)
    if ok is not None and not isinstance(value, ok):
        raise DecodeError(vpos, f"{cls.NAME} section must hold a {want}, got {type(value).__name__}")
    return cls(value)


_FIELD_PY_TYPES: dict[str, tuple] = {
    "uint": (UInt,), "ulong": (ULong,), "ushort": (UShort,), "ubyte": (UByte,), "int": (Int,), "long": (Long,),
    "byte": (Byte,), "short": (Short,), "boolean": (bool,), "string": (str,), "symbol": (Symbol,),
    "binary": (bytes,), "map": (dict,), "timestamp": (Timestamp,), "uuid": (_uuid.UUID,), "float": (Float,),
    "double": (float,), "char": (Char,), "list": (list,),
}


# exact decoded types that are right for a primitive field type (the fast path of the check)
_FIELD_EXACT: dict[str, tuple] = {
    "uint": (UInt,), "ulong": (ULong,), "ushort": (UShort,), "ubyte": (UByte,), "int": (Int,), "long": (Long,),
    "byte": (Byte,), "short": (Short,), "boolean": (bool,), "string": (str,), "symbol": (Symbol,),
    "binary": (bytes,), "map": (dict,), "timestamp": (Timestamp,), "uuid": (_uuid.UUID,), "float": (Float,),
    "double": (float,), "char": (Char,), "list": (list,),
}


def _field_ok(value, prim: str, multiple: bool) -> bool:
    types = _FIELD_PY_TYPES.get(prim)
    if types is None:
        return True  # "*" or an archetype: any value
    if isinstance(value, types) and not (prim == "string" and type(value) is Symbol):
        return prim == "boolean" or not isinstance(value, bool)
    if multiple and isinstance(value, Array):
        return value.element_type == prim
    return False


def _is_value_section(cls) -> bool:
    return issubclass(cls, ValueSection)


_CHECKS: dict = {}


def _checks_for(cls) -> tuple:
    """Per field: (spec, mandatory, exact types accepted without further thought, primitive type)."""
    checks = _CHECKS.get(cls)
    if checks is None:
        rows = []
        for spec in cls.FIELDS:
            prim = wire_type(spec.type)
            exact = _FIELD_EXACT.get(prim, ())
            rows.append((spec, spec.mandatory, exact, prim))
        checks = _CHECKS[cls] = tuple(rows)
    return checks


def build_composite(cls, value, start: int, vpos: int) -> Composite:
    """Turn a decoded list into a composite, checking mandatory fields and field types."""
    if type(value) is not list:
        raise DecodeError(vpos, f"{cls.NAME} must be a list, got {type(value).__name__}")
    checks = _checks_for(cls)
    n = len(value)
    if n > len(checks):
        raise DecodeError(vpos, f"{cls.NAME} has {n} fields; the type defines {len(checks)}")
    for i, (spec, mandatory, exact, prim) in enumerate(checks):
        v = value[i] if i < n else None
        if v is None:
            if mandatory:
                raise DecodeError(start, f"{cls.NAME}: mandatory field {spec.name} is missing")
            continue
        if type(v) in exact:
            continue
        if not _field_ok(v, prim, spec.multiple):
            raise DecodeError(vpos, f"{cls.NAME}.{spec.name} must be {spec.type}, got {type(v).__name__} {v!r}")
    return cls(*value)


_ZERO_WIDTH = (0x40, 0x41, 0x42, 0x43, 0x44, 0x45)
_mk = int.__new__   # wrapper construction without the range check (fixed widths are always in range)

_DECODERS: list = [None] * 256
_DECODERS[0x00] = _dec_described
_DECODERS[0x40] = lambda buf, pos, end, code, depth: (None, pos)
_DECODERS[0x41] = lambda buf, pos, end, code, depth: (True, pos)
_DECODERS[0x42] = lambda buf, pos, end, code, depth: (False, pos)
_UINT0 = UInt(0)
_ULONG0 = ULong(0)
_DECODERS[0x43] = lambda buf, pos, end, code, depth: (_UINT0, pos)
_DECODERS[0x44] = lambda buf, pos, end, code, depth: (_ULONG0, pos)
_DECODERS[0x45] = _dec_list
_DECODERS[0x56] = _dec_bool56
_DECODERS[0x50] = _fixed(1, lambda b, p: _mk(UByte, b[p]), "ubyte")
_DECODERS[0x52] = _fixed(1, lambda b, p: _mk(UInt, b[p]), "smalluint")
_DECODERS[0x53] = _fixed(1, lambda b, p: _mk(ULong, b[p]), "smallulong")
_DECODERS[0x51] = _fixed(1, lambda b, p: _mk(Byte, _i8(b, p)[0]), "byte")
_DECODERS[0x54] = _fixed(1, lambda b, p: _mk(Int, _i8(b, p)[0]), "smallint")
_DECODERS[0x55] = _fixed(1, lambda b, p: _mk(Long, _i8(b, p)[0]), "smalllong")
_DECODERS[0x60] = _fixed(2, lambda b, p: _mk(UShort, _u16(b, p)[0]), "ushort")
_DECODERS[0x61] = _fixed(2, lambda b, p: _mk(Short, _i16(b, p)[0]), "short")
_DECODERS[0x70] = _fixed(4, lambda b, p: _mk(UInt, _u32(b, p)[0]), "uint")
_DECODERS[0x71] = _fixed(4, lambda b, p: _mk(Int, _i32(b, p)[0]), "int")
_DECODERS[0x72] = _fixed(4, lambda b, p: Float(_f32(b, p)[0]), "float")
_DECODERS[0x74] = _fixed(4, lambda b, p: Decimal32(bytes(b[p:p + 4])), "decimal32")
_DECODERS[0x80] = _fixed(8, lambda b, p: _mk(ULong, _u64(b, p)[0]), "ulong")
_DECODERS[0x81] = _fixed(8, lambda b, p: _mk(Long, _i64(b, p)[0]), "long")
_DECODERS[0x82] = _fixed(8, lambda b, p: _f64(b, p)[0], "double")
_DECODERS[0x83] = _fixed(8, lambda b, p: _mk(Timestamp, _i64(b, p)[0]), "timestamp")
_DECODERS[0x84] = _fixed(8, lambda b, p: Decimal64(bytes(b[p:p + 8])), "decimal64")
_DECODERS[0x94] = _fixed(16, lambda b, p: Decimal128(bytes(b[p:p + 16])), "decimal128")
_DECODERS[0x98] = _fixed(16, lambda b, p: _uuid.UUID(bytes=bytes(b[p:p + 16])), "uuid")
_DECODERS[0xA0] = _variable(True, "binary")
_DECODERS[0xB0] = _variable(False, "binary")
_DECODERS[0xA1] = _variable(True, "string")
_DECODERS[0xB1] = _variable(False, "string")
_DECODERS[0xA3] = _variable(True, "symbol")
_DECODERS[0xB3] = _variable(False, "symbol")
_DECODERS[0xC0] = _dec_list
_DECODERS[0xD0] = _dec_list
_DECODERS[0xC1] = _dec_map
_DECODERS[0xD1] = _dec_map
_DECODERS[0xE0] = _dec_array
_DECODERS[0xF0] = _dec_array


def _dec_char(buf, pos, end, code, depth):
    _need(buf, pos, 4, end, "char")
    cp = _u32(buf, pos)[0]
    if cp > 0x10FFFF or 0xD800 <= cp <= 0xDFFF:
        raise DecodeError(pos, f"char is not a Unicode scalar value: 0x{cp:x}")
    return Char(chr(cp)), pos + 4


_DECODERS[0x73] = _dec_char


def _dec_uint(buf, pos, end, code, depth):
    if pos + 4 > end:
        raise DecodeError(pos, f"truncated uint: need 4 bytes, {max(end - pos, 0)} left")
    return _mk(UInt, _u32(buf, pos)[0]), pos + 4


def _dec_smalluint(buf, pos, end, code, depth):
    if pos >= end:
        raise DecodeError(pos, "truncated smalluint: need 1 byte, 0 left")
    return _SMALL_UINTS[buf[pos]], pos + 1


_SMALL_UINTS = [_mk(UInt, i) for i in range(256)]
_DECODERS[0x70] = _dec_uint
_DECODERS[0x52] = _dec_smalluint


def _decode(buf, pos: int, end: int, depth: int):
    if depth > MAX_DEPTH:
        raise DecodeError(pos, "nesting too deep")
    if pos >= end:
        raise DecodeError(pos, "truncated: expected a format code")
    code = buf[pos]
    dec = _DECODERS[code]
    if dec is None:
        raise DecodeError(pos, f"unknown format code 0x{code:02x}")
    return dec(buf, pos + 1, end, code, depth)


def decode_value(buf: bytes, offset: int = 0, end: int | None = None, *, base: int = 0) -> tuple[Any, int]:
    """Decode one value starting at `offset`; return (value, offset after it).

    `base` is added to every offset in a DecodeError (the position of `buf` in a larger stream).
    """
    stop = len(buf) if end is None else end
    try:
        return _decode(buf, offset, stop, 0)
    except DecodeError as exc:
        if base:
            raise DecodeError(exc.offset + base, exc.reason) from None
        raise
    except (struct.error, IndexError, ValueError, TypeError, OverflowError, RecursionError) as exc:
        # Defensive: a gap in the explicit checks must still surface as a DecodeError.
        raise DecodeError(base + offset, f"malformed value ({type(exc).__name__}: {exc})") from None


def decode_all(buf: bytes) -> list[Any]:
    """Decode consecutive values filling `buf` exactly (e.g. the sections of a message)."""
    values = []
    pos = 0
    while pos < len(buf):
        v, pos = decode_value(buf, pos)
        values.append(v)
    return values
