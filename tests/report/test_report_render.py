"""Unit tests of the report renderers, its side pages and the model validator (no browser)."""

from __future__ import annotations

import copy
import json
import re

import pytest
from htmldom import Document

from conformance.report import render_html, render_markdown, validate_model, write_report
from conformance.report.findings import deciding, finding_groups, group_line
from conformance.report.html import Names
from conformance.report.labels import column_label, when
from conformance.report.markdown import MAX_LINES
from conformance.report.pages import side_files
from report_example import example_model

HOSTILE = '<script>alert("x")</script> & \'quoted\' <blink>bold</blink>'
SIDE_KEY = re.compile(r"^#((?:finding|case|cell|ladder)/[A-Za-z0-9._/-]+|durations|cases)(?::[A-Za-z0-9._-]+)?$")


@pytest.fixture(scope="module")
def model():
    return example_model()


@pytest.fixture(scope="module")
def page(model):
    return render_html(model)


@pytest.fixture(scope="module")
def doc(page):
    return Document(page)


@pytest.fixture(scope="module")
def sides(model):
    return dict(side_files(model))


def fragment(side_text: str) -> str:
    """The HTML a JSONP side file hands to the page."""
    match = re.fullmatch(r'AMQPReport\.page\(("(?:[^"\\]|\\.)*"), (".*")\);\n', side_text, re.S)
    assert match, side_text[:200]
    return json.loads(match.group(2))


def hostile_model() -> dict:
    """The example with markup and quotes in every kind of text the page shows."""
    m = example_model()
    m["suite_version"] = HOSTILE
    m["cases"][0]["title"] = HOSTILE
    m["requirements"][0]["text"] = HOSTILE + " x<sub>snd</sub>"
    for cell in m["cells"]:
        cell["reason"] = HOSTILE
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


def test_renderers_refuse_a_malformed_model(tmp_path):
    m = example_model()
    m["cells"][0]["verdict"] = "green"
    for render in (render_html, render_markdown, lambda m: write_report(m, tmp_path / "out")):
        with pytest.raises(ValueError, match=r"^cells\[0\]\.verdict"):
            render(m)
    assert not (tmp_path / "out" / "report.html").exists()


# -- labels and findings grouped across a series ----------------------------------------------------------

def test_labels_are_said_as_people_say_them():
    assert column_label({"broker": "artemis-2.17.0", "series": "artemis", "product": "apache-activemq-artemis",
                         "version": "2.17.0"}) == "Artemis 2.17.0"
    assert column_label({"broker": "rhea-3.0.5", "series": "rhea", "product": "rhea", "version": "3.0.5",
                         "subject": "client"}) == "rhea 3.0.5"
    assert column_label({"broker": "localhost:5672", "product": "RabbitMQ", "version": "4.0.5"}) == "RabbitMQ 4.0.5"
    assert column_label({"label": "given", "broker": "x", "version": "1"}) == "given"
    assert when("2026-11-27T14:15:03.677974+00:00") == "2026-11-27 14:15:03 UTC"
    assert when("2026-11-27T16:15:03+02:00") == "2026-11-27 14:15:03 UTC"
    assert when("not a time") == "not a time"


def series_model(verdicts: list[str], violated: str = "2.6.7/credit-formula") -> dict:
    """The example with one more series (artemis, one release per verdict) for case 2.6.7/3."""
    m = example_model()
    template = next(c for c in m["cells"] if c["verdict"] == "fail")
    for n, verdict in enumerate(verdicts):
        version = f"2.{17 + n}.0"
        key = f"artemis-{version}@{version}"
        m["columns"].append({"key": key, "broker": f"artemis-{version}", "product": "apache-activemq-artemis",
                             "version": version, "runs": 1, "last_run_id": f"r{n}", "last_run_at": "2026-01-01T00:00:00Z",
                             "series": "artemis"})
        m["cells"].append(dict(template, case_id="2.6.7/3", column=key, verdict=verdict,
                               violated=violated if verdict in ("fail", "non-strict") else None,
                               findings=template["findings"] if verdict == "fail" else []))
    validate_model(m)
    return m


def test_a_finding_is_one_entry_over_its_series_with_ranges_and_changes():
    m = series_model(["fail", "fail", "fail", "pass", "fail", "pass"])
    [group] = [g for g in finding_groups(m) if g["series"] == "artemis"]
    columns = {c["key"]: c for c in m["columns"]}
    assert (group["case_id"], group["requirement_id"], group["level"]) == ("2.6.7/3", "2.6.7/credit-formula", "MUST")
    assert group["releases"] == 4 and group["of"] == 6
    assert [[columns[a]["version"], columns[b]["version"], n] for a, b, n in group["ranges"]] == \
        [["2.17.0", "2.19.0", 3], ["2.21.0", "2.21.0", 1]]
    assert group_line(group, columns) == ("Artemis 2.17.0 – 2.19.0, 2.21.0 (4 of 6 releases; passes from 2.20.0; "
                                          "fails again from 2.21.0; passes from 2.22.0)")


def test_a_finding_that_starts_later_is_a_regression_and_one_on_every_release_has_no_change():
    m = series_model(["pass", "pass", "non-strict", "non-strict"], violated="2.7.4/echo")
    [group] = [g for g in finding_groups(m) if g["series"] == "artemis"]
    assert group["level"] == "SHOULD" and group_line(group, {c["key"]: c for c in m["columns"]}) == \
        "Artemis 2.19.0 – 2.20.0 (2 of 4 releases; non-strict from 2.19.0)"
    m = series_model(["fail", "fail"])
    [group] = [g for g in finding_groups(m) if g["series"] == "artemis"]
    assert group_line(group, {c["key"]: c for c in m["columns"]}) == "Artemis 2.17.0 – 2.18.0 (both releases)"


def test_another_requirement_is_another_entry():
    m = series_model(["fail", "fail", "fail"])
    m["cells"][-1]["violated"] = "2.6.7/no-send-without-credit"
    groups = [g for g in finding_groups(m) if g["series"] == "artemis"]
    assert [(g["requirement_id"], g["releases"]) for g in groups] == \
        [("2.6.7/credit-formula", 2), ("2.6.7/no-send-without-credit", 1)]
    assert group_line(groups[0], {c["key"]: c for c in m["columns"]}).endswith(
        "(2 of 3 releases; fails on 2.6.7/no-send-without-credit from 2.19.0)")


def test_a_bisect_that_found_the_change_is_linked_to_the_finding():
    m = series_model(["fail", "fail", "pass"])
    m["bisects"] = [{"case_id": "2.6.7/3", "series": "artemis", "before": "artemis-2.18.0", "changed": "artemis-2.19.0",
                     "verdict_before": "fail", "verdict_after": "pass", "kind": "fix", "started_at": "2026-01-02T00:00:00Z",
                     "command": "amqp-conformance bisect 2.6.7/3 --series artemis",
                     "steps": [{"build": "artemis-2.17.0", "verdict": "fail", "source": "history"}],
                     "commit": {"hash": "1361e29739abcdef", "subject": "ARTEMIS-1234 credit is set"}}]
    [group] = [g for g in finding_groups(m) if g["series"] == "artemis"]
    assert group["bisect"]["changed"] == "artemis-2.19.0"
    names = Names(m)
    page = fragment(dict(side_files(m, names))[f"finding/{group['id']}.js"])
    assert "Bisected" in page and "1361e29739abcdef" in page and "ARTEMIS-1234" in page
    assert "bisected" in render_html(m) and "bisected: commit 1361e29739ab" in render_markdown(m)


def test_the_cases_that_decided_a_cell(model):
    decided = deciding(model)
    for rc in model["requirement_cells"]:
        cells = {c["case_id"]: c for c in model["cells"] if c["column"] == rc["column"]}
        assert set(decided[rc["requirement_id"], rc["column"]]) <= set(rc["case_ids"])
        for case_id in decided[rc["requirement_id"], rc["column"]]:
            assert cells[case_id]["verdict"] == rc["verdict"]


# -- HTML: the first screen ----------------------------------------------------------------------------------

def test_html_is_well_formed(doc, page):
    assert page.startswith("<!DOCTYPE html>")
    assert doc.problems == []


def test_matrix_has_a_row_per_requirement_grouped_by_section(doc, model):
    table = doc.by_id("broker-matrix")
    assert table is not None and table.tag == "table"
    rows = doc.find_all("tr", "req-row")
    assert [r.attrs["data-requirement"] for r in rows] == [r["id"] for r in model["requirements"]]
    for row in rows:
        assert table in row.ancestors()
        requirement = next(r for r in model["requirements"] if r["id"] == row.attrs["data-requirement"])
        assert requirement["id"] in row.text and requirement["level"] in row.text
    sections = [r.text.split("2 Transport")[0].strip() for r in doc.find_all("tr", "section-row")]
    assert sections == ["2.5.6", "2.6.7", "2.6.8", "2.6.10", "2.7.4"]


def test_matrix_cell_shows_its_verdict_and_deciding_case_and_opens_its_page(doc, model):
    names = Names(model)
    headers = doc.find_all("th", "broker-col")
    assert [h.attrs["data-column"] for h in headers] == [c["key"] for c in model["columns"]]
    expected = {(c["requirement_id"], c["column"]): c for c in model["requirement_cells"]}
    for row in doc.find_all("tr", "req-row"):
        tds = [e for e in row.children if e.tag == "td"]
        assert len(tds) == len(model["columns"])
        for column, td in zip(model["columns"], tds):
            rc = expected.get((row.attrs["data-requirement"], column["key"]))
            verdict = rc["verdict"] if rc else "not-run"
            assert "cell" in td.classes and f"verdict-{verdict}" in td.classes
            if rc is None:
                assert td.text == ""
                continue
            decided = names.deciding[rc["requirement_id"], column["key"]]
            assert decided[0] in td.text
            [link] = [a for a in doc.elements if a.tag == "a" and td in a.ancestors()]
            at = names.col[column["key"]]
            if verdict in ("fail", "non-strict"):
                assert link.attrs["href"] == f"#finding/{names.group_of[decided[0], column['key']]}:{at}"
            else:
                assert link.attrs["href"] == f"#cell/{names.cell[rc['requirement_id']]}:{at}"


def test_brokers_and_client_libraries_are_apart(model):
    m = copy.deepcopy(model)
    m["columns"][0].update(subject="client", language="Python", series="python-qpid-proton", broker="python-qpid-proton-0.39.0")
    page = render_html(m)
    doc = Document(page)
    assert [h.attrs["data-column"] for h in doc.by_id("client-matrix").children[0].children[1].children] == \
        [m["columns"][0]["key"]]
    assert [h.attrs["data-column"] for h in doc.find_all("th", "broker-col")
            if doc.by_id("broker-matrix") in h.ancestors()] == [c["key"] for c in m["columns"][1:]]
    assert page.index('id="brokers"') < page.index('id="clients"')
    text = render_markdown(m)
    assert text.index("### Brokers: 3 releases of 1 broker") < text.index("### Client libraries: 1 release of 1 library")
    assert "| python-qpid-proton 0.39.0 (Python) |" in text


def test_every_link_has_a_target_in_the_page_or_a_side_file(doc, model, sides):
    ids = {e.attrs["id"] for e in doc.elements if "id" in e.attrs}
    hrefs = [e.attrs["href"] for e in doc.elements if "href" in e.attrs]
    pages = [fragment(text) for path, text in sides.items() if path.endswith(".js")]
    for text in pages:
        hrefs += re.findall(r'href="([^"]*)"', text)
    assert hrefs
    for href in hrefs:
        side = SIDE_KEY.match(href)
        if side:
            assert f"{side.group(1)}.js" in sides, href
        elif href.startswith("report.files/"):
            assert href[len("report.files/"):] in sides, href
        else:
            assert href.startswith("#") and href[1:] in ids, href


def markup(page: str) -> str:
    """The page without its inline script (the viewer, static/report.js)."""
    return re.sub(r"<script>.*?</script>", "<script></script>", page, flags=re.S)


def test_the_page_reaches_nothing_outside_its_folder(page):
    for attribute, value in re.findall(r"""\b(src|href|action|srcset|poster|data)\s*=\s*["']?([^"'\s>]*)""",
                                       markup(page), re.I):
        assert value.startswith("#") or value.startswith("report.files/"), f"{attribute}={value!r}"
    assert "@import" not in page and "url(" not in page
    for tag in ("<link", "<img", "<iframe", "<object", "<embed"):
        assert tag not in page.lower()
    assert markup(page).lower().count("<script") == 1         # the viewer, inline
    assert not re.search(r"(?:https?:)?//[a-z0-9.-]+\.[a-z]{2,}", page, re.I)
    csp = re.search(r'http-equiv="Content-Security-Policy" content="([^"]*)"', page).group(1)
    assert "default-src 'none'" in csp and "connect-src" not in csp       # no fetch, no XHR


def test_the_first_screen_holds_no_transcript_and_stays_small(page, model):
    page = markup(page)
    assert "ladder-body" not in page and "<pre" not in page
    for cell in model["cells"]:
        if cell["ladder"]:
            assert cell["ladder"][:60] not in page


def test_everything_from_the_model_is_escaped(tmp_path):
    m = hostile_model()
    out = tmp_path / "report"
    write_report(m, out)
    for path in [out / "report.html", *sorted((out / "report.files").rglob("*"))]:
        if path.is_dir():
            continue
        text = path.read_text("utf-8")
        html = fragment(text) if path.suffix == ".js" else text
        assert "<script>alert" not in html and "<blink>bold</blink>" not in html, path
        doc = Document(html)
        assert doc.problems == [], path
        assert [e for e in doc.elements if e.tag == "script"] == ([] if path.suffix != ".html" or path.name !=
                                                                  "report.html" else [doc.find_all("script")[0]])
    page = (out / "report.html").read_text("utf-8")
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; &#x27;quoted&#x27;" in page
    ladder = next(p for p in (out / "report.files" / "ladder").rglob("*.js") if "transfer(handle=0) &lt;script" in
                  fragment(p.read_text("utf-8")))
    assert ladder
    cells = fragment((out / "report.files" / "cell" / "2.5.6-update-from-flow.js").read_text("utf-8"))
    assert "x<sub>snd</sub>" in cells                       # the spec's subscripts stay markup


def test_history_sections(doc, model):
    assert len(doc.find_all("tr", "change")) == len(model["changes"])
    regression = doc.find_all("tr", "kind-row-regression")[0]
    assert "2.6.7/5" in regression.text and "4.0.4 → 4.0.5" in regression.text and "RabbitMQ" in regression.text
    flaky_rows = [e for e in doc.elements if e.tag == "tr" and doc.by_id("flaky-table") in e.ancestors()][1:]
    assert len(flaky_rows) == len(model["flaky"]) and "non-strict ×1" in flaky_rows[0].text
    assert "RabbitMQ 4.0.5" in flaky_rows[0].text


def test_scores(doc, model):
    strip = doc.by_id("broker-scores")
    releases = [e for e in doc.find_all("div", "release") if strip in e.ancestors()]
    assert [r.attrs["data-column"] for r in releases] == [c["key"] for c in model["columns"]]
    assert "75%" in releases[1].text and "1 fail" in releases[1].text
    table = doc.by_id("scores-broker")
    rows = [e for e in doc.elements if e.tag == "tr" and table in e.ancestors()][2:]
    assert [r.children[0].text for r in rows][:2] == ["MUST", "SHOULD"]
    assert "71.4% (5/7)" in rows[0].text                  # rabbitmq-3.10 MUST


def test_the_stylesheet_and_script_are_package_data_and_inlined(page):
    import fnmatch
    import tomllib
    from pathlib import Path

    from conformance.report.html import _STATIC
    from conformance.verdict import HTML_COLOUR

    root = Path(__file__).resolve().parents[2]
    patterns = tomllib.loads((root / "pyproject.toml").read_text("utf-8"))["tool"]["setuptools"]["package-data"]
    for name in ("report.css", "report.js"):
        assert any(fnmatch.fnmatch(f"report/static/{name}", p) for p in patterns["conformance"])
        body = _STATIC.joinpath(name).read_text("utf-8").split("*/", 1)[1].strip()
        assert body in page
    for name, (background, text) in HTML_COLOUR.items():
        assert f".verdict-{name}{{background:{background};color:{text}}}" in page


# -- HTML: the side pages -------------------------------------------------------------------------------------

def test_every_case_requirement_finding_and_transcript_has_a_side_page(model, sides):
    names = Names(model)
    for case in model["cases"]:
        assert f"case/{names.case[case['id']]}.js" in sides
    for requirement in model["requirements"]:
        assert f"cell/{names.cell[requirement['id']]}.js" in sides
    for group in names.groups:
        assert {f"finding/{group['id']}.js", f"finding/{group['id']}.html"} <= set(sides)
    for cell in model["cells"]:
        if cell["ladder"]:
            text = fragment(sides[names.ladder_key(cell["case_id"], cell["column"]) + ".js"])
            assert cell["ladder"].splitlines()[-1].replace("<", "&lt;").replace(">", "&gt;") in text
    for path, text in sides.items():
        if path.endswith(".js"):
            assert text.startswith(f"AMQPReport.page({json.dumps(path[:-3])}, ")


def test_a_finding_page_has_what_a_maintainer_forwards(model, sides):
    names = Names(model)
    group = next(g for g in names.groups if g["case_id"] == "2.6.7/3")
    for path, inline in ((f"finding/{group['id']}.js", False), (f"finding/{group['id']}.html", True)):
        text = sides[path] if inline else fragment(sides[path])
        requirement = next(r for r in model["requirements"] if r["id"] == group["requirement_id"])
        assert requirement["text"][:50].replace("’", "’") in text                     # the quoted sentence
        assert "What the broker did" in text and "a transfer arrived beyond the delivery-limit" in text
        assert "amqp-conformance run 2.6.7/3 --broker rabbitmq-3.10" in text          # the reproduce command
        assert "passes from 4.0.4" in text
        if inline:       # standalone: the frames inline, no script, its own style
            assert "<pre class=\"ladder\">" in text and "<script" not in text and "<style>" in text
        else:            # in the page: the frames from their side file
            assert f'data-ladder="{names.ladder_key("2.6.7/3", group["latest"])}"' in text


def test_a_client_finding_shows_its_ready_to_file_report(model):
    m = copy.deepcopy(model)
    m["columns"][1].update(subject="client", language="JavaScript", run_args="--client rhea-3.0.5")
    cell = next(c for c in m["cells"] if c["column"] == m["columns"][1]["key"] and c["verdict"] == "fail")
    cell.update(bug_report="## rhea 3.0.5 sends beyond the credit <x>\n\nSteps...", bug_report_path="bug-reports/a.md")
    names = Names(m)
    group = next(g for g in names.groups if g["case_id"] == cell["case_id"] and m["columns"][1]["key"] in g["columns"])
    text = fragment(dict(side_files(m, names))[f"finding/{group['id']}.js"])
    assert "Bug report, ready to file" in text and "sends beyond the credit &lt;x&gt;" in text
    assert "bug-reports/a.md" in text and "--client rhea-3.0.5" in text and "What the library did" in text


def test_expectations_are_shown_where_the_model_has_them(model):
    m = copy.deepcopy(model)
    fail = next(c for c in m["cells"] if c["verdict"] == "fail")
    fail.update(expectation="unexpected fail", expectation_reason="ISSUE-1")
    other = next(c for c in m["cells"] if c["verdict"] == "non-strict")
    other.update(expectation="expected", expectation_reason="ISSUE-2")
    page = render_html(m)
    assert 'class="expect expect-unexpected" title="ISSUE-1">unexpected fail<' in page
    assert ">expected<" in page
    text = render_markdown(m)
    assert "| unexpected |" in text and "**unexpected**" in text
    assert "unexpected" not in render_markdown(model) and 'class="expect ' not in render_html(model)


# -- Markdown -----------------------------------------------------------------------------------------------

def test_markdown_summary(model):
    text = render_markdown(model)
    assert text.startswith("## ")
    assert "@" not in text                                 # labels as people say them, never broker@version
    assert re.search(r"Generated \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC", text)
    assert "| Proton C broker 0.39.0 | 87.5% | 7 / 8 | 7 | 0 | 1 | 1 | 1 | 0 |" in text
    assert "- `2.6.7/3` `2.6.7/credit-formula` — RabbitMQ 3.10.8 (1 of 3 releases; passes from 4.0.4): " in text
    assert "- `2.6.7/5` `2.6.7/credit-formula` — RabbitMQ 4.0.5 (1 of 3 releases; fails from 4.0.5): " in text
    assert "**Regressions between consecutive releases: 1** (fixes: 1)" in text
    assert "- `2.7.4/1` on RabbitMQ 4.0.5: pass ×3, non-strict ×1" in text
    assert len(text.splitlines()) <= MAX_LINES


def full_matrix_model(failing: int = 60) -> dict:
    """The example grown to 16 broker and 9 client releases and 60 more cases, `failing` of them failing on some
    releases."""
    m = example_model()
    template = next(c for c in m["cells"] if c["verdict"] == "fail")
    m["columns"], m["cells"], m["requirement_cells"], m["changes"], m["flaky"], m["durations"] = [], [], [], [], [], []
    m["scores"] = {"overall": [], "by_section": [], "by_level": []}
    for n in range(25):
        subject = "client" if n >= 16 else "broker"
        series, version = (f"lib{n % 3}", f"1.{n}") if subject == "client" else (f"series{n % 4}", f"2.{n}.0")
        m["columns"].append({"key": f"{series}-{version}@{version}", "broker": f"{series}-{version}", "series": series,
                             "product": series, "version": version, "runs": 30, "last_run_id": f"r{n}",
                             "last_run_at": "2026-11-27T14:15:03.677974+00:00", "subject": subject})
    m["cases"] += [dict(m["cases"][0], id=f"2.6.7/{n}") for n in range(100, 160)]
    for k, case in enumerate(m["cases"]):
        for n, column in enumerate(m["columns"]):
            verdict = "fail" if k < failing and (k + n) % 3 == 0 else "pass"
            m["cells"].append(dict(template, case_id=case["id"], column=column["key"], verdict=verdict,
                                   violated="2.6.7/credit-formula" if verdict == "fail" else None,
                                   reason="a | b <i>c</i> `d` " + "x" * 400))
    validate_model(m)
    return m


def test_markdown_stays_short_for_the_full_matrix_and_names_every_must_failure():
    m = full_matrix_model(failing=20)
    text = render_markdown(m)
    lines = text.splitlines()
    assert len(lines) <= MAX_LINES
    groups = finding_groups(m)
    must = {(g["case_id"], g["requirement_id"]) for g in groups if g["level"] == "MUST"}
    named = set(re.findall(r"^- `([^`]+)` `([^`]+)` — ", text, re.M))
    assert len(must) == 20 and must <= named
    assert "<i>" not in text and "&lt;i&gt;" in text and "a \\| b" in text and "\\`d\\`" in text
    assert all(len(line) < 2000 for line in lines)
    assert text.index("### Brokers") < text.index("### Client libraries")


def test_markdown_names_every_must_failure_per_requirement_when_one_line_each_would_not_fit():
    m = full_matrix_model(failing=70)
    text = render_markdown(m)
    assert len(text.splitlines()) <= MAX_LINES
    for g in finding_groups(m):
        line = next(line for line in text.splitlines() if line.startswith(f"- `{g['requirement_id']}` — "))
        assert f"`{g['case_id']}` " in line
