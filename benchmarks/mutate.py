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
_A = "conformance.model.oracle.xǁFlowOracleǁ_allowance__mutmut_"
# FlowOracle._allowance's memo: reasons shared by many of its mutants. The memo is exact for any window of a run
# (the full pass is the reference, tests/model/test_allowance_cache.py); these mutants only change when it is used.
_MISS = "the memo is used less often (or never): the full pass gives the same maximum, only slower"
_SAME_SPREAD = "the spread gets the same value (ties, or |0| = 0)"
_TIE = "a tie picks a later grant as the maximum's: any grant giving the maximum serves (all lefts move together)"
_NEVER_USED = ("an entry whose spread is >= 2^30 is never used (a hit needs spread + |k| < 2^30), so storing or "
               "dropping it changes nothing")
_STILL_VALID = ("an older entry of the same run stays valid (k is measured from its own current, joined grants "
                "from its own last), so keeping it instead of the newer one gives the same maximum")

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
    "conformance.model.oracle.xǁFlowOracleǁobserve__mutmut_41":
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
    "conformance.model.oracle.xǁFlowOracleǁ_on_attach__mutmut_68":
        "the initial limit's index (+1): it is the first of its list, whose index is never read",
    "conformance.model.oracle.xǁFlowOracleǁ_on_attach__mutmut_69":
        "the initial limit's index (-2): it is the first of its list, whose index is never read",
    "conformance.model.oracle.xǁFlowOracleǁ_on_attach__mutmut_63":
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
    # model/oracle.py: FlowOracle._allowance's memo and the calls that pass it a run
    "conformance.model.oracle.x__allowance_of__mutmut_12":
        "`d > HALF` -> `d >= HALF`: d == HALF was skipped (`continue`) the line before",
    "conformance.model.oracle.x__allowance_of__mutmut_15":
        "`x > best` -> `x >= best`: a tie leaves the same maximum",
    "conformance.model.oracle.xǁFlowOracleǁ_candidates__mutmut_6":
        "the filtered list None: since 0f2e994 no list reaching _candidates holds an unresolved limit (link limits "
        "are placed or dropped at the sender's attach, session limits at the partner's begin, both before any "
        "frame of that sender), so the branch only ever sees an empty list, and None returns [] as well",
    "conformance.model.oracle.xǁFlowOracleǁ_candidates__mutmut_15":
        "`index > proven_out` -> `>=`: at equality the bisection finds the same last grant (start unchanged)",
    "conformance.model.oracle.x__allows__mutmut_10":
        "`d > _HALF` -> `d >= _HALF`: d == 2^31 has made the result False before (`d != _HALF and ...`)",
    "conformance.model.oracle.xǁFlowOracleǁ_on_transfer__mutmut_116":
        "`grants[1].index >= link.proven_out`: equality never holds here: every proof of a link limit "
        "(_prove_by, from a broker flow or transfer) is followed at once by `_candidates`, which drops the limits "
        "before the proven one, so the proven limit is the list's first; the attach's proof is of a frame before "
        "any of the link's limits",
    "conformance.model.oracle.xǁFlowOracleǁ_on_transfer__mutmut_166":
        "an aborted transfer passes more=None: aborted takes precedence over more in on_transfer_frame (2.7.5)",
    "conformance.model.oracle.xǁFlowOracleǁ_on_transfer__mutmut_175":
        "aborted None instead of False: on_transfer_frame only tests it for truth",
    "conformance.model.oracle.xǁFlowOracleǁ_beyond__mutmut_41":
        "run None: no memo for this call; the full pass gives the same maximum",
    "conformance.model.oracle.xǁFlowOracleǁ_beyond__mutmut_44":
        "run left out (None): no memo for this call; the full pass gives the same maximum",
    "conformance.model.oracle.xǁ_Grantǁallows__mutmut_10":
        "`d > _HALF` -> `d >= _HALF`: d == 2^31 has made the result False before (`d != _HALF and ...`)",
    "conformance.model.oracle.xǁFlowOracleǁ_judge_sender_state__mutmut_8":
        "`(left or 0) < 0` -> `(left or 1) < 0`: `or` picks 1 only for left 0 or None, and 0 < 0 and 1 < 0 are both"
        " false",
    _A + "2": "`run is None or n < 4` -> `and`: a call with a run (only _beyond's, whose window is never empty) "
              "uses the memo for windows under 4 grants too, exact for any non-empty window (see 4, 5); a run-less "
              "call of 4 or more grants uses the id(None) entry, exact as for 3",
    _A + "3": "`run is None` -> `run is not None`: callers with a run get the full pass; run-less calls (link(), "
              "in-flight broker_may_send) share the id(None) entry, which hits only when its maximum's grant (one "
              "run's object) is in the window, i.e. for the same run, where the memo is exact",
    _A + "4": "`n < 4` -> `n <= 4`: the memo is exact for any non-empty window; the threshold only decides when it "
              "pays",
    _A + "5": "`n < 4` -> `n < 5`: the memo is exact for any non-empty window; the threshold only decides when it "
              "pays",
    _A + "11": "entry = None: " + _MISS,
    _A + "12": "get(None): no key is None, " + _MISS,
    _A + "13": "get(id(None)): no run is None on this path, " + _MISS,
    _A + "15": "first = grants[1]: windows are suffixes of their run, so the 2nd grants move forward exactly when "
               "the 1st do; `first <= star` only gets stricter: " + _MISS,
    _A + "16": "last = grants[1]: the grants after it, already counted, are counted again exactly (harmless); `star"
               " <= last` only gets stricter",
    _A + "17": "last = grants[-2]: the last grant, already counted, is counted again exactly (harmless); `star <= "
               "last` only gets stricter",
    _A + "20": "entry[1] (a grant) is never the run: " + _MISS,
    _A + "21": "`entry[0] is not run`: the entry holds its run alive, so an entry under id(run) is always run's: "
               + _MISS,
    _A + "27": "k never wrapped: a backward move reads as >= 2^31, the spread check fails: " + _MISS,
    _A + "28": "k always minus 2^32: |k| >= 2^31, the spread check fails: " + _MISS,
    _A + "29": "k plus 2^32 when >= 2^31: the spread check fails either way: " + _MISS,
    _A + "30": "`k >= HALF` -> `k > HALF`: at k == 2^31 the spread check fails either way",
    _A + "35": _SAME_SPREAD,
    _A + "36": _SAME_SPREAD,
    _A + "41": "`spread < 2^30` -> `<= 2^30`: at 2^30 every left still moves without crossing 2^31 (exact)",
    _A + "42": "first must move strictly forward: stricter, " + _MISS,
    _A + "43": "a grant must have joined: stricter, " + _MISS,
    _A + "44": "star may not be the first grant: stricter, " + _MISS,
    _A + "45": "star may not be the last grant: stricter, " + _MISS,
    _A + "53": "`pos < n or ...`: the identity check is redundant: a run's grants have distinct indexes and its "
               "windows are contiguous, so a grant with star's index between first and last is star",
    _A + "54": "`pos <= n`: pos < n always (star.index <= last.index was checked)",
    _A + "55": "`grants[pos] is not star`: never true (see _53): " + _MISS,
    _A + "68": "a joined d never wrapped: ahead of current it reads as >= 2^31 and breaks to the full pass",
    _A + "69": "a joined d always minus 2^32: behind current it breaks to the full pass; ahead, the same value",
    _A + "70": "a joined d plus 2^32 when >= 2^31: breaks to the full pass",
    _A + "71": "`d >= HALF` -> `d > HALF`: d == 2^31 breaks to the full pass either way",
    _A + "73": "`not +Q < d < Q` is always true: every joined grant breaks to the full pass",
    _A + "74": "d == -2^30 taken: its left is exact (|d| < 2^31) and the spread becomes 2^30 (no later hit)",
    _A + "75": "d == 2^30 taken: its left is exact (|d| < 2^31) and the spread becomes 2^30 (no later hit)",
    _A + "78": _SAME_SPREAD,
    _A + "79": _SAME_SPREAD,
    _A + "80": "a joined grant ahead of current does not widen the spread: it joined within 2^30 and the spread "
               "keeps adding every later |k| and must stay < 2^30 for a hit, so its distance stays < 2^31 (exact)",
    _A + "81": _SAME_SPREAD,
    _A + "84": _SAME_SPREAD,
    _A + "88": _TIE,
    _A + "90": "the hit stores None: the next lookup misses: " + _MISS,
    _A + "91": "the hit stores under id(None): " + _STILL_VALID,
    _A + "94": "spread starts at 1: an over-estimate, " + _MISS,
    _A + "105": "`d > HALF` -> `d >= HALF`: d == 2^31 was skipped (`continue`) the line before",
    _A + "107": _SAME_SPREAD,
    _A + "108": _SAME_SPREAD,
    _A + "110": _SAME_SPREAD,
    _A + "113": _SAME_SPREAD,
    _A + "119": _TIE,
    _A + "121": "`and` -> `or`: also stores entries with spread >= 2^30 (best is None only when spread is 2^30): "
                + _NEVER_USED,
    _A + "122": "`best is None and ...` is never true (best is None only when every d is 2^31, spread 2^30): "
                + _MISS,
    _A + "123": "`spread <= 2^30`: also stores spread 2^30: " + _NEVER_USED,
    _A + "124": "clears the memo at 1024 entries, not 1025: " + _MISS,
    _A + "125": "clears the memo at 1026 entries, not 1025: more memory, the same maxima",
    _A + "126": "stores None: the next lookup misses: " + _MISS,
    _A + "127": "stores under id(None), never looked up (run is never None here): " + _MISS,
    _A + "128": "the far window's old entry is not dropped: " + _STILL_VALID,
    _A + "131": "the far window's old entry is not dropped: " + _STILL_VALID,
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
