"""Managed brokers: start, use and stop each; a second start reuses the provisioned files; bad input gives
one-line errors with distinct exit codes; a minimal case passes against all three in one pytest run (-n 2)."""

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conformance import brokers
from conformance.cli import main as cli_main
from conformance.errors import EXIT_AUTH_FAILED, EXIT_BROKER_UNREACHABLE, EXIT_USAGE, UsageError

pytestmark = pytest.mark.broker
REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("name", list(brokers.MANAGED))
def test_start_use_stop_and_reuse(name):
    managed_cls = brokers.MANAGED[name]
    assert managed_cls().ensure_provisioned() >= 0
    t0 = time.monotonic()
    handle = brokers.start(brokers.resolve(name))
    started = time.monotonic() - t0
    try:
        assert handle.alive()
        queue = handle.unique_queue("managed")
        handle.preload(queue, [b"one", b"two"])
        if handle.profile.queue_depth:
            assert handle.queue_depth(queue) == 2
        workdir = handle.managed.node.workdir
        assert Path(workdir).exists()
    finally:
        handle.managed.stop()
    assert not Path(workdir).exists(), "the throwaway node's directory is removed"
    assert managed_cls().ensure_provisioned() == 0.0, "a second start reuses the provisioned files"
    print(json.dumps({"broker": name, "start_seconds": round(started, 2)}))


def test_unknown_broker_and_bad_url_are_usage_errors(capsys):
    with pytest.raises(UsageError):
        brokers.resolve("no-such-broker")
    assert cli_main(["run", "--broker", "no-such-broker"]) == EXIT_USAGE
    err = capsys.readouterr().err
    assert err.startswith("error: unknown broker") and "Traceback" not in err and err.count("\n") == 1
    assert cli_main(["run", "--broker", "amqp://h:port"]) == EXIT_USAGE
    assert cli_main(["run", "no/such"]) == 3


def test_unreachable_broker_exit_code(capsys):
    assert cli_main(["run", "--broker", "amqp://guest:topsecret@127.0.0.1:1"]) == EXIT_BROKER_UNREACHABLE
    err = capsys.readouterr().err
    assert "cannot reach" in err and "topsecret" not in err


def test_wrong_password_against_rabbitmq_is_an_auth_error(capsys):
    handle = brokers.start(brokers.resolve("rabbitmq-3.10"))
    try:
        url = handle.url.replace("guest:guest", "guest:wrong-pass")
        code = cli_main(["run", "--broker", url, "--profile", "rabbitmq-3", "2.6.8/1"])
    finally:
        handle.managed.stop()
    err = capsys.readouterr().err
    assert code == EXIT_AUTH_FAILED and "wrong-pass" not in err and "authentication failed" in err


def test_profile_without_a_hook_makes_the_case_unsupported():
    from conformance.cases import load_all
    from conformance.runner import RunOptions, run_case
    handle = brokers.start(brokers.resolve("qpid-proton-c"))
    try:
        result = run_case(load_all()["2.5.6/4"], handle, RunOptions())
    finally:
        handle.managed.stop()
    assert result.verdict.value == "unsupported" and "memory_alarm" in result.reason


def test_minimal_case_against_all_three_managed_brokers_with_xdist(tmp_path):
    run_dir = tmp_path / "run"
    cmd = [sys.executable, "-m", "pytest", "--pyargs", "conformance.suite", "-p", "no:cacheprovider", "-q",
           "-n", "2", "--case", "2.6.8/1", "--run-dir", str(run_dir), "--rootdir", str(REPO)]
    for name in brokers.MANAGED:
        cmd += ["--broker", name]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600, cwd=str(REPO),
                          env=dict(os.environ, PYTHONPATH=str(REPO)))
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    records = [json.loads(line) for line in (run_dir / "results.jsonl").read_text().splitlines()]
    assert sorted(r["broker"] for r in records) == sorted(brokers.MANAGED)
    assert {r["verdict"] for r in records} == {"pass"}
