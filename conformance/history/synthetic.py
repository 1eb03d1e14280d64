"""Synthetic run directories for the pipeline benchmark and the history's own tests.

Writes run directories in exactly the format `amqp-conformance run` writes (run.json + results.jsonl), with
the real case catalogue, a handful of brokers and versions, mostly passing verdicts, a few deterministic
failures, regressions between versions and flaky cases, so every part of the report has something to show.
Generation is plain string formatting, fast enough for ten million records.
"""

from __future__ import annotations

import datetime as _dt
import json
import random
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
