"""Report page benchmark: how big the HTML report is and how fast Chromium opens it, for one run and for a nightly
history of N runs made of real runs, printing one JSON object.

The sources are real run directories (`amqp-conformance run --broker ...`, `run --client ...`). For each history
size (1 night, then --nights), their records are replayed as nightly runs (conformance.history.synthetic
.write_nightly_history: every source broker a column, each night a new run id and start, durations within
±10 %, transcripts beside them; with several source runs of a broker, the nights take them in turn, so real
run-to-run differences show), `amqp-conformance report` ingests them into a fresh history (local Spark) and
writes the report, and headless Chromium (tests/report/cdp.py) opens report.html --repeat times. Per size:
`report_s` (ingest and report, wall), `html_bytes`, `side_files`, `side_bytes`, `json_bytes`, `md_lines`,
`must_lines` (report.md lines naming a MUST failure), and from Chromium, medians over the loads: `load_ms`
(navigation start to the end of the load event, the page's own clock), `paint_ms` (first contentful paint),
`open_ms` (from the navigate command to the load event, as the test driver sees it), `finding_ms` (a click on a
failing matrix cell until its finding page is drawn) and `requests` (what the first screen loaded).
`--screens DIR` also saves three screenshots of the larger history: the first screen, the broker matrix and one
finding page. Targets (issue #41): report.html < 5 MB and load < 2 s for 30 nightly runs of the broker matrix.

Usage: .venv/bin/python benchmarks/report_page.py RUN_DIR [RUN_DIR ...] [--nights 30] [--repeat 5]
       [--work /tmp/amqp-conformance-report-page] [--screens DIR]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import re
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "report"))

from cdp import Chromium  # noqa: E402  (the test's DevTools driver)

from conformance.cli import main as cli  # noqa: E402
from conformance.history.synthetic import write_nightly_history  # noqa: E402

TARGET_BYTES = 5_000_000
TARGET_LOAD_S = 2.0
FAIL_CELL = "#broker-matrix td.cell.verdict-fail a, #client-matrix td.cell.verdict-fail a"
PANEL = 'document.getElementById("side-body").getAttribute("data-state")'


def measure_page(page: Path, repeat: int, screens: Path | None) -> dict:
    loads, paints, opens, findings = [], [], [], []
    requests: list[str] = []
    with Chromium(Path(tempfile.mkdtemp(prefix="chromium-profile-"))) as browser:
        for n in range(repeat):
            opens.append(browser.open(page.as_uri()) * 1000)
            loads.append(browser.js('performance.getEntriesByType("navigation")[0].loadEventEnd'))
            paints.append(browser.wait_for('(performance.getEntriesByName("first-contentful-paint")[0] || {})'
                                           '.startTime', "the first contentful paint", timeout=5.0))
            if n == 0:
                requests = browser.requested()
                if screens:
                    browser.screenshot(screens / "report-first-screen.png")
                    browser.js('document.getElementById("broker-matrix-title").scrollIntoView()')
                    browser.screenshot(screens / "report-broker-matrix.png")
                    browser.js("window.scrollTo(0, 0)")
            started = time.monotonic()
            browser.click(FAIL_CELL)
            browser.wait_for(f'{PANEL} === "loaded" && !!document.querySelector("#side-body pre.ladder")',
                             "the finding page and its transcript")
            findings.append((time.monotonic() - started) * 1000)
            if n == 0 and screens:
                browser.screenshot(screens / "report-finding-page.png")
                (screens / "report-finding-page.txt").write_text(browser.js("location.href") + "\n", "utf-8")
            browser.open("about:blank")
            browser.events.clear()
    return {"load_ms": round(statistics.median(loads), 1), "paint_ms": round(statistics.median(paints), 1),
            "open_ms": round(statistics.median(opens), 1), "finding_ms": round(statistics.median(findings), 1),
            "loads_ms": [round(x, 1) for x in loads], "requests": len(requests)}


def measure(sources: list[Path], nights: int, work: Path, repeat: int, screens: Path | None) -> dict:
    reports = work / f"nights-{nights}"
    shutil.rmtree(reports, ignore_errors=True)
    runs = write_nightly_history(reports, sources, nights)
    records = sum(1 for run in runs for _ in open(run / "results.jsonl", encoding="utf-8"))
    started = time.monotonic()
    with contextlib.redirect_stdout(sys.stderr):          # stdout holds the JSON only
        code = cli(["report", "--reports-dir", str(reports)])
    report_s = time.monotonic() - started
    if code != 0:
        raise SystemExit(f"error: amqp-conformance report exited {code}")
    out = reports / "report"
    side = [p for p in (out / "report.files").rglob("*") if p.is_file()]
    markdown = (out / "report.md").read_text("utf-8")
    model = json.loads((out / "report.json").read_text("utf-8"))
    result = {
        "nights": nights, "records": records, "columns": len(model["columns"]),
        "brokers": sum(1 for c in model["columns"] if c.get("subject") != "client"),
        "clients": sum(1 for c in model["columns"] if c.get("subject") == "client"),
        "report_s": round(report_s, 1), "html_bytes": (out / "report.html").stat().st_size,
        "side_files": len(side), "side_bytes": sum(p.stat().st_size for p in side),
        "json_bytes": (out / "report.json").stat().st_size, "md_lines": len(markdown.splitlines()),
        "must_lines": sum(len(re.findall(r"^- `[^`]+` `[^`]+` — ", part.split("\n\n**", 1)[0], re.M))
                          for part in markdown.split("**MUST failures")[1:]),
        "report_dir": str(out),
    }
    result.update(measure_page(out / "report.html", repeat, screens))
    result["html_ok"] = result["html_bytes"] < TARGET_BYTES
    result["load_ok"] = result["load_ms"] < TARGET_LOAD_S * 1000
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("runs", nargs="+", help="real run directories to replay")
    parser.add_argument("--nights", type=int, default=30)
    parser.add_argument("--repeat", type=int, default=5, help="page loads per size (medians are reported)")
    parser.add_argument("--work", default=os.path.join(tempfile.gettempdir(), "amqp-conformance-report-page"))
    parser.add_argument("--screens", default=None, help="save screenshots of the larger history here")
    args = parser.parse_args()
    sources = [Path(r) for r in args.runs]
    for run in sources:
        if not (run / "results.jsonl").is_file():
            parser.error(f"{run} is not a run directory (no results.jsonl)")
    if args.nights < 1 or args.repeat < 1:
        parser.error("--nights and --repeat take a number of at least 1")
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    screens = Path(args.screens) if args.screens else None
    if screens:
        screens.mkdir(parents=True, exist_ok=True)
    sizes = [1] + ([args.nights] if args.nights > 1 else [])
    results = [measure(sources, n, work, args.repeat, screens if n == sizes[-1] else None) for n in sizes]
    print(json.dumps({"benchmark": "report_page", "machine": platform.node(), "cpus": os.cpu_count(),
                      "sources": [str(s) for s in sources], "targets": {"html_bytes": TARGET_BYTES,
                                                                        "load_s": TARGET_LOAD_S},
                      "sizes": results}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
