"""Selfcheck: run the cases directly, through the transparent proxy, and through the proxy once per fault;
compute the sensitivity matrix (fault x case: which verdicts flip, and to what).

This module owns the selfcheck plan and its report. The plan is an ordinary run of the pipeline
(`conformance.run.engine.execute`) with one target per configuration over the one broker: the broker itself
(`direct`), and the broker behind a fault-injecting proxy without fault (`<broker>+proxy`) and with each fault
(`<broker>+<fault>`), the proxy put in front by `proxied` in each worker process (exclusive cases keep the
real broker's lock). From the records it builds the comparison and writes `selfcheck.json` and
`selfcheck.md` into the run directory (next to `run.json` and `results.jsonl`, see docs/results.md);
transcripts are kept for the direct run and for the cases whose verdict a configuration changed.
"""

from __future__ import annotations

import json
from pathlib import Path

from ..catalogue import faults as fault_catalogue
from ..catalogue.faults import EXPECT_ERROR
from ..run.engine import Outcome, Plan, execute
from ..options import RunOptions
from ..run.targets import Target, register_wrapper
from ..results import is_broken
from ..verdict import SHORT, Verdict
from .handle import ProxiedBroker
from .proxy import Transport, transport_for

WRAPPER = "mutant-proxy"     # what the selfcheck targets name as their wrapper (`register`)
DIRECT = "direct"
PROXY = "proxy"
ERROR = Verdict.ERROR.value     # a case without a record in a configuration reads as error


class SelfcheckProxy(ProxiedBroker):
    """The broker behind a fault-injecting proxy (fault None: transparent; or a transport fault), named after its
    configuration; a case during which the proxy hit an error, or its transport fault fired, says so in its
    observations (`proxy_error`, `transport_fault`): the matrix reads them, the verdict is the suite's own."""

    def __init__(self, broker, fault: str | None, label: str, transport: Transport | None = None):
        super().__init__(broker, fault, transport=transport)
        self.name = label
        self._errors_seen = 0
        self._events_seen = 0

    def annotate(self, result) -> None:
        errors = self.proxy.stats.errors
        if errors > self._errors_seen:
            result.observations["proxy_error"] = self.proxy.last_error
        self._errors_seen = errors
        events = self.proxy.transport_events
        if events > self._events_seen:
            result.observations["transport_fault"] = f"{self.proxy.transport.name} fired on " \
                                                     f"{events - self._events_seen} connection(s)"
        self._events_seen = events

    def close(self) -> None:
        self.stop_proxy()


def proxied(broker, config: str, label: str) -> SelfcheckProxy:
    """The wrapper the selfcheck targets name (conformance.run.targets.Target.wrap): `config` is "proxy" (no
    fault), a protocol fault or a transport fault of the catalogue."""
    if config != PROXY and fault_catalogue.get(config).kind == "transport":
        return SelfcheckProxy(broker, None, label, transport=transport_for(config))
    return SelfcheckProxy(broker, None if config == PROXY else config, label)


def register() -> None:
    """Register the selfcheck targets' wrapper (`proxied`) with the run pipeline, in this process."""
    register_wrapper(WRAPPER, proxied)


def pytest_configure(config) -> None:
    """Every process of a selfcheck run (this module is a pytest plugin of the plan: `-p`) registers the
    wrapper its targets name: the run pipeline knows it by that name only."""
    register()


def configs_for(faults: list[str]) -> list[str]:
    return [DIRECT, PROXY] + list(faults)


def targets_for(broker_name: str, faults: list[str]) -> dict[str, Target]:
    """config -> the target that runs it."""
    out = {DIRECT: Target(broker_name, broker_name)}
    for config in configs_for(faults)[1:]:
        out[config] = Target(f"{broker_name}+{config}", broker_name, wrap=WRAPPER, wrap_arg=config)
    return out


def run_selfcheck(broker, cases: list, faults: list[str], *, options: RunOptions | None = None,
                  selection: dict | None = None, console=None) -> tuple[dict, Outcome]:
    """Run every configuration as one run of the pipeline and return (the report, the run's outcome); the
    report is also written into the run directory.

    `broker`: a conformance.brokers BrokerSpec (started and stopped by the run; cases run in worker processes
    as options.workers says) or a broker handle running in this process (cases then run here)."""
    options = options or RunOptions()
    name = broker.name
    targets = targets_for(name, faults)
    register()
    plan = Plan(list(cases), [broker], options, targets=list(targets.values()), meta={"kind": "selfcheck"},
                selection={**(selection or {}), "faults": list(faults)}, pytest_args=["-p", __name__])
    outcome = execute(plan, console)
    by_label = {t.label: config for config, t in targets.items()}
    runs = {config: {"verdicts": {}, "records": {}, "duration_s": 0.0} for config in targets}
    for record in outcome.records:
        run = runs[by_label[record["broker"]]]
        run["verdicts"][record["case_id"]] = record["verdict"]
        run["records"][record["case_id"]] = record
        run["duration_s"] += record.get("duration_s") or 0.0
    case_ids = [c.id for c in cases]
    direct = runs[DIRECT]["verdicts"]
    for config, run in runs.items():          # keep the frames only where a configuration changed a verdict
        if config != DIRECT:
            for cid, verdict in run["verdicts"].items():
                if direct.get(cid) == verdict:
                    outcome.run.drop_transcripts(cid, targets[config].label)
    identity = (outcome.run.read_meta().get("brokers") or {}).get(name, {})
    who = {"name": name, "product": identity.get("product"), "version": identity.get("version")}
    if faults and all(fault_catalogue.get(f).kind == "transport" for f in faults):
        report = build_transport_report(who, case_ids, faults, runs, options)
    else:
        report = build_report(who, case_ids, faults, runs, options)
    write_report(outcome.run.path, report)
    return report, outcome


def _flips(before: dict[str, str], after: dict[str, str]) -> dict[str, tuple[str, str]]:
    return {c: (before[c], after[c]) for c in after if c in before and before[c] != after[c]}


def build_report(broker: dict, case_ids: list[str], faults: list[str], runs: dict[str, dict],
                 options: RunOptions) -> dict:
    """runs: config -> {"verdicts": case -> verdict, "records": case -> record, "duration_s"}."""
    verdicts = {config: {c: run["verdicts"].get(c, ERROR) for c in case_ids} for config, run in runs.items()}
    transparency = _flips(verdicts[DIRECT], verdicts[PROXY])
    fault_rows = {}
    for name in faults:
        entry = fault_catalogue.get(name)
        flips = _flips(verdicts[PROXY], verdicts[name])
        records = runs[name]["records"]
        fault_rows[name] = {
            "requirement": entry.requirement, "level": entry.level, "summary": entry.summary,
            "detected": any(is_broken(b) for _, b in flips.values()),        # a flip to fail / non-strict
            "all_green": all(not is_broken(v) and v != ERROR for v in verdicts[name].values()),
            "flipped": {c: {"from": a, "to": b, "violated": records.get(c, {}).get("violated"),
                            "reason": (records.get(c, {}).get("reason") or "")[:200]}
                        for c, (a, b) in flips.items()},
            "duration_s": round(runs[name]["duration_s"], 1),
        }
    return {
        "broker": broker["name"], "product": broker.get("product"), "version": broker.get("version"),
        "workers": options.workers, "options": {"frame_timeout": options.frame_timeout,
                                                "quiet_period": options.quiet_period},
        "cases": list(case_ids),
        "verdicts": verdicts,
        "durations_s": {config: round(run["duration_s"], 1) for config, run in runs.items()},
        "transparent": not transparency,
        "proxy_vs_direct": {c: {"direct": a, "proxy": b} for c, (a, b) in transparency.items()},
        "faults": fault_rows,
        "ok": not transparency and all(row["detected"] for row in fault_rows.values()),
    }


def build_transport_report(broker: dict, case_ids: list[str], faults: list[str], runs: dict[str, dict],
                           options: RunOptions) -> dict:
    """The transport matrix: per transport fault and case, the verdict, whether the fault fired during the
    case, what the verdict must be (the catalogue's `expect`: "unchanged" = the direct run's verdict; "error"
    where the fault fired, the direct verdict where it did not) and whether it is."""
    verdicts = {config: {c: run["verdicts"].get(c, ERROR) for c in case_ids} for config, run in runs.items()}
    direct = verdicts[DIRECT]
    transparency = _flips(direct, verdicts[PROXY])
    rows = {}
    for name in faults:
        entry = fault_catalogue.get(name)
        records = runs[name]["records"]
        fired = {c for c in case_ids if (records.get(c, {}).get("observations") or {}).get("transport_fault")}
        expected = {c: ERROR if entry.expect == EXPECT_ERROR and c in fired else direct[c] for c in case_ids}
        got = verdicts[name]
        # a case the fault did not hit may still end in error under a reset or stall (the broker slowed down by
        # the connections cut before it): honest, never a lie, and listed apart; any other difference is wrong
        collateral = {c: (records.get(c, {}).get("reason") or "")[:200] for c in case_ids
                      if entry.expect == EXPECT_ERROR and c not in fired and got[c] == ERROR != expected[c]}
        wrong = {c: {"expected": expected[c], "got": got[c], "reason": (records.get(c, {}).get("reason") or "")[:200]}
                 for c in case_ids if got[c] != expected[c] and c not in collateral}
        rows[name] = {"summary": entry.summary, "expect": entry.expect, "fired": sorted(fired),
                      "as_expected": len(case_ids) - len(wrong) - len(collateral), "wrong": wrong,
                      "collateral_errors": collateral, "duration_s": round(runs[name]["duration_s"], 1)}
    return {
        "kind": "transport", "broker": broker["name"], "product": broker.get("product"),
        "version": broker.get("version"), "workers": options.workers,
        "options": {"frame_timeout": options.frame_timeout, "quiet_period": options.quiet_period},
        "cases": list(case_ids), "verdicts": verdicts,
        "durations_s": {config: round(run["duration_s"], 1) for config, run in runs.items()},
        "transparent": not transparency,
        "proxy_vs_direct": {c: {"direct": a, "proxy": b} for c, (a, b) in transparency.items()},
        "transport": rows,
        "ok": not transparency and all(not row["wrong"] for row in rows.values()),
    }


def _transport_cell(report: dict, name: str, case_id: str) -> str:
    """`.`: as expected and unchanged; `ERROR`: the expected error of a fault that fired; `ERROR*`: an error in
    a case the fault did not hit (collateral, never a lie); a verdict with `!`: not what it must be."""
    row = report["transport"][name]
    got = report["verdicts"][name][case_id]
    if case_id in row["wrong"]:
        return SHORT[got] + "!"
    if case_id in row.get("collateral_errors", {}):
        return SHORT[got] + "*"
    return SHORT[got] if got != report["verdicts"][DIRECT][case_id] else "."


def render_transport_markdown(report: dict) -> str:
    names = list(report["transport"])
    lines = [f"# Transport selfcheck against {report['broker']}"
             + (f" ({report['product']} {report['version']})" if report.get("product") else ""), "",
             f"{len(report['cases'])} cases, {report['workers']} worker(s), frame timeout "
             f"{report['options']['frame_timeout']:g} s, quiet period {report['options']['quiet_period']:g} s; runs: "
             "direct, through the proxy without fault, and through the proxy once per transport fault.", "",
             "| transport fault | what | verdicts must be | fired in | as expected |", "|---|---|---|---|---|"]
    for name, row in report["transport"].items():
        lines.append(f"| {name} | {row['summary']} | {row['expect']} | {len(row['fired'])} cases "
                     f"| {row['as_expected']} of {len(report['cases'])} |")
    lines += ["", "Cells: `.` = same verdict as direct; `ERROR` = the expected error where the fault fired; "
              "`ERROR*` = an error where it did not fire (collateral: never pass or fail); `!` = not what it must be.",
              ""]
    lines.append("| case | direct | proxy | " + " | ".join(names) + " |")
    lines.append("|---" * (3 + len(names)) + "|")
    for c in report["cases"]:
        proxy = report["verdicts"][PROXY][c]
        cells = [report["verdicts"][DIRECT][c], "." if proxy == report["verdicts"][DIRECT][c] else proxy + "!"]
        lines.append(f"| {c} | " + " | ".join(cells + [_transport_cell(report, n, c) for n in names]) + " |")
    collateral = [(n, c, why) for n, row in report["transport"].items()
                  for c, why in row.get("collateral_errors", {}).items()]
    if collateral:
        lines += ["", "## Errors where the fault did not fire", ""]
        lines += [f"- {n} {c}: {why}" for n, c, why in collateral]
    wrong = [(n, c, w) for n, row in report["transport"].items() for c, w in row["wrong"].items()]
    if wrong:
        lines += ["", "## Not as expected", ""]
        lines += [f"- {n} {c}: {w['got']} where {w['expected']} was due: {w['reason']}" for n, c, w in wrong]
    return "\n".join(lines) + "\n"


def render_transport_text(report: dict) -> str:
    names = list(report["transport"])
    width = 7
    cols = ["direct", "proxy"] + [f"T{i + 1}" for i in range(len(names))]
    out = ["", "transport matrix (T<n>: `.` = same verdict as direct, ERROR = expected where the fault fired, "
               "ERROR* = error where it did not fire, `!` = not what it must be)"]
    must = {"unchanged": "verdicts must be unchanged", EXPECT_ERROR: "error where it fired, else unchanged"}
    out += [f"  T{i + 1} = {n}: {report['transport'][n]['summary']} ({must[report['transport'][n]['expect']]})"
            for i, n in enumerate(names)]
    out.append("  " + f"{'case':<10}" + "".join(f"{c:>{width + 1}}" for c in cols))
    for c in report["cases"]:
        proxy = report["verdicts"][PROXY][c]
        cells = [SHORT[report["verdicts"][DIRECT][c]],
                 "." if proxy == report["verdicts"][DIRECT][c] else SHORT[proxy] + "!"]
        cells += [_transport_cell(report, n, c) for n in names]
        out.append("  " + f"{c:<10}" + "".join(f"{x:>{width + 1}}" for x in cells))
    out.append("")
    out.append("proxy without fault: " + ("same verdicts as direct" if report["transparent"] else
                                          f"{len(report['proxy_vs_direct'])} verdict(s) differ from direct"))
    for n, row in report["transport"].items():
        extra = len(row.get("collateral_errors", {}))
        out.append(f"{n}: fired in {len(row['fired'])} case(s); {row['as_expected']} of {len(report['cases'])} "
                   f"verdicts as they must be ({row['expect']})" + (f", {extra} error(s) where it did not fire"
                                                                     if extra else "")
                   + f"; {len(row['wrong'])} wrong; {row['duration_s']:.1f} s of cases")
    out.append("transport faults handled: " + ("yes" if report["ok"] else "NO"))
    return "\n".join(out)


def write_report(path: Path, report: dict) -> None:
    path = Path(path)
    (path / "selfcheck.json").write_text(json.dumps(report, indent=2, sort_keys=True), "utf-8")
    markdown = render_transport_markdown(report) if report.get("kind") == "transport" else render_markdown(report)
    (path / "selfcheck.md").write_text(markdown, "utf-8")


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

