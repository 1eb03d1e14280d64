"""The gate of a run: its expectations file (`--expect`), the flaky cells it knows (`--flaky-from`, entries'
`flaky`), `--strict-flaky` and `--write-expect`, from the command line to every place a result is shown.

This module owns the gate's flags, loading and checking the file before anything starts (its entries against
the suite's cases and the requirement catalogue: a stale id is exit 16, before a broker starts), the `Gate`
object that travels with a run (to its pytest-xdist workers as plain JSON, where `conformance.run.items`
turns a judgement into pytest's outcome for JUnit), the run directory's `expectations.json` and
`expectations.md` (the gate's summary, ready for a CI job summary without Spark) and writing the file back from
a run. What a result is against the file is `conformance.expectations`'s.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable

from ..errors import EXIT_CASE_ERROR, EXIT_OK, BadExpectations, UsageError
from ..expectations import (ADVICE, KINDS, NEW, UNEXPECTED, Expectations, Judgement, counts,
                            gate_exit_code, render, summary_line, written_from)

SUMMARY_JSON = "expectations.json"
SUMMARY_MD = "expectations.md"


# -- flaky cells the nightly history knows -------------------------------------------------------------------------

def flaky_from_report(path: str | Path) -> frozenset[tuple[str, str]]:
    """(case id, broker label) pairs the history's report (report.json, or a directory holding one) names flaky:
    its `flaky` list and cells marked flaky, per broker at any version ("rabbitmq-4.0@4.0.5" -> rabbitmq-4.0),
    so that a CI job without Spark gates with what the nightly history learnt. BadExpectations (exit 16) when it
    cannot be read."""
    path = Path(path)
    if path.is_dir():
        path = path / "report.json" if (path / "report.json").exists() else path / "report" / "report.json"
    try:
        model = json.loads(path.read_text("utf-8"))
        rows = list(model.get("flaky") or []) + [c for c in model.get("cells") or [] if c.get("flaky")]
        return frozenset((str(r["case_id"]), str(r["column"]).split("@", 1)[0]) for r in rows)
    except FileNotFoundError:
        raise BadExpectations(f"--flaky-from: no report.json at {path}; give the report.json that "
                              "`amqp-conformance report` wrote (e.g. restored from the nightly job)") from None
    except (OSError, ValueError, TypeError, KeyError, AttributeError) as exc:
        raise BadExpectations(f"--flaky-from: {path} is not a report.json the suite wrote ({exc}); give the file "
                              "`amqp-conformance report` wrote") from None


def add_arguments(parser, *, write: bool = True) -> None:
    g = parser.add_argument_group("expectations (the CI gate, docs/ci.md)")
    g.add_argument("--expect", default=None, metavar="FILE",
                   help="judge each result against this expectations file (TOML): the exit code gates on "
                        "unexpected results only (an expected fail is not red; a fixed one is)")
    if write:
        g.add_argument("--write-expect", default=None, metavar="FILE",
                       help="write (or update) an expectations file that expects exactly this run's results")
    g.add_argument("--flaky-from", default=None, metavar="REPORT.json",
                   help="the history's report.json (`amqp-conformance report`): cases it knows as flaky on a "
                        "broker do not fail the gate")
    g.add_argument("--strict-flaky", action="store_true",
                   help="an unexpected result on a flaky cell fails the gate too")


@dataclass
class Gate:
    """What a run is judged against. `expectations` None: only --write-expect was asked for."""

    expectations: Expectations | None = None
    flaky: frozenset = field(default_factory=frozenset)     # (case id, label) known flaky outside the file
    strict_flaky: bool = False
    flaky_from: str | None = None                            # where `flaky` came from (--flaky-from)

    def judge(self, record: dict, label: str | None = None) -> Judgement | None:
        if self.expectations is None:
            return None
        label = label or record["broker"]
        return self.expectations.judge(record, label, flaky=(record["case_id"], label) in self.flaky,
                                       strict_flaky=self.strict_flaky)

    @property
    def path(self) -> str | None:
        return self.expectations.path if self.expectations is not None else None

    def to_json(self) -> dict:
        return {"expectations": self.expectations.to_json() if self.expectations is not None else None,
                "flaky": sorted(self.flaky), "strict_flaky": self.strict_flaky, "flaky_from": self.flaky_from}

    @classmethod
    def from_json(cls, data: dict | None) -> "Gate | None":
        if not data:
            return None
        exp = Expectations.from_json(data["expectations"]) if data.get("expectations") else None
        return cls(exp, frozenset(tuple(x) for x in data.get("flaky") or ()), bool(data.get("strict_flaky")),
                   data.get("flaky_from"))


def from_args(args, kind: str = "broker") -> Gate | None:
    """The gate the flags ask for, its file loaded and checked (BadExpectations, exit 16), or None. The file
    named by --write-expect is read too when it exists, so that a malformed one stops the run before it starts."""
    expect, write = getattr(args, "expect", None), getattr(args, "write_expect", None)
    flaky_from, strict = getattr(args, "flaky_from", None), getattr(args, "strict_flaky", False)
    if not expect and (flaky_from or strict):
        raise UsageError("--flaky-from and --strict-flaky qualify --expect FILE; give it too")
    if write and Path(write).exists():
        load(write)
    if not expect:
        return None
    flaky = flaky_from_report(flaky_from) if flaky_from else frozenset()
    return Gate(load(expect), flaky, strict, str(flaky_from) if flaky_from else None)


def load(path: str | Path) -> Expectations:
    """The file, read and checked against the suite's cases (broker and client) and the catalogue."""
    from .. import catalogue
    from ..cases import load_all, load_clients
    expectations = Expectations.load(path)
    expectations.check_ids(list(load_all()) + list(load_clients()), list(catalogue.load()))
    return expectations


def judgements(gate: Gate | None, records: Iterable[dict], bases: dict[str, str]) -> list[Judgement] | None:
    """Each record judged, against the broker behind its target (`bases`: target label -> broker name)."""
    if gate is None or gate.expectations is None:
        return None
    return [gate.judge(r, bases.get(r["broker"], r["broker"])) for r in records]


def exit_code(found: list[Judgement]) -> int:
    return gate_exit_code(found)


# -- the console's lines -------------------------------------------------------------------------------------

def lines(judgements: list, summary_path, expect_path: str | None = None) -> str:
    """The results against the expectations file: the counts, then every result that is not as expected."""
    out = [f"expectations: {summary_line(judgements)} (summary: {summary_path})"]
    out += [f"  {j.describe(expect_path)}" for j in judgements if j.unexpected or j.kind == NEW]
    return "\n".join(out)


def exit_line(judgements: list) -> str:
    """What the gate's exit code says, naming the cells that decide it."""
    code = gate_exit_code(judgements)
    gating = [j for j in judgements if j.gating]
    if code == EXIT_OK:
        return "exit 0: every result as expected" + (" (new ones aside)" if any(j.kind == NEW for j in judgements)
                                                      else "")
    named = ", ".join(f"{j.case_id} on {j.label} ({j.kind}: {j.verdict}, expected {j.expected_text()})"
                      for j in gating[:5]) + (f", and {len(gating) - 5} more" if len(gating) > 5 else "")
    what = f"unexpected result{'s' if len(gating) != 1 else ''}"
    if code == EXIT_CASE_ERROR:
        what += ", among them an error (the run broke where no entry expects it)"
    return f"exit {code}: {len(gating)} {what}: {named}"


# -- the run directory's summary ----------------------------------------------------------------------------------

def write_summary(run_path: Path, gate: Gate, found: list[Judgement]) -> None:
    """expectations.json (every judgement, the counts, the exit code) and expectations.md (the same for a CI job
    summary) in the run directory."""
    from ..results import atomic_write_json, atomic_write_text
    data = {"file": gate.path, "strict_flaky": gate.strict_flaky, "flaky_from": gate.flaky_from, "counts": counts(found),
            "exit": exit_code(found), "results": [j.to_json() for j in found]}
    atomic_write_json(Path(run_path) / SUMMARY_JSON, data, strict=True)
    atomic_write_text(Path(run_path) / SUMMARY_MD, render_markdown(found, gate.path))


def render_markdown(found: list[Judgement], path: str | None, max_items: int = 50) -> str:
    """The gate's summary as Markdown: counts per label, then each unexpected result, then the new ones."""
    code = exit_code(found)
    labels = list(dict.fromkeys(j.label for j in found))
    c_all = counts(found)
    gating = [j for j in found if j.gating]
    head = "✅ as expected" if not gating else f"❌ {len(gating)} unexpected result{'s' if len(gating) != 1 else ''}"
    out = [f"## AMQP 1.0 conformance against `{Path(path).name if path else 'expectations'}`: {head}", "",
           summary_line(found) + f"; exit {code}.", "",
           "| broker or library | " + " | ".join(KINDS) + " | flaky (not gating) |",
           "|---|" + "--:|" * (len(KINDS) + 1)]
    for label in labels:
        c = counts(j for j in found if j.label == label)
        out.append(f"| `{label}` | " + " | ".join(str(c[k]) for k in KINDS) + f" | {c['flaky']} |")
    if len(labels) > 1:
        out.append("| all | " + " | ".join(str(c_all[k]) for k in KINDS) + f" | {c_all['flaky']} |")

    def listed(title: str, items: list[Judgement]) -> list[str]:
        if not items:
            return []
        lines = ["", f"### {title} ({len(items)})", ""]
        lines += [f"- {_md(j.describe(path))}" for j in items[:max_items]]
        if len(items) > max_items:
            lines.append(f"- … and {len(items) - max_items} more (expectations.json)")
        return lines

    out += listed("Unexpected: these fail the gate", gating)
    out += listed("Unexpected on flaky cells (not gating)", [j for j in found if j.unexpected and not j.gating])
    out += listed("New: no expectation yet", [j for j in found if j.kind == NEW])
    out += ["", "Kinds: " + "; ".join(f"**{k}**: {ADVICE[k]}" for k in UNEXPECTED + (NEW,)) + "."]
    return "\n".join(out) + "\n\n"       # ends with a blank line: a CI job summary appends report.md after it


def _md(text: str) -> str:
    return text.replace("|", "\\|").replace("<", "&lt;").replace(">", "&gt;")


# -- --write-expect --------------------------------------------------------------------------------------------------

def write_file(path: str | Path, records: list[dict], *, labels: list[str], cases: list[str],
               run_id: str | None) -> str:
    """Write (or update) `path` so that it expects exactly `records` (see expectations.written_from) and say
    what was written, one line."""
    from ..cases import case_sort_key
    from ..results import atomic_write_text
    path = Path(path)
    existing = load(path) if path.exists() else None
    written, skipped = written_from(records, existing, labels=labels, cases=cases)

    def order(case_id: str):
        try:
            return (0, case_sort_key(case_id))
        except (ValueError, IndexError):
            return (1, case_id)

    header = ["amqp-conformance expectations (format: docs/ci.md#the-expectations-file).",
              f"Written by `amqp-conformance run --write-expect` from run {run_id or '?'}; keep it in your repository,",
              "put an issue key in each reason, and gate with `amqp-conformance run --expect FILE`.",
              "A cell of `labels` x `cases` without an entry is expected to pass; one outside them is new."]
    header += [f"NOT WRITTEN: {r['case_id']} on {r['broker']} ended in error (a broken run, not an expectation): "
               f"{' '.join(str(r.get('reason') or '').split())[:120]}" for r in skipped]
    text = render(written, header=header, order=order)
    Expectations.parse(text, str(path))                  # what we write must read back
    atomic_write_text(path, text)
    entries = len(written.entries)
    line = f"expectations written: {path} ({entries} entr{'y' if entries == 1 else 'ies'} for "
    line += f"{len(labels)} label{'s' if len(labels) != 1 else ''} x {len(cases)} cases"
    if skipped:
        line += f"; {len(skipped)} error result{'s' if len(skipped) != 1 else ''} not written: " + \
            ", ".join(f"{r['case_id']} on {r['broker']}" for r in skipped[:5]) + " (fix the run, then write again)"
    return line + ")"



# -- the report (`amqp-conformance report --expect FILE`) -----------------------------------------------------------

def mark_model(model: dict, gate: Gate) -> dict:
    """Mark each cell of a report model (conformance.report.model) with what its latest verdict is against the
    file: `expectation` (a kind of conformance.expectations), `expectation_reason` (the entry's, or None),
    `expectation_expected` ([verdicts] or None when new), `expectation_flaky` (unexpected on a flaky cell: not
    gating); and `model["expectations"]` = {file, counts, exit}. A cell the history itself knows as flaky counts
    as flaky, as do those of --flaky-from. Returns the model."""
    from ..cases import load_all, load_clients
    specs = {**load_all(), **load_clients()}
    broker_of = {c["key"]: c.get("broker") or c["key"].split("@", 1)[0] for c in model.get("columns") or []}
    history_flaky = {(c["case_id"], broker_of.get(c["column"], c["column"].split("@", 1)[0]))
                     for c in model.get("cells") or [] if c.get("flaky")}
    history_flaky |= {(f["case_id"], broker_of.get(f["column"], f["column"].split("@", 1)[0]))
                      for f in model.get("flaky") or []}
    marking = Gate(gate.expectations, frozenset(gate.flaky | history_flaky), gate.strict_flaky, gate.flaky_from)
    found = []
    for cell in model.get("cells") or []:
        label = broker_of.get(cell["column"], cell["column"].split("@", 1)[0])
        spec = specs.get(cell["case_id"])
        record = {"case_id": cell["case_id"], "verdict": cell["verdict"], "violated": cell.get("violated"),
                  "subject": list(spec.subject) if spec is not None else [], "broker": label}
        j = marking.judge(record, label)
        if j is None:
            continue
        found.append(j)
        cell.update({"expectation": j.kind, "expectation_reason": j.entry.reason if j.entry else None,
                     "expectation_expected": list(j.expected) if j.expected is not None else None,
                     "expectation_flaky": j.unexpected and not j.gating})
    model["expectations"] = {"file": gate.path, "counts": counts(found), "exit": exit_code(found)}
    return model
