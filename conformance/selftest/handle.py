"""The reference broker as a broker handle: the same interface the cases use for real brokers."""

from __future__ import annotations

import itertools

from .engine import BrokerConfig, Faults
from .server import ReferenceBroker

_ids = itertools.count(1)


class ReferenceBrokerHandle:
    """Starts a ReferenceBroker (optionally with faults) and offers every profile hook in-process."""

    HOOKS = ("memory_alarm", "disk_alarm", "queue_length_limit")

    def __init__(self, faults: Faults | None = None, config: BrokerConfig | None = None, name: str | None = None):
        self.faults = faults or Faults()
        self.server = ReferenceBroker(config, self.faults).start()
        self.name = name or "reference"
        self.product = "amqp-conformance-reference-broker"
        self.version = "1.0"
        self.sasl_mechanism = "auto"
        self.tls = None

    @property
    def url(self) -> str:
        return self.server.url

    redacted_url = url

    @property
    def lock_key(self) -> str:
        return f"reference-{self.server.port}"

    def unique_queue(self, prefix: str) -> str:
        return f"{prefix}-{next(_ids)}"

    def queue_address(self, name: str, role: str) -> str:
        return name

    def create_queue(self, name: str, max_length: int | None = None) -> None:
        self.server.set_queue_limit(name, max_length)

    def delete_queue(self, name: str) -> None:
        with self.server._lock:
            self.server.state.queues.pop(name, None)

    def preload(self, queue: str, bodies) -> None:
        self.server.preload(queue, list(bodies))

    def queue_depth(self, queue: str) -> int:
        return self.server.queue_depth(queue)

    def has_hook(self, name: str) -> bool:
        return name in self.HOOKS

    def set_alarm(self, kind: str, on: bool) -> None:
        self.server.set_alarm(on)

    def alive(self) -> bool:
        return True

    def log_tail(self, lines: int = 40) -> str:
        return ""

    def stop(self) -> None:
        self.server.stop()
