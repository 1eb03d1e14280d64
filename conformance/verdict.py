"""Verdicts and case results: what one conformance case concluded about one broker.

This module owns the verdict vocabulary (after Autobahn|Testsuite) and the record of one case run. It does
no I/O; writers of results live in `conformance.results`.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from enum import Enum
from typing import Any


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


# Worst first: used to pick the overall verdict when a case has several findings.
SEVERITY = {Verdict.ERROR: 5, Verdict.FAIL: 4, Verdict.NON_STRICT: 3, Verdict.UNSUPPORTED: 2,
            Verdict.INFORMATIONAL: 1, Verdict.PASS: 0}

# What breaking a requirement of each level means.
VERDICT_FOR_LEVEL = {"MUST": Verdict.FAIL, "SHOULD": Verdict.NON_STRICT, "MAY": Verdict.INFORMATIONAL,
                     "informative": Verdict.INFORMATIONAL}


@dataclass
class CaseResult:
    """One case run against one broker."""

    case_id: str
    title: str
    section: str
    level: str
    requirement_ids: list[str]
    verdict: Verdict
    reason: str
    broker: str
    broker_product: str | None = None
    broker_version: str | None = None
    duration_s: float = 0.0
    # seconds the case's connections waited out: "timeout" (expectations that ran out), "quiet" (quiet periods)
    waited_s: dict[str, float] = field(default_factory=dict)
    started_at: str = ""
    violated: str | None = None          # requirement id of the deciding finding (the worst, first found)
    expected: str | None = None
    actual: str | None = None
    findings: list[dict] = field(default_factory=list)   # every finding, deciding one first (Finding.to_record)
    subject: list[str] = field(default_factory=list)     # the requirement(s) the case exists to judge
    outcome: str | None = None           # how the case body ended: passed / recorded / unobservable (None: halted)
    observations: dict[str, Any] = field(default_factory=dict)
    transcripts: list[dict] = field(default_factory=list)   # Transcript.to_json() of each connection
    ladders: list[str] = field(default_factory=list)
    broker_log_tail: str | None = None

    def to_record(self, with_transcripts: bool = False) -> dict:
        d = asdict(self)
        d["verdict"] = self.verdict.value
        if not with_transcripts:
            d.pop("transcripts")
            d.pop("ladders")
        return d

    def summary_line(self) -> str:
        return f"{self.case_id:<12} {self.verdict.value:<13} {self.broker:<16} {self.reason}"
