"""The report's side pages: everything beyond the first screen, written as files beside report.html.

Layout of `report.files/` (keys are the page addresses report.html uses: `#finding/<id>`, `#case/<slug>:<column>`):

    finding/<id>.js     a finding group (conformance.report.findings): the sentence, what the peer did, the frames,
    finding/<id>.html   the command that reproduces it, where it changes (and the bisect), every release; the .html
                        is the same page standalone (inline style and transcripts, no script) to forward or attach
    case/<slug>.js      a case: its requirements quoted, its result on every release (transcripts on demand)
    cell/<slug>.js      a requirement: on every release its verdict, the deciding case(s) and every case behind it
    ladder/<case>/<column>.js   one transcript (ladder diagram)
    durations.js        duration trends per case and release
    cases.js            every case with its verdict on every release

A `.js` file is `AMQPReport.page(key, html)` (JSONP): report.html's script loads it with a `<script src>`,
the one way a page opened from file:// reads a file beside it (static/report.js says why). Standard library
only; every text from the model is escaped as on the first screen.
"""

from __future__ import annotations

import json
from collections import defaultdict
from typing import Iterator

from ..verdict import BROKEN, Verdict
from .findings import UNNAMED, change_text, count_text, ranges_text, verb
from .htmlkit import (SIDE_DIR, Names, counts_html, esc, expectation_badge, level_badge, render_css,
                      section_sort_key, series_title, spec_text, verdict_badge)
from .labels import CLIENT, SUBJECT_TITLE, sections, series_of, series_runs, subject_of, when

STANDALONE_CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:"
# report.html as a standalone side page (report.files/finding/<id>.html) links to it: two folders up
REPORT_FROM_SIDE_PAGE = "/".join([".."] * 2 + ["report.html"])


def jsonp(key: str, fragment: str) -> str:
    """A side file's text: the call that hands `fragment` to report.html's viewer."""
    return f"AMQPReport.page({json.dumps(key)}, {json.dumps(fragment)});\n"


def standalone(title: str, fragment: str, back: str) -> str:
    """A side page as a document of its own (inline style, no script): to forward, attach or print."""
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            '<meta name="viewport" content="width=device-width, initial-scale=1">'
            f'<meta http-equiv="Content-Security-Policy" content="{STANDALONE_CSP}">'
            f"<title>{esc(title)}</title><style>{render_css()}</style></head><body class=\"standalone\">"
            f'<div class="side-bar"><a class="back" href="{esc(back)}">← The whole report</a></div>'
            f'<div class="side-body">{fragment}</div></body></html>\n')


def _ladder_html(text: str | None) -> str:
    return f'<pre class="ladder">{esc(text)}</pre>' if text else '<p class="note">No transcript was kept.</p>'


def _lazy_ladder(names: Names, cell: dict, is_open: bool, inline: bool) -> str:
    """A transcript: inline (standalone pages), or a details element report.html's script fills on opening."""
    if not cell.get("ladder"):
        return ""
    opened = " open" if is_open else ""
    if inline:
        return (f'<details class="transcript"{opened}><summary>Transcript (ladder diagram)</summary>'
                f'{_ladder_html(cell.get("ladder"))}</details>')
    key = names.ladder_key(cell["case_id"], cell["column"])
    return (f'<details class="transcript" data-ladder="{esc(key)}"{opened}><summary>Transcript (ladder diagram)'
            f'</summary><div class="ladder-body"><p class="note">Loading …</p></div></details>')


def _quote(requirement: dict | None, requirement_id: str) -> str:
    if requirement is None:
        return f'<p class="note">Requirement <code>{esc(requirement_id)}</code> is not in the catalogue.</p>'
    return (f'<blockquote class="requirement"><div class="req-head"><code>{esc(requirement["id"])}</code>'
            f'{level_badge(requirement["level"])} § {esc(requirement["section"])} · {esc(requirement["part"])}'
            f'</div><div class="req-text">{spec_text(requirement["text"])}</div></blockquote>')


def _details_of(cell: dict) -> list[dict]:
    """The cell's findings as objects (requirement, level, verdict, reason, expected, actual, frame_index, ...),
    deciding first; from the findings' text lines for a model without them."""
    if cell.get("finding_details"):
        return cell["finding_details"]
    out = []
    for line in cell.get("findings") or []:
        head, _, reason = line.partition("): ")
        requirement, _, rest = head.partition(" (")
        level, _, verdict = rest.partition(", ")
        out.append({"requirement": requirement, "level": level, "verdict": verdict, "reason": reason})
    return out


def _finding_facts(finding: dict) -> str:
    rows = [("Requirement", f'<code>{esc(finding.get("requirement"))}</code> '
                            f'{level_badge(finding.get("level") or "")}')]
    for label, key in (("Expected", "expected"), ("Actual", "actual")):
        if finding.get(key):
            rows.append((label, f'<code class="wrap">{esc(finding[key])}</code>'))
    if finding.get("frame_index"):
        where = f'frame #{finding["frame_index"]}'
        if finding.get("connection") is not None:
            where += f' of connection {finding["connection"]}'
        rows.append(("Where", esc(where)))
    if finding.get("source"):
        rows.append(("Found by", esc({"case": "the case's own check", "model": "the flow-control model",
                                      "obligation": "an answer the spec obliges, never given"}.get(
                                          finding["source"], finding["source"]))))
    return ('<table class="facts-table">' + "".join(f"<tr><th>{k}</th><td>{v}</td></tr>" for k, v in rows)
            + "</table>")


def reproduce_command(case_id: str, column: dict) -> str:
    args = column.get("run_args") or (f'--client {column["broker"]}' if subject_of(column) == CLIENT
                                      else f'--broker {column["broker"]}')
    return f"amqp-conformance run {case_id} {args}"


def _bisect_html(group: dict, names: Names) -> str:
    b = group.get("bisect")
    first_change = group["changes"][0] if group["changes"] else None
    if b:
        steps = "".join(f'<tr><td>{esc(s.get("build"))}</td><td>{verdict_badge(s.get("verdict") or "")}</td>'
                        f'<td>{esc(s.get("source") or "")}</td></tr>' for s in b.get("steps") or [])
        commit = b.get("commit") or {}
        commit_html = ""
        if commit.get("hash"):
            commit_html = (f'<p>First commit with the new verdict: <code>{esc(commit["hash"])}</code> '
                           f'{esc(commit.get("subject") or "")}'
                           + (f' ({esc(commit["date"])})' if commit.get("date") else "")
                           + (f', first in {esc(commit["tag"])}' if commit.get("tag") else "") + "</p>")
        result = (f'the verdict changes between <b>{esc(b.get("before"))}</b> and <b>{esc(b.get("changed"))}</b>: '
                  f'{esc(b.get("verdict_before"))} → {esc(b.get("verdict_after"))} ({esc(b.get("kind"))})'
                  if b.get("changed") else f'no change found ({esc(b.get("note") or "")})')
        return (f'<h2>Bisected</h2><p>{esc(when(b.get("started_at")))}: <code>{esc(b.get("command") or "")}</code>'
                f' — {result}.</p>{commit_html}'
                + (f'<table class="data"><thead><tr><th>build</th><th>verdict</th><th>from</th></tr></thead>'
                   f'<tbody>{steps}</tbody></table>' if steps else ""))
    if first_change is None:
        return ""
    column = names.columns[group["columns"][0]]
    series = column.get("bisect_series")
    if not series:
        return ""
    return (f'<h2>Where it changes</h2><p>Not bisected yet. Find the first build that changes it (releases first; '
            f'docs/history.md, bisect):</p><pre class="command">amqp-conformance bisect {esc(group["case_id"])} '
            f'--series {esc(series)}</pre>')


def finding_page(group: dict, model: dict, names: Names, requirements: dict, inline: bool) -> str:
    """One finding group's page (the fragment both the .js and the standalone .html hold)."""
    case = next((c for c in model["cases"] if c["id"] == group["case_id"]), {"title": group["case_id"]})
    cells = names.cells
    newest = cells[group["case_id"], group["latest"]]
    column = names.columns[group["latest"]]
    subject = group["subject"]
    peer = "library" if subject == CLIENT else "broker"
    changes = "; ".join(esc(change_text(ch, group, names.columns)) for ch in group["changes"])
    notes = "; ".join(n for n in [esc(count_text(group)), changes] if n)
    lead = (f'{level_badge(group["level"])} <b>{esc(verb(group["verdict"]))}</b> on '
            f'<b>{esc(ranges_text(group, names.columns))}</b>' + (f" ({notes})" if notes else "") + ".")
    details = _details_of(newest)
    deciding = next((d for d in details if d.get("requirement") == group["requirement_id"]), details[0] if details
                    else {"requirement": group["requirement_id"], "level": group["level"]})
    others = [d for d in details if d is not deciding]
    others_html = ("<h3>Also found on this release</h3><ul class=\"findings\">"
                   + "".join(f'<li><code>{esc(d.get("requirement"))}</code> ({esc(d.get("level"))}, '
                             f'{esc(d.get("verdict"))}): {esc(d.get("reason"))}</li>' for d in others)
                   + "</ul>") if others else ""
    bug = newest.get("bug_report")
    bug_html = ""
    if bug:
        bug_html = (f'<h2>Bug report, ready to file</h2><p class="note">Written by the run for the library\'s issue '
                    f'tracker' + (f' (<code>{esc(newest.get("bug_report_path"))}</code>)' if newest.get(
                        "bug_report_path") else "") + f'; paste it as it is.</p><pre class="bug-report">{esc(bug)}</pre>')
    ran = [c for c in model["columns"] if series_of(c) == group["series"] and subject_of(c) == subject
           and (group["case_id"], c["key"]) in cells]
    releases = []
    for col in ran:
        cell = cells[group["case_id"], col["key"]]
        holds = col["key"] in group["columns"]
        at = names.col[col["key"]]
        summary = (f'<span class="release-name">{esc(names.label[col["key"]])}</span>{verdict_badge(cell["verdict"])}'
                   f'{expectation_badge(cell)}<span class="facts">{esc(cell["violated"] or "")}</span>')
        inner = (f'<div class="reason">{esc(cell["reason"])}</div><div class="facts">run {esc(cell["run_id"])} · '
                 f'{esc(when(_cell_time(cell, col)))} · {cell["duration_s"]:.3f} s</div>'
                 + (_lazy_ladder(names, cell, False, inline) if holds else ""))
        releases.append(f'<details class="release-detail{" holds" if holds else ""}" id="at-{esc(at)}">'
                        f'<summary>{summary}</summary>{inner}</details>')
    back = f"{REPORT_FROM_SIDE_PAGE}#finding/{group['id']}"
    standalone_link = (f'<p class="note">To forward or attach: <a href="{esc(SIDE_DIR)}/finding/{esc(group["id"])}.html" '
                       f'target="_blank" rel="noopener">this page as a file of its own</a> '
                       f'(<code>{esc(SIDE_DIR)}/finding/{esc(group["id"])}.html</code>).</p>') if not inline else (
        f'<p class="note">From the report at <a href="{esc(back)}">report.html</a>, generated '
        f'{esc(when(model["generated_at"]))}, suite {esc(model["suite_version"])}.</p>')
    return (f'<article class="side-page finding-page" data-finding="{esc(group["id"])}">'
            f'<p class="crumbs">{esc(SUBJECT_TITLE[subject])} · {series_title([column])} · finding</p>'
            f'<h1><span class="case-id">{esc(group["case_id"])}</span>{esc(case["title"])}</h1>'
            f'<p class="lead">{lead}</p>{expectation_badge(newest)}'
            f'<h2>The requirement</h2>'
            + (_quote(requirements.get(group["requirement_id"]), group["requirement_id"])
               if group["requirement_id"] != UNNAMED else '<p class="note">The record names no requirement.</p>')
            + f'<h2>What the {peer} did</h2><p class="note">On {esc(names.label[group["latest"]])}, its latest run '
              f'({esc(when(_cell_time(newest, column)))}, run {esc(newest["run_id"])}):</p>'
            f'<p class="reason">{esc(newest["reason"])}</p>{_finding_facts(deciding)}{others_html}'
            f'<h2>The frames</h2>{_lazy_ladder(names, newest, True, inline) or "<p class=note>No transcript was kept.</p>"}'
            f'<h2>Reproduce</h2><pre class="command">{esc(reproduce_command(group["case_id"], column))}</pre>'
            f'<p class="note">Any release of the range: the same command with its {"--client" if subject == CLIENT else "--broker"} '
            f'label; every case of this release: leave out the case id.</p>'
            + _bisect_html(group, names) + bug_html
            + f'<h2>Every release run</h2>{"".join(releases)}'
            + (f'<p><a href="#{esc(names.case.page(group["case_id"]))}">The case on every {peer} and library</a></p>'
               if not inline else "")
            + standalone_link + "</article>")


def _cell_time(cell: dict, column: dict) -> str:
    return cell.get("started_at") or column.get("last_run_at") or ""


def case_page(case: dict, model: dict, names: Names, requirements: dict) -> str:
    quoted = "".join(_quote(requirements.get(rid), rid) for rid in case["requirement_ids"]
                     if rid not in case.get("model_requirement_ids", []))
    by_model = [r for r in case.get("model_requirement_ids", []) if r in requirements]
    model_line = (f'<p class="note">Also judged by the flow-control model over the whole exchange: '
                  + ", ".join(f"<code>{esc(r)}</code>" for r in by_model) + "</p>") if by_model else ""
    parts = []
    for subject, columns in sections(model):
        results = []
        for column in columns:
            cell = names.cells.get((case["id"], column["key"]))
            if cell is None:
                continue
            at = names.col[column["key"]]
            group = names.group_of.get((case["id"], column["key"]))
            flaky = (f' <span class="badge kind-regression">flaky</span> {counts_html(cell["verdict_counts"])}'
                     if cell["flaky"] else "")
            violated = (f'<div class="facts">Violated: <code>{esc(cell["violated"])}</code>'
                        + (f' · {names.finding_link(group, "the finding across releases")}' if group else "")
                        + "</div>") if cell["violated"] else ""
            others = cell["findings"][1:] if cell["violated"] else cell["findings"]
            also = ('<div class="facts">Also found:<ul class="findings">'
                    + "".join(f"<li>{esc(line)}</li>" for line in others) + "</ul></div>") if others else ""
            is_open = cell["verdict"] in BROKEN + (Verdict.ERROR.value,)
            results.append(
                f'<article class="result" id="at-{esc(at)}" data-column="{esc(column["key"])}"><header>'
                f'<span class="column-name">{esc(names.label[column["key"]])}</span>{verdict_badge(cell["verdict"])}'
                f'{expectation_badge(cell)}<span class="facts">run {esc(cell["run_id"])} · '
                f'{esc(when(_cell_time(cell, column)))} · {cell["duration_s"]:.3f} s</span>{flaky}</header>'
                f'<div class="reason">{esc(cell["reason"])}</div>{violated}'
                f'{_lazy_ladder(names, cell, is_open, False)}{also}</article>')
        if results:
            parts.append(f'<h2>{esc(SUBJECT_TITLE[subject])}</h2>{"".join(results)}')
    return (f'<article class="side-page case-page" data-case="{esc(case["id"])}"><p class="crumbs">case · section '
            f'{esc(case["section"])} · level {level_badge(case["level"])}</p>'
            f'<h1><span class="case-id">{esc(case["id"])}</span>{esc(case["title"])}</h1>'
            f'<h2>Requirements checked</h2>{quoted or "<p class=note>none listed</p>"}{model_line}'
            + ("".join(parts) or '<p class="note">Not run on any release in the history.</p>') + "</article>")


def cell_page(requirement: dict, model: dict, names: Names) -> str:
    """A requirement on every release: its verdict, the deciding case(s), and every case that judged it."""
    by_cell = {(c["requirement_id"], c["column"]): c for c in model["requirement_cells"]}
    parts = []
    for subject, columns in sections(model):
        rows = []
        for column in columns:
            rc = by_cell.get((requirement["id"], column["key"]))
            if rc is None:
                continue
            at = names.col[column["key"]]
            decided = names.deciding.get((requirement["id"], column["key"]), [])
            behind = []
            for cid in rc["case_ids"]:
                cell = names.cells.get((cid, column["key"]))
                verdict = cell["verdict"] if cell else "not-run"
                counted = cell is not None and (verdict not in BROKEN or not cell["violated"]
                                                or cell["violated"] == requirement["id"])
                group = names.group_of.get((cid, column["key"]))
                link = (names.finding_link(group, cid, at=at) if group and cell and cell["violated"] ==
                        requirement["id"] else names.case.link(cid, at=at))
                note = "" if counted else (f' <span class="dim">(stopped at {esc(cell["violated"])}: judges '
                                           f'that one)</span>' if cell else "")
                behind.append(f'<li class="{"deciding" if cid in decided else ""}">{link} '
                              f'{verdict_badge(verdict)}{note}</li>')
            rows.append(f'<tr id="at-{esc(at)}"><th>{esc(names.label[column["key"]])}</th>'
                        f'<td>{verdict_badge(rc["verdict"])}</td>'
                        f'<td class="mono">{esc(", ".join(decided) or "–")}</td>'
                        f'<td><ul class="behind">{"".join(behind)}</ul></td></tr>')
        if rows:
            parts.append(f'<h2>{esc(SUBJECT_TITLE[subject])}</h2><table class="data cell-table"><thead><tr>'
                         f'<th>release</th><th>verdict</th><th>decided by</th><th>every case that judged it</th>'
                         f'</tr></thead><tbody>{"".join(rows)}</tbody></table>')
    return (f'<article class="side-page cell-page" data-requirement="{esc(requirement["id"])}">'
            f'<p class="crumbs">requirement · § {esc(requirement["section"])}</p>'
            f'<h1><span class="case-id">{esc(requirement["id"])}</span></h1>{_quote(requirement, requirement["id"])}'
            + ("".join(parts) or '<p class="note">No case judged it on any release.</p>') + "</article>")


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


def durations_page(model: dict, names: Names) -> str:
    trends = {(d["case_id"], d["column"]): d for d in model["durations"]}
    parts = []
    for subject, columns in sections(model):
        keys = {c["key"] for c in columns}
        case_ids = sorted({d["case_id"] for d in model["durations"] if d["column"] in keys},
                          key=lambda cid: (section_sort_key(cid.split("/")[0]), cid))
        head = "".join(f'<th>{esc(names.label[c["key"]])}</th>' for c in columns)
        rows = []
        for case_id in case_ids:
            cells = []
            for column in columns:
                d = trends.get((case_id, column["key"]))
                if d is None:
                    cells.append('<td class="dim">–</td>')
                    continue
                slower = ('<span class="slower">slower</span>' if d["runs"] > 1 and d["last_s"] > 1.5 * d["mean_s"]
                          else "")
                tip = (f'{d["runs"]} runs · mean {d["mean_s"]:.3f} s · min {d["min_s"]:.3f} s · max {d["max_s"]:.3f} s'
                       " · " + ", ".join(f"{t} {s:.3f} s" for t, s in d["series"]))
                cells.append(f'<td class="trend" data-column="{esc(column["key"])}" title="{esc(tip)}">'
                             f'{sparkline(d["series"])}<span class="trend-text">last {d["last_s"]:.3f} s{slower}'
                             f'<br>mean {d["mean_s"]:.3f} s · {d["runs"]} runs</span></td>')
            rows.append(f'<tr><td class="mono">{names.case.link(case_id)}</td>{"".join(cells)}</tr>')
        if rows:
            parts.append(f'<h2>{esc(SUBJECT_TITLE[subject])}</h2><div class="wide"><table class="data durations">'
                         f'<thead><tr><th>case</th>{head}</tr></thead><tbody>{"".join(rows)}</tbody></table></div>')
    return ('<article class="side-page durations-page"><h1>Duration trends</h1><p class="note">Seconds per case run, '
            'a point per day with runs (the last 30), oldest first; hover for the series.</p>'
            + ("".join(parts) or '<p class="note">No durations recorded.</p>') + "</article>")


def cases_page(model: dict, names: Names) -> str:
    parts = []
    for subject, columns in sections(model):
        keys = {c["key"] for c in columns}
        run_here = {c["case_id"] for c in model["cells"] if c["column"] in keys}
        head = "".join(f'<th title="{esc(names.label[c["key"]])}">{esc(c["version"])}</th>' for c in columns)
        top = "".join(f'<th colspan="{len(m)}">{series_title(m)}</th>' for _, m in series_runs(columns))
        rows = []
        for case in sorted((c for c in model["cases"] if c["id"] in run_here),
                           key=lambda c: (section_sort_key(c["section"]), c["id"])):
            chips = "".join(
                f'<td>{verdict_badge(names.cells[case["id"], c["key"]]["verdict"])}</td>'
                if (case["id"], c["key"]) in names.cells else '<td><span class="dim">–</span></td>' for c in columns)
            rows.append(f'<tr><td class="mono">{names.case.link(case["id"])}</td><td>{esc(case["title"])}</td>'
                        f'<td>{level_badge(case["level"])}</td>{chips}</tr>')
        if rows:
            parts.append(f'<h2>{esc(SUBJECT_TITLE[subject])}</h2><div class="wide"><table class="data cases-table">'
                         f'<thead><tr><th rowspan="2">case</th><th rowspan="2">title</th><th rowspan="2">level</th>'
                         f'{top}</tr><tr>{head}</tr></thead><tbody>{"".join(rows)}</tbody></table></div>')
    return ('<article class="side-page cases-page"><h1>All cases</h1>'
            + ("".join(parts) or '<p class="note">No case has run.</p>') + "</article>")


def side_files(model: dict, names: Names | None = None) -> Iterator[tuple[str, str]]:
    """(path under report.files/, text) of every side page of `model`."""
    names = names or Names(model)
    requirements = {r["id"]: r for r in model["requirements"]}
    for group in names.groups:
        key = f"finding/{group['id']}"
        yield f"{key}.js", jsonp(key, finding_page(group, model, names, requirements, inline=False))
        title = f"{group['case_id']} {group['requirement_id']} on {ranges_text(group, names.columns)}"
        yield f"{key}.html", standalone(title, finding_page(group, model, names, requirements, inline=True),
                                        back=f"{REPORT_FROM_SIDE_PAGE}#{key}")
    for case in model["cases"]:
        key = names.case.page(case["id"])
        yield f"{key}.js", jsonp(key, case_page(case, model, names, requirements))
    for requirement in model["requirements"]:
        key = names.cell.page(requirement["id"])
        yield f"{key}.js", jsonp(key, cell_page(requirement, model, names))
    for cell in model["cells"]:
        if cell.get("ladder"):
            key = names.ladder_key(cell["case_id"], cell["column"])
            yield f"{key}.js", jsonp(key, _ladder_html(cell["ladder"]))
    yield "durations.js", jsonp("durations", durations_page(model, names))
    yield "cases.js", jsonp("cases", cases_page(model, names))


def side_keys(model: dict) -> dict[str, list[str]]:
    """The side pages' keys by kind (for tests and tools)."""
    out: dict[str, list[str]] = defaultdict(list)
    for path, _ in side_files(model):
        kind = path.split("/")[0] if "/" in path else path.rsplit(".", 1)[0]
        out[kind].append(path)
    return dict(out)
