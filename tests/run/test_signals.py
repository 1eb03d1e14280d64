"""A run stopped by a signal tells the truth: SIGTERM (`kill PID`, a cancelled CI job), SIGHUP and Ctrl-C end it
the same way -- exit 128 + the signal's number, no INTERNALERROR, the finished cases kept and counted as
results.jsonl holds them, run.json marked stopped with the signal's name, no `error` record for a broker the
suite stopped itself, and no process left behind (the nodes, their epmd, the pytest-xdist workers)."""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conformance.brokers.managed import NodeRecord, pid_alive
from conformance.run import interrupts

ROOT = Path(__file__).resolve().parents[2]
# `run` started as an interactive shell starts it (SIGINT not ignored), or as a script's background job
LAUNCH = ("import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_IGN if '--bg' in sys.argv else "
          "signal.SIG_DFL); sys.argv.remove('--bg') if '--bg' in sys.argv else None; "
          "os.execv(sys.executable, [sys.executable, '-m', 'conformance.cli', *sys.argv[1:]])")


# -- the handler's own rules (in this process) ---------------------------------------------------------------

def test_a_signal_cuts_an_armed_step_short_and_waits_for_the_next_one_otherwise():
    before = signal.getsignal(signal.SIGTERM)
    said = []
    with interrupts.Stop(say=said.append) as stop:
        os.kill(os.getpid(), signal.SIGTERM)             # between steps: noted only
        assert stop.signum == signal.SIGTERM
        with pytest.raises(KeyboardInterrupt):
            with stop.armed():                           # the next step does not begin
                pytest.fail("a step began after the signal")
        os.kill(os.getpid(), signal.SIGTERM)             # again: said, ignored
        assert said and "already stopping" in said[0]
        assert stop.reason == "stopped by SIGTERM"
        err = stop.error(3, "/runs/x")
        assert (err.exit_code, isinstance(err, KeyboardInterrupt)) == (143, True)
        assert err.message.startswith("stopped by SIGTERM; the 3 case(s) that finished are kept in /runs/x")
    assert signal.getsignal(signal.SIGTERM) is before
    with interrupts.Stop() as stop:
        with pytest.raises(KeyboardInterrupt):
            with stop.armed():
                os.kill(os.getpid(), signal.SIGHUP)
                time.sleep(5)  # bounded-wait-ok: the signal interrupts it at once
        assert stop.error().exit_code == 129 and stop.reason == "stopped by SIGHUP"


# -- real runs ------------------------------------------------------------------------------------------------

def _start(tmp_path, broker: str, *extra, bg: bool = False, session: bool = False) -> subprocess.Popen:
    env = dict(os.environ, PYTHONPATH=str(ROOT), PYTHONUNBUFFERED="1")
    return subprocess.Popen([sys.executable, "-c", LAUNCH, "run", "--broker", broker, "-n", "2", "--reports-dir",
                             str(tmp_path / "reports"), *(["--bg"] if bg else []), *extra],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
                            start_new_session=session)


def _wait_for(predicate, what: str, within: float = 240.0):
    deadline = time.monotonic() + within
    while not predicate():
        assert time.monotonic() < deadline, f"{what} did not happen within {within:.0f} s"
        time.sleep(0.1)  # bounded-wait-ok: polling the run's files, bounded by the deadline


def _records(tmp_path) -> list[dict]:
    runs = list((tmp_path / "reports" / "runs").glob("*/results.jsonl"))
    return [json.loads(x) for x in runs[0].read_text().splitlines() if x.strip()] if runs else []


def _children(pid: int) -> set[int]:
    """Every descendant of pid (its pytest-xdist workers, the nodes, their tools)."""
    found, todo = set(), [pid]
    while todo:
        p = todo.pop()
        for task in Path(f"/proc/{p}/task").glob("*"):
            try:
                kids = {int(x) for x in (task / "children").read_text().split()}
            except OSError:
                continue
            todo += list(kids - found)
            found |= kids
    return found


def _epmds_of(nodes: list[NodeRecord]) -> list[int]:
    from conformance.brokers.rabbitmq import node_strays
    return [p for n in nodes for p in node_strays(n.extra.get("epmd_port")) if pid_alive(p)]


def _stop_and_check(tmp_path, proc: subprocess.Popen, sig: int, *, group: bool = False) -> tuple[str, list]:
    nodes = [r for r in NodeRecord.load_all() if r.owner_pid == proc.pid]
    family = _children(proc.pid)
    (os.killpg if group else os.kill)(proc.pid, sig)
    try:
        out, _ = proc.communicate(timeout=180)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, _ = proc.communicate()
        pytest.fail(f"the run did not end within 180 s of signal {sig}:\n{out}")
    assert proc.returncode == 128 + sig, out
    assert "INTERNALERROR" not in out and "Traceback" not in out, out
    [run] = (tmp_path / "reports" / "runs").iterdir()
    assert "INTERNALERROR" not in ((run / "pytest.log").read_text() if (run / "pytest.log").exists() else "")
    records = _records(tmp_path)
    meta = json.loads((run / "run.json").read_text())
    name = "Ctrl-C" if sig == signal.SIGINT else signal.Signals(sig).name
    assert meta["finished_at"] is None
    assert meta["stopped"]["reason"] == ("interrupted (Ctrl-C)" if sig == signal.SIGINT else f"stopped by {name}")
    assert meta["stopped"]["recorded"] == len(records)
    assert f"{len(records)} of 34 scheduled cases finished" in out, out            # what results.jsonl holds
    died = [r["case_id"] for r in records if r["verdict"] == "error"]
    assert died == [], f"error records in a run the suite stopped itself: {died}"
    assert out.splitlines()[-1].startswith(f"error: {'interrupted' if sig == signal.SIGINT else 'stopped by ' + name};"
                                           f" the {len(records)} case(s) that finished are kept in {run}"), out
    assert nodes and not any(pid_alive(n.pid) for n in nodes), "a node of the run still runs"
    assert not [n for n in NodeRecord.load_all() if n.owner_pid == proc.pid]
    assert _epmds_of(nodes) == [], "an epmd (or an Erlang tool) of the run's nodes is left"
    left = [p for p in family if pid_alive(p)]
    assert left == [], f"processes of the run left: {left}"
    return out, records


@pytest.mark.broker
@pytest.mark.timeout(600)
def test_sigterm_during_the_cases_on_rabbitmq_stops_the_run_truthfully(tmp_path):
    proc = _start(tmp_path, "rabbitmq-4.0")
    _wait_for(lambda: len(_records(tmp_path)) >= 3 or proc.poll() is not None, "three cases finishing")
    assert proc.poll() is None, proc.communicate()[0]
    _, records = _stop_and_check(tmp_path, proc, signal.SIGTERM)
    assert len(records) >= 3


@pytest.mark.broker
@pytest.mark.timeout(600)
def test_sigterm_to_the_whole_process_group_ends_the_workers_as_ctrl_c_does(tmp_path):
    """What `timeout` and CI runners do: the controller and its pytest-xdist workers all get SIGTERM."""
    proc = _start(tmp_path, "qpid-proton-c", "--quiet-period", "0.3", session=True)
    _wait_for(lambda: len(_records(tmp_path)) >= 2 or proc.poll() is not None, "two cases finishing")
    assert proc.poll() is None, proc.communicate()[0]
    _stop_and_check(tmp_path, proc, signal.SIGTERM, group=True)


@pytest.mark.broker
@pytest.mark.timeout(600)
def test_ctrl_c_works_on_a_run_started_as_a_background_job(tmp_path):
    """A script's `run ... &` starts with SIGINT ignored (POSIX); `kill -INT` still stops it, as Ctrl-C."""
    proc = _start(tmp_path, "qpid-proton-c", "--quiet-period", "0.3", bg=True)
    _wait_for(lambda: len(_records(tmp_path)) >= 2 or proc.poll() is not None, "two cases finishing")
    assert proc.poll() is None, proc.communicate()[0]
    _stop_and_check(tmp_path, proc, signal.SIGINT)


@pytest.mark.broker
@pytest.mark.timeout(600)
def test_sigterm_while_the_brokers_start_stops_the_nodes_started_so_far(tmp_path):
    proc = _start(tmp_path, "rabbitmq-4.0")
    seen = []
    while True:                                  # the node's start is under way once it says so
        line = proc.stdout.readline()
        assert line, "".join(seen)
        seen.append(line)
        if re.search(r"starting rabbitmq-4\.0 on", line):
            break
    # the start must still be under way when the signal comes, whatever the machine's speed: the node's process
    # group is frozen (SIGSTOP) as soon as the run has forked it, so that it cannot answer the readiness check
    _wait_for(lambda: _node_groups(proc.pid) or proc.poll() is not None, "a node process of the run", within=120)
    frozen = []
    try:
        for pgid in _node_groups(proc.pid):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pgid, signal.SIGSTOP)
                frozen.append(pgid)
        _wait_for(lambda: all(_state(pid) in ("T", "") for pid in frozen), "the node processes stopped", within=10)
        assert frozen and any(_state(pid) == "T" for pid in frozen), [(pid, _state(pid)) for pid in frozen]
        assert not [r for r in NodeRecord.load_all() if r.owner_pid == proc.pid and r.pid in frozen], \
            "the frozen node had finished its start already"
        family = _children(proc.pid)
        proc.send_signal(signal.SIGTERM)
    finally:
        _thaw(frozen)               # the signal is the run's already (sent first): the start may end now
    out, _ = proc.communicate(timeout=180)
    nodes = [r for r in NodeRecord.load_all() if r.owner_pid == proc.pid]
    assert proc.returncode == 143, "".join(seen) + out
    assert out.splitlines()[-1] == ("error: stopped by SIGTERM while the brokers started: no case ran, nothing was "
                                    "written; the nodes started meanwhile were stopped"), out
    assert "Traceback" not in out
    assert not [pid for pid in family if pid_alive(pid)] and nodes == []       # the nodes and their tools


def _node_groups(pid: int) -> list[int]:
    """The run's children that lead a process group of their own: the nodes it is starting."""
    groups = []
    for child in _children(pid):
        with contextlib.suppress(ProcessLookupError):
            if os.getpgid(child) == child:
                groups.append(child)
    return groups


def _thaw(groups: list[int]) -> None:
    for pgid in groups:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pgid, signal.SIGCONT)


def _state(pid: int) -> str:
    """A process's state letter from /proc (T: stopped), or "" when it is gone."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return ""


def _reference_run(tmp_path, monkeypatch, at: str):
    """A run of three cases on the reference broker in this process, SIGTERM sent to it by the pipeline at
    `at`: "case" (once the second case finished) or "end" (pytest's session finishing, every case done)."""
    from dataclasses import replace

    from conformance.options import RunOptions
    from conformance.run.engine import Plan, execute
    from conformance.run.hooks import RunHooks
    from conformance.run.selection import select_cases
    from conformance.reference.handle import ReferenceBrokerHandle
    handle = ReferenceBrokerHandle(name="ref")
    if at == "end":
        monkeypatch.setattr(RunHooks, "pytest_sessionfinish",
                            lambda self, session: os.kill(os.getpid(), signal.SIGTERM))
    else:
        real = RunHooks.pytest_runtest_logreport

        def logreport(self, report):
            real(self, report)
            if len(self.records) == 2 and report.when == "call":
                os.kill(os.getpid(), signal.SIGTERM)
        monkeypatch.setattr(RunHooks, "pytest_runtest_logreport", logreport)
    options = replace(RunOptions(quiet_period=0.2), workers=0, reports_dir=tmp_path)
    try:
        return execute(Plan(select_cases(["2.6.8"]), [handle], options))
    finally:
        handle.stop()


def test_sigterm_during_the_cases_stops_the_run_in_this_process_too(tmp_path, monkeypatch):
    with pytest.raises(interrupts.Interrupted) as caught:
        _reference_run(tmp_path, monkeypatch, "case")
    assert caught.value.exit_code == 143 and "the 2 case(s) that finished are kept" in caught.value.message
    [run] = (tmp_path / "runs").iterdir()
    meta = json.loads((run / "run.json").read_text())
    assert meta["stopped"]["reason"] == "stopped by SIGTERM" and meta["finished_at"] is None


def test_a_signal_after_every_case_finished_leaves_a_complete_run(tmp_path, monkeypatch):
    """SIGTERM while pytest winds down after the last case: the run is complete (finished_at, no `stopped`),
    and its exit code is its verdicts'."""
    outcome = _reference_run(tmp_path, monkeypatch, "end")
    meta = json.loads((outcome.run.path / "run.json").read_text())
    assert outcome.complete and len(outcome.records) == 3
    assert meta["finished_at"] and "stopped" not in meta
