"""The HTML compliance report's first screen (report.html), drawn from a report model.

This module owns the page a maintainer opens: the header, the runs that never finished, then one section for
the brokers and one for the client libraries, each with its scores per release series, its findings grouped
across releases (conformance.report.findings), its requirement x release matrix (a cell shows its verdict and
the case that decided it) and its regressions and fixes; then flaky cases, scores by level and section, and
the producer, selfcheck and traffic sections. Everything else -- a finding's page, a case's page, a
requirement's cells, transcripts, duration trends -- is a side file written beside the page
(conformance.report.pages) and loaded on demand by the page's own script (static/report.js), so the page stays
the size of its first screen whatever the history holds.

Everything is inline (CSS, script, SVG); the page and its side files never reach the network (a
Content-Security-Policy allows scripts from the page and its folder only, and no fetch). Every text from the
model is HTML-escaped; the only markup let through is `<sub>` in requirement sentences.
Model layout: `conformance.report.model`; the side-file layout: `conformance.report.pages`.
"""

from __future__ import annotations

from collections import Counter, defaultdict

from ..results import CHANGED, FIX, REGRESSION
from ..verdict import BROKEN, SHORT, Verdict
from ..verdict import JUDGED as JUDGED_VERDICTS
from .findings import MODEL, change_text, count_text, judged_how, ranges_text
from .htmlkit import (SIDE_DIR, VERDICT_MEANING, VERDICT_STYLE, _STATIC, Names, counts_html,  # noqa: F401
                      esc, expectation_badge, level_badge, percent, render_css, render_script, section_sort_key,
                      series_title, verdict_badge)
from .labels import (CLIENT, SUBJECT_NOUN, SUBJECT_TITLE, column_label, section_count, sections, series_label,
                     series_runs, when)
from .model import LEVELS, validate_model
from .producers import render_producers_html
from .traffic import render_traffic_html

# A matrix cell's label where the verdict's name would not fit its width (the legend names them in full).
CELL_LABEL = {v.value: SHORT[v.value] for v in (Verdict.INFORMATIONAL, Verdict.UNSUPPORTED)}
# How many deciding case ids a matrix cell shows before "+N" (the rest are on the cell's page).
CELL_CASES = 1
CSP = ("default-src 'none'; style-src 'unsafe-inline'; img-src data:; "
       "script-src 'unsafe-inline' 'self' file:")


# -- page parts ---------------------------------------------------------------------------------------------

def _counts(model: dict) -> dict[str, Counter]:
    counts: dict[str, Counter] = defaultdict(Counter)
    for cell in model["cells"]:
        counts[cell["column"]][cell["verdict"]] += 1
    return counts


def render_header(model: dict, names: Names) -> str:
    history = model["history"]
    last = max((c["last_run_at"] for c in model["columns"]), default="")
    parts = []
    for subject, columns in sections(model):
        must = sum(1 for members in finding_rows([g for g in names.groups if g["subject"] == subject])
                   if members[0]["verdict"] == Verdict.FAIL)
        parts.append(f'<a href="#{subject}s">{esc(SUBJECT_TITLE[subject])}</a>: {section_count(subject, columns)}, '
                     f'{must} MUST finding{"" if must == 1 else "s"}')
    glance = " · ".join(parts)
    nav = "".join(f'<a href="#{s}s">{esc(SUBJECT_TITLE[s])}</a>' for s, _ in sections(model))
    return (f'<header class="top" id="top"><h1>AMQP 1.0 flow-control conformance</h1>'
            f'<div class="meta">Generated {esc(when(model["generated_at"]))} · suite {esc(model["suite_version"])} · '
            f'{history["runs"]} runs, {history["records"]:,} case records'
            + (f' · latest run {esc(when(last))}' if last else "") + '</div>'
            + (f'<div class="glance">{glance}</div>' if glance else "") + '</header>'
            f'<nav class="toc">{nav}<a href="#flaky">Flaky cases</a><a href="#scores">Scores</a>'
            '<a href="#durations">Durations</a><a href="#cases">All cases</a></nav>'
            '<noscript><p class="noscript">The finding, case and transcript pages open with the page\'s own '
            'script (it reads files of the folder beside it, nothing else); with scripts off, the findings\' '
            f'standalone pages are in {SIDE_DIR}/finding/.</p></noscript>')


def render_legend() -> str:
    items = "".join(f'<span><span class="swatch verdict-{name}"></span><b>{esc(style[2] or "blank")}</b> '
                    f'{esc(VERDICT_MEANING[name])}</span>' for name, style in VERDICT_STYLE.items())
    return f'<div class="legend">{items}</div>'


def render_scoreboard(subject: str, columns: list[dict], model: dict, names: Names) -> str:
    """One row per release series: each release with its score (passed / judged) and its fails."""
    overall = {s["column"]: s for s in model["scores"]["overall"]}
    counts = _counts(model)
    rows = []
    for series, members in series_runs(columns):
        chips = []
        for column in members:
            score = overall.get(column["key"])
            judged = bool(score and score["judged"])
            value = percent(score["score"]) if judged else "–"
            width = round(score["score"] * 100) if judged else 0
            bad = counts[column["key"]]
            worst = " ".join(f'<span class="count verdict-{v}">{bad[v]} {v}</span>'
                             for v in (Verdict.FAIL.value, Verdict.NON_STRICT.value, Verdict.ERROR.value) if bad[v])
            detail = (f'{score["passed"]}/{score["judged"]} judged cases passed' if judged else "no judged cases")
            chips.append(f'<div class="release" data-column="{esc(column["key"])}" title="{esc(names.label[column["key"]])}: '
                         f'{esc(detail)}; {column["runs"]} runs, last {esc(when(column["last_run_at"]))}">'
                         f'<span class="version">{esc(column["version"])}</span><span class="score">{value}</span>'
                         f'<span class="scorebar"><span style="width:{width}%"></span></span>'
                         f'<span class="counts">{worst or "&nbsp;"}</span></div>')
        rows.append(f'<div class="series" data-series="{esc(series)}"><div class="series-name">'
                    f'{series_title(members)}</div><div class="releases">{"".join(chips)}</div></div>')
    return (f'<div class="scoreboard" id="{subject}-scores"><p class="note">Score = passed / judged cases of each '
            f'release (judged: {", ".join(JUDGED_VERDICTS)}); oldest release first.</p>{"".join(rows)}</div>')


def finding_rows(groups: list[dict]) -> list[list[dict]]:
    """The groups of one (case, requirement) together (one per series it holds on), in the groups' order."""
    rows: dict[tuple, list[dict]] = {}
    for g in groups:
        rows.setdefault((g["case_id"], g["requirement_id"]), []).append(g)
    return list(rows.values())


def render_findings(subject: str, model: dict, names: Names) -> str:
    """The findings of one subject: one row per case and the requirement it found broken, with a line per release
    series it holds on (the releases as ranges, where it changes, a link to the series' finding page); MUST
    first, then SHOULD."""
    rows_of = finding_rows([g for g in names.groups if g["subject"] == subject])
    titles = {c["id"]: c["title"] for c in model["cases"]}
    if not rows_of:
        return (f'<h3 id="{subject}-findings">Findings</h3><p class="note">No case failed on any '
                f'{SUBJECT_NOUN[subject][0]} release.</p>')
    rows = []
    for members in rows_of:
        first = members[0]
        lines = []
        for g in members:
            latest = names.cells.get((g["case_id"], g["latest"]))
            notes = [esc(n) for n in [count_text(g)] + [change_text(ch, g, names.columns) for ch in g["changes"]] if n]
            bisect = (f' <span class="bisected" title="{esc(_bisect_summary(g["bisect"]))}">bisected</span>'
                      if g["bisect"] else "")
            lines.append(f'<li>{names.finding_link(g["id"], ranges_text(g, names.columns))}'
                         + (f' <span class="dim">({"; ".join(notes)})</span>' if notes else "")
                         + f'{bisect}{expectation_badge(latest)}</li>')
        rows.append(
            f'<tr class="finding" data-finding="{esc(first["id"])}" data-level="{esc(first["level"])}">'
            f'<td>{level_badge(first["level"])}</td>'
            f'<td class="mono">{names.finding_link(first["id"], first["case_id"])}</td>'
            f'<td class="mono">{esc(first["requirement_id"])}</td>'
            f'<td><ul class="holds">{"".join(lines)}</ul></td>'
            f'<td class="title">{esc(titles.get(first["case_id"], ""))}</td></tr>')
    must = sum(1 for members in rows_of if members[0]["verdict"] == Verdict.FAIL)
    return (f'<h3 id="{subject}-findings">Findings: {must} MUST, {len(rows_of) - must} SHOULD</h3>'
            f'<p class="note">One row per case and the requirement it found broken; a line per release series with '
            f'the releases it holds for and where it changes. Click one for its page: the frames, the sentence, what '
            f'the peer did and the command that reproduces it.</p>'
            f'<table class="data findings" id="{subject}-findings-table"><thead><tr><th>level</th><th>case</th>'
            f'<th>requirement</th><th>holds for</th><th>case title</th></tr></thead>'
            f'<tbody>{"".join(rows)}</tbody></table>')


def _bisect_summary(b: dict) -> str:
    commit = b.get("commit") or {}
    first = b.get("changed") or "no change found"
    text = f'{b.get("verdict_before", "")} -> {b.get("verdict_after", "")} first at {first}'
    if commit.get("hash"):
        text += f' (commit {str(commit["hash"])[:12]})'
    return text


def render_matrix(subject: str, columns: list[dict], model: dict, names: Names) -> str:
    """Requirements x the subject's releases; a cell shows its verdict and the case(s) that decided it. A fail or
    non-strict cell opens its finding's page, any other its requirement's cells page."""
    by_cell = {(c["requirement_id"], c["column"]): c for c in model["requirement_cells"]}
    keys = {c["key"] for c in columns}
    judged_here = {rid for rid, col in by_cell if col in keys}
    requirements = [r for r in model["requirements"] if subject != CLIENT or r["id"] in judged_here]
    sections_of: dict[str, list[dict]] = defaultdict(list)
    for requirement in requirements:
        sections_of[requirement["section"]].append(requirement)

    runs = series_runs(columns)
    top = "".join(f'<th class="series-head" colspan="{len(members)}" data-series="{esc(series)}">'
                  f'{series_title(members)}</th>' for series, members in runs)
    starts = {members[0]["key"] for _, members in runs}
    head = "".join(f'<th class="broker-col{" series-start" if c["key"] in starts else ""}" '
                   f'data-column="{esc(c["key"])}" data-series="{esc(c.get("series") or c["broker"])}" '
                   f'title="{esc(names.label[c["key"]])} ({esc(c["key"])}): {c["runs"]} runs, last '
                   f'{esc(when(c["last_run_at"]))}">{esc(c["version"])}</th>' for c in columns)
    rows = []
    for section in sorted(sections_of, key=section_sort_key):
        part = sections_of[section][0]["part"]
        rows.append(f'<tr class="section-row"><th colspan="{len(columns) + 1}"><span class="sticky-label">'
                    f'{esc(section)}<span class="part">{esc(part)}</span></span></th></tr>')
        for requirement in sections_of[section]:
            tds = [_matrix_cell(requirement, column, by_cell.get((requirement["id"], column["key"])), names,
                                column["key"] in starts) for column in columns]
            rows.append(f'<tr class="req-row" data-requirement="{esc(requirement["id"])}">'
                        f'<th class="req" scope="row" title="{esc(requirement["text"])}">'
                        f'<a class="req-id mono" href="#{esc(names.cell.page(requirement["id"]))}">'
                        f'{esc(requirement["id"])}</a>{level_badge(requirement["level"])}</th>{"".join(tds)}</tr>')
    what = "client library" if subject == CLIENT else "broker"
    return (f'<h3 id="{subject}-matrix-title">Requirements × {what} releases</h3>'
            f'<p class="note">A cell is the worst verdict of the cases that judged the requirement in the latest run '
            f'of that release, and the case that decided it (a failing case judges only the requirement it names '
            f'as violated). Click a cell: a failure opens its finding, any other cell every case behind it.</p>'
            f'{render_legend()}<div class="matrix-wrap"><table class="matrix" id="{subject}-matrix"><thead>'
            f'<tr class="series-row"><th class="corner" rowspan="2">Requirement · level</th>{top}</tr>'
            f'<tr class="version-row">{head}</tr></thead><tbody>{"".join(rows)}</tbody></table></div>')


def _matrix_cell(requirement: dict, column: dict, cell: dict | None, names: Names, series_start: bool) -> str:
    start = " series-start" if series_start else ""
    where = f'{requirement["id"]} on {names.label[column["key"]]}'
    if cell is None:
        return f'<td class="cell verdict-not-run{start}" title="{esc(where)}: not judged"></td>'
    verdict = cell["verdict"]
    decided = names.deciding.get((requirement["id"], column["key"]), [])
    at = names.col[column["key"]]
    group = next((names.group_of[cid, column["key"]] for cid in decided if (cid, column["key"]) in names.group_of),
                 None)
    target = (f"#finding/{group}:{at}" if group and verdict in BROKEN
              else f"#{names.cell.page(requirement['id'], at)}")
    case_of = names.case_of
    if len(decided) > 1 and judged_how(case_of.get(decided[0]), requirement["id"]) == MODEL:
        cases = f"{len(decided)} cases"          # only the flow-control model judged it, in each of them
    else:
        shown = decided[:CELL_CASES]
        more = len(decided) - len(shown)
        cases = " ".join(esc(cid) for cid in shown) + (f" +{more}" if more > 0 else "")
    behind = cell["case_ids"]
    tip = (f'{where}: {verdict}, decided by {", ".join(decided) or "no case"}'
           + (f' ({len(behind)} cases judged it)' if len(behind) > len(decided) else ""))
    marks = [names.cells.get((cid, column["key"])) for cid in decided]
    expect = next((expectation_badge(c) for c in marks if c and str(c.get("expectation", "")).startswith("unexpected")),
                  "") or (expectation_badge(marks[0]) if marks else "")
    return (f'<td class="cell verdict-{esc(verdict)}{start}" data-column="{esc(column["key"])}" title="{esc(tip)}">'
            f'<a class="cell-link" href="{esc(target)}"><span class="verdict-label">'
            f'{esc(CELL_LABEL.get(verdict, verdict))}</span><span class="deciding mono">{cases}</span>{expect}</a></td>')


def render_changes(subject: str, columns: list[dict], model: dict, names: Names) -> str:
    keys = {c["key"] for c in columns}
    changes = [c for c in model["changes"] if c["to_column"] in keys]
    order = {REGRESSION: 0, FIX: 1, CHANGED: 2}

    def sort_key(change: dict) -> tuple:
        return order.get(change["kind"], 3), section_sort_key(change["case_id"].split("/")[0]), change["case_id"]

    rows = []
    for change in sorted(changes, key=sort_key):
        kind = esc(change["kind"])
        group = names.group_of.get((change["case_id"], change["to_column"])) or \
            names.group_of.get((change["case_id"], change["from_column"]))
        case = (names.finding_link(group, change["case_id"]) if group else names.case.link(change["case_id"]))
        frm, to = names.columns.get(change["from_column"]), names.columns.get(change["to_column"])
        series = series_label(to) if to else change["broker"]
        rows.append(f'<tr class="change kind-row-{kind}"><td><span class="badge kind-{kind}">{kind}</span></td>'
                    f'<td class="mono">{case}</td><td>{esc(series)}</td>'
                    f'<td>{esc(frm["version"] if frm else change["from_column"])} → '
                    f'{esc(to["version"] if to else change["to_column"])}</td>'
                    f'<td>{verdict_badge(change["from_verdict"])} → {verdict_badge(change["to_verdict"])}</td></tr>')
    counts = Counter(c["kind"] for c in changes)
    body = (f'<table class="data changes" id="{subject}-changes-table"><thead><tr><th>kind</th><th>case</th>'
            f'<th>series</th><th>release</th><th>verdict</th></tr></thead><tbody>{"".join(rows)}</tbody></table>'
            if rows else '<p class="note">No verdict changed between consecutive releases.</p>')
    return (f'<h3 id="{subject}-changes">Regressions &amp; fixes</h3><p class="note">{counts[REGRESSION]} '
            f'regressions, {counts[FIX]} fixes, {counts[CHANGED]} other changes between consecutive releases of '
            f'each series.</p>{body}')


def render_subject(subject: str, columns: list[dict], model: dict, names: Names) -> str:
    intro = ("The suite played the broker and judged each library's frames (docs/clients.md)."
             if subject == CLIENT else "The suite's scripted peer judged each broker release.")
    return (f'<section class="block subject" id="{subject}s" data-subject="{subject}">'
            f'<h2>{esc(SUBJECT_TITLE[subject])} <span class="count-note">{section_count(subject, columns)}'
            f'</span></h2><p class="note">{intro}</p>'
            + render_scoreboard(subject, columns, model, names)
            + render_findings(subject, model, names)
            + render_matrix(subject, columns, model, names)
            + render_changes(subject, columns, model, names)
            + "</section>")


def render_flaky(model: dict, names: Names) -> str:
    rows = "".join(f'<tr><td class="mono">{names.case.link(f["case_id"], at=names.col[f["column"]])}</td>'
                   f'<td>{esc(names.label.get(f["column"], f["column"]))}</td>'
                   f'<td>{counts_html(f["verdict_counts"])}</td></tr>' for f in model["flaky"]
                   if f["column"] in names.col)
    body = (f'<table class="data" id="flaky-table"><thead><tr><th>case</th><th>release</th>'
            f'<th>verdicts over its runs</th></tr></thead><tbody>{rows}</tbody></table>'
            if rows else '<p class="note">No case gave different verdicts across runs of the same release.</p>')
    return (f'<section class="block" id="flaky"><h2>Flaky cases</h2><p class="note">Cases whose verdict differed '
            f'between runs of the same release.</p>{body}</section>')


def score_cell(score: dict | None) -> str:
    if not score or not score["judged"]:
        return '<td class="num dim">–</td>'
    width = round(score["score"] * 100)
    return (f'<td class="num"><span class="scorebar"><span style="width:{width}%"></span></span>'
            f'{percent(score["score"])} <span class="dim">({score["passed"]}/{score["judged"]})</span></td>')


def _score_head(columns: list[dict]) -> str:
    runs = series_runs(columns)
    top = "".join(f'<th colspan="{len(m)}" class="series-head">{series_title(m)}</th>' for _, m in runs)
    return (f'<tr><th rowspan="2"></th>{top}</tr><tr>'
            + "".join(f'<th title="{esc(column_label(c))}">{esc(c["version"])}</th>' for c in columns) + "</tr>")


def render_scores(model: dict) -> str:
    parts = []
    present_levels = {s["level"] for s in model["scores"]["by_level"]}
    levels = [lvl for lvl in LEVELS if lvl in present_levels]
    for subject, columns in sections(model):
        by_level = {(s["column"], s["level"]): s for s in model["scores"]["by_level"]}
        by_section = {(s["column"], s["section"]): s for s in model["scores"]["by_section"]}
        keys = {c["key"] for c in columns}
        secs = sorted({s["section"] for s in model["scores"]["by_section"] if s["column"] in keys},
                      key=section_sort_key)
        body = "".join(f'<tr><th>{esc(level)}</th>' + "".join(score_cell(by_level.get((c["key"], level)))
                                                               for c in columns) + "</tr>" for level in levels)
        body += "".join(f'<tr class="by-section"><th>§ {esc(section)}</th>'
                        + "".join(score_cell(by_section.get((c["key"], section))) for c in columns) + "</tr>"
                        for section in secs)
        parts.append(f'<h3>{esc(SUBJECT_TITLE[subject])}</h3><div class="wide"><table class="data scores" '
                     f'id="scores-{subject}"><thead>{_score_head(columns)}</thead><tbody>{body}</tbody></table></div>')
    return (f'<section class="block" id="scores"><h2>Scores by level and section</h2><p class="note">Score = passed / '
            f'judged; judged verdicts are {", ".join(JUDGED_VERDICTS)}. Informational, unsupported and error are '
            f'not judged.</p>{"".join(parts)}</section>')


def render_more() -> str:
    return ('<section class="block" id="more"><h2>More</h2><p class="note"><a href="#durations">Duration trends</a>: '
            'seconds per case run, oldest to newest run of each release. <a href="#cases">All cases</a>: every case '
            'with its verdict on every release.</p></section>')


def render_selfcheck(model: dict, names: Names) -> str:
    """The sensitivity matrices of selfcheck runs: which cases each injected fault flipped."""
    checks = model.get("selfcheck") or []
    if not checks:
        return ""
    parts = []
    for check in checks:
        rows = []
        for fault in check["faults"]:
            flips = " ".join((names.case.link(f["case_id"]) if f["case_id"] in names.case
                              else esc(f["case_id"])) + " " + verdict_badge(f["to"]) for f in fault["flipped"])
            caught = (verdict_badge(Verdict.PASS.value, "caught") if fault["detected"]
                      else verdict_badge(Verdict.FAIL.value, "missed"))
            rows.append(f'<tr><td class="mono">{esc(fault["name"])}</td><td class="mono">'
                        f'{esc(fault["requirement"] or "")}</td><td>{level_badge(fault["level"] or "")}</td>'
                        f'<td>{caught}</td><td>{flips or "–"}</td></tr>')
        transparent = "no verdict changed" if check["transparent"] else "verdicts changed"
        parts.append(f'<h3>{esc(names.label.get(check["column"], check["column"]))} <span class="note">run '
                     f'{esc(check["run_id"])}, '
                     f'{check["cases"]} cases; proxy without fault: {transparent}</span></h3>'
                     '<table class="data selfcheck"><thead><tr><th>fault</th><th>breaks</th><th>level</th>'
                     f'<th>caught?</th><th>cases that flipped (verdict under the fault)</th></tr></thead>'
                     f'<tbody>{"".join(rows)}</tbody></table>')
    return ('<section class="block" id="selfcheck"><h2>Selfcheck: faults injected by the fault-injecting proxy</h2>'
            '<p class="note">Each fault breaks one requirement on the wire between the suite and a real broker; '
            'a good suite flips at least one case for every fault.</p>' + "".join(parts) + "</section>")


def render_unfinished(model: dict) -> str:
    """A visible warning for runs that never finished (interrupted or killed) or broke: their cells are marked.
    The newest few are listed, the rest behind a summary."""
    runs = model.get("unfinished_runs") or []
    if not runs:
        return ""
    items = []
    for r in sorted(runs, key=lambda r: str(r.get("started_at") or ""), reverse=True):
        counted = (f'{r["records"]} of {r["scheduled"]} cases recorded' if r.get("scheduled") is not None
                   else f'{r.get("records", "?")} cases recorded')
        brokers = r["brokers"]
        shown = ", ".join(brokers) if len(brokers) <= 4 else f"{len(brokers)} brokers and libraries"
        items.append(f'<li>{"broken " if r.get("broken") else ""}run <code>{esc(r["run_id"])}</code> '
                     f'<span title="{esc(", ".join(brokers))}">({esc(shown)})</span>, started '
                     f'{esc(when(r["started_at"]))}: {esc(counted)}; {esc(r["reason"])}</li>')
    title = "Unfinished or broken runs" if any(r.get("broken") for r in runs) else "Unfinished runs"
    more = (f'<details><summary>{len(items) - 3} older</summary><ul>{"".join(items[3:])}</ul></details>'
            if len(items) > 3 else "")
    return (f'<section class="block unfinished" id="unfinished"><h2>&#9888; {title} ({len(runs)})</h2>'
            '<p class="note">These runs never finished, or broke (cases ended in error): the verdicts of the cases '
            f'they recorded stand, but they are not whole runs.</p><ul>{"".join(items[:3])}</ul>{more}</section>')


def render_page(model: dict, names: Names) -> str:
    """The first screen (the side pages are conformance.report.pages)."""
    body = "".join(render_subject(subject, columns, model, names) for subject, columns in sections(model))
    if not model["columns"]:
        body = '<section class="block"><p class="note">The history holds no runs yet.</p></section>'
    return ("<!DOCTYPE html>\n"
            f'<html lang="en" data-side-base="{SIDE_DIR}/"><head><meta charset="utf-8">'
            '<meta name="viewport" content="width=device-width, initial-scale=1">'
            f'<meta http-equiv="Content-Security-Policy" content="{CSP}">'
            f'<title>AMQP 1.0 flow-control conformance · {esc(when(model["generated_at"]))}</title>'
            f'<style>{render_css()}</style></head><body>'
            + render_header(model, names)
            + '<main id="report">'
            + render_unfinished(model)
            + body
            + render_flaky(model, names)
            + render_scores(model)
            + render_producers_html(model)
            + render_selfcheck(model, names)
            + render_traffic_html(model)
            + render_more()
            + "</main>"
            + '<div class="side-panel" id="side-panel" role="dialog" aria-modal="true" hidden><div class="side-bar">'
              '<a href="#top" data-close class="back">← Back to the report</a></div>'
              '<div class="side-body" id="side-body"></div></div>'
            + f"<script>{render_script()}</script>"
            + "</body></html>\n")


def render_html(model: dict) -> str:
    """The first screen of the report (report.html) as one HTML document; a malformed model raises ValueError
    first. Its side pages come from `conformance.report.pages.side_files` (`write_report` writes both)."""
    validate_model(model)
    return render_page(model, Names(model))


__all__ = ["render_html", "render_page", "Names", "Anchors", "VERDICT_STYLE", "esc", "slug"]
