"""One controller (issue #37): `amqp-conformance run` (engine.execute around its own pytest.main) and the pytest
plugin (`pytest --broker ...`, from inside the user's session) both go through
`conformance.run.controller.Controller` with the same checks: the brokers are started in one place, the run
directory is written in one place, a run whose cases did not all report is broken (never green), a run stopped
early says so, run.json names the brokers as the cases' own `open` frames did."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conformance.reference.broker import Faults
from conformance.reference.listener import ReferenceBroker

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
sys.path.insert(0, str(HERE.parent.parent / "tests"))
from test_layers import calls  # noqa: E402


def test_one_controller_starts_the_brokers_and_writes_the_run_directory():
    assert calls("Controller.start") == {"conformance.run.engine": 1, "conformance.run.plugin": 1}
    started = calls("Brokers.start")        # replay starts its broker for an exploration, not a run of cases
    assert started.pop("conformance.run.controller") == 1 and set(started) <= {"conformance.explore.cli"}
    assert set(calls("RunDirectory.create")) | set(calls("RunDirectory.at")) == {"conformance.run.controller"}


def _pytest(tmp_path, url, *extra):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")])}
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "--rootdir", str(REPO),
                           "--pyargs", "conformance.suite", "--broker", url, "--run-dir", str(tmp_path / "run"),
                           "--quiet-period", "0.2", *extra],
                          capture_output=True, text=True, timeout=300, cwd=str(tmp_path), env=env)


def test_the_plugin_fails_a_session_whose_cases_did_not_all_report(tmp_path):
    """pytest's items all pass, but the controller never got their records: the run broke (as `run` says
    with exit 14), the session fails and run.json says how many finished."""
    with ReferenceBroker() as broker:
        proc = _pytest(tmp_path, broker.url, "--case", "2.6.8/1", "--case", "2.6.8/2", "-p", "lost_records")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "2 passed" in proc.stdout and "the run broke: 0 of 2 scheduled cases finished" in proc.stdout
    meta = json.loads((tmp_path / "run" / "run.json").read_text())
    assert meta["finished_at"] is None and meta["stopped"]["reason"] == "0 of 2 scheduled cases finished"


def test_the_plugin_writes_the_run_json_that_run_writes(tmp_path):
    """Stopped early (--maxfail) says so, and the brokers are named by the cases' own open frames."""
    with ReferenceBroker(faults=Faults(ignore_drain=True)) as broker:
        proc = _pytest(tmp_path, broker.url, "--case", "2.6.8", "--maxfail=1")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    meta = json.loads((tmp_path / "run" / "run.json").read_text())
    assert meta["finished_at"] is None and "stopped early" in meta["stopped"]["reason"]
    [identity] = meta["brokers"].values()
    assert identity["product"] == "amqp-conformance-reference-broker"
    assert meta["options"]["workers"] == 0                            # no -n: pytest ran the cases itself


def test_the_plugin_records_pytests_own_workers(tmp_path):
    with ReferenceBroker() as broker:
        proc = _pytest(tmp_path, broker.url, "--case", "2.6.8/1", "-n", "3")    # not the default 2
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert json.loads((tmp_path / "run" / "run.json").read_text())["options"]["workers"] == 3


@pytest.mark.parametrize("argv, message", [
    (["--case", "9.9.9"], "unknown case"),
    (["--case", "2.6.8/1", "--broker", "nosuchbroker"], "unknown broker"),
])
def test_the_plugin_refuses_what_run_refuses(tmp_path, argv, message):
    with ReferenceBroker() as broker:
        proc = _pytest(tmp_path, broker.url, *argv)
    assert proc.returncode == 4, proc.stdout + proc.stderr           # pytest's usage error
    assert message in proc.stderr
