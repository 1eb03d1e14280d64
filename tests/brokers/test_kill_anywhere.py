"""Kill-anywhere: the managed broker (qpid-proton-c, the fastest to start) is killed with SIGKILL at a random
point of a run, for several seeds. Every case that finished before the kill keeps the verdict it has in an
unkilled run of the same cases; every case that started after the kill, or ended after the broker was dead,
is `error` (the one case running at the kill is `error` or keeps its verdict, as the kill may come after its
last check); the run exits 14; and `report` lists the run as broken.

One unkilled reference run, then one killed run per seed, with short timeouts (--quiet-period 0.2,
--frame-timeout 2), all in one test (pytest-xdist keeps it on one worker) of about two minutes. The figures
are printed as one `FIGURE {...}` line (run with -s to see it).
"""

from __future__ import annotations

import datetime as dt
import json
import os
import random
import shutil
import signal
import threading
import time
from pathlib import Path

import pytest

from conformance import brokers
from conformance.cli import main
from conformance.errors import EXIT_CASE_ERROR

pytestmark = [pytest.mark.broker, pytest.mark.slow]

SEEDS = (11, 23, 37)
BROKER = "qpid-proton-c"
OPTIONS = ["--broker", BROKER, "-n", "0", "--quiet-period", "0.2", "--frame-timeout", "2"]


def records_of(reports: Path) -> tuple[Path, list[dict]]:
    [run] = sorted((reports / "runs").iterdir())
    return run, [json.loads(line) for line in (run / "results.jsonl").read_text().splitlines()]


def span(record: dict) -> tuple[float, float]:
    start = dt.datetime.fromisoformat(record["started_at"]).timestamp()
    return start, start + record["duration_s"]


def reference_run(reports: Path) -> tuple[dict, float]:
    """The verdict of every case in an unkilled run, and how long its cases took (first start to last end)."""
    main(["run", *OPTIONS, "--reports-dir", str(reports)])
    _, records = records_of(reports)
    spans = [span(r) for r in records]
    return {r["case_id"]: r["verdict"] for r in records}, max(e for _, e in spans) - min(s for s, _ in spans)


def killed_run(reports: Path, delay: float, monkeypatch) -> tuple[int, dict]:
    """A run whose managed broker is killed `delay` s after it started; when the kill was sent and when the
    process was seen dead (wall clock)."""
    kill = {}
    start = brokers.start

    def start_then_kill_later(spec, *args, **kwargs):
        handle = start(spec, *args, **kwargs)
        process = handle.managed.process

        def kill_it():
            kill["sent"] = time.time()
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=10)
            kill["dead"] = time.time()

        timer = threading.Timer(delay, kill_it)
        timer.daemon = True
        timer.start()
        kill["timer"] = timer
        return handle

    with monkeypatch.context() as patch:
        patch.setattr(brokers, "start", start_then_kill_later)
        code = main(["run", *OPTIONS, "--reports-dir", str(reports)])
    kill["timer"].join(timeout=15)
    return code, kill


def test_a_broker_killed_anywhere_breaks_the_run_and_nothing_else(tmp_path, monkeypatch, capsys):
    known, took = reference_run(tmp_path / "unkilled")
    capsys.readouterr()
    figures, killed = [], tmp_path / "killed"
    for seed in SEEDS:
        delay = random.Random(seed).uniform(0.3, max(took * 0.8, 1.0))
        reports = tmp_path / f"seed-{seed}"
        code, kill = killed_run(reports, delay, monkeypatch)
        capsys.readouterr()
        run, records = records_of(reports)
        assert "dead" in kill, f"seed {seed}: the broker was not killed during the run"
        before = [r for r in records if span(r)[1] < kill["sent"]]
        after = [r for r in records if span(r)[0] > kill["sent"] or span(r)[1] > kill["dead"] + 0.05]
        at = [r for r in records if r not in before and r not in after]     # the case running at the kill
        assert len(at) <= 1 and all(r["verdict"] in ("error", known[r["case_id"]]) for r in at), at
        changed = {r["case_id"]: (known[r["case_id"]], r["verdict"]) for r in before
                   if r["verdict"] != known[r["case_id"]]}
        assert changed == {}, f"seed {seed}: cases finished before the kill changed verdict (known, now): {changed}"
        not_error = {r["case_id"]: r["verdict"] for r in after if r["verdict"] != "error"}
        assert not_error == {}, f"seed {seed}: cases that ended after the broker died are not error: {not_error}"
        assert after, f"seed {seed}: the kill came after the last case"
        assert code == EXIT_CASE_ERROR, f"seed {seed}: exit {code}"
        shutil.copytree(run, killed / "runs" / run.name)
        figures.append({"seed": seed, "kill_after_s": round(delay, 2), "cases": len(records),
                        "kept_verdict_before_kill": len(before), "error_after_kill": len(after),
                        "at_the_kill": [f"{r['case_id']}: {r['verdict']}" for r in at], "exit": code})
    print("FIGURE " + json.dumps({"unkilled_cases_s": round(took, 1), "seeds": figures}))

    # report lists every killed run as broken
    out = tmp_path / "out"
    assert main(["report", "--reports-dir", str(killed), "--out", str(out)]) == 0, capsys.readouterr()
    model = json.loads((out / "report.json").read_text())
    broken = {u["run_id"] for u in model["unfinished_runs"] if u.get("broken")}
    ids = {json.loads((run / "run.json").read_text())["run_id"] for run in (killed / "runs").iterdir()}
    assert broken == ids and len(ids) == len(SEEDS)
    assert (out / "report.md").read_text().count("BROKEN run") == len(SEEDS)
