"""Brokers under test: managed throwaway nodes (provisioned and started by the suite) and brokers by URL.

`Broker` (module `interface`) is the one interface every broker implements (a typing.Protocol).
`resolve(value, profile)` turns a `--broker` value into a BrokerSpec; `start(spec, timeout=)` gives the
BrokerHandle the cases use; `attach(spec, record)` rebuilds it in another process (pytest-xdist workers). This
package never prints a broker URL with its password (handles have `redacted_url`). Managed kinds: RabbitMQ
4.3, 4.0 and 3.10, Qpid Broker-J per release line, ActiveMQ Artemis and ActiveMQ Classic per release
(`SERIES` lists the release series), and qpid-proton-c (the default: it builds in a second and starts in a
fraction of one, so a new user gets real verdicts fastest).
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass

from ..errors import BrokerUnreachable, ConformanceError, UsageError
from ..options import RunOptions
from .broker_errors import HookFailed, HookUnsupported
from .handle import BrokerHandle, record_broker_identity
from .interface import Broker, WrappedBroker, is_broker
from .managed import ManagedBroker, NodeRecord, install_cleanup, stop_all
from .profiles import Profile, available_profiles, load_profile
from .proton_c import ProtonCBroker
from .rabbitmq import RabbitMQ40, RabbitMQ43, RabbitMQ310
from .activemq import RELEASES as ACTIVEMQ_RELEASES
from .artemis import RELEASES as ARTEMIS_RELEASES
from .qpid_broker_j import QpidBrokerJ80, QpidBrokerJ92, QpidBrokerJ100

MANAGED: dict[str, type[ManagedBroker]] = {
    "rabbitmq-4.3": RabbitMQ43,
    "rabbitmq-4.0": RabbitMQ40,
    "rabbitmq-3.10": RabbitMQ310,
    "qpid-proton-c": ProtonCBroker,
    "qpid-broker-j-10.0": QpidBrokerJ100,
    "qpid-broker-j-9.2": QpidBrokerJ92,
    "qpid-broker-j-8.0": QpidBrokerJ80,
    **ARTEMIS_RELEASES,
    **ACTIVEMQ_RELEASES,
}
DEFAULT_BROKER = "qpid-proton-c"
# release series, oldest first: what `bisect --series` walks and `brokers provision --series` installs
SERIES: dict[str, tuple[str, ...]] = {
    "rabbitmq": ("rabbitmq-3.10", "rabbitmq-4.0", "rabbitmq-4.3"),
    "qpid-broker-j": ("qpid-broker-j-8.0", "qpid-broker-j-9.2", "qpid-broker-j-10.0"),
    "artemis": tuple(ARTEMIS_RELEASES),
    "activemq": tuple(ACTIVEMQ_RELEASES),
}


def register_kind(name: str, cls: type[ManagedBroker]) -> None:
    """A managed kind made while the process runs (a build of a broker's source at a commit,
    conformance.brokers.source): `resolve` and `start` know it from then on, in this process only."""
    MANAGED[name] = cls


def series(name: str) -> list[str]:
    """The managed brokers of a release series, oldest first (UsageError for an unknown series)."""
    if name not in SERIES:
        raise UsageError(f"unknown series {name!r}; use one of {', '.join(SERIES)}")
    return list(SERIES[name])


# what the suite's own tests start (./dev test provisions these and no more)
TESTED = ("qpid-proton-c", "rabbitmq-3.10", "rabbitmq-4.0", "rabbitmq-4.3", "qpid-broker-j-9.2", "artemis-2.40.0",
          "activemq-6.3.1")


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
    close = difflib.get_close_matches(value, list(MANAGED), n=1)
    hint = f"did you mean {close[0]}? " if close else ""
    raise UsageError(f"unknown broker {value!r}; {hint}use one of {', '.join(MANAGED)} or an "
                     "amqp[s]://user:pass@host:port URL")


def start(spec: BrokerSpec, port: int | None = None, *, timeout: float | None = None) -> BrokerHandle:
    """A handle for the broker. Managed: provision if needed, start a throwaway node (on `port`, default a
    free one), and record its product/version. URL: connect once to check it is reachable, speaks AMQP 1.0
    and accepts the credentials, and record what its open says; `timeout` bounds that check (the run's
    --frame-timeout, RunOptions.frame_timeout by default). Errors carry their exit codes: BrokerUnreachable
    (also for a server that never completes the AMQP handshake), AuthenticationFailed."""
    profile = load_profile(spec.profile)
    if spec.url is not None:
        from ..peer import PeerError, parse_url
        bound = RunOptions().frame_timeout if timeout is None else timeout
        handle = BrokerHandle(spec.name, spec.url, profile)
        try:
            handle.identify(timeout=bound)
        except ConformanceError:
            raise
        except PeerError as exc:
            raise BrokerUnreachable(f"{parse_url(spec.url).redacted()} did not complete the AMQP handshake within "
                                    f"{bound:g} s (--frame-timeout): {exc}; check that it is an AMQP 1.0 broker "
                                    "and that it is ready") from None
        return handle
    managed = MANAGED[spec.name]()
    node = managed.start(port)
    return BrokerHandle(spec.name, node.url, profile, tools=managed.tools, env=managed.env or None,
                        product=node.extra.get("product"), version=node.extra.get("version"), managed=managed,
                        node=node_info(node))


def node_info(node: NodeRecord) -> dict:
    """What another process needs to check on a node: its pid and log files."""
    return {"pid": node.pid, "logs": node.extra.get("logs", []), "managed": True}


def attach(spec: BrokerSpec, record: dict) -> BrokerHandle:
    """A handle for a broker another process started or checked (pytest-xdist workers get `record`)."""
    profile = load_profile(spec.profile)
    return BrokerHandle(spec.name, record["url"], profile, tools=record.get("tools"), env=record.get("env"),
                        product=record.get("product"), version=record.get("version"), node=record.get("node"))


def describe(handle: BrokerHandle, spec: BrokerSpec) -> dict:
    """The JSON-able record `attach` takes (the URL inside carries credentials: never print it)."""
    return {"name": spec.name, "url": handle.url, "profile": spec.profile, "tools": handle.tools, "env": handle.env,
            "product": handle.product, "version": handle.version, "node": handle.node, "managed": spec.url is None}


__all__ = ["MANAGED", "DEFAULT_BROKER", "TESTED", "SERIES", "series", "register_kind", "Broker", "WrappedBroker", "is_broker",
           "BrokerSpec", "BrokerHandle", "HookFailed", "HookUnsupported", "resolve",
           "start", "attach", "describe", "record_broker_identity", "stop_all", "install_cleanup", "available_profiles", "load_profile",
           "Profile", "NodeRecord"]
