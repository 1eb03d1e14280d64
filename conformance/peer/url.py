"""Broker URLs: `amqp://[user[:password]@]host[:port][/vhost]` and `amqps://...`.

This module owns parsing and redaction. A broker's URL is parsed ONCE, where it enters the suite
(`conformance.brokers.resolve` for `--broker`, the node's own URL when a managed node starts); from then on the
suite carries the `BrokerAddress` (a handle's `address`, its fields in the description a pytest-xdist worker
rebuilds it from: `fields()` / `BrokerAddress(**fields)`), and the peer connects from it. A password never
leaves this module unredacted except through `BrokerAddress.password`, which only the SASL layer reads, and
`url()`, the string form for tools that take a URL (a client library), never printed.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace
from urllib.parse import quote, unquote, urlsplit

from ..errors import UsageError

DEFAULT_PORTS = {"amqp": 5672, "amqps": 5671}


@dataclass(frozen=True)
class BrokerAddress:
    scheme: str
    host: str
    port: int
    user: str | None = None
    password: str | None = field(default=None, repr=False)
    vhost: str | None = None

    @property
    def tls(self) -> bool:
        return self.scheme == "amqps"

    def redacted(self) -> str:
        auth = ""
        if self.user is not None:
            auth = self.user + (":***" if self.password is not None else "") + "@"
        host = f"[{self.host}]" if ":" in self.host else self.host
        path = f"/{self.vhost}" if self.vhost else ""
        return f"{self.scheme}://{auth}{host}:{self.port}{path}"

    def __str__(self) -> str:
        return self.redacted()

    def url(self) -> str:
        """The URL with its credentials, for a tool that takes a string (carries the password: never print)."""
        auth = ""
        if self.user is not None:
            auth = quote(self.user, safe="") + (":" + quote(self.password, safe="") if self.password is not None
                                                else "") + "@"
        host = f"[{self.host}]" if ":" in self.host else self.host
        path = "/" + quote(self.vhost, safe="") if self.vhost else ""
        return f"{self.scheme}://{auth}{host}:{self.port}{path}"

    def fields(self) -> dict:
        """The address as plain values (the password among them); `BrokerAddress(**fields)` rebuilds it
        without parsing anything."""
        return asdict(self)

    def with_credentials(self, user: str | None, password: str | None) -> "BrokerAddress":
        return replace(self, user=user, password=password)

    def at(self, host: str, port: int) -> "BrokerAddress":
        """The same address (credentials, vhost) at another host and port (a proxy in front of the broker)."""
        return replace(self, host=host, port=port)


def parse_url(url: str) -> BrokerAddress:
    """Parse a broker URL; a malformed one raises UsageError naming the problem and the expected form."""
    form = "expected amqp://[user:password@]host[:port] or amqps://..."
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        raise UsageError(f"bad broker URL {_redact_raw(url)!r} ({exc}); {form}") from None
    if parts.scheme not in DEFAULT_PORTS:
        raise UsageError(f"bad broker URL {_redact_raw(url)!r}: scheme must be amqp or amqps; {form}")
    if not parts.hostname:
        raise UsageError(f"bad broker URL {_redact_raw(url)!r}: no host; {form}")
    vhost = unquote(parts.path.lstrip("/")) or None
    return BrokerAddress(parts.scheme, parts.hostname, port or DEFAULT_PORTS[parts.scheme],
                         unquote(parts.username) if parts.username is not None else None,
                         unquote(parts.password) if parts.password is not None else None, vhost)


def _redact_raw(url: str) -> str:
    """Hide a password in a URL that may not even parse."""
    if "@" in url and "://" in url:
        scheme, rest = url.split("://", 1)
        auth, _, tail = rest.rpartition("@")
        user = auth.split(":", 1)[0]
        return f"{scheme}://{user}:***@{tail}" if ":" in auth else url
    return url
