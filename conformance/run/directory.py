"""A run on disk: the run directory, one JSON record per case, transcripts and ladders.

This module owns the run directory's layout (documented in docs/results.md); the record, its line, reading
results.jsonl and writing a file atomically are `conformance.results`'s:

    <reports>/runs/<run-id>/run.json            run metadata (suite version, git revision, brokers, options,
                                                how many case x broker pairs were scheduled, when it finished)
    <reports>/runs/<run-id>/results.jsonl       one record per finished case, appended and flushed
    <reports>/runs/<run-id>/transcripts/<case>__<broker>.json / .txt   frames and ladder diagram
    <reports>/runs/<run-id>/bug-reports/<case>__<label>.md   a client library's fail / non-strict cell as a
                                                paste-able bug report (report/bugreport.py)

Each record is written as one line with a single write under a file lock, so concurrent pytest-xdist
workers never interleave and an interrupted run leaves every finished case readable. `finished_at` is set
only when every scheduled pair has its record; a run that stopped early says why in `stopped`, and one that
was killed keeps `finished_at: null`. run.json is strict JSON (no NaN). Secrets never reach these files: URLs
are stored redacted, transcripts come already redacted from the peer.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import platform
import subprocess
from pathlib import Path
from typing import Any

from filelock import FileLock

from .. import __version__
from ..errors import BadResults
from ..options import default_reports_dir
from ..report.bugreport import render_bug_report, wanted
from ..results import (RESULTS_FILE, CaseResult, append_line, atomic_write_json, atomic_write_text, count_records,
                       read_records, transcript_stem)

BUG_REPORTS = "bug-reports"


def new_run_id(now: _dt.datetime | None = None) -> str:
    now = now or _dt.datetime.now(_dt.timezone.utc)
    return now.strftime("%Y%m%dT%H%M%SZ") + f"-{os.getpid()}"


def git_revision() -> str | None:
    try:
        out = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, timeout=5,
                             cwd=Path(__file__).resolve().parent)
        return out.stdout.strip() or None
    except (OSError, subprocess.SubprocessError):
        return None


class RunDirectory:
    """A run's directory: create it, add records, finish it. Safe for concurrent writers (xdist)."""

    def __init__(self, path: Path):
        self.path = Path(path)
        self.results_file = self.path / RESULTS_FILE
        self.meta_file = self.path / "run.json"
        self._lock = FileLock(str(self.path / ".lock"), timeout=30)
        self._run_id: str | None = None

    @classmethod
    def create(cls, reports_dir: Path | None = None, run_id: str | None = None, **metadata: Any) -> "RunDirectory":
        """A new run directory `<reports_dir>/runs/<run_id>` (run_id: UTC time and pid unless given)."""
        run_id = run_id or new_run_id()
        return cls.at(Path(reports_dir or default_reports_dir()) / "runs" / run_id, run_id=run_id, **metadata)

    @classmethod
    def at(cls, path: Path, run_id: str | None = None, **metadata: Any) -> "RunDirectory":
        """The run directory at `path`, created with its run.json unless it has one already."""
        run = cls(Path(path))
        run_id = run_id or run.path.name
        (run.path / "transcripts").mkdir(parents=True, exist_ok=True)
        with run._lock:
            if not run.meta_file.exists():
                meta = {
                    "run_id": run_id,
                    "suite_version": __version__,
                    "git_revision": git_revision(),
                    "host": platform.node(),
                    "python": platform.python_version(),
                    "started_at": _dt.datetime.now(_dt.timezone.utc).isoformat(),
                    "finished_at": None,
                    "brokers": {},
                    **metadata,
                }
                atomic_write_json(run.meta_file, meta, strict=True)
        return run

    @property
    def run_id(self) -> str:
        """The run's id (from run.json; the directory name when run.json is unreadable)."""
        if self._run_id is None:
            try:
                self._run_id = self.read_meta().get("run_id") or self.path.name
            except BadResults:
                self._run_id = self.path.name
        return self._run_id

    def update_meta(self, **changes: Any) -> None:
        with self._lock:
            meta = self.read_meta()
            for key, value in changes.items():
                if isinstance(value, dict) and isinstance(meta.get(key), dict):
                    meta[key].update(value)
                else:
                    meta[key] = value
            atomic_write_json(self.meta_file, meta, strict=True)

    def read_meta(self) -> dict:
        try:
            return json.loads(self.meta_file.read_text("utf-8"))
        except FileNotFoundError:
            raise BadResults(f"{self.path} is not a run directory (no run.json); pass a directory under "
                             "reports/runs/") from None
        except json.JSONDecodeError as exc:
            raise BadResults(f"{self.meta_file} is corrupted ({exc.msg} at line {exc.lineno}); "
                             "remove the run directory or re-run") from None

    def record(self, result: CaseResult, line: str) -> None:
        """Append `line` (`result`'s record as `conformance.results.record_line` serialised it) and write its
        transcripts."""
        stem = transcript_stem(result.case_id, result.broker)
        if result.transcripts:
            atomic_write_json(self.path / "transcripts" / f"{stem}.json", result.transcripts)
        if result.ladders:
            (self.path / "transcripts" / f"{stem}.txt").write_text("\n\n".join(result.ladders), "utf-8")
        if result.observations.get("bug_report"):        # a client cell that broke a MUST / SHOULD
            (self.path / BUG_REPORTS).mkdir(exist_ok=True)
            atomic_write_text(self.path / result.observations["bug_report"], render_bug_report(result))
        with self._lock:
            append_line(self.results_file, line)

    def finish(self, stopped: str | None = None) -> bool:
        """The run ended: `finished_at` is set when every scheduled pair has its record (or nothing was
        scheduled); otherwise `stopped` (why it ended early) is recorded and `finished_at` stays null.
        Returns whether the run is complete."""
        scheduled = self.read_meta().get("scheduled")
        recorded = self.record_count()
        complete = stopped is None and (not isinstance(scheduled, int) or recorded >= scheduled)
        if complete:
            self.update_meta(finished_at=_now())
        else:
            why = stopped or f"{recorded} of {scheduled} scheduled cases have a record"
            self.update_meta(stopped={"at": _now(), "reason": why, "recorded": recorded})
        return complete

    def record_count(self) -> int:
        return count_records(self.results_file)

    def records(self) -> list[dict]:
        return read_records(self.results_file)

    @staticmethod
    def bug_report_of(result: CaseResult) -> str | None:
        """Where (relative to the run directory) `result`'s bug report goes, if it gets one
        (`report.bugreport.wanted`): `bug-reports/<case>__<label>.md`, the transcripts' stem."""
        return f"{BUG_REPORTS}/{transcript_stem(result.case_id, result.broker)}.md" if wanted(result) else None

    def drop_transcripts(self, case_id: str, broker: str) -> None:
        """Remove the transcript files of one record (selfcheck keeps only those whose verdict changed)."""
        stem = transcript_stem(case_id, broker)
        for suffix in (".json", ".txt"):
            (self.path / "transcripts" / f"{stem}{suffix}").unlink(missing_ok=True)


def _now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat()
