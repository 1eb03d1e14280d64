"""Case selection has one syntax and one meaning everywhere: selectors (ids, sections, requirement ids) and
-k EXPRESSION (words matched, ignoring case, in the case id, title and requirement ids; and / or / not and
parentheses), the same in `run`, `selfcheck`, `bisect` and `bisect-run`."""

from __future__ import annotations

import pytest

from conformance.cases import load_all
from conformance.cli import main
from conformance.errors import EXIT_UNKNOWN_CASE, EXIT_USAGE, UnknownCaseError, UsageError
from conformance.run.selection import Keyword, select_cases

ALL = load_all()


def ids(cases) -> list[str]:
    return [c.id for c in cases]


def text(case) -> str:
    return " ".join([case.id, case.title, *case.requirements]).lower()


@pytest.mark.parametrize("expression, keep", [
    ("drain", lambda t: "drain" in t),
    ("DRAIN", lambda t: "drain" in t),
    ("drain and not 2.6.8", lambda t: "drain" in t and "2.6.8" not in t),
    ("echo or available", lambda t: "echo" in t or "available" in t),
    ("not (echo or drain)", lambda t: "echo" not in t and "drain" not in t),
    ("2.6.7/credit-formula and (drain or wrap)", lambda t: "2.6.7/credit-formula" in t and ("drain" in t or "wrap" in t)),
    ("not not window", lambda t: "window" in t),
])
def test_keyword_expressions(expression, keep):
    expected = [c.id for c in ALL.values() if keep(text(c))]
    assert expected, "the table names cases that exist"
    assert ids(select_cases(None, expression)) == expected


@pytest.mark.parametrize("expression", ["", "and", "drain and", "(drain", "drain)", "drain echo", "not", "or drain"])
def test_a_keyword_that_does_not_parse_is_a_usage_error(expression):
    with pytest.raises(UsageError, match="-k"):
        Keyword(expression)


def test_selectors_then_keyword():
    assert ids(select_cases(["2.6.8"])) == ["2.6.8/1", "2.6.8/2", "2.6.8/3"]
    kept = ids(select_cases(["2.6.7/drain-advance"], "not 2.6.8"))
    assert kept and kept == [c.id for c in ALL.values()
                             if "2.6.7/drain-advance" in c.requirements and "2.6.8" not in text(c)]
    assert ids(select_cases(["2.6.8/3", "2.6.8/1"])) == ["2.6.8/1", "2.6.8/3"]        # catalogue order
    with pytest.raises(UnknownCaseError):
        select_cases(["9.9.9"])
    with pytest.raises(UsageError, match="matches no case"):
        select_cases(["2.6.8"], "echo")


def test_minus_k_means_the_same_in_every_command(capsys):
    expression = "drain and not 2.6.8"
    expected = ids(select_cases(None, expression))
    for command in (["run"], ["selfcheck"]):
        # the selection is made (the command then stops at the unknown broker), or refused the same way
        assert main([*command, "-k", expression, "--broker", "no-such-broker"]) == EXIT_USAGE
        assert "unknown broker" in capsys.readouterr().err
        assert main([*command, "-k", "no-such-words", "--broker", "no-such-broker"]) == EXIT_USAGE
        assert "-k 'no-such-words' matches no case" in capsys.readouterr().err
        assert main([*command, "9.9.9", "--broker", "no-such-broker"]) == EXIT_UNKNOWN_CASE
        capsys.readouterr()
    # bisect follows one case: it names what the same expression selected
    assert main(["bisect", "-k", expression, "--build", "qpid-proton-c", "--build", "rabbitmq-4.0"]) == EXIT_USAGE
    err = capsys.readouterr().err
    assert f"names {len(expected)} (" in err and all(cid in err for cid in expected[:6])
    assert main(["bisect", "-k", "no-such-words", "--build", "a", "--build", "b"]) == EXIT_USAGE
    assert "matches no case" in capsys.readouterr().err
    assert main(["bisect-run", "-k", expression, "--broker", "qpid-proton-c"]) == 128      # git bisect: abort
    assert "follows one case" in capsys.readouterr().err
