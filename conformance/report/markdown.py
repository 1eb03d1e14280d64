"""The compact Markdown summary of a report model (report.md), sized for a CI job summary.

This module owns that summary: per broker@version the overall score and verdict counts, then the MUST
failures, the regressions and the flaky cases. Long lists are cut with a count of what was left out; the
full detail lives in report.html. Model layout: `conformance.report.model`.
"""

from __future__ import annotations

import re
from collections import Counter

from ..verdict import VERDICTS, Verdict
from .model import validate_model
from .producers import render_producers_markdown
from .traffic import render_traffic_markdown

MAX_LIST_ITEMS = 50
MAX_REASON_CHARS = 240


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


def cut_list(lines: list[str], what: str) -> list[str]:
    if len(lines) <= MAX_LIST_ITEMS:
        return lines
    return lines[:MAX_LIST_ITEMS] + [f"- … and {len(lines) - MAX_LIST_ITEMS} more {what} (see report.html)"]


def render_markdown(model: dict) -> str:
    """The CI summary as Markdown text; a malformed model raises ValueError first."""
    validate_model(model)
    overall = {s["column"]: s for s in model["scores"]["overall"]}
    counts: dict[str, Counter] = {c["key"]: Counter() for c in model["columns"]}
    for cell in model["cells"]:
        counts.setdefault(cell["column"], Counter())[cell["verdict"]] += 1
    history = model["history"]
    out = ["## AMQP 1.0 flow-control conformance", "",
           f"Generated {md_text(model['generated_at'])} · suite {md_text(model['suite_version'])} · "
           f"{history['runs']} runs, {history['records']} case records.", "",
           "| broker@version | score | passed / judged | " + " | ".join(VERDICTS) + " |",
           "|---|--:|--:|" + "--:|" * len(VERDICTS)]
    for column in model["columns"]:
        score = overall.get(column["key"])
        shown = percent(score["score"]) if score and score["judged"] else "–"
        ratio = f"{score['passed']} / {score['judged']}" if score else "0 / 0"
        per_verdict = " | ".join(str(counts[column["key"]][v]) for v in VERDICTS)
        out.append(f"| {md_code(column['key'])} | {shown} | {ratio} | {per_verdict} |")

    out += render_unfinished(model)

    titles = {c["id"]: c["title"] for c in model["cases"]}
    fails = [c for c in model["cells"] if c["verdict"] == Verdict.FAIL]
    out += ["", f"### MUST failures ({len(fails)})", ""]
    lines = []
    for cell in sorted(fails, key=lambda c: (c["column"], c["case_id"])):
        violated = f" — {md_code(cell['violated'])}" if cell["violated"] else ""
        item = (f"- {md_code(cell['case_id'])} on {md_code(cell['column'])}{violated}: "
                f"{md_text(cell['reason'], MAX_REASON_CHARS)}")
        for other in cell["findings"][1:]:           # the other findings, under the deciding one
            item += f"\n  - also {md_text(other, MAX_REASON_CHARS)}"
        lines.append(item)
    out += cut_list(lines, "failures") or ["None."]

    regressions = [c for c in model["changes"] if c["kind"] == "regression"]
    fixes = sum(1 for c in model["changes"] if c["kind"] == "fix")
    out += ["", f"### Regressions ({len(regressions)}; fixes: {fixes})", ""]
    lines = [f"- {md_code(c['case_id'])} ({md_text(titles.get(c['case_id'], ''), 90)}): "
             f"{md_code(c['from_column'])} {md_text(c['from_verdict'])} → {md_code(c['to_column'])} "
             f"**{md_text(c['to_verdict'])}**" for c in regressions]
    out += cut_list(lines, "regressions") or ["None."]

    out += ["", f"### Flaky cases ({len(model['flaky'])})", ""]
    lines = []
    for flaky in model["flaky"]:
        spread = ", ".join(f"{v} ×{n}" for v, n in sorted(flaky["verdict_counts"].items(),
                                                         key=lambda kv: VERDICTS.index(kv[0])))
        lines.append(f"- {md_code(flaky['case_id'])} on {md_code(flaky['column'])}: {spread}")
    out += cut_list(lines, "flaky cases") or ["None."]
    out += render_producers_markdown(model)
    for check in model.get("selfcheck") or []:
        caught = sum(1 for f in check["faults"] if f["detected"])
        out += ["", f"### Selfcheck on {md_code(check['column'])}: {caught} of {len(check['faults'])} faults caught", ""]
        out += [f"- {md_code(f['name'])} ({md_code(f['requirement'] or '')}): "
                + (", ".join(f"{md_code(x['case_id'])} → {md_text(x['to'])}" for x in f["flipped"]) or "**missed**")
                for f in check["faults"]]
    out += render_traffic_markdown(model)
    out += ["", "Full matrix, case pages with transcripts, scores and duration trends: `report.html`.", ""]
    return "\n".join(out)


def render_unfinished(model: dict) -> list[str]:
    """A warning for runs that never finished: their verdicts stand, but they are not whole runs."""
    runs = model.get("unfinished_runs") or []
    if not runs:
        return []
    title = "Unfinished or broken runs" if any(r.get("broken") for r in runs) else "Unfinished runs"
    lines = ["", f"### ⚠ {title} ({len(runs)})", ""]
    for r in runs:
        counted = (f"{r['records']} of {r['scheduled']} cases recorded" if r.get("scheduled") is not None
                   else f"{r.get('records', '?')} cases recorded")
        lines.append(f"- {'BROKEN' if r.get('broken') else 'UNFINISHED'} run {md_code(r['run_id'])} ({', '.join(md_code(b) for b in r['brokers'])}), "
                     f"started {md_text(r['started_at'])}: {counted}; {md_text(r['reason'])}")
    return lines
