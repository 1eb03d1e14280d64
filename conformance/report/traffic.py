"""The report's traffic section: findings of judged traffic (`check --spark`), requirement x endpoint
product@version, with counts and the first finding's run, connection and frame.

It reads `model["traffic"]` (optional: a list of rows as `history.traffic.traffic_counts` makes them:
requirement_id, level, endpoint, findings, connections, runs, first{run_id, connection, frame_index, frame})
and renders nothing when there is none. Standard library only.
"""

from __future__ import annotations

import html


def _rows(model: dict) -> list[dict]:
    return list(model.get("traffic") or [])


def _where(row: dict) -> str:
    first = row.get("first") or {}
    return (f"run {first.get('run_id')} ({'traffic/' + str(first.get('run_id')) + '/findings.jsonl'}), "
            f"{first.get('connection')}, frame #{first.get('frame_index')} {first.get('frame')}")


def render_traffic_html(model: dict) -> str:
    rows = _rows(model)
    if not rows:
        return ""
    esc = lambda v: html.escape(str(v), quote=True)   # noqa: E731
    body = "".join(
        f"<tr><td><code>{esc(r['requirement_id'])}</code></td><td>{esc(r['level'])}</td><td>{esc(r['endpoint'])}</td>"
        f"<td>{r['findings']}</td><td>{r['connections']}</td><td>{r['runs']}</td>"
        f"<td><small>{esc(_where(r))}</small></td></tr>" for r in rows)
    return ('<section id="traffic"><h2>Judged traffic</h2>'
            "<p>Findings in captured and observed traffic (<code>amqp-conformance check</code> / "
            "<code>observe</code>), by requirement and endpoint product@version.</p>"
            "<table><thead><tr><th>requirement</th><th>level</th><th>endpoint product@version</th><th>findings</th>"
            "<th>connections</th><th>runs</th><th>first finding</th></tr></thead><tbody>" + body + "</tbody></table>"
            "</section>")


def render_traffic_markdown(model: dict) -> list[str]:
    rows = _rows(model)
    if not rows:
        return []
    out = ["", "## Judged traffic", "", "| requirement | level | endpoint product@version | findings | connections "
           "| first finding |", "|---|---|---|---|---|---|"]
    out += [f"| `{r['requirement_id']}` | {r['level']} | {r['endpoint']} | {r['findings']} | {r['connections']} | "
            f"{_where(r).replace('|', '/')} |" for r in rows]
    return out
