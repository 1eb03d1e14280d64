"""Cases are pytest items: JUnit XML and Allure name the case's own file and line (not a test of the suite),
the verdict becomes pytest's outcome as documented (conformance.run.items), and a pytest-xdist worker gets its
targets without credentials (they stay in the run's 0600 file)."""

from __future__ import annotations

import inspect
import json
import os
import stat
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

from conformance import brokers
from conformance.cases import load_all
from conformance.options import RunOptions
from conformance.run.engine import Plan, execute
from conformance.run.runner import CaseRunner
from conformance.run.selection import select_cases
from conformance.run.targets import Brokers, Target

REPO = Path(__file__).resolve().parents[2]
CASES = ["2.6.8/1", "2.7.4/1"]


def where(case_id: str) -> tuple[str, int]:
    """The case's file (from the repository root) and the 1-based line of its decorated function."""
    func = load_all()[case_id].func
    return Path(inspect.getsourcefile(func)).relative_to(REPO).as_posix(), func.__code__.co_firstlineno


def test_junit_and_allure_name_the_case_file_and_line(tmp_path, reference_url):
    plan = Plan(select_cases(CASES), [brokers.resolve(reference_url)],
                RunOptions(workers=0, quiet_period=0.2, reports_dir=str(tmp_path)), junit=True, allure=True)
    run = execute(plan).run.path
    testcases = {tc.get("name"): tc for tc in ET.parse(run / "junit.xml").getroot().iter("testcase")}
    label = next(iter(json.loads((run / "run.json").read_text())["brokers"]))
    assert len(testcases) == 2
    for case_id in CASES:
        file, line = where(case_id)
        tc = testcases[f"{case_id}[{label}]"]
        assert tc.get("file") == file and file.startswith("conformance/cases/")
        assert tc.get("line") == str(line - 1)                       # pytest's 0-based line, as JUnit xunit1 has it
        assert tc.get("classname") == file[:-3].replace("/", ".")
        assert {p.get("name"): p.get("value") for p in tc.iter("property")}["verdict"] == "pass"
    results = [json.loads(p.read_text()) for p in (run / "allure-results").glob("*-result.json")]
    assert len(results) == 2
    for result in results:
        case_id = result["fullName"].split("#", 1)[1]
        file, line = where(case_id)
        labels = {lab["name"]: lab["value"] for lab in result["labels"]}
        assert result["fullName"] == f"{file[:-3].replace('/', '.')}#{case_id}"
        assert labels["package"] == file[:-3].replace("/", ".")
        assert labels["location"] == f"{file}:{line}"


def test_a_worker_gets_its_targets_without_credentials(tmp_path):
    from conformance.peer import parse_url
    started = Brokers()
    address, own = parse_url("amqp://admin:s3cret@127.0.0.1:5672"), parse_url("amqp://admin:s3cret@127.0.0.1:5673")
    started.records = {"b": {"name": "b", "address": address.fields(), "profile": "generic",
                             "tools": {"http": ["http://admin:s3cret@127.0.0.1:8161/jolokia"]}, "env": {"K": "s3cret"},
                             "product": "p", "version": "1", "node": {"pid": 1, "managed": True},
                             "own_node": {"name": "b", "address": own.fields(), "profile": "generic",
                                          "node": {"pid": 2, "managed": True}}}}
    pipeline = CaseRunner(RunOptions(), ["2.6.8/1"], [Target("b", "b")], started)
    try:
        sent = pipeline.worker_input()
        assert "s3cret" not in json.dumps(sent)                      # plain values, no credentials
        path = Path(sent["credentials"])
        assert stat.S_IMODE(os.stat(path).st_mode) == 0o600 and "s3cret" in path.read_text()
        worker = CaseRunner.from_worker_input(json.loads(json.dumps(sent)), None)
        assert worker.brokers.records == started.records             # joined again in the worker
        assert worker.brokers.broker("b").address == address          # the handle rebuilt from the fields
        assert worker.brokers.own_node("b").address == own
        assert pipeline.worker_input()["credentials"] == str(path)    # one file per run
    finally:
        started.close()
    assert not path.exists(), "the run's credentials file goes with the run"


def test_pytest_collects_the_suite_into_case_items(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "--collect-only",
                           "--rootdir", str(REPO), "--pyargs", "conformance.suite", "--case", "2.6.8/1"],
                          capture_output=True, text=True, timeout=120, cwd=str(tmp_path),
                          env={**os.environ, "PYTHONPATH": str(REPO)})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"{where('2.6.8/1')[0]}::2.6.8/1[no-broker]" in proc.stdout
    proc = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "--rootdir", str(REPO),
                           "--pyargs", "conformance.suite", "--case", "2.6.8/1"],
                          capture_output=True, text=True, timeout=120, cwd=str(tmp_path),
                          env={**os.environ, "PYTHONPATH": str(REPO)})
    assert proc.returncode == 1 and "needs a broker: pass --broker" in proc.stdout, proc.stdout + proc.stderr


def test_the_verdict_becomes_the_documented_pytest_outcome():
    import pytest

    from conformance.run.items import NonStrict, _outcome
    from conformance.results import CaseResult
    from conformance.verdict import Verdict

    def result(verdict):
        return CaseResult("2.6.8/1", "t", "2.6.8", "MUST", ["2.6.8/synchronous-get"], verdict, "why", "b")
    for verdict in (Verdict.PASS, Verdict.INFORMATIONAL):
        _outcome(result(verdict))                                    # passes, no warning
    with pytest.warns(NonStrict, match="NON-STRICT 2.6.8/1 on b: why"):
        _outcome(result(Verdict.NON_STRICT))
    with pytest.raises(pytest.skip.Exception, match="unsupported: why"):
        _outcome(result(Verdict.UNSUPPORTED))
    with pytest.raises(pytest.fail.Exception, match="^FAIL 2.6.8/1 on b: why"):
        _outcome(result(Verdict.FAIL))
    with pytest.raises(pytest.fail.Exception, match="^ERROR: ERROR 2.6.8/1 on b: why"):
        _outcome(result(Verdict.ERROR))
