"""The one broker interface: what the cases, the runner and the run pipeline may ask of any broker.

`Broker` is a `typing.Protocol`. Every kind of broker the suite runs against implements it: managed nodes
and brokers by URL (`conformance.brokers.handle.BrokerHandle`), a broker seen through the fault-injecting proxy
(`conformance.faultproxy.handle.ProxiedBroker`) and the reference broker of the suite's own tests
(`conformance.reference.handle.ReferenceBrokerHandle`). Code that takes a broker uses these names directly
and never probes for them (`hasattr`/`getattr`): a broker without a hook answers `has_hook(name) == False`
and raises `HookUnsupported` from `set_alarm` (which the runner maps to `unsupported`); a broker that cannot
tell its queue depth answers `queue_depth(q) is None` (`quick=True`: nor cheaply); one that cannot be watched is always `alive()` with
an empty `log_tail()`.

`WrappedBroker` adds what a run target's wrapper offers on top (`annotate(result)`, `close()`).
`tests/brokers/test_interface.py` checks every implementation against it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol, runtime_checkable

if TYPE_CHECKING:                       # pragma: no cover - names for the annotations only
    from ..peer import BrokerAddress, TLSOptions


@runtime_checkable
class Broker(Protocol):
    """A broker under test, as the cases, the runner and the pipeline see it."""

    # -- identity ---------------------------------------------------------------------------------------
    name: str                            # the label in records, test ids and the verdict table
    product: str | None                  # what the broker's open said (or its profile), None when unknown
    version: str | None

    @property
    def lock_key(self) -> str:
        """One key per broker process: exclusive (broker-wide) cases lock it so nothing runs beside them."""

    # -- connecting -------------------------------------------------------------------------------------
    @property
    def address(self) -> "BrokerAddress":
        """Where the cases connect: the parsed address (host, port, credentials, vhost; never print it with
        its password). Every connection starts from this object; no URL string is parsed on the way."""

    @property
    def url(self) -> str:
        """`address` as an amqp[s]:// URL, for a tool that takes a string (carries credentials: never print)."""

    @property
    def redacted_url(self) -> str:
        """The printable form of `url` (no password)."""

    @property
    def tls(self) -> "TLSOptions | None":
        """TLS options for the cases' connections; None for plain amqp://."""

    @property
    def sasl_mechanism(self) -> str | None:
        """The SASL mechanism the peer offers ("PLAIN", "ANONYMOUS"), "auto" or None (no SASL layer)."""

    # -- addressing and queues --------------------------------------------------------------------------
    def unique_queue(self, prefix: str = "q") -> str:
        """A queue name no other case uses."""

    def queue_address(self, queue: str, role: str) -> str:
        """The address a link's source (role "source") or target ("target") names for `queue`."""

    def create_queue(self, queue: str, **limits) -> None:
        """Make sure `queue` exists; limits (max_length=N) need the matching hook (HookUnsupported)."""

    def delete_queue(self, queue: str) -> None:
        """Remove the queue (a no-op where the broker is thrown away anyway)."""

    def preload(self, queue: str, n, body: bytes | None = None) -> list[bytes]:
        """Put messages on the queue (a count or a list of bodies) before the case; returns the bodies."""

    def queue_depth(self, queue: str, *, quick: bool = False) -> int | None:
        """Messages in the queue, or None when this broker cannot tell (`quick`: nor without starting a
        command-line tool, whose start costs more than a short wait it would save)."""

    # -- hooks (broker-wide actions a profile may offer) ------------------------------------------------
    def has_hook(self, name: str) -> bool:
        """The broker can run hook `name` (memory_alarm, disk_alarm, queue_length_limit, ...)."""

    def set_alarm(self, kind: str, on: bool) -> None:
        """Raise or clear the `kind` ("memory" / "disk") resource alarm; HookUnsupported without the hook."""

    # -- health -----------------------------------------------------------------------------------------
    def alive(self) -> bool:
        """The broker process still runs (True when this broker cannot be watched)."""

    def log_tail(self, lines: int = 40) -> str:
        """The last lines of the broker's log ("" when there is none to read)."""

    @property
    def pid(self) -> int | None:
        """The broker's process id where the suite knows it (managed nodes), else None."""


@runtime_checkable
class WrappedBroker(Broker, Protocol):
    """A broker seen through a wrapper a run target names (`conformance.run.targets.Target.wrap`, e.g. the
    selfcheck's fault-injecting proxy): it adds what it saw to each case result and is closed when the process is done."""

    def annotate(self, result) -> None:
        """Add what the wrapper saw during the case to its `CaseResult` (e.g. a proxy error)."""

    def close(self) -> None:
        """Stop what the wrapper runs (the proxy); the broker behind it is left alone."""


def is_broker(candidate: object) -> bool:
    """`candidate` has every member of `Broker` (attributes and methods; signatures are not checked)."""
    return isinstance(candidate, Broker)
