"""The console in verdicts: one line per case (verdict word, case id, broker, duration, the deciding reason and
how many more findings), a progress bar with counts per verdict only on a terminal outside CI, colour only
there and never with NO_COLOR, the closing verdict table, and --json records alone on their stream."""

from __future__ import annotations

import io
import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from conformance.run.console import Console, deciding_reason, other_findings

ESC = "\x1b["


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def record(case_id="2.6.7/1", verdict="fail", broker="rabbitmq-4.0", **extra):
    base = {"case_id": case_id, "verdict": verdict, "broker": broker, "duration_s": 0.532, "level": "MUST",
            "reason": "drain did not advance the delivery-count", "violated": "2.6.7/drain-advance"}
    return {**base, **extra}


def finished(console: Console, records: list[dict], tmp_path: Path) -> None:
    console.end(SimpleNamespace(records=records, run=SimpleNamespace(path=tmp_path)))


def test_a_line_per_case_with_the_deciding_reason_and_more_findings():
    console = Console(io.StringIO(), environ={})
    findings = [{"requirement": "2.6.7/drain-advance"}, {"requirement": "2.7.4/echo"}, {"requirement": "x"}]
    line = console.case_line(record(findings=findings))
    assert line.split()[:5] == ["fail", "2.6.7/1", "rabbitmq-4.0", "0.53", "s"]
    assert line.endswith("2.6.7/drain-advance: drain did not advance the delivery-count (+2 more findings)")
    assert console.case_line(record(verdict="pass")).split() == ["pass", "2.6.7/1", "rabbitmq-4.0", "0.53", "s"]
    assert deciding_reason(record(findings=findings[:1])) == ("2.6.7/drain-advance: drain did not advance the "
                                                              "delivery-count")
    assert deciding_reason(record(violated=None, verdict="error", reason="timed out\nwaiting")) == "timed out waiting"


def test_the_other_findings_are_listed_under_the_deciding_one():
    out = io.StringIO()
    console = Console(out, environ={})
    findings = [{"requirement": "2.6.7/drain-advance", "level": "MUST", "verdict": "fail", "reason": "unanswered"},
                {"requirement": "2.6.7/drain-behaviour", "level": "SHOULD", "verdict": "non-strict",
                 "reason": "expected 3 transfers,\n2 arrived"}]
    assert other_findings(record(findings=findings)) == [
        "2.6.7/drain-behaviour (SHOULD, non-strict): expected 3 transfers, 2 arrived"]
    console.case(record(findings=findings))
    lines = out.getvalue().splitlines()
    assert lines[-2].startswith("fail") and lines[-1].split()[:2] == ["also", "2.6.7/drain-behaviour"]


@pytest.mark.parametrize("stream, environ, live, colour", [
    (Terminal(), {}, True, True),
    (Terminal(), {"NO_COLOR": "1"}, True, False),
    (Terminal(), {"CI": "true"}, False, False),
    (io.StringIO(), {}, False, False),
])
def test_bar_and_colour_only_on_a_terminal_outside_ci(stream, environ, live, colour, tmp_path):
    console = Console(stream, environ=environ)
    console.begin(2, tmp_path, cases=2, targets=["rabbitmq-4.0"])
    console.case(record())
    console.case(record(case_id="2.6.8/1", verdict="pass"))
    finished(console, [record(), record(case_id="2.6.8/1", verdict="pass")], tmp_path)
    text = stream.getvalue()
    assert ("[####" in text) is live and ("2/2" in text) is live, "the progress bar"
    assert (ESC + "1;31m" in text) is colour
    if live:
        plain = text.replace(ESC + "1;31m", "").replace(ESC + "32m", "").replace(ESC + "0m", "")
        assert "2/2  1 pass  1 fail" in plain, "counts per verdict on the bar"
    else:
        assert "\r" not in text and ESC not in text


def test_the_closing_summary_is_the_verdict_table(tmp_path):
    stream = io.StringIO()
    console = Console(stream, environ={"CI": "1"})
    records = [record(case_id="2.6.8/1", verdict="pass", broker="b1"), record(case_id="2.6.8/1", broker="b2"),
               record(case_id="2.5.6/1", verdict="unsupported", broker="b1"),
               record(case_id="2.5.6/1", verdict="error", broker="b2", level="SHOULD")]
    console.begin(4, tmp_path, cases=2, targets=["b1", "b2"])
    finished(console, records, tmp_path)
    text = stream.getvalue()
    table = text[text.index("\ncase"):].splitlines()[1:]
    assert table[0].split() == ["case", "b1", "b2"]
    assert table[1].split() == ["2.5.6/1", "unsupported", "error"]          # catalogue order
    assert table[2].split() == ["2.6.8/1", "pass", "fail"]
    counts = table[table.index("") + 1:]
    assert counts[0].split() == ["verdicts", "b1", "b2"]
    assert {tuple(line.split()) for line in counts[1:5]} >= {("pass", "1", "0"), ("fail", "0", "1"),
                                                            ("unsupported", "1", "0"), ("error", "0", "1")}
    assert "exit 14: 1 case ended in error" in text
    assert "passed" not in text and "failed," not in text


def test_json_records_alone_on_their_stream(tmp_path):
    human, machine = io.StringIO(), io.StringIO()
    console = Console(human, json_stream=machine, environ={})
    console.begin(1, tmp_path, cases=1, targets=["b"])
    console.case(record())
    finished(console, [record()], tmp_path)
    [line] = machine.getvalue().splitlines()
    assert json.loads(line) == record()
    assert "2.6.7/1" in human.getvalue() and "{" not in human.getvalue()
