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


def rows_from_findings(findings: list[dict], run_id: str) -> list[dict]:
    """The rows `history.traffic.traffic_counts` makes, from one run's findings (no Spark)."""
    rows: dict[tuple, dict] = {}
    for f in findings:
        who = f"{f['endpoint']} {f.get('product') or 'unknown'}@{f.get('version') or 'unknown'}"
        key = (f["requirement_id"], f["level"], who)
        row = rows.setdefault(key, {"requirement_id": key[0], "level": key[1], "endpoint": who, "findings": 0,
                                    "connections": set(), "runs": 1,
                                    "first": {"run_id": run_id, "connection": f["connection"],
                                              "frame_index": f["frame_index"], "frame": f["frame"]}})
        row["findings"] += 1
        row["connections"].add(f["connection"])
    out = [dict(r, connections=len(r["connections"])) for r in rows.values()]
    return sorted(out, key=lambda d: (d["requirement_id"], d["endpoint"]))


def render_traffic_page(title: str, rows: list[dict], connections: list[dict]) -> str:
    """A traffic run's report.html: the findings table and the connections, one self-contained page."""
    esc = lambda v: html.escape(str(v), quote=True)   # noqa: E731
    conns = "".join(
        f"<tr><td>{esc(c['connection'])}</td><td>{esc(_who(c.get('client') or {}))}</td>"
        f"<td>{esc(_who(c.get('server') or {}))}</td><td>{c.get('frames', 0)}</td><td>{c.get('findings', 0)}</td>"
        f"<td>{'mid-stream' if c.get('mid_stream') else ''} {esc(c.get('stopped') or '')}"
        f"{esc('one-sided, not judged: ' + c['one_sided']) if c.get('one_sided') else ''}</td></tr>"
        for c in connections)
    section = render_traffic_html({"traffic": rows}) or '<section id="traffic"><h2>Judged traffic</h2><p>No findings.</p></section>'
    style = ("body{font:14px system-ui,sans-serif;margin:2em;color:#222}table{border-collapse:collapse;margin:1em 0}"
             "td,th{border:1px solid #bbb;padding:4px 8px;text-align:left}th{background:#e8eef7}"
             "tbody tr:nth-child(odd){background:#fafafa}h1{font-size:20px}code{color:#a01010}")
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">"
            f"<title>{esc(title)}</title><style>{style}</style></head><body><h1>{esc(title)}</h1>"
            + section + '<section id="connections"><h2>Connections</h2><table><thead><tr><th>connection</th>'
            "<th>client</th><th>server</th><th>frames</th><th>findings</th><th>notes</th></tr></thead><tbody>"
            + conns + "</tbody></table></section></body></html>\n")


def _who(ep: dict) -> str:
    return f"{ep.get('container_id') or 'unknown'} ({ep.get('product') or 'unknown'}@{ep.get('version') or 'unknown'})"
