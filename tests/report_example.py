"""A realistic report model for the suite's own tests (test data, not product code): `example_model()`.

Three brokers (four broker@version columns), ten requirements, ten cases; every verdict, a cell that was not
run, a flaky cell, a regression, a fix and another change, and reasons and ladders with characters a renderer
must escape. The report's renderers, the browser test and the client and traffic report tests draw it; its
schema is conformance.report.model's (`validate_model`).
"""

from __future__ import annotations

from conformance.results import change_kind
from conformance.verdict import BROKEN, JUDGED as JUDGED_VERDICTS, REQUIREMENT_SEVERITY, Verdict


def _example_findings(case_id: str, verdict: str) -> list[str]:
    """Findings of an example cell, deciding first (a fail also broke a SHOULD on the way)."""
    violated = _EXAMPLE_VIOLATED.get(case_id)
    if verdict not in BROKEN or not violated:
        return []
    out = [f"{violated} ({'MUST' if verdict == 'fail' else 'SHOULD'}, {verdict}): {_EXAMPLE_REASONS[verdict]}"]
    if verdict == "fail":
        out.append("2.6.7/drain-behaviour (SHOULD, non-strict): expected 3 transfers, 2 arrived")
    return out




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
    "2.6.7/1": ("pass", "non-strict", "non-strict", "pass"),
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

    It holds every verdict, a cell that was not run, a flaky cell, a regression, a fix, another change, and
    reasons and ladders with characters that must be escaped (<, >, &, quotes).
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
            changes.append({"case_id": case_id, "broker": "rabbitmq-4.0", "from_column": older, "to_column": newer,
                            "from_verdict": before["verdict"], "to_verdict": after["verdict"],
                            "kind": change_kind(before["verdict"], after["verdict"])})

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
