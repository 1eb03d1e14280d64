"""The reference broker as a broker handle: it implements `conformance.brokers.Broker`, the interface the cases
use for real brokers, with every hook in-process."""

from __future__ import annotations

import itertools

from ..brokers.broker_errors import HookUnsupported
from .broker import BrokerConfig, Faults
from .listener import ReferenceBroker

_ids = itertools.count(1)


class ReferenceBrokerHandle:
    """Starts a ReferenceBroker (optionally with faults) and offers every profile hook in-process."""

    HOOKS = ("memory_alarm", "disk_alarm", "queue_length_limit")

    def __init__(self, faults: Faults | None = None, config: BrokerConfig | None = None, name: str | None = None,
                 *, create_queues: bool = True):
        """`create_queues` False: the profile creates no queue (`create = "auto"`: attaching would create it)."""
        self.faults = faults or Faults()
        self.create_queues = create_queues
        self.server = ReferenceBroker(config, self.faults).start()
        self.name = name or "reference"
        self.product = "amqp-conformance-reference-broker"
        self.version = "1.0"
        self.sasl_mechanism = "auto"
        self.tls = None

    @property
    def address(self):
        from ..peer import BrokerAddress
        return BrokerAddress("amqp", "127.0.0.1", self.server.port)

    @property
    def url(self) -> str:
        return self.server.url

    redacted_url = url

    @property
    def lock_key(self) -> str:
        return f"reference-{self.server.port}"

    def unique_queue(self, prefix: str = "q") -> str:
        return f"{prefix}-{next(_ids)}"

    def queue_address(self, queue: str, role: str) -> str:
        return queue

    def create_queue(self, queue: str, max_length: int | None = None, **limits) -> None:
        if limits:
            raise TypeError(f"create_queue: the reference broker knows max_length only, not {sorted(limits)}")
        if not self.create_queues:
            return
        self.server.set_queue_limit(queue, max_length)

    def delete_queue(self, queue: str) -> None:
        with self.server._lock:
            self.server.state.queues.pop(queue, None)

    def preload(self, queue: str, n, body: bytes | None = None) -> list[bytes]:
        bodies = list(n) if not isinstance(n, int) else [body if body is not None else f"{queue}#{i}".encode()
                                                          for i in range(n)]
        self.server.preload(queue, bodies)
        return bodies

    def queue_depth(self, queue: str, *, quick: bool = False) -> int:
        return self.server.queue_depth(queue)

    def has_hook(self, name: str) -> bool:
        return name in self.HOOKS

    def set_alarm(self, kind: str, on: bool) -> None:
        if f"{kind}_alarm" not in self.HOOKS:
            raise HookUnsupported(f"{kind}_alarm", "reference")
        self.server.set_alarm(on)

    def alive(self) -> bool:
        return True

    def log_tail(self, lines: int = 40) -> str:
        return ""

    pid = None          # runs in this process: nothing to watch

    def stop(self) -> None:
        self.server.stop()
