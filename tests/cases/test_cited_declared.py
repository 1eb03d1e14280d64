"""Every requirement id a case's own body names is one it declares (static: the declared-judged sweep only
sees the findings some reference-broker fault provokes; a case naming an undeclared requirement on a path no
fault reaches becomes a suite error on a real broker, as 2.6.7/7's drain-behaviour did when its broker hung)."""

from __future__ import annotations

import ast
import inspect
import re
import textwrap

import pytest

from conformance.cases import load_all

CASES = load_all()
REQUIREMENT_ID = re.compile(r"^\d+(\.\d+)+/[a-z0-9-]+$")


def named_requirements(func, seen=None) -> set[str]:
    """The requirement ids named in `func` and in the functions of its module it calls (transitively)."""
    seen = set() if seen is None else seen
    seen.add(func)
    tree = ast.parse(textwrap.dedent(inspect.getsource(func)))
    body = tree.body[0]
    body.decorator_list = []          # the @case arguments are the declaration itself
    names = {n.value for n in ast.walk(body) if isinstance(n, ast.Constant) and isinstance(n.value, str)
             and REQUIREMENT_ID.match(n.value)}
    module = inspect.getmodule(func)
    for call in ast.walk(body):
        if isinstance(call, ast.Call) and isinstance(call.func, ast.Name):
            helper = getattr(module, call.func.id, None)
            if inspect.isfunction(helper) and helper.__module__ == module.__name__ and helper not in seen:
                names |= named_requirements(helper, seen)
    return names


@pytest.mark.parametrize("case_id", list(CASES))
def test_a_case_names_only_requirements_it_declares(case_id):
    spec = CASES[case_id]
    undeclared = named_requirements(spec.func) - set(spec.judged)
    assert not undeclared, f"{case_id} names {sorted(undeclared)} but does not declare them"
