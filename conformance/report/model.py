"""The report model: the one JSON document both renderers read (also written beside them as report.json).

This module owns the model's schema and its validation. The model is built elsewhere
(the PySpark history job); the renderers in `conformance.report.html` and `conformance.report.markdown` only
read it. A column is one broker at one version ("rabbitmq-4.0@4.0.5"); a cell is one case on one column,
as of the column's latest run.

Schema (every key listed is required; extra keys are allowed and ignored)::

    {
     "generated_at": str (ISO 8601),  "suite_version": str,
     "history": {"runs": int, "records": int},
     "columns": [{"key": str "<broker>@<version>", "broker": str, "product": str, "version": str,
                  "runs": int, "last_run_id": str, "last_run_at": str (ISO 8601)}],
     "requirements": [{"id": str, "section": str, "part": str,
                       "level": "MUST" | "SHOULD" | "MAY" | "informative",
                       "text": str (verbatim spec sentence; may hold <sub>...</sub>), "cases": [case id]}],
     "cases": [{"id": str, "title": str, "section": str, "level": str, "requirement_ids": [requirement id] (every
                requirement the case judges), "model_requirement_ids": [requirement id] (those of them only the
                flow-control model judges, over the whole exchange)}],
     "cells": [{"case_id": str, "column": str, "verdict": VERDICT, "reason": str, "run_id": str,
                "duration_s": number, "ladder": str | null, "violated": requirement id | null (the deciding
                finding's), "findings": [str] (every finding, deciding first: "<req> (<level>, <verdict>): <reason>"),
                "verdict_counts": {VERDICT: int}, "flaky": bool, "producer": {...} (optional: the
                producer-flow-control facts of 2.6.7/14 and the alarm cases, see conformance.report.producers)}],
     "requirement_cells": [{"requirement_id": str, "column": str, "verdict": VERDICT, "case_ids": [case id]}],
     "scores": {"overall":    [{"column": str, "passed": int, "judged": int, "score": number 0..1}],
                "by_section": [{"column": str, "section": str, "passed": int, "judged": int, "score": number}],
                "by_level":   [{"column": str, "level": str, "passed": int, "judged": int, "score": number}]},
     "changes": [{"case_id": str, "broker": str, "from_column": str, "to_column": str,
                  "from_verdict": VERDICT, "to_verdict": VERDICT, "kind": "regression" | "fix" | "change"}],
     "flaky": [{"case_id": str, "column": str, "verdict_counts": {VERDICT: int}}],
     "durations": [{"case_id": str, "column": str, "runs": int, "mean_s": number, "min_s": number,
                    "max_s": number, "last_s": number, "series": [[str (ISO 8601), number], ...]}]
    }

Optional: a column's "series" names the release series its broker belongs to (artemis-2.40.0 -> artemis);
the columns of one series are consecutive, oldest version first, and "changes" of a series name it as
"broker". "unfinished_runs": [{"run_id", "started_at", "brokers": [str], "records": int | null,
"scheduled": int | null, "reason": str, "broken": bool (optional)}] lists runs that never finished (interrupted
or killed; their records are kept), and a cell from such a run carries "unfinished": true; and runs that
finished broken ("broken": true: some cases ended in error, e.g. the broker died), whose cells are not marked.

VERDICT is one of pass, fail, non-strict, informational, unsupported, error. The judged verdicts are pass,
fail and non-strict; score = passed / judged (0 when nothing was judged). Every column, case and
requirement named anywhere must be listed in "columns", "cases" and "requirements"; a (case, column) or
(requirement, column) pair appears at most once. A missing cell means the case was not run there.
"""

from __future__ import annotations

from typing import Any

from ..results import CHANGED, FIX, REGRESSION
from ..verdict import VERDICTS
LEVELS = ("MUST", "SHOULD", "MAY", "informative")
CHANGE_KINDS = (REGRESSION, FIX, CHANGED)      # the kinds a change between two verdicts (results.CHANGE) can be

# Field kinds used by the tables below: "str", "int", "number", "bool", "str?" (string or null),
# "strs" (list of strings), "counts" ({verdict: int}), "series" ([[time, seconds], ...]),
# "verdict", "level", "kind", "score" (number in 0..1).
RECORD_FIELDS: dict[str, dict[str, str]] = {
    "history": {"runs": "int", "records": "int"},
    "columns": {"key": "str", "broker": "str", "product": "str", "version": "str", "runs": "int",
                "last_run_id": "str", "last_run_at": "str"},
    "requirements": {"id": "str", "section": "str", "part": "str", "level": "level", "text": "str",
                     "cases": "strs"},
    "cases": {"id": "str", "title": "str", "section": "str", "level": "level", "requirement_ids": "strs",
              "model_requirement_ids": "strs"},
    "cells": {"case_id": "str", "column": "str", "verdict": "verdict", "reason": "str", "run_id": "str",
              "duration_s": "number", "ladder": "str?", "violated": "str?", "findings": "strs",
              "verdict_counts": "counts", "flaky": "bool"},
    "requirement_cells": {"requirement_id": "str", "column": "str", "verdict": "verdict", "case_ids": "strs"},
    "scores.overall": {"column": "str", "passed": "int", "judged": "int", "score": "score"},
    "scores.by_section": {"column": "str", "section": "str", "passed": "int", "judged": "int", "score": "score"},
    "scores.by_level": {"column": "str", "level": "level", "passed": "int", "judged": "int", "score": "score"},
    "changes": {"case_id": "str", "broker": "str", "from_column": "str", "to_column": "str",
                "from_verdict": "verdict", "to_verdict": "verdict", "kind": "kind"},
    "flaky": {"case_id": "str", "column": "str", "verdict_counts": "counts"},
    "durations": {"case_id": "str", "column": "str", "runs": "int", "mean_s": "number", "min_s": "number",
                  "max_s": "number", "last_s": "number", "series": "series"},
}
TOP_LEVEL_LISTS = ("columns", "requirements", "cases", "cells", "requirement_cells", "changes", "flaky",
                   "durations")


def validate_model(model: Any) -> None:
    """Raise ValueError naming the first problem found (as a path like `cells[3].verdict`); None if valid."""
    if not isinstance(model, dict):
        raise ValueError(f"model: expected an object, got {type(model).__name__}")
    for key in ("generated_at", "suite_version"):
        _check_value(model.get(key), "str", key, present=key in model)
    _check_record(model.get("history"), "history", "history", present="history" in model)
    for name in TOP_LEVEL_LISTS:
        _check_list(model, name, name, name)
    scores = model.get("scores")
    if not isinstance(scores, dict):
        raise ValueError(f"scores: expected an object, got {_describe(scores)}")
    for name in ("overall", "by_section", "by_level"):
        _check_list(scores, name, f"scores.{name}", f"scores.{name}")
    _check_references(model)


def _describe(value: Any) -> str:
    return "nothing (missing)" if value is None else f"{type(value).__name__} {value!r:.60}"


def _check_list(container: dict, key: str, path: str, record_kind: str) -> None:
    records = container.get(key)
    if not isinstance(records, list):
        raise ValueError(f"{path}: expected a list, got {_describe(records)}")
    for index, record in enumerate(records):
        _check_record(record, record_kind, f"{path}[{index}]")


def _check_record(record: Any, record_kind: str, path: str, present: bool = True) -> None:
    if not isinstance(record, dict):
        raise ValueError(f"{path}: expected an object, got {_describe(record) if present else 'nothing (missing)'}")
    for field, kind in RECORD_FIELDS[record_kind].items():
        _check_value(record.get(field), kind, f"{path}.{field}", present=field in record)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and value == value


def _check_value(value: Any, kind: str, path: str, present: bool = True) -> None:
    if not present:
        raise ValueError(f"{path}: missing")
    problem = None
    if kind == "str" and not isinstance(value, str):
        problem = "expected a string"
    elif kind == "str?" and value is not None and not isinstance(value, str):
        problem = "expected a string or null"
    elif kind == "int" and not (_is_int(value) and value >= 0):
        problem = "expected a non-negative integer"
    elif kind == "number" and not (_is_number(value) and value >= 0):
        problem = "expected a non-negative number"
    elif kind == "score" and not (_is_number(value) and 0 <= value <= 1):
        problem = "expected a number from 0 to 1"
    elif kind == "bool" and not isinstance(value, bool):
        problem = "expected true or false"
    elif kind == "strs" and not (isinstance(value, list) and all(isinstance(v, str) for v in value)):
        problem = "expected a list of strings"
    elif kind == "verdict" and value not in VERDICTS:
        problem = f"expected one of {', '.join(VERDICTS)}"
    elif kind == "level" and value not in LEVELS:
        problem = f"expected one of {', '.join(LEVELS)}"
    elif kind == "kind" and value not in CHANGE_KINDS:
        problem = f"expected one of {', '.join(CHANGE_KINDS)}"
    elif kind == "counts":
        if not isinstance(value, dict):
            problem = "expected an object {verdict: count}"
        else:
            for verdict, count in value.items():
                if verdict not in VERDICTS:
                    raise ValueError(f"{path}: {verdict!r} is not a verdict ({', '.join(VERDICTS)})")
                if not _is_int(count) or count < 0:
                    raise ValueError(f"{path}.{verdict}: expected a non-negative integer, got {_describe(count)}")
    elif kind == "series":
        if not isinstance(value, list):
            problem = "expected a list of [time, seconds] pairs"
        else:
            for index, point in enumerate(value):
                if not (isinstance(point, list) and len(point) == 2 and isinstance(point[0], str)
                        and _is_number(point[1]) and point[1] >= 0):
                    raise ValueError(f"{path}[{index}]: expected [time, seconds], got {_describe(point)}")
    if problem:
        raise ValueError(f"{path}: {problem}, got {_describe(value)}")


def _check_unique(records: list[dict], fields: tuple[str, ...], path: str) -> None:
    seen = set()
    for index, record in enumerate(records):
        key = tuple(record[f] for f in fields)
        if key in seen:
            raise ValueError(f"{path}[{index}]: {'/'.join(fields)} {key if len(key) > 1 else key[0]!r} is listed twice")
        seen.add(key)


def _check_references(model: dict) -> None:
    _check_unique(model["columns"], ("key",), "columns")
    _check_unique(model["requirements"], ("id",), "requirements")
    _check_unique(model["cases"], ("id",), "cases")
    _check_unique(model["cells"], ("case_id", "column"), "cells")
    _check_unique(model["requirement_cells"], ("requirement_id", "column"), "requirement_cells")
    names = {
        "column": {c["key"] for c in model["columns"]},
        "case": {c["id"] for c in model["cases"]},
        "requirement": {r["id"] for r in model["requirements"]},
    }

    def expect(kind: str, value: str | None, path: str) -> None:
        if value is not None and value not in names[kind]:
            raise ValueError(f"{path}: unknown {kind} {value!r} (not in {kind}s)")

    for i, r in enumerate(model["requirements"]):
        for j, case_id in enumerate(r["cases"]):
            expect("case", case_id, f"requirements[{i}].cases[{j}]")
    for i, c in enumerate(model["cases"]):
        for j, requirement_id in enumerate(c["requirement_ids"]):
            expect("requirement", requirement_id, f"cases[{i}].requirement_ids[{j}]")
    for i, c in enumerate(model["cells"]):
        expect("case", c["case_id"], f"cells[{i}].case_id")
        expect("column", c["column"], f"cells[{i}].column")
        expect("requirement", c["violated"], f"cells[{i}].violated")
    for i, c in enumerate(model["requirement_cells"]):
        expect("requirement", c["requirement_id"], f"requirement_cells[{i}].requirement_id")
        expect("column", c["column"], f"requirement_cells[{i}].column")
        for j, case_id in enumerate(c["case_ids"]):
            expect("case", case_id, f"requirement_cells[{i}].case_ids[{j}]")
    for name in ("overall", "by_section", "by_level"):
        for i, s in enumerate(model["scores"][name]):
            expect("column", s["column"], f"scores.{name}[{i}].column")
            if s["passed"] > s["judged"]:
                raise ValueError(f"scores.{name}[{i}]: passed {s['passed']} is more than judged {s['judged']}")
    for i, c in enumerate(model["changes"]):
        expect("case", c["case_id"], f"changes[{i}].case_id")
        expect("column", c["from_column"], f"changes[{i}].from_column")
        expect("column", c["to_column"], f"changes[{i}].to_column")
    for name in ("flaky", "durations"):
        for i, f in enumerate(model[name]):
            expect("case", f["case_id"], f"{name}[{i}].case_id")
            expect("column", f["column"], f"{name}[{i}].column")
