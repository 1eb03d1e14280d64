"""The case framework: how a conformance case is declared, what it can ask for, how it concludes.

This module owns the case registry (`@case` decorator), the `CaseContext` a case runs with (broker,
queues, connections, timeouts), and the ways a case states its conclusion:

- return `ctx.passed(reason)` (or None) when every checked requirement held;
- `ctx.require(condition, requirement_id, expected=..., actual=...)` or `raise ctx.violation(...)` when a
  requirement was broken: the verdict follows the requirement's level (MUST -> fail, SHOULD -> non-strict,
  MAY/informative -> informational);
- return `ctx.informational(reason, **observed)` for behaviour the spec leaves open;
- `ctx.need_hook(name)` raises `CaseUnsupported` when the broker profile lacks a hook.

Anything else that goes wrong (a setup step times out, the broker dies) ends the case with ERROR; the
runner (`conformance.runner`) turns all of this into a `CaseResult`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Callable

from .. import catalogue
from ..verdict import Verdict

CASE_ID = re.compile(r"^\d+(\.\d+)+/\d+$")


@dataclass(frozen=True)
class CaseSpec:
    """A registered case: its id (`<section>/<n>`, e.g. `2.6.8/1`), what it checks, and its body."""

    id: str
    title: str
    requirements: tuple[str, ...]
    func: Callable[["CaseContext"], Any]
    figure: str | None = None
    expectation: str = ""
    needs: tuple[str, ...] = ()       # profile hooks the case needs (else: unsupported)
    exclusive: bool = False           # broker-wide side effects (alarms): never concurrent with others
    module: str = ""

    @property
    def section(self) -> str:
        return self.id.split("/")[0]

    @property
    def level(self) -> str:
        """The strongest level among the requirements the case checks."""
        levels = [catalogue.get(r).level for r in self.requirements]
        for lv in catalogue.LEVELS:
            if lv in levels:
                return lv
        return "informative"

    @property
    def description(self) -> str:
        return (self.func.__doc__ or "").strip()


REGISTRY: dict[str, CaseSpec] = {}


def case(id: str, title: str, requirements: list[str] | tuple[str, ...], *, figure: str | None = None,
         expectation: str = "", needs: tuple[str, ...] = (), exclusive: bool = False):
    """Register a conformance case. The decorated function takes a CaseContext."""
    if not CASE_ID.match(id):
        raise ValueError(f"case id {id!r} must look like <section>/<n>, e.g. 2.6.8/1")

    def register(func):
        if id in REGISTRY:
            raise ValueError(f"case id {id} registered twice ({REGISTRY[id].module} and {func.__module__})")
        for r in requirements:
            catalogue.get(r)  # raises UnknownRequirement for a typo
        REGISTRY[id] = CaseSpec(id, title, tuple(requirements), func, figure, expectation, tuple(needs),
                                exclusive, func.__module__)
        return func

    return register


# -- how a case concludes ---------------------------------------------------------------------------------

class CaseConclusion(Exception):
    """Raised inside a case to end it with a verdict."""

    def __init__(self, verdict: Verdict, reason: str, *, requirement: str | None = None,
                 expected: str | None = None, actual: str | None = None, observations: dict | None = None):
        super().__init__(reason)
        self.verdict = verdict
        self.reason = reason
        self.requirement = requirement
        self.expected = expected
        self.actual = actual
        self.observations = observations or {}


class CaseUnsupported(CaseConclusion):
    def __init__(self, reason: str):
        super().__init__(Verdict.UNSUPPORTED, reason)


@dataclass
class Outcome:
    """What a case returns when it ends normally (pass or informational)."""

    verdict: Verdict
    reason: str
    observations: dict[str, Any] = field(default_factory=dict)


def violation(requirement_id: str, reason: str, *, expected: str | None = None, actual: str | None = None,
              **observations: Any) -> CaseConclusion:
    """The conclusion for a broken requirement: its level decides fail / non-strict / informational."""
    level = catalogue.get(requirement_id).level
    verdict = {"MUST": Verdict.FAIL, "SHOULD": Verdict.NON_STRICT}.get(level, Verdict.INFORMATIONAL)
    return CaseConclusion(verdict, reason, requirement=requirement_id, expected=expected, actual=actual,
                          observations=observations)
