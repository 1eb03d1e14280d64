"""The analysis of the history: from Parquet records to the report model (conformance.report.model).

Spark does the work that scales with the number of records at ingest: each batch keeps summary tables (per
(case, broker@version): the latest record, counts per verdict and durations; runs per broker@version; duration
by day; see conformance.history.summary). The report merges the summaries of all batches, never reading the
records again, so its cost does not grow with the history. Everything after that (requirement cells, scores, changes between versions, flaky cases) works on
those aggregates, which are as small as cases x brokers x versions, in plain Python.
"""

from __future__ import annotations

import datetime as _dt
import json
import re
from collections import defaultdict

from .. import __version__, catalogue
from ..results import change_kind, is_broken, is_judged
from ..verdict import REQUIREMENT_SEVERITY, VERDICTS, Verdict
from .store import History
from .traffic import traffic_counts

TREND_DAYS = 30


def version_key(version: str) -> tuple:
    """Natural order of version strings: 3.10.8 < 4.0.5, 0.9 < 0.10; text parts sort after numbers."""
    parts = re.split(r"[.\-+_]", version or "")
    return tuple((0, int(p), "") if p.isdigit() else (1, 0, p) for p in parts)


def series_of(broker: str) -> str:
    """The release series a broker belongs to (a managed release such as artemis-2.40.0 -> artemis), or the
    broker itself."""
    from ..brokers import SERIES
    from ..clients.library import BY_LABEL as CLIENT_RELEASES       # a client library's releases: its name
    if broker in CLIENT_RELEASES:
        return CLIENT_RELEASES[broker].name
    return next((name for name, members in SERIES.items() if broker in members), broker)


def finding_lines(findings: list) -> list[str]:
    """A record's findings (deciding first) as report lines: `<requirement> (<level>, <verdict>): <reason>`."""
    return [f"{f.get('requirement')} ({f.get('level')}, {f.get('verdict')}): {f.get('reason')}"
            for f in findings if isinstance(f, dict)]


def requirement_verdict_counts(case_verdict: str, violated: str | None, requirement_id: str) -> bool:
    """Whether a case's verdict speaks for one of the requirements it cites: a fail or non-strict verdict
    counts only for the requirement of its deciding finding (the others it judged are listed with the cell,
    and a step that needed a missing frame judged nothing after it); any other verdict counts for all."""
    if is_broken(case_verdict) and violated:
        return violated == requirement_id
    return True


def aggregate(tables: dict, days: int = TREND_DAYS) -> tuple[list[dict], dict[str, dict], dict]:
    """Spark's part: (per case and broker@version aggregates, per broker@version facts, duration trends), from
    the summary tables of the history's batches (conformance.history.summary): merged, they are as small as
    cases x brokers x versions (x days for the trends)."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    from .summary import KEY, merge

    merged = merge(tables)
    case_rows = merged["cells"].collect()
    column_rows = merged["columns"].collect()
    recent = Window.partitionBy(*KEY).orderBy(F.col("day").desc())
    trend_rows = (merged["daily"].withColumn("rank", F.row_number().over(recent)).where(F.col("rank") <= days)
                  .collect())

    aggregates = []
    for r in case_rows:
        d = r["latest"]
        aggregates.append({
            "case_id": r["case_id"], "broker": r["broker"], "version": r["broker_version"],
            "column": f"{r['broker']}@{r['broker_version']}", "verdict": d["verdict"],
            "reason": d["reason"] or "", "violated": d["violated"], "run_id": d["run_id"],
            "duration_s": d["duration_s"] or 0.0, "section": d["section"], "level": d["level"],
            "requirement_ids": _json_list(d["requirement_ids"]), "records": r["records"],
            "findings": finding_lines(_json_objects(d["findings"])),
            "producer": _json_object(d["observations"]).get("producer"),
            "verdict_counts": {v: r[f"n_{v}"] for v in VERDICTS if r[f"n_{v}"]},
            "mean_s": (r["sum_us"] or 0) / 1e6 / r["records"], "min_s": r["min_s"] or 0.0,
            "max_s": r["max_s"] or 0.0,
        })
    columns_info = {f"{r['broker']}@{r['broker_version']}": {
        "broker": r["broker"], "version": r["broker_version"], "product": r["product"], "runs": r["runs"],
        "last_run_id": r["last"]["run_id"], "last_run_at": r["last"]["started_at"]} for r in column_rows}
    trends: dict[tuple[str, str], list] = defaultdict(list)
    for r in trend_rows:
        trends[(r["case_id"], f"{r['broker']}@{r['broker_version']}")].append(
            [r["day"], round(r["sum_us"] / 1e6 / r["records"], 4)])
    for points in trends.values():
        points.sort()
    return aggregates, columns_info, trends


def build_model(spark, history: History, ladders: bool = True, full: bool = False) -> dict:
    """The report model (schema in conformance.report.model) of everything in `history`, from its summary
    tables; `full=True` summarizes every record instead (the same model: the test of the summaries)."""
    if full:
        from .summary import as_frames, summarize
        tables = as_frames(spark, summarize(history.records(spark)))
    else:
        tables = history.summary(spark)
    aggregates, columns_info, trends = aggregate(tables)
    selfchecks = latest_selfchecks(history.selfchecks())
    total_records = sum(a["records"] for a in aggregates)
    runs = history.runs()
    model = model_from_aggregates(aggregates, columns_info, trends, history_runs=len(runs),
                                  total_records=total_records,
                                  ladders=history.ladders({(a["run_id"], a["case_id"], a["broker"])
                                                           for a in aggregates}) if ladders else {},
                                  selfchecks=selfchecks)
    model["traffic"] = traffic_counts(spark, history.root)       # judged traffic (history/traffic.py)
    return mark_unfinished(model, runs)


def unfinished_runs(runs: list[dict]) -> list[dict]:
    """The runs that never finished (interrupted, killed, stopped early: run.json's `finished_at` is null), and
    the finished ones that broke (`broken: true`: some cases ended in error), as the report model's
    `unfinished_runs` entries: what they recorded is kept, but they are not whole runs."""
    out = []
    for r in sorted(runs, key=lambda r: r.get("started_at") or ""):
        if r.get("finished_at"):
            if r.get("errors"):            # finished, but broken: some cases ended in error (exit 14)
                out.append({"run_id": r.get("run_id"), "started_at": r.get("started_at") or "",
                            "brokers": sorted(r.get("brokers") or {}), "records": r.get("records"),
                            "scheduled": r.get("scheduled"), "broken": True,
                            "reason": f"broken: {r['errors']} of {r.get('records')} cases ended in error (a broker "
                                      "died, or a case could not run), so its verdicts are incomplete"})
            continue
        stopped = r.get("stopped") if isinstance(r.get("stopped"), dict) else {}
        out.append({"run_id": r.get("run_id"), "started_at": r.get("started_at") or "",
                    "brokers": sorted(r.get("brokers") or {}), "records": r.get("records"),
                    "scheduled": r.get("scheduled"), "reason": stopped.get("reason") or "never finished"})
    return out


def mark_unfinished(model: dict, runs: list[dict]) -> dict:
    """Add `unfinished_runs` to the model and `unfinished: true` to every cell whose run never finished."""
    unfinished = unfinished_runs(runs)
    ids = {u["run_id"] for u in unfinished if not u.get("broken")}
    model["unfinished_runs"] = unfinished
    for cell in model["cells"]:
        cell["unfinished"] = cell["run_id"] in ids
    return model


def model_from_aggregates(aggregates: list[dict], columns_info: dict[str, dict], trends: dict, *,
                          history_runs: int, total_records: int, ladders: dict,
                          selfchecks: list[dict] | None = None) -> dict:
    from ..cases import load_all, load_clients
    requirements = catalogue.load()
    known_cases = {**load_all(), **load_clients()}

    from ..clients.library import BY_LABEL as CLIENT_RELEASES
    for info in columns_info.values():
        info["series"] = series_of(info["broker"])
        if info["broker"] in CLIENT_RELEASES:
            info["subject"] = "client"          # report.clients draws these columns in the client matrix
            info["language"] = CLIENT_RELEASES[info["broker"]].language
    columns = sorted(columns_info, key=lambda key: (columns_info[key]["series"],
                                                    version_key(columns_info[key]["version"]),
                                                    columns_info[key]["broker"]))
    cases: dict[str, dict] = {}
    for cid, spec in known_cases.items():
        cases[cid] = {"id": cid, "title": spec.title, "section": spec.section, "level": spec.level,
                      "requirement_ids": list(spec.judged),     # its own and the model's: what it judges
                      "model_requirement_ids": [r for r in spec.judged if r not in spec.requirements]}
    for a in aggregates:   # cases that ran once but are no longer in this suite version keep their record
        cases.setdefault(a["case_id"], {"id": a["case_id"], "title": a["case_id"], "section": a["section"],
                                        "level": a["level"], "requirement_ids": a["requirement_ids"],
                                        "model_requirement_ids": []})

    cells = []
    for a in sorted(aggregates, key=lambda a: (a["case_id"], a["column"])):
        cells.append({"case_id": a["case_id"], "column": a["column"], "verdict": a["verdict"], "reason": a["reason"],
                      "run_id": a["run_id"], "duration_s": round(a["duration_s"], 4),
                      "ladder": ladders.get((a["run_id"], a["case_id"], a["broker"])), "violated": a["violated"],
                      "findings": a.get("findings", []),
                      "verdict_counts": a["verdict_counts"], "flaky": len(a["verdict_counts"]) > 1,
                      **({"producer": a["producer"]} if isinstance(a.get("producer"), dict) else {})})

    cases_of_requirement: dict[str, list[str]] = defaultdict(list)
    for case in cases.values():
        for rid in case["requirement_ids"]:
            cases_of_requirement[rid].append(case["id"])
    verdict_at = {(c["case_id"], c["column"]): c["verdict"] for c in cells}
    violated_at = {(c["case_id"], c["column"]): c["violated"] for c in cells}
    requirement_cells = []
    for rid in list(requirements) + sorted(set(cases_of_requirement) - set(requirements)):
        for column in columns:
            seen = [(verdict_at[cid, column], cid) for cid in cases_of_requirement.get(rid, [])
                    if (cid, column) in verdict_at]
            judged = [(v, cid) for v, cid in seen if requirement_verdict_counts(v, violated_at[cid, column], rid)]
            if not judged:
                continue     # every case citing it stopped at another requirement first: not judged here
            worst = max(judged, key=lambda vc: REQUIREMENT_SEVERITY.get(vc[0], 0))[0]
            requirement_cells.append({"requirement_id": rid, "column": column, "verdict": worst,
                                      "case_ids": [cid for _, cid in seen]})

    def score_rows(group_of) -> list[dict]:
        """Scores count cases (the unit a verdict is given for): passed / judged (pass, fail, non-strict)."""
        tally: dict[tuple, list[int]] = defaultdict(lambda: [0, 0])
        for cell in cells:
            if not is_judged(cell["verdict"]):
                continue
            key = (cell["column"], group_of(cases[cell["case_id"]]))
            tally[key][1] += 1
            tally[key][0] += cell["verdict"] == Verdict.PASS
        return [{"column": col, "group": group, "passed": p, "judged": j, "score": round(p / j, 4) if j else 0.0}
                for (col, group), (p, j) in sorted(tally.items(), key=lambda kv: (columns.index(kv[0][0]), kv[0][1]))]

    overall = [{k: v for k, v in row.items() if k != "group"} for row in score_rows(lambda case: "")]
    by_section = [{"column": r["column"], "section": r["group"], "passed": r["passed"], "judged": r["judged"],
                   "score": r["score"]} for r in score_rows(lambda case: case["section"])]
    by_level = [{"column": r["column"], "level": r["group"], "passed": r["passed"], "judged": r["judged"],
                 "score": r["score"]} for r in score_rows(lambda case: case["level"])]

    changes = []
    by_broker: dict[str, list[str]] = defaultdict(list)      # consecutive versions of a broker or a series
    for column in columns:
        by_broker[columns_info[column]["series"]].append(column)
    for broker, cols in by_broker.items():
        for before, after in zip(cols, cols[1:]):
            for cid in cases:
                if (cid, before) in verdict_at and (cid, after) in verdict_at:
                    old, new = verdict_at[cid, before], verdict_at[cid, after]
                    if old != new:
                        changes.append({"case_id": cid, "broker": broker, "from_column": before, "to_column": after,
                                        "from_verdict": old, "to_verdict": new, "kind": change_kind(old, new)})

    flaky = [{"case_id": c["case_id"], "column": c["column"], "verdict_counts": c["verdict_counts"]}
             for c in cells if c["flaky"]]
    durations = [{"case_id": a["case_id"], "column": a["column"], "runs": a["records"],
                  "mean_s": round(a["mean_s"], 4), "min_s": round(a["min_s"], 4), "max_s": round(a["max_s"], 4),
                  "last_s": round(a["duration_s"], 4), "series": trends.get((a["case_id"], a["column"]), [])}
                 for a in sorted(aggregates, key=lambda a: (a["case_id"], a["column"]))]

    return {
        "generated_at": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "suite_version": __version__,
        "history": {"runs": history_runs, "records": total_records},
        "columns": [{"key": key, **columns_info[key]} for key in columns],
        "requirements": [{"id": r.id, "section": r.section, "part": r.part, "level": r.level, "text": r.text,
                          "cases": cases_of_requirement.get(r.id, [])} for r in requirements.values()],
        "cases": sorted(cases.values(), key=lambda c: _case_order(c["id"])),
        "cells": cells,
        "requirement_cells": requirement_cells,
        "scores": {"overall": overall, "by_section": by_section, "by_level": by_level},
        "changes": changes,
        "flaky": flaky,
        "durations": durations,
        "selfcheck": selfchecks or [],
    }


def latest_selfchecks(raw: list[dict]) -> list[dict]:
    """The latest selfcheck of each broker@version, as the report model's `selfcheck` entries."""
    latest: dict[str, dict] = {}
    for s in raw:
        key = f"{s.get('broker')}@{s.get('version')}"
        if key not in latest or (s.get("started_at") or "") > (latest[key].get("started_at") or ""):
            latest[key] = s
    out = []
    for key, s in sorted(latest.items()):
        faults = []
        for name, f in sorted((s.get("faults") or {}).items()):
            flipped = [{"case_id": cid, "from": x.get("from"), "to": x.get("to"), "violated": x.get("violated"),
                        "reason": x.get("reason") or ""} for cid, x in sorted((f.get("flipped") or {}).items())]
            faults.append({"name": name, "requirement": f.get("requirement"), "level": f.get("level"),
                           "summary": f.get("summary") or "", "detected": bool(f.get("detected")),
                           "flipped": flipped})
        out.append({"column": key, "run_id": s.get("run_id"), "started_at": s.get("started_at"),
                    "ok": bool(s.get("ok")), "transparent": bool(s.get("transparent")),
                    "cases": len(s.get("cases") or []), "faults": faults})
    return out


def _json_list(text) -> list:
    if not text:
        return []
    if isinstance(text, (list, tuple)):
        return list(text)
    try:
        value = json.loads(text)
    except ValueError:
        return []
    return [str(v) for v in value] if isinstance(value, list) else []


def _json_object(text) -> dict:
    """A JSON object (a record's observations) from its stored text; {} when absent or malformed."""
    try:
        value = json.loads(text) if text else {}
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def _json_objects(text) -> list:
    """A JSON list of objects (a record's findings) from its stored text; [] when absent or malformed."""
    try:
        value = json.loads(text) if text else []
    except ValueError:
        return []
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []


def _case_order(case_id: str) -> tuple:
    from ..cases import case_sort_key
    try:
        return (0, case_sort_key(case_id))
    except (ValueError, IndexError):
        return (1, case_id)
