"""RFC 1982 serial-number arithmetic for sequence-no (SERIAL_BITS = 32): wrap at 2^32, signed distance,
comparisons, and the undefined case of values exactly 2^31 apart."""

import pytest
from hypothesis import given, strategies as st

from conformance.wire import (
    SequenceNo, SerialUndefined, serial_add, serial_diff, serial_ge, serial_gt, serial_le, serial_lt,
)

U32 = st.integers(0, 2 ** 32 - 1)
STEP = st.integers(-(2 ** 31 - 1), 2 ** 31 - 1)
HALF = 1 << 31


def test_wraps_at_2_to_the_32():
    assert serial_add(0xFFFFFFFF, 1) == 0
    assert serial_add(0, -1) == 0xFFFFFFFF
    assert SequenceNo(0xFFFFFFFF) + 2 == 1 and isinstance(SequenceNo(0xFFFFFFFF) + 2, SequenceNo)
    assert SequenceNo(1) - 3 == 0xFFFFFFFE
    assert SequenceNo(1 << 32) == 0 and SequenceNo(-1) == 0xFFFFFFFF


def test_order_and_distance_across_the_wrap():
    assert serial_lt(0xFFFFFFFE, 1) and serial_gt(1, 0xFFFFFFFE)
    assert serial_le(5, 5) and serial_ge(5, 5) and not serial_lt(5, 5)
    assert serial_diff(0xFFFFFFFB, 3) == 8 and serial_diff(3, 0xFFFFFFFB) == -8
    assert SequenceNo(1) > SequenceNo(0xFFFFFFFF) and SequenceNo(0xFFFFFFFF) < 1
    assert SequenceNo(1) - SequenceNo(0xFFFFFFFF) == 2
    assert SequenceNo(0xFFFFFFFF) <= SequenceNo(0) and SequenceNo(0) >= SequenceNo(0xFFFFFFFF)
    assert serial_diff(0, HALF - 1) == HALF - 1 and serial_diff(0, HALF + 1) == -(HALF - 1)


@pytest.mark.parametrize("a", [0, 1, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFF])
def test_values_2_to_the_31_apart_are_undefined(a):
    b = (a + HALF) % (1 << 32)
    for compare in (serial_lt, serial_le, serial_gt, serial_ge, serial_diff):
        with pytest.raises(SerialUndefined, match="2\\^31 apart"):
            compare(a, b)
    with pytest.raises(SerialUndefined):
        SequenceNo(a) < SequenceNo(b)
    with pytest.raises(SerialUndefined):
        SequenceNo(a) - SequenceNo(b)


def test_additions_of_2_to_the_31_or_more_are_undefined():
    for n in (HALF, -HALF, 1 << 40):
        with pytest.raises(SerialUndefined):
            serial_add(0, n)
    assert issubclass(SerialUndefined, ArithmeticError)


@given(U32, STEP)
def test_adding_then_measuring_gives_the_step_back(a, n):
    b = serial_add(a, n)
    assert serial_diff(a, b) == n
    assert serial_lt(a, b) == (n > 0) and serial_gt(a, b) == (n < 0)
    assert SequenceNo(b) - SequenceNo(a) == n


@given(U32, U32)
def test_exactly_one_order_holds_unless_undefined(a, b):
    if (b - a) % (1 << 32) == HALF:
        with pytest.raises(SerialUndefined):
            serial_lt(a, b)
        return
    assert [serial_lt(a, b), a == b, serial_gt(a, b)].count(True) == 1
    assert serial_le(a, b) == (serial_lt(a, b) or a == b)
    assert serial_diff(a, b) == -serial_diff(b, a)
    assert -HALF < serial_diff(a, b) < HALF


@given(U32, st.integers(1, 2 ** 31 - 1))
def test_rfc_1982_definition_of_less_than(a, n):
    """RFC 1982 §3.2: i1 < i2 iff (i1 < i2 and i2 - i1 < 2^31) or (i1 > i2 and i1 - i2 > 2^31)."""
    b = (a + n) % (1 << 32)
    expected = (a < b and b - a < HALF) or (a > b and a - b > HALF)
    assert serial_lt(a, b) == expected is True


# -- serial_room: what a window or a credit leaves (2.5.6, 2.6.7) --------------------------------------------

def test_room_is_the_signed_distance_plus_the_count_across_the_wrap():
    from conformance.wire import serial_room
    assert serial_room(0xFFFFFFFE, 0xFFFFFFFE, 5) == 5             # nothing sent yet
    assert serial_room(1, 0xFFFFFFFE, 5) == 2                      # 3 sent across the wrap
    assert serial_room(0xFFFFFFFE, 1, 5) == 8                      # base ahead of a, across the wrap
    assert serial_room(4, 0xFFFFFFFE, 5) == -1                     # one beyond the limit
    assert serial_room(0, 0, 0xFFFFFFFF) == 0xFFFFFFFF             # a uint count, not a serial addend


def test_room_at_exactly_half_counts_as_behind_and_never_raises():
    from conformance.wire import serial_room
    assert serial_room(0, HALF, 0) == -HALF                        # 2^31 apart: behind (its documented rule)
    assert serial_room(HALF, 0, 10) == 10 - HALF
    assert serial_room(0, HALF - 1, 0) == HALF - 1                 # one short of half: ahead
    assert serial_room(0, HALF + 1, 0) == -(HALF - 1)


def test_room_masks_values_given_outside_the_uint_range():
    from conformance.wire import serial_room
    assert serial_room(0, 1 << 32, 3) == 3                         # 2^32 is 0
    assert serial_room(5, 3, 2) == 0 and serial_room(5 + (1 << 32), 3, 2) == 0
    assert serial_room(1, 0, 0) == -1 and serial_room(0, -1, 0) == -1


def test_uint_range_and_sequence_no_identity():
    from conformance.wire import in_uint_range
    assert in_uint_range(0) and in_uint_range(2 ** 32 - 1)
    assert not in_uint_range(2 ** 32) and not in_uint_range(-1) and not in_uint_range(True)
    assert SequenceNo(1) != 2 and SequenceNo(1) != "1" and SequenceNo(1) == 1 + 2 ** 32
    assert not SequenceNo(1).__eq__(2) and not SequenceNo(1).__eq__("1")
    assert hash(SequenceNo(7)) == hash(7) and repr(SequenceNo(2 ** 32 + 3)) == "SequenceNo(3)"
    with pytest.raises(SerialUndefined, match=r"adding 2147483648 to a serial number is undefined"):
        serial_add(0, HALF)
