"""The suite's pytest items: one `CaseItem` per case x target, made by the anchor `conformance/suite`'s collector.

An item's node id and location are the case's own: `conformance/cases/<module>.py::<case id>[<target>]` and
the line of its function, so that JUnit XML (file, line, classname) and Allure (package, full name, the label
`location`) name the case, not a test of the suite. `CaseItem.runtest` asks the run's hooks object
(`conformance.run.hooks.RunHooks`, found on the pytest config's stash, `PIPELINE`) to run the case on its target
(`run_one`, the process's `conformance.run.runner.CaseRunner`) and turns the verdict into
pytest's outcome, for JUnit and Allure only (the verdict itself is the record's): pass and informational pass,
non-strict passes with a warning, unsupported is skipped, fail fails, error fails with "ERROR:". Without a
pipeline (no --broker) every item fails, saying so.
"""

from __future__ import annotations

import inspect
import warnings
from pathlib import Path

import pytest

from ..verdict import Verdict

PIPELINE = pytest.StashKey["RunHooks"]()                         # the run's hooks object (conformance.run.hooks)
NO_BROKER = "no-broker"
SUITE_DIR = Path(__file__).resolve().parent.parent / "suite"    # the collection anchor (a path, not an import)
CASES_NODEID = "conformance/cases/"                              # how every case item's node id begins


class NonStrict(UserWarning):
    """A SHOULD-level requirement was broken."""


def pipeline_of(config):
    return config.stash.get(PIPELINE, None)


class Suite(pytest.Directory):
    """The anchor `conformance/suite`: its children are the case items (case x target, in case order)."""

    def collect(self):
        pipeline = pipeline_of(self.config)
        if pipeline is not None:
            cases, labels = pipeline.cases(), pipeline.labels()
        else:
            from .selection import select_cases
            cases, labels = select_cases(self.config.getoption("--case") or None), [NO_BROKER]
        for case in cases:
            for label in labels:
                yield CaseItem.from_parent(self, case=case, label=label)


class CaseItem(pytest.Item):
    """One case on one target. Its node id and location are the case's own: the module and line of its
    function (`conformance/cases/<module>.py::<case id>[<target>]`)."""

    def __init__(self, *, case, label: str, **kw):
        path = Path(inspect.getsourcefile(case.func)).resolve()
        name = f"{case.id}[{label}]"
        super().__init__(name=name, path=path, nodeid=f"{CASES_NODEID}{path.name}::{name}", **kw)
        self.case = case
        self.label = label
        self.line = case.func.__code__.co_firstlineno           # 1-based: the first line of the decorated function

    def reportinfo(self):
        return self.path, self.line - 1, self.name

    def runtest(self) -> None:
        pipeline = pipeline_of(self.config)
        if pipeline is None or self.label == NO_BROKER:
            pytest.fail("this test needs a broker: pass --broker NAME|URL (e.g. --broker qpid-proton-c)",
                        pytrace=False)
        result = pipeline.run_one(self.case, self.label)       # run, recorded, its record kept for the report
        self.user_properties += [("verdict", result.verdict.value),
                                 ("requirements", " ".join(result.requirement_ids)),
                                 ("reason", result.reason)]
        self.user_properties += [(f"finding.{i}", f"{f['requirement']} ({f['level']}, {f['verdict']}): {f['reason']}")
                                 for i, f in enumerate(result.findings)]
        judgement = pipeline.judge(result.to_record(), self.label)
        if judgement is not None:
            self.user_properties += [("expectation", judgement.kind), ("expected", judgement.expected_text())]
        _allure(self, result)
        _outcome(result, judgement, pipeline.gate.path if judgement is not None else None)


def _outcome(result, judgement=None, path: str | None = None) -> None:
    """The verdict as pytest's outcome (JUnit and Allure read it; the verdict itself is the record's). With an
    expectations file (`judgement`), what fails is what fails the gate: an unexpected result (fail, pass, error,
    change), unless on a flaky cell; an expected fail or error is an xfail (JUnit: skipped, not a failure), a new
    one (no expectation) is skipped, saying so."""
    message = f"{result.verdict.value.upper()} {result.case_id} on {result.broker}: {result.reason}"
    if result.violated or result.findings:
        message += findings_text(result)
    if judgement is not None:
        _gated_outcome(result, judgement, path, message)
        return
    if result.verdict is Verdict.FAIL:
        pytest.fail(message + "\n\n" + "\n\n".join(result.ladders[-1:]), pytrace=False)
    if result.verdict is Verdict.ERROR:
        pytest.fail("ERROR: " + message + ("\n" + result.broker_log_tail if result.broker_log_tail else ""),
                    pytrace=False)
    if result.verdict is Verdict.UNSUPPORTED:
        pytest.skip(f"unsupported: {result.reason}")
    if result.verdict is Verdict.NON_STRICT:
        warnings.warn(NonStrict(message))


def _gated_outcome(result, judgement, path: str | None, message: str) -> None:
    from ..expectations import NEW
    said = judgement.describe(path)
    if judgement.gating:
        extra = ("\n\n" + "\n\n".join(result.ladders[-1:])) if result.verdict is Verdict.FAIL else ""
        pytest.fail(f"{said}\n{message}{extra}", pytrace=False)
    if result.verdict in (Verdict.FAIL, Verdict.ERROR):      # expected, unexpected on a flaky cell, or new
        if judgement.kind == NEW:
            pytest.skip(f"{said}\n{message}")
        pytest.xfail(f"{said}\n{message}")
    if result.verdict is Verdict.UNSUPPORTED:
        pytest.skip(f"unsupported: {result.reason}")
    if result.verdict is Verdict.NON_STRICT:
        warnings.warn(NonStrict(message))


def findings_text(result) -> str:
    """The deciding finding (requirement, expected, actual), then every other finding, one line each."""
    text = ""
    if result.violated:
        text += f"\n  Requirement: {result.violated}\n  Expected: {result.expected}\n  Actual: {result.actual}"
    others = result.findings[1:] if result.violated else result.findings
    for f in others:
        text += f"\n  Also: {f['requirement']} ({f['level']}, {f['verdict']}): {f['reason']}"
    return text


def _allure(item: CaseItem, result) -> None:
    """What Allure shows beyond what it reads off the node id (package and name: the case's module and id)."""
    try:
        import allure
    except ImportError:
        return

    from .. import catalogue
    spec = item.case
    allure.dynamic.parent_suite(catalogue.get(spec.requirements[0]).part)
    allure.dynamic.suite(f"§{spec.section}")
    allure.dynamic.title(f"{spec.id} {spec.title} [{result.broker}]")
    allure.dynamic.label("location", f"{CASES_NODEID}{item.path.name}:{item.line}")
    for rid in result.requirement_ids:          # what the case judged: its own and the model's
        allure.dynamic.story(rid)
    severity = {"MUST": allure.severity_level.CRITICAL, "SHOULD": allure.severity_level.NORMAL,
                "MAY": allure.severity_level.MINOR}.get(spec.level, allure.severity_level.TRIVIAL)
    allure.dynamic.severity(severity)
    allure.dynamic.label("verdict", result.verdict.value)
    allure.dynamic.description(f"{spec.expectation}\n\nVerdict: {result.verdict.value}: {result.reason}"
                               + findings_text(result))
    for i, ladder in enumerate(result.ladders, 1):
        allure.attach(ladder, name=f"ladder (connection {i})", attachment_type=allure.attachment_type.TEXT)
    if result.transcripts:
        import json
        allure.attach(json.dumps(result.transcripts, indent=1), name="frames",
                      attachment_type=allure.attachment_type.JSON)
