"""Selfcheck: run the cases directly, through the transparent proxy, and through the proxy once per fault;
compute the sensitivity matrix (fault x case: which verdicts flip, and to what).

This module owns the selfcheck run and its report: the order of the runs (direct, proxy without fault, one
run per fault), the parallel execution (worker processes, each with its own proxy; exclusive cases keep
`runner.broker_lock` on the real broker), the comparison, and the report files `selfcheck.json` and
`selfcheck.md` in the run directory (next to `run.json` and `results.jsonl`, see docs/results.md). It
prints one progress line per finished configuration. The broker itself is started and stopped by the caller.
"""

from __future__ import annotations

import concurrent.futures as cf
import json
import multiprocessing
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from .. import catalogue
from ..runner import RunOptions, run_case
from ..verdict import Verdict
from .faults import FAULTS

DIRECT = "direct"
PROXY = "proxy"
DETECTING = (Verdict.FAIL.value, Verdict.NON_STRICT.value)
SHORT = {"pass": "pass", "fail": "FAIL", "non-strict": "n-s", "informational": "info", "unsupported": "unsup",
         "error": "ERROR"}


@dataclass
class ConfigRun:
    config: str                   # "direct", "proxy" or a fault name
    verdicts: dict[str, str] = field(default_factory=dict)
    records: dict[str, dict] = field(default_factory=dict)
    duration_s: float = 0.0


# -- running one case (in this process or in a worker) ----------------------------------------------------

_worker: dict = {}


def _init_worker(spec_fields: dict, record: dict) -> None:
    from .. import brokers
    _worker["broker"] = brokers.attach(brokers.BrokerSpec(**spec_fields), record)


def _broker_for(config: str, broker=None):
    """The handle a case runs against for `config`: the broker itself, or a ProxiedBroker (kept per config)."""
    from .handle import ProxiedBroker
    broker = broker if broker is not None else _worker["broker"]
    if config == DIRECT:
        return broker
    key = (config, id(broker))
    if _worker.get("proxied_key") != key:
        _release_in_process()
        _worker["proxied"] = ProxiedBroker(broker, None if config == PROXY else config)
        _worker["proxied_key"] = key
    return _worker["proxied"]


def _run_one(config: str, case_id: str, options: RunOptions, keep_unless: str | None, broker=None):
    from ..cases import load_all
    spec = load_all()[case_id]
    target = _broker_for(config, broker)
    errors = target.proxy.stats.errors if config != DIRECT else 0
    result = run_case(spec, target, options)
    if config != DIRECT and target.proxy.stats.errors > errors:     # a fault raised: say so in the record
        result.observations["proxy_error"] = target.proxy.last_error
    if keep_unless is not None and result.verdict.value == keep_unless:
        result.transcripts, result.ladders = [], []        # unchanged verdict: no need to keep the frames
    return result


def _release_in_process() -> None:
    _worker.pop("proxied_key", None)
    current = _worker.pop("proxied", None)
    if current is not None:
        current.stop_proxy()


# -- the whole selfcheck ----------------------------------------------------------------------------------

def configs_for(faults: list[str]) -> list[str]:
    return [DIRECT, PROXY] + list(faults)


def run_selfcheck(broker, case_ids: list[str], faults: list[str], *, workers: int = 2,
                  options: RunOptions | None = None, broker_spec=None, run=None,
                  progress: Callable[[str], None] = print) -> dict:
    """Run every configuration and return the report (also written into `run`, a RunDirectory, if given).

    `broker`: a started broker handle. With workers >= 2 and `broker_spec` (a conformance.brokers
    BrokerSpec), cases run in that many worker processes that attach to the broker; otherwise in this
    process, one after another (the reference broker of the suite's own tests runs this way)."""
    options = options or RunOptions()
    runs: dict[str, ConfigRun] = {}
    pool = None
    if workers >= 2 and broker_spec is not None:
        from .. import brokers
        record = brokers.describe(broker, broker_spec)
        pool = cf.ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("spawn"),
                                      initializer=_init_worker,
                                      initargs=({"name": broker_spec.name, "url": broker_spec.url,
                                                 "profile": broker_spec.profile}, record))
    try:
        for config in configs_for(faults):
            started = time.monotonic()
            keep = None if config == DIRECT else runs.get(DIRECT, ConfigRun(DIRECT)).verdicts
            cr = ConfigRun(config)
            if pool is not None:
                futures = {pool.submit(_run_one, config, cid, options, keep and keep.get(cid)): cid
                           for cid in case_ids}
                results = {futures[f]: f.result() for f in cf.as_completed(futures)}
            else:
                results = {}
                try:
                    for cid in case_ids:
                        results[cid] = _run_one(config, cid, options, keep and keep.get(cid), broker)
                finally:
                    _release_in_process()
            for cid in case_ids:
                result = results[cid]
                label = getattr(broker, "name", "broker")
                result.broker = label if config == DIRECT else f"{label}+{config}"
                cr.verdicts[cid] = result.verdict.value
                cr.records[cid] = result.to_record()
                if run is not None:
                    run.record(result)
            cr.duration_s = round(time.monotonic() - started, 1)
            runs[config] = cr
            progress(progress_line(cr, runs))
    finally:
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)
    report = build_report(broker, case_ids, faults, runs, workers, options)
    if run is not None:
        write_report(run.path, report)
    return report


def progress_line(cr: ConfigRun, runs: dict[str, ConfigRun]) -> str:
    head = f"  {cr.config:<24} {len(cr.verdicts):>3} cases {cr.duration_s:>6.1f} s"
    if cr.config == DIRECT:
        counts: dict[str, int] = {}
        for v in cr.verdicts.values():
            counts[v] = counts.get(v, 0) + 1
        return head + "  " + ", ".join(f"{n} {v}" for v, n in sorted(counts.items()))
    base = runs[DIRECT] if cr.config == PROXY else runs.get(PROXY, runs[DIRECT])
    flips = _flips(base.verdicts, cr.verdicts)
    if cr.config == PROXY:
        return head + ("  same verdicts as direct" if not flips else
                       "  DIFFERS from direct: " + ", ".join(f"{c} {a}->{b}" for c, (a, b) in flips.items()))
    detected = any(b in DETECTING for _, b in flips.values())
    what = ", ".join(f"{c} {a}->{b}" for c, (a, b) in flips.items()) or "no case flipped"
    return head + ("  detected: " if detected else "  NOT DETECTED: ") + what


def _flips(before: dict[str, str], after: dict[str, str]) -> dict[str, tuple[str, str]]:
    return {c: (before[c], after[c]) for c in after if c in before and before[c] != after[c]}


def build_report(broker, case_ids: list[str], faults: list[str], runs: dict[str, ConfigRun], workers: int,
                 options: RunOptions) -> dict:
    direct, proxied = runs[DIRECT], runs[PROXY]
    transparency = _flips(direct.verdicts, proxied.verdicts)
    fault_rows = {}
    for name in faults:
        cls = FAULTS[name]
        flips = _flips(proxied.verdicts, runs[name].verdicts)
        req = catalogue.get(cls.requirement)
        fault_rows[name] = {
            "requirement": cls.requirement, "level": req.level, "summary": cls.summary,
            "detected": any(b in DETECTING for _, b in flips.values()),
            "all_green": all(v not in DETECTING + ("error",) for v in runs[name].verdicts.values()),
            "flipped": {c: {"from": a, "to": b, "violated": runs[name].records[c].get("violated"),
                            "reason": runs[name].records[c].get("reason", "")[:200]}
                        for c, (a, b) in flips.items()},
            "duration_s": runs[name].duration_s,
        }
    return {
        "broker": getattr(broker, "name", "broker"),
        "product": getattr(broker, "product", None), "version": getattr(broker, "version", None),
        "workers": workers, "options": {"frame_timeout": options.frame_timeout,
                                        "quiet_period": options.quiet_period},
        "cases": list(case_ids),
        "verdicts": {config: cr.verdicts for config, cr in runs.items()},
        "durations_s": {config: cr.duration_s for config, cr in runs.items()},
        "transparent": not transparency,
        "proxy_vs_direct": {c: {"direct": a, "proxy": b} for c, (a, b) in transparency.items()},
        "faults": fault_rows,
        "ok": not transparency and all(row["detected"] for row in fault_rows.values()),
    }


def write_report(path: Path, report: dict) -> None:
    path = Path(path)
    (path / "selfcheck.json").write_text(json.dumps(report, indent=2, sort_keys=True), "utf-8")
    (path / "selfcheck.md").write_text(render_markdown(report), "utf-8")


def render_markdown(report: dict) -> str:
    faults = list(report["faults"])
    lines = [f"# Selfcheck against {report['broker']}"
             + (f" ({report['product']} {report['version']})" if report.get("product") else ""), "",
             f"{len(report['cases'])} cases, {report['workers']} worker(s); runs: direct, through the proxy "
             f"without fault, and through the proxy once per fault ({len(faults)}).", "",
             "## Proxy without fault vs direct", ""]
    if report["transparent"]:
        lines.append(f"Same verdict for all {len(report['cases'])} cases.")
    else:
        lines += ["| case | direct | proxy |", "|---|---|---|"]
        lines += [f"| {c} | {d['direct']} | {d['proxy']} |" for c, d in report["proxy_vs_direct"].items()]
    lines += ["", "## Faults", "", "| fault | breaks | level | detected | flipped cases (no-fault verdict -> "
              "verdict with the fault) |", "|---|---|---|---|---|"]
    for name, row in report["faults"].items():
        flipped = ", ".join(f"{c} {f['from']}->{f['to']}" for c, f in row["flipped"].items()) or "none"
        lines.append(f"| {name} | {row['requirement']} | {row['level']} | {'yes' if row['detected'] else 'NO'} "
                     f"| {flipped} |")
    lines += ["", "## Sensitivity matrix", "",
              "Cells: the verdict with the fault where it differs from the run through the proxy without "
              "fault; `.` = unchanged.", ""]
    lines.append("| case | direct | proxy | " + " | ".join(faults) + " |")
    lines.append("|---" * (3 + len(faults)) + "|")
    v = report["verdicts"]
    for c in report["cases"]:
        cells = [v["direct"][c], v["proxy"][c]]
        cells += [SHORT[v[f][c]] if v[f][c] != v["proxy"][c] else "." for f in faults]
        lines.append(f"| {c} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def render_text(report: dict) -> str:
    """The matrix for the terminal: one row per case, one column per configuration."""
    faults = list(report["faults"])
    v = report["verdicts"]
    width = 6
    cols = ["direct", "proxy"] + [f"F{i + 1}" for i in range(len(faults))]
    out = ["", "sensitivity matrix (F<n>: verdict with the fault where it differs from the no-fault proxy run)"]
    out += [f"  F{i + 1} = {name}  (breaks {report['faults'][name]['requirement']})" for i, name in enumerate(faults)]
    out.append("  " + f"{'case':<10}" + "".join(f"{c:>{width + 1}}" for c in cols))
    for c in report["cases"]:
        cells = [SHORT[v["direct"][c]], SHORT[v["proxy"][c]]]
        cells += [SHORT[v[f][c]] if v[f][c] != v["proxy"][c] else "." for f in faults]
        out.append("  " + f"{c:<10}" + "".join(f"{x:>{width + 1}}" for x in cells))
    out.append("")
    out.append("proxy without fault: " + ("same verdicts as direct" if report["transparent"] else
                                          f"{len(report['proxy_vs_direct'])} verdict(s) differ from direct"))
    missed = [f for f, row in report["faults"].items() if not row["detected"]]
    out.append(f"faults detected: {len(faults) - len(missed)} of {len(faults)}"
               + (f"; not detected: {', '.join(missed)}" if missed else ""))
    return "\n".join(out)

