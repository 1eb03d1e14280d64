"""The report's "Producer flow control" section: how each broker release stopped a publisher at a full queue
(2.6.7/14) or in an alarm (2.5.6/4-6), drawn from the cells' `producer` facts.

This module owns that section for both renderers: `producer_rows(model)` (one row per case and
broker@version with producer facts), `render_producers_html(model)` and `render_producers_markdown(model)`.
A cell's `producer` is the case's observations["producer"] (conformance.casekit.producers.producer_facts).
"""

from __future__ import annotations

import html
import re

from .labels import column_label

CASE_ORDER = ("2.6.7/14", "2.5.6/4", "2.5.6/5", "2.5.6/6")
HEADERS = ("release", "case", "limit used", "means", "throttle point", "in flight", "resume point", "lost",
           "verdict")


def producer_rows(model: dict) -> list[dict]:
    """Rows of the section: the queue-limit case first, then the alarm cases, releases in column order
    (`column`: the release as people say it, `key`: the model's column)."""
    order = {c["key"]: i for i, c in enumerate(model.get("columns") or [])}
    label = {c["key"]: column_label(c) for c in model.get("columns") or []}
    rows = []
    for cell in model.get("cells") or []:
        p = cell.get("producer")
        if not isinstance(p, dict):
            continue
        means = str(p.get("means") or "")
        if means == "not throttled":
            point = f"not throttled within {p.get('budget') or 'the budget'}"
        else:
            point = f"message {p.get('at_message')}" + (f", depth {p['depth']}" if p.get("depth") is not None else "")
            if p.get("drain"):
                means += " (drain)"
            if p.get("error"):
                means += f" ({p['error']})"
        if p.get("resumed"):
            resume = f"depth {p['resume_depth']}" if p.get("resume_depth") is not None else "resumed"
        else:
            resume = "not resumed" if p.get("resumed") is not None else "–"
        rows.append({"column": label.get(cell["column"], cell["column"]), "key": cell["column"],
                     "case_id": cell["case_id"], "limit": p.get("limit") or "–",
                     "means": means, "point": point,
                     "in_flight": "–" if p.get("in_flight") is None else str(p["in_flight"]),
                     "resume": resume,
                     "lost": "not checked" if p.get("lost") is None else f"{p['lost']} of {p.get('accepted', 0)}",
                     "verdict": cell["verdict"]})
    rank = {c: i for i, c in enumerate(CASE_ORDER)}
    rows.sort(key=lambda r: (rank.get(r["case_id"], len(rank)), r["case_id"], order.get(r["key"], 1 << 30)))
    return rows


def _cells(row: dict) -> tuple:
    return (row["column"], row["case_id"], row["limit"], row["means"], row["point"], row["in_flight"],
            row["resume"], row["lost"], row["verdict"])


def render_producers_html(model: dict) -> str:
    rows = producer_rows(model)
    if not rows:
        return ""
    head = "".join(f"<th>{html.escape(h)}</th>" for h in HEADERS)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(str(v))}</td>" for v in _cells(r)) + "</tr>" for r in rows)
    return ('<section class="block" id="producers"><h2>Producer flow control</h2><p class="note">How a publisher '
            "was stopped at a full queue or in an alarm: a synchronous publisher gives the means and the throttle "
            "point, consuming the resume point, a pipelined publisher the transfers in flight when credit was "
            "withdrawn; lost counts accepted messages not consumed afterwards. Throttling itself is not a spec "
            "requirement.</p>"
            f'<table class="data" id="producers-table"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'
            "</section>")


def _md(value: object) -> str:
    text = re.sub(r"\s+", " ", str(value)).strip()
    text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return re.sub(r"([\\`*_\[\]|~])", r"\\\1", text)


def render_producers_markdown(model: dict) -> list[str]:
    rows = producer_rows(model)
    if not rows:
        return []
    out = ["", "### Producer flow control", "", "| " + " | ".join(HEADERS) + " |", "|" + "---|" * len(HEADERS)]
    out += ["| " + " | ".join(_md(v) for v in _cells(r)) + " |" for r in rows]
    return out
