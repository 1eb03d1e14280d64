"""A broker handle whose AMQP connections go through a mutant proxy; everything else goes to the broker.

This module owns the routing: cases open their connections with `handle.url`, which here points at the
proxy (same credentials, loopback host and the proxy's port), while queue set-up, preloading, depth checks
and profile hooks keep using the real broker directly, so a fault only ever touches the case's own frames.
The lock key stays the broker's, so exclusive (alarm) cases still run alone on that broker.
"""

from __future__ import annotations

from urllib.parse import urlsplit, urlunsplit

from ..errors import UsageError
from .proxy import MutantProxy


def url_via(url: str, port: int, host: str = "127.0.0.1") -> str:
    """`url` with its host and port replaced (user, password, vhost kept)."""
    parts = urlsplit(url)
    userinfo, _, _ = parts.netloc.rpartition("@")
    netloc = (userinfo + "@" if userinfo else "") + f"{host}:{port}"
    return urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))


class ProxiedBroker:
    """Wraps a broker handle (managed, URL or reference broker) and a running MutantProxy in front of it."""

    def __init__(self, broker, fault: str | None = None):
        if getattr(broker, "tls", None) is not None or str(broker.url).startswith("amqps:"):
            raise UsageError("the mutant proxy decodes frames and cannot sit inside TLS; use a broker "
                             "reachable over plain amqp://")
        self._broker = broker
        host, port = _host_port(broker.url)
        self.proxy = MutantProxy(host, port, fault).start()
        self.fault = fault or "none"
        self.url = url_via(broker.url, self.proxy.port)

    def __getattr__(self, name):
        return getattr(self._broker, name)

    @property
    def redacted_url(self) -> str:
        return f"amqp://127.0.0.1:{self.proxy.port} (proxy, fault {self.fault})"

    @property
    def lock_key(self) -> str:
        return getattr(self._broker, "lock_key", getattr(self._broker, "name", "broker"))

    def stop_proxy(self) -> None:
        self.proxy.stop()


def _host_port(url: str) -> tuple[str, int]:
    from ..peer import parse_url
    address = parse_url(url)
    return address.host, address.port
