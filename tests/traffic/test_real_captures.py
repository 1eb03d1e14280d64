"""Real loopback captures by tshark: a python-qpid-proton application against the reference broker, with
and without its `omit-receiver-delivery-count` fault (RabbitMQ 3.10's behaviour), judged by `check`."""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conformance.selftest.broker import Faults
from conformance.selftest.listener import ReferenceBroker
from conformance.traffic.check import judge_all

APP = Path(__file__).with_name("proton_app.py")
RDC = "2.7.4/receiver-delivery-count"

pytestmark = pytest.mark.skipif(shutil.which("tshark") is None, reason="tshark is not installed (./dev test installs it)")


def capture_app(tmp_path: Path, faults: Faults, name: str, interface: str = "lo", fmt: str = "pcapng") -> Path:
    broker = ReferenceBroker(faults=faults).start()
    out = tmp_path / f"{name}.{fmt}"
    tshark = subprocess.Popen(["tshark", "-i", interface, "-f", f"tcp port {broker.port}", "-F", fmt, "-w", str(out)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 30
        line = ""
        while "Capturing on" not in line:          # tshark says so once the capture runs
            line = tshark.stderr.readline()
            assert line and time.monotonic() < deadline, f"tshark did not start capturing: {line!r}"
        app = subprocess.run([sys.executable, str(APP), broker.url, "q1", "5"], capture_output=True, text=True,
                             timeout=60)
        assert app.returncode == 0, app.stderr[-500:]
    finally:
        broker.stop()
        time.sleep(0.5)  # bounded-wait-ok: lets tshark write the last packets before it is told to stop
        tshark.terminate()
        tshark.wait(timeout=30)
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
    from conformance.selftest.handle import ReferenceBrokerHandle

    handle = ReferenceBrokerHandle(faults=Faults.named("omit-receiver-delivery-count"), name="ref-omit")
    out = tmp_path / "suite.pcapng"
    tshark = subprocess.Popen(["tshark", "-i", "lo", "-f", f"tcp port {handle.server.port}", "-w", str(out)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 30
        while "Capturing on" not in (line := tshark.stderr.readline()):
            assert line and time.monotonic() < deadline, "tshark did not start capturing"
        options = replace(RunOptions(quiet_period=0.2), workers=0, reports_dir=tmp_path / "reports")
        outcome = execute(Plan(select_cases(["2.6.7/10", "2.6.7/11", "2.7.4/1"]), [handle], options))
    finally:
        handle.stop()
        time.sleep(0.5)  # bounded-wait-ok: lets tshark write the last packets before it is told to stop
        tshark.terminate()
        tshark.wait(timeout=30)
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
