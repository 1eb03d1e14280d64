"""The full suite's wall time per managed broker, as a user runs it, printing one JSON object.

For each broker (default qpid-proton-c, rabbitmq-4.0, rabbitmq-3.10; qpid-proton-c is the reference) the
script runs `amqp-conformance run --broker B [-n N]` `--repeat` times (default 3), one run after another, in a
subprocess, after making sure the broker is provisioned (provisioning is not timed). Per broker:

- `wall_s`: min / median / max of the runs' wall time (the subprocess, start to exit);
- `start_s`: the nodes' start-up (median; from run.json: the broker's node and, for a broker with alarm hooks,
  its node of its own for the alarm and queue-limit cases, which starts in parallel), part of the wall time;
- `fixed_s`: median seconds before the first case started and after the last case ended (broker start,
  pytest-xdist start, broker stop, report writing);
- `case_sum_s`: median sum of the case durations; `waited_s`: median sum of the cases' waits without an
  answer (`timeout`: expectations that ran out, `quiet`: quiet periods), from `waited_s` in results.jsonl;
- `slowest`: the five cases with the largest median duration;
- `verdicts`: the verdict table of each run (case -> verdict) and `verdicts_identical` across the runs;
- `targets`: median wall <= 20 s (<= 12 s on qpid-proton-c) and no case's median above 3 s except the
  alarm cases (`exclusive`), each with whether it was met.

Not a timed test: it prints figures. On a shared machine they are indicative only.

Without -n the runs take `run`'s own default, as a user's run does (2 workers, or the profile's `[broker] workers`:
4 for ActiveMQ); `workers` in the output says which.

Usage: .venv/bin/python benchmarks/suite.py [--broker B ...] [--repeat 3] [-n N] [--reports-dir DIR]
       [CASE ...]      (cases: ids, sections or requirement ids, as `amqp-conformance run` takes them)
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

DEFAULT_BROKERS = ("qpid-proton-c", "rabbitmq-4.0", "rabbitmq-3.10")
TARGET_WALL_S = {"qpid-proton-c": 12.0}
DEFAULT_TARGET_WALL_S = 20.0
TARGET_CASE_S = 3.0
CLI = Path(sys.executable).with_name("amqp-conformance")


def _median(values):
    return round(statistics.median(values), 3) if values else None


def one_run(broker: str, workers: str | None, reports: Path, cases: list[str]) -> dict:
    """One `amqp-conformance run` (without -n when `workers` is None): its wall time, records and run.json."""
    before = set(reports.glob("runs/*"))
    t0 = time.time()
    workers_args = ["-n", workers] if workers is not None else []
    proc = subprocess.run([str(CLI), "run", "--broker", broker, *workers_args, "--reports-dir", str(reports),
                           *cases], capture_output=True, text=True)
    t1 = time.time()
    made = sorted(set(reports.glob("runs/*")) - before)
    if not made:
        raise SystemExit(f"error: the run on {broker} made no run directory (exit {proc.returncode}): "
                         f"{(proc.stderr or proc.stdout).strip().splitlines()[-1:]}")
    run_dir = made[-1]
    records = [json.loads(line) for line in (run_dir / "results.jsonl").read_text().splitlines() if line.strip()]
    meta = json.loads((run_dir / "run.json").read_text())
    starts = [dt.datetime.fromisoformat(r["started_at"]).timestamp() for r in records]
    ends = [s + r["duration_s"] for s, r in zip(starts, records)]
    identity = meta.get("brokers", {}).get(broker, {})
    start_s = [identity.get("start_s"), (identity.get("own_node") or {}).get("start_s")]
    return {"wall_s": round(t1 - t0, 3), "exit": proc.returncode, "run_dir": str(run_dir), "records": records,
            "workers": (meta.get("options") or {}).get("workers"),
            "start_s": max((s for s in start_s if s is not None), default=None),
            "own_node": "own_node" in identity,
            "before_first_case_s": round(min(starts) - t0, 3) if starts else None,
            "after_last_case_s": round(t1 - max(ends), 3) if ends else None}


def summarize(broker: str, runs: list[dict], alarm_cases: set[str]) -> dict:
    walls = [r["wall_s"] for r in runs]
    tables = [{r["case_id"]: r["verdict"] for r in run["records"]} for run in runs]
    durations: dict[str, list[float]] = {}
    for run in runs:
        for r in run["records"]:
            durations.setdefault(r["case_id"], []).append(r["duration_s"])
    medians = {case: _median(values) for case, values in durations.items()}
    slowest = sorted(medians.items(), key=lambda kv: -kv[1])[:5]
    waited = {kind: _median([sum((r.get("waited_s") or {}).get(kind, 0.0) for r in run["records"]) for run in runs])
              for kind in ("timeout", "quiet")}
    wall_target = TARGET_WALL_S.get(broker, DEFAULT_TARGET_WALL_S)
    over = sorted(case for case, m in medians.items() if m > TARGET_CASE_S and case not in alarm_cases)
    return {
        "runs": len(runs),
        "workers": sorted({r["workers"] for r in runs if r["workers"] is not None}),
        "wall_s": {"min": min(walls), "median": _median(walls), "max": max(walls), "each": walls},
        "start_s": _median([r["start_s"] for r in runs if r["start_s"] is not None]),
        "own_node": all(r["own_node"] for r in runs),
        "fixed_s": {"before_first_case": _median([r["before_first_case_s"] for r in runs if r["before_first_case_s"] is not None]),
                    "after_last_case": _median([r["after_last_case_s"] for r in runs if r["after_last_case_s"] is not None])},
        "case_sum_s": _median([sum(r["duration_s"] for r in run["records"]) for run in runs]),
        "waited_s": waited,
        "slowest": [{"case": case, "median_s": m} for case, m in slowest],
        "exit_codes": [r["exit"] for r in runs],
        "verdicts": tables,
        "verdicts_identical": all(t == tables[0] for t in tables),
        "targets": {"median_wall_s": wall_target, "median_wall_met": _median(walls) <= wall_target,
                    "case_median_s": TARGET_CASE_S, "cases_over": over, "case_median_met": not over},
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--broker", action="append", default=[], help="managed broker (repeatable); default: "
                        + ", ".join(DEFAULT_BROKERS))
    parser.add_argument("--repeat", type=int, default=3, help="runs per broker (default 3)")
    parser.add_argument("-n", "--workers", default=None, help="pytest-xdist workers, as `run -n` (default: none "
                        "given, so `run`'s own default: 2, or the profile's [broker] workers)")
    parser.add_argument("--reports-dir", default=None, help="where the runs go (default: a fresh temporary dir)")
    parser.add_argument("cases", nargs="*", help="only these cases (default: all)")
    args = parser.parse_args(argv)
    from conformance import brokers
    from conformance.cases import load_all
    names = args.broker or list(DEFAULT_BROKERS)
    unknown = [n for n in names if n not in brokers.MANAGED]
    if unknown or args.repeat < 1:
        print(f"error: {'unknown managed broker ' + repr(unknown[0]) if unknown else '--repeat must be >= 1'}; "
              f"use one of {', '.join(brokers.MANAGED)}", file=sys.stderr)
        return 2
    for name in names:                                  # provisioning is not timed
        brokers.MANAGED[name]().ensure_provisioned()
    reports = Path(args.reports_dir or tempfile.mkdtemp(prefix="suite-bench-"))
    alarm_cases = {c.id for c in load_all().values() if c.exclusive}
    out = {"workers": args.workers or "run's default", "repeat": args.repeat, "cases": args.cases or "all",
           "cpus": os.cpu_count(),
           "python": sys.version.split()[0], "reports_dir": str(reports), "brokers": {}}
    for name in names:
        runs = [one_run(name, args.workers, reports / name, args.cases) for _ in range(args.repeat)]
        out["brokers"][name] = summarize(name, runs, alarm_cases)
    print(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
