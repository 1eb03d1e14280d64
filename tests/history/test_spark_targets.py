"""`report` on a user's Spark: a standalone Spark master with one worker (--spark-master) and a Spark Connect
server (--spark-remote), both started here from the pyspark installation, on loopback."""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pyspark
import pytest

SPARK_HOME = Path(pyspark.__file__).parent
pytestmark = pytest.mark.slow


def port_from_log(log: Path, process: subprocess.Popen, service: str, what: str, timeout: float = 90.0) -> int:
    """The port a server started on port 0 reports it took (Spark's "Successfully started service 'X' on port
    N"): no port chosen in advance, so none another process can take in between."""
    pattern = re.compile(rf"Successfully started service '{re.escape(service)}' on port (\d+)")
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = pattern.search(log.read_text(errors="replace")) if log.exists() else None
        if found:
            return int(found.group(1))
        if process.poll() is not None:
            pytest.fail(f"{what} exited with {process.returncode}")
        time.sleep(0.2)  # bounded-wait-ok: polling a starting server's log with a deadline
    pytest.fail(f"{what} reported no port within {timeout:.0f} s (see {log})")


def wait_for_port(port: int, process: subprocess.Popen, what: str, timeout: float = 90.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            pytest.fail(f"{what} exited with {process.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.2)  # bounded-wait-ok: polling a starting server's port with a deadline
    pytest.fail(f"{what} did not listen on {port} within {timeout:.0f} s")


def spark_env(tmp: Path) -> dict:
    return {**os.environ, "SPARK_HOME": str(SPARK_HOME), "SPARK_LOCAL_IP": "127.0.0.1",
            "SPARK_LOG_DIR": str(tmp), "SPARK_WORKER_DIR": str(tmp / "work"), "SPARK_NO_DAEMONIZE": "1"}


def start(argv: list[str], tmp: Path, name: str) -> subprocess.Popen:
    log = open(tmp / f"{name}.log", "wb")
    return subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, env=spark_env(tmp), start_new_session=True)


def stop(*processes: subprocess.Popen) -> None:
    for p in processes:
        if p.poll() is None:
            os.killpg(p.pid, 15)
    for p in processes:
        try:
            p.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, 9)


def report(reports: Path, *spark_args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "conformance.cli", "report", "--reports-dir", str(reports),
                           *spark_args], capture_output=True, text=True, timeout=300)


@pytest.fixture
def reports(reference_reports, tmp_path):
    dest = tmp_path / "reports"
    shutil.copytree(reference_reports, dest)
    return dest


def test_report_on_a_standalone_spark_master(reports, tmp_path):
    spark_class = str(SPARK_HOME / "bin" / "spark-class")
    master = start([spark_class, "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1", "--port", "0",
                    "--webui-port", "0"], tmp_path, "master")
    worker = None
    try:
        port = port_from_log(tmp_path / "master.log", master, "sparkMaster", "the Spark master")
        wait_for_port(port, master, "the Spark master")
        worker = start([spark_class, "org.apache.spark.deploy.worker.Worker", f"spark://127.0.0.1:{port}",
                        "--cores", "2", "--memory", "1g", "--webui-port", "0"], tmp_path, "worker")
        done = report(reports, "--spark-master", f"spark://127.0.0.1:{port}")
        assert done.returncode == 0, done.stderr[-2000:]
        assert f"starting Spark (spark://127.0.0.1:{port})" in done.stdout
        model = json.loads((reports / "report" / "report.json").read_text())
        assert [c["key"] for c in model["columns"]] == ["ref-a@1.0", "ref-a@1.1", "ref-b@2.0"]
    finally:
        stop(*(p for p in (worker, master) if p is not None))


def test_report_on_a_spark_connect_server(reports, tmp_path):
    server = start([str(SPARK_HOME / "bin" / "spark-submit"), "--class",
                    "org.apache.spark.sql.connect.service.SparkConnectServer", "--master", "local[2]",
                    "--conf", "spark.connect.grpc.binding.port=0", "--conf", "spark.ui.enabled=false",
                    "--conf", "spark.sql.session.timeZone=UTC"], tmp_path, "connect")
    try:
        port = port_from_log(tmp_path / "connect.log", server,
                             "org.apache.spark.sql.connect.service.SparkConnectService", "the Spark Connect server")
        wait_for_port(port, server, "the Spark Connect server")
        done = report(reports, "--spark-remote", f"sc://127.0.0.1:{port}")
        assert done.returncode == 0, done.stderr[-2000:]
        model = json.loads((reports / "report" / "report.json").read_text())
        cells = {(c["case_id"], c["column"]): c["verdict"] for c in model["cells"]}
        assert cells["2.6.8/2", "ref-a@1.1"] == "fail" and cells["2.6.8/2", "ref-a@1.0"] == "pass"
    finally:
        stop(server)


def test_unreachable_spark_connect_server_is_exit_13(reports):
    with socket.socket() as held:                 # bound, never listening: refused, and no one else can take it
        held.bind(("127.0.0.1", 0))
        done = report(reports, "--spark-remote", f"sc://127.0.0.1:{held.getsockname()[1]}")
    assert done.returncode == 13 and "cannot reach the Spark Connect server" in done.stderr
    assert "Traceback" not in done.stderr
