"""Brokers under test: managed throwaway nodes (provisioned and started by the suite) and brokers by URL.

`resolve(spec, profile)` turns a `--broker` value into a BrokerSpec; `start(spec)` gives a BrokerHandle the
cases use. Managed kinds: rabbitmq-4.0, rabbitmq-3.10, qpid-proton-c (the default: it builds in a second
and starts in a fraction of one, so a new user gets real verdicts fastest).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import UsageError
from .handle import BrokerHandle, HookFailed
from .managed import ManagedBroker, NodeRecord, stop_all
from .profiles import Profile, available_profiles, load_profile
from .proton_c import ProtonCBroker
from .rabbitmq import RabbitMQ40, RabbitMQ310

MANAGED: dict[str, type[ManagedBroker]] = {
    "rabbitmq-4.0": RabbitMQ40,
    "rabbitmq-3.10": RabbitMQ310,
    "qpid-proton-c": ProtonCBroker,
}
DEFAULT_BROKER = "qpid-proton-c"


@dataclass(frozen=True)
class BrokerSpec:
    name: str               # managed kind, or a label for a URL
    url: str | None         # None for managed brokers until started
    profile: str


def resolve(value: str, profile: str | None = None) -> BrokerSpec:
    if value in MANAGED:
        return BrokerSpec(value, None, profile or MANAGED[value].profile_name)
    if "://" in value:
        from ..peer import parse_url
        address = parse_url(value)          # UsageError for a malformed URL
        return BrokerSpec(f"{address.host}:{address.port}", value, profile or "generic")
    raise UsageError(f"unknown broker {value!r}; use one of {', '.join(MANAGED)} or an amqp[s]:// URL")


def start(spec: BrokerSpec) -> BrokerHandle:
    """A handle for the broker: starts a managed node (provisioning it first if needed)."""
    profile = load_profile(spec.profile)
    if spec.url is not None:
        return BrokerHandle(spec.name, spec.url, profile)
    managed = MANAGED[spec.name]()
    node = managed.start()
    return BrokerHandle(spec.name, node.url, profile, tools=managed.tools, env=managed.env or None,
                        version=node.extra.get("version"), managed=managed)


def attach(spec: BrokerSpec, record: dict) -> BrokerHandle:
    """A handle for a managed node another process started (pytest-xdist workers)."""
    profile = load_profile(spec.profile)
    return BrokerHandle(spec.name, record["url"], profile, tools=record.get("tools"), env=record.get("env"),
                        version=record.get("version"))


__all__ = ["MANAGED", "DEFAULT_BROKER", "BrokerSpec", "BrokerHandle", "HookFailed", "resolve", "start", "attach",
           "stop_all", "available_profiles", "load_profile", "Profile", "NodeRecord"]
