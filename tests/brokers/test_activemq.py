"""ActiveMQ Classic (issue #38): the tested release provisioned from Maven and started (the cache layout that
commit-level builds reuse, idempotence, one line when Maven refuses), the `activemq` profile's hooks against a
managed node (each one read back through the same Jolokia endpoint), and a broker a user starts himself, given
by URL with a copy of the `activemq` profile, judged exactly as the managed node is.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
from pathlib import Path

import pytest

from conformance import brokers
from conformance.brokers import activemq
from conformance.brokers.handle import HttpReply, http_action
from conformance.brokers.jvm import amqp_open
from conformance.brokers.managed import free_port
from conformance.brokers.profiles import HttpCall
from conformance.cli import main
from conformance.errors import EXIT_PROVISION_FAILED, ProvisionFailed

pytestmark = pytest.mark.broker
RELEASE = "activemq-6.3.1"
REPO = Path(__file__).resolve().parents[2]


def test_the_tested_release_is_provisioned_once_in_the_documented_layout():
    cls = brokers.MANAGED[RELEASE]
    assert RELEASE in brokers.TESTED and brokers.series("activemq")[-1] == RELEASE
    cls().ensure_provisioned()
    home = activemq.home_of(cls.version)
    jars = (home / "jars.txt").read_text().split()
    assert sorted(p.name for p in (home / "lib").glob("*.jar")) == jars
    for module in (*activemq.MODULES, "activemq-client"):
        assert f"{module}-{cls.version}.jar" in jars, module
    api = next(j for j in jars if j.startswith("slf4j-api-"))
    assert f"slf4j-simple-{api[len('slf4j-api-'):]}" in jars, "the binding matches the release's slf4j-api"
    assert (home / "launcher" / "ActiveMQNode.class").exists() and activemq.jolokia_agent().exists()
    assert cls().ensure_provisioned() == 0.0, "provisioning is idempotent"
    # the classpath commit-level builds reuse: the release's launcher, then lib/ jars in name order
    parts = activemq.classpath(home).split(os.pathsep)
    assert parts[0] == str(home / "launcher") and [Path(p).name for p in parts[1:]] == jars


def test_a_build_directory_replaces_the_jars_of_the_release(tmp_path):
    home = activemq.home_of(brokers.MANAGED[RELEASE].version)
    build = tmp_path / "build"
    (build / "lib").mkdir(parents=True)
    (build / "lib" / "0-activemq-broker-build.jar").write_bytes(b"")
    parts = activemq.classpath(home, build).split(os.pathsep)
    assert parts == [str(home / "launcher"), str(build / "lib" / "0-activemq-broker-build.jar")]
    built = activemq.activemq_class("6.3.1", kind="activemq-6.3.1-3-gabc", run_home=build)
    assert built.kind == "activemq-6.3.1-3-gabc" and built().home == home and built.run_home == build


def test_a_release_maven_does_not_serve_is_one_line_and_exit_8(tmp_path, monkeypatch, capsys):
    """activemq-amqp 5.15.16 is not on Maven Central: one line naming what is missing, nothing left behind."""
    home = tmp_path / "5.15.16"
    with pytest.raises(ProvisionFailed) as info:
        activemq.provision_release("5.15.16", home, "provisioning activemq-5.15.16")
    message = info.value.message
    assert "\n" not in message and "5.15.16" in message and "Maven" in message, message
    assert not (home / "jars.txt").exists() and not (home / "lib").exists()
    unserved = activemq.activemq_class("5.15.16")
    monkeypatch.setitem(brokers.MANAGED, "activemq-5.15.16", unserved)
    monkeypatch.setattr(unserved, "home", property(lambda self: home))
    assert main(["brokers", "provision", "activemq-5.15.16"]) == EXIT_PROVISION_FAILED == 8
    err = capsys.readouterr().err
    said = [line for line in err.splitlines() if not line.startswith("[amqp-conformance] ")]   # progress aside
    assert len(said) == 1 and said[0].startswith("error: provisioning activemq-5.15.16: Maven cannot get artifact "
                                                 "org.apache.activemq:activemq-amqp:jar:5.15.16"), err
    assert "Traceback" not in err and "://" not in err, "no stack, no repository host"


def _jolokia(handle, body) -> object:
    reply = http_action(handle.tools["http"], HttpCall("POST", "/", body, (200,)), "read back", {})
    assert isinstance(reply, HttpReply)
    return reply.body["value"]


def test_the_profile_hooks_write_the_limits_they_document():
    handle = brokers.start(brokers.resolve(RELEASE))
    try:
        broker = f"org.apache.activemq:type=Broker,brokerName={activemq.BROKER_NAME}"
        read = lambda mbean, attribute: _jolokia(handle, {"type": "read", "mbean": mbean,  # noqa: E731
                                                          "attribute": attribute})
        assert handle.has_hook("queue_size_limit") and not handle.has_hook("queue_length_limit")
        assert handle.has_hook("memory_alarm") and handle.has_hook("disk_alarm")
        queue = handle.unique_queue("limited")
        handle.create_queue(queue, max_length_bytes=10240)
        mbean = f"{broker},destinationType=Queue,destinationName={queue}"
        assert read(mbean, "MemoryLimit") == 10240 and read(mbean, "ProducerFlowControl") is True
        assert handle.queue_address(queue, "target") == queue
        handle.preload(queue, 4)
        assert handle.queue_depth(queue) == 4
        handle.purge_queue(queue)
        assert handle.queue_depth(queue) == 0
        handle.delete_queue(queue)
        assert handle.queue_depth(queue) == 0, "a queue without an MBean counts as empty"
        for kind, attribute, raised, cleared in (("memory", "MemoryLimit", 1, activemq.MEMORY_LIMIT),
                                                 ("disk", "StoreLimit", 1, activemq.STORE_LIMIT)):
            handle.set_alarm(kind, True)
            assert read(broker, attribute) == raised, kind
            handle.set_alarm(kind, False)
            assert read(broker, attribute) == cleared, kind
    finally:
        handle.managed.stop()


@contextlib.contextmanager
def users_broker(workdir: Path, password: str):
    """ActiveMQ 6.3.1 as its user runs it, started here (not by the suite): the release's jars, brokerName
    "localhost" (ActiveMQ's default), Jolokia at /api/jolokia as the web console serves it; yields the AMQP
    URL (no credentials: the profile names the user and the password's variable) and the Jolokia URL."""
    home = activemq.home_of(brokers.MANAGED[RELEASE].version)
    if not brokers.MANAGED[RELEASE]().provisioned():
        pytest.skip(f"{RELEASE} is not provisioned (amqp-conformance brokers provision --tested)")
    port, http_port = free_port(), free_port()
    config = workdir / "jolokia.properties"
    config.write_text(f"host=127.0.0.1\nport={http_port}\nuser=admin\npassword={password}\n"
                      "discoveryEnabled=false\nagentContext=/api/jolokia\n")
    argv = activemq.launcher_argv(home, port=port, data=workdir / "data", jolokia_config=config)
    argv[argv.index(f"name={activemq.BROKER_NAME}")] = "name=localhost"
    with open(workdir / "activemq.log", "wb") as log:
        process = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, cwd=workdir,
                                   env={**os.environ, "AMQP_CONFORMANCE_ACTIVEMQ_PASSWORD": password})
    try:
        url = f"amqp://admin:{password}@127.0.0.1:{port}"
        for _ in range(300):
            if process.poll() is not None or amqp_open(url, "PLAIN") is not None:
                break
            subprocess.run(["sleep", "0.2"])  # bounded-wait-ok: the user's broker is starting (300 tries)
        assert process.poll() is None, (workdir / "activemq.log").read_text()[-2000:]
        yield f"amqp://127.0.0.1:{port}", f"http://admin@127.0.0.1:{http_port}/api/jolokia"
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)


def _verdicts(tmp_path, name, argv, capsys) -> dict[str, str]:
    main(["run", *argv, "--reports-dir", str(tmp_path / name), "--json"])
    records = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.startswith("{")]
    return {r["case_id"]: r["verdict"] for r in records}


@pytest.mark.slow
def test_a_broker_started_by_its_user_given_by_url_gets_the_managed_verdicts(tmp_path, monkeypatch, capsys):
    password = "s3cret-by-url"
    monkeypatch.setenv("ACTIVEMQ_PASSWORD", password)
    workdir = tmp_path / "node"
    workdir.mkdir()
    with users_broker(workdir, password) as (url, jolokia):
        profile = tmp_path / "mine.toml"
        shipped = (REPO / "fixtures" / "profiles" / "activemq.toml").read_text()
        profile.write_text(shipped + f'\n[commands]\nhttp = ["{jolokia}", "broker=localhost", '
                                     '"password_env=ACTIVEMQ_PASSWORD"]\n')
        profile.write_text(profile.read_text().replace('mechanism = "PLAIN"',
                                                       'mechanism = "PLAIN"\nuser = "admin"\npassword_env = "ACTIVEMQ_PASSWORD"'))
        by_url = _verdicts(tmp_path, "by-url", ["--broker", url, "--profile", str(profile)], capsys)
    managed = _verdicts(tmp_path, "managed", ["--broker", RELEASE], capsys)
    assert len(managed) >= 30 and by_url == managed, {c: (by_url.get(c), v) for c, v in managed.items()
                                                      if by_url.get(c) != v}
    assert managed["2.6.7/14"] != "unsupported" and managed["2.5.6/4"] != "unsupported"
    run_dir = next((tmp_path / "by-url" / "runs").iterdir())
    assert password not in "".join(p.read_text() for p in run_dir.rglob("*") if p.is_file())
