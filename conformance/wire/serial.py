"""RFC 1982 serial-number arithmetic for AMQP `sequence-no` (Part 2 §2.8.10), SERIAL_BITS = 32.

This module owns comparisons and distances of delivery-counts, transfer-ids and delivery-ids. Values that
are exactly 2^31 apart have no defined order in RFC 1982; comparing them raises `SerialUndefined` instead of
guessing. Never compare sequence numbers with plain `<`.
"""

from __future__ import annotations

SERIAL_BITS = 32
MODULUS = 1 << SERIAL_BITS
HALF = 1 << (SERIAL_BITS - 1)
MASK = MODULUS - 1


class SerialUndefined(ArithmeticError):
    """The comparison or addition is undefined by RFC 1982 (values 2^31 apart, or an addend >= 2^31)."""


def serial_add(a: int, n: int) -> int:
    """a + n modulo 2^32. RFC 1982 §3.1 defines n in [0, 2^31 - 1]; negative n subtracts (our extension)."""
    if not -HALF < n < HALF:
        raise SerialUndefined(f"adding {n} to a serial number is undefined (|n| must be < 2^31)")
    return (a + n) & MASK


def serial_diff(a: int, b: int) -> int:
    """The signed distance from a to b (b - a), in (-2^31, 2^31). Raises when they are 2^31 apart."""
    d = (b - a) & MASK
    if d == HALF:
        raise SerialUndefined(f"{a} and {b} are 2^31 apart: their order is undefined by RFC 1982")
    return d - MODULUS if d > HALF else d


def serial_room(a: int, base: int, count: int) -> int:
    """How far `base + count` lies ahead of `a`: the signed distance from a to base (serials) plus `count`, a
    plain uint (a window or a credit may be up to 2^32 - 1, which serial_add refuses). Never raises: a
    distance of exactly 2^31 counts as behind. What a window or a credit leaves: 2.5.6, 2.6.7."""
    d = (base - a) & MASK
    return (d - MODULUS if d >= HALF else d) + count


def in_uint_range(value) -> bool:
    """`value` is an int (not a bool) that fits a uint / sequence-no: 0 <= value < 2^32."""
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value < MODULUS


def serial_lt(a: int, b: int) -> bool:
    """a < b in RFC 1982 order."""
    return serial_diff(a, b) > 0


def serial_le(a: int, b: int) -> bool:
    """a <= b in RFC 1982 order."""
    return a & MASK == b & MASK or serial_diff(a, b) > 0


def serial_gt(a: int, b: int) -> bool:
    return serial_diff(a, b) < 0


def serial_ge(a: int, b: int) -> bool:
    return a & MASK == b & MASK or serial_diff(a, b) < 0


class SequenceNo(int):
    """A 32-bit serial number: `+ n` wraps, `-` gives the signed distance, comparisons follow RFC 1982."""

    __slots__ = ()

    def __new__(cls, value: int = 0):
        return int.__new__(cls, int(value) & MASK)

    def __add__(self, n: int) -> "SequenceNo":
        return SequenceNo(serial_add(int(self), int(n)))

    __radd__ = __add__

    def __sub__(self, other: int):
        """seq - n (plain int) steps back; seq - seq gives the signed distance as a plain int."""
        if isinstance(other, SequenceNo):
            return serial_diff(int(other), int(self))
        return SequenceNo(serial_add(int(self), -int(other)))

    def __lt__(self, other: int) -> bool:
        return serial_lt(int(self), int(other))

    def __le__(self, other: int) -> bool:
        return serial_le(int(self), int(other))

    def __gt__(self, other: int) -> bool:
        return serial_gt(int(self), int(other))

    def __ge__(self, other: int) -> bool:
        return serial_ge(int(self), int(other))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, int) and int(self) == int(other) & MASK

    def __hash__(self) -> int:
        return int.__hash__(self)

    def __repr__(self) -> str:
        return f"SequenceNo({int(self)})"
