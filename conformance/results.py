"""Results of a run on disk: the run directory, one JSON record per case, transcripts and ladders.

This module owns the on-disk layout (documented in docs/results.md):

    <reports>/runs/<run-id>/run.json            run metadata (suite version, git revision, brokers, options)
    <reports>/runs/<run-id>/results.jsonl       one record per finished case, appended and flushed
    <reports>/runs/<run-id>/transcripts/<case>__<broker>.json / .txt   frames and ladder diagram

Each record is written as one line with a single write under a file lock, so concurrent pytest-xdist
workers never interleave and an interrupted run leaves every finished case readable. Secrets never reach
these files: URLs are stored redacted, transcripts come already redacted from the peer.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import platform
import re
import subprocess
from pathlib import Path
from typing import Any

from filelock import FileLock

from . import __version__
from .errors import BadResults
from .verdict import CaseResult

DEFAULT_REPORTS_DIR = Path(os.environ.get("AMQP_CONFORMANCE_REPORTS", "reports"))


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


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", name)


class RunDirectory:
    """A run's directory: create it, add records, finish it. Safe for concurrent writers (xdist)."""

    def __init__(self, path: Path):
        self.path = Path(path)
        self.results_file = self.path / "results.jsonl"
        self.meta_file = self.path / "run.json"
        self._lock = FileLock(str(self.path / ".lock"), timeout=30)
        self._run_id: str | None = None

    @classmethod
    def create(cls, reports_dir: Path | None = None, run_id: str | None = None, **metadata: Any) -> "RunDirectory":
        run_id = run_id or new_run_id()
        run = cls(Path(reports_dir or DEFAULT_REPORTS_DIR) / "runs" / run_id)
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
                _atomic_write_json(run.meta_file, meta)
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
            _atomic_write_json(self.meta_file, meta)

    def read_meta(self) -> dict:
        try:
            return json.loads(self.meta_file.read_text("utf-8"))
        except FileNotFoundError:
            raise BadResults(f"{self.path} is not a run directory (no run.json); pass a directory under "
                             "reports/runs/") from None
        except json.JSONDecodeError as exc:
            raise BadResults(f"{self.meta_file} is corrupted ({exc.msg} at line {exc.lineno}); "
                             "remove the run directory or re-run") from None

    def record(self, result: CaseResult) -> None:
        stem = _safe(f"{result.case_id}__{result.broker}")
        if result.transcripts:
            _atomic_write_json(self.path / "transcripts" / f"{stem}.json", result.transcripts)
        if result.ladders:
            (self.path / "transcripts" / f"{stem}.txt").write_text("\n\n".join(result.ladders), "utf-8")
        record = {"run_id": self.run_id, **result.to_record()}
        line = json.dumps(record, sort_keys=True, default=str) + "\n"
        with self._lock:
            with open(self.results_file, "a", encoding="utf-8") as fh:
                fh.write(line)
                fh.flush()
                os.fsync(fh.fileno())

    def finish(self) -> None:
        self.update_meta(finished_at=_dt.datetime.now(_dt.timezone.utc).isoformat())

    def records(self) -> list[dict]:
        return read_records(self.results_file)


def read_records(path: Path) -> list[dict]:
    """Read results.jsonl; a line cut off by an interruption is reported, not guessed at."""
    records = []
    try:
        lines = Path(path).read_text("utf-8").splitlines()
    except FileNotFoundError:
        return records
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            records.append(json.loads(line))
        except json.JSONDecodeError:
            raise BadResults(f"{path}:{number} is cut off or corrupted; delete that line (an interrupted write) "
                             "or re-run the case") from None
    return records


def atomic_write_text(path: Path, text: str) -> None:
    """Write `path` whole or not at all (a reader never sees half a file)."""
    tmp = path.with_name(path.name + f".tmp-{os.getpid()}")
    tmp.write_text(text, "utf-8")
    os.replace(tmp, path)


def _atomic_write_json(path: Path, data: Any) -> None:
    atomic_write_text(path, json.dumps(data, indent=2, sort_keys=True, default=str))
