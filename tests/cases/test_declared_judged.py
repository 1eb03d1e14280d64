"""Declared = judged: every case against every single fault of the reference broker records findings only on
requirements it declares (its own or the model's). A finding outside them is a suite error (the executor
reports it as an error naming the case); this sweep is how the suite catches its own undeclared checks.
"""

from __future__ import annotations

import dataclasses

import pytest

from conformance.cases import load_all
from conformance.options import RunOptions
from conformance.casekit.executor import run_case
from conformance.reference.broker import Faults
from conformance.reference.handle import ReferenceBrokerHandle

OPTIONS = RunOptions(frame_timeout=1.0, quiet_period=0.2, connect_timeout=2.0)
CASES = load_all()


def single_faults() -> list[Faults]:
    """Each fault of the reference broker on its own (a bool turned over, a number set)."""
    out = []
    for f in dataclasses.fields(Faults):
        default = f.default
        value = (not default) if isinstance(default, bool) else (100 if f.name == "lose_after" else 1)
        out.append(Faults(**{f.name: value}))
    return out


@pytest.mark.slow
@pytest.mark.parametrize("case_id", list(CASES))
def test_every_finding_names_a_declared_requirement(case_id):
    spec = CASES[case_id]
    problems = []
    for faults in single_faults():
        broker = ReferenceBrokerHandle(faults)
        try:
            result = run_case(spec, broker, OPTIONS)
        finally:
            broker.stop()
        changed = {k: v for k, v in dataclasses.asdict(faults).items() if v != getattr(Faults(), k)}
        if result.reason.startswith("suite error"):
            problems.append(f"{changed}: {result.reason}")
        undeclared = [f["requirement"] for f in result.findings if f["requirement"] not in spec.judged]
        if undeclared:
            problems.append(f"{changed}: undeclared {undeclared}")
    assert not problems, f"{case_id}:\n" + "\n".join(problems)
