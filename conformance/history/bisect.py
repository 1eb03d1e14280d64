"""Bisecting broker builds: the first build of an ordered series where a case's verdict changes (a
regression, or a fix).

This module is the search, pure: `search()` (good...bad with skips), `first_change()` (the first build whose
verdict differs from the first one's) and `outcome_of()` (`git bisect run`'s good / bad / skip). The builds
and running a case on one are the run pipeline's (`conformance.run.builds`); `history.cli` looks every build's
verdict up in the history first and runs the case only on the builds the search needs and the history lacks.
`bisect-run` is the `git bisect run` mode's step: 0 good, 1 bad, 125 cannot test.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from ..results import check_verdict, is_broken, is_untestable
from ..verdict import Verdict

GOOD, BAD, SKIP = "good", "bad", "skip"
# `git bisect run`'s exit codes (its protocol, not the suite's table): good, bad, cannot test, abort (> 127)
BISECT_GOOD, BISECT_BAD, BISECT_SKIP, BISECT_ABORT = 0, 1, 125, 128


# -- the search (pure) ---------------------------------------------------------------------------------------

@dataclass
class SearchStep:
    index: int
    outcome: str      # good / bad / skip
    source: str       # history / run


@dataclass
class SearchResult:
    first_bad: int | None
    steps: list[SearchStep] = field(default_factory=list)
    note: str = ""


def _remembered(probe: Callable[[int], tuple[str, str]], seen: dict[int, str], steps: list,
                step) -> Callable[[int], str]:
    """`probe` asked once per index: the outcome is remembered in `seen` and each first look is appended to
    `steps` as `step(index, outcome, source)`."""

    def look(i: int) -> str:
        if i not in seen:
            outcome, source = probe(i)
            seen[i] = outcome
            steps.append(step(i, outcome, source))
        return seen[i]
    return look


def search(count: int, probe: Callable[[int], tuple[str, str]]) -> SearchResult:
    """The first index whose outcome is bad, assuming good...good bad...bad; `probe(i)` returns
    (outcome, source). Skipped points are stepped around, as `git bisect skip` does."""
    result = SearchResult(first_bad=None)
    seen: dict[int, str] = {}
    look = _remembered(probe, seen, result.steps, SearchStep)

    first, last = 0, count - 1
    if look(first) == BAD:
        result.first_bad, result.note = first, "the first build already fails; nothing before it to compare"
        return result
    if look(last) != BAD:
        result.note = "the last build does not fail the case" if seen[last] == GOOD else \
            "the last build could not be tested"
        return result
    good, bad = first, last
    while bad - good > 1:
        mid = (good + bad) // 2
        candidates = sorted(range(good + 1, bad), key=lambda i: (abs(i - mid), i))
        outcome = SKIP
        for i in candidates:
            outcome = look(i)
            if outcome != SKIP:
                mid = i
                break
        if outcome == SKIP:
            result.note = f"builds {good + 2}..{bad} could not be tested; the first bad one is among them"
            break
        if outcome == GOOD:
            good = mid
        else:
            bad = mid
    result.first_bad = bad
    return result


RAN = "run"         # a step's source when the case ran on a build that started (not: "history", "start", "build")


@dataclass
class ChangeStep:
    index: int
    verdict: str
    source: str       # history / run / start (could not be started) / build (i40: could not be built)


@dataclass
class ChangeResult:
    """Where a case's verdict first differs from the oldest testable build's: `changed` is the index of the
    first build with another verdict, `before` the last one probed with the old verdict (None: no change).
    `errors_counted`: an end of the series gave `error` in a run, so errors took part as a verdict."""

    changed: int | None = None
    before: int | None = None
    verdict_before: str = ""
    verdict_after: str = ""
    steps: list[ChangeStep] = field(default_factory=list)
    note: str = ""
    errors_counted: bool = False

    def counted(self, step: ChangeStep) -> bool:
        """Whether a step's verdict took part in the search (else it was stepped around)."""
        return not is_untestable(step.verdict) or (
            self.errors_counted and step.verdict == Verdict.ERROR and step.source == RAN)


def first_change(count: int, verdict_of: Callable[[int], tuple[str, str]]) -> ChangeResult:
    """The first build whose verdict differs from the oldest testable build's, assuming one change point
    (old...old new...new). Builds where the case cannot be judged (error, unsupported) are stepped around;
    the oldest and newest testable builds anchor the search, then `search` halves the range between them.

    Except that an `error` at an end of the series, from a run on a build that started (the case broke there,
    e.g. the broker stopped answering; `source` "run"), is a verdict of its own: "when did this start (or stop)
    erroring" gets an answer, the first build that gives it, the errors in between counting with it (a change
    to or from error: `results.change_kind` calls it a change). Builds that could not be started or built, and
    `unsupported`, are stepped around in any case."""
    result = ChangeResult()
    seen: dict[int, str] = {}
    look = _remembered(verdict_of, seen, result.steps, ChangeStep)

    def ran_error(i: int) -> bool:
        return look(i) == Verdict.ERROR and any(s.index == i and s.source == RAN for s in result.steps)

    result.errors_counted = count > 1 and (ran_error(0) or ran_error(count - 1))

    def counts(i: int) -> bool:
        return not is_untestable(look(i)) or (result.errors_counted and ran_error(i))

    first = next((i for i in range(count) if counts(i)), None)
    if first is None:
        result.note = "no build could be tested"
        return result
    last = next((i for i in range(count - 1, first, -1) if counts(i)), None)
    reference = seen[first]
    if last is None or seen[last] == reference:
        result.note = (f"the newest testable build still gives {reference}" if last is not None else
                       "only one build could be tested")
        return result

    def probe(k: int) -> tuple[str, str]:
        verdict = look(first + k)
        return (SKIP if not counts(first + k) else GOOD if verdict == reference else BAD), ""

    found = search(last - first + 1, probe)
    changed = first + found.first_bad
    result.changed, result.note = changed, found.note
    result.before = max(i for i, v in seen.items() if i < changed and v == reference and counts(i))
    result.verdict_before, result.verdict_after = reference, seen[changed]
    return result


def outcome_of(verdict: str) -> str:
    """`git bisect run`'s view of a verdict: bad (a requirement broken), skip (untestable), else good; an
    unknown verdict is BadResults (exit 12)."""
    check_verdict(verdict, "the build's record")
    return BAD if is_broken(verdict) else SKIP if is_untestable(verdict) else GOOD
