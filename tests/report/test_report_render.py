"""Unit tests of the report renderers and the model validator (no browser)."""

from __future__ import annotations

import copy
import json
import re

import pytest
from htmldom import Document

from conformance.report import render_html, render_markdown, validate_model
from report_example import example_model
from conformance.report.html import Anchors

HOSTILE = '<script>alert("x")</script> & \'quoted\' <blink>bold</blink>'


@pytest.fixture(scope="module")
def model():
    return example_model()


@pytest.fixture(scope="module")
def page(model):
    return render_html(model)


@pytest.fixture(scope="module")
def doc(page):
    return Document(page)


def hostile_model() -> dict:
    """The example with markup and quotes in every kind of text the page shows."""
    m = example_model()
    m["suite_version"] = HOSTILE
    m["cases"][0]["title"] = HOSTILE
    m["requirements"][0]["text"] = HOSTILE + " x<sub>snd</sub>"
    m["cells"][0]["reason"] = HOSTILE
    m["cells"][0]["ladder"] = "<----------  transfer(handle=0) " + HOSTILE
    m["columns"][0]["product"] = HOSTILE
    return m


# -- model ------------------------------------------------------------------------------------------------

def test_example_model_is_valid_and_json(model):
    validate_model(model)
    assert json.loads(json.dumps(model)) == model
    assert len({c["broker"] for c in model["columns"]}) == 3
    assert len(model["requirements"]) == 10
    used = {c["verdict"] for c in model["cells"]}
    assert used == {"pass", "fail", "non-strict", "informational", "unsupported", "error"}
    assert {c["kind"] for c in model["changes"]} == {"regression", "fix", "change"}
    assert model["flaky"]


@pytest.mark.parametrize("breakage, message", [
    (lambda m: m.pop("columns"), r"^columns: expected a list"),
    (lambda m: m.__setitem__("history", {"runs": 1}), r"^history\.records: missing"),
    (lambda m: m["cells"][3].__setitem__("verdict", "passed"), r"^cells\[3\]\.verdict: expected one of pass, "),
    (lambda m: m["cells"][0].__setitem__("column", "nope@1"), r"^cells\[0\]\.column: unknown column 'nope@1'"),
    (lambda m: m["cells"].append(dict(m["cells"][0])), r"^cells\[\d+\]: case_id/column .* is listed twice"),
    (lambda m: m["requirements"][1].__setitem__("level", "must"), r"^requirements\[1\]\.level: expected one of MUST"),
    (lambda m: m["columns"][0].__setitem__("runs", True), r"^columns\[0\]\.runs: expected a non-negative integer"),
    (lambda m: m["scores"]["overall"][0].__setitem__("passed", 99), r"^scores\.overall\[0\]: passed 99 is more"),
    (lambda m: m["scores"]["by_level"][0].__setitem__("score", 1.5), r"^scores\.by_level\[0\]\.score: expected a number from 0 to 1"),
    (lambda m: m["cells"][1].__setitem__("verdict_counts", {"ok": 1}), r"^cells\[1\]\.verdict_counts: 'ok' is not a verdict"),
    (lambda m: m["durations"][0].__setitem__("series", [["t", -1]]), r"^durations\[0\]\.series\[0\]: expected \[time, seconds\]"),
    (lambda m: m["changes"][0].__setitem__("kind", "worse"), r"^changes\[0\]\.kind: expected one of regression"),
    (lambda m: m["cases"][0]["requirement_ids"].append("9.9/none"), r"^cases\[0\]\.requirement_ids\[\d\]: unknown requirement"),
    (lambda m: m.pop("scores"), r"^scores: expected an object"),
])
def test_validate_model_names_the_first_problem(breakage, message):
    broken = copy.deepcopy(example_model())
    breakage(broken)
    with pytest.raises(ValueError, match=message):
        validate_model(broken)


def test_validate_model_rejects_non_objects():
    with pytest.raises(ValueError, match="^model: expected an object"):
        validate_model([])


def test_renderers_refuse_a_malformed_model():
    m = example_model()
    m["cells"][0]["verdict"] = "green"
    for render in (render_html, render_markdown):
        with pytest.raises(ValueError, match=r"^cells\[0\]\.verdict"):
            render(m)


# -- HTML -------------------------------------------------------------------------------------------------

def test_html_is_well_formed(doc, page):
    assert page.startswith("<!DOCTYPE html>")
    assert doc.problems == []


def test_matrix_has_a_row_per_requirement_grouped_by_section(doc, model):
    table = doc.by_id("matrix")
    assert table is not None and table.tag == "table"
    rows = doc.find_all("tr", "req-row")
    assert [r.attrs["data-requirement"] for r in rows] == [r["id"] for r in model["requirements"]]
    for row in rows:
        assert table in row.ancestors()
        requirement = next(r for r in model["requirements"] if r["id"] == row.attrs["data-requirement"])
        assert requirement["id"] in row.text and requirement["level"] in row.text
    sections = [r.text.split("Part")[0].strip() for r in doc.find_all("tr", "section-row")]
    assert sections == ["2.5.6", "2.6.7", "2.6.8", "2.6.10", "2.7.4"]


def test_matrix_has_a_header_per_column_and_a_cell_per_requirement_and_column(doc, model):
    headers = doc.find_all("th", "broker-col")
    assert [h.attrs["data-column"] for h in headers] == [c["key"] for c in model["columns"]]
    expected = {(c["requirement_id"], c["column"]): c["verdict"] for c in model["requirement_cells"]}
    for row in doc.find_all("tr", "req-row"):
        cells = [e for e in row.children if e.tag == "td"]
        assert len(cells) == len(model["columns"])
        for column, cell in zip(model["columns"], cells):
            verdict = expected.get((row.attrs["data-requirement"], column["key"]), "not-run")
            assert "cell" in cell.classes and f"verdict-{verdict}" in cell.classes
            assert cell.text.strip().startswith("" if verdict == "not-run" else verdict)


def test_every_case_has_a_page_and_cells_link_to_the_cases_behind_them(doc, model):
    anchors = Anchors(c["id"] for c in model["cases"])
    for case in model["cases"]:
        page = doc.by_id(anchors[case["id"]])
        assert page is not None and "case-page" in page.classes and page.attrs["data-case"] == case["id"]
        assert case["title"] in page.text
        assert [a for a in page.children[0].children if a.tag == "a" and a.attrs.get("href") == "#matrix"]
        for requirement_id in case["requirement_ids"]:
            assert requirement_id in page.text
        results = [e for e in doc.elements if e.tag == "article" and page in e.ancestors()]
        assert [r.attrs["data-column"] for r in results] == [c["key"] for c in model["columns"]]
    for cell in model["requirement_cells"]:
        row = doc.find_all("tr", "req-row", data_requirement=cell["requirement_id"])[0]
        index = [c["key"] for c in model["columns"]].index(cell["column"])
        td = [e for e in row.children if e.tag == "td"][index]
        links = {a.attrs["href"] for a in doc.elements if a.tag == "a" and td in a.ancestors()}
        assert links == {"#" + anchors[case_id] for case_id in cell["case_ids"]}


def test_every_internal_link_has_a_target(doc):
    ids = {e.attrs["id"] for e in doc.elements if "id" in e.attrs}
    hrefs = [e.attrs["href"] for e in doc.elements if "href" in e.attrs]
    assert hrefs and all(h.startswith("#") and h[1:] in ids for h in hrefs)


def test_case_page_shows_verdict_reason_and_ladder(doc, model):
    anchors = Anchors(c["id"] for c in model["cases"])
    fail = next(c for c in model["cells"] if c["verdict"] == "fail")
    page = doc.by_id(anchors[fail["case_id"]])
    article = next(e for e in doc.elements if e.tag == "article" and page in e.ancestors()
                   and e.attrs["data-column"] == fail["column"])
    assert fail["reason"] in article.text and fail["violated"] in article.text
    ladder = next(e for e in doc.elements if e.tag == "pre" and article in e.ancestors())
    assert ladder.text == fail["ladder"]
    assert "<----------" in ladder.text


def test_page_references_nothing_outside_itself(page):
    for attribute, value in re.findall(r"""\b(src|href|action|srcset|poster|data)\s*=\s*["']?([^"'\s>]*)""", page, re.I):
        assert value.startswith("#"), f"{attribute}={value!r} points outside the page"
    assert "@import" not in page
    assert "url(" not in page
    for tag in ("<script", "<link", "<img", "<iframe", "<object", "<embed"):
        assert tag not in page.lower()
    assert not re.search(r"(?:https?:)?//[a-z0-9.-]+\.[a-z]{2,}", page, re.I)


def test_everything_from_the_model_is_escaped():
    m = hostile_model()
    page = render_html(m)
    assert "<script>" not in page and "<blink>bold</blink>" not in page
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; &#x27;quoted&#x27;" in page
    assert "&lt;----------  transfer(handle=0)" in page
    assert "x<sub>snd</sub>" in page                      # the spec's subscripts stay markup
    doc = Document(page)
    assert doc.problems == []
    assert not [e for e in doc.elements if e.tag in ("script", "blink")]


def test_attribute_values_are_escaped():
    m = example_model()
    old = m["columns"][0]["key"]
    new = 'x"><script>y@1'
    m["columns"][0]["key"] = new
    scores = m["scores"]["overall"] + m["scores"]["by_section"] + m["scores"]["by_level"]
    for cell in m["cells"] + m["requirement_cells"] + scores + m["durations"] + m["flaky"]:
        if cell["column"] == old:
            cell["column"] = new
    validate_model(m)
    doc = Document(render_html(m))
    assert doc.find_all("th", "broker-col")[0].attrs["data-column"] == new
    assert not [e for e in doc.elements if e.tag == "script"]


def test_renders_a_model_with_nothing_in_it():
    m = example_model()
    m.update(cells=[], requirement_cells=[], changes=[], flaky=[], durations=[],
             scores={"overall": [], "by_section": [], "by_level": []})
    validate_model(m)
    doc = Document(render_html(m))
    assert len(doc.find_all("td", "verdict-not-run")) == len(m["requirements"]) * len(m["columns"])
    assert "No verdict changed" in render_html(m)
    assert "### MUST failures (0)" in render_markdown(m)


# -- Markdown ---------------------------------------------------------------------------------------------

def test_markdown_summary(model):
    text = render_markdown(model)
    assert text.startswith("## ")
    for column in model["columns"]:
        assert f"| `{column['key']}` |" in text
    assert "| `qpid-proton-c@0.39.0` | 87.5% | 7 / 8 | 7 | 0 | 1 | 1 | 1 | 0 |" in text
    fails = [c for c in model["cells"] if c["verdict"] == "fail"]
    assert f"### MUST failures ({len(fails)})" in text
    for cell in fails:
        assert f"- `{cell['case_id']}` on `{cell['column']}` — `{cell['violated']}`: " in text
    assert "### Regressions (1; fixes: 1)" in text and "**fail**" in text
    assert "- `2.7.4/1` on `rabbitmq-4.0@4.0.5`: pass ×3, non-strict ×1" in text
    assert len(text) < 4000


def test_markdown_escapes_and_cuts_long_lists():
    m = example_model()
    template = next(c for c in m["cells"] if c["verdict"] == "fail")
    m["cases"] += [dict(m["cases"][0], id=f"2.6.7/{n}") for n in range(100, 160)]
    m["cells"] = [dict(template, case_id=f"2.6.7/{n}", reason="a | b <i>c</i> `d` " + "x" * 400)
                  for n in range(100, 160)]
    text = render_markdown(m)
    failure_lines = [line for line in text.splitlines() if line.startswith("- `") and "` — `" in line]
    assert len(failure_lines) == 50
    assert "- … and 10 more failures (see report.html)" in text
    assert "<i>" not in text and "&lt;i&gt;" in text and "a \\| b" in text and "\\`d\\`" in text
    assert all(len(line) < 400 for line in failure_lines)


def test_history_sections(doc, model):
    assert len(doc.find_all("tr", "change")) == len(model["changes"])
    regression = doc.find_all("tr", "kind-row-regression")[0]
    assert "2.6.7/5" in regression.text and "4.0.4 → 4.0.5" in regression.text
    flaky_rows = [e for e in doc.elements if e.tag == "tr" and doc.by_id("flaky-table") in e.ancestors()][1:]
    assert len(flaky_rows) == len(model["flaky"]) and "non-strict ×1" in flaky_rows[0].text
    trends = doc.find_all("td", "trend")
    assert {(t.attrs["data-column"]) for t in trends} == {d["column"] for d in model["durations"]}
    assert len(trends) == len(model["durations"])
    assert all([e for e in t.children if e.tag == "svg" and "spark" in e.classes] for t in trends)
    chart = doc.by_id("chart")
    bars = [e for e in doc.find_all("g", "bar") if chart in e.ancestors()]
    assert [b.attrs["data-column"] for b in bars] == [c["key"] for c in model["columns"]]


def test_scores_tables(doc, model):
    by_level = doc.by_id("scores-level")
    assert "71.4% (5/7)" in by_level.text          # rabbitmq-3.10 MUST
    by_section = doc.by_id("scores-section")
    rows = [e for e in doc.elements if e.tag == "tr" and by_section in e.ancestors()][1:]
    assert [r.children[0].text for r in rows] == ["2.5.6", "2.6.7", "2.6.8", "2.6.10", "2.7.4"]


def test_the_stylesheet_is_package_data_and_inlined(page):
    """report.css ships with the package (pyproject package-data, so a non-editable install has it) and the
    page carries it inline, with the verdict colours of conformance.verdict."""
    import fnmatch
    import tomllib
    from pathlib import Path

    from conformance.report.html import _STATIC
    from conformance.verdict import HTML_COLOUR

    root = Path(__file__).resolve().parents[2]
    patterns = tomllib.loads((root / "pyproject.toml").read_text("utf-8"))["tool"]["setuptools"]["package-data"]
    assert any(fnmatch.fnmatch("report/static/report.css", p) for p in patterns["conformance"])
    css = _STATIC.joinpath("report.css").read_text("utf-8")
    body = css.split("*/", 1)[1].strip()
    assert body.startswith("*{box-sizing:border-box}") and body in page
    for name, (background, text) in HTML_COLOUR.items():
        assert f".verdict-{name}{{background:{background};color:{text}}}" in page
