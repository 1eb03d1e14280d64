"""AMQP 1.0 primitive value types (Part 1 of the spec) as Python values.

This module owns the mapping between AMQP's type system and Python values. It never encodes or decodes.

- Plain Python values map to the natural AMQP type: None -> null, bool -> boolean, int -> long,
  float -> double, str -> string, bytes -> binary, list -> list, dict -> map, uuid.UUID -> uuid.
- The exact-width wrappers below pin a value to one AMQP type. They subclass int/float/str/bytes, so
  `UInt(5) == 5` and they can be used wherever a number or string is expected. The decoder always returns
  the wrapper of the type that was on the wire, so `type(value)` tells what the peer sent.
- `Described`, `Array` and `Raw` cover described values of unknown descriptors, arrays, and
  pre-encoded bytes that the encoder copies verbatim (for deliberately invalid frames).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


class _Fixed:
    """Mixin for exact-width wrappers: names the AMQP type and checks the range."""

    AMQP_TYPE = ""
    __slots__ = ()


def _int_type(name: str, lo: int, hi: int) -> type:
    def __new__(cls, value=0):
        v = int.__new__(cls, value)
        if not lo <= v <= hi:
            raise ValueError(f"{name} out of range [{lo}, {hi}]: {int(value)}")
        return v

    def __repr__(self):
        return f"{type(self).__name__}({int(self)})"

    def __str__(self):
        return int.__repr__(self)

    return type(name, (_Fixed, int), {"AMQP_TYPE": name.lower(), "__new__": __new__, "__repr__": __repr__,
                                       "__str__": __str__, "__slots__": (),
                                       "__doc__": f"AMQP {name.lower()} in [{lo}, {hi}]."})


UByte = _int_type("UByte", 0, 0xFF)
UShort = _int_type("UShort", 0, 0xFFFF)
UInt = _int_type("UInt", 0, 0xFFFFFFFF)
ULong = _int_type("ULong", 0, 0xFFFFFFFFFFFFFFFF)
Byte = _int_type("Byte", -0x80, 0x7F)
Short = _int_type("Short", -0x8000, 0x7FFF)
Int = _int_type("Int", -0x80000000, 0x7FFFFFFF)
Long = _int_type("Long", -0x8000000000000000, 0x7FFFFFFFFFFFFFFF)
Timestamp = _int_type("Timestamp", -0x8000000000000000, 0x7FFFFFFFFFFFFFFF)
Timestamp.AMQP_TYPE = "timestamp"
Timestamp.__doc__ = "AMQP timestamp: milliseconds since the Unix epoch (signed 64-bit)."


class Float(_Fixed, float):
    """AMQP float: IEEE 754 32-bit (a plain Python float encodes as double)."""

    AMQP_TYPE = "float"
    __slots__ = ()

    def __repr__(self):
        return f"Float({float(self)!r})"

    def __str__(self):
        return float.__repr__(self)


class Double(_Fixed, float):
    """AMQP double: IEEE 754 64-bit (same as a plain float, but explicit)."""

    AMQP_TYPE = "double"
    __slots__ = ()

    def __repr__(self):
        return f"Double({float(self)!r})"


class Symbol(_Fixed, str):
    """AMQP symbol: ASCII text used for names and error conditions."""

    AMQP_TYPE = "symbol"
    __slots__ = ()

    def __repr__(self):
        return f"Symbol({str.__str__(self)!r})"

    def __str__(self):
        return str.__str__(self)


class Char(_Fixed, str):
    """AMQP char: a single UTF-32BE code point."""

    AMQP_TYPE = "char"
    __slots__ = ()

    def __new__(cls, value: str):
        if len(value) != 1:
            raise ValueError("Char holds exactly one code point")
        return str.__new__(cls, value)

    def __repr__(self):
        return f"Char({str.__str__(self)!r})"

    def __str__(self):
        return str.__str__(self)


class String(_Fixed, str):
    """AMQP string pinned explicitly (a plain str is a string anyway)."""

    AMQP_TYPE = "string"
    __slots__ = ()


class Binary(_Fixed, bytes):
    """AMQP binary pinned explicitly (plain bytes are binary anyway)."""

    AMQP_TYPE = "binary"
    __slots__ = ()


def _decimal_type(name: str, width: int) -> type:
    def __new__(cls, value: bytes):
        if len(value) != width:
            raise ValueError(f"{name} holds exactly {width} bytes (IEEE 754 decimal, big-endian)")
        return bytes.__new__(cls, value)

    def __repr__(self):
        return f"{name}({bytes(self)!r})"

    return type(name, (_Fixed, bytes), {"AMQP_TYPE": name.lower(), "__new__": __new__, "__repr__": __repr__,
                                         "__slots__": ()})


Decimal32 = _decimal_type("Decimal32", 4)
Decimal64 = _decimal_type("Decimal64", 8)
Decimal128 = _decimal_type("Decimal128", 16)


@dataclass(frozen=True)
class Described:
    """A described value whose descriptor is not one of the known composite types."""

    descriptor: Any
    value: Any


# Format code -> type name, for every primitive encoding of Part 1 §1.6 (0x00 introduces a described value).
FORMAT_CODES: dict[int, str] = {
    0x40: "null", 0x41: "boolean", 0x42: "boolean", 0x56: "boolean", 0x50: "ubyte", 0x60: "ushort",
    0x70: "uint", 0x52: "uint", 0x43: "uint", 0x80: "ulong", 0x53: "ulong", 0x44: "ulong", 0x51: "byte",
    0x61: "short", 0x71: "int", 0x54: "int", 0x81: "long", 0x55: "long", 0x72: "float", 0x82: "double",
    0x74: "decimal32", 0x84: "decimal64", 0x94: "decimal128", 0x73: "char", 0x83: "timestamp", 0x98: "uuid",
    0xA0: "binary", 0xB0: "binary", 0xA1: "string", 0xB1: "string", 0xA3: "symbol", 0xB3: "symbol",
    0x45: "list", 0xC0: "list", 0xD0: "list", 0xC1: "map", 0xD1: "map", 0xE0: "array", 0xF0: "array",
}


@dataclass(frozen=True, eq=False)
class Array:
    """An AMQP array: every element has one type, named by `element_type` (e.g. "symbol", "uint").

    `element_type` may also be given as a format code (`Array(0x52, [UInt(1)])`): the encoder then uses exactly
    that element constructor (smalluint here) and `element_code` keeps it; `element_type` becomes the name.
    Without a code the encoder chooses (fixed-width codes for numbers, sym8/str8/vbin8 when every element
    fits). Decoded arrays carry the constructor that was on the wire in `element_code`.
    For an array of described values, `descriptor` is the shared descriptor and `element_type` the type of
    the described values. Equality ignores `element_code`.
    """

    element_type: str | int
    items: tuple = field(default_factory=tuple)
    descriptor: Any = None
    element_code: int | None = None

    def __post_init__(self):
        if not isinstance(self.items, tuple):
            object.__setattr__(self, "items", tuple(self.items))
        if isinstance(self.element_type, int):
            code = self.element_type
            if code not in FORMAT_CODES:
                raise ValueError(f"0x{code:02x} is not an AMQP format code (see Part 1 §1.6)")
            object.__setattr__(self, "element_code", code)
            object.__setattr__(self, "element_type", FORMAT_CODES[code])
        elif self.element_code is not None and FORMAT_CODES.get(self.element_code) != self.element_type:
            raise ValueError(f"element_code {self.element_code!r} does not encode {self.element_type!r}")

    def __iter__(self):
        return iter(self.items)

    def __len__(self):
        return len(self.items)

    def __getitem__(self, index):
        return self.items[index]

    def __eq__(self, other):
        if isinstance(other, Array):
            return (self.element_type, self.items, self.descriptor) == (
                other.element_type, other.items, other.descriptor)
        if isinstance(other, (list, tuple)):
            return list(self.items) == list(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]


@dataclass(frozen=True)
class Raw:
    """Pre-encoded bytes the encoder copies verbatim, e.g. a wrong-typed field in a negative case."""

    data: bytes


# Names of the primitive types, for field tables and arrays.
PRIMITIVE_TYPES = (
    "null", "boolean", "ubyte", "ushort", "uint", "ulong", "byte", "short", "int", "long", "float", "double",
    "decimal32", "decimal64", "decimal128", "char", "timestamp", "uuid", "binary", "string", "symbol",
    "list", "map", "array",
)
