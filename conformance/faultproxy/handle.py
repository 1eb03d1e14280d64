"""A broker handle whose AMQP connections go through a fault-injecting proxy; everything else goes to the broker.

This module owns the routing: cases open their connections from `handle.address`, which here points at the
proxy (the broker's address with its credentials, on the loopback host and the proxy's port: no URL is parsed), while queue set-up, preloading, depth checks
and profile hooks keep using the real broker directly, so a fault only ever touches the case's own frames.
The lock key stays the broker's, so exclusive (alarm) cases still run alone on that broker.
"""

from __future__ import annotations

from ..brokers.interface import Broker
from ..errors import UsageError
from .proxy import MutantProxy


class ProxiedBroker:
    """Wraps a broker (a `conformance.brokers.Broker`: managed, URL or reference broker) and a running
    MutantProxy in front of it; itself a `Broker`. Only `address`, `url` and `redacted_url` differ from the
    broker's."""

    def __init__(self, broker: Broker, fault: str | None = None, *, transport=None):
        if broker.tls is not None or broker.address.tls:
            raise UsageError("the fault-injecting proxy decodes frames and cannot sit inside TLS; use a broker "
                             "reachable over plain amqp://")
        self._broker = broker
        self.proxy = MutantProxy(broker.address.host, broker.address.port, fault, transport=transport).start()
        self.fault = fault or "none"
        self.name = broker.name
        self.address = broker.address.at("127.0.0.1", self.proxy.port)

    @property
    def url(self) -> str:
        return self.address.url()

    # -- identity and connecting: the broker's, except where the connections go --------------------------

    @property
    def redacted_url(self) -> str:
        return f"amqp://127.0.0.1:{self.proxy.port} (proxy, fault {self.fault})"

    @property
    def product(self) -> str | None:
        return self._broker.product

    @property
    def version(self) -> str | None:
        return self._broker.version

    @property
    def lock_key(self) -> str:
        return self._broker.lock_key

    @property
    def tls(self):
        return None

    @property
    def sasl_mechanism(self) -> str | None:
        return self._broker.sasl_mechanism

    # -- queues, hooks and health: straight to the broker ------------------------------------------------

    def unique_queue(self, prefix: str = "q") -> str:
        return self._broker.unique_queue(prefix)

    def queue_address(self, queue: str, role: str) -> str:
        return self._broker.queue_address(queue, role)

    def create_queue(self, queue: str, **limits) -> None:
        self._broker.create_queue(queue, **limits)

    def delete_queue(self, queue: str) -> None:
        self._broker.delete_queue(queue)

    def preload(self, queue: str, n, body: bytes | None = None) -> list[bytes]:
        return self._broker.preload(queue, n, body)

    def queue_depth(self, queue: str, *, quick: bool = False) -> int | None:
        return self._broker.queue_depth(queue, quick=quick)

    def has_hook(self, name: str) -> bool:
        return self._broker.has_hook(name)

    def set_alarm(self, kind: str, on: bool) -> None:
        self._broker.set_alarm(kind, on)

    def alive(self) -> bool:
        return self._broker.alive()

    def log_tail(self, lines: int = 40) -> str:
        return self._broker.log_tail(lines)

    @property
    def pid(self) -> int | None:
        return self._broker.pid

    def stop_proxy(self) -> None:
        self.proxy.stop()
