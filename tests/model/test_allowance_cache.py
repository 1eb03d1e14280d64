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
