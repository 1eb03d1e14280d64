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

from .performatives import BY_CODE, BY_SYMBOL, COMPOSITES, Composite, ValueSection, wire_type
from .types import (
    FORMAT_CODES, Array, Byte, Char, Decimal32, Decimal64, Decimal128, Described, Float, Int, Long, Short, Symbol,
    Timestamp, UByte, UInt, ULong, UShort,
)


class DecodeError(ValueError):
    """Malformed AMQP input. `offset` is the absolute byte offset where decoding failed."""

    def __init__(self, offset: int, reason: str):
        super().__init__(f"at byte {offset}: {reason}")
        self.offset = offset
        self.reason = reason


MAX_DEPTH = 64  # nesting of lists/maps/arrays/described values accepted before giving up

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

def _need(buf, pos: int, n: int, end: int, what: str) -> None:
    if pos + n > end:
        raise DecodeError(pos, f"truncated {what}: need {n} byte{'s' if n > 1 else ''}, {max(end - pos, 0)} left")


# -- element decoders: (buf, pos, end, code, depth) -> (value, next pos); pos is after the format code ----

def _fixed(width: int, conv, name: str):
    def dec(buf, pos, end, code, depth):
        if pos + width > end:
            raise DecodeError(pos, f"truncated {name}: need {width} byte{'s' if width > 1 else ''},"
                                   f" {max(end - pos, 0)} left")
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


MAX_ZERO_WIDTH_ELEMENTS = 1 << 16   # arrays of zero-width elements (null, true, uint0...) longer than this are refused


def _compound_header(buf, pos, end, code, kind):
    """Read the size and count of a list8/32, map8/32 or array8/32; return (body start, body stop, count)."""
    if code in (0xC0, 0xC1, 0xE0):
        if pos + 2 > end:
            raise DecodeError(pos, f"truncated {kind}8 header: need 2 bytes, {max(end - pos, 0)} left")
        size = buf[pos]
        count = buf[pos + 1]
        if size < 1:
            raise DecodeError(pos, f"{kind}8 size {size} cannot hold its count")
        stop = pos + 1 + size
        pos += 2
    else:
        if pos + 8 > end:
            raise DecodeError(pos, f"truncated {kind}32 header: need 8 bytes, {max(end - pos, 0)} left")
        size, count = _u32u32(buf, pos)
        if size < 4:
            raise DecodeError(pos, f"{kind}32 size {size} cannot hold its count")
        stop = pos + 4 + size
        pos += 8
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
    small_uints = _SMALL_UINTS
    depth += 1
    for _ in range(count):
        if pos >= stop:
            raise DecodeError(pos, "truncated list: expected a format code")
        code = buf[pos]
        # inline fast paths for the codes performatives are made of
        if code == 0x52:
            if pos + 2 > stop:
                raise DecodeError(pos + 1, "truncated smalluint: need 1 byte, 0 left")
            append(small_uints[buf[pos + 1]])
            pos += 2
        elif code == 0x43:
            append(_UINT0)
            pos += 1
        elif code == 0x40:
            append(None)
            pos += 1
        elif code == 0x70:
            if pos + 5 > stop:
                raise DecodeError(pos + 1, f"truncated uint: need 4 bytes, {stop - pos - 1} left")
            append(_mk(UInt, _u32(buf, pos + 1)[0]))
            pos += 5
        elif code == 0x42:
            append(False)
            pos += 1
        elif code == 0x41:
            append(True)
            pos += 1
        elif code == 0xA0:                       # vbin8: delivery tags
            if pos + 2 > stop:
                raise DecodeError(pos + 1, "truncated binary size: need 1 byte, 0 left")
            n = buf[pos + 1]
            pos += 2
            if pos + n > stop:
                raise DecodeError(pos, f"binary of {n} bytes overruns its container ({stop - pos} left)")
            append(bytes(buf[pos:pos + n]))
            pos += n
        else:
            dec = decoders[code]
            if dec is None:
                raise DecodeError(pos, f"unknown format code 0x{code:02x}")
            v, pos = dec(buf, pos + 1, stop, code, depth)
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
                other = next(x for x in result if x == k)
                if type(other) is type(k):
                    raise DecodeError(kpos, f"duplicate map key {k!r} (map keys must be distinct, Part 1 §1.6.23)")
                raise DecodeError(kpos, f"map keys {other!r} and {k!r} are distinct AMQP values but equal Python"
                                        " values; this decoder cannot represent both")
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
    if pos >= stop:
        raise DecodeError(pos, "truncated array: expected the element constructor")
    descriptor = None
    if buf[pos] == 0x00:
        descriptor, pos = _decode(buf, pos + 1, stop, depth + 1)
        if pos >= stop:
            raise DecodeError(pos, "truncated array: expected the element constructor after the descriptor")
    ctor = buf[pos]
    elem = _DECODERS[ctor]
    if elem is None or ctor == 0x00:
        raise DecodeError(pos, f"invalid array element constructor 0x{ctor:02x}")
    pos += 1
    if ctor in _ZERO_WIDTH:
        if count > MAX_ZERO_WIDTH_ELEMENTS:
            raise DecodeError(pos - 1, f"array of {count} zero-width elements exceeds this decoder's limit"
                                       f" of {MAX_ZERO_WIDTH_ELEMENTS}")
    elif count > stop - pos:
        raise DecodeError(pos, f"array count {count} exceeds its {stop - pos} body bytes")
    items = []
    append = items.append
    for _ in range(count):
        v, pos = elem(buf, pos, stop, ctor, depth + 1)
        append(v)
    if pos != stop:
        raise DecodeError(pos, f"array size disagrees with its {count} elements ({stop - pos} bytes left over)")
    return Array(FORMAT_CODES[ctor], tuple(items), descriptor, ctor), pos


def _dec_described(buf, pos, end, code, depth):
    if depth > MAX_DEPTH:
        raise DecodeError(pos, "nesting too deep")
    start = pos - 1
    if pos + 2 < end and buf[pos] == 0x53:          # smallulong descriptor of a known composite: the common case
        build = _BUILDERS.get(buf[pos + 1])
        if build is not None:
            vpos = pos + 2
            list_code = buf[vpos]
            if list_code == 0xC0 or list_code == 0x45 or list_code == 0xD0:
                value, pos = _dec_list(buf, vpos + 1, end, list_code, depth + 1)
            else:
                value, pos = _decode(buf, vpos, end, depth + 1)
            return build(value, start, vpos), pos
    descriptor, pos = _decode(buf, pos, end, depth + 1)
    if type(descriptor) is ULong:
        cls = BY_CODE.get(descriptor) if descriptor < 0x100000000 else None
    elif type(descriptor) is Symbol:
        cls = BY_SYMBOL.get(descriptor)
    else:
        cls = None        # other descriptor types are reserved but not invalid (Part 1 §1.5)
    vpos = pos
    value, pos = _decode(buf, pos, end, depth + 1)
    if cls is None:
        return Described(descriptor, value), pos
    if issubclass(cls, ValueSection):
        return _value_section(cls, value, vpos), pos
    return _BUILDERS[cls.DESCRIPTOR](value, start, vpos), pos


def _value_section(cls, value, vpos):
    want = cls.VALUE_TYPE
    ok = {"binary": bytes, "map": dict, "annotations": dict, "list": list}.get(want)
    if ok is not None and type(value) is not ok:
        raise DecodeError(vpos, f"{cls.NAME} section must hold a {want}, got {type(value).__name__}")
    return cls(value)


# -- composite field checks ----------------------------------------------------------------------------------
# A field's value must have the decoded Python type of its declared wire type. Leniencies, on purpose:
# a `multiple` field may hold one value or an array of that type (an empty array of any element type is
# accepted too); `*` fields take any value, except that a field requiring an archetype (source, target,
# delivery-state, outcome) must hold a composite providing it or a described value of an unknown descriptor.

_FIELD_EXACT: dict[str, frozenset] = {
    "uint": frozenset({UInt}), "ulong": frozenset({ULong}), "ushort": frozenset({UShort}),
    "ubyte": frozenset({UByte}), "int": frozenset({Int}), "long": frozenset({Long}), "byte": frozenset({Byte}),
    "short": frozenset({Short}), "boolean": frozenset({bool}), "string": frozenset({str}),
    "symbol": frozenset({Symbol}), "binary": frozenset({bytes}), "map": frozenset({dict}),
    "timestamp": frozenset({Timestamp}), "uuid": frozenset({_uuid.UUID}), "float": frozenset({Float}),
    "double": frozenset({float}), "char": frozenset({Char}), "list": frozenset({list}),
    "decimal32": frozenset({Decimal32}), "decimal64": frozenset({Decimal64}),
    "decimal128": frozenset({Decimal128}),
}
_COMPOSITE_BY_NAME: dict[str, type] = {c.NAME: c for c in COMPOSITES.values() if issubclass(c, Composite)}
_PROVIDERS: dict[str, tuple] = {}
for _c in _COMPOSITE_BY_NAME.values():
    for _archetype in (_c.PROVIDES or "").split(", "):
        if _archetype:
            _PROVIDERS[_archetype] = _PROVIDERS.get(_archetype, ()) + (_c,)


def _field_accepts(spec) -> frozenset | None:
    """The exact decoded types a field accepts without further thought; None: any value."""
    prim = wire_type(spec.type)
    if prim in _FIELD_EXACT:
        return _FIELD_EXACT[prim]
    if prim in _COMPOSITE_BY_NAME:
        return frozenset({_COMPOSITE_BY_NAME[prim]})
    if prim == "*" and spec.requires in _PROVIDERS and spec.requires not in ("frame", "sasl-frame", "section"):
        return frozenset(_PROVIDERS[spec.requires]) | {Described}
    return None


def _field_ok(value, spec, accepts: frozenset) -> bool:
    """The slow path of the field check: arrays in `multiple` fields."""
    if spec.multiple and type(value) is Array:
        return not value.items or (value.descriptor is None and value.element_type == wire_type(spec.type))
    return type(value) in accepts


def _short_repr(value) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _compile_builder(cls):
    """Generate the function turning a decoded list into an instance of `cls`: pads absent trailing fields,
    raises DecodeError for too many fields, a missing mandatory field or a field of the wrong type."""
    n = len(cls.FIELDS)
    env = {"DecodeError": DecodeError, "cls": cls, "PAD": [[None] * (n - k) for k in range(n + 1)],
           "_field_ok": _field_ok, "_short_repr": _short_repr}
    names = [f"v{i}" for i in range(n)]
    lines = ["def build(value, start, vpos):",
             "    if value.__class__ is not list:",
             f"        raise DecodeError(vpos, f'{cls.NAME} must be a list, got {{type(value).__name__}}')",
             "    n = len(value)",
             f"    if n != {n}:",
             f"        if n > {n}: raise DecodeError(vpos, f'{cls.NAME} has {{n}} fields; the type defines {n}')",
             "        value = value + PAD[n]"]
    if n:
        lines.append(f"    {', '.join(names)}, = value")
    for i, spec in enumerate(cls.FIELDS):
        v = names[i]
        if spec.mandatory:
            lines += [f"    if {v} is None:",
                      f"        raise DecodeError(start, {cls.NAME + ': mandatory field ' + spec.name + ' is missing'!r})"]
        accepts = _field_accepts(spec)
        if accepts is None:
            continue
        env[f"S{i}"], env[f"A{i}"] = spec, accepts
        want = f"{spec.type}{' or an array of it' if spec.multiple else ''}"
        lines += [f"    if {v} is not None and {v}.__class__ not in A{i} and not _field_ok({v}, S{i}, A{i}):",
                  f"        raise DecodeError(vpos, f'{cls.NAME}.{spec.name} must be {want}, got"
                  f" {{type({v}).__name__}} {{_short_repr({v})}}')"]
    lines.append(f"    return cls({', '.join(names)})")
    exec("\n".join(lines), env)   # noqa: S102 - generated from the static field table
    return env["build"]


_BUILDERS: dict = {}   # descriptor code -> builder, for every list-based composite
for _c in _COMPOSITE_BY_NAME.values():
    _BUILDERS[_c.DESCRIPTOR] = _compile_builder(_c)


def build_composite(cls, value, start: int, vpos: int) -> Composite:
    """Turn a decoded list into a composite, checking mandatory fields and field types.

    `start` is the offset reported for a missing mandatory field, `vpos` the offset of the list.
    """
    return _BUILDERS[cls.DESCRIPTOR](value, start, vpos)


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
    except _FAILURES as exc:
        raise _as_decode_error(exc, offset, base) from None


# what decoding a malformed value can raise: our DecodeError, and (defensively: a gap in the explicit checks
# must still surface as a DecodeError) what Python raises on a short or odd buffer
_FAILURES = (DecodeError, struct.error, IndexError, ValueError, TypeError, OverflowError, RecursionError)


def _as_decode_error(exc: Exception, offset: int, base: int) -> DecodeError:
    """`exc`, raised decoding the value at `offset`, as a DecodeError at its stream offset (`base` added)."""
    if isinstance(exc, DecodeError):
        return DecodeError(exc.offset + base, exc.reason) if base else exc
    return DecodeError(base + offset, f"malformed value ({type(exc).__name__}: {exc})")


def decode_performative(buf: bytes, offset: int, end: int, base: int = 0) -> tuple[Any, int]:
    """`decode_value(buf, offset, end, base=base)` for a frame body: the same value, the same errors.

    The common body -- a composite with a smallulong descriptor and a list8 / list32 / list0 (every
    performative our peers and the brokers send) -- goes straight to the list decoder and the composite's
    builder, skipping the generic dispatch; a plain transfer, flow or disposition (`_compile_plain`: nearly
    every frame) skips those too; anything else goes through `decode_value`. tests/wire checks that they all
    give the same value or the same error on random frames, random plain bodies and the fuzz corpus."""
    if offset + 3 < end and buf[offset] == 0x00 and buf[offset + 1] == 0x53:
        if buf[offset + 3] == 0xC0:
            plain = _PLAIN.get(buf[offset + 2])
            if plain is not None:
                done = plain(buf, offset + 4, end)
                if done is not None:
                    return done
        build = _BUILDERS.get(buf[offset + 2])
        list_code = buf[offset + 3]
        if build is not None and (list_code == 0xC0 or list_code == 0x45 or list_code == 0xD0):
            try:
                value, pos = _dec_list(buf, offset + 4, end, list_code, 1)
                return build(value, offset, offset + 3), pos
            except _FAILURES as exc:
                raise _as_decode_error(exc, offset, base) from None
    return decode_value(buf, offset, end, base=base)


_PLAIN_UINT, _PLAIN_BOOL, _PLAIN_VBIN, _PLAIN_STATE = 1, 2, 3, 4


def _plain_fields(cls) -> tuple:
    """Per field of `cls`: (kind, mandatory, states). kind says which usual encodings `_plain` decodes there
    (uint0 / smalluint / uint; true / false; vbin8; a described empty list of one of `states`, descriptor code
    -> class, the composites without mandatory field the field accepts); 0: only null (anything else: None)."""
    out = []
    for spec in cls.FIELDS:
        prim, accepts, states = wire_type(spec.type), _field_accepts(spec), {}
        kind = 0 if spec.multiple else {"uint": _PLAIN_UINT, "boolean": _PLAIN_BOOL, "binary": _PLAIN_VBIN}.get(prim, 0)
        if kind == 0 and not spec.multiple and prim == "*" and accepts:
            states = {c.DESCRIPTOR: c for c in accepts
                      if c in _COMPOSITE_BY_NAME.values() and not any(f.mandatory for f in c.FIELDS)}
            kind = _PLAIN_STATE if states else 0
        out.append((kind, spec.mandatory, states))
    return tuple(out)


def _compile_plain(cls):
    """Generate `cls`'s plain decoder: (buf, pos after the list8 code, end) -> (composite, end) when the body
    is a list8 whose fields are each null or in their usual encoding (`_plain_fields`), with the very value
    the generic list decoder and builder give; None for anything else, which the general path decodes
    (errors included). Nearly every transfer, flow and disposition is such a body."""
    fields = _plain_fields(cls)
    need = max((i + 1 for i, f in enumerate(fields) if f[1]), default=0)     # up to the last mandatory field
    env = {"cls": cls, "SMALL": _SMALL_UINTS, "UINT0": _UINT0, "mk": _mk, "UInt": UInt, "u32": _u32}
    lines = ["def plain(buf, pos, end):",
             "    if pos + 2 > end:",
             "        return None",
             "    stop = pos + 1 + buf[pos]",
             "    count = buf[pos + 1]",
             "    pos += 2",
             f"    if stop > end or count > {len(fields)} or count > stop - pos or count < {need}:",
             "        return None"]
    names = []
    for i, (kind, mandatory, states) in enumerate(fields):
        v = f"v{i}"
        names.append(v)
        lines += [f"    if count > {i}:",
                  "        if pos >= stop:",
                  "            return None",
                  "        code = buf[pos]"]
        branch = "if"
        if not mandatory:
            lines += ["        if code == 0x40:", f"            {v} = None", "            pos += 1"]
            branch = "elif"
        if kind == _PLAIN_UINT:
            lines += [f"        {branch} code == 0x52 and pos + 2 <= stop:", f"            {v} = SMALL[buf[pos + 1]]",
                      "            pos += 2",
                      "        elif code == 0x43:", f"            {v} = UINT0", "            pos += 1",
                      "        elif code == 0x70 and pos + 5 <= stop:", f"            {v} = mk(UInt, u32(buf, pos + 1)[0])",
                      "            pos += 5"]
        elif kind == _PLAIN_BOOL:
            lines += [f"        {branch} code == 0x41 or code == 0x42:", f"            {v} = code == 0x41",
                      "            pos += 1"]
        elif kind == _PLAIN_VBIN:
            lines += [f"        {branch} code == 0xA0 and pos + 2 <= stop and pos + 2 + buf[pos + 1] <= stop:",
                      "            n = buf[pos + 1]", f"            {v} = bytes(buf[pos + 2:pos + 2 + n])",
                      "            pos += 2 + n"]
        elif kind == _PLAIN_STATE:
            env[f"STATES{i}"] = states
            lines += [f"        {branch} code == 0x00 and pos + 4 <= stop and buf[pos + 1] == 0x53 and buf[pos + 3] == 0x45"
                      f" and buf[pos + 2] in STATES{i}:",
                      f"            {v} = STATES{i}[buf[pos + 2]]()", "            pos += 4"]
        lines += ["        else:" if kind or not mandatory else "        if True:", "            return None",
                  "    else:", f"        {v} = None"]
    lines += ["    if pos != stop:", "        return None", f"    return cls({', '.join(names)}), stop"]
    exec("\n".join(lines), env)   # noqa: S102 - generated from the static field table
    return env["plain"]


_PLAIN: dict = {c.DESCRIPTOR: _compile_plain(c) for c in (COMPOSITES["Transfer"], COMPOSITES["Flow"],
                                                           COMPOSITES["Disposition"])}


def decode_all(buf: bytes) -> list[Any]:
    """Decode consecutive values filling `buf` exactly (e.g. the sections of a message)."""
    values = []
    pos = 0
    while pos < len(buf):
        v, pos = decode_value(buf, pos)
        values.append(v)
    return values
