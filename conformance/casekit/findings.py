"""Findings, obligations and outcomes: what a case records while it runs, and the one rule that turns them
into a verdict.

A *finding* is a requirement the broker was seen to break (requirement id, its catalogue level, expected,
actual, where in which transcript). A case records every finding and goes on judging; the model and the
open obligations add theirs after the case. The verdict is the worst finding by level
(`conformance.verdict.VERDICT_FOR_LEVEL`: MUST -> fail, SHOULD -> non-strict, MAY/informative ->
informational); with no finding, the case's own `Outcome` (passed, behaviour recorded, or subject not
observable on this broker). Nothing else decides a verdict.

An *obligation* is a request the spec obliges the broker to answer (a drain, a flow on an unattached
handle); the catalogue marks which requirements are obligations. A broker that ends the session or closes
the connection with an error while one raised by our frames is open has broken that requirement.

A *refusal* is a detach, end or close whose error condition says the broker's configuration does not allow
what the case asked for (`REFUSALS`: precondition-failed, not-allowed, unauthorized-access, not-found,
resource-limit-exceeded, not-implemented), outside the case's subject (`CaseSpec.answers`). What the case
recorded after it arrived is set aside (kept in the observations), and a case that could not reach its
subject reports the refusal, quoting condition and description (verdict `unsupported`). Findings recorded
before it, and broken obligations (a refusal the spec forbids), stand.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Callable

from .. import catalogue
from ..verdict import SEVERITY, VERDICT_FOR_LEVEL, Verdict


class Source(str, Enum):
    """Who recorded a finding."""

    CASE = "case"              # a check of the case's own script
    MODEL = "model"            # the flow-control model judging the whole transcript after the case
    OBLIGATION = "obligation"  # a request left unanswered when the broker ended the session / connection

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True)
class Finding:
    """A requirement the broker broke, with what was expected and what was seen."""

    requirement: str
    reason: str
    expected: str | None = None
    actual: str | None = None
    frame_index: int | None = None      # index in the connection's transcript (where it was seen or awaited)
    connection: int | None = None       # 1-based connection number of the case
    source: Source = Source.CASE

    @property
    def level(self) -> str:
        return catalogue.get(self.requirement).level

    @property
    def verdict(self) -> Verdict:
        return VERDICT_FOR_LEVEL[self.level]

    def to_record(self) -> dict:
        return {"requirement": self.requirement, "level": self.level, "verdict": self.verdict.value,
                "reason": self.reason, "expected": self.expected, "actual": self.actual,
                "frame_index": self.frame_index, "connection": self.connection, "source": self.source.value}


def ordered(findings: list[Finding]) -> list[Finding]:
    """Worst first (by the verdict its level gives); among equals, the order they were recorded in."""
    return sorted(findings, key=lambda f: -SEVERITY[f.verdict])


def verdict_of(findings: list[Finding]) -> Verdict | None:
    """The verdict the findings decide (None without findings)."""
    return ordered(findings)[0].verdict if findings else None


class OutcomeKind(str, Enum):
    """How a case ended when it reached its end."""

    PASSED = "passed"              # every checked requirement held (decided by the absence of findings)
    RECORDED = "recorded"          # behaviour the spec leaves open, recorded with what was seen
    UNOBSERVABLE = "unobservable"  # the subject needs an optional behaviour this broker does not show

    def __str__(self) -> str:
        return self.value


OUTCOME_VERDICT = {OutcomeKind.PASSED: Verdict.PASS, OutcomeKind.RECORDED: Verdict.INFORMATIONAL,
                   OutcomeKind.UNOBSERVABLE: Verdict.INFORMATIONAL}


@dataclass
class Outcome:
    """What a case returns when it reaches its end."""

    kind: OutcomeKind
    reason: str
    observations: dict[str, Any] = field(default_factory=dict)
    requirement: str | None = None     # UNOBSERVABLE: the subject requirement that could not be judged

    @property
    def verdict(self) -> Verdict:
        return OUTCOME_VERDICT[self.kind]


@dataclass
class Obligation:
    """A request the broker must answer: raised by our frame at `frame_index` in a connection's
    transcript, discharged by the first later incoming frame `answers(frame)` accepts."""

    requirement: str
    what: str                            # "the drain of link X", for the finding's text
    connection: Any                      # the ConnectionScript
    channel: int | None                  # the broker's channel of the session it concerns (None: any)
    answers: Callable[[Any], bool]
    frame_index: int


# Error conditions (2.8.15) with which a broker refuses what its configuration does not allow.
REFUSALS = frozenset({"amqp:precondition-failed", "amqp:not-allowed", "amqp:unauthorized-access", "amqp:not-found",
                      "amqp:resource-limit-exceeded", "amqp:not-implemented"})

_ENDED_BY = {"detach": "refused the link (detach)", "end": "ended the session", "close": "closed the connection"}


@dataclass(frozen=True)
class Refusal:
    """The broker's detach, end or close carrying a refusal condition (see `REFUSALS`)."""

    condition: str
    description: str | None
    performative: str                   # detach / end / close
    connection: int                     # 1-based connection number of the case
    frame_index: int                    # index in that connection's transcript
    position: int                       # index among the frames that arrived on that connection
    frame: str                          # the frame, summarized

    def text(self) -> str:
        said = f' ("{self.description}")' if self.description else ""
        return f"the broker {_ENDED_BY.get(self.performative, self.performative)} with {self.condition}{said}"

    def reason(self) -> str:
        return (f"{self.text()}: the case could not reach its subject on this broker's configuration "
                f"(connection {self.connection}, frame {self.frame_index})")

    def to_record(self) -> dict:
        return {"condition": self.condition, "description": self.description, "performative": self.performative,
                "connection": self.connection, "frame_index": self.frame_index, "frame": self.frame}


# -- signals inside a case -----------------------------------------------------------------------------------

class CaseHalted(Exception):
    """A step could not go on without a frame that never came; its finding is recorded, the case body
    stops, and the executor goes on judging (model, obligations)."""

    def __init__(self, finding: Finding):
        super().__init__(finding.reason)
        self.finding = finding


class CaseConclusion(Exception):
    """Raised inside a case (or by a broker hook) to end it with a verdict that is not a finding's."""

    def __init__(self, verdict: Verdict, reason: str, *, observations: dict | None = None):
        super().__init__(reason)
        self.verdict = verdict
        self.reason = reason
        self.observations = observations or {}


class CaseUnsupported(CaseConclusion):
    """The broker profile lacks a hook the case needs."""

    def __init__(self, reason: str):
        super().__init__(Verdict.UNSUPPORTED, reason)


class SuiteError(Exception):
    """The suite itself is wrong (e.g. a finding on a requirement the case does not declare): never a
    broker's verdict. The executor reports it as an error naming the case to fix."""


class SubjectUnobservable(Exception):
    """Raised by a script when the case's subject cannot be observed on this broker (it gave too little to
    reach it, or the only way to see it is an optional behaviour it does not show); the case reports
    informational, `<requirement> not observable on this broker, because <because>`."""

    def __init__(self, because: str, *, requirement: str | None = None, observations: dict | None = None):
        super().__init__(because)
        self.because = because
        self.requirement = requirement
        self.observations = observations or {}
