"""Verdicts and case results: what one conformance case concluded about one broker.

This module owns the verdict vocabulary (after Autobahn|Testsuite): the names and their order, what each
means, the two severity orders (a case's worst finding; a requirement judged by several cases), which
verdicts judge, the exit-code weight of a run's verdicts and their colours (terminal and report). Every other
module imports them from here (tests/test_layers.py checks that no other module spells a name). It does no
I/O; the record of a case run, its line format and the change between two verdicts are
`conformance.results`'s.
"""

from __future__ import annotations

from enum import Enum
from typing import Iterable

from .errors import EXIT_CASE_ERROR, EXIT_MUST_FAILED, EXIT_OK


class Verdict(str, Enum):
    PASS = "pass"                  # every requirement the case checks held
    FAIL = "fail"                  # a MUST was broken
    NON_STRICT = "non-strict"      # a SHOULD was broken
    INFORMATIONAL = "informational"  # behaviour the spec leaves open, recorded with what was seen
    UNSUPPORTED = "unsupported"    # the broker profile lacks a hook the case needs, or the broker's configuration
                                   # refused a step before the case reached its subject (casekit.findings.REFUSALS)
    ERROR = "error"                # the run itself broke (setup timeout, broker died)

    def __str__(self) -> str:
        return self.value


# The names, in the order tables and counts show them.
VERDICTS: tuple[str, ...] = tuple(v.value for v in Verdict)

MEANING = {
    Verdict.PASS: "every requirement the case checks held",
    Verdict.FAIL: "a MUST-level requirement was broken",
    Verdict.NON_STRICT: "a SHOULD-level requirement was broken",
    Verdict.INFORMATIONAL: "behaviour the spec leaves open, recorded",
    Verdict.UNSUPPORTED: "the broker profile lacks a hook the case needs, or its configuration refused a step",
    Verdict.ERROR: "the run itself broke",
}

# Verdicts that judge the case's subject (scores count these: passed / judged).
JUDGED: tuple[str, ...] = (Verdict.PASS.value, Verdict.FAIL.value, Verdict.NON_STRICT.value)
# Verdicts that say a requirement was found broken (a mutant is detected by one of these).
BROKEN: tuple[str, ...] = (Verdict.FAIL.value, Verdict.NON_STRICT.value)
# Verdicts drawn from the exchange with the broker (a silent, hung broker could have caused any of them).
CONCLUDED: tuple[str, ...] = JUDGED + (Verdict.INFORMATIONAL.value,)
# Verdicts that say nothing about the broker's behaviour (bisect skips a build that gives one).
UNTESTABLE: tuple[str, ...] = (Verdict.ERROR.value, Verdict.UNSUPPORTED.value)

# Worst first: used to pick the overall verdict when a case has several findings (and a run's worst).
SEVERITY = {Verdict.ERROR: 5, Verdict.FAIL: 4, Verdict.NON_STRICT: 3, Verdict.UNSUPPORTED: 2,
            Verdict.INFORMATIONAL: 1, Verdict.PASS: 0}

# For the verdict of a requirement judged by several cases (by name): a broken requirement or a broken run
# shows first; then pass (some case saw it hold) over informational and unsupported (no case decided it).
REQUIREMENT_SEVERITY = {"fail": 5, "non-strict": 4, "error": 3, "pass": 2, "informational": 1, "unsupported": 0}

# Short names, for the cells of a matrix of many verdicts (selfcheck's); the failing ones in capitals.
SHORT = {"pass": "pass", "fail": "FAIL", "non-strict": "n-s", "informational": "info", "unsupported": "unsup",
         "error": "ERROR"}

# Colours: ANSI SGR parameters for the terminal; (background, text) for the HTML report.
ANSI_COLOUR = {"pass": "32", "fail": "1;31", "non-strict": "33", "informational": "36", "unsupported": "35",
               "error": "1;41;97"}
HTML_COLOUR = {"pass": ("#1a7f37", "#ffffff"), "fail": ("#cf222e", "#ffffff"), "non-strict": ("#e3a008", "#1f2328"),
               "informational": ("#54aeff", "#0b2541"), "unsupported": ("#afb8c1", "#1f2328"),
               "error": ("#8250df", "#ffffff")}


def exit_code(records: Iterable[dict]) -> int:
    """A finished run's exit code from its records (`verdict`, `level`): 14 when any case ended in error (the
    run broke there; it outweighs a failure), else 1 when a MUST-level case failed, else 0."""
    records = list(records)
    if any(r.get("verdict") == Verdict.ERROR.value for r in records):
        return EXIT_CASE_ERROR
    if any(r.get("verdict") == Verdict.FAIL.value and r.get("level") == "MUST" for r in records):
        return EXIT_MUST_FAILED
    return EXIT_OK

# What breaking a requirement of each level means.
VERDICT_FOR_LEVEL = {"MUST": Verdict.FAIL, "SHOULD": Verdict.NON_STRICT, "MAY": Verdict.INFORMATIONAL,
                     "informative": Verdict.INFORMATIONAL}
