"""Real loopback captures by tshark: a python-qpid-proton application against the reference broker, with
and without its `omit-receiver-delivery-count` fault (RabbitMQ 3.10's behaviour), judged by `check`."""

from __future__ import annotations

import contextlib
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conformance.errors import CaptureTruncated, NotACapture
from conformance.reference.broker import Faults
from conformance.reference.listener import ReferenceBroker
from conformance.traffic.check import judge_all
from conformance.traffic.pcap import read_packets, tcp_segment

APP = Path(__file__).with_name("proton_app.py")
RDC = "2.7.4/receiver-delivery-count"

pytestmark = pytest.mark.skipif(shutil.which("tshark") is None, reason="tshark is not installed (./dev test installs it)")


@contextlib.contextmanager
def tshark_on(port: int, out: Path, interface: str = "lo", fmt: str = "pcapng"):
    """tshark capturing `tcp port PORT` into `out` while the block runs. A sentinel connection to the port is
    seen in the file before the block starts and again before tshark is stopped: packets are written in
    order, so nothing the block sent is still in tshark's buffers (a loaded machine lags by seconds)."""
    tshark = subprocess.Popen(["tshark", "-i", interface, "-f", f"tcp port {port}", "-F", fmt, "-w", str(out)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 30
        line = ""
        while "Capturing on" not in line:          # tshark says so once the capture runs
            line = tshark.stderr.readline()
            assert line and time.monotonic() < deadline, f"tshark did not start capturing: {line!r}"
        _sentinel_seen(port, out)
        yield
        _sentinel_seen(port, out)
    finally:
        tshark.terminate()
        tshark.wait(timeout=30)


def _sentinel_seen(port: int, out: Path, within: float = 30.0) -> None:
    """Connect to `port` until one of those connections is in `out` (bounded, named wait): tshark's "Capturing
    on" comes before its filter takes packets, and it writes what it took a while later."""
    mine: set[int] = set()
    deadline = time.monotonic() + within
    while True:
        with socket.create_connection(("127.0.0.1", port), timeout=10) as sentinel:
            mine.add(sentinel.getsockname()[1])
        time.sleep(0.2)  # bounded-wait-ok: polling the capture file, bounded by the deadline below
        try:
            if any((seg := tcp_segment(p)) is not None and seg.src[1] in mine for p in read_packets(out)):
                return
        except (CaptureTruncated, NotACapture):    # the file is still being written
            pass
        assert time.monotonic() < deadline, f"tshark wrote no packet of a sentinel connection within {within} s"


def capture_app(tmp_path: Path, faults: Faults, name: str, interface: str = "lo", fmt: str = "pcapng") -> Path:
    broker = ReferenceBroker(faults=faults).start()
    out = tmp_path / f"{name}.{fmt}"
    try:
        with tshark_on(broker.port, out, interface, fmt):
            app = subprocess.run([sys.executable, str(APP), broker.url, "q1", "5"], capture_output=True,
                                 text=True, timeout=60)
            assert app.returncode == 0, app.stderr[-500:]
    finally:
        broker.stop()
    return out


def test_a_real_capture_shows_the_brokers_publisher_flows_without_delivery_count(tmp_path):
    faulty = judge_all([capture_app(tmp_path, Faults.named("omit-receiver-delivery-count"), "faulty")])
    clean = judge_all([capture_app(tmp_path, Faults(), "clean")])
    server = lambda r: [f.requirement_id for f in r.findings if f.endpoint == "server"]
    assert server(faulty) and set(server(faulty)) == {RDC}
    assert all(f.frame.startswith("flow(handle=0") for f in faulty.findings if f.endpoint == "server")
    assert server(clean) == []
    assert len(faulty.connections) == len(clean.connections) == 1
    assert faulty.connections[0].endpoints["server"].product == "amqp-conformance-reference-broker"


def test_a_pcap_of_the_any_interface_linux_cooked_v2_is_read_too(tmp_path):
    result = judge_all([capture_app(tmp_path, Faults.named("omit-receiver-delivery-count"), "any", "any", "pcap")])
    assert len(result.connections) == 1
    assert {f.requirement_id for f in result.findings if f.endpoint == "server"} == {RDC}


def test_the_suites_own_run_captured_gives_the_findings_of_its_transcripts(tmp_path):
    """A run of the suite (reference broker without delivery-count on publisher flows) captured by tshark:
    `check` on the capture and on the run's transcripts finds the same (requirement, endpoint, frame) on the
    connections the transcripts record (the capture also has the suite's queue-management connections)."""
    from collections import Counter
    from dataclasses import replace

    from conformance.run.engine import Plan, execute
    from conformance.options import RunOptions
    from conformance.run.selection import select_cases
    from conformance.reference.handle import ReferenceBrokerHandle

    handle = ReferenceBrokerHandle(faults=Faults.named("omit-receiver-delivery-count"), name="ref-omit")
    out = tmp_path / "suite.pcapng"
    try:
        with tshark_on(handle.server.port, out):
            options = replace(RunOptions(quiet_period=0.2), workers=0, reports_dir=tmp_path / "reports")
            outcome = execute(Plan(select_cases(["2.6.7/10", "2.6.7/11", "2.7.4/1"]), [handle], options))
    finally:
        handle.stop()
    transcripts = judge_all([outcome.run.path])
    capture = judge_all([out])
    ids = {c.endpoints["client"].container_id for c in transcripts.connections}
    assert len(ids) == len(transcripts.connections) >= 3
    same = [c for c in capture.connections if c.endpoints["client"].container_id in ids]
    assert len(same) == len(ids)
    key = lambda f: (f.container_id, f.requirement_id, f.endpoint, f.frame)   # noqa: E731
    found = Counter(key(f) for c in same for f in c.findings)
    assert found == Counter(key(f) for f in transcripts.findings)
    assert any(r == RDC and e == "server" for _, r, e, _ in found)
