"""A Qpid Broker-J 9.2 that a user runs himself, given by URL: a Memory virtual host (its store refuses durable
messages with precondition-failed), queues made through its REST API, the `qpid-broker-j` profile with the
REST base URL under [commands] (issue #23).

The node is started here with an initial configuration of this test's own (not a managed node's): no case
may fail or be non-strict because of the broker's refusal, 2.6.7/11 judges its wrap (with non-durable
messages), a case that cannot reach its subject says why quoting the refusal, and no transcript shows a
frame of ours after the broker's close or after its end of a session other than our end.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import time
from pathlib import Path

import pytest

from conformance.brokers.jvm import cache_dir, java_command, wait_http
from conformance.brokers.managed import free_port
from conformance.brokers.qpid_broker_j import QpidBrokerJ92, initial_config
from conformance.cli import main
from conformance.errors import EXIT_AUTH_FAILED
from conformance.peer import frames_after_the_end

pytestmark = [pytest.mark.broker, pytest.mark.slow]

NON_DURABLE = "Non-durable message store cannot accept durable message."


def memory_virtual_host_config(workdir: Path, amqp_port: int, http_port: int, secure_port: int) -> dict:
    """Broker-J's initial configuration with a Memory virtual host (no store on disk) and PLAIN for guest;
    `secure_port` has Broker-J's default, PLAIN over TLS only (it is a plain port: PLAIN is not offered)."""
    values = {"amqp_port": amqp_port, "anonymous_port": free_port(), "http_port": http_port,
              "store_dir": str(workdir / "unused"), "log_file": str(workdir / "qpid.log"),
              "model_version": QpidBrokerJ92.model_version}
    config = initial_config(values)
    config["virtualhostnodes"][0]["virtualHostInitialConfiguration"] = json.dumps({"type": "Memory"})
    config["authenticationproviders"].append(
        {"name": "plain-over-tls", "type": "Plain",
         "users": [{"name": "guest", "type": "managed", "password": "guest"}]})
    config["ports"].append({"name": "AMQP-PLAIN-OVER-TLS-ONLY", "port": secure_port, "bindingAddress": "127.0.0.1",
                            "authenticationProvider": "plain-over-tls", "protocols": ["AMQP_1_0"]})
    return config


@contextlib.contextmanager
def broker_j_memory(workdir: Path):
    """Start Broker-J 9.2.1 (the managed broker's cached modules) with a Memory virtual host; yield
    (AMQP URL, REST base URL, URL of a port that allows PLAIN over TLS only); stop it (this process's own
    child) afterwards."""
    lib = cache_dir() / "qpid-broker-j" / QpidBrokerJ92.version / "lib"
    if not QpidBrokerJ92().provisioned():
        pytest.skip("qpid-broker-j-9.2 is not provisioned (amqp-conformance brokers provision --tested)")
    amqp_port, http_port, secure_port = free_port(), free_port(), free_port()
    config = workdir / "initial-config.json"
    config.write_text(json.dumps(memory_virtual_host_config(workdir, amqp_port, http_port, secure_port)))
    argv = [java_command(), "-Xms64m", "-Xmx384m", f"-Dqpid.work_dir={workdir / 'work'}",
            f"-Dqpid.home_dir={workdir}", "-cp", f"{lib}/*", "org.apache.qpid.server.Main", "-icp", str(config)]
    with open(workdir / "stdout.log", "wb") as out:
        process = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, cwd=workdir,
                                   env={**os.environ, "QPID_WORK": str(workdir / "work")})
    try:
        api = f"http://127.0.0.1:{http_port}/api/latest"
        wait_http(f"{api}/virtualhost/default/default", 120, "Broker-J's Memory virtual host", user="guest",
                  password="guest", until=lambda body: isinstance(body, dict) and body.get("state") == "ACTIVE")
        yield (f"amqp://guest:guest@127.0.0.1:{amqp_port}", f"http://guest:guest@127.0.0.1:{http_port}/api/latest",
               f"amqp://guest:guest@127.0.0.1:{secure_port}")
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)


def user_profile(path: Path, rest: str) -> Path:
    """The shipped qpid-broker-j profile with the REST base URL under [commands], as its comment says."""
    shipped = (Path(__file__).parents[2] / "fixtures" / "profiles" / "qpid-broker-j.toml").read_text()
    path.write_text(shipped + f'\n[commands]\nhttp = ["{rest}"]\n')
    return path


def test_broker_j_with_a_memory_virtual_host_by_url(tmp_path, capsys):
    workdir = tmp_path / "node"
    workdir.mkdir()
    with broker_j_memory(workdir) as (url, rest, plain_over_tls_only):
        profile = user_profile(tmp_path / "mine.toml", rest)
        started = time.monotonic()
        main(["run", "--broker", url, "--profile", str(profile), "--reports-dir", str(tmp_path / "reports"),
              "-n", "0", "--json"])
        took = time.monotonic() - started
        records = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.startswith("{")]
        # the generic profile makes no queue ("create = auto") and Broker-J creates none on attach: not-found
        main(["run", "2.6.7/10", "2.6.7/13", "--broker", url, "--profile", "generic",
              "--reports-dir", str(tmp_path / "generic"), "-n", "0", "--json"])
        unknown = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.startswith("{")]
        # PLAIN over TLS only, on a plain port: one line, the authentication exit code
        code = main(["run", "2.6.8/1", "--broker", plain_over_tls_only, "--reports-dir", str(tmp_path / "tls"),
                     "-n", "0"])
        said = capsys.readouterr().err
    assert code == EXIT_AUTH_FAILED, said
    assert "not PLAIN, on this connection without TLS" in said and "amqps://" in said and "Traceback" not in said
    assert "guest:guest" not in said
    assert [r["verdict"] for r in unknown] == ["unsupported", "unsupported"], unknown
    assert all("amqp:not-found" in r["reason"] and "could not reach its subject" in r["reason"] for r in unknown)
    assert all(r["findings"] == [] for r in unknown)
    if os.environ.get("AMQP_CONFORMANCE_KEEP"):     # for a look at the verdicts by hand
        Path(os.environ["AMQP_CONFORMANCE_KEEP"]).write_text(json.dumps(records, indent=1))
    assert len(records) >= 30, records
    by_id = {r["case_id"]: r for r in records}
    for r in records:
        refused = r["observations"].get("refusal")
        if r["verdict"] in ("fail", "non-strict"):        # Broker-J's own shortfalls (as on a managed node), none
            assert refused is None and "precondition-failed" not in json.dumps(r["findings"]), r   # from the store
        if r["verdict"] == "unsupported" and refused:
            assert "could not reach its subject" in r["reason"] and refused["condition"] in r["reason"]
    wrap = by_id["2.6.7/11"]
    assert wrap["verdict"] == "pass" or (wrap["verdict"] == "unsupported" and NON_DURABLE in wrap["reason"]), wrap
    if wrap["verdict"] == "pass":
        assert NON_DURABLE in wrap["observations"]["durable_refused"]
    run_dir = next((tmp_path / "reports" / "runs").iterdir())
    after = {p.name: frames_after_the_end(json.loads(p.read_text()))
             for p in (run_dir / "transcripts").glob("*.json")}
    assert {name: lines for name, lines in after.items() if lines} == {}
    print(f"Broker-J 9.2 Memory virtual host: {len(records)} cases in {took:.1f} s")
