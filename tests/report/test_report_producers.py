"""The report's "Producer flow control" section: one row per case and broker@version whose cell carries
producer facts (limit used, means, throttle point, in flight, resume point, lost), in HTML and Markdown."""

from __future__ import annotations

import copy

from conformance.report import render_html, render_markdown
from report_example import example_model
from conformance.report.producers import producer_rows

BROKER_J = {"limit": "10 messages", "means": "link-credit withdrawn", "drain": True, "error": None,
            "at_message": 12, "depth": 11, "budget": "2500 messages / 15 s", "in_flight": 110, "resumed": True,
            "resume_depth": 8, "accepted": 122, "lost": 0}
NOT_THROTTLED = {"limit": "10240 bytes", "means": "not throttled", "at_message": None, "depth": 1001,
                 "budget": "1001 messages / 15 s", "in_flight": None, "resumed": False, "resume_depth": None,
                 "accepted": 1001, "lost": 0}


def model_with_producers() -> dict:
    m = copy.deepcopy(example_model())
    m["cells"][0]["producer"] = BROKER_J
    m["cells"][1]["producer"] = NOT_THROTTLED | {"limit": "<b>x</b> | y"}
    return m


def test_rows_carry_the_facts():
    m = model_with_producers()
    rows = {r["column"] + r["case_id"]: r for r in producer_rows(m)}
    first = rows[m["cells"][0]["column"] + m["cells"][0]["case_id"]]
    assert (first["limit"], first["means"], first["point"], first["in_flight"], first["resume"], first["lost"]) == \
        ("10 messages", "link-credit withdrawn (drain)", "message 12, depth 11", "110", "depth 8", "0 of 122")
    second = rows[m["cells"][1]["column"] + m["cells"][1]["case_id"]]
    assert second["point"] == "not throttled within 1001 messages / 15 s" and second["resume"] == "not resumed"


def test_html_and_markdown_render_the_section_escaped():
    m = model_with_producers()
    page = render_html(m)
    assert '<section class="block" id="producers"><h2>Producer flow control</h2>' in page
    assert "link-credit withdrawn (drain)" in page and "&lt;b&gt;x&lt;/b&gt;" in page and "<b>x</b>" not in page
    md = render_markdown(m)
    assert "### Producer flow control" in md
    assert "| broker@version | case | limit used | means | throttle point | in flight | resume point | lost |" in md
    assert "message 12, depth 11 | 110 | depth 8 | 0 of 122 |" in md
    assert "&lt;b&gt;x&lt;/b&gt; \\| y" in md


def test_no_producer_facts_no_section():
    assert "Producer flow control" not in render_html(example_model())
    assert "Producer flow control" not in render_markdown(example_model())
