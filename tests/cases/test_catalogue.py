"""The requirement catalogue and the case registry agree: every cited id exists, every observable MUST
has a case, and every case is well formed."""

import re
from pathlib import Path

import pytest

from conformance import catalogue
from conformance.cases import load_all, select
from conformance.errors import UnknownCaseError

SPEC = Path(__file__).resolve().parents[2] / "spec"      # the OASIS text kept in the repository (spec/README.md)
SPEC_TEXTS = ("core-flow-control.md", "other-sections.md")


def test_every_case_cites_known_requirements():
    for case in load_all().values():
        assert case.requirements, f"{case.id} cites no requirement"
        for rid in case.requirements:
            catalogue.get(rid)


def test_every_observable_must_has_a_case():
    covered = {rid for case in load_all().values() for rid in case.judged}     # its own and the exchange's
    missing = [r.id for r in catalogue.load().values()
               if r.level == "MUST" and r.observable and r.id not in covered]
    assert not missing, f"observable MUST requirements without a case: {missing}"


def test_every_must_is_judged_by_a_case_or_says_why_it_cannot_be_seen():
    """Issue #20: every catalogue MUST is cited or declared by at least one case (its own requirements or the
    model's, which judges every exchange), or carries the reason no frame of the broker's can show it."""
    covered = {rid for case in load_all().values() for rid in case.judged}
    for r in catalogue.load().values():
        if r.level != "MUST":
            continue
        if r.observable:
            assert r.id in covered, f"{r.id}: observable, but no case judges it"
        else:
            assert len(r.unobservable_because) > 40, f"{r.id}: not observable, and the catalogue does not say why"
            assert r.id not in covered, f"{r.id}: marked not observable, yet a case judges it"


def test_case_ids_follow_their_section_and_module():
    for case in load_all().values():
        assert re.fullmatch(r"\d+(\.\d+)+/\d+", case.id)
        assert case.module.startswith("conformance.cases.s"), case.module
        assert case.description, f"{case.id} has no docstring"
        assert case.expectation, f"{case.id} states no expectation"


def test_requirement_levels_and_sections_are_consistent():
    for req in catalogue.load().values():
        assert req.level in catalogue.LEVELS
        assert req.id.startswith(req.section + "/")
        if req.level in ("MUST", "SHOULD"):
            assert req.level in req.text, f"{req.id}: level {req.level} not in its text"


def test_obligations_are_marked_in_the_catalogue():
    """A request the broker must answer: a drain, a flow on an unattached handle."""
    obligations = {r.id for r in catalogue.load().values() if r.obligation}
    assert obligations == {"2.6.7/drain-advance", "2.7.4/unattached-handle"}
    assert all(catalogue.get(r).level == "MUST" for r in obligations)


def test_select_by_id_section_and_requirement():
    assert [c.id for c in select(["2.6.8/1"])] == ["2.6.8/1"]
    assert {c.section for c in select(["2.6.8"])} == {"2.6.8"}
    assert all("2.6.7/drain-advance" in c.requirements for c in select(["2.6.7/drain-advance"]))


def test_select_unknown_id_is_a_usage_error():
    with pytest.raises(UnknownCaseError) as info:
        select(["9.9.9/1"])
    assert "amqp-conformance list" in str(info.value)


def _normalised(text):
    """Whitespace runs as one space, without the markdown emphasis and subscript tags of the excerpt."""
    text = re.sub(r"</?sub>", "", text).replace("*", "")
    return re.sub(r"\s+", " ", text).strip()


def _sentences(text):
    """A catalogue text's sentences, without the field-list notes in parentheses the catalogue appends."""
    text = re.sub(r"\s*\((delivery-count|amqp-).*?\)$", "", _normalised(text))
    return [s for s in re.split(r"(?<=[.!?])\s+(?=[A-Z])", text) if s]


def test_catalogue_text_is_verbatim_from_the_spec_text():
    """Every catalogue sentence, whole, occurs in the spec text kept in the repository (whitespace aside)."""
    spec = " ".join(_normalised((SPEC / name).read_text("utf-8")) for name in SPEC_TEXTS)
    missing = []
    for req in catalogue.load().values():
        for sentence in _sentences(req.text):
            # whole, up to its full stop (3.2.1 quotes a sentence up to its colon; 2.5.6 a formula)
            if sentence.rstrip(".") not in spec:
                missing.append(f"{req.id}: {sentence!r}")
    assert not missing, "catalogue sentences not found verbatim in spec/:\n" + "\n".join(missing)


def test_a_changed_word_is_not_verbatim():
    """The check above compares whole sentences: a word changed at the end of a long sentence is caught."""
    spec = _normalised((SPEC / "core-flow-control.md").read_text("utf-8"))
    sentence = _sentences(catalogue.get("2.5.6/remote-incoming-window-decrement").text)[0]
    assert len(sentence) > 60 and sentence.rstrip(".") in spec
    assert sentence.rstrip(".")[:-1] + "X" not in spec
