"""The record of each `bisect`: what it looked at and what it found, kept beside the runs it made.

`bisect` writes one JSON file per search to `<reports-dir>/bisects/<UTC stamp>-<pid>.json`; `report` reads them
all and links each finding whose change point a bisect found to it (conformance.report.findings). A record:

    {"case_id": str, "series": str | null, "command": str (the command line, build labels only, never a URL),
     "builds": [label, ...] (oldest first), "steps": [{"build": label, "verdict": str, "source": "history"|"run"}],
     "before": label | null (the last build with the old verdict), "changed": label | null (the first with the
     new one), "verdict_before": str, "verdict_after": str, "kind": "regression"|"fix"|"change"|"", "note": str,
     "started_at": str, "finished_at": str (ISO 8601)}

Other commands may add keys (a commit bisect adds "commit": {"hash", "subject", "date", "tag", ...}). A record
that does not parse is left out of the report with a warning on stderr; it never stops a report.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import sys
from pathlib import Path

DIRECTORY = "bisects"


def now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")


def write_record(reports_dir: Path, record: dict) -> Path:
    """Write one bisect record (whole or not at all) and return its path."""
    folder = Path(reports_dir) / DIRECTORY
    folder.mkdir(parents=True, exist_ok=True)
    stamp = _dt.datetime.now(_dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    path = folder / f"{stamp}-{os.getpid()}.json"
    temporary = path.with_suffix(".json.tmp")
    temporary.write_text(json.dumps(record, indent=1, sort_keys=True) + "\n", "utf-8")
    os.replace(temporary, path)
    return path


def read_records(reports_dir: Path) -> list[dict]:
    """Every bisect record under `<reports_dir>/bisects/`, oldest first."""
    folder = Path(reports_dir) / DIRECTORY
    out = []
    for path in sorted(folder.glob("*.json")) if folder.is_dir() else []:
        try:
            record = json.loads(path.read_text("utf-8"))
        except (OSError, ValueError):
            print(f"warning: {path} is not a bisect record (not JSON); left out of the report", file=sys.stderr)
            continue
        if not isinstance(record, dict) or not isinstance(record.get("case_id"), str):
            print(f"warning: {path} is not a bisect record (no case_id); left out of the report", file=sys.stderr)
            continue
        out.append({**record, "file": f"{DIRECTORY}/{path.name}"})
    return sorted(out, key=lambda r: str(r.get("started_at") or ""))
