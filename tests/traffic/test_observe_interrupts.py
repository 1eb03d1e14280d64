"""`observe` when things go wrong: clients that do not speak AMQP, a second Ctrl-C while it judges, the
upstream broker dying mid-session, the observe process itself SIGKILLed. What is on disk afterwards is whole
and says what happened; what is printed is one line, never a traceback."""

from __future__ import annotations

import json
import os
import random
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

from test_observe import start_observe

from conformance.reference.listener import ReferenceBroker
from conformance.wire import AMQP_HEADER

ROOT = Path(__file__).resolve().parents[2]
PAIRS = Path(__file__).with_name("proton_pairs.py")


def _send_and_drain(port: int, data: bytes) -> None:
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(data)
        s.settimeout(5)
        try:
            while s.recv(4096):
                pass
        except OSError:
            pass


def _runs(tmp_path) -> list[Path]:
    traffic = tmp_path / "reports" / "traffic"
    return sorted(traffic.iterdir()) if traffic.exists() else []


def test_clients_that_do_not_speak_amqp_are_skipped_once_and_not_recorded_as_amqp(tmp_path):
    broker = ReferenceBroker().start()
    try:
        proc, port, _ = start_observe(tmp_path, broker.url, "--connections", "4")
        _send_and_drain(port, random.Random(1).randbytes(300))
        _send_and_drain(port, b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        _send_and_drain(port, AMQP_HEADER + b"\x00\x00\x00\x10\x02\xbb" + bytes(10))
        app = subprocess.run([sys.executable, str(PAIRS), f"amqp://127.0.0.1:{port}", "1", "3", "default"],
                             capture_output=True, text=True, timeout=60)
        assert app.returncode == 0, app.stderr[-500:]
        out, _ = proc.communicate(timeout=60)
    finally:
        broker.stop()
    lines = out.splitlines()
    skipped = [x for x in lines if x.startswith("skipped ")]
    assert len(skipped) == 2 and all("not AMQP 1.0" in x for x in skipped), out
    assert skipped[0].startswith("skipped #1 ") and skipped[1].startswith("skipped #2 ")
    assert [x for x in lines if "decode-error" in x and "#3 " in x] and "Traceback" not in out
    [run] = _runs(tmp_path)
    conns = [json.loads(x)["connection"].split()[0] for x in (run / "connections.jsonl").read_text().splitlines()]
    assert conns == ["#3", "#4"]                          # the AMQP ones; #1 and #2 only as skipped lines
    meta = json.loads((run / "run.json").read_text())
    assert len(meta["skipped"]) == 2 and meta["connections"] == 2
    assert sorted(p.name for p in (run / "transcripts").iterdir()) == ["connection-3.json", "connection-4.json"]


# observe with the judging process's writing held at a chosen point (a file the test removes releases it), so
# that a second Ctrl-C lands exactly there: before the run directory is in place, or after
HELD = ("import os, sys, time, conformance.traffic.observe as o, conformance.traffic.check as c\n"
        "where, gate = sys.argv[1], sys.argv[2]\n"
        "def hold():\n"
        "    open(gate + '.reached', 'w').close()\n"
        "    while os.path.exists(gate): time.sleep(0.05)\n"
        "real = c.write_run\n"
        "def write_run(*a, **k):\n"
        "    more = k.get('more')\n"
        "    def held(path):\n"
        "        more(path)\n"
        "        if where == 'before-rename': hold()\n"
        "    path = real(*a, **{**k, 'more': held})\n"
        "    if where == 'after-rename': hold()\n"
        "    return path\n"
        "o.write_run = write_run\n"
        "from conformance.cli import main\n"
        "sys.exit(main(sys.argv[3:]))\n")


def _double_ctrl_c(tmp_path, where: str) -> tuple[str, int]:
    broker = ReferenceBroker().start()
    gate = tmp_path / "gate"
    gate.touch()
    env = dict(os.environ, PYTHONPATH=str(ROOT), PYTHONUNBUFFERED="1")
    proc = subprocess.Popen([sys.executable, "-c", HELD, where, str(gate), "observe", "--listen", "127.0.0.1:0",
                             "--upstream", broker.url, "--reports-dir", str(tmp_path / "reports")],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    try:
        port = int(re.search(r"amqp://127\.0\.0\.1:(\d+)", proc.stdout.readline()).group(1))
        app = subprocess.run([sys.executable, str(PAIRS), f"amqp://127.0.0.1:{port}", "3", "5", "default"],
                             capture_output=True, text=True, timeout=60)
        assert app.returncode == 0, app.stderr[-500:]
        proc.send_signal(signal.SIGINT)
        deadline = time.monotonic() + 60
        while not Path(str(gate) + ".reached").exists():
            assert time.monotonic() < deadline and proc.poll() is None, "the judging process never got there"
            time.sleep(0.05)  # bounded-wait-ok: polling for the held point, bounded by the deadline
        proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate(timeout=60)
    finally:
        proc.kill()
        broker.stop()
    return out, proc.returncode


def test_a_second_ctrl_c_before_the_run_is_in_place_leaves_nothing_and_says_so(tmp_path):
    out, code = _double_ctrl_c(tmp_path, "before-rename")
    assert code == 130 and "Traceback" not in out
    assert out.splitlines()[-1] == ("error: interrupted again while judging; no run directory was written "
                                    "(nothing is left of it)")
    assert list((tmp_path / "reports" / "traffic").iterdir()) == []        # no partial directory either


def test_a_second_ctrl_c_after_the_run_is_in_place_keeps_it_whole_and_says_where(tmp_path):
    out, code = _double_ctrl_c(tmp_path, "after-rename")
    assert code == 130 and "Traceback" not in out
    [run] = _runs(tmp_path)
    assert out.splitlines()[-1] == f"error: interrupted again while judging; the run directory was written whole: {run}"
    assert json.loads((run / "run.json").read_text())["connections"] == 3
    assert len(list((run / "transcripts").iterdir())) == 3
    assert len((run / "connections.jsonl").read_text().splitlines()) == 3


def test_an_upstream_broker_that_dies_mid_session_stops_observe_as_at_start_up(tmp_path):
    """The broker is killed while a client is attached: that connection is recorded as cut by the server;
    the next application connection finds no broker, and observe stops with the one line and exit code of a
    broker unreachable at start-up (4), the run written with what was observed."""
    env = dict(os.environ, PYTHONPATH=str(ROOT), PYTHONUNBUFFERED="1")
    broker = subprocess.Popen([sys.executable, "-m", "conformance.reference", "--port", "0"], env=env,
                              stdout=subprocess.PIPE, text=True)
    try:
        url = re.search(r"amqp://\S+", broker.stdout.readline()).group(0)
        proc, port, _ = start_observe(tmp_path, url)
        from conformance.peer import Peer
        peer = Peer.connect(f"amqp://127.0.0.1:{port}")
        peer.handshake()
        peer.begin()
        peer.attach_receiver("r", "q")
        from conformance.wire import Attach
        peer.expect(Attach)
        broker.kill()
        broker.wait(timeout=30)
        with socket.create_connection(("127.0.0.1", port), timeout=10) as late:
            late.sendall(AMQP_HEADER)
            late.settimeout(10)
            try:
                assert late.recv(100) == b""          # refused as the broker would: closed at once
            except ConnectionResetError:
                pass
        out, _ = proc.communicate(timeout=60)
        peer.close()
    finally:
        broker.kill()
    assert proc.returncode == 4, out
    last = out.splitlines()[-1]
    assert last.startswith(f"error: the upstream broker {url} stopped taking connections (Connection refused")
    [run] = _runs(tmp_path)
    assert str(run) in last and "Traceback" not in out
    [conn] = [json.loads(x) for x in (run / "connections.jsonl").read_text().splitlines()]
    assert conn["stopped"].startswith("the server ended its TCP stream (fin) without an AMQP close frame") or \
        conn["stopped"].startswith("the server reset the connection without an AMQP close frame"), conn


def test_a_sigkilled_observe_leaves_its_judging_process_to_write_the_run_without_a_traceback(tmp_path):
    broker = ReferenceBroker().start()
    err = tmp_path / "stderr"
    env = dict(os.environ, PYTHONPATH=str(ROOT), PYTHONUNBUFFERED="1")
    with open(err, "w") as errfile:
        proc = subprocess.Popen([sys.executable, "-m", "conformance.cli", "observe", "--listen", "127.0.0.1:0",
                                 "--upstream", broker.url, "--reports-dir", str(tmp_path / "reports")],
                                stdout=subprocess.PIPE, stderr=errfile, text=True, env=env)
    try:
        port = int(re.search(r"amqp://127\.0\.0\.1:(\d+)", proc.stdout.readline()).group(1))
        app = subprocess.run([sys.executable, str(PAIRS), f"amqp://127.0.0.1:{port}", "2", "5", "default"],
                             capture_output=True, text=True, timeout=60)
        assert app.returncode == 0, app.stderr[-500:]
        judge = int(Path(f"/proc/{proc.pid}/task/{proc.pid}/children").read_text().split()[0])
        proc.stdout.close()               # whoever read observe's output is gone too (a pipeline, a terminal)
        proc.kill()
        proc.wait(timeout=30)
        deadline = time.monotonic() + 60
        while Path(f"/proc/{judge}").exists() and "Z" not in Path(f"/proc/{judge}/stat").read_text().split()[2]:
            assert time.monotonic() < deadline, "the judging process did not end after its proxy was killed"
            time.sleep(0.1)  # bounded-wait-ok: the orphaned judging process finishing, bounded by the deadline
    finally:
        proc.kill()
        broker.stop()
    assert "Traceback" not in err.read_text(), err.read_text()
    [run] = _runs(tmp_path)
    assert json.loads((run / "run.json").read_text())["connections"] == 2
