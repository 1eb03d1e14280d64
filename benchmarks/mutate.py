"""Mutation testing of the pure rules (`./dev mutate`): mutmut mutates wire/serial.py, model/, verdict.py,
casekit/findings.py and casekit/spec.py (pyproject.toml [tool.mutmut]) and runs, for each mutant, only the fast
unit tests that cover the mutated function (no broker, no socket). Prints the score per module and overall
and every surviving mutant with its diff; the known equivalent mutants (EQUIVALENT below, each with why) are
listed apart and left out of the score.

    .venv/bin/python benchmarks/mutate.py [--no-run] [--diffs] [--json]

--no-run reports on the last run (mutants/ in the repository root); --diffs shows each survivor's diff (about
1.5 s each: `mutmut show NAME` shows one). Exit 0 when the score is at least --min (90 by default), else 1.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MUTMUT = [sys.executable, "-m", "mutmut"]
DETECTED = {"killed", "timeout", "segfault"}      # the tests noticed the mutant

# Mutants that behave exactly like the original for every input the code can receive (so no test can kill
# them). Key: mutmut's mutant name; value: why it is equivalent. A listed mutant that is killed is reported
# as stale (the code changed: look again).
EQUIVALENT: dict[str, str] = {
    "conformance.wire.serial.x_serial_diff__mutmut_9":
        "`d > HALF` -> `d >= HALF`: d == HALF has raised SerialUndefined the line before",
    "conformance.wire.serial.x_serial_ge__mutmut_9":
        "`< 0` -> `<= 0`: a distance of 0 means equal, which the first operand already answered",
    "conformance.wire.serial.x_serial_ge__mutmut_10":
        "`< 0` -> `< 1`: the same (distances are integers; 0 only for equal values)",
    "conformance.wire.serial.x_serial_le__mutmut_9":
        "`> 0` -> `>= 0`: a distance of 0 means equal, which the first operand already answered",
    "conformance.model.endpoints.xǁLinkEndpointǁon_drain_exhausted__mutmut_1":
        "`link_credit > 0` -> `>= 0`: at 0 the loop runs no step and sets link-credit 0 again",
    "conformance.model.endpoints.xǁLinkEndpointǁon_drain_exhausted__mutmut_13":
        "steps of 2^31 - 2 instead of 2^31 - 1: any split below 2^31 adds up to the same delivery-count",
    # model/oracle.py
    "conformance.model.oracle.xǁFlowOracleǁ__init____mutmut_20":
        "`_found = None`: observe() resets _found before any handler runs; the initial value is never read",
    "conformance.model.oracle.xǁFlowOracleǁobserve__mutmut_32":
        "`getattr(frame, 'channel', None) or 0` is 0, as with the default 0",
    "conformance.model.oracle.xǁFlowOracleǁpeer_may_send__mutmut_4":
        "in_flight None instead of False: it is only tested for truth",
    "conformance.model.oracle.xǁFlowOracleǁpeer_may_send__mutmut_9":
        "in_flight True: for limits the broker announced (our peer sees them at once) the in-flight candidates "
        "are the latest resolved limit alone, which is what in_flight=False picks",
    "conformance.model.oracle.xǁFlowOracleǁ_has_seen_begin__mutmut_7":
        "`<` -> `<=` between two begins' frame indexes: two frames never share an index",
    "conformance.model.oracle.xǁFlowOracleǁ_has_seen_sender_attach__mutmut_10":
        "`<` -> `<=` between two attaches' frame indexes: two frames never share an index",
    "conformance.model.oracle.xǁFlowOracleǁ_on_begin__mutmut_31":
        "the begin's limit is the first of its list, whose index is never read (_candidates never steps below "
        "the first limit; _prove_by proves only later ones)",
    "conformance.model.oracle.xǁFlowOracleǁ_on_attach__mutmut_60":
        "the initial limit's index (None): it is the first of its list, whose index is never read",
    "conformance.model.oracle.xǁFlowOracleǁ_on_attach__mutmut_66":
        "the initial limit's index (+1): it is the first of its list, whose index is never read",
    "conformance.model.oracle.xǁFlowOracleǁ_on_attach__mutmut_67":
        "the initial limit's index (-2): it is the first of its list, whose index is never read",
    "conformance.model.oracle.xǁFlowOracleǁ_on_attach__mutmut_61":
        "the initial limit's base None: the loop right after sets every unresolved base to initial & MASK",
    "conformance.model.oracle.xǁFlowOracleǁ_on_attach__mutmut_51":
        "LinkEndpoint(None): is_sender only chooses on_send or on_receive, which count a message alike",
    "conformance.model.oracle.xǁFlowOracleǁ_on_attach__mutmut_52":
        "LinkEndpoint(False): is_sender only chooses on_send or on_receive, which count a message alike",
    "conformance.model.oracle.xǁFlowOracleǁ_on_detach__mutmut_12":
        "`handles.pop(d)` without default: d is always in link.handles (set with by_handle[d], where it was found)",
    "conformance.model.oracle.xǁFlowOracleǁ_on_flow__mutmut_31":
        "echo_asked = None instead of False: it is only tested for truth",
    "conformance.model.oracle.xǁFlowOracleǁ_sender_flow__mutmut_58":
        "`lag < 0` -> `lag <= 0`: at lag 0 adopting the same delivery-count changes nothing",
    "conformance.model.oracle.xǁFlowOracleǁ_sender_flow__mutmut_59":
        "`lag < 0` -> `lag < 1`: at lag 0 adopting the same delivery-count changes nothing",
    "conformance.model.oracle.xǁFlowOracleǁ_sender_flow__mutmut_61":
        "`lag > 0` -> `lag >= 0`: at lag 0 adopting the same delivery-count changes nothing",
    "conformance.model.oracle.xǁFlowOracleǁ_sender_flow__mutmut_64":
        "`if lag > 0` -> `>= 0` inside the branch: the branch is taken only for lag < 0 or lag > 0",
}


def module_of(mutant: str) -> str:
    """conformance.wire.serial.x_serial_room__mutmut_3 -> conformance.wire.serial"""
    return re.sub(r"\.x.*__mutmut_\d+$", "", mutant)


def results() -> dict[str, str]:
    out = subprocess.run([*MUTMUT, "results", "--all", "true"], cwd=ROOT, capture_output=True, text=True,
                         check=True).stdout
    found = {}
    for line in out.splitlines():
        m = re.match(r"^\s*(\S+__mutmut_\d+): (.+)$", line)
        if m:
            found[m.group(1)] = m.group(2).strip()
    return found


def show(mutant: str) -> str:
    done = subprocess.run([*MUTMUT, "show", mutant], cwd=ROOT, capture_output=True, text=True)
    return "\n".join(line for line in done.stdout.splitlines() if line.startswith(("+", "-", "@@"))
                     and not line.startswith(("+++", "---")))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--no-run", action="store_true", help="report on the last run only")
    ap.add_argument("--json", action="store_true", help="print the summary as JSON")
    ap.add_argument("--diffs", action="store_true", help="show each surviving mutant's diff")
    ap.add_argument("--min", type=float, default=90.0, help="lowest acceptable score in %% (default 90)")
    args = ap.parse_args(argv)
    seconds = None
    if not args.no_run:
        shutil.rmtree(ROOT / "mutants", ignore_errors=True)         # a fresh run: no stale results
        t0 = time.monotonic()
        done = subprocess.run([*MUTMUT, "run"], cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                              text=True)
        seconds = round(time.monotonic() - t0, 1)
        if done.returncode != 0:
            print(done.stderr[-3000:], file=sys.stderr)
            print("error: mutmut run failed (output above); run `.venv/bin/mutmut run` to see it whole",
                  file=sys.stderr)
            return 2
    status = results()
    if not status:
        print("error: no mutation results; run without --no-run first", file=sys.stderr)
        return 2
    per_module: dict[str, Counter] = defaultdict(Counter)
    survivors, equivalent, stale = [], [], []
    for mutant, state in sorted(status.items()):
        if mutant in EQUIVALENT:
            (equivalent if state not in DETECTED else stale).append(mutant)
            if state not in DETECTED:
                continue
        per_module[module_of(mutant)][state] += 1
        if state not in DETECTED:
            survivors.append((mutant, state))

    def score(c: Counter) -> float:
        judged = sum(c.values()) - c["skipped"]
        return 100.0 * sum(c[s] for s in DETECTED) / judged if judged else 100.0

    total = sum(per_module.values(), Counter())
    summary = {"seconds": seconds, "score": round(score(total), 1), "counts": dict(total),
               "modules": {m: {"score": round(score(c), 1), **c} for m, c in sorted(per_module.items())},
               "survivors": [m for m, _ in survivors], "equivalent": {m: EQUIVALENT[m] for m in equivalent},
               "stale_equivalent": stale}
    if args.json:
        print(json.dumps(summary, indent=1))
    else:
        for mutant, state in survivors:
            print(f"survived: {mutant} ({state})" + (f"\n{show(mutant)}" if args.diffs else ""))
        for mutant in equivalent:
            print(f"equivalent: {mutant}: {EQUIVALENT[mutant]}")
        for mutant in stale:
            print(f"stale: {mutant} is listed as equivalent but was killed; take it off EQUIVALENT")
        print()
        for m, c in sorted(per_module.items()):
            print(f"{m:<36} {score(c):5.1f} %  " + ", ".join(f"{k} {v}" for k, v in sorted(c.items())))
        print(f"{'score':<36} {score(total):5.1f} %  ({sum(total[s] for s in DETECTED)} of "
              f"{sum(total.values()) - total['skipped']} killed, {len(equivalent)} equivalent left out"
              + (f"; {seconds} s" if seconds is not None else "") + ")")
    return 0 if score(total) >= args.min else 1


if __name__ == "__main__":
    sys.exit(main())
