"""The HTML report in a real browser: Debian's headless Chromium, driven over the DevTools protocol (cdp.py).

Two reports: the example model's (small, every verdict) and the report `amqp-conformance report` writes for a
nightly history of 30 runs of 16 broker releases and 9 client library releases (real records, replayed from
reference runs: nightly.py). Checked: the page is light (its size, and the time Chromium takes to load it);
the first screen renders with no side file loaded (no transcript, no finding page); a click on a matrix cell
opens that cell's finding page, with its frames; a side file that is missing gives a message on the page that
says which file and what to do, not a blank; a finding's standalone page opens alone; every cell of the matrix
is drawn in its verdict's colour; and nothing leaves the report's folder (every request goes to a proxy on the
discard port, where nothing listens, and the test's canary shows such a request is seen).
"""

from __future__ import annotations

import json
import re
import shutil
import statistics
from collections import Counter
from pathlib import Path

import pytest
from cdp import CHROMIUM, Chromium
from png import colour_blocks, decode_png

from conformance.report import write_report
from conformance.report.html import VERDICT_STYLE
from report_example import example_model

pytestmark = pytest.mark.skipif(not CHROMIUM.exists(), reason="Debian's Chromium is not installed at "
                                "/usr/bin/chromium (apt-get install -y chromium)")

MAX_PAGE_BYTES = 5_000_000
MAX_LOAD_S = 2.0
PANEL_STATE = 'document.getElementById("side-body").getAttribute("data-state")'


def rgb(hex_colour: str) -> tuple[int, int, int]:
    return tuple(int(hex_colour[i: i + 2], 16) for i in (1, 3, 5))


def clusters(values, tolerance: int = 3) -> list[int]:
    found: list[int] = []
    for value in sorted(values):
        if not found or value - found[-1] > tolerance:
            found.append(value)
    return found


@pytest.fixture
def browser(tmp_path):
    with Chromium(tmp_path / "profile") as b:
        yield b


@pytest.fixture(scope="module")
def example(tmp_path_factory):
    """(model, report directory) of the example model."""
    model = example_model()
    out = tmp_path_factory.mktemp("example") / "report"
    write_report(model, out)
    return model, out


@pytest.fixture(scope="module")
def nightly(tmp_path_factory):
    """(model, report directory): `amqp-conformance report` over 30 nightly runs of 16 brokers + 9 libraries.
    Made once per test session: pytest-xdist workers share it (the first one makes it under a file lock)."""
    import fcntl

    from nightly import reference_runs, write_history

    from conformance.cli import main
    import os
    base = tmp_path_factory.getbasetemp()
    root = (base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / "report-nightly"   # this session's
    root.mkdir(exist_ok=True)
    out = root / "reports" / "report"
    with open(root / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (root / "done").exists():
            sources = reference_runs(root / "reference")
            write_history(root / "reports", sources, nights=30)
            assert main(["report", "--reports-dir", str(root / "reports")]) == 0
            (root / "done").write_text("")
    return json.loads((out / "report.json").read_text("utf-8")), out


def opened(browser: Chromium, page: Path) -> float:
    """Open `page`; return Chromium's own load time (navigation start to the end of the load event), seconds."""
    browser.open(page.as_uri())
    return browser.js('performance.getEntriesByType("navigation")[0].loadEventEnd') / 1000


def click_and_wait(browser: Chromium, selector: str) -> str:
    browser.click(selector)
    return browser.wait_for(f'["loaded", "failed"].includes({PANEL_STATE}) && {PANEL_STATE}', "the side page")


# -- the canary ----------------------------------------------------------------------------------------------

def test_network_is_really_cut_and_seen(browser, tmp_path):
    """A page that does reach out is seen asking, and gets no answer."""
    canary = tmp_path / "canary.html"
    canary.write_text('<p>canary</p><img src="http://example.com/x.png">', "utf-8")
    browser.open(canary.as_uri())
    assert "http://example.com/x.png" in browser.requested()
    assert browser.js('document.images[0].complete && document.images[0].naturalWidth') == 0


# -- a light page --------------------------------------------------------------------------------------------

def test_the_nightly_page_is_light_and_opens_fast(nightly, browser):
    model, out = nightly
    page = out / "report.html"
    assert len(model["columns"]) == 25 and model["history"]["runs"] == 30
    size = page.stat().st_size
    times = [opened(browser, page) for _ in range(3)]
    print(f"report.html {size / 1e6:.2f} MB, loaded in {', '.join(f'{t:.3f}' for t in times)} s")
    assert size < MAX_PAGE_BYTES, f"report.html is {size / 1e6:.1f} MB"
    assert statistics.median(times) < MAX_LOAD_S, f"Chromium took {times} s"


def test_the_first_screen_renders_without_any_side_file(nightly, browser):
    model, out = nightly
    browser.open((out / "report.html").as_uri())
    assert browser.requested() == [(out / "report.html").as_uri()]            # no transcript, no finding page
    assert browser.js('document.querySelectorAll("pre.ladder").length') == 0
    assert browser.js('document.getElementById("side-panel").hidden') is True
    # brokers and client libraries apart, each with its matrix: one column per release
    brokers = [c for c in model["columns"] if c["subject"] == "broker"]
    clients = [c for c in model["columns"] if c["subject"] == "client"]
    assert browser.js('document.querySelectorAll("#broker-matrix th.broker-col").length') == len(brokers) == 16
    assert browser.js('document.querySelectorAll("#client-matrix th.broker-col").length') == len(clients) == 9
    assert browser.js('[...document.querySelectorAll("#brokers .series-name")].map(e => e.textContent)') == \
        ["Artemis", "Broker-J", "Proton C broker", "RabbitMQ"]
    names = browser.js('[...document.querySelectorAll("#clients .series-name")].map(e => e.textContent)')
    assert "rhea JavaScript" in names and "go-amqp Go" in names
    # the header reads in a minute: both sections, their MUST findings, times to the second
    header = browser.js('document.querySelector("header.top").innerText')
    assert re.search(r"Generated \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC", header), header
    assert "Brokers: 16 releases of 4 brokers" in header and "Client libraries: 9 releases of 5 libraries" in header


def test_a_click_on_a_failing_cell_opens_its_finding_page(nightly, browser):
    model, out = nightly
    browser.open((out / "report.html").as_uri())
    assert click_and_wait(browser, "#broker-matrix td.cell.verdict-fail a") == "loaded"
    key = browser.js("location.hash")
    assert key.startswith("#finding/")
    group = next(g for g in model["finding_groups"] if g["id"] == key[len("#finding/"):].split(":")[0])
    text = browser.js('document.getElementById("side-body").innerText')
    requirement = next(r for r in model["requirements"] if r["id"] == group["requirement_id"])
    assert group["case_id"] in text and requirement["id"] in text
    assert re.sub(r"<sub>|</sub>", "", requirement["text"])[:60] in text          # the quoted sentence
    assert "What the broker did" in text and "Expected" in text and "Actual" in text
    assert f"amqp-conformance run {group['case_id']} --broker " in text          # the reproduce command
    # the frames: the newest release's transcript, loaded now, from its own side file
    browser.wait_for('!!document.querySelector("#side-body pre.ladder")', "the transcript")
    assert any("/report.files/ladder/" in url for url in browser.requested())
    assert browser.js('document.querySelector("#side-body pre.ladder").textContent').count("---------->") > 3
    # Back closes it
    browser.click("#side-panel a.back")
    browser.wait_for('document.getElementById("side-panel").hidden', "the panel to close")


def test_a_client_cell_opens_the_library_finding(nightly, browser):
    _, out = nightly
    browser.open((out / "report.html").as_uri())
    assert click_and_wait(browser, "#client-matrix td.cell.verdict-fail a") == "loaded"
    text = browser.js('document.getElementById("side-body").innerText')
    assert "What the library did" in text and " --client " in text


def test_a_missing_side_file_says_so_on_the_page(nightly, browser, tmp_path):
    _, out = nightly
    copy = tmp_path / "report"
    shutil.copytree(out, copy)
    for path in (copy / "report.files" / "finding").glob("*.js"):
        path.unlink()
    browser.open((copy / "report.html").as_uri())
    assert click_and_wait(browser, "#broker-matrix td.cell.verdict-fail a") == "failed"
    text = browser.js('document.getElementById("side-body").innerText')
    assert "This page is not available" in text and "report.files/finding/" in text and "missing" in text
    assert "Keep the report folder whole" in text
    # a side file cut off half-way says that, not "missing"
    finding = next((out / "report.files" / "finding").glob("*.js"))
    cut = copy / "report.files" / "finding" / finding.name
    cut.write_text(finding.read_text("utf-8")[:200], "utf-8")
    browser.open("about:blank")
    browser.open((copy / "report.html").as_uri() + "#finding/" + finding.stem)
    browser.wait_for(f'{PANEL_STATE} === "failed"', "the message")
    assert "cut off" in browser.js('document.getElementById("side-body").innerText')
    # and with the whole folder gone, the first screen still opens and a transcript says the same
    shutil.rmtree(copy / "report.files")
    browser.open((copy / "report.html").as_uri())
    assert browser.js('document.querySelectorAll("#broker-matrix td.cell").length') > 0
    assert click_and_wait(browser, "#broker-matrix td.cell.verdict-pass a") == "failed"


def test_a_finding_page_stands_alone(nightly, browser):
    model, out = nightly
    group = model["finding_groups"][0]
    page = out / "report.files" / "finding" / f"{group['id']}.html"
    browser.open(page.as_uri())
    assert browser.requested() == [page.as_uri()]                 # style and frames inline, no script
    assert browser.js('document.querySelectorAll("script").length') == 0
    assert browser.js('document.querySelectorAll("pre.ladder").length') >= 1
    assert group["case_id"] in browser.js("document.body.innerText")


def test_nothing_leaves_the_folder(nightly, browser):
    _, out = nightly
    browser.open((out / "report.html").as_uri())
    for selector in ("#broker-matrix td.cell.verdict-fail a", "#client-matrix td.cell.verdict-pass a"):
        click_and_wait(browser, selector)
    folder = out.as_uri()
    assert all(url.startswith(folder + "/") for url in browser.requested()), browser.requested()


# -- drawing -------------------------------------------------------------------------------------------------

def test_every_matrix_cell_is_drawn_in_its_verdicts_colour(example, browser, tmp_path):
    model, out = example
    browser.open((out / "report.html").as_uri())
    browser.js('document.querySelector(".matrix-wrap").style.maxHeight = "none"')
    browser.js('document.getElementById("broker-matrix").scrollIntoView()')
    shot = decode_png(browser.screenshot(tmp_path / "matrix.png", full_page=True).read_bytes())
    assert shot.pixel(5, 5) == rgb("#24292f")                    # the title bar
    expected = Counter(c["verdict"] for c in model["requirement_cells"])
    expected["not-run"] = len(model["requirements"]) * len(model["columns"]) - len(model["requirement_cells"])
    blocks = []
    for verdict, (background, _, _) in VERDICT_STYLE.items():
        found = colour_blocks(shot, rgb(background), min_width=70, min_height=30)
        assert len(found) == expected[verdict], f"{verdict}: {len(found)} cells drawn, expected {expected[verdict]}"
        blocks += found
    xs, ys = clusters(b[0] for b in blocks), clusters(b[1] for b in blocks)
    assert len(xs) == len(model["columns"]) and len(ys) == len(model["requirements"])
    assert len(blocks) == len(xs) * len(ys)


def test_the_nightly_summary_is_short_and_names_every_must_failure(nightly):
    model, out = nightly
    text = (out / "report.md").read_text("utf-8")
    assert len(text.splitlines()) <= 100
    assert text.index("### Brokers: 16 releases") < text.index("### Client libraries: 9 releases")
    named = set(re.findall(r"^- `([^`]+)` `([^`]+)` — ", text, re.M))
    must = {(g["case_id"], g["requirement_id"]) for g in model["finding_groups"] if g["level"] == "MUST"}
    assert must and must <= named
    assert "| Artemis 2.17.0 |" in text and "| rhea 3.0.5 (JavaScript) |" in text and "@" not in text
