"""The pipeline's engine from outside: `pytest --broker ...` (the suite as a pytest plugin) writes the same run
directory as `amqp-conformance run`, with pytest-xdist workers; `run` needs only the base dependencies
(pytest, pytest-xdist, allure-pytest, filelock): with the test and report extras made unimportable it still
runs, -n 2 included."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
EXTRAS = ("hypothesis", "proton", "pyspark", "py4j", "pytest_timeout", "cproton")

BLOCKER = """\
import importlib.abc, sys
BLOCKED = {blocked!r}
class Blocker(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in BLOCKED:
            raise ImportError(f"{{name}} is blocked: not a base dependency of amqp-conformance run")
sys.meta_path.insert(0, Blocker())
"""


def test_the_base_dependencies_are_what_run_needs():
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    base = " ".join(project["dependencies"]).lower()
    assert not any(x in base for x in ("hypothesis", "proton", "pyspark", "pytest-timeout"))
    assert "pyspark" in " ".join(project["optional-dependencies"]["report"])
    test = " ".join(project["optional-dependencies"]["test"])
    assert all(x in test for x in ("hypothesis", "python-qpid-proton", "pyspark", "pytest-timeout"))


def test_run_works_without_the_test_and_report_extras(tmp_path, reference_url):
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(BLOCKER.format(blocked=EXTRAS))
    env = {**os.environ, "PYTHONPATH": str(site), "CI": "1"}
    probe = subprocess.run([sys.executable, "-c", "import hypothesis"], env=env, capture_output=True, text=True)
    assert probe.returncode != 0 and "blocked" in probe.stderr, "the blocker works"
    proc = subprocess.run([sys.executable, "-m", "conformance.cli", "run", "2.6.8/1", "2.7.4/4", "--broker",
                           reference_url, "-n", "2", "--reports-dir", str(tmp_path / "reports")],
                          env=env, capture_output=True, text=True, timeout=300, cwd=REPO)   # its conftests stay out
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "blocked" not in proc.stdout + proc.stderr
    assert "exit 0" in proc.stdout and proc.stdout.count(" pass ") + proc.stdout.count("\npass ") >= 2


def test_pytest_plugin_mode_writes_the_same_run_directory(tmp_path, reference_url):
    run_dir = tmp_path / "run"
    proc = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "-n", "2", "--rootdir",
                           str(REPO), "--pyargs", "conformance.suite", "--broker", reference_url, "--case", "2.6.8",
                           "--run-dir", str(run_dir), "--quiet-period", "0.2"],
                          capture_output=True, text=True, timeout=300, cwd=str(REPO))
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    assert "3 passed" in proc.stdout                   # pytest's own console, untouched in plugin mode
    records = [json.loads(line) for line in (run_dir / "results.jsonl").read_text().splitlines()]
    assert sorted(r["case_id"] for r in records) == ["2.6.8/1", "2.6.8/2", "2.6.8/3"]
    meta = json.loads((run_dir / "run.json").read_text())
    assert meta["scheduled"] == 3 and meta["finished_at"] and meta["options"]["quiet_period"] == 0.2


def test_pytest_plugin_mode_refuses_a_bad_option(tmp_path, reference_url):
    proc = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "--rootdir", str(REPO),
                           "--pyargs", "conformance.suite", "--broker", reference_url, "--quiet-period", "-1"],
                          capture_output=True, text=True, timeout=120, cwd=str(REPO))
    assert proc.returncode == 4, proc.stdout + proc.stderr          # pytest's usage error
    assert "--quiet-period -1.0: give a finite number of seconds greater than 0" in proc.stderr


def test_a_record_travels_from_a_worker_as_plain_json():
    """A case record reaches the controller on the test report, through execnet: wire types (UByte, Symbol
    in observations) must arrive as the plain values results.jsonl holds (a worker once crashed on them)."""
    import execnet

    from conformance.run.runner import CaseRunner
    from conformance.options import RunOptions
    from conformance.run.targets import Brokers
    from conformance.results import CaseResult
    from conformance.verdict import Verdict
    from conformance.wire import Symbol, UByte
    result = CaseResult("2.7.5/1", "t", "2.7.5", "MUST", ["2.7.5/settled-mode-settled"], Verdict.INFORMATIONAL,
                        "why", "b", observations={"snd_settle_mode": UByte(2), "outcome": Symbol("amqp:accepted")})
    runner = CaseRunner(RunOptions(), [], [], Brokers())
    runner.keep(result)
    line = execnet.loads(execnet.dumps(runner.current))          # serialised once: the results.jsonl line
    assert json.loads(line)["observations"] == {"snd_settle_mode": 2, "outcome": "amqp:accepted"}


def test_report_without_pyspark_names_the_fix(tmp_path, reference_reports):
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(BLOCKER.format(blocked=("pyspark", "py4j")))
    proc = subprocess.run([sys.executable, "-m", "conformance.cli", "report", "--reports-dir", str(reference_reports),
                           "--history", str(tmp_path / "history"), "--out", str(tmp_path / "out")],
                          env={**os.environ, "PYTHONPATH": str(site)}, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 13, proc.stdout + proc.stderr
    assert proc.stderr.count("\n") == 1 and "PySpark" in proc.stderr and "./dev report" in proc.stderr
    assert "Traceback" not in proc.stderr and not (tmp_path / "history").exists()
