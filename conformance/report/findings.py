"""Findings grouped across a release series, and the cases that decided a requirement's cell.

A finding group is one (case, deciding requirement) on one release series of brokers or of a client library:
the releases it holds for, written as ranges in release order (`Artemis 2.17.0 – 2.35.0`), and where it changes
(the first release where the case passes, or fails on something else, or fails again). It is what a maintainer
reads instead of the same failure written out once per release. A group's `bisect` is the bisect record
(`amqp-conformance bisect`, the model's `bisects`) that found one of its change points, when one was run.

Pure functions over a report model (conformance.report.model); the history job stores their result in the
model (`finding_groups`, `requirement_cells[].deciding`) and the renderers compute it for a model without.
"""

from __future__ import annotations

from collections import defaultdict

from ..results import change_kind
from ..verdict import BROKEN, REQUIREMENT_SEVERITY, Verdict
from .labels import Slugs, sections, series_label, series_runs, slug

UNNAMED = "(no requirement named)"       # a fail recorded without its deciding requirement (old records)


def counts_for(verdict: str, violated: str | None, requirement_id: str) -> bool:
    """Whether a case's verdict speaks for a requirement it judged: a fail or non-strict only for the requirement
    of its deciding finding (it stopped there); any other verdict for all of them."""
    return verdict not in BROKEN or not violated or violated == requirement_id


def deciding(model: dict) -> dict[tuple[str, str], list[str]]:
    """(requirement id, column) -> the cases that gave the requirement's cell its verdict, in the cell's order
    (`requirement_cells[].deciding` when the model has it)."""
    cells = {(c["case_id"], c["column"]): c for c in model["cells"]}
    case_of = {c["id"]: c for c in model["cases"]}
    out = {}
    for rc in model["requirement_cells"]:
        if "deciding" in rc:
            out[rc["requirement_id"], rc["column"]] = list(rc["deciding"])
            continue
        same = [cid for cid in rc["case_ids"] if (cid, rc["column"]) in cells
                and cells[cid, rc["column"]]["verdict"] == rc["verdict"]]
        found = [cid for cid in same if counts_for(rc["verdict"], cells[cid, rc["column"]]["violated"],
                                                   rc["requirement_id"])] or same
        out[rc["requirement_id"], rc["column"]] = deciding_of(rc["requirement_id"], rc["verdict"], found, case_of)
    return out


SUBJECT, OWN, MODEL = 0, 1, 2      # how a case judges a requirement: its subject, a step of its own, the model


def judged_how(case: dict | None, requirement_id: str) -> int:
    """SUBJECT when the case exists to judge the requirement, OWN when one of its steps checks it, MODEL when only
    the flow-control model judges it over the case's exchange."""
    if case is None:
        return MODEL
    if requirement_id in (case.get("subject") or ()):
        return SUBJECT
    return MODEL if requirement_id in (case.get("model_requirement_ids") or ()) else OWN


def deciding_of(requirement_id: str, verdict: str, cases: list[str], case_of: dict[str, dict]) -> list[str]:
    """Of the cases that gave a requirement's cell its verdict, those that decided it: every one that found it
    broken; otherwise those that judge it most directly (its subject before a step of their own before the
    flow-control model, which judges many requirements in every case; all of them are on the cell's page)."""
    if verdict in BROKEN or not cases:
        return cases
    best = min(judged_how(case_of.get(cid), requirement_id) for cid in cases)
    return [cid for cid in cases if judged_how(case_of.get(cid), requirement_id) == best]


def _ranges(run_columns: list[dict], holds: set[str]) -> list[list]:
    """Consecutive runs of the columns in `holds`, over the releases the case ran on: [[first, last, count]]."""
    out: list[list] = []
    previous_held = False
    for column in run_columns:
        held = column["key"] in holds
        if held and previous_held:
            out[-1][1] = column["key"]
            out[-1][2] += 1
        elif held:
            out.append([column["key"], column["key"], 1])
        previous_held = held
    return out


def finding_groups(model: dict) -> list[dict]:
    """Every fail and non-strict cell, grouped per (subject, series, case, deciding requirement); MUST groups
    first, then by case. `model["finding_groups"]` when the model has it."""
    if "finding_groups" in model:
        return model["finding_groups"]
    cells = {(c["case_id"], c["column"]): c for c in model["cells"]}
    case_order = {c["id"]: i for i, c in enumerate(model["cases"])}
    case_ids = sorted({c["case_id"] for c in model["cells"]}, key=lambda cid: (case_order.get(cid, 1 << 30), cid))
    groups = []
    for subject, columns in sections(model):
        for series, series_columns in series_runs(columns):
            for case_id in case_ids:
                ran = [c for c in series_columns if (case_id, c["key"]) in cells]
                holding: dict[str, list[dict]] = defaultdict(list)
                for column in ran:
                    cell = cells[case_id, column["key"]]
                    if cell["verdict"] in BROKEN:
                        holding[cell["violated"] or UNNAMED].append(column)
                for requirement_id, held in holding.items():
                    groups.append(_group(subject, series, case_id, requirement_id, ran, held, cells))
    ids = Slugs(g["key"] for g in groups)
    for g in groups:
        g["id"] = ids[g.pop("key")]
    groups.sort(key=lambda g: (g["verdict"] != Verdict.FAIL, SUBJECT_RANK.get(g["subject"], 9),
                               case_order.get(g["case_id"], 1 << 30), g["case_id"], g["requirement_id"]))
    _attach_bisects(groups, model)
    return groups


SUBJECT_RANK = {"broker": 0, "client": 1}


def _group(subject: str, series: str, case_id: str, requirement_id: str, ran: list[dict], held: list[dict],
           cells: dict) -> dict:
    keys = {c["key"] for c in held}
    latest = cells[case_id, held[-1]["key"]]
    worst = max((cells[case_id, k]["verdict"] for k in keys), key=lambda v: REQUIREMENT_SEVERITY.get(v, 0))
    changes, previous, held_before, before = [], None, False, None
    for column in ran:
        cell = cells[case_id, column["key"]]
        state = column["key"] in keys
        if previous is not None and state != previous:
            changes.append({"column": column["key"], "verdict": cell["verdict"], "violated": cell["violated"],
                            "holds": state, "again": state and held_before,
                            "kind": change_kind(before["verdict"], cell["verdict"])})
        before = cell
        held_before = held_before or state
        previous = state
    return {
        "key": f"{case_id}--{requirement_id}--{series}", "subject": subject, "series": series,
        "series_label": series_label(held[0]), "case_id": case_id, "requirement_id": requirement_id,
        "level": "MUST" if worst == Verdict.FAIL else "SHOULD", "verdict": worst,
        "columns": [c["key"] for c in held], "ranges": _ranges(ran, keys), "releases": len(held),
        "of": len(ran), "changes": changes, "latest": held[-1]["key"], "reason": latest["reason"],
        "bisect": None,
    }


def _attach_bisects(groups: list[dict], model: dict) -> None:
    """A group's `bisect`: the newest bisect of its case whose change point is one of the group's (the last
    build with the old verdict and the first with the new one are its columns' brokers), else any bisect of its
    case over its series."""
    bisects = model.get("bisects") or []
    if not bisects:
        return
    broker_of = {c["key"]: c["broker"] for c in model["columns"]}
    for g in groups:
        mine = [b for b in bisects if b.get("case_id") == g["case_id"]]
        points = {broker_of.get(ch["column"]) for ch in g["changes"]} | {broker_of.get(g["columns"][0])}
        exact = [b for b in mine if b.get("changed") in points]
        chosen = exact or [b for b in mine if b.get("series") == g["series"]]
        if chosen:
            g["bisect"] = max(chosen, key=lambda b: b.get("started_at") or "")


# -- wording ---------------------------------------------------------------------------------------------------

def version_of(column_key: str, columns: dict) -> str:
    column = columns.get(column_key)
    return column["version"] if column else column_key


def ranges_text(group: dict, columns: dict, dash: str = " – ") -> str:
    """`Artemis 2.17.0 – 2.35.0, 2.39.0`: the series' name, then each range of releases."""
    parts = [version_of(first, columns) if first == last else
             f"{version_of(first, columns)}{dash}{version_of(last, columns)}" for first, last, _ in group["ranges"]]
    return f"{group['series_label']} {', '.join(parts)}"


def count_text(group: dict) -> str:
    """`7 of 9 releases`, `all 3 releases` ("" when the series has one release run)."""
    if group["of"] == 1:
        return ""
    if group["releases"] < group["of"]:
        return f"{group['releases']} of {group['of']} releases"
    return "both releases" if group["of"] == 2 else f"all {group['of']} releases"


VERB = {Verdict.PASS: "passes", Verdict.FAIL: "fails"}      # the others read as their own names


def verb(verdict: str) -> str:
    """`passes`, `fails`, `non-strict`: a verdict in a sentence about a release."""
    return VERB.get(Verdict(verdict), Verdict(verdict).value)


def change_text(change: dict, group: dict, columns: dict) -> str:
    """`passes from 2.39.0`, `fails again from 2.40.0`, `fails on 2.7.4/echo from 2.21.0`."""
    version = version_of(change["column"], columns)
    if change["holds"]:
        again = " again" if change.get("again") else ""
        return f"{verb(group['verdict'])}{again} from {version}"
    if change["verdict"] in BROKEN and change.get("violated"):
        return f"{verb(change['verdict'])} on {change['violated']} from {version}"
    return f"{verb(change['verdict'])} from {version}"


def group_line(group: dict, columns: dict) -> str:
    """`Artemis 2.17.0 – 2.35.0 (7 of 9 releases; passes from 2.39.0)` (plain text)."""
    notes = [n for n in [count_text(group)] + [change_text(ch, group, columns) for ch in group["changes"]] if n]
    return ranges_text(group, columns) + (f" ({'; '.join(notes)})" if notes else "")


__all__ = ["finding_groups", "deciding", "counts_for", "ranges_text", "count_text", "change_text", "group_line",
           "slug", "UNNAMED"]
