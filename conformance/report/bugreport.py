"""A bug report a library's maintainers can act on: one Markdown page per fail or non-strict client cell.

This module owns `wanted(result)` (a client library's cell whose verdict says a requirement is broken) and
`render_bug_report(result)`: the library and release, the requirement with its section, level and quoted
sentence, what was found (expected, actual, the frame), the frames around it as a table with times (the
client's and our scripted broker's, as the transcript has them), what the application was told by each call
(the driver's answers), what the library's API leaves to the application, and the one command that reproduces
it. It is written to be pasted into the library's issue tracker as it is: it names the test suite and its
case, never a local path. The run pipeline writes it beside the transcripts (`bug-reports/<stem>.md`, see
`conformance.run.directory`). Pure: a `CaseResult` in, text out; the standard library, the catalogue and the codec's loose reading of a frame
it refused (`wire.loose`).
"""

from __future__ import annotations

from .. import catalogue
from ..verdict import BROKEN, Verdict
from ..wire.loose import describe_frame

CONTEXT = 8            # frames shown before the finding's frame (after: 4), besides the link's opening
# requirements where the library may ask the application to take part (a sender's drain): the report says
# what the library's API lets the application do there
APPLICATION_PART = ("2.6.7/drain-advance",)


def wanted(result) -> bool:
    """Whether `result` gets a bug report: a client library's case that broke a MUST or a SHOULD."""
    return result.observations.get("subject_kind") == "client" and Verdict(result.verdict).value in BROKEN \
        and bool(result.findings)


def render_bug_report(result) -> str:
    finding = result.findings[0]
    req = catalogue.get(finding["requirement"])
    lib = result.observations.get("library") or {}
    name, version = lib.get("name") or result.broker_product or result.broker, lib.get("version") or result.broker_version
    broke = "a MUST" if Verdict(result.verdict) is Verdict.FAIL else "a SHOULD"
    lines = [f"## {name} {version}: {_first_clause(finding['reason'])} (AMQP 1.0 §{req.section}, {req.level})", "",
             f"- **Library:** {name} {version}" + (f" ({lib['registry']}: `{lib['package']}`)" if lib.get("package") else ""),
             f"- **Found by:** the amqp-conformance client case `{result.case_id}`: {result.title}",
             f"- **Verdict:** {Verdict(result.verdict).value} ({broke} is broken)", "",
             "### The requirement", "",
             f"AMQP 1.0 (OASIS Standard, 29 October 2012), section {req.section}, {req.level} "
             f"(`{req.id}`):", "", f"> {req.text}", "",
             "### What happened", "", _sentence(finding["reason"]), ""]
    if finding.get("expected"):
        lines.append(f"- expected: {finding['expected']}")
    if finding.get("actual"):
        lines.append(f"- actual: `{finding['actual']}`" + (f" (frame {finding['frame_index']})"
                                                          if finding.get("frame_index") is not None else ""))
    others = result.findings[1:]
    if others:
        lines += ["", "Also found in the same exchange:"]
        lines += [f"- {f['requirement']} ({f['level']}): {f['reason']}" for f in others]
    crossing = result.observations.get("crossing")
    if crossing and crossing.get("happened"):
        lines += ["", f"The test forced the crossing, on every run: it sent `{crossing['ours']}` ({crossing['what']}) "
                      f"while {_count(crossing.get('held_unread') or [])} in its receive buffer, unread (marked in the "
                      "table)."]
    lines += ["", "### The frames", ""] + _frames(result, finding)
    lines += ["", "### What the application was told", ""] + _application(result, lib)
    if lib.get("flow_api") and req.id in APPLICATION_PART:
        lines += ["", "### What the library's API leaves to the application", "", _sentence(lib["flow_api"]) + "."]
    lines += ["", "### How to reproduce", "",
              "With amqp-conformance set up (`./dev setup`; it plays the broker on loopback and drives the library "
              "through its public API):", "", "```",
              f"amqp-conformance clients provision {result.broker} && amqp-conformance run --client "
              f"{result.broker} {result.case_id}", "```", "",
              "The run directory keeps the whole exchange (`transcripts/`) and this page (`bug-reports/`).", ""]
    return "\n".join(lines)


def _sentence(text: str) -> str:
    return text[:1].upper() + text[1:]


def _count(held: list) -> str:
    """How many frames a crossing's `held_unread` list names (it ends with "(and N more)" when cut)."""
    more = next((int(h.split()[1]) for h in held if h.startswith("(and ")), 0)
    n = len([h for h in held if not h.startswith("(and ")]) + more
    return "1 frame of the client's was" if n == 1 else f"{n} frames of the client's were"


def _first_clause(reason: str) -> str:
    """The reason up to its first comma, colon or semicolon outside parentheses (a title)."""
    text, depth = reason.split(" -- ")[0], 0
    for i, ch in enumerate(text):
        depth += {"(": 1, ")": -1}.get(ch, 0)
        if depth == 0 and ch in ",:;":
            text = text[:i]
            break
    return text if len(text) <= 140 else text[:137] + "..."


def _frames(result, finding) -> list[str]:
    """The connection's frames around the finding's frame (the link's opening first), as a table."""
    number = finding.get("connection") or 1
    transcripts = result.transcripts or []
    if not 1 <= number <= len(transcripts):
        return ["(no transcript was recorded)"]
    entries = [e for e in transcripts[number - 1].get("entries", []) if (e.get("frame_type") == "amqp"
               and e.get("name") not in (None, "empty")) or e.get("name") == "raw"]
    if not entries:
        return ["(no AMQP frames)"]
    at = finding.get("frame_index")
    pos = next((i for i, e in enumerate(entries) if e["index"] == at), len(entries) - 1)
    opening = next((i for i, e in enumerate(entries) if e.get("name") == "attach"), 0)
    show = sorted(set(range(opening, min(opening + 4, len(entries))))
                  | set(range(max(0, pos - CONTEXT), min(len(entries), pos + 5))))
    rows = [f"Connection {number}: the client library on the left, the test's scripted broker on the right; "
            "times in seconds since the connection opened.", "", "```"]
    last = None
    for i in show:
        if last is not None and i != last + 1:
            rows.append(f"{'':>9}   ... {i - last - 1} frame(s) ...")
        e = entries[i]
        arrow = "client  -->  " if e["direction"] == "in" else "        <--  "
        if e.get("name") == "raw":              # bytes the codec refused: what they say, read loosely
            e = {**e, "summary": f"{describe_frame(bytes.fromhex(e['raw'])) or 'undecodable bytes'} (undecodable: "
                                 f"{e.get('note', '')})", "note": ""}
        mark = "   <== the finding" if e["index"] == at else ""
        note = f"   [{e['note']}]" if e.get("note") else ""
        rows.append(f"{e['t']:9.3f}  #{e['index']:<4} {arrow}{e.get('summary', e['name'])}{mark}{note}")
        last = i
    rows.append("```")
    return rows


def _application(result, lib: dict) -> list[str]:
    calls = result.observations.get("application") or []
    out = []
    if lib.get("driver"):
        out.append(f"The test's driver (`clients/{lib['driver']}` in amqp-conformance) calls the library as its "
                   f"documentation and examples do ({lib.get('summary', '')}):")
        out.append("")
    if not calls:
        return out + ["(no call was made)"]
    out += ["| the application asked | the library answered |", "| --- | --- |"]
    for call in calls:
        args = ", ".join(f"{k}={v}" for k, v in call.items() if k not in ("op", "answer", "url"))
        answer = dict(call.get("answer") or {})
        told = answer.get("error")                  # what the library told the application (ok: false)
        said = "returned" if answer.get("ok") else f"failed: {told or '?'}"
        said += "".join(f", {k}={v}" for k, v in answer.items() if k not in ("ms", "ok") and v is not told)
        out.append(f"| `{call.get('op')}({args})` | {said.replace('|', '/')} ({answer.get('ms', '?')} ms) |")
    return out
