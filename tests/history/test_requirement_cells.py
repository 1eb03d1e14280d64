"""The verdict of a requirement cell (one requirement on one broker@version, judged by several cases) is the
worst of theirs by REQUIREMENT_SEVERITY, stated here as an order and checked on the report model (no Spark:
`model_from_aggregates` is the plain-Python part of the report)."""

from __future__ import annotations

import itertools

import pytest

from conformance.cases import load_all
from conformance.history.analysis import model_from_aggregates
from conformance.verdict import REQUIREMENT_SEVERITY, SEVERITY

# test data: the orders, worst first, as the docs state them (docs/results.md, conformance/verdict.py)
REQUIREMENT_ORDER = ["fail", "non-strict", "error", "pass", "informational", "unsupported"]
CASE_ORDER = ["error", "fail", "non-strict", "unsupported", "informational", "pass"]
REQUIREMENT = "2.7.4/echo"          # a SHOULD: the cases citing it give non-strict when it is broken
COLUMN = "ref@1.0"


def test_both_severity_orders_as_orders():
    assert sorted(REQUIREMENT_SEVERITY, key=REQUIREMENT_SEVERITY.get, reverse=True) == REQUIREMENT_ORDER
    assert [str(v) for v in sorted(SEVERITY, key=SEVERITY.get, reverse=True)] == CASE_ORDER
    assert len(set(REQUIREMENT_SEVERITY.values())) == len(REQUIREMENT_SEVERITY)


def _cell(verdicts: dict[str, tuple[str, str | None]]) -> str:
    """The requirement cell of REQUIREMENT when each case (id -> (verdict, violated)) judged it so."""
    columns = {COLUMN: {"broker": "ref", "version": "1.0", "product": "Ref", "runs": 1, "last_run_id": "r1",
                        "last_run_at": "2026-01-01T00:00:00Z"}}
    specs = load_all()
    aggregates = [{"case_id": cid, "broker": "ref", "version": "1.0", "column": COLUMN, "verdict": verdict,
                   "reason": "", "violated": violated, "run_id": "r1", "duration_s": 0.1,
                   "section": specs[cid].section, "level": specs[cid].level,
                   "requirement_ids": list(specs[cid].requirements), "records": 1, "findings": [],
                   "producer": None, "verdict_counts": {verdict: 1}, "mean_s": 0.1, "min_s": 0.1, "max_s": 0.1}
                  for cid, (verdict, violated) in verdicts.items()]
    model = model_from_aggregates(aggregates, columns, {}, history_runs=1, total_records=len(aggregates), ladders={})
    [cell] = [c for c in model["requirement_cells"] if c["requirement_id"] == REQUIREMENT and c["column"] == COLUMN]
    return cell["verdict"]


def _citing(n: int) -> list[str]:
    cases = [cid for cid, spec in sorted(load_all().items()) if REQUIREMENT in spec.judged]
    assert len(cases) >= n, f"fewer than {n} cases judge {REQUIREMENT}"
    return cases[:n]


def test_non_strict_in_one_case_and_informational_in_another_shows_non_strict():
    a, b = _citing(2)
    assert _cell({a: ("non-strict", REQUIREMENT), b: ("informational", None)}) == "non-strict"
    assert _cell({a: ("informational", None), b: ("non-strict", REQUIREMENT)}) == "non-strict"


@pytest.mark.parametrize("worse, better", list(itertools.combinations(REQUIREMENT_ORDER, 2)))
def test_the_worse_verdict_shows_in_the_cell(worse, better):
    a, b = _citing(2)
    violated = lambda v: REQUIREMENT if v in ("fail", "non-strict") else None   # noqa: E731
    assert _cell({a: (worse, violated(worse)), b: (better, violated(better))}) == worse
    assert _cell({a: (better, violated(better)), b: (worse, violated(worse))}) == worse
