"""Managed brokers against the real thing: start, use and stop each; a second start reuses the provisioned
files and is fast; bad input gives one-line errors with distinct exit codes; nodes are cleaned up on SIGTERM;
the minimal case passes against all three managed brokers in one pytest run with -n 2.

Timings are printed as `FIGURE {...}` lines (run with -s to see them)."""

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conformance import brokers
from conformance.brokers.managed import NodeRecord, logs_dir, pid_alive
from conformance.cli import main as cli_main
from conformance.errors import (
    EXIT_AUTH_FAILED, EXIT_BROKER_START_FAILED, EXIT_BROKER_UNREACHABLE, EXIT_PERMISSION, EXIT_PORT_IN_USE, EXIT_USAGE,
    AuthenticationFailed, BrokerStartFailed, BrokerUnreachable, PermissionProblem, PortInUse, UsageError,
)

pytestmark = pytest.mark.broker
REPO = Path(__file__).resolve().parents[2]


def figure(**values):
    print("FIGURE " + json.dumps(values))


@pytest.mark.parametrize("name", list(brokers.TESTED))
def test_start_use_stop_then_a_second_start_reuses_the_provisioned_files(name):
    managed_cls = brokers.MANAGED[name]
    provision_seconds = managed_cls().ensure_provisioned()
    starts = []
    for round_ in range(2):
        t0 = time.monotonic()
        handle = brokers.start(brokers.resolve(name))
        starts.append(round(time.monotonic() - t0, 2))
        node = handle.managed.node
        try:
            assert handle.alive() and handle.host == "127.0.0.1" and handle.port == int(node.url.rsplit(":", 1)[1])
            assert handle.product and handle.version, "product and version are known"
            assert NodeRecord.load_all() and any(r.name == node.name for r in NodeRecord.load_all())
            queue = handle.unique_queue("managed")
            handle.create_queue(queue)
            assert handle.preload(queue, 3, body=b"m") == [b"m"] * 3
            inspects = handle.profile.queue_action("depth") is not None
            drains = (handle.profile.queue_action("purge") or "drain") == "drain"
            assert handle.queue_depth(queue) == (3 if inspects else None)   # None only when the profile cannot
            purged = handle.purge_queue(queue)
            assert purged == 3 if drains else purged in (3, None), purged   # a tool may not say how many
            if inspects:
                assert handle.queue_depth(queue) == 0
            if drains:
                assert handle.purge_queue(queue) == 0               # nothing left to drain
            assert "\n" in handle.log_tail(20) or handle.log_tail(20)
            workdir = Path(node.workdir)
            assert workdir.exists()
            password = handle.address.password
            if password:
                assert f":{password}@" not in node.path.read_text(), "the node file keeps no password"
        finally:
            handle.managed.stop()
        assert not workdir.exists(), "the throwaway node's directory is removed"
        assert not pid_alive(node.pid), "the node's process is gone"
        assert not node.path.exists(), "the node's state file is removed"
        assert managed_cls().ensure_provisioned() == 0.0, "a second start reuses the provisioned files"
    assert starts[1] < 30, f"a later start of {name} is fast ({starts[1]} s)"
    figure(broker=name, provision_seconds=round(provision_seconds, 2), start_seconds=starts,
           ready_seconds=node.extra["ready_seconds"], product=handle.product, version=handle.version)


def test_queue_limits_purge_and_delete_through_rabbitmq4_management_over_amqp():
    from conformance.brokers import amqp_ops
    handle = brokers.start(brokers.resolve("rabbitmq-4.0"))
    try:
        queue = handle.unique_queue("limited")
        handle.create_queue(queue, max_length=2)
        assert handle.queue_address(queue, "target") == f"/queues/{queue}"
        handle.preload(queue, 2)
        assert handle.queue_depth(queue) == 2
        with pytest.raises(brokers.HookFailed, match="did not accept"):
            handle.preload(queue, 1, timeout=10)            # reject-publish: the third message is refused
        assert handle.purge_queue(queue) == 2
        handle.delete_queue(queue)
        gone = amqp_ops.management(handle._endpoint(), "GET", amqp_ops.queue_path(queue), ok=(404,))
        assert gone.status == 404, "the queue is deleted"
    finally:
        handle.managed.stop()


def test_alarm_hooks_run_and_are_reported(tmp_path):
    handle = brokers.start(brokers.resolve("rabbitmq-3.10"))
    try:
        assert handle.has_hook("memory_alarm")
        handle.set_alarm("memory", True, timeout=30)
        handle.set_alarm("memory", False, timeout=30)
    finally:
        handle.managed.stop()


def test_unknown_broker_and_bad_url_are_usage_errors(capsys):
    with pytest.raises(UsageError):
        brokers.resolve("no-such-broker")
    assert cli_main(["run", "--broker", "no-such-broker"]) == EXIT_USAGE
    err = capsys.readouterr().err
    assert err.startswith("error: unknown broker") and "Traceback" not in err and err.count("\n") == 1
    assert cli_main(["brokers", "up", "rabbitmq-9"]) == EXIT_USAGE
    assert cli_main(["run", "--broker", "amqp://h:port"]) == EXIT_USAGE
    assert cli_main(["run", "no/such"]) == 3


def test_unreachable_broker_exit_code(capsys):
    with pytest.raises(BrokerUnreachable):
        brokers.start(brokers.resolve("amqp://guest:topsecret@127.0.0.1:1"))
    assert cli_main(["run", "--broker", "amqp://guest:topsecret@127.0.0.1:1"]) == EXIT_BROKER_UNREACHABLE
    err = capsys.readouterr().err
    assert "cannot reach" in err and "topsecret" not in err and err.count("\n") == 1


def test_wrong_password_against_rabbitmq_is_an_auth_error(capsys):
    handle = brokers.start(brokers.resolve("rabbitmq-3.10"))
    try:
        url = handle.url.replace("guest:guest", "guest:wrong-pass")
        with pytest.raises(AuthenticationFailed) as info:
            brokers.start(brokers.resolve(url, "rabbitmq-3"))
        assert "wrong-pass" not in info.value.message
        code = cli_main(["run", "--broker", url, "--profile", "rabbitmq-3", "2.6.8/1"])
    finally:
        handle.managed.stop()
    err = capsys.readouterr().err
    assert code == EXIT_AUTH_FAILED and "wrong-pass" not in err and "authentication failed" in err


def test_port_in_use_is_its_own_error(capsys):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(PortInUse) as info:
            brokers.start(brokers.resolve("qpid-proton-c"), port=port)
        assert str(port) in info.value.message
        assert cli_main(["brokers", "up", "qpid-proton-c", "--port", str(port)]) == EXIT_PORT_IN_USE
    err = capsys.readouterr().err
    assert err.startswith("error: port") and err.count("\n") == 1


def test_no_permission_to_chroot_is_its_own_error(monkeypatch, capsys):
    monkeypatch.setattr(os, "geteuid", lambda: 1000)      # as if not root: the chroot broker cannot start
    with pytest.raises(PermissionProblem, match="needs root"):
        brokers.start(brokers.resolve("rabbitmq-4.0"))
    assert cli_main(["brokers", "up", "rabbitmq-4.0"]) == EXIT_PERMISSION
    assert "needs root" in capsys.readouterr().err


def test_a_broker_that_is_not_ready_in_time_fails_with_its_log_tail(monkeypatch, capsys):
    monkeypatch.setattr(brokers.MANAGED["rabbitmq-3.10"], "startup_timeout", 0.5)
    started = time.time() - 1
    with pytest.raises(BrokerStartFailed) as info:
        brokers.start(brokers.resolve("rabbitmq-3.10"))
    message = info.value.message
    assert "rabbitmq-3.10 not ready" in message, message
    assert "log tail:" in message and "\n" not in message
    assert cli_main(["brokers", "up", "rabbitmq-3.10"]) == EXIT_BROKER_START_FAILED
    assert not any(r.owner_pid == os.getpid() for r in NodeRecord.load_all()), "a failed start leaves no node"
    kept = [p for p in logs_dir().glob("rabbitmq-3.10-*-failed-start.log") if p.stat().st_mtime >= started]
    assert kept, "the failed node's log is kept"


def test_brokers_up_status_down_and_stale_cleanup(capsys):
    """`down` is scoped to this test's nodes by name: another worker's node (test_node_cleanup runs beside this
    one under xdist) is never stopped here."""
    assert cli_main(["brokers", "provision", "--tested"]) == 0
    assert capsys.readouterr().out.count("already provisioned") == len(brokers.TESTED)
    assert cli_main(["brokers", "list"]) == 0
    assert "qpid-proton-c" in capsys.readouterr().out
    before = {r.name for r in NodeRecord.load_all()}
    assert cli_main(["brokers", "up", "qpid-proton-c"]) == 0
    out = capsys.readouterr().out
    assert "qpid-proton-c: amqp://127.0.0.1:" in out
    mine = [r for r in NodeRecord.load_all() if r.name not in before and r.kind == "qpid-proton-c"]
    assert len(mine) == 1 and mine[0].owner_pid == 0 and pid_alive(mine[0].pid)
    assert f"brokers down {mine[0].name}`" in out
    assert cli_main(["brokers", "status"]) == 0
    assert "owner: brokers up" in capsys.readouterr().out
    # a node whose owning run died (e.g. kill -9) is stale: `down` stops it too; one a live run owns, never
    stale = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], start_new_session=True)
    owned = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], start_new_session=True)
    try:
        for name, pid, owner in (("stale-test", stale.pid, 2 ** 22 + 17), ("owned-test", owned.pid, os.getpid())):
            NodeRecord(name=name, kind="qpid-proton-c", url="amqp://127.0.0.1:1", pid=pid,
                       workdir="/nonexistent-amqp-conformance", started_at=time.time(), owner_pid=owner).save()
        assert cli_main(["brokers", "down", mine[0].name, "stale-test", "owned-test"]) == 0
        assert "stopped 2 node(s); 1 owned by running test runs left alone" in capsys.readouterr().out
        stale.wait(timeout=10)
        left = {r.name for r in NodeRecord.load_all()}
        assert mine[0].name not in left and "stale-test" not in left and "owned-test" in left
        assert not pid_alive(mine[0].pid) and owned.poll() is None
    finally:
        owned.kill()
        for r in NodeRecord.load_all():
            if r.name in ("stale-test", "owned-test"):
                r.path.unlink(missing_ok=True)


def test_a_terminated_run_stops_its_nodes():
    script = ("import sys, time\nfrom conformance import brokers\n"
              "brokers.install_cleanup()\n"           # what every entry point that starts nodes does
              "h = brokers.start(brokers.resolve('qpid-proton-c'))\n"
              "print(h.managed.node.pid, h.managed.node.name, flush=True)\n"
              "time.sleep(120)\n")
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                            text=True, cwd=str(REPO), env=dict(os.environ, PYTHONPATH=str(REPO)))
    pid, name = proc.stdout.readline().split()
    assert pid_alive(int(pid))
    proc.send_signal(signal.SIGTERM)
    proc.wait(timeout=30)
    deadline = time.monotonic() + 10
    while pid_alive(int(pid)) and time.monotonic() < deadline:
        time.sleep(0.1)  # bounded-wait-ok: the broker process is being reaped
    assert not pid_alive(int(pid)), "the broker died with its run"
    assert not any(r.name == name for r in NodeRecord.load_all())


def _pytest_n2(tmp_path, *args):
    cmd = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "-n", "2", "--rootdir", str(REPO), *args]
    for name in brokers.TESTED:
        cmd += ["--broker", name]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=600, cwd=str(REPO),
                          env=dict(os.environ, PYTHONPATH=str(REPO)))


def test_minimal_case_with_proton_blocking_receiver_against_the_tested_managed_brokers_n2(tmp_path):
    t0 = time.monotonic()
    proc = _pytest_n2(tmp_path, str(REPO / "tests/brokers/minimal_case_proton.py"))
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    assert f"{len(brokers.TESTED)} passed" in proc.stdout
    figure(what=f"minimal case (proton receiver), {len(brokers.TESTED)} brokers, -n 2",
           seconds=round(time.monotonic() - t0, 1))


def test_minimal_case_with_our_peer_against_the_tested_managed_brokers_n2(tmp_path):
    run_dir = tmp_path / "run"
    proc = _pytest_n2(tmp_path, "--pyargs", "conformance.suite", "--case", "2.6.8/1", "--run-dir", str(run_dir))
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    records = [json.loads(line) for line in (run_dir / "results.jsonl").read_text().splitlines()]
    assert sorted(r["broker"] for r in records) == sorted(brokers.TESTED)
    assert {r["verdict"] for r in records} == {"pass"}
    assert all(r.get("broker_product") and r.get("broker_version") for r in records), records


def test_alarm_and_queue_limit_cases_run_on_a_second_node_started_beside_the_first(tmp_path):
    """rabbitmq-4.0 with an own-node case: two nodes (run.json names both), the case on the second, the
    ordinary case on the first, both nodes stopped afterwards."""
    from conformance.run.engine import Plan, execute
    from conformance.options import RunOptions
    from conformance.run.selection import select_cases
    plan = Plan(select_cases(["2.6.7/14", "2.6.7/9"]), [brokers.resolve("rabbitmq-4.0")],
                RunOptions(workers=2, reports_dir=str(tmp_path)))
    outcome = execute(plan)
    meta = json.loads((outcome.run.path / "run.json").read_text())["brokers"]["rabbitmq-4.0"]
    assert meta["own_node"]["url"] and meta["start_s"] > 0, meta
    by_case = {r["case_id"]: r for r in outcome.records}
    assert by_case["2.6.7/14"]["observations"].get("node") == "own node"
    assert "node" not in by_case["2.6.7/9"]["observations"]
    assert by_case["2.6.7/14"]["verdict"] == "pass" and by_case["2.6.7/9"]["verdict"] == "pass"
    ports = {int(meta["own_node"]["url"].rsplit(":", 1)[1])}
    assert not any(r.kind == "rabbitmq-4.0" and int(r.url.rsplit(":", 1)[1]) in ports for r in NodeRecord.load_all())
