"""The oracle's remembered allowance (the judging hot path) gives exactly what the full pass gives."""

from __future__ import annotations

import random

from conformance.model.oracle import FlowOracle, _allowance_of, _Grant
from conformance.wire.serial import HALF, MASK


def test_remembered_allowance_equals_the_full_pass_across_wrap_and_jumps():
    rnd = random.Random(22)
    hits = 0
    for trial in range(300):
        oracle = FlowOracle()
        current = rnd.choice([0, MASK - 50, HALF - 30, rnd.randrange(1 << 32)])
        run = [_Grant(i, (current + rnd.randint(-5, 5)) & MASK, rnd.randint(0, 600)) for i in range(10)]
        index, start = 10, 0
        for step in range(300):
            r = rnd.random()
            if r < 0.45:
                current = (current + 1) & MASK
            elif r < 0.5:
                current = (current + rnd.choice([HALF, HALF - 1, HALF + 1, 1 << 30, -(1 << 29)])) & MASK
            elif r < 0.8:                                   # a grant joins the end (limits mostly growing)
                run.append(_Grant(index, (current + rnd.randint(-3, 3)) & MASK, rnd.randint(0, 1000)))
                index += 1
            elif r < 0.9:                                   # the window's start moves forward
                start = min(len(run) - 1, start + rnd.randint(0, 3))
            elif r < 0.93 and start > 2:                    # superseded grants dropped (as _candidates does)
                cut = rnd.randint(1, start)
                del run[:cut]
                start -= cut
            elif r < 0.95:                                  # another run's window, the same oracle
                other = [_Grant(i, rnd.randrange(1 << 32), 7) for i in range(6)]
                assert oracle._allowance(other, current, other) == _allowance_of(other, current)
            window = run[start:]
            got = oracle._allowance(window, current, run)
            assert got == _allowance_of(window, current), (trial, step)
            hits += 1
    assert hits


QUARTER = 1 << 30


def _remembered(current: int, bases: list[int], credit: int = 10):
    """An oracle whose remembered allowance for a run of grants (one per base, the window the whole run) was
    just made by a full pass at `current`."""
    oracle = FlowOracle()
    run = [_Grant(i, b & MASK, credit) for i, b in enumerate(bases)]
    assert oracle._allowance(run, current, run) == _allowance_of(run, current)
    return oracle, run


def _check(oracle, run, current):
    got = oracle._allowance(run[:], current, run)
    assert got == _allowance_of(run, current), hex(current)
    return got


def test_the_remembered_allowance_counts_the_whole_distance_current_moved_since_the_full_pass():
    """Steps just under 2^30 are each short enough to reuse the maximum, but together they carry the old grants
    past 2^31 from `current`, where their left wraps (RFC 1982): the remembered bound must add every step (and a
    grant joining just ahead of `current` must not lower it), or the cache returns the unwrapped maximum."""
    current = 1000
    oracle, run = _remembered(current, [current] * 4)
    for step in range(4):
        current = (current + QUARTER - 2) & MASK
        _check(oracle, run, current)
        run.append(_Grant(len(run), (current + 1) & MASK, 3))      # joins 1 ahead of current: d = -1
        _check(oracle, run, current)


def test_a_grant_joining_far_from_current_is_judged_by_the_full_pass():
    """A grant that joins the remembered window 2^30 or more from `current` (here: exactly 2^31, where its
    left is undefined, and 2^30) is left to the full pass: never counted with the undefined distance, never
    answered with nothing."""
    for offset, credit in ((HALF, 50), (-HALF, 50), (QUARTER, QUARTER + 70), (-QUARTER, 0)):
        current = MASK - 3
        oracle, run = _remembered(current, [current - 1, current, current + 1, current])
        run.append(_Grant(len(run), (current - offset) & MASK, credit))
        assert _check(oracle, run, current) is not None
        _check(oracle, run, (current + 1) & MASK)


def test_a_grant_joining_beyond_the_remembered_spread_widens_it():
    """A grant joining 1 behind or 1 ahead of `current` when every other grant's base is `current` (spread 0)
    widens the remembered spread to 1; the next lookups reuse it."""
    for offset in (1, -1):
        current = 77
        oracle, run = _remembered(current, [current] * 4)
        run.append(_Grant(4, (current - offset) & MASK, 30))
        assert _check(oracle, run, current) == 30 - offset
        assert _check(oracle, run, current + 1) == 29 - offset
        run.append(_Grant(5, current, 1))
        assert _check(oracle, run, current + 2) == 28 - offset


def test_a_grant_joining_far_ahead_of_current_does_not_shrink_the_remembered_spread():
    """A grant 2^30 - 1 ahead of `current` joins a window whose spread is 2^30 - 2: the spread grows to
    2^30 - 1, so one later step of 2^31 - 2 (which carries the oldest grant past 2^31, wrapping its left) goes
    to the full pass."""
    current = 5
    oracle, run = _remembered(current, [current - (QUARTER - 2), current, current, current])
    run.append(_Grant(4, (current + QUARTER - 1) & MASK, 1))
    _check(oracle, run, current)
    _check(oracle, run, (current + HALF - 2) & MASK)
