"""The verdict rules as plain functions (no broker): the severity order, the level each verdict comes from,
`ordered()` / `verdict_of()` on findings, and what a case declaration (casekit.spec) derives and refuses.
Fast unit tests: the mutation run (`./dev mutate`) judges verdict.py, findings.py and spec.py with them."""

from __future__ import annotations

import pytest

from conformance import catalogue
from conformance.casekit import spec as casespec
from conformance.casekit.findings import Finding, Source, ordered, verdict_of
from conformance.model import emitted_requirement_ids
from conformance.results import CaseResult
from conformance.verdict import SEVERITY, VERDICT_FOR_LEVEL, Verdict

MUST = "2.6.7/no-send-without-credit"
SHOULD = next(r.id for r in catalogue.load().values() if r.level == "SHOULD")
MAY = "2.5.6/next-outgoing-id-serial"
INFORMATIVE = "3.4.2/accepted-at-target"


def test_severity_worst_first():
    order = sorted(SEVERITY, key=lambda v: -SEVERITY[v])
    assert order == [Verdict.ERROR, Verdict.FAIL, Verdict.NON_STRICT, Verdict.UNSUPPORTED, Verdict.INFORMATIONAL,
                     Verdict.PASS]
    assert len(set(SEVERITY.values())) == len(Verdict) == len(SEVERITY)


def test_each_level_gives_its_verdict():
    assert VERDICT_FOR_LEVEL == {"MUST": Verdict.FAIL, "SHOULD": Verdict.NON_STRICT, "MAY": Verdict.INFORMATIONAL,
                                 "informative": Verdict.INFORMATIONAL}
    assert [str(v) for v in Verdict] == ["pass", "fail", "non-strict", "informational", "unsupported", "error"]


def test_a_should_outranks_a_may_and_a_must_outranks_both():
    may, should, must = Finding(MAY, "may"), Finding(SHOULD, "should"), Finding(MUST, "must")
    assert (may.verdict, should.verdict, must.verdict) == (Verdict.INFORMATIONAL, Verdict.NON_STRICT, Verdict.FAIL)
    assert ordered([may, should]) == [should, may]
    assert verdict_of([may, should]) == Verdict.NON_STRICT
    assert ordered([may, should, must]) == [must, should, may]
    assert verdict_of([may, must, should]) == Verdict.FAIL
    assert verdict_of([Finding(INFORMATIVE, "i"), may]) == Verdict.INFORMATIONAL
    assert verdict_of([]) is None


def test_among_equals_the_first_recorded_decides():
    a, b, c = Finding(MUST, "a"), Finding(MUST, "b", source=Source.MODEL), Finding(MAY, "c")
    assert ordered([c, a, b]) == [a, b, c]
    assert ordered([c, b, a]) == [b, a, c]


def test_a_finding_record_names_level_verdict_and_source():
    f = Finding(SHOULD, "why", expected="e", actual="a", frame_index=4, connection=2, source=Source.OBLIGATION)
    assert f.level == "SHOULD"
    assert f.to_record() == {"requirement": SHOULD, "level": "SHOULD", "verdict": "non-strict", "reason": "why",
                             "expected": "e", "actual": "a", "frame_index": 4, "connection": 2,
                             "source": "obligation"}
    assert str(Source.MODEL) == "model" and str(Verdict.NON_STRICT) == "non-strict"


def test_a_case_result_record_and_summary():
    r = CaseResult("2.6.8/1", "t", "2.6.8", "MUST", [MUST], Verdict.FAIL, "why", "ref",
                   transcripts=[{"x": 1}], ladders=["l"])
    d = r.to_record()
    assert d["verdict"] == "fail" and "transcripts" not in d and "ladders" not in d
    assert r.to_record(with_transcripts=True)["transcripts"] == [{"x": 1}]
    assert r.summary_line() == f"{'2.6.8/1':<12} {'fail':<13} {'ref':<16} why"


# -- case declarations (casekit.spec) ---------------------------------------------------------------------

@pytest.fixture
def registry(monkeypatch):
    monkeypatch.setattr(casespec, "REGISTRY", {})
    return casespec.REGISTRY


def _body(ctx):
    """Docstring of the case."""


def test_a_declared_case_derives_section_subject_level_and_judged(registry):
    casespec.case("2.6.7/99", "t", [MAY, MUST], expectation="x", needs=("alarm",))(_body)
    spec = registry["2.6.7/99"]
    assert spec.section == "2.6.7" and spec.subject == (MAY,) and spec.level == "MUST"
    assert spec.description == "Docstring of the case." and spec.needs == ("alarm",)
    assert spec.judged[:2] == (MAY, MUST) and set(spec.judged[2:]) == set(casespec.MODEL_REQUIREMENTS) - {MUST}
    assert spec.own_node is False and spec.exclusive is False and spec.module == __name__
    casespec.case("2.6.7/98", "t", [MAY], subject=[MAY], exclusive=True)(lambda ctx: None)
    spec = registry["2.6.7/98"]
    assert spec.level == "MAY" and spec.own_node is True and spec.description == ""
    casespec.case("2.6.7/97", "t", [INFORMATIVE], own_node=True)(_body)
    assert registry["2.6.7/97"].level == "informative" and registry["2.6.7/97"].own_node is True
    casespec.case("2.6.7/96", "t", [SHOULD, MAY])(_body)
    assert registry["2.6.7/96"].level == "SHOULD"


def test_the_model_requirements_are_the_oracle_ids_and_the_close_rule():
    assert set(casespec.MODEL_REQUIREMENTS) == set(emitted_requirement_ids()) | {"2.4.3/close-frame-first"}
    ids = list(catalogue.load())
    assert list(casespec.MODEL_REQUIREMENTS) == [r for r in ids if r in casespec.MODEL_REQUIREMENTS]


def test_bad_declarations_are_refused(registry):
    for bad in ("2.6.7", "2.6.7/x", "x2.6.7/1", "2.6.7/1 ", "2/1/1"):
        with pytest.raises(ValueError, match="must look like <section>/<n>"):
            casespec.case(bad, "t", [MUST])
    casespec.case("2.6.7/1", "t", [MUST])(_body)
    with pytest.raises(ValueError, match="registered twice"):
        casespec.case("2.6.7/1", "t", [MUST])(_body)
    with pytest.raises(ValueError, match=r"subject \['2.6.7/no-send-without-credit'\] is not among"):
        casespec.case("2.6.7/2", "t", [MAY], subject=[MUST])(_body)
    with pytest.raises(catalogue.UnknownRequirement):
        casespec.case("2.6.7/3", "t", ["2.6.7/no-such-rule"])(_body)
    assert list(registry) == ["2.6.7/1"]


def test_the_missing_hook_reason_names_the_hook():
    assert casespec.missing_hook_reason("alarm") == \
        "the broker profile has no 'alarm' hook; add one to the profile to run this case"


def test_the_conclusions_carry_what_the_executor_reads():
    from conformance.casekit.findings import CaseConclusion, CaseHalted, CaseUnsupported, SubjectUnobservable
    f = Finding(MUST, "no flow arrived")
    halted = CaseHalted(f)
    assert str(halted) == "no flow arrived" and halted.finding is f
    done = CaseConclusion(Verdict.INFORMATIONAL, "seen", observations={"a": 1})
    assert (str(done), done.verdict, done.reason, done.observations) == ("seen", Verdict.INFORMATIONAL, "seen",
                                                                         {"a": 1})
    assert CaseConclusion(Verdict.PASS, "ok").observations == {}
    unsupported = CaseUnsupported("no alarm hook")
    assert (str(unsupported), unsupported.verdict, unsupported.reason) == ("no alarm hook", Verdict.UNSUPPORTED,
                                                                           "no alarm hook")
    hidden = SubjectUnobservable("no echo", requirement=MAY, observations={"b": 2})
    assert (str(hidden), hidden.because, hidden.requirement, hidden.observations) == ("no echo", "no echo", MAY,
                                                                                      {"b": 2})
    assert SubjectUnobservable("x").observations == {} and SubjectUnobservable("x").requirement is None


def test_a_case_keeps_its_declared_title_figure_and_expectation(registry):
    casespec.case("2.6.7/95", "the title", [MUST], figure="2.43", expectation="flow -> transfer")(_body)
    spec = registry["2.6.7/95"]
    assert (spec.title, spec.figure, spec.expectation, spec.requirements) == ("the title", "2.43",
                                                                              "flow -> transfer", (MUST,))
    casespec.case("2.6.7/94", "t", [MUST])(_body)
    assert registry["2.6.7/94"].expectation == "" and registry["2.6.7/94"].figure is None


def test_a_record_keeps_the_verdict_as_plain_text():
    d = CaseResult("2.6.8/1", "t", "2.6.8", "MUST", [MUST], Verdict.PASS, "ok", "ref").to_record()
    assert type(d["verdict"]) is str and d["verdict"] == "pass"


# -- what the mutation run (./dev mutate) found no test holding: the exit code, refusals, case kinds, needs -----

@pytest.mark.parametrize("records,code", [
    ([], 0),
    ([{"verdict": "pass", "level": "MUST"}, {"verdict": "fail", "level": "SHOULD"}], 0),   # SHOULD fails: 0
    ([{"verdict": "fail", "level": "MUST"}], 1),
    ([{"verdict": "fail", "level": "MUST"}, {"verdict": "error", "level": "MAY"}], 14),  # an error outweighs
    ([{"verdict": "error"}], 14),
])
def test_the_exit_code_of_a_run_follows_its_worst_must_and_errors(records, code):
    """README/docs: exit 1 when a MUST-level case failed, 14 when a case ended in error (conformance/errors.py)."""
    from conformance.errors import EXIT_CASE_ERROR, EXIT_MUST_FAILED, EXIT_OK
    from conformance.verdict import exit_code
    assert (EXIT_OK, EXIT_MUST_FAILED, EXIT_CASE_ERROR) == (0, 1, 14)
    assert exit_code(iter(records)) == code


def test_a_refusal_names_what_the_broker_did_and_is_recorded_whole():
    from conformance.casekit.findings import Refusal
    r = Refusal("amqp:resource-limit-exceeded", "too many links", "detach", 2, 7, 3, "detach(handle=0)")
    assert r.text() == 'the broker refused the link (detach) with amqp:resource-limit-exceeded ("too many links")'
    assert r.to_record() == {"condition": "amqp:resource-limit-exceeded", "description": "too many links",
                             "performative": "detach", "connection": 2, "frame_index": 7,
                             "frame": "detach(handle=0)"}
    bare = Refusal("amqp:unauthorized-access", None, "close", 1, 4, 2, "close")
    assert bare.text() == "the broker closed the connection with amqp:unauthorized-access"
    assert Refusal("x:y", None, "other", 1, 0, 0, "").text() == "the broker other with x:y"


def test_a_case_kind_chooses_its_registry_and_every_declared_field_is_kept(registry, monkeypatch):
    monkeypatch.setattr(casespec, "CLIENT_REGISTRY", {})
    casespec.case("2.6.7/95", "t", [MUST, SHOULD], deliberate=[SHOULD],
                  refusals_judged=("amqp:resource-limit-exceeded",))(_body)
    spec = registry["2.6.7/95"]
    assert (spec.kind, spec.deliberate, spec.refusals_judged) == ("broker", (SHOULD,),
                                                                  ("amqp:resource-limit-exceeded",))
    casespec.case("2.6.7/101", "t", [MUST], kind="client")(_body)
    assert "2.6.7/101" not in registry and casespec.CLIENT_REGISTRY["2.6.7/101"].kind == "client"
    with pytest.raises(ValueError, match=r"registered twice \(" + __name__ + " and "):
        casespec.case("2.6.7/101", "t", [MUST])(_body)
    with pytest.raises(catalogue.UnknownRequirement):
        casespec.case("2.6.7/94", "t", [MUST], deliberate=["2.6.7/no-such-rule"])(_body)


def test_a_need_with_alternatives_is_met_by_any_and_named_whole_when_missing():
    class Profile:
        def __init__(self, *hooks):
            self.hooks = hooks

        def has_hook(self, name):
            return name in self.hooks

    assert casespec.has_need(Profile("queue_limit_bytes"), "queue_limit_messages|queue_limit_bytes")
    assert not casespec.has_need(Profile("alarm"), "queue_limit_messages|queue_limit_bytes")
    assert casespec.missing_hook_reason("a|b") == \
        "the broker profile has none of the hooks 'a' or 'b'; add one to the profile to run this case"
