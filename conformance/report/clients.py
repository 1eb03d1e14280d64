"""The client matrix of the report: requirements x client library releases, beside the broker matrix.

A column is a client's when the report model marks it `"subject": "client"` (history.analysis does, for the
labels of `conformance.clients`); without such columns nothing is rendered. Standard library only, like the
rest of the renderers.
"""

from __future__ import annotations

from html import escape

from ..verdict import Verdict

# Short cell labels where the full verdict name would not fit; a fail is shouted; the rest as they are named.
SHORT = {Verdict.INFORMATIONAL.value: "info", Verdict.UNSUPPORTED.value: "n/a", Verdict.FAIL.value: "FAIL"}


def render_client_matrix(model: dict) -> str:
    columns = [c for c in model.get("columns", []) if c.get("subject") == "client"]
    if not columns:
        return ""
    keys = {c["key"] for c in columns}
    cells = {(c["requirement_id"], c["column"]): c for c in model.get("requirement_cells", [])
             if c["column"] in keys}
    judged = [r for r in model.get("requirements", []) if any((r["id"], k) in cells for k in keys)]
    head = "".join(f'<th title="{escape(c["product"])} {escape(c["version"])}">{escape(c["broker"])}'
                   + (f'<br><span class="lang">{escape(c["language"])}</span>' if c.get("language") else "")
                   + '</th>' for c in columns)
    rows = []
    for r in judged:
        tds = []
        for c in columns:
            cell = cells.get((r["id"], c["key"]))
            if cell is None:
                tds.append('<td class="cell verdict-not-run"></td>')
                continue
            tip = f'{r["id"]} on {c["key"]}: {cell["verdict"]} ({", ".join(cell["case_ids"] or [])})'
            tds.append(f'<td class="cell verdict-{escape(cell["verdict"])}" title="{escape(tip)}">'
                       f'{escape(SHORT.get(cell["verdict"], cell["verdict"]))}</td>')
        rows.append(f'<tr><th class="req" scope="row" title="{escape(r["text"])}"><span class="mono">'
                    f'{escape(r["id"])}</span> <span class="level">{escape(r["level"])}</span></th>{"".join(tds)}</tr>')
    return (f'<section class="block" id="client-matrix-section"><h2>Requirements × client libraries</h2>'
            f'<p class="note">The suite played the broker and judged each client library\'s frames '
            f'(docs/clients.md), each column a library release with its language; a cell is the worst verdict of the client '
            f'cases that judged the requirement (n/a: the library\'s API offers no way to run the case).</p>'
            f'<div class="matrix-wrap"><table id="client-matrix"><thead><tr><th class="corner">Requirement · level'
            f'</th>{head}</tr></thead><tbody>{"".join(rows)}</tbody></table></div></section>')
