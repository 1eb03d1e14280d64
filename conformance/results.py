"""The case record: what one case run concluded, its line in results.jsonl, and what two verdicts say.

This module owns
- the record of one case run (`CaseResult`) and its one serialisation both ways: `record_line(result, run_id)`
  is the line results.jsonl gets (the run pipeline writes it, its controller reads it back), `parse_line`
  reads a line back into a record;
- the one check every reader of records applies (`check_record`): a record is a JSON object with a case_id,
  a broker and a verdict the vocabulary knows, else `BadResults` (exit 12) naming the file and line. `diff`,
  the history's ingest (and so the report and `bisect`), the run's own readers all go through it;
- results.jsonl on disk: `read_records`, `count_records`, `append_line` (one write, flushed and synced), and
  `atomic_write_text` / `atomic_write_json` (a file replaced whole or not at all), `transcript_stem` (the file
  name of a record's transcripts);
- what readers ask of verdicts: `is_broken`, `is_untestable`, `is_judged`, `check_verdict`; and the ONE
  classification of a change between two verdicts, `CHANGE` (a table over every pair: regression, fix, change
  or same) with `change_kind(before, after)`. `diff`, the report's changes and `bisect` all use it.

The verdict names, their orders and groups are `conformance.verdict`'s; nothing here spells a verdict name.
The run directory's layout around these files (run.json, the lock concurrent writers share) is
`conformance.run.directory`'s. Nothing here knows of a broker, a peer or Spark.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from .errors import BadResults
from .verdict import BROKEN, JUDGED, UNTESTABLE, VERDICTS, Verdict

RESULTS_FILE = "results.jsonl"


# -- the record -----------------------------------------------------------------------------------------------

@dataclass
class CaseResult:
    """One case run against one broker (or client library)."""

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


def record_line(result: CaseResult, run_id: str | None = None) -> str:
    """The line results.jsonl gets for `result` (without its newline): its record, with the run's id when it has
    one. The only serialiser of a record."""
    record = result.to_record()
    if run_id is not None:
        record = {"run_id": run_id, **record}
    return json.dumps(record, sort_keys=True, default=str)


def parse_line(line: str, where: str = "a record") -> dict:
    """A record read back from its line, checked (`check_record`); `where` names it in the error."""
    try:
        record = json.loads(line)
    except json.JSONDecodeError:
        raise BadResults(f"{where} is cut off or corrupted; delete that line (an interrupted write) or re-run "
                         "the case") from None
    return check_record(record, where)


def check_record(record: Any, where: str = "a record") -> dict:
    """`record` if it is a case record (a JSON object with case_id, broker and a known verdict), else
    BadResults (exit 12) saying what is wrong with it and where."""
    if not isinstance(record, dict) or not record.get("case_id") or not record.get("broker"):
        raise BadResults(f"{where} is not a case record (needs case_id, broker and a known verdict); delete that "
                         "line or re-run the case")
    check_verdict(record.get("verdict"), where)
    return record


def check_verdict(verdict: Any, where: str = "a record") -> str:
    """`verdict` if the vocabulary knows it, else BadResults (exit 12): one message for every reader."""
    if verdict not in VERDICTS:
        raise BadResults(f"{where} has an unknown verdict {verdict!r} (known: {', '.join(VERDICTS)}); delete "
                         "that line or re-run the case")
    return verdict


# -- results.jsonl on disk -------------------------------------------------------------------------------------

def read_records(path: Path) -> list[dict]:
    """The records of a results.jsonl, each checked (`check_record`); [] when the file does not exist. A line
    cut off by an interruption, or one that is no case record, is reported (file:line), not guessed at."""
    records = []
    try:
        lines = Path(path).read_text("utf-8").splitlines()
    except FileNotFoundError:
        return records
    for number, line in enumerate(lines, 1):
        if line.strip():
            records.append(parse_line(line, f"{path}:{number}"))
    return records


def check_lines(path: Path) -> None:
    """Raise BadResults naming the first line of `path` that is not a complete case record (read as text that
    may hold bytes that are not UTF-8)."""
    with open(path, encoding="utf-8", errors="replace") as fh:
        for number, line in enumerate(fh, 1):
            if line.strip():
                parse_line(line, f"{path}:{number}")


def count_records(path: Path) -> int:
    """How many non-empty lines results.jsonl holds (0 when it does not exist); nothing is parsed."""
    try:
        with open(path, "rb") as fh:
            return sum(1 for line in fh if line.strip())
    except FileNotFoundError:
        return 0


def append_line(path: Path, line: str) -> None:
    """Append one record line with a single write, flushed and synced (the caller holds the run's lock)."""
    with open(path, "a", encoding="utf-8") as fh:
        fh.write(line.rstrip("\n") + "\n")
        fh.flush()
        os.fsync(fh.fileno())


def atomic_write_text(path: Path, text: str) -> None:
    """Write `path` whole or not at all (a reader never sees half a file)."""
    path = Path(path)
    tmp = path.with_name(path.name + f".tmp-{os.getpid()}")
    tmp.write_text(text, "utf-8")
    os.replace(tmp, path)


def atomic_write_json(path: Path, data: Any, *, strict: bool = False) -> None:
    """`atomic_write_text` of `data` as indented JSON; strict: refuse NaN and infinities (run.json must be valid
    JSON for every reader)."""
    atomic_write_text(path, json.dumps(data, indent=2, sort_keys=True, default=str, allow_nan=not strict))


def transcript_stem(case_id: str, broker: str) -> str:
    """The file name (without suffix) of the transcripts of a record: transcripts/<stem>.json and .txt."""
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", f"{case_id}__{broker}")


# -- what readers ask of verdicts --------------------------------------------------------------------------------

def is_broken(verdict: str) -> bool:
    """A requirement was found broken (fail, non-strict)."""
    return verdict in BROKEN


def is_untestable(verdict: str) -> bool:
    """The verdict says nothing of the subject's behaviour (error, unsupported): bisect steps around it."""
    return verdict in UNTESTABLE


def is_judged(verdict: str) -> bool:
    """The verdict judges the subject (scores count these)."""
    return verdict in JUDGED


# -- the one classification of a change between two verdicts ---------------------------------------------------

REGRESSION, FIX, CHANGED, SAME = "regression", "fix", "change", "same"
CHANGE_KINDS: tuple[str, ...] = (REGRESSION, FIX, CHANGED, SAME)

_P, _F, _N, _I, _U, _E = (Verdict.PASS, Verdict.FAIL, Verdict.NON_STRICT, Verdict.INFORMATIONAL,
                          Verdict.UNSUPPORTED, Verdict.ERROR)
_R, _X, _C, _S = REGRESSION, FIX, CHANGED, SAME
_AFTER = (_P, _F, _N, _I, _U, _E)
# before (row) -> after (column). A regression: a requirement the subject held (or left open) is broken now,
# or a SHOULD it broke became a MUST it breaks; a fix the other way round. Untestable verdicts (unsupported,
# error) say nothing of the subject, and pass <-> informational is what it does, not whether it conforms:
# both are a change.
_ROWS = {
    #          pass fail  n-s  info unsup error
    _P:       (_S,  _R,  _R,  _C,  _C,  _C),
    _F:       (_X,  _S,  _X,  _X,  _C,  _C),
    _N:       (_X,  _R,  _S,  _X,  _C,  _C),
    _I:       (_C,  _R,  _R,  _S,  _C,  _C),
    _U:       (_C,  _C,  _C,  _C,  _S,  _C),
    _E:       (_C,  _C,  _C,  _C,  _C,  _S),
}
CHANGE: dict[tuple[str, str], str] = {(before.value, after.value): kind for before, kinds in _ROWS.items()
                                      for after, kind in zip(_AFTER, kinds)}


def change_kind(before: str, after: str) -> str:
    """regression, fix, change or same (see CHANGE) for a verdict that went from `before` to `after`; an unknown
    verdict is BadResults (exit 12), as every reader refuses it."""
    return CHANGE[check_verdict(before, "the earlier record"), check_verdict(after, "the later record")]
