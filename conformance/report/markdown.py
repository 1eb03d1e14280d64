"""The compact Markdown summary of a report model (report.md), sized for a CI job summary.

This module owns that summary: the brokers, then the client libraries, each with one row per release (score
and verdict counts) and its findings grouped across each release series (conformance.report.findings): every
MUST failure is named, one line per case and requirement with the releases it holds for as ranges and where it
changes; then the SHOULD findings, regressions, flaky cases and the rest, each cut to what fits. The whole
summary stays within MAX_LINES lines (the full 16-broker + 9-library matrix included); the full detail lives in
report.html. Model layout: `conformance.report.model`.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict

from ..results import FIX, REGRESSION
from ..verdict import VERDICTS, Verdict
from .findings import finding_groups, group_line, ranges_text
from .labels import SUBJECT_TITLE, column_label, section_count, sections, series_label, when
from .model import validate_model
from .producers import render_producers_markdown
from .traffic import render_traffic_markdown

MAX_LINES = 100
MAX_REASON_CHARS = 140


def md_text(value: object, limit: int | None = None) -> str:
    """One line of plain text, safe inside Markdown and table cells (no markup, no HTML, no pipes)."""
    text = re.sub(r"\s+", " ", "" if value is None else str(value)).strip()
    if limit and len(text) > limit:
        text = text[: limit - 1].rstrip() + "…"
    text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return re.sub(r"([\\`*_\[\]|~])", r"\\\1", text)


def md_code(value: object) -> str:
    """An inline code span that holds any text (fence longer than any backtick run inside)."""
    text = re.sub(r"\s+", " ", str(value)).strip().replace("|", "\\|")
    fence = "`" * (max((len(run) for run in re.findall(r"`+", text)), default=0) + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def percent(score: float) -> str:
    return f"{score * 100:.1f}%".replace(".0%", "%")


def cut(lines: list[str], room: int, what: str) -> list[str]:
    """`lines` in at most `room` lines: the first ones and a last line counting what was left out."""
    if len(lines) <= room:
        return lines
    keep = max(0, room - 1)
    return lines[:keep] + [f"- … and {len(lines) - keep} more {what} (see report.html)"]


def _release(column: dict) -> str:
    language = column.get("language")
    return md_text(column_label(column) + (f" ({language})" if language else ""))


def score_table(columns: list[dict], model: dict) -> list[str]:
    overall = {s["column"]: s for s in model["scores"]["overall"]}
    counts: dict[str, Counter] = defaultdict(Counter)
    for cell in model["cells"]:
        counts[cell["column"]][cell["verdict"]] += 1
    expect = any("expectation" in c for c in model["cells"])
    head = "| release | score | passed / judged | " + " | ".join(VERDICTS) + (" | unexpected |" if expect else " |")
    rule = "|---|--:|--:|" + "--:|" * len(VERDICTS) + ("--:|" if expect else "")
    out = [head, rule]
    unexpected = Counter(c["column"] for c in model["cells"] if str(c.get("expectation", "")).startswith("unexpected"))
    for column in columns:
        score = overall.get(column["key"])
        shown = percent(score["score"]) if score and score["judged"] else "–"
        ratio = f"{score['passed']} / {score['judged']}" if score else "0 / 0"
        per_verdict = " | ".join(str(counts[column["key"]][v]) for v in VERDICTS)
        out.append(f"| {_release(column)} | {shown} | {ratio} | {per_verdict} |"
                   + (f" {unexpected[column['key']]} |" if expect else ""))
    return out


def _expect_note(groups: list[dict], cells: dict) -> str:
    marks = {cells[g["case_id"], g["latest"]].get("expectation") for g in groups if (g["case_id"], g["latest"]) in cells}
    marks.discard(None)
    if not marks:
        return ""
    if any(str(m).startswith("unexpected") for m in marks):
        return " **unexpected**"
    return " (" + ", ".join(sorted(str(m) for m in marks)) + ")"


def grouped_lines(groups: list[dict], columns: dict, model: dict, reasons: bool = True) -> list[str]:
    """One line per (case, requirement) over every series it holds on: `- 2.7.2/1 2.7.2/x — Artemis 2.17.0 –
    2.35.0 (7 of 9 releases; passes from 2.39.0); RabbitMQ 3.10.8 (...): reason`."""
    cells = {(c["case_id"], c["column"]): c for c in model["cells"]}
    by_key: dict[tuple, list[dict]] = defaultdict(list)
    for g in groups:
        by_key[g["case_id"], g["requirement_id"]].append(g)
    out = []
    for (case_id, requirement_id), members in by_key.items():
        where = "; ".join(md_text(group_line(g, columns)) + (f" \\[bisected: {md_text(_bisected(g['bisect']))}\\]"
                                                             if g.get("bisect") else "") for g in members)
        newest = max(members, key=lambda g: g["latest"])
        reason = f": {md_text(newest['reason'], MAX_REASON_CHARS)}" if reasons else ""
        out.append(f"- {md_code(case_id)} {md_code(requirement_id)} — {where}{_expect_note(members, cells)}{reason}")
    return out


def compact_lines(groups: list[dict], columns: dict) -> list[str]:
    """One line per requirement, naming each case that broke it and where (for a matrix whose failures would
    not fit one line per case): `- 2.6.7/credit-formula — 2.6.7/3: Artemis 2.17.0 – 2.35.0, RabbitMQ 3.10.8; ...`."""
    by_requirement: dict[str, dict[str, list[dict]]] = defaultdict(lambda: defaultdict(list))
    for g in groups:
        by_requirement[g["requirement_id"]][g["case_id"]].append(g)
    return [f"- {md_code(requirement_id)} — " + "; ".join(
        f"{md_code(case_id)} " + ", ".join(md_text(ranges_text(g, columns)) for g in members)
        for case_id, members in cases.items()) for requirement_id, cases in by_requirement.items()]


def _bisected(b: dict) -> str:
    commit = (b.get("commit") or {}).get("hash")
    if commit:
        return f"commit {str(commit)[:12]}"
    return f"first at {b['changed']}" if b.get("changed") else "no change found"


def render_subject(subject: str, columns: list[dict], model: dict, groups: list[dict],
                   compact: bool = False) -> tuple[list[str], list]:
    """(the lines that are always shown: the table and every MUST failure, one line per case and requirement, or
    per requirement when `compact`; [(priority, title, lines, what)] that are cut to fit)."""
    by_key = {c["key"]: c for c in model["columns"]}
    mine = [g for g in groups if g["subject"] == subject]
    must = [g for g in mine if g["verdict"] == Verdict.FAIL]
    should = [g for g in mine if g["verdict"] != Verdict.FAIL]
    must_cells = sum(g["releases"] for g in must)
    out = ["", f"### {SUBJECT_TITLE[subject]}: {section_count(subject, columns)}",
           ""] + score_table(columns, model)
    out += ["", f"**MUST failures: {len({(g['case_id'], g['requirement_id']) for g in must})} findings (a case and "
                f"the requirement it broke) on {must_cells} release cells**" + ("" if must else " — none.")]
    if must:
        out += compact_lines(must, by_key) if compact else grouped_lines(must, by_key, model)
    keys = {c["key"] for c in columns}
    extra = []
    if should:
        extra.append((3, f"**SHOULD findings (non-strict): {len({(g['case_id'], g['requirement_id']) for g in should})}**",
                      grouped_lines(should, by_key, model, reasons=False), "SHOULD findings"))
    changes = [c for c in model["changes"] if c["to_column"] in keys]
    regressions = [c for c in changes if c["kind"] == REGRESSION]
    fixes = sum(1 for c in changes if c["kind"] == FIX)
    titles = {c["id"]: c["title"] for c in model["cases"]}
    lines = [f"- {md_code(c['case_id'])} ({md_text(titles.get(c['case_id'], ''), 60)}): "
             f"{md_text(series_label(by_key[c['to_column']]))} {md_text(by_key[c['from_column']]['version'])} "
             f"{md_text(c['from_verdict'])} → {md_text(by_key[c['to_column']]['version'])} **{md_text(c['to_verdict'])}**"
             for c in regressions if c["from_column"] in by_key and c["to_column"] in by_key]
    extra.append((1, f"**Regressions between consecutive releases: {len(regressions)}** (fixes: {fixes})",
                  lines, "regressions"))
    return out, extra


def render_markdown(model: dict) -> str:
    """The CI summary as Markdown text (at most MAX_LINES lines); a malformed model raises ValueError first."""
    validate_model(model)
    groups = finding_groups(model)
    history = model["history"]
    last = max((c["last_run_at"] for c in model["columns"]), default="")
    head = ["## AMQP 1.0 flow-control conformance", "",
            f"Generated {md_text(when(model['generated_at']))} · suite {md_text(model['suite_version'])} · "
            f"{history['runs']} runs, {history['records']:,} case records"
            + (f" · latest run {md_text(when(last))}" if last else "") + "."]
    tail = ["", "Full matrix, a page per finding with its frames, scores and trends: `report.html` (keep its "
            "folder `report.files/` beside it)."]
    for compact in (False, True):      # one line per case and requirement when that fits, else per requirement
        fixed = head + render_unfinished(model)
        optional: list = []
        for subject, columns in sections(model):
            lines, extra = render_subject(subject, columns, model, groups, compact)
            fixed += lines
            optional.append(("subject", subject, len(fixed), extra))
        if len(fixed) + len(tail) <= MAX_LINES:
            break
    flaky_lines = []
    by_key = {c["key"]: c for c in model["columns"]}
    for flaky in model["flaky"]:
        spread = ", ".join(f"{v} ×{n}" for v, n in sorted(flaky["verdict_counts"].items(),
                                                         key=lambda kv: VERDICTS.index(kv[0])))
        where = _release(by_key[flaky["column"]]) if flaky["column"] in by_key else md_code(flaky["column"])
        flaky_lines.append(f"- {md_code(flaky['case_id'])} on {where}: {spread}")
    others = [(2, f"### Flaky cases ({len(model['flaky'])})", flaky_lines, "flaky cases")]
    selfcheck = []
    for check in model.get("selfcheck") or []:
        caught = sum(1 for f in check["faults"] if f["detected"])
        missed = [f["name"] for f in check["faults"] if not f["detected"]]
        where = _release(by_key[check["column"]]) if check["column"] in by_key else md_code(check["column"])
        selfcheck.append(f"- Selfcheck on {where}: {caught} of {len(check['faults'])} faults caught"
                         + (f"; missed: {', '.join(md_code(m) for m in missed)}" if missed else ""))
    if selfcheck:
        others.append((4, "### Selfcheck", selfcheck, "selfchecks"))

    room = MAX_LINES - len(fixed) - len(tail)
    # the optional parts in priority order, each given what is left (a block needs its blank and title lines)
    inserts: dict[int, list[str]] = defaultdict(list)
    ordered = sorted([(p, at, title, lines, what) for _, _, at, extra in optional for p, title, lines, what in extra]
                     + [(p, None, title, lines, what) for p, title, lines, what in others], key=lambda t: t[0])
    after: list[str] = []
    for _, at, title, lines, what in ordered:
        need = 3 if lines else 2
        if room < need:
            if lines and room >= 2:          # no room for the list: say where it is
                block = ["", f"{title} — listed in report.html"]
                room -= len(block)
                (after if at is None else inserts[at]).extend(block)
            continue
        body = cut(lines, room - 2, what) if lines else []
        block = ["", title] + body if body else ["", title + " — none."]
        room -= len(block)
        if at is None:
            after += block
        else:
            inserts[at] += block
    for name, extra_lines in (("producers", render_producers_markdown(model)), ("traffic", render_traffic_markdown(model))):
        if extra_lines and room >= len(extra_lines):
            after += extra_lines
            room -= len(extra_lines)
        elif extra_lines and room >= 2:
            after += ["", f"{'Producer flow control' if name == 'producers' else 'Judged traffic'}: "
                          f"{len(extra_lines) - 5} rows in report.html."]
            room -= 2
    out: list[str] = []
    for index, line in enumerate(fixed, start=1):
        out.append(line)
        out += inserts.get(index, [])
    return "\n".join(out + after + tail) + "\n"


UNFINISHED_SHOWN = 3


def _brokers(names: list[str]) -> str:
    return ", ".join(md_code(b) for b in names) if len(names) <= 4 else f"{len(names)} brokers and libraries"


def render_unfinished(model: dict) -> list[str]:
    """A warning for runs that never finished or broke: their verdicts stand, but they are not whole runs. The
    newest ones a line each, the rest counted."""
    runs = model.get("unfinished_runs") or []
    if not runs:
        return []
    title = "Unfinished or broken runs" if any(r.get("broken") for r in runs) else "Unfinished runs"
    lines = ["", f"### ⚠ {title} ({len(runs)})"]
    newest = sorted(runs, key=lambda r: str(r.get("started_at") or ""), reverse=True)
    for r in newest[:UNFINISHED_SHOWN]:
        counted = (f"{r['records']} of {r['scheduled']} cases recorded" if r.get("scheduled") is not None
                   else f"{r.get('records', '?')} cases recorded")
        lines.append(f"- {'BROKEN' if r.get('broken') else 'UNFINISHED'} run {md_code(r['run_id'])} "
                     f"({_brokers(r['brokers'])}), started {md_text(when(r['started_at']))}: "
                     f"{counted}; {md_text(r['reason'])}")
    rest = newest[UNFINISHED_SHOWN:]
    if rest:
        broken = sum(1 for r in rest if r.get("broken"))
        lines.append(f"- … and {len(rest)} older ({broken} broken, {len(rest) - broken} unfinished), the oldest "
                     f"started {md_text(when(rest[-1]['started_at']))} (see report.html)")
    return lines


__all__ = ["render_markdown", "MAX_LINES", "md_text", "md_code"]
