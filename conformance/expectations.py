"""Expectations: what a team expects of each case on each of its brokers or client libraries, kept in its own
repository as a TOML file, and what a run's results are against them (the gate of a CI job).

This module owns the file's format (reading, checking, writing it back from a run), the judgement of one
result against it, and the exit code a gated run gets. It does no I/O beyond reading and writing that file;
the run pipeline (`conformance.run.gate`) checks entries against the suite's cases and requirements, reads the flaky
cells a report.json names, and hands it the records. The file (docs/ci.md#the-expectations-file)::

    version = 1
    labels = ["rabbitmq-4.0", "artemis-*"]   # optional: the brokers/libraries it speaks for (globs); absent: all
    cases = ["2.5.4/1", "2.5.6/1"]           # optional: the cases it knows; absent: every case

    [[expect]]
    case = "2.7.2/1"                 # or requirement = "2.7.4/unattached-handle" (every case judging it)
    on = "artemis-*"                 # a label as results name it, or a glob
    verdict = "fail"                 # or a list of verdicts, any of which is expected
    reason = "ARTEMIS-1234: handle-max not enforced"
    flaky = true                     # optional: a difference here does not fail the gate (--strict-flaky: it does)

How a result is judged (`Expectations.judge`). The entry that speaks for a cell is the most specific one: a
case entry before a requirement entry (a requirement entry speaks for a case whose deciding finding is that
requirement, then for a case whose subject it is); an exact label before a glob, a longer glob before a
shorter; the first in the file on a tie. A cell no entry speaks for expects `pass` when the file covers it
(its label matches `labels` or an entry's `on`, its case is in `cases`), else it is *new*. Then, with the
change table of `conformance.results` from the expected verdict to the actual one:

    same                  expected
    regression            unexpected fail     (worse than expected: pass -> fail, non-strict -> fail, ...)
    fix                   unexpected pass     (better: the bug is fixed; change or remove the entry)
    change, to error      unexpected error    (the run broke there; never expected unless an entry says error)
    change, otherwise     unexpected change   (e.g. pass -> unsupported: a hook is gone, nothing is judged)
    no entry, uncovered   new                 (an error there is an unexpected error all the same)

Every unexpected kind fails the gate, except on a flaky cell (an entry's `flaky`, or the history's report.json
naming the case flaky on that broker) unless `strict_flaky`. The gate's exit code: 14 when a gating result is
an error, else 1 when any result gates, else 0.
"""

from __future__ import annotations

import fnmatch
import json
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

from .errors import EXIT_CASE_ERROR, EXIT_MUST_FAILED, EXIT_OK, BadExpectations
from .results import FIX, REGRESSION, SAME, change_kind, check_verdict
from .verdict import VERDICTS, Verdict

FORMAT_VERSION = 1
TOP_KEYS = {"version", "labels", "cases", "expect"}
ENTRY_KEYS = {"case", "requirement", "on", "verdict", "reason", "flaky"}

# What a result is, against the file.
EXPECTED = "expected"
UNEXPECTED_FAIL = "unexpected fail"
UNEXPECTED_PASS = "unexpected pass"
UNEXPECTED_ERROR = "unexpected error"
UNEXPECTED_CHANGE = "unexpected change"
NEW = "new"
KINDS: tuple[str, ...] = (EXPECTED, UNEXPECTED_FAIL, UNEXPECTED_PASS, UNEXPECTED_ERROR, UNEXPECTED_CHANGE, NEW)
UNEXPECTED: tuple[str, ...] = (UNEXPECTED_FAIL, UNEXPECTED_PASS, UNEXPECTED_ERROR, UNEXPECTED_CHANGE)
# what each kind tells the person who keeps the file
ADVICE = {
    UNEXPECTED_FAIL: "a regression: fix it, or expect it with a reason",
    UNEXPECTED_PASS: "the bug is fixed: change or remove the entry",
    UNEXPECTED_ERROR: "the run broke there (see the reason); an error is expected only where an entry says so",
    UNEXPECTED_CHANGE: "the verdict changed kind (e.g. a hook is gone): update the entry",
    NEW: "no expectation yet: add one, or re-write the file with --write-expect",
}

_GLOB = re.compile(r"[*?\[]")
_EXPECT_HEADER = re.compile(r"^\s*\[\[\s*expect\s*\]\]\s*(#.*)?$")


@dataclass(frozen=True)
class Entry:
    """One `[[expect]]` table."""

    on: str
    verdicts: tuple[str, ...]
    reason: str
    case: str | None = None
    requirement: str | None = None
    flaky: bool = False
    line: int | None = None          # where it starts in the file (1-based), when known

    @property
    def glob(self) -> bool:
        return bool(_GLOB.search(self.on))

    def matches(self, label: str) -> bool:
        return self.on == label or (self.glob and fnmatch.fnmatchcase(label, self.on))

    def specificity(self) -> tuple:
        """Larger is more specific: exact label, then the glob with more literal characters."""
        return (not self.glob, len(_GLOB.sub("", self.on)))

    def to_json(self) -> dict:
        return {"on": self.on, "verdicts": list(self.verdicts), "reason": self.reason, "case": self.case,
                "requirement": self.requirement, "flaky": self.flaky, "line": self.line}

    @classmethod
    def from_json(cls, data: dict) -> "Entry":
        return cls(**{**data, "verdicts": tuple(data["verdicts"])})


@dataclass(frozen=True)
class Judgement:
    """One result against the file."""

    case_id: str
    label: str
    verdict: str
    kind: str
    expected: tuple[str, ...] | None      # None: new (nothing expected)
    entry: Entry | None = None            # None: the implicit `pass` of a covered cell, or new
    flaky: bool = False
    gating: bool = False                  # fails the gate

    @property
    def unexpected(self) -> bool:
        return self.kind in UNEXPECTED

    def expected_text(self) -> str:
        return " or ".join(self.expected) if self.expected else "nothing"

    def where(self, path: str | None = None) -> str:
        if self.entry is None:
            return f"{path}: no entry" if path else "no entry"
        line = f":{self.entry.line}" if self.entry.line else ""
        return f"{path or 'the file'}{line}"

    def describe(self, path: str | None = None) -> str:
        """One line: `UNEXPECTED FAIL 2.7.2/1 on rabbitmq-4.0: fail, expected pass (FILE: no entry)`."""
        head = f"{self.kind.upper()} {self.case_id} on {self.label}: {self.verdict}"
        if self.kind == NEW:
            return f"{head}, no expectation ({ADVICE[NEW]})"
        text = f"{head}, expected {self.expected_text()} ({self.where(path)}"
        if self.entry is not None:
            text += f": {self.entry.reason}"
        text += ")"
        if self.kind != EXPECTED:
            text += f"; {ADVICE[self.kind]}"
        if self.flaky and self.unexpected:
            text += "; flaky here, so it does not fail the gate" if not self.gating else "; flaky here (--strict-flaky)"
        return text

    def to_json(self) -> dict:
        return {"case_id": self.case_id, "label": self.label, "verdict": self.verdict, "kind": self.kind,
                "expected": list(self.expected) if self.expected is not None else None,
                "reason": self.entry.reason if self.entry else None,
                "line": self.entry.line if self.entry else None, "flaky": self.flaky, "gating": self.gating}


@dataclass
class Expectations:
    """A parsed expectations file."""

    entries: list[Entry] = field(default_factory=list)
    labels: tuple[str, ...] | None = None      # None: every label is covered
    cases: tuple[str, ...] | None = None       # None: every case is covered
    path: str | None = None

    # -- reading -------------------------------------------------------------------------------------------

    @classmethod
    def load(cls, path: str | Path) -> "Expectations":
        """Read and check the file (its shape only; `check_ids` checks the ids against the suite).
        BadExpectations (exit 16), one line naming the file, the line and the fix."""
        path = Path(path)
        try:
            text = path.read_text("utf-8")
        except FileNotFoundError:
            raise BadExpectations(f"no expectations file at {path}; write one from a run with "
                                  f"`amqp-conformance run --write-expect {path}`") from None
        except (OSError, UnicodeDecodeError) as exc:
            raise BadExpectations(f"cannot read the expectations file {path} ({exc}); check its path and "
                                  "that it is UTF-8 text") from None
        return cls.parse(text, str(path))

    @classmethod
    def parse(cls, text: str, path: str = "expectations.toml") -> "Expectations":
        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise BadExpectations(f"{path} is not valid TOML ({exc}); fix that line (format: docs/ci.md)") from None
        lines = [i for i, line in enumerate(text.splitlines(), 1) if _EXPECT_HEADER.match(line)]

        def bad(message: str, line: int | None = None) -> BadExpectations:
            where = f"{path}:{line}" if line else path
            return BadExpectations(f"{where}: {message} (format: docs/ci.md#the-expectations-file)")

        unknown = sorted(set(data) - TOP_KEYS)
        if unknown:
            raise bad(f"unknown key {unknown[0]!r}; the file has version, labels, cases and [[expect]] tables")
        if data.get("version", FORMAT_VERSION) != FORMAT_VERSION:
            raise bad(f"version {data['version']!r} is not one this suite reads (it reads {FORMAT_VERSION})")
        labels = _strings(data, "labels", bad)
        cases = _strings(data, "cases", bad)
        raw = data.get("expect", [])
        if not isinstance(raw, list) or not all(isinstance(r, dict) for r in raw):
            raise bad("expect must be [[expect]] tables")
        known_lines = lines if len(lines) == len(raw) else [None] * len(raw)
        entries: list[Entry] = []
        seen: dict[tuple, int | None] = {}
        for row, line in zip(raw, known_lines):
            entry = _entry(row, line, bad)
            key = (entry.case, entry.requirement, entry.on)
            if key in seen:
                first = f" (first at line {seen[key]})" if seen[key] else ""
                raise bad(f"a second entry for {entry.case or entry.requirement} on {entry.on}{first}; keep one",
                          line)
            seen[key] = line
            entries.append(entry)
        return cls(entries, labels, cases, path)

    def check_ids(self, cases: Iterable[str], requirements: Iterable[str]) -> None:
        """BadExpectations naming the first entry (or `cases` item) whose case or requirement the suite does not
        have: the file must stay true, so a stale id is an error, not a silent no-op."""
        cases, requirements = set(cases), set(requirements)
        for entry in self.entries:
            where = f"{self.path}:{entry.line}" if entry.line else str(self.path)
            if entry.case is not None and entry.case not in cases:
                raise BadExpectations(f"{where}: case {entry.case!r} does not exist in this suite; fix the id or "
                                      "remove the entry (`amqp-conformance list --cases` lists them)")
            if entry.requirement is not None and entry.requirement not in requirements:
                raise BadExpectations(f"{where}: requirement {entry.requirement!r} does not exist in the catalogue; "
                                      "fix the id or remove the entry (`amqp-conformance list` lists them)")
        for case_id in self.cases or ():
            if case_id not in cases:
                raise BadExpectations(f"{self.path}: `cases` names {case_id!r}, which does not exist in this "
                                      "suite; remove it (`amqp-conformance list --cases` lists them)")

    # -- judging -------------------------------------------------------------------------------------------

    def entry_for(self, record: dict, label: str) -> Entry | None:
        """The most specific entry that speaks for this record's cell (see the module docstring)."""
        case_id = record.get("case_id")
        violated = record.get("violated")
        subject = set(record.get("subject") or ())
        tiers = (
            [e for e in self.entries if e.case == case_id],
            [e for e in self.entries if e.requirement is not None and e.requirement == violated],
            [e for e in self.entries if e.requirement is not None and e.requirement in subject],
        )
        for tier in tiers:
            matching = [e for e in tier if e.matches(label)]
            if matching:
                best = max(e.specificity() for e in matching)
                return next(e for e in matching if e.specificity() == best)
        return None

    def covers(self, case_id: str, label: str) -> bool:
        """Whether a cell without an entry expects pass (else it is new)."""
        if self.cases is not None and case_id not in self.cases:
            return False
        if self.labels is None:
            return True
        return any(_matches(p, label) for p in self.labels) or any(e.matches(label) for e in self.entries)

    def judge(self, record: dict, label: str | None = None, *, flaky: bool = False,
              strict_flaky: bool = False) -> Judgement:
        """`record` (a results.jsonl record) against the file; `label` is the broker or library the cell
        belongs to (default: the record's; selfcheck passes the broker behind its proxy)."""
        label = label or record["broker"]
        verdict = check_verdict(record.get("verdict"), f"the record of {record.get('case_id')} on {label}")
        entry = self.entry_for(record, label)
        flaky = flaky or bool(entry and entry.flaky)
        if entry is not None:
            expected: tuple[str, ...] | None = entry.verdicts
        elif self.covers(record["case_id"], label):
            expected = (Verdict.PASS.value,)
        else:
            expected = None
        kind = classify(expected, verdict)
        gating = kind in UNEXPECTED and (strict_flaky or not flaky)
        return Judgement(record["case_id"], label, verdict, kind, expected, entry, flaky, gating)

    # -- serialising (to the run's worker processes) ----------------------------------------------------------

    def to_json(self) -> dict:
        return {"entries": [e.to_json() for e in self.entries], "labels": _list_or_none(self.labels),
                "cases": _list_or_none(self.cases), "path": self.path}

    @classmethod
    def from_json(cls, data: dict) -> "Expectations":
        return cls([Entry.from_json(e) for e in data["entries"]],
                   tuple(data["labels"]) if data.get("labels") is not None else None,
                   tuple(data["cases"]) if data.get("cases") is not None else None, data.get("path"))


def classify(expected: tuple[str, ...] | None, verdict: str) -> str:
    """The kind of `verdict` against the expected verdicts (None: new), from the one change table."""
    if expected is None:
        return UNEXPECTED_ERROR if verdict == Verdict.ERROR else NEW
    if verdict in expected:
        return EXPECTED
    if verdict == Verdict.ERROR:
        return UNEXPECTED_ERROR
    kinds = {change_kind(e, verdict) for e in expected} - {SAME}
    if REGRESSION in kinds:
        return UNEXPECTED_FAIL
    if kinds == {FIX}:
        return UNEXPECTED_PASS
    return UNEXPECTED_CHANGE


def gate_exit_code(judgements: Iterable[Judgement]) -> int:
    """14 when a gating result is an error (the run broke where the file did not expect it), else 1 when any
    result gates, else 0."""
    gating = [j for j in judgements if j.gating]
    if any(j.verdict == Verdict.ERROR for j in gating):
        return EXIT_CASE_ERROR
    return EXIT_MUST_FAILED if gating else EXIT_OK


def counts(judgements: Iterable[Judgement]) -> dict[str, int]:
    """kind -> how many (every kind, in KINDS order), and `flaky`: unexpected on a flaky cell, not gating."""
    judgements = list(judgements)
    out = {kind: sum(1 for j in judgements if j.kind == kind) for kind in KINDS}
    out["flaky"] = sum(1 for j in judgements if j.unexpected and not j.gating)
    return out


def summary_line(judgements: Iterable[Judgement]) -> str:
    """`34 results: 30 expected, 1 unexpected fail, 3 new` (kinds with none left out)."""
    judgements = list(judgements)
    c = counts(judgements)
    parts = [f"{c[k]} {k}" for k in KINDS if c[k]]
    if c["flaky"]:
        parts.append(f"{c['flaky']} of them on flaky cells (not gating)")
    return f"{len(judgements)} result{'s' if len(judgements) != 1 else ''}: " + (", ".join(parts) or "none")


# -- writing the file from a run ----------------------------------------------------------------------------------

def written_from(records: Iterable[dict], existing: Expectations | None, *, labels: Iterable[str],
                 cases: Iterable[str], reason_for=None) -> tuple[Expectations, list[dict]]:
    """The file that expects exactly what `records` show, kept as close to `existing` as that allows: an entry
    that still holds is kept with its reason (globs and requirement entries too); one that no longer holds is
    changed (a flaky entry gains the verdict), or removed when the cell now passes and nothing else speaks for
    it; a cell that passes needs no entry. `error` results are never written (an error is a broken run, not
    an expectation): they are returned, and their cells left as the file had them. `labels` and `cases` are
    the run's: added to the file's (a new file gets them, so what a later suite adds shows as new)."""
    base = existing or Expectations()
    entries = list(base.entries)
    skipped: list[dict] = []
    reason_for = reason_for or default_reason
    for record in records:
        label, verdict, case_id = record["broker"], record["verdict"], record["case_id"]
        if verdict == Verdict.ERROR:
            skipped.append(record)
            continue
        entry = Expectations(entries).entry_for(record, label)
        if entry is not None and verdict in entry.verdicts:
            continue                                        # still holds: kept with its reason
        if entry is not None and entry.case == case_id and entry.on == label:
            entries.remove(entry)                           # the cell's own entry no longer holds
            if entry.flaky:
                entries.append(Entry(label, entry.verdicts + (verdict,), entry.reason, case_id, flaky=True))
                continue
            entry = Expectations(entries).entry_for(record, label)   # what else speaks for the cell now
            if entry is not None and verdict in entry.verdicts:
                continue
        if verdict == Verdict.PASS and entry is None:
            continue                                        # a covered cell without an entry expects pass
        entries.append(Entry(label, (verdict,), reason_for(record), case_id))
    labels_out = None if existing is not None and existing.labels is None and existing.entries else \
        tuple(dict.fromkeys(tuple(base.labels or ()) + tuple(labels)))
    cases_out = None if existing is not None and existing.cases is None and existing.entries else \
        tuple(dict.fromkeys(tuple(base.cases or ()) + tuple(cases)))
    return Expectations([_unlined(e) for e in entries], labels_out, cases_out, base.path), skipped


def default_reason(record: dict) -> str:
    """What --write-expect says of a new entry: the deciding requirement and reason, cut short (put your issue
    key in front)."""
    reason = " ".join(str(record.get("reason") or "").split())
    violated = record.get("violated")
    if violated and not reason.startswith(violated):
        reason = f"{violated}: {reason}"
    return (reason[:157] + "...") if len(reason) > 160 else (reason or f"{record['verdict']} when written")


def render(expectations: Expectations, *, header: Iterable[str] = (), order=None) -> str:
    """The file as TOML text (parses back to the same `Expectations`); entries sorted by label, then case order
    (`order(case_id)` gives a sort key), requirement entries after case entries."""
    order = order or (lambda case_id: case_id)
    out = [f"# {line}" if line else "#" for line in header]
    out.append(f"version = {FORMAT_VERSION}")
    if expectations.labels is not None:
        out.append("labels = [" + ", ".join(_toml_string(x) for x in expectations.labels) + "]")
    if expectations.cases is not None:
        out.append("cases = [")
        row: list[str] = []
        for case_id in expectations.cases:
            row.append(_toml_string(case_id))
            if len(row) == 8:
                out.append("  " + ", ".join(row) + ",")
                row = []
        if row:
            out.append("  " + ", ".join(row) + ",")
        out.append("]")

    def key(e: Entry):
        return (e.on, e.case is None, order(e.case) if e.case else (), e.requirement or "")

    for e in sorted(expectations.entries, key=key):
        out += ["", "[[expect]]"]
        out.append(f"case = {_toml_string(e.case)}" if e.case else f"requirement = {_toml_string(e.requirement)}")
        out.append(f"on = {_toml_string(e.on)}")
        out.append("verdict = " + (_toml_string(e.verdicts[0]) if len(e.verdicts) == 1 else
                                   "[" + ", ".join(_toml_string(v) for v in e.verdicts) + "]"))
        out.append(f"reason = {_toml_string(e.reason)}")
        if e.flaky:
            out.append("flaky = true")
    return "\n".join(out) + "\n"


# -- helpers -----------------------------------------------------------------------------------------------------

def _matches(pattern: str, label: str) -> bool:
    return pattern == label or (bool(_GLOB.search(pattern)) and fnmatch.fnmatchcase(label, pattern))


def _strings(data: dict, key: str, bad) -> tuple[str, ...] | None:
    if key not in data:
        return None
    value = data[key]
    if not isinstance(value, list) or not all(isinstance(x, str) and x for x in value):
        raise bad(f"{key} must be a list of non-empty strings")
    return tuple(value)


def _entry(row: dict, line: int | None, bad) -> Entry:
    unknown = sorted(set(row) - ENTRY_KEYS)
    if unknown:
        raise bad(f"unknown key {unknown[0]!r} in [[expect]]; an entry has case or requirement, on, verdict, "
                  "reason and optionally flaky", line)
    case, requirement = row.get("case"), row.get("requirement")
    if (case is None) == (requirement is None):
        raise bad("an [[expect]] entry names exactly one of case or requirement", line)
    subject = case if case is not None else requirement
    if not isinstance(subject, str) or not subject:
        raise bad(f"{'case' if case is not None else 'requirement'} must be a non-empty string", line)
    on = row.get("on")
    if not isinstance(on, str) or not on.strip():
        raise bad(f"the entry for {subject} needs on = \"<broker or library label, or a glob such as artemis-*>\"",
                  line)
    raw = row.get("verdict")
    verdicts = tuple(raw) if isinstance(raw, list) else (raw,)
    if not verdicts or not all(isinstance(v, str) for v in verdicts):
        raise bad(f"the entry for {subject} on {on} needs verdict = one of {', '.join(VERDICTS)} (or a list of them)",
                  line)
    for v in verdicts:
        if v not in VERDICTS:
            raise bad(f"unknown verdict {v!r} for {subject} on {on}; use one of {', '.join(VERDICTS)}", line)
    reason = row.get("reason")
    if not isinstance(reason, str) or not reason.strip():
        raise bad(f"the entry for {subject} on {on} needs a reason (free text: an issue key, why it is expected)",
                  line)
    flaky = row.get("flaky", False)
    if not isinstance(flaky, bool):
        raise bad(f"flaky must be true or false (the entry for {subject} on {on})", line)
    return Entry(on, tuple(dict.fromkeys(verdicts)), reason.strip(), case, requirement, flaky, line)


def _unlined(entry: Entry) -> Entry:
    return Entry(entry.on, entry.verdicts, entry.reason, entry.case, entry.requirement, entry.flaky)


def _list_or_none(values) -> list | None:
    return list(values) if values is not None else None


def _toml_string(value: str) -> str:
    """A TOML basic string: JSON's escapes are TOML's, and DEL must be escaped too."""
    return json.dumps(str(value), ensure_ascii=False).replace("\x7f", "\\u007f")
