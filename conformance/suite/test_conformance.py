"""One pytest item per (case, target), run by the pipeline (conformance.run.engine.Pipeline.run_one).
The verdict is the case's; pytest's outcome only mirrors it for JUnit and Allure: pass and informational
pass, non-strict passes with a warning, unsupported is skipped, fail fails, error fails with "ERROR:".
(JUnit and Allure record this test's line numbers: keep `test_case` at line 19 and its body in place.)"""

from __future__ import annotations

import warnings

import pytest

from conformance.verdict import Verdict


class NonStrict(UserWarning):
    """A SHOULD-level requirement was broken."""


def test_case(conformance_case, conformance_broker, conformance_options, conformance_run, record_property):
    # the pipeline runs the case, appends it to results.jsonl and hands its record to the console
    result = conformance_run.run_one(conformance_case, conformance_broker,
                                     conformance_options)
    record_property("verdict", result.verdict.value)
    record_property("requirements", " ".join(result.requirement_ids))
    _properties(record_property, result)
    _allure(conformance_case, result)
    message = f"{result.verdict.value.upper()} {result.case_id} on {result.broker}: {result.reason}"
    if result.violated or result.findings:
        message += findings_text(result)
    if result.verdict is Verdict.FAIL:
        pytest.fail(message + "\n\n" + "\n\n".join(result.ladders[-1:]), pytrace=False)
    if result.verdict is Verdict.ERROR:
        pytest.fail("ERROR: " + message + ("\n" + result.broker_log_tail if result.broker_log_tail else ""),
                    pytrace=False)
    if result.verdict is Verdict.UNSUPPORTED:
        pytest.skip(f"unsupported: {result.reason}")
    if result.verdict is Verdict.NON_STRICT:
        warnings.warn(NonStrict(message))


def _properties(record_property, result) -> None:
    """JUnit properties beyond verdict and requirements: the reason, and every finding (deciding first)."""
    record_property("reason", result.reason)
    for i, f in enumerate(result.findings):
        record_property(f"finding.{i}", f"{f['requirement']} ({f['level']}, {f['verdict']}): {f['reason']}")


def findings_text(result) -> str:
    """The deciding finding (requirement, expected, actual), then every other finding, one line each."""
    text = ""
    if result.violated:
        text += f"\n  Requirement: {result.violated}\n  Expected: {result.expected}\n  Actual: {result.actual}"
    others = result.findings[1:] if result.violated else result.findings
    for f in others:
        text += f"\n  Also: {f['requirement']} ({f['level']}, {f['verdict']}): {f['reason']}"
    return text


def _allure(spec, result) -> None:
    try:
        import allure
    except ImportError:
        return
    from conformance import catalogue
    part = catalogue.get(spec.requirements[0]).part
    allure.dynamic.parent_suite(part)
    allure.dynamic.suite(f"§{spec.section}")
    allure.dynamic.title(f"{spec.id} {spec.title} [{result.broker}]")
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
