"""The results layer (conformance.results): the record's one line format both ways, the one check every reader
applies, the verdict predicates, and the one table of change kinds over every pair of verdicts, which `diff`,
the report and `bisect` all use."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest

from conformance.cli import main
from conformance.errors import EXIT_BAD_RESULTS, BadResults
from conformance.results import (CHANGE, CaseResult, change_kind, check_lines, is_broken, is_judged, is_untestable,
                                 parse_line, read_records, record_line)
from conformance.verdict import VERDICTS, Verdict

# test data: the verdicts by name, as a results file spells them
PASS, FAIL, NON_STRICT, INFORMATIONAL, UNSUPPORTED, ERROR = \
    "pass", "fail", "non-strict", "informational", "unsupported", "error"


def expected_kind(before: str, after: str) -> str:
    """The rule the table writes out, stated again independently: a regression when a requirement the subject
    held (or left open) is broken now, or a SHOULD it broke became a MUST; a fix the other way round; anything
    touching error or unsupported, and pass <-> informational, is a change."""
    held, broken, untestable = {PASS, INFORMATIONAL}, {FAIL, NON_STRICT}, {UNSUPPORTED, ERROR}
    if before == after:
        return "same"
    if before in untestable or after in untestable:
        return "change"
    if (before in held and after in broken) or (before, after) == (NON_STRICT, FAIL):
        return "regression"
    if (before in broken and after in held) or (before, after) == (FAIL, NON_STRICT):
        return "fix"
    return "change"


def test_the_table_covers_every_pair_of_verdicts_once():
    assert set(VERDICTS) == {PASS, FAIL, NON_STRICT, INFORMATIONAL, UNSUPPORTED, ERROR}
    assert set(CHANGE) == set(itertools.product(VERDICTS, VERDICTS)) and len(CHANGE) == len(VERDICTS) ** 2


@pytest.mark.parametrize("before, after", list(itertools.product(
    [PASS, FAIL, NON_STRICT, INFORMATIONAL, UNSUPPORTED, ERROR], repeat=2)))
def test_the_change_of_every_pair(before, after):
    assert change_kind(before, after) == CHANGE[before, after] == expected_kind(before, after)
    # a regression one way is a fix the other way; change and same are symmetric
    back = {"regression": "fix", "fix": "regression"}.get(CHANGE[before, after], CHANGE[before, after])
    assert change_kind(after, before) == back


@pytest.mark.parametrize("verdict", ["maybe", None, "", "PASS", 3])
def test_an_unknown_verdict_is_refused_by_the_change_table(verdict):
    with pytest.raises(BadResults, match="unknown verdict") as caught:
        change_kind(FAIL, verdict)
    assert caught.value.exit_code == EXIT_BAD_RESULTS == 12


def test_the_predicates():
    assert [v for v in VERDICTS if is_broken(v)] == [FAIL, NON_STRICT]
    assert [v for v in VERDICTS if is_untestable(v)] == [UNSUPPORTED, ERROR]
    assert [v for v in VERDICTS if is_judged(v)] == [PASS, FAIL, NON_STRICT]
    assert not is_broken("maybe") and not is_untestable("maybe")


def _result(**changes) -> CaseResult:
    return CaseResult(**{"case_id": "2.6.8/1", "title": "t", "section": "2.6.8", "level": "MUST",
                         "requirement_ids": ["2.6.8/synchronous-get"], "verdict": Verdict.FAIL, "reason": "why",
                         "broker": "ref", "transcripts": [{"x": 1}], "ladders": ["l"], **changes})


def test_a_record_line_both_ways():
    result = _result()
    line = record_line(result, "run-1")
    assert "\n" not in line and list(json.loads(line)) == sorted(json.loads(line))       # one sorted line
    assert parse_line(line) == {"run_id": "run-1", **result.to_record()}
    assert "transcripts" not in parse_line(line) and "ladders" not in parse_line(line)
    assert "run_id" not in parse_line(record_line(result))          # a record outside a run directory


def test_the_run_directory_writes_the_line_the_pipeline_serialised(tmp_path):
    from conformance.run.directory import RunDirectory
    run = RunDirectory(tmp_path)
    (tmp_path / "transcripts").mkdir()
    result = _result()
    line = record_line(result, "run-1")
    run.record(result, line)
    assert (tmp_path / "results.jsonl").read_text() == line + "\n"
    assert read_records(tmp_path / "results.jsonl") == [json.loads(line)]
    with pytest.raises(TypeError):
        run.record(result)                         # no second serialiser to fall back on


def _results_file(tmp_path: Path, verdict) -> Path:
    path = tmp_path / "results.jsonl"
    path.write_text(record_line(_result()) + "\n" + json.dumps({**_result().to_record(), "verdict": verdict}) + "\n")
    return path


@pytest.mark.parametrize("verdict", ["maybe", None])
def test_every_reader_refuses_an_unknown_verdict_with_one_message(tmp_path, verdict):
    path = _results_file(tmp_path, verdict)
    messages = set()
    for read in (read_records, check_lines):
        with pytest.raises(BadResults) as caught:
            read(path)
        messages.add(str(caught.value))
    assert messages == {f"{path}:2 has an unknown verdict {verdict!r} (known: {', '.join(VERDICTS)}); delete that "
                        "line or re-run the case"}


def _run_dir(path: Path, verdict: str) -> Path:
    path.mkdir(parents=True)
    (path / "run.json").write_text(json.dumps({"run_id": path.name, "brokers": {}}))
    (path / "transcripts").mkdir()
    (path / "results.jsonl").write_text(json.dumps({**_result().to_record(), "run_id": path.name,
                                                    "verdict": verdict}) + "\n")
    return path


def test_diff_refuses_a_run_with_an_unknown_verdict(tmp_path, capsys):
    a, b = _run_dir(tmp_path / "a", FAIL), _run_dir(tmp_path / "b", "maybe")
    assert main(["diff", str(a), str(b)]) == EXIT_BAD_RESULTS
    out, err = capsys.readouterr()
    assert err == f"error: {b}/results.jsonl:1 has an unknown verdict 'maybe' (known: {', '.join(VERDICTS)}); " \
                  "delete that line or re-run the case\n"
    assert "->" not in out


def _planted(monkeypatch, verdicts: dict[str, str]) -> None:
    """bisect runs the case on each build through `run_case_on`: here it answers the planted verdicts."""
    from conformance.run import builds
    monkeypatch.setattr(builds, "run_case_on", lambda build, case, reports_dir, options: {
        "run_id": "r", "verdict": verdicts[build.label], "reason": "as planted"})


def test_bisect_refuses_an_unknown_verdict(monkeypatch, capsys, tmp_path):
    from conformance.history import bisect
    with pytest.raises(BadResults, match="unknown verdict 'maybe'"):
        bisect.outcome_of("maybe")
    assert [bisect.outcome_of(v) for v in VERDICTS] == [bisect.GOOD, bisect.BAD, bisect.BAD, bisect.GOOD,
                                                        bisect.SKIP, bisect.SKIP]
    _planted(monkeypatch, {"amqp://127.0.0.1:1": FAIL, "amqp://127.0.0.1:2": "maybe"})
    assert main(["bisect", "2.6.8/1", "--build", "amqp://127.0.0.1:1", "--build", "amqp://127.0.0.1:2",
                 "--no-history", "--reports-dir", str(tmp_path)]) == EXIT_BAD_RESULTS
    assert capsys.readouterr().err == "error: the record of 2.6.8/1 on amqp://127.0.0.1:2 has an unknown verdict " \
        f"'maybe' (known: {', '.join(VERDICTS)}); delete that line or re-run the case\n"
    # `git bisect run` reads 1-127 (but 125) as a bad commit: an unknown verdict aborts the bisection instead
    assert main(["bisect-run", "2.6.8/1", "--broker", "amqp://127.0.0.1:2", "--reports-dir", str(tmp_path)]) == \
        bisect.BISECT_ABORT == 128
    assert "unknown verdict 'maybe'" in capsys.readouterr().err


# -- diff, the report and bisect classify a change alike -------------------------------------------------------

def _bisect_kind(monkeypatch, capsys, tmp_path, before: str, after: str) -> str:
    """What `bisect` says of a case that gives `before` on the first build and `after` on the second."""
    _planted(monkeypatch, {"amqp://127.0.0.1:1": before, "amqp://127.0.0.1:2": after})
    code = main(["bisect", "2.6.8/1", "--build", "amqp://127.0.0.1:1", "--build", "amqp://127.0.0.1:2",
                 "--no-history", "--reports-dir", str(tmp_path)])
    out = capsys.readouterr().out
    assert code == 0, out
    [said] = [line for line in out.splitlines() if line.startswith("the verdict of 2.6.8/1 changes")]
    return said.split(f"{before} -> {after} (", 1)[1].split(")")[0]


def _report_kind(before: str, after: str) -> str:
    """The kind the report model gives the change between two versions of a broker."""
    from conformance.history.analysis import model_from_aggregates
    columns = {f"ref@{v}": {"broker": "ref", "version": v, "product": "Ref", "runs": 1, "last_run_id": f"r{v}",
                            "last_run_at": "2026-01-01T00:00:00Z"} for v in ("1.0", "1.1")}
    aggregates = [{"case_id": "2.6.8/1", "broker": "ref", "version": v, "column": f"ref@{v}", "verdict": verdict,
                   "reason": "", "violated": None, "run_id": f"r{v}", "duration_s": 0.1, "section": "2.6.8",
                   "level": "MUST", "requirement_ids": ["2.6.8/synchronous-get"], "records": 1, "findings": [],
                   "producer": None, "verdict_counts": {verdict: 1}, "mean_s": 0.1, "min_s": 0.1, "max_s": 0.1}
                  for v, verdict in (("1.0", before), ("1.1", after))]
    model = model_from_aggregates(aggregates, columns, {}, history_runs=2, total_records=2, ladders={})
    [change] = model["changes"]
    return change["kind"]


def _diff_kind(before: str, after: str) -> str:
    from conformance.history.diff import Side, compare
    result = compare(Side("a", {("2.6.8/1", "ref"): (before, "")}), Side("b", {("2.6.8/1", "ref"): (after, "")}))
    [row] = result.rows
    return row["kind"]


@pytest.mark.parametrize("before, after, kind", [
    (NON_STRICT, FAIL, "regression"), (FAIL, NON_STRICT, "fix"), (PASS, NON_STRICT, "regression"),
    (INFORMATIONAL, PASS, "change"), (PASS, INFORMATIONAL, "change"),
])
def test_diff_the_report_and_bisect_classify_a_change_alike(monkeypatch, capsys, tmp_path, before, after, kind):
    assert _diff_kind(before, after) == _report_kind(before, after) == \
        _bisect_kind(monkeypatch, capsys, tmp_path, before, after) == kind
