"""The suite's own tests end: a test that hangs is stopped at the per-test bound (pyproject.toml, pytest-timeout)
as a failure that names it, alone (-n 0) and under pytest-xdist (-n 2, as `./dev test` runs), also when it
catches the exception a signal would raise and hangs again in its cleanup, which is how a hung client driver
once kept `tests/clients/test_client_cases.py` waiting forever. Without the bound, the inner run below never
ends (this test then fails at its own 120-s guard instead of hanging)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

HANGS = '''
import threading

def test_a_case_that_hangs_and_swallows_every_interrupt():
    stuck = threading.Event()
    while True:                   # like a driver wait whose own timeout is ignored, retried in a cleanup
        try:
            stuck.wait()
        except BaseException:
            pass

def test_a_quick_one():
    assert True
'''


@pytest.mark.timeout(300)
@pytest.mark.parametrize("workers", ["0", "2"])
def test_a_hung_test_is_stopped_at_the_bound_as_a_failure_naming_it(tmp_path, workers):
    (tmp_path / "test_hanging.py").write_text(HANGS)
    t0 = time.monotonic()
    proc = subprocess.Popen([sys.executable, "-m", "pytest", "-c", str(ROOT / "pyproject.toml"), "--rootdir",
                             str(tmp_path), "-o", "timeout=3", "-n", workers, "-p", "no:randomly",
                             str(tmp_path / "test_hanging.py")], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, cwd=str(tmp_path), start_new_session=True)
    try:
        out, _ = proc.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)          # its pytest-xdist workers too, or they would hang on
        proc.communicate()
        pytest.fail("the hanging test was not stopped within 120 s: the per-test bound is missing or ineffective")
    assert proc.returncode not in (0, 5), out
    assert time.monotonic() - t0 < 100
    if workers == "0":            # pytest-timeout's report: the stacks, the hung test's frame among them
        assert "Timeout" in out and "in test_a_case_that_hangs_and_swallows_every_interrupt" in out, out
    else:                         # the controller reports it failed, by name, and the other test still passed
        assert "worker 'gw" in out and "crashed while running 'test_hanging.py::test_a_case_that_hangs_and_swallows" \
            "_every_interrupt'" in out, out
        assert "FAILED test_hanging.py::test_a_case_that_hangs_and_swallows_every_interrupt" in out, out
        assert "1 failed, 1 passed" in out, out
