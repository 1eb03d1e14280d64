"""Starting and stopping managed nodes when many things happen at once: concurrent starts never exec a file
another thread is writing ("Text file busy"); one broker that fails to start is that broker's `error`, in one
line, while the others run; `brokers down` of a node already gone stops the others; a port a node just left
(TIME-WAIT) can be taken again at once; the epmd processes RabbitMQ nodes leave behind are shown and stopped."""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from conformance import brokers
from conformance.brokers import managed
from conformance.cli import main
from conformance.errors import EXIT_BROKER_START_FAILED, EXIT_CASE_ERROR


def _write_then_exec_while_another_thread_forks(tmp_path: Path, lock, tries: int) -> int:
    """Thread A copies a script (open a moment, as a copy of several files is) then runs it, `tries` times;
    thread B meanwhile forks children that take 20 ms before their exec. Both use `lock` as the brokers
    package uses SPAWN_LOCK. Returns how many of A's execs failed with ETXTBSY."""
    stop = threading.Event()

    def forker():
        while not stop.is_set():
            with lock:
                child = subprocess.Popen(["true"], preexec_fn=lambda: time.sleep(0.02))
            child.wait()

    thread = threading.Thread(target=forker)
    thread.start()
    busy = 0
    try:
        for k in range(tries):
            path = tmp_path / f"run-{k}.sh"

            def write(path=path):
                with open(path, "w") as fh:
                    fh.write("#!/bin/sh\n")
                    time.sleep(0.002)
                    fh.write("exit 0\n")
                path.chmod(0o755)
            with lock:
                write()
            try:
                with lock:
                    subprocess.Popen([str(path)]).wait()
            except OSError as exc:
                if exc.errno != 26:
                    raise
                busy += 1
    finally:
        stop.set()
        thread.join()
    return busy


def test_a_file_written_then_executed_is_never_busy_in_a_child_another_thread_forked(tmp_path):
    """The race that once failed a 15-broker run (`OSError: [Errno 26] Text file busy` on an Artemis node's
    bin/artemis): without a lock it happens (the control: at least once in 100), with SPAWN_LOCK never."""
    assert _write_then_exec_while_another_thread_forks(tmp_path, managed.SPAWN_LOCK, 100) == 0
    assert _write_then_exec_while_another_thread_forks(tmp_path, contextlib.nullcontext(), 100) > 0


def test_every_child_of_the_brokers_package_is_forked_under_the_lock():
    """No module of conformance/brokers forks a child but through `managed.popen` / `managed.run_command`
    (or holding SPAWN_LOCK): a new subprocess call elsewhere would bring the race back."""
    root = Path(managed.__file__).parent
    allowed = {("managed.py", "popen"), ("cli.py", "stop_record"), ("handle.py", "_run"),
               ("diskfill.py", "mount_tmpfs"), ("diskfill.py", "unmount")}
    import ast
    found = []
    for path in sorted(root.glob("*.py")):
        tree = ast.parse(path.read_text())
        for func in ast.walk(tree):
            if not isinstance(func, ast.FunctionDef):
                continue
            for call in ast.walk(func):
                if isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) and \
                        getattr(call.func.value, "id", None) == "subprocess" and \
                        call.func.attr in ("Popen", "run", "call", "check_output"):
                    found.append((path.name, func.name))
    assert set(found) <= allowed, sorted(set(found) - allowed)


class _Broken(managed.ManagedBroker):
    """A managed broker whose start fails as the race did: an OSError out of exec."""

    kind = "broken-start"
    description = "a broker whose start fails with ETXTBSY"
    profile_name = "qpid-proton-c"

    def provision(self):
        pass

    def provisioned(self):
        return True

    def _start(self, workdir, port):
        raise OSError(26, "Text file busy", str(workdir / "bin" / "artemis"))

    def _stop(self, node):
        pass


@pytest.fixture
def broken_broker(monkeypatch):
    monkeypatch.setitem(brokers.MANAGED, "broken-start", _Broken)


@pytest.mark.broker
def test_a_broker_that_fails_to_start_is_its_cases_error_and_the_others_run(tmp_path, capsys, broken_broker):
    code = main(["run", "2.6.8", "--broker", "broken-start", "--broker", "qpid-proton-c", "-n", "0",
                 "--reports-dir", str(tmp_path), "--quiet-period", "0.2"])
    out, err = capsys.readouterr()
    assert code == EXIT_CASE_ERROR and "Traceback" not in out + err
    assert "broker broken-start: did not start (broken-start did not start: OSError: [Errno 26] Text file busy" in out
    [run] = (tmp_path / "runs").iterdir()
    records = [json.loads(x) for x in (run / "results.jsonl").read_text().splitlines()]
    broken = [r for r in records if r["broker"] == "broken-start"]
    proton = [r for r in records if r["broker"] == "qpid-proton-c"]
    assert len(broken) == len(proton) == 3
    assert all(r["verdict"] == "error" and r["reason"].startswith("the broker did not start: broken-start did not "
                                                                 "start: OSError: [Errno 26] Text file busy")
               for r in broken)
    assert all(r["verdict"] != "error" for r in proton)
    meta = json.loads((run / "run.json").read_text())
    assert meta["brokers"]["broken-start"]["start_error"].startswith("broken-start did not start: OSError")
    assert meta["finished_at"]


def test_a_run_whose_only_broker_fails_to_start_is_one_line_and_exit_7(tmp_path, capsys, broken_broker):
    code = main(["run", "2.6.8", "--broker", "broken-start", "-n", "0", "--reports-dir", str(tmp_path)])
    _, err = capsys.readouterr()
    assert code == EXIT_BROKER_START_FAILED
    assert err.count("\n") == 1
    assert err.startswith("error: broken-start did not start: OSError: [Errno 26] Text file busy")
    assert not (tmp_path / "runs").exists()


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "conformance.cli", *args], capture_output=True, text=True,
                          timeout=120, env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])})


def _up(*args: str) -> str:
    proc = _cli("brokers", "up", "qpid-proton-c", *args)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.split("; node ")[1].split(":")[0]


@pytest.mark.broker
def test_down_of_a_node_gone_already_stops_the_others(tmp_path):
    a, b = _up(), _up()
    assert _cli("brokers", "down", b).returncode == 0
    proc = _cli("brokers", "down", a, b)
    assert proc.returncode == 0, proc.stderr
    assert f"{b}: no such node is running (stopped already?)" in proc.stdout and "stopped 1 node(s)" in proc.stdout
    assert a not in _cli("brokers", "status").stdout
    typo = _cli("brokers", "down", "qpid-proton")                # not a node name: a usage error, as before
    assert typo.returncode == 2 and "did you mean qpid-proton-c?" in typo.stderr


@pytest.mark.broker
def test_up_on_the_port_a_node_just_left_works_at_once():
    """The stopped node's connections linger in TIME-WAIT for up to a minute: they do not keep a new node out."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    node = _up("--port", str(port))
    client = socket.create_connection(("127.0.0.1", port))
    client.sendall(b"AMQP\x00\x01\x00\x00")
    client.recv(8)
    assert _cli("brokers", "down", node).returncode == 0      # the broker's side closes first: its TIME-WAIT
    client.close()
    states = subprocess.run(["ss", "-tanH", f"sport = :{port}"], capture_output=True, text=True).stdout \
        if shutil.which("ss") else "TIME-WAIT"
    assert "TIME-WAIT" in states, states
    again = _up("--port", str(port))
    assert again == node
    assert _cli("brokers", "down", again).returncode == 0


def _fake(tmp_path: Path, comm: str, port: int, node: str) -> subprocess.Popen:
    """A process named `comm` with a managed RabbitMQ node's environment (as its epmd or VM has)."""
    exe = tmp_path / comm
    if not exe.exists():
        shutil.copy(shutil.which("sleep"), exe)
    env = {"ERL_EPMD_PORT": str(port), "RABBITMQ_NODENAME": f"{node}@localhost",
           "RABBITMQ_MNESIA_BASE": f"/var/tmp/amqp-conformance-rabbitmq-4.0-x/mnesia"}
    return subprocess.Popen([str(exe), "300"], env=env)


def test_status_shows_an_epmd_no_node_uses_and_down_stops_it_but_never_a_used_one(tmp_path):
    orphan = _fake(tmp_path, "epmd", 41999, "amqpc41000")
    used = _fake(tmp_path, "epmd", 42999, "amqpc42000")
    vm = _fake(tmp_path, "beam.smp", 42999, "amqpc42000")        # its node's VM still runs
    try:
        status = _cli("brokers", "status").stdout
        assert f"orphan   pid {orphan.pid}, epmd port 41999, left by RabbitMQ node amqpc41000@localhost" in status
        assert f"pid {used.pid}," not in status
        down = _cli("brokers", "down")
        # this one at least (an orphan some earlier run left on the machine is stopped too, and counted)
        assert re.search(r"\b[1-9]\d* orphan epmd process\(es\)", down.stdout), down.stdout
        assert orphan.wait(timeout=10) is not None
        assert used.poll() is None and vm.poll() is None
    finally:
        for p in (orphan, used, vm):
            p.kill()
            p.wait()


def test_free_ports_handed_out_in_parallel_are_never_the_same():
    """Nodes starting in parallel bind their ports seconds after they were chosen: this process never hands
    out one port twice (two nodes given one port: the second cannot bind its web or distribution port)."""
    got: list[int] = []
    lock = threading.Lock()

    def pick():
        ports = [managed.free_port() for _ in range(150)]
        with lock:
            got.extend(ports)
    threads = [threading.Thread(target=pick) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(got) == 1200 and len(set(got)) == 1200
