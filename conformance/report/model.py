"""The report model: the one JSON document both renderers read (also written beside them as report.json).

This module owns the model's schema, its validation and a realistic example. The model is built elsewhere
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

Optional, for readers (conformance.history.analysis writes them; the renderers fall back without them): a
column's "subject" ("broker" | "client": brokers and client libraries are reported apart), "label" (the
release as people say it: "Artemis 2.17.0", "rhea 3.0.5"), "series_label", "language" (a library's),
"run_args" (the `run` arguments that test it again: "--broker artemis-2.17.0", "--client rhea-3.0.5") and
"bisect_series" (the series `bisect --series` walks); a case's "subject" (the requirements it exists to judge);
a cell's "started_at", "finding_details" ([{requirement, level, verdict, reason, expected, actual,
frame_index, connection, source}], deciding first), "has_ladder" (report.json, whose cells leave the ladder
out), "bug_report" and "bug_report_path" (a client library's ready-to-file report from its run directory),
"expectation" and "expectation_reason" (`--expect`); a requirement cell's "deciding" (the case ids that gave
it its verdict: conformance.report.findings.deciding_of); "finding_groups" (one per subject, series, case and
deciding requirement: conformance.report.findings.finding_groups) and "bisects" (conformance.history.bisect_log).

VERDICT is one of pass, fail, non-strict, informational, unsupported, error. The judged verdicts are pass,
fail and non-strict; score = passed / judged (0 when nothing was judged). Every column, case and
requirement named anywhere must be listed in "columns", "cases" and "requirements"; a (case, column) or
(requirement, column) pair appears at most once. A missing cell means the case was not run there.
"""

from __future__ import annotations

from typing import Any

from ..verdict import BROKEN, JUDGED as JUDGED_VERDICTS, REQUIREMENT_SEVERITY, SEVERITY, VERDICTS, Verdict
LEVELS = ("MUST", "SHOULD", "MAY", "informative")
CHANGE_KINDS = ("regression", "fix", "change")

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


def _example_findings(case_id: str, verdict: str) -> list[str]:
    """Findings of an example cell, deciding first (a fail also broke a SHOULD on the way)."""
    violated = _EXAMPLE_VIOLATED.get(case_id)
    if verdict not in BROKEN or not violated:
        return []
    out = [f"{violated} ({'MUST' if verdict == 'fail' else 'SHOULD'}, {verdict}): {_EXAMPLE_REASONS[verdict]}"]
    if verdict == "fail":
        out.append("2.6.7/drain-behaviour (SHOULD, non-strict): expected 3 transfers, 2 arrived")
    return out


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


# -- example ------------------------------------------------------------------------------------------------

_EXAMPLE_COLUMNS = [
    ("qpid-proton-c", "Qpid Proton C", "0.39.0", 3, "2025-11-20T09:12:04Z"),
    ("rabbitmq-3.10", "RabbitMQ", "3.10.8", 2, "2025-11-19T17:40:51Z"),
    ("rabbitmq-4.0", "RabbitMQ", "4.0.4", 2, "2025-11-12T08:03:30Z"),
    ("rabbitmq-4.0", "RabbitMQ", "4.0.5", 4, "2025-11-21T14:27:09Z"),
]

_EXAMPLE_REQUIREMENTS = [
    ("2.5.6/update-from-flow", "MUST", "When the endpoint receives a flow frame from its peer, it MUST update the "
     "next-incoming-id directly from the next-outgoing-id of the frame, and it MUST update the "
     "remote-outgoing-window directly from the outgoing-window of the frame."),
    ("2.6.7/credit-formula", "MUST", "The sender’s value MUST always be maintained in such a way as to match the "
     "delivery-limit identified by the receiver. This means that the sender’s link-credit variable MUST be set "
     "according to this formula when flow information is given by the receiver: link-credit<sub>snd</sub> := "
     "delivery-count<sub>rcv</sub> + link-credit<sub>rcv</sub> - delivery-count<sub>snd</sub>."),
    ("2.6.7/drain-advance", "MUST", "If the sender’s drain flag is set and there are no available messages, the "
     "sender MUST advance its delivery-count until link-credit is zero, and send its updated flow state to the "
     "receiver."),
    ("2.6.7/drain-behaviour", "SHOULD", "The drain flag indicates how the sender SHOULD behave when insufficient "
     "messages are available to consume the current link-credit. If set, the sender will (after sending all "
     "available messages) advance the delivery-count as much as possible, consuming all link-credit, and send "
     "the flow state to the receiver."),
    ("2.6.7/no-send-without-credit", "MUST", "If the link-credit is less than or equal to zero, i.e., the "
     "delivery-count is the same as or greater than the delivery-limit, a sender MUST NOT send more messages."),
    ("2.6.8/synchronous-get", "informative", "A synchronous get of a message from a link is accomplished by "
     "incrementing the link-credit, sending the updated flow state, and waiting indefinitely for a transfer to "
     "arrive."),
    ("2.6.10/stopping-a-link", "MAY", "Stopping the transfers on a given link is accomplished by updating the "
     "link-credit to be zero and sending the updated flow state. It is possible that some transfers could be in "
     "flight at the time the flow state is sent, so incoming transfers could still arrive on the link. The echo "
     "field of the flow frame MAY be used to request the sender’s flow state be echoed back. This MAY be used "
     "to determine when the link has finally quiesced."),
    ("2.7.4/echo", "SHOULD", "If set to true then the receiver SHOULD send its state at the earliest convenient "
     "opportunity."),
    ("2.7.4/echo-no-loop", "SHOULD", "Note that if a peer responds to echo requests with flows which themselves "
     "have the echo field set to true, an infinite loop could result if its partner adopts the same policy "
     "(therefore such a policy SHOULD be avoided)."),
    ("2.7.4/unattached-handle", "MUST", "If set to a handle that is not currently associated with an attached "
     "link, the recipient MUST respond by ending the session with an unattached-handle session error."),
]

_EXAMPLE_CASES = [
    ("2.5.6/3", "The broker's flows carry next-incoming-id and next-outgoing-id consistent with the transfers",
     "MUST", ["2.5.6/update-from-flow", "2.7.4/echo"]),
    ("2.5.6/4", "Memory alarm: publisher throttled by flow control, consumers unaffected, nothing lost",
     "MUST", ["2.6.7/no-send-without-credit"]),
    ("2.6.7/1", "Drain with credit N and fewer than N messages: all messages, then delivery-count advanced",
     "MUST", ["2.6.7/drain-advance", "2.6.7/drain-behaviour"]),
    ("2.6.7/2", "Drain with link-credit 0", "MUST", ["2.6.7/drain-advance", "2.6.7/no-send-without-credit"]),
    ("2.6.7/3", "Link-credit is set, not added: two flows with credit 50 allow at most 50 transfers",
     "MUST", ["2.6.7/credit-formula", "2.6.7/no-send-without-credit"]),
    ("2.6.7/5", "Delivery-count reconciliation: a stale delivery-count(rcv) shrinks the credit",
     "MUST", ["2.6.7/credit-formula"]),
    ("2.6.8/1", "Synchronous get: link-credit 1 yields exactly one transfer, then nothing",
     "MUST", ["2.6.8/synchronous-get", "2.6.7/no-send-without-credit"]),
    ("2.6.10/1", "Stopping a link: after the echoed flow no transfer arrives; new credit resumes delivery",
     "MUST", ["2.6.10/stopping-a-link", "2.6.7/no-send-without-credit", "2.7.4/echo"]),
    ("2.7.4/1", "Echo on a link flow: the broker answers with its link state, without echo",
     "SHOULD", ["2.7.4/echo", "2.7.4/echo-no-loop"]),
    ("2.7.4/3", "Flow on an unattached handle: the session is ended with unattached-handle",
     "MUST", ["2.7.4/unattached-handle"]),
]

# case id -> verdict per column (in _EXAMPLE_COLUMNS order); None = not run there.
_EXAMPLE_VERDICTS = {
    "2.5.6/3": ("pass", "pass", "pass", "pass"),
    "2.5.6/4": ("unsupported", "pass", "pass", "pass"),
    "2.6.7/1": ("pass", "non-strict", "pass", "pass"),
    "2.6.7/2": ("informational", "informational", "informational", "informational"),
    "2.6.7/3": ("pass", "fail", "pass", "pass"),
    "2.6.7/5": ("pass", "pass", "pass", "fail"),
    "2.6.8/1": ("pass", "pass", "pass", "pass"),
    "2.6.10/1": ("pass", "pass", "pass", None),
    "2.7.4/1": ("non-strict", "pass", "pass", "pass"),
    "2.7.4/3": ("pass", "error", "error", "pass"),
}

_EXAMPLE_REASONS = {
    Verdict.PASS.value: "every requirement the case checks held",
    Verdict.FAIL.value: 'a transfer arrived beyond the delivery-limit: expected link-credit <= 0 after "flow", '
            "got transfer(handle=0, delivery-id=50, settled=false) & more",
    Verdict.NON_STRICT.value: "no flow answered echo=true within 0.5 s (<quiet-period>)",
    Verdict.INFORMATIONAL.value: "no transfer without credit; the broker sent no flow",
    Verdict.UNSUPPORTED.value: "the profile has no memory_alarm hook",
    Verdict.ERROR.value: "broker closed the connection: amqp:internal-error \"node <rabbit@localhost> down\"",
}

_EXAMPLE_VIOLATED = {"2.6.7/3": "2.6.7/credit-formula", "2.6.7/5": "2.6.7/credit-formula",
                     "2.6.7/1": "2.6.7/drain-behaviour", "2.7.4/1": "2.7.4/echo"}


def _example_ladder(case_id: str, verdict: str) -> str:
    rows = [
        ("out", "attach(name=recv-1, handle=0, role=receiver)"),
        ("in", "attach(name=recv-1, handle=0, role=sender, initial-delivery-count=0xfffffffb)"),
        ("out", "flow(handle=0, delivery-count=0xfffffffb, link-credit=50, next-incoming-id=0)"),
        ("in", "transfer(handle=0, delivery-id=0, settled=false)"),
        ("in", "transfer(handle=0, delivery-id=1, settled=false)"),
        ("out", "flow(handle=0, delivery-count=0xfffffffb, link-credit=50, echo=true)"),
    ]
    if verdict == "fail":
        rows.append(("in", "transfer(handle=0, delivery-id=50, settled=false) <-- beyond the delivery-limit"))
    else:
        rows.append(("in", "flow(handle=0, delivery-count=0xfffffffd, link-credit=48)"))
    col = 43
    lines = [f"{'t (ms)':>9}  {'Receiver (peer)':<{col}}  {'':<11}  Sender (broker)", f"{'':>9}  " + "=" * 99]
    for index, (direction, text) in enumerate(rows):
        stamp = f"{index * 1.7 + 0.4:9.1f}"
        if direction == "out":
            if len(text) > col:
                lines += [f"{stamp}  {text}", f"{'':>9}  {'':<{col}}  ---------->"]
            else:
                lines.append(f"{stamp}  {text:<{col}}  ---------->")
        else:
            lines.append(f"{stamp}  {'':<{col}}  <----------  {text}")
    lines.append(f"{'':>9}  " + "-" * 99)
    return f"connection {case_id} #1\n" + "\n".join(line.rstrip() for line in lines)


def _score_rows(cells: list[dict], group_of) -> dict[tuple, list[int]]:
    totals: dict[tuple, list[int]] = {}
    for cell in cells:
        key = (cell["column"], *group_of(cell))
        passed_judged = totals.setdefault(key, [0, 0])
        if cell["verdict"] in JUDGED_VERDICTS:
            passed_judged[1] += 1
            passed_judged[0] += cell["verdict"] == "pass"
    return totals


def example_model() -> dict:
    """A small, realistic, valid model: 3 brokers (4 broker@version columns), 10 requirements, 10 cases.

    It holds every verdict, a cell that was not run, a flaky cell, a regression, a fix, and reasons and
    ladders with characters that must be escaped (<, >, &, quotes).
    """
    columns = [{"key": f"{broker}@{version}", "broker": broker, "product": product, "version": version,
                "runs": runs, "last_run_id": last_at.replace("-", "").replace(":", "") + f"-{4100 + n}",
                "last_run_at": last_at, "series": broker.split("-")[0] if broker.startswith("rabbitmq") else broker}
               for n, (broker, product, version, runs, last_at) in enumerate(_EXAMPLE_COLUMNS)]
    section_of = lambda requirement_or_case_id: requirement_or_case_id.split("/")[0]  # noqa: E731
    cases = [{"id": case_id, "title": title, "section": section_of(case_id), "level": level,
              "requirement_ids": requirement_ids, "model_requirement_ids": []}
             for case_id, title, level, requirement_ids in _EXAMPLE_CASES]
    requirements = [{"id": rid, "section": section_of(rid), "part": "2 Transport", "level": level, "text": text,
                     "cases": [c["id"] for c in cases if rid in c["requirement_ids"]]}
                    for rid, level, text in _EXAMPLE_REQUIREMENTS]
    level_of = {c["id"]: c["level"] for c in cases}

    cells = []
    for case_number, (case_id, verdicts) in enumerate(_EXAMPLE_VERDICTS.items()):
        for column_index, (column, verdict) in enumerate(zip(columns, verdicts)):
            if verdict is None:
                continue
            counts = {verdict: column["runs"]}
            flaky = case_id == "2.7.4/1" and column_index == 3
            if flaky:
                counts = {"pass": 3, "non-strict": 1}
            cells.append({
                "case_id": case_id, "column": column["key"], "verdict": verdict,
                "reason": _EXAMPLE_REASONS[verdict], "run_id": column["last_run_id"],
                "duration_s": round(0.05 + 0.13 * case_number + 0.21 * column_index, 3),
                "ladder": None if verdict == "unsupported" else _example_ladder(case_id, verdict),
                "violated": _EXAMPLE_VIOLATED.get(case_id) if verdict in BROKEN else None,
                "findings": _example_findings(case_id, verdict), "verdict_counts": counts, "flaky": flaky,
            })

    requirement_cells = []
    for requirement in requirements:
        for column in columns:
            behind = [c for c in cells if c["column"] == column["key"] and c["case_id"] in requirement["cases"]]
            if behind:
                worst = max((c["verdict"] for c in behind), key=REQUIREMENT_SEVERITY.__getitem__)
                requirement_cells.append({"requirement_id": requirement["id"], "column": column["key"],
                                          "verdict": worst, "case_ids": [c["case_id"] for c in behind]})

    def score_list(totals: dict[tuple, list[int]], *names: str) -> list[dict]:
        return [{"column": key[0], **dict(zip(names, key[1:])), "passed": p, "judged": j,
                 "score": round(p / j, 4) if j else 0.0} for key, (p, j) in totals.items()]

    scores = {
        "overall": score_list(_score_rows(cells, lambda c: ())),
        "by_section": score_list(_score_rows(cells, lambda c: (section_of(c["case_id"]),)), "section"),
        "by_level": score_list(_score_rows(cells, lambda c: (level_of[c["case_id"]],)), "level"),
    }

    changes = []
    older, newer = columns[2]["key"], columns[3]["key"]
    by_key = {(c["case_id"], c["column"]): c for c in cells}
    for case_id in _EXAMPLE_VERDICTS:
        before, after = by_key.get((case_id, older)), by_key.get((case_id, newer))
        if before and after and before["verdict"] != after["verdict"]:
            worse = SEVERITY[Verdict(after["verdict"])] > SEVERITY[Verdict(before["verdict"])]
            changes.append({"case_id": case_id, "broker": "rabbitmq-4.0", "from_column": older, "to_column": newer,
                            "from_verdict": before["verdict"], "to_verdict": after["verdict"],
                            "kind": "regression" if worse else "fix"})

    flaky = [{"case_id": c["case_id"], "column": c["column"], "verdict_counts": c["verdict_counts"]}
             for c in cells if c["flaky"]]

    durations = []
    for cell in cells:
        column_index, column = next((i, col) for i, col in enumerate(columns) if col["key"] == cell["column"])
        seed = column_index * 3 + sum(map(ord, cell["case_id"]))
        series = [[f"2025-11-{10 + 3 * run:02d}T09:00:00Z",
                   round(cell["duration_s"] * (1 + ((run * 5 + seed) % 7 - 3) * 0.09), 3)]
                  for run in range(column["runs"])]
        series[-1][1] = cell["duration_s"]
        seconds = [s for _, s in series]
        durations.append({"case_id": cell["case_id"], "column": cell["column"], "runs": len(series),
                          "mean_s": round(sum(seconds) / len(seconds), 4), "min_s": min(seconds),
                          "max_s": max(seconds), "last_s": seconds[-1], "series": series})

    return {
        "generated_at": "2025-11-21T15:00:00Z", "suite_version": "0.1.0",
        "history": {"runs": sum(c["runs"] for c in columns), "records": sum(
            sum(c["verdict_counts"].values()) for c in cells)},
        "columns": columns, "requirements": requirements, "cases": cases, "cells": cells,
        "requirement_cells": requirement_cells, "scores": scores, "changes": changes, "flaky": flaky,
        "durations": durations,
    }
