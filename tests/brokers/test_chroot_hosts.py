"""The debootstrap root of a chrooted RabbitMQ node names this machine's host (no DNS lookup from inside it:
an unlisted hostname made rabbitmq-4.0 answer an AMQP open only after the resolver's 5 s timeout)."""

from __future__ import annotations

import socket

from conformance.brokers.rabbitmq import RabbitMQ40


class _Root(RabbitMQ40):
    def __init__(self, root):
        self._test_root = root

    @property
    def root(self):
        return self._test_root


def test_the_hostname_is_added_once(tmp_path):
    (tmp_path / "etc").mkdir()
    hosts = tmp_path / "etc" / "hosts"
    hosts.write_text("127.0.0.1\tlocalhost\n")
    node = _Root(tmp_path)
    node._name_this_host()
    node._name_this_host()
    lines = hosts.read_text().splitlines()
    assert lines[0] == "127.0.0.1\tlocalhost"
    assert lines.count(f"127.0.0.1\t{socket.gethostname()}") == 1


def test_a_root_without_hosts_gets_localhost_and_the_hostname(tmp_path):
    (tmp_path / "etc").mkdir()
    _Root(tmp_path)._name_this_host()
    text = (tmp_path / "etc" / "hosts").read_text()
    assert "127.0.0.1\tlocalhost" in text and f"127.0.0.1\t{socket.gethostname()}" in text
