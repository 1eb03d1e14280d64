"""The HTML report in a real browser: Debian's headless Chromium renders `example_model()` offline.

Checks the DOM Chromium built (the matrix has a row per requirement and a column per broker@version), the
screenshot itself (every matrix cell drawn as a block of its verdict's colour, on a grid of requirement rows
by version columns), that a case page opens through its fragment, and that the page asks the network for
nothing: every run goes through an unreachable proxy and Chromium's own network log is read back.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections import Counter
from pathlib import Path

import pytest
from htmldom import Document
from png import colour_blocks, decode_png

from conformance.report import render_html
from report_example import example_model
from conformance.report.html import VERDICT_STYLE, Anchors

CHROMIUM = Path("/usr/bin/chromium")
pytestmark = pytest.mark.skipif(not CHROMIUM.exists(), reason="Debian's Chromium is not installed at "
                                "/usr/bin/chromium (apt-get install -y chromium)")

BASE_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
              "--disable-background-networking", "--disable-component-update", "--disable-sync",
              "--hide-scrollbars", "--force-color-profile=srgb", "--force-device-scale-factor=1",
              # offline: every request goes to a proxy on the discard port, where nothing listens
              "--proxy-server=127.0.0.1:9", "--host-resolver-rules=MAP * ~NOTFOUND"]
NET_ERR_PROXY_CONNECTION_FAILED = -130


def rgb(hex_colour: str) -> tuple[int, int, int]:
    return tuple(int(hex_colour[i: i + 2], 16) for i in (1, 3, 5))


def clusters(values, tolerance: int = 3) -> list[int]:
    """Distinct positions, counting values within `tolerance` pixels as one (a cell border shifts a block)."""
    found: list[int] = []
    for value in sorted(values):
        if not found or value - found[-1] > tolerance:
            found.append(value)
    return found


class Browser:
    """Runs one headless Chromium per call with a fresh profile and a network log."""

    def __init__(self, tmp: Path):
        self.tmp = tmp
        self.runs = 0

    def run(self, url: str, *flags: str) -> tuple[str, list[dict]]:
        self.runs += 1
        profile, net_log = self.tmp / f"profile-{self.runs}", self.tmp / f"net-{self.runs}.json"
        done = subprocess.run([str(CHROMIUM), *BASE_FLAGS, f"--user-data-dir={profile}",
                               f"--log-net-log={net_log}", *flags, url],
                              capture_output=True, text=True, timeout=60, env={**os.environ, "LANG": "C.UTF-8"})
        assert done.returncode == 0, done.stderr[-2000:]
        return done.stdout, page_requests(net_log)


def page_requests(net_log: Path) -> list[dict]:
    """Requests a file:// page started (Chromium's own background requests are left out)."""
    log = json.loads(net_log.read_text("utf-8"))
    start_job = log["constants"]["logEventTypes"]["URL_REQUEST_START_JOB"]
    return [e["params"] for e in log["events"]
            if e["type"] == start_job and "url" in e.get("params", {})
            and "file://" in e["params"].get("network_isolation_key", "")]


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    return Browser(tmp_path_factory.mktemp("chromium"))


@pytest.fixture(scope="module", params=["example-model", "report-command"])
def report(request, tmp_path_factory):
    """(model, report.html): the example model rendered directly, and the page `amqp-conformance report` wrote
    from real runs against three reference brokers (through Spark)."""
    if request.param == "example-model":
        model = example_model()
        path = tmp_path_factory.mktemp("report") / "report.html"
        path.write_text(render_html(model), "utf-8")
        return model, path
    import shutil
    from conformance.cli import main
    reports = tmp_path_factory.mktemp("reports")
    shutil.copytree(request.getfixturevalue("reference_reports"), reports, dirs_exist_ok=True)
    assert main(["report", "--reports-dir", str(reports)]) == 0
    return json.loads((reports / "report" / "report.json").read_text()), reports / "report" / "report.html"


@pytest.fixture(scope="module")
def model(report):
    return report[0]


@pytest.fixture(scope="module")
def report_url(report):
    return report[1].as_uri()


def window_height(model) -> int:
    """Tall enough for the whole matrix."""
    return max(2000, 800 + 75 * len(model["requirements"]))


def test_network_is_really_cut_and_seen(browser, tmp_path):
    """The canary: a page that does reach out is caught by the network log and gets no answer."""
    canary = tmp_path / "canary.html"
    canary.write_text('<p>canary</p><img src="http://example.com/x.png">', "utf-8")
    _, requests = browser.run(canary.as_uri(), "--dump-dom")
    assert [r["url"] for r in requests] == ["http://example.com/x.png"]


def test_dom_has_the_matrix(browser, report_url, model):
    dom, requests = browser.run(report_url, "--dump-dom")
    assert requests == []
    doc = Document(dom)
    table = doc.by_id("matrix")
    assert table is not None
    rows = [e for e in doc.find_all("tr", "req-row") if table in e.ancestors()]
    assert [r.attrs["data-requirement"] for r in rows] == [r["id"] for r in model["requirements"]]
    headers = [e for e in doc.find_all("th", "broker-col") if table in e.ancestors()]
    assert [h.attrs["data-column"] for h in headers] == [c["key"] for c in model["columns"]]
    # a release series (rabbitmq-3.10, rabbitmq-4.0 ... -> rabbitmq) is one run of columns, oldest first,
    # opened by a border; its columns are labelled with the series' name
    series = [h.attrs["data-series"] for h in headers]
    assert series == [c.get("series") or c["broker"] for c in model["columns"]]
    runs = [name for i, name in enumerate(series) if i == 0 or series[i - 1] != name]
    assert len(runs) == len(set(runs)), f"a series is split: {series}"
    assert [h.attrs["data-column"] for h in headers if "series-start" in h.classes] == \
        [model["columns"][i]["key"] for i, name in enumerate(series) if i == 0 or series[i - 1] != name]
    for row in rows:
        assert len([e for e in row.children if e.tag == "td" and "cell" in e.classes]) == len(model["columns"])
    assert len(doc.find_all("section", "case-page")) == len(model["cases"])


def test_screenshot_shows_the_matrix_offline(browser, report_url, model, tmp_path):
    shot = tmp_path / "report.png"
    height = window_height(model)
    _, requests = browser.run(report_url, f"--screenshot={shot}", f"--window-size=1400,{height}")
    assert requests == []
    image = decode_png(shot.read_bytes())
    assert (image.width, image.height) == (1400, height)

    # not blank: the dark title bar is drawn and a good part of the page is not white
    assert image.pixel(5, 5) == rgb("#24292f")
    white = sum(row.count(b"\xff\xff\xff") for row in image.rows[::10])   # ~ white pixels
    assert white < 0.9 * image.width * len(image.rows[::10])

    # every matrix cell is a block of its verdict's colour (legend swatches and badges are too small)
    expected = Counter(c["verdict"] for c in model["requirement_cells"])
    expected["not-run"] = len(model["requirements"]) * len(model["columns"]) - len(model["requirement_cells"])
    blocks = []
    for verdict, (background, _, _) in VERDICT_STYLE.items():
        found = colour_blocks(image, rgb(background), min_width=100, min_height=30)
        assert len(found) == expected[verdict], f"{verdict}: {len(found)} cells drawn, expected {expected[verdict]}"
        blocks += found

    # ... and the blocks form the grid: one x per broker@version, one y per requirement, no gaps
    xs, ys = clusters(b[0] for b in blocks), clusters(b[1] for b in blocks)
    assert len(xs) == len(model["columns"]) and len(ys) == len(model["requirements"])
    assert len(blocks) == len(xs) * len(ys)
    widths = {b[2] - b[0] for b in blocks}
    assert max(widths) - min(widths) <= 4


def test_case_page_opens_from_its_fragment(browser, report_url, model, tmp_path):
    failing = next(c for c in model["cells"] if c["verdict"] == "fail")
    anchor = Anchors(c["id"] for c in model["cases"])[failing["case_id"]]
    shot = tmp_path / "case.png"
    _, requests = browser.run(f"{report_url}#{anchor}", f"--screenshot={shot}", "--window-size=1400,1000")
    assert requests == []
    image = decode_png(shot.read_bytes())
    # the case page covers the report: no matrix cell shows, the ladder's dark panel and a fail badge do
    assert colour_blocks(image, rgb(VERDICT_STYLE["pass"][0]), min_width=100, min_height=30) == []
    assert colour_blocks(image, rgb("#0d1117"), min_width=400, min_height=60)
    assert colour_blocks(image, rgb(VERDICT_STYLE["fail"][0]), min_width=20, min_height=10)
