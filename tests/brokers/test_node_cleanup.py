"""`brokers up` then `brokers down` leaves no process of ours behind, and the node file keeps no password.

A RabbitMQ node starts its own `epmd -daemon` on the node's own epmd port (ERL_EPMD_PORT); `down` (from the
node file, in another process than `up`) and the run's own stop must end that one too -- and never an epmd
that is not ours (the system's on 4369, another node's)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from conformance import brokers
from conformance.brokers.cli import stop_record
from conformance.brokers.managed import _RUNNING, NodeRecord, pid_alive

pytestmark = pytest.mark.broker


def epmds_on(port: int) -> list[int]:
    """Pids of epmd processes running with ERL_EPMD_PORT=port (or -port port)."""
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            if proc.joinpath("comm").read_text().strip() != "epmd":
                continue
            env = proc.joinpath("environ").read_bytes().split(b"\0")
            argv = proc.joinpath("cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if f"ERL_EPMD_PORT={port}".encode() in env or str(port).encode() in argv:
            found.append(int(proc.name))
    return found


def up(name: str) -> NodeRecord:
    """What `brokers up NAME` does: start, then leave the node to a later `down`."""
    handle = brokers.start(brokers.resolve(name))
    node = handle.managed.node
    _RUNNING.remove(handle.managed)
    node.owner_pid = 0
    node.save()
    return node


def test_up_then_down_leaves_no_epmd_and_the_node_file_keeps_no_password():
    node = up("rabbitmq-4.0")
    port = node.extra["epmd_port"]
    try:
        text = node.path.read_text()
        assert "guest:guest" not in text and ":guest@" not in text
        assert epmds_on(port), "the node starts its own epmd on its own port"
        record = next(r for r in NodeRecord.load_all() if r.name == node.name)
    finally:
        stop_record(next(r for r in NodeRecord.load_all() if r.name == node.name))
    assert not pid_alive(node.pid)
    left = [pid for pid in epmds_on(port) if pid_alive(pid)]
    assert left == [], f"epmd of the node still running: {left}"
    assert not node.path.exists() and record.url.startswith("amqp://guest@127.0.0.1:")


def test_a_runs_own_stop_leaves_no_epmd():
    handle = brokers.start(brokers.resolve("rabbitmq-4.0"))
    port = handle.managed.node.extra["epmd_port"]
    assert epmds_on(port)
    handle.managed.stop()
    assert [pid for pid in epmds_on(port) if pid_alive(pid)] == []


def test_the_node_file_is_readable_by_its_owner_only():
    node = up("qpid-proton-c")
    try:
        assert os.stat(node.path).st_mode & 0o077 == 0
    finally:
        stop_record(node)
