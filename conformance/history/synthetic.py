"""Run directories for the benchmarks and the history's and report's own tests, in exactly the format
`amqp-conformance run` writes (run.json + results.jsonl, transcripts beside them).

Two kinds. Synthetic runs (`write_synthetic_runs`, `write_matrix_run`): the real case catalogue, a handful of
brokers and versions, mostly passing verdicts, a few deterministic failures, regressions between versions and
flaky cases, made by plain string formatting, fast enough for ten million records. Replayed nightly runs
(`write_nightly_history`): real runs' records (findings, reasons, transcripts) replayed night after night
under new run ids and times, for a history whose records look like real ones (the report page's benchmark and
its browser test).
"""

from __future__ import annotations

import datetime as _dt
import json
import random
from dataclasses import dataclass
from pathlib import Path

from ..verdict import Verdict

_P, _F, _N, _I = (v.value for v in (Verdict.PASS, Verdict.FAIL, Verdict.NON_STRICT, Verdict.INFORMATIONAL))

BROKERS = {
    "synthetic-a": ("SynthMQ", ["1.0.0", "1.1.0", "1.2.0", "2.0.0"]),
    "synthetic-b": ("OtherMQ", ["0.9", "0.10", "0.11"]),
    "synthetic-c": ("ThirdMQ", ["5.4.1", "5.5.0"]),
}


def _cases() -> list[dict]:
    from ..cases import load_all
    return [{"case_id": c.id, "title": c.title, "section": c.section, "level": c.level,
             "requirement_ids": list(c.requirements)} for c in load_all().values()]


def write_synthetic_runs(dest: Path, n_records: int, records_per_run: int = 10_000, seed: int = 7) -> list[Path]:
    """Write run directories under `dest/runs/` holding `n_records` case records in all; return them."""
    rng = random.Random(seed)
    cases = _cases()
    columns = [(b, product, v) for b, (product, versions) in BROKERS.items() for v in versions]
    # per (case, column): a fixed verdict, except a few flaky ones and regressions in later versions
    verdict_of: dict[tuple[int, int], tuple[str, ...]] = {}
    for ci in range(len(cases)):
        for k, (broker, _, version) in enumerate(columns):
            roll = rng.random()
            if roll < 0.06:
                verdict_of[ci, k] = (_F,)
            elif roll < 0.09:
                verdict_of[ci, k] = (_N,)
            elif roll < 0.11:
                verdict_of[ci, k] = (_P, _F)           # flaky
            elif roll < 0.13:
                verdict_of[ci, k] = (_I,)
            else:
                verdict_of[ci, k] = (_P,)
    encoded = [{key: json.dumps(value) for key, value in c.items()} for c in cases]
    runs_dir = Path(dest) / "runs"
    runs_dir.mkdir(parents=True, exist_ok=True)
    start = _dt.datetime(2026, 1, 1, tzinfo=_dt.timezone.utc)
    out: list[Path] = []
    written = 0
    run_index = 0
    while written < n_records:
        k = run_index % len(columns)
        broker, product, version = columns[k]
        started = start + _dt.timedelta(hours=run_index)
        run_id = f"synthetic-{run_index:07d}"
        run_dir = runs_dir / run_id
        run_dir.mkdir(exist_ok=True)
        count = min(records_per_run, n_records - written)
        meta = {"run_id": run_id, "suite_version": "0.1.0", "git_revision": "synthetic", "host": "synthetic",
                "python": "3.11", "started_at": started.isoformat(), "finished_at": started.isoformat(),
                "scheduled": count,       # as a real run has it: the ingest checks every record is there
                "brokers": {broker: {"product": product, "version": version}}, "options": {}}
        (run_dir / "run.json").write_text(json.dumps(meta), "utf-8")
        lines = []
        stamp = json.dumps(started.isoformat())
        for i in range(count):
            ci = (i + run_index) % len(cases)
            c = encoded[ci]
            choices = verdict_of[ci, k]
            verdict = choices[(i // len(cases) + run_index) % len(choices)]
            duration = 0.05 + (i * 7919 % 1000) / 1000.0
            lines.append(
                f'{{"run_id": "{run_id}", "case_id": {c["case_id"]}, "title": {c["title"]}, "section": {c["section"]}, '
                f'"level": {c["level"]}, "requirement_ids": {c["requirement_ids"]}, "verdict": "{verdict}", '
                f'"reason": "synthetic record {i} of run {run_index}: the broker did what the case expected", '
                f'"violated": null, "expected": null, "actual": null, "broker": "{broker}", '
                f'"broker_product": "{product}", "broker_version": "{version}", "duration_s": {duration:.3f}, '
                f'"started_at": {stamp}, "observations": {{}}, "broker_log_tail": null}}\n')
        with open(run_dir / "results.jsonl", "w", encoding="utf-8") as fh:
            fh.writelines(lines)
        out.append(run_dir)
        written += count
        run_index += 1
    return out


MATRIX_EXTRA = {"synthetic-d": ("FourthMQ", ["3.0", "3.1", "3.2"]), "synthetic-e": ("FifthMQ", ["7.0", "7.1", "7.2"])}


def write_matrix_run(dest: Path, index: int, seed: int = 11) -> Path:
    """One nightly run of the whole matrix under `dest/runs/`: every case against 15 broker@versions (the 9
    of BROKERS and 6 more), one record each (34 cases: 510 records), started after every write_synthetic_runs
    record (2026-06-01 plus `index` hours), so it changes the latest verdict of its cells."""
    rng = random.Random(seed * 1_000_003 + index)
    cases = _cases()
    columns = [(b, product, v) for b, (product, versions) in {**BROKERS, **MATRIX_EXTRA}.items() for v in versions]
    started = _dt.datetime(2026, 6, 1, tzinfo=_dt.timezone.utc) + _dt.timedelta(hours=index)
    run_id = f"matrix-{index:07d}"
    run_dir = Path(dest) / "runs" / run_id
    run_dir.mkdir(parents=True, exist_ok=True)
    meta = {"run_id": run_id, "suite_version": "0.1.0", "git_revision": "synthetic", "host": "synthetic",
            "python": "3.11", "started_at": started.isoformat(), "finished_at": started.isoformat(),
            "scheduled": len(cases) * len(columns),
            "brokers": {b: {"product": p, "version": v} for b, p, v in columns}, "options": {}}
    lines = []
    for k, (broker, product, version) in enumerate(columns):
        for ci, c in enumerate(cases):
            at = (started + _dt.timedelta(seconds=k * len(cases) + ci)).isoformat()
            verdict = _F if rng.random() < 0.08 else _P
            lines.append(json.dumps({
                "run_id": run_id, **c, "verdict": verdict, "reason": f"matrix run {index}: {verdict}",
                "violated": None, "broker": broker, "broker_product": product, "broker_version": version,
                "duration_s": round(0.05 + rng.random(), 3), "started_at": at, "observations": {"k": k}}) + "\n")
    (run_dir / "results.jsonl").write_text("".join(lines), "utf-8")
    (run_dir / "run.json").write_text(json.dumps(meta), "utf-8")
    return run_dir


# -- nightly histories replayed from real runs ----------------------------------------------------------------

@dataclass(frozen=True)
class Replay:
    """One column of a replayed nightly matrix: the broker (or client library) label, product and version its
    records carry, the broker label in the source runs whose records it replays, and per case another source
    broker to take that case's record from instead (to make a failure hold for some releases and not others)."""

    label: str
    product: str
    version: str
    source: str
    overrides: tuple[tuple[str, str], ...] = ()


def _source_records(sources: list[Path]) -> dict[tuple[str, str], list[tuple[Path, dict]]]:
    """(broker, case_id) -> [(run directory, record)] over the source runs, in the order given."""
    from ..results import read_records
    found: dict[tuple[str, str], list[tuple[Path, dict]]] = {}
    for run_dir in sources:
        for record in read_records(Path(run_dir) / "results.jsonl"):
            found.setdefault((record["broker"], record["case_id"]), []).append((Path(run_dir), record))
    return found


def _stem(case_id: str, broker: str) -> str:
    import re
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", f"{case_id}__{broker}")


def _link_or_copy(source: Path, target: Path) -> None:
    import os
    import shutil
    try:
        os.link(source, target)
    except OSError:
        shutil.copyfile(source, target)


def write_nightly_history(dest: Path, sources: list[Path], nights: int, columns: list[Replay] | None = None,
                          start: _dt.datetime | None = None, seed: int = 5) -> list[Path]:
    """`nights` nightly run directories under `dest/runs/`, made of real runs' records: each night replays, for
    every column, the records of its source broker (night n takes the n-th source run that holds the record,
    cycling, so repeated real runs bring their own run-to-run differences), with its label, product and
    version, a new run id and start (one night apart, 02:00 UTC), durations within ±10 % of the recorded ones,
    and the transcripts beside them. Records are otherwise as `run` wrote them (findings, reasons, ladders).
    `columns` defaults to every source broker as itself. Returns the run directories, oldest first."""
    records = _source_records(sources)
    if columns is None:
        first_of = {}
        for (broker, _), found in records.items():
            first_of.setdefault(broker, found[0][1])
        columns = [Replay(b, r.get("broker_product") or "", r.get("broker_version") or "", b)
                   for b, r in first_of.items()]
    case_ids = list(dict.fromkeys(case for _, case in records))
    rng = random.Random(seed)
    first = start or _dt.datetime(2026, 10, 1, 2, 0, tzinfo=_dt.timezone.utc)
    template = json.loads((Path(sources[0]) / "run.json").read_text("utf-8"))
    out = []
    for night in range(nights):
        started = first + _dt.timedelta(days=night)
        run_id = started.strftime("%Y%m%dT%H%M%SZ") + f"-{40000 + night}"
        run_dir = Path(dest) / "runs" / run_id
        (run_dir / "transcripts").mkdir(parents=True, exist_ok=True)
        lines, offset, brokers = [], 0.0, {}
        for column in columns:
            override = dict(column.overrides)
            for case_id in case_ids:
                choices = records.get((override.get(case_id, column.source), case_id))
                if not choices:
                    continue
                source_dir, record = choices[night % len(choices)]
                duration = round(max(0.0, float(record.get("duration_s") or 0.0) * rng.uniform(0.9, 1.1)), 4)
                at = started + _dt.timedelta(seconds=offset)
                offset += duration + 0.05
                new = {**record, "run_id": run_id, "broker": column.label, "broker_product": column.product,
                       "broker_version": column.version, "duration_s": duration, "started_at": at.isoformat()}
                lines.append(json.dumps(new, sort_keys=True) + "\n")
                for suffix in (".txt", ".json"):
                    transcript = source_dir / "transcripts" / (_stem(case_id, record["broker"]) + suffix)
                    if transcript.exists():
                        _link_or_copy(transcript, run_dir / "transcripts" / (_stem(case_id, column.label) + suffix))
            brokers[column.label] = {"product": column.product, "version": column.version}
        (run_dir / "results.jsonl").write_text("".join(lines), "utf-8")
        meta = {**template, "run_id": run_id, "started_at": started.isoformat(), "scheduled": len(lines),
                "finished_at": (started + _dt.timedelta(seconds=offset)).isoformat(), "brokers": brokers}
        meta.pop("stopped", None)
        (run_dir / "run.json").write_text(json.dumps(meta, indent=2, sort_keys=True), "utf-8")
        out.append(run_dir)
    return out
