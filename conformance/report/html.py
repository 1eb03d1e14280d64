"""The self-contained HTML compliance report (report.html), drawn from a report model.

This module owns the page: the requirement x broker@version matrix, scores by section and level, the
compliance chart, regressions and fixes, flaky cases, duration trends and one click-through page per case
(shown with CSS `:target`, no script). Everything is inline (CSS and SVG); the page makes no network request.
The stylesheet is `static/report.css`, package data read with importlib.resources and inlined.
Every text from the model is HTML-escaped; the only markup let through is `<sub>` in requirement sentences.
Model layout: `conformance.report.model`.
"""

from __future__ import annotations

import html
import re
from importlib.resources import files
from collections import Counter, defaultdict
from typing import Iterable

from .clients import render_client_matrix
from ..verdict import BROKEN, HTML_COLOUR, MEANING, Verdict
from .producers import render_producers_html
from ..verdict import JUDGED as JUDGED_VERDICTS, VERDICTS
from .model import LEVELS, validate_model
from .traffic import render_traffic_html

_STATIC = files("conformance.report") / "static"

# Verdict -> (background, text colour, label). "not-run" is the blank cell.
VERDICT_STYLE = {**{name: (*HTML_COLOUR[name], name) for name in VERDICTS}, "not-run": ("#f4f5f7", "#57606a", "")}
VERDICT_MEANING = {**{v.value: MEANING[v] for v in Verdict}, "not-run": "not judged on this broker@version"}
# Bar colours of the chart, one per broker; none is a verdict colour.
BROKER_PALETTE = ("#0550ae", "#0a6b73", "#953800", "#57606a", "#6639ba", "#116329")


def esc(value: object) -> str:
    return html.escape("" if value is None else str(value), quote=True)


def spec_text(text: str) -> str:
    """Escape a requirement sentence, then let its `<sub>...</sub>` subscripts through as markup."""
    return re.sub(r"&lt;sub&gt;([^&<>]*)&lt;/sub&gt;", r"<sub>\1</sub>", esc(text))


def section_sort_key(section: str) -> tuple:
    return tuple((0, int(part), "") if part.isdigit() else (1, 0, part) for part in section.split("."))


def percent(score: float) -> str:
    return f"{score * 100:.1f}%".replace(".0%", "%")


class Anchors:
    """Stable, unique fragment ids for case pages: "2.6.7/3" -> "case-2.6.7-3"."""

    def __init__(self, case_ids: Iterable[str]):
        self.ids: dict[str, str] = {}
        taken: set[str] = set()
        for case_id in case_ids:
            anchor = base = "case-" + re.sub(r"[^A-Za-z0-9._-]+", "-", case_id)
            n = 2
            while anchor in taken:
                anchor, n = f"{base}-{n}", n + 1
            taken.add(anchor)
            self.ids[case_id] = anchor

    def __getitem__(self, case_id: str) -> str:
        return self.ids[case_id]

    def link(self, case_id: str, text: str | None = None, css: str = "") -> str:
        cls = f' class="{css}"' if css else ""
        return f'<a{cls} href="#{esc(self[case_id])}">{esc(case_id if text is None else text)}</a>'


def verdict_badge(verdict: str, text: str | None = None) -> str:
    label = VERDICT_STYLE.get(verdict, ("", "", verdict))[2] if text is None else text
    meaning = esc(VERDICT_MEANING.get(verdict, ""))
    return f'<span class="badge verdict-{esc(verdict)}" title="{meaning}">{esc(label)}</span>'


def level_badge(level: str) -> str:
    return f'<span class="level level-{esc(level)}">{esc(level)}</span>'


def column_label(column: dict) -> str:
    """The column's broker -- its release series when it has one (artemis, rabbitmq: consecutive columns in
    version order) -- over its version."""
    return (f'<span class="col-broker">{esc(column.get("series") or column["broker"])}</span>'
            f'<span class="col-version">{esc(column["version"])}</span>')


def series_starts(columns: list[dict]) -> set[str]:
    """Keys of the columns that open a run of one series (a border separates series in the matrix)."""
    starts, previous = set(), None
    for column in columns:
        series = column.get("series") or column["broker"]
        if series != previous:
            starts.add(column["key"])
        previous = series
    return starts


# -- page parts ---------------------------------------------------------------------------------------------

def render_css() -> str:
    """The page's style: static/report.css (shipped with the package) and the verdict colours
    (conformance.verdict), inlined into the page."""
    verdict_rules = "\n".join(
        f".verdict-{name}{{background:{bg};color:{fg}}} .verdict-{name} a{{color:{fg}}}"
        for name, (bg, fg, _) in VERDICT_STYLE.items())
    return "\n" + _STATIC.joinpath("report.css").read_text("utf-8") + verdict_rules


def render_header(model: dict) -> str:
    history = model["history"]
    return (f'<header class="top"><h1>AMQP 1.0 flow-control conformance</h1>'
            f'<div class="meta">Generated {esc(model["generated_at"])} · suite {esc(model["suite_version"])} · '
            f'{history["runs"]} runs, {history["records"]} case records · '
            f'{len(model["columns"])} broker versions, {len(model["requirements"])} requirements, '
            f'{len(model["cases"])} cases</div></header>'
            '<nav class="toc"><a href="#matrix">Matrix</a><a href="#scores">Scores</a><a href="#chart">Chart</a>'
            '<a href="#changes">Regressions &amp; fixes</a><a href="#flaky">Flaky cases</a>'
            '<a href="#durations">Durations</a><a href="#cases">All cases</a></nav>')


def render_summary_cards(model: dict) -> str:
    overall = {s["column"]: s for s in model["scores"]["overall"]}
    cards = []
    for column in model["columns"]:
        score = overall.get(column["key"])
        value = percent(score["score"]) if score and score["judged"] else "–"
        detail = f'{score["passed"]}/{score["judged"]} judged cases passed' if score else "no judged cases"
        cards.append(f'<div class="card" data-column="{esc(column["key"])}"><div><span class="name">'
                     f'{esc(column.get("series") or column["broker"])}</span><span class="ver">'
                     f'{esc(column["version"])}</span></div><div class="score">{value}</div>'
                     f'<div class="sub">{detail}</div><div class="sub">'
                     f'{column["runs"]} runs · last {esc(column["last_run_at"])}</div></div>')
    return f'<section class="block" id="summary"><div class="cards">{"".join(cards)}</div></section>'


def render_legend() -> str:
    items = "".join(f'<span><span class="swatch verdict-{name}"></span><b>{esc(style[2] or "blank")}</b> '
                    f'{esc(VERDICT_MEANING[name])}</span>' for name, style in VERDICT_STYLE.items())
    return f'<div class="legend" id="legend">{items}</div>'


def render_matrix(model: dict, anchors: Anchors) -> str:
    columns = model["columns"]
    by_cell = {(c["requirement_id"], c["column"]): c for c in model["requirement_cells"]}
    case_verdicts = {(c["case_id"], c["column"]): c["verdict"] for c in model["cells"]}
    sections: dict[str, list[dict]] = defaultdict(list)
    for requirement in model["requirements"]:
        sections[requirement["section"]].append(requirement)

    starts = series_starts(columns)
    head = "".join(f'<th class="broker-col{" series-start" if c["key"] in starts else ""}" '
                   f'data-column="{esc(c["key"])}" data-series="{esc(c.get("series") or c["broker"])}" '
                   f'title="{esc(c["broker"])}: {esc(c["product"])} {esc(c["version"])}: {c["runs"]} runs">'
                   f'{column_label(c)}</th>' for c in columns)
    rows = []
    for section in sorted(sections, key=section_sort_key):
        part = sections[section][0]["part"]
        rows.append(f'<tr class="section-row"><th colspan="{len(columns) + 1}"><span class="sticky-label">'
                    f'{esc(section)}<span class="part">Part {esc(part)}</span></span></th></tr>')
        for requirement in sections[section]:
            cells = []
            for column in columns:
                cell = by_cell.get((requirement["id"], column["key"]))
                if cell is None:
                    cells.append(f'<td class="cell verdict-not-run" title="{esc(requirement["id"])} on '
                                 f'{esc(column["key"])}: not judged"></td>')
                    continue
                case_ids = cell["case_ids"] or []
                tip = "; ".join(f'{cid} {case_verdicts.get((cid, column["key"]), "not run")}' for cid in case_ids)
                main_case = next((cid for cid in case_ids
                                  if case_verdicts.get((cid, column["key"])) == cell["verdict"]),
                                 case_ids[0] if case_ids else None)
                label = VERDICT_STYLE[cell["verdict"]][2]
                label_html = (anchors.link(main_case, label, "verdict-label") if main_case in anchors.ids
                              else f'<span class="verdict-label">{esc(label)}</span>')
                links = " ".join(anchors.link(cid) for cid in case_ids if cid in anchors.ids)
                cells.append(f'<td class="cell verdict-{esc(cell["verdict"])}" title="{esc(requirement["id"])} on '
                             f'{esc(column["key"])}: {esc(label)} ({esc(tip)})">{label_html}'
                             f'<span class="case-links">{links}</span></td>')
            rows.append(f'<tr class="req-row" data-requirement="{esc(requirement["id"])}">'
                        f'<th class="req" scope="row" title="{esc(requirement["text"])}">'
                        f'<span class="req-id mono">{esc(requirement["id"])}</span>{level_badge(requirement["level"])}'
                        f'</th>{"".join(cells)}</tr>')
    return (f'<section class="block" id="matrix-section"><h2>Requirements × broker versions</h2>'
            f'<p class="note">One row per requirement, grouped by section; a cell shows the worst verdict of the '
            f'cases that judged it in the latest run of that broker version (a failing case judges only the '
            f'requirement it names as violated). Click a cell for the case page.</p>'
            f'{render_legend()}<div class="matrix-wrap"><table id="matrix"><thead><tr>'
            f'<th class="corner">Requirement · level</th>{head}</tr></thead><tbody>{"".join(rows)}</tbody>'
            f'</table></div></section>')


def score_cell(score: dict | None) -> str:
    if not score or not score["judged"]:
        return '<td class="num dim">–</td>'
    width = round(score["score"] * 100)
    return (f'<td class="num"><span class="scorebar"><span style="width:{width}%"></span></span>'
            f'{percent(score["score"])} <span class="dim">({score["passed"]}/{score["judged"]})</span></td>')


def render_score_table(model: dict, rows_of: str, group: str, title: str, order: Iterable[str]) -> str:
    scores = {(s["column"], s[group]): s for s in model["scores"][rows_of]}
    head = "".join(f'<th>{column_label(c)}</th>' for c in model["columns"])
    body = []
    for key in order:
        body.append(f'<tr><th>{esc(key)}</th>'
                    + "".join(score_cell(scores.get((c["key"], key))) for c in model["columns"]) + "</tr>")
    return (f'<h3>{esc(title)}</h3><table class="data scores" id="scores-{esc(group)}"><thead><tr>'
            f'<th>{esc(group)}</th>{head}</tr></thead><tbody>{"".join(body)}</tbody></table>')


def render_scores(model: dict) -> str:
    overall = {s["column"]: s for s in model["scores"]["overall"]}
    head = "".join(f'<th>{column_label(c)}</th>' for c in model["columns"])
    overall_cells = "".join(score_cell(overall.get(c["key"])) for c in model["columns"])
    overall_row = f"<tr><th>all cases</th>{overall_cells}</tr>"
    sections = sorted({s["section"] for s in model["scores"]["by_section"]}, key=section_sort_key)
    present_levels = {s["level"] for s in model["scores"]["by_level"]}
    levels = [lvl for lvl in LEVELS if lvl in present_levels]
    return (f'<section class="block" id="scores"><h2>Scores</h2><p class="note">Score = passed / judged; judged '
            f'verdicts are {", ".join(JUDGED_VERDICTS)}. Informational, unsupported and error are not judged.</p>'
            f'<h3>Overall</h3><table class="data scores" id="scores-overall"><thead><tr><th></th>{head}</tr>'
            f'</thead><tbody>{overall_row}</tbody></table>'
            + render_score_table(model, "by_level", "level", "By level", levels)
            + render_score_table(model, "by_section", "section", "By section", sections) + "</section>")


def render_chart(model: dict) -> str:
    """Horizontal bars, one per broker@version, grouped by broker; bar length = score."""
    overall = {s["column"]: s for s in model["scores"]["overall"]}
    def group(column: dict) -> str:           # a release series is one broker here
        return column.get("series") or column["broker"]

    brokers = list(dict.fromkeys(group(c) for c in model["columns"]))
    colour = {b: BROKER_PALETTE[i % len(BROKER_PALETTE)] for i, b in enumerate(brokers)}
    label_w, bar_w, row_h, gap = 220, 560, 24, 10
    parts, y = [], 26
    for broker in brokers:
        for column in (c for c in model["columns"] if group(c) == broker):
            score = overall.get(column["key"])
            judged = bool(score and score["judged"])
            width = round(bar_w * score["score"]) if judged else 0
            text = f'{percent(score["score"])}  ({score["passed"]}/{score["judged"]})' if judged else "not judged"
            parts.append(
                f'<g class="bar" data-column="{esc(column["key"])}">'
                f'<text x="{label_w - 10}" y="{y + 16}" text-anchor="end" font-size="12.5" fill="#1f2328">'
                f'{esc(group(column))} <tspan fill="#57606a">{esc(column["version"])}</tspan></text>'
                f'<rect x="{label_w}" y="{y + 3}" width="{bar_w}" height="{row_h - 6}" fill="#eaeef2" rx="3"/>'
                f'<rect x="{label_w}" y="{y + 3}" width="{width}" height="{row_h - 6}" fill="{colour[broker]}" rx="3">'
                f'<title>{esc(column["key"])}: {esc(text)}</title></rect>'
                f'<text x="{label_w + bar_w + 8}" y="{y + 16}" font-size="12" fill="#1f2328">{esc(text)}</text></g>')
            y += row_h
        y += gap
    grid = "".join(
        f'<line x1="{label_w + bar_w * t // 4}" y1="18" x2="{label_w + bar_w * t // 4}" y2="{y}" stroke="#d0d7de" '
        f'stroke-dasharray="3 3"/><text x="{label_w + bar_w * t // 4}" y="13" font-size="11" text-anchor="middle" '
        f'fill="#57606a">{t * 25}%</text>' for t in range(5))
    height = y + 4
    return (f'<section class="block" id="chart"><h2>Compliance per broker and version</h2>'
            f'<svg role="img" aria-label="compliance score per broker version" '
            f'width="{label_w + bar_w + 170}" height="{height}" viewBox="0 0 {label_w + bar_w + 170} {height}">'
            f'{grid}{"".join(parts)}</svg></section>')


def render_changes(model: dict, anchors: Anchors, columns: dict) -> str:
    order = {"regression": 0, "fix": 1, "change": 2}
    rows = []
    def version(key: str) -> str:
        return esc(columns[key]["version"] if key in columns else key)

    def sort_key(change: dict) -> tuple:
        return order[change["kind"]], section_sort_key(change["case_id"].split("/")[0]), change["case_id"]

    for change in sorted(model["changes"], key=sort_key):
        kind = esc(change["kind"])
        rows.append(f'<tr class="change kind-row-{kind}"><td><span class="badge kind-{kind}">{kind}</span></td>'
                    f'<td class="mono">{anchors.link(change["case_id"])}</td><td>{esc(change["broker"])}</td>'
                    f'<td>{version(change["from_column"])} → {version(change["to_column"])}</td>'
                    f'<td>{verdict_badge(change["from_verdict"])} → {verdict_badge(change["to_verdict"])}</td></tr>')
    counts = Counter(c["kind"] for c in model["changes"])
    body = (f'<table class="data" id="changes-table"><thead><tr><th>kind</th><th>case</th><th>broker</th>'
            f'<th>version</th><th>verdict</th></tr></thead><tbody>{"".join(rows)}</tbody></table>'
            if rows else '<p class="note">No verdict changed between versions of a broker.</p>')
    return (f'<section class="block" id="changes"><h2>Regressions &amp; fixes</h2><p class="note">'
            f'{counts["regression"]} regressions, {counts["fix"]} fixes, {counts["change"]} other changes between '
            f'consecutive versions of each broker (of each release series: artemis, rabbitmq, ...).</p>{body}'
            '</section>')


def counts_html(counts: dict) -> str:
    ordered = sorted(counts.items(), key=lambda kv: VERDICTS.index(kv[0]) if kv[0] in VERDICTS else 99)
    return " ".join(verdict_badge(v, f"{v} ×{n}") for v, n in ordered)


def render_flaky(model: dict, anchors: Anchors) -> str:
    rows = "".join(f'<tr><td class="mono">{anchors.link(f["case_id"])}</td><td>{esc(f["column"])}</td>'
                   f'<td>{counts_html(f["verdict_counts"])}</td></tr>' for f in model["flaky"])
    body = (f'<table class="data" id="flaky-table"><thead><tr><th>case</th><th>broker@version</th>'
            f'<th>verdicts over its runs</th></tr></thead><tbody>{rows}</tbody></table>'
            if rows else '<p class="note">No case gave different verdicts across runs of the same broker version.</p>')
    return (f'<section class="block" id="flaky"><h2>Flaky cases</h2><p class="note">Cases whose verdict differed '
            f'between runs of the same broker version.</p>{body}</section>')


def sparkline(series: list, width: int = 104, height: int = 24) -> str:
    values = [float(s) for _, s in series]
    if not values:
        return '<span class="dim">–</span>'
    low, high = min(values), max(values)
    step = (width - 8) / max(1, len(values) - 1)

    def y_of(v: float) -> float:
        return height / 2 if high == low else height - 4 - (v - low) / (high - low) * (height - 8)

    points = [(4 + i * step if len(values) > 1 else width / 2, y_of(v)) for i, v in enumerate(values)]
    path = " ".join(f"{x:.1f},{y:.1f}" for x, y in points)
    last_x, last_y = points[-1]
    return (f'<svg class="spark" width="{width}" height="{height}" viewBox="0 0 {width} {height}">'
            f'<polyline points="{path}" fill="none" stroke="#0550ae" stroke-width="1.6" stroke-linejoin="round"/>'
            f'<circle cx="{last_x:.1f}" cy="{last_y:.1f}" r="2.4" fill="#0550ae"/></svg>')


def render_durations(model: dict, anchors: Anchors) -> str:
    """One row per case, one cell per broker@version: sparkline of its run durations, last and mean."""
    trends = {(d["case_id"], d["column"]): d for d in model["durations"]}
    case_ids = sorted({d["case_id"] for d in model["durations"]},
                      key=lambda cid: (section_sort_key(cid.split("/")[0]), cid))
    head = "".join(f'<th>{column_label(c)}</th>' for c in model["columns"])
    rows = []
    for case_id in case_ids:
        cells = []
        for column in model["columns"]:
            d = trends.get((case_id, column["key"]))
            if d is None:
                cells.append('<td class="dim">–</td>')
                continue
            slower = '<span class="slower">slower</span>' if d["runs"] > 1 and d["last_s"] > 1.5 * d["mean_s"] else ""
            tip = (f'{d["runs"]} runs · mean {d["mean_s"]:.3f} s · min {d["min_s"]:.3f} s · '
                   f'max {d["max_s"]:.3f} s · ' + ", ".join(f"{t} {s:.3f} s" for t, s in d["series"]))
            cells.append(f'<td class="trend" data-column="{esc(column["key"])}" title="{esc(tip)}">'
                         f'{sparkline(d["series"])}<span class="trend-text">last {d["last_s"]:.3f} s{slower}'
                         f'<br>mean {d["mean_s"]:.3f} s · {d["runs"]} runs</span></td>')
        rows.append(f'<tr><td class="mono">{anchors.link(case_id)}</td>{"".join(cells)}</tr>')
    body = (f'<table class="data" id="durations-table"><thead><tr><th>case</th>{head}</tr></thead>'
            f'<tbody>{"".join(rows)}</tbody></table>' if rows else '<p class="note">No durations recorded.</p>')
    return (f'<section class="block" id="durations"><h2>Duration trends</h2><p class="note">Seconds per case run, '
            f'oldest to newest run of each broker version (hover for the series).</p>{body}</section>')


def render_case_index(model: dict, anchors: Anchors) -> str:
    verdicts = {(c["case_id"], c["column"]): c["verdict"] for c in model["cells"]}
    head = "".join(f'<th>{column_label(c)}</th>' for c in model["columns"])
    rows = []
    for case in sorted(model["cases"], key=lambda c: (section_sort_key(c["section"]), c["id"])):
        chips = "".join(
            f'<td>{verdict_badge(verdicts[(case["id"], c["key"])])}</td>' if (case["id"], c["key"]) in verdicts
            else '<td><span class="dim">not run</span></td>' for c in model["columns"])
        rows.append(f'<tr><td class="mono">{anchors.link(case["id"])}</td><td>{esc(case["title"])}</td>'
                    f'<td>{level_badge(case["level"])}</td>{chips}</tr>')
    return (f'<section class="block" id="cases"><h2>All cases</h2><table class="data" id="cases-table"><thead><tr>'
            f'<th>case</th><th>title</th><th>level</th>{head}</tr></thead><tbody>{"".join(rows)}</tbody></table>'
            f'</section>')


def render_case_page(case: dict, model: dict, anchors: Anchors, requirements: dict, cells: dict) -> str:
    quoted = []
    by_model = [r for r in case["model_requirement_ids"] if r in requirements]
    for requirement_id in case["requirement_ids"]:
        r = requirements.get(requirement_id)
        if r is None or requirement_id in by_model:
            continue
        quoted.append(f'<blockquote class="requirement"><div class="req-head"><code>{esc(r["id"])}</code>'
                      f'{level_badge(r["level"])} § {esc(r["section"])} · Part {esc(r["part"])}</div>'
                      f'<div class="req-text">{spec_text(r["text"])}</div></blockquote>')
    results = []
    for column in model["columns"]:
        cell = cells.get((case["id"], column["key"]))
        if cell is None:
            results.append(f'<article class="result not-run" data-column="{esc(column["key"])}"><header>'
                           f'<span class="column-name">{esc(column["key"])}</span>{verdict_badge("not-run", "not run")}'
                           f'</header></article>')
            continue
        facts = [f'run {esc(cell["run_id"])}', f'{cell["duration_s"]:.3f} s']
        flaky = (f'<span class="badge kind-regression">flaky</span> {counts_html(cell["verdict_counts"])}'
                 if cell["flaky"] else "")
        violated = (f'<div class="facts">Violated: <code>{esc(cell["violated"])}</code></div>'
                    if cell["violated"] else "")
        others = cell["findings"][1:] if cell["violated"] else cell["findings"]
        also = ('<div class="facts">Also found:<ul class="findings">'          # after the ladder: the deciding
                + "".join(f"<li>{esc(line)}</li>" for line in others) + "</ul></div>") if others else ""  # one first
        ladder = ""
        if cell["ladder"]:
            is_open = " open" if cell["verdict"] in BROKEN + (Verdict.ERROR.value,) else ""
            ladder = (f'<details{is_open}><summary>Transcript (ladder diagram)</summary>'
                      f'<pre class="ladder">{esc(cell["ladder"])}</pre></details>')
        results.append(f'<article class="result" data-column="{esc(column["key"])}"><header>'
                       f'<span class="column-name">{esc(column["key"])}</span>{verdict_badge(cell["verdict"])}'
                       f'<span class="facts">{" · ".join(facts)}</span>{flaky}</header>'
                       f'<div class="reason">{esc(cell["reason"])}</div>{violated}{ladder}{also}</article>')
    model_line = (f'<p class="note model-judged">Also judged by the flow-control model over the whole exchange: '
                  + ", ".join(f"<code>{esc(r)}</code>" for r in by_model) + "</p>") if by_model else ""
    return (f'<section class="case-page" id="{esc(anchors[case["id"]])}" data-case="{esc(case["id"])}">'
            f'<div class="page"><a class="back" href="#matrix">← Back to the matrix</a>'
            f'<h2><span class="case-id">{esc(case["id"])}</span>{esc(case["title"])}</h2>'
            f'<p class="note">Section {esc(case["section"])} · level {level_badge(case["level"])}</p>'
            f'<h3>Requirements checked</h3>{"".join(quoted) or "<p class=note>none listed</p>"}{model_line}'
            f'<h3>Results per broker version</h3>{"".join(results)}</div></section>')


def render_selfcheck(model: dict, anchors: Anchors) -> str:
    """The sensitivity matrices of selfcheck runs: which cases each injected fault flipped."""
    checks = model.get("selfcheck") or []
    if not checks:
        return ""
    known = set(anchors.ids) if hasattr(anchors, "ids") else None
    parts = []
    for check in checks:
        rows = []
        for fault in check["faults"]:
            flips = " ".join((anchors.link(f["case_id"]) if known is None or f["case_id"] in known
                              else esc(f["case_id"])) + " " + verdict_badge(f["to"]) for f in fault["flipped"])
            caught = verdict_badge(Verdict.PASS, "caught") if fault["detected"] else \
                verdict_badge(Verdict.FAIL, "missed")
            rows.append(f'<tr><td class="mono">{esc(fault["name"])}</td><td class="mono">'
                        f'{esc(fault["requirement"] or "")}</td><td>{level_badge(fault["level"] or "")}</td>'
                        f'<td>{caught}</td><td>{flips or "–"}</td></tr>')
        transparent = "no verdict changed" if check["transparent"] else "verdicts changed"
        parts.append(f'<h3>{esc(check["column"])} <span class="note">run {esc(check["run_id"])}, '
                     f'{check["cases"]} cases; proxy without fault: {transparent}</span></h3>'
                     '<table class="data selfcheck"><thead><tr><th>fault</th><th>breaks</th><th>level</th>'
                     f'<th>caught?</th><th>cases that flipped (verdict under the fault)</th></tr></thead>'
                     f'<tbody>{"".join(rows)}</tbody></table>')
    return ('<section class="block" id="selfcheck"><h2>Selfcheck: faults injected by the fault-injecting proxy</h2>'
            '<p class="note">Each fault breaks one requirement on the wire between the suite and a real broker; '
            'a good suite flips at least one case for every fault.</p>' + "".join(parts) + "</section>")


def render_html(model: dict) -> str:
    """The whole report as one self-contained HTML document; a malformed model raises ValueError first."""
    validate_model(model)
    anchors = Anchors(c["id"] for c in model["cases"])
    columns = {c["key"]: c for c in model["columns"]}
    requirements = {r["id"]: r for r in model["requirements"]}
    cells = {(c["case_id"], c["column"]): c for c in model["cells"]}
    case_pages = "".join(render_case_page(case, model, anchors, requirements, cells) for case in model["cases"])
    return ("<!DOCTYPE html>\n"
            '<html lang="en"><head><meta charset="utf-8">'
            '<meta name="viewport" content="width=device-width, initial-scale=1">'
            "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; "
            "img-src data:\">"
            f'<title>AMQP 1.0 flow-control conformance · {esc(model["generated_at"])}</title>'
            f'<style>{render_css()}</style></head><body>'
            + render_header(model)
            + '<main id="report">'
            + render_unfinished(model)
            + render_summary_cards(model)
            + render_matrix(model, anchors)
            + render_client_matrix(model)
            + render_chart(model)
            + render_scores(model)
            + render_changes(model, anchors, columns)
            + render_flaky(model, anchors)
            + render_producers_html(model)
            + render_durations(model, anchors)
            + render_selfcheck(model, anchors)
            + render_traffic_html(model)
            + render_case_index(model, anchors)
            + "</main>"
            + f'<div id="case-pages">{case_pages}</div>'
            + "</body></html>\n")


def render_unfinished(model: dict) -> str:
    """A visible warning for runs that never finished (interrupted or killed): their cells are marked."""
    runs = model.get("unfinished_runs") or []
    if not runs:
        return ""
    items = []
    for r in runs:
        counted = (f'{r["records"]} of {r["scheduled"]} cases recorded' if r.get("scheduled") is not None
                   else f'{r.get("records", "?")} cases recorded')
        items.append(f'<li>{"broken " if r.get("broken") else ""}run <code>{esc(r["run_id"])}</code> ({esc(", ".join(r["brokers"]))}), started '
                     f'{esc(r["started_at"])}: {esc(counted)}; {esc(r["reason"])}</li>')
    title = "Unfinished or broken runs" if any(r.get("broken") for r in runs) else "Unfinished runs"
    return (f'<section class="block unfinished" id="unfinished"><h2>&#9888; {title}</h2>'
            '<p class="note">These runs never finished, or broke (cases ended in error): the verdicts of the cases '
            f'they recorded stand, but they are not whole runs.</p><ul>{"".join(items)}</ul></section>')
