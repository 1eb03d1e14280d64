"""`amqp-conformance observe`: a real client library through the proxy to the reference broker."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conformance.reference.broker import Faults
from conformance.reference.listener import ReferenceBroker

APP = Path(__file__).with_name("proton_app.py")
ROOT = Path(__file__).resolve().parents[2]
RDC = "2.7.4/receiver-delivery-count"


# observe started with SIGINT ignored, as a POSIX shell starts a script's background job (`observe ... &`); so
# was every process of a test run started in the background, which is how this test once hung for 60 s
IGNORING_SIGINT = ("import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_IGN); "
                   "os.execv(sys.executable, [sys.executable, '-m', 'conformance.cli', *sys.argv[1:]])")


def start_observe(tmp_path, upstream: str, *extra, sigint_ignored: bool = False):
    env = dict(os.environ, PYTHONPATH=str(ROOT), PYTHONUNBUFFERED="1")
    launch = ["-c", IGNORING_SIGINT] if sigint_ignored else ["-m", "conformance.cli"]
    proc = subprocess.Popen([sys.executable, *launch, "observe", "--listen", "127.0.0.1:0",
                             "--upstream", upstream, "--reports-dir", str(tmp_path / "reports"), *extra],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    first = proc.stdout.readline()          # the proxy prints where it listens once it does
    m = re.search(r"amqp://127\.0\.0\.1:(\d+)", first)
    assert m, first
    return proc, int(m.group(1)), first


@pytest.fixture
def faulty_broker():
    broker = ReferenceBroker(faults=Faults.named("omit-receiver-delivery-count")).start()
    yield broker
    broker.stop()


def test_observe_reports_findings_live_and_writes_a_run_directory(tmp_path, faulty_broker):
    proc, port, _ = start_observe(tmp_path, faulty_broker.url, "--connections", "1")
    try:
        app = subprocess.run([sys.executable, str(APP), f"amqp://app:s3cr3t-pw@127.0.0.1:{port}", "q1", "5"],
                             capture_output=True, text=True, timeout=60)
        assert app.returncode == 0, app.stderr[-500:]
        out, _ = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == 1, out                          # a MUST finding
    lines = out.splitlines()
    live = [x for x in lines if RDC in x]
    assert live and "server reference-broker (amqp-conformance-reference-broker@1.0)" in live[0]
    run = next((tmp_path / "reports" / "traffic").iterdir())
    found = [json.loads(x) for x in (run / "findings.jsonl").read_text().splitlines()]
    assert {f["requirement_id"] for f in found if f["endpoint"] == "server"} == {RDC}
    transcript = (run / "transcripts" / "connection-1.json").read_text()
    assert json.loads(transcript)["entries"][0]["name"] == "header"
    assert "s3cr3t" not in transcript and "s3cr3t".encode().hex() not in transcript
    assert "s3cr3t" not in "".join(p.read_text() for p in run.iterdir() if p.is_file())


def _stop_and_read(proc, sig) -> str:
    proc.send_signal(sig)
    try:
        out, _ = proc.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, _ = proc.communicate()
        pytest.fail(f"observe did not stop within 60 s of signal {sig!r}; it printed:\n{out}")
    return out


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_observe_stops_on_ctrl_c_and_sigterm_and_on_duration(tmp_path, faulty_broker, sig):
    """Started with SIGINT ignored (a script's background job), Ctrl-C (or SIGTERM) still stops it and the
    run is written: the observe process sets its own handlers, as tcpdump does."""
    proc, port, _ = start_observe(tmp_path, faulty_broker.url, sigint_ignored=True)
    status = Path(f"/proc/{proc.pid}/status").read_text()
    ignored = int(re.search(r"SigIgn:\s*([0-9a-f]+)", status).group(1), 16)
    assert ignored & (1 << (signal.SIGINT - 1)) == 0, "observe still ignores SIGINT once it is observing"
    app = subprocess.run([sys.executable, str(APP), f"amqp://127.0.0.1:{port}", "q1", "3"], capture_output=True,
                         text=True, timeout=60)
    assert app.returncode == 0, app.stderr[-500:]
    out = _stop_and_read(proc, sig)
    assert proc.returncode == 1 and "1 connection(s) observed" in out and "Traceback" not in out, out
    t0 = time.monotonic()
    proc, port, _ = start_observe(tmp_path, faulty_broker.url, "--duration", "1")
    out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 0 and "0 connection(s) observed" in out
    assert time.monotonic() - t0 < 30


def test_a_judging_process_that_dies_is_one_error_line_not_a_hang(tmp_path, faulty_broker):
    proc, port, _ = start_observe(tmp_path, faulty_broker.url)
    children = Path(f"/proc/{proc.pid}/task/{proc.pid}/children").read_text().split()
    assert len(children) == 1, children                      # the judging process
    os.kill(int(children[0]), signal.SIGKILL)
    t0 = time.monotonic()
    out = _stop_and_read(proc, signal.SIGINT)
    assert proc.returncode == 14 and time.monotonic() - t0 < 30, out
    errors = [x for x in out.splitlines() if x.startswith("error:")]
    assert errors == out.splitlines()[-1:] and "judging process was killed by signal 9" in errors[0], out
    assert "Traceback" not in out


def test_observe_refuses_an_unreachable_upstream_in_one_line(tmp_path, capsys):
    from conformance.cli import main
    rc = main(["observe", "--listen", "127.0.0.1:0", "--upstream", "amqp://127.0.0.1:1"])
    err = capsys.readouterr().err
    assert rc == 4 and err.count("\n") == 1 and "cannot reach the upstream broker" in err


CHROMIUM = Path("/usr/bin/chromium")


@pytest.mark.skipif(not CHROMIUM.exists(), reason="Debian's Chromium is not installed at /usr/bin/chromium")
def test_the_observe_report_in_a_browser(tmp_path, faulty_broker):
    sys.path.insert(0, str(ROOT / "tests" / "report"))
    from png import colour_blocks, decode_png
    proc, port, _ = start_observe(tmp_path, faulty_broker.url, "--connections", "1")
    app = subprocess.run([sys.executable, str(APP), f"amqp://127.0.0.1:{port}", "q1", "5"], capture_output=True,
                         text=True, timeout=60)
    assert app.returncode == 0, app.stderr[-500:]
    proc.communicate(timeout=60)
    page = next((tmp_path / "reports" / "traffic").iterdir()) / "report.html"
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--force-device-scale-factor=1",
             "--force-color-profile=srgb", "--proxy-server=127.0.0.1:9", f"--user-data-dir={tmp_path / 'profile'}"]
    dom = subprocess.run([str(CHROMIUM), *flags, "--dump-dom", page.as_uri()], capture_output=True, text=True,
                         timeout=60)
    assert RDC in dom.stdout and "server amqp-conformance-reference-broker@1.0" in dom.stdout
    shot = tmp_path / "shot.png"
    subprocess.run([str(CHROMIUM), *flags, "--window-size=1200,600", f"--screenshot={shot}", page.as_uri()],
                   capture_output=True, timeout=60)
    image = decode_png(shot.read_bytes())
    # the two tables' header rows are drawn in their background colour
    assert len(colour_blocks(image, (0xE8, 0xEE, 0xF7), 40, 10)) >= 2


def test_the_proxy_forwards_every_byte_verbatim_both_ways_and_half_closes(tmp_path):
    """ObserveProxy in this process between a client and a TCP server that answers every chunk reversed:
    4 MB of random bytes each way arrive exactly; the client's FIN reaches the server, the server's the
    client; the sink saw every byte of both sides."""
    import random
    import socket
    import threading

    from conformance.traffic.observe import DATA_CLIENT, DATA_SERVER, ENDED, ObserveProxy

    server = socket.create_server(("127.0.0.1", 0))
    received_by_server = bytearray()

    def serve():
        conn, _ = server.accept()
        with conn:
            while True:
                data = conn.recv(65536)
                if not data:
                    break
                received_by_server.extend(data)
                conn.sendall(data[::-1])
            conn.sendall(b"bye")           # after the client's FIN: the half-closed direction still works

    threading.Thread(target=serve, daemon=True).start()
    seen = {DATA_CLIENT: bytearray(), DATA_SERVER: bytearray()}
    ended = []

    def sink(cid, kind, t, data):
        if kind in seen:
            seen[kind].extend(data)
        elif kind == ENDED:
            ended.append(cid)

    proxy = ObserveProxy(("127.0.0.1", 0), server.getsockname()[:2], sink)
    runner = threading.Thread(target=proxy.serve, kwargs={"connections": 1}, daemon=True)
    runner.start()
    payload = random.Random(3).randbytes(4 << 20)
    client = socket.create_connection(("127.0.0.1", proxy.port))
    back = bytearray()

    def read_back():
        while True:
            data = client.recv(65536)
            if not data:
                return
            back.extend(data)

    reader = threading.Thread(target=read_back, daemon=True)
    reader.start()
    for off in range(0, len(payload), 100_000):
        client.sendall(payload[off:off + 100_000])
    client.shutdown(socket.SHUT_WR)
    reader.join(60)
    runner.join(60)
    client.close()
    server.close()
    assert bytes(received_by_server) == payload
    assert len(back) == len(payload) + 3 and back.endswith(b"bye")
    assert bytes(seen[DATA_CLIENT]) == payload and bytes(seen[DATA_SERVER]) == bytes(back)
    assert ended == [1] and not runner.is_alive()
