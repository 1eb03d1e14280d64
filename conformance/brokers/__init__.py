"""Brokers under test: managed throwaway nodes (provisioned and started by the suite) and brokers by URL.

`Broker` (module `interface`) is the one interface every broker implements (a typing.Protocol).
`resolve(value, profile)` turns a `--broker` value into a BrokerSpec (a URL is parsed here, once, into a
`conformance.peer.BrokerAddress`); `start(spec, timeout=)` gives the BrokerHandle the cases use (it carries that
address); `describe(handle, spec)` is its one serialisable description and `attach(description)` rebuilds the
handle from it in another process (pytest-xdist workers) without parsing a URL. This
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
from ..peer import BrokerAddress, parse_url
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
    name: str                           # managed kind, or a label for a URL
    address: BrokerAddress | None       # a URL broker's parsed address; None for managed brokers until started
    profile: str                        # the profile's name or .toml path, as given


def resolve(value: str, profile: str | None = None) -> BrokerSpec:
    """The BrokerSpec of a `--broker` value: a managed broker's name, or a URL (parsed here: the only parse of
    a `--broker` URL on its way to the socket). UsageError (exit 2) for an unknown name or a malformed URL."""
    if value in MANAGED:
        return BrokerSpec(value, None, profile or MANAGED[value].profile_name)
    if "://" in value:
        address = parse_url(value)          # UsageError for a malformed URL
        return BrokerSpec(f"{address.host}:{address.port}", address, profile or "generic")
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
    if spec.address is not None:
        from ..peer import PeerError
        bound = RunOptions().frame_timeout if timeout is None else timeout
        handle = BrokerHandle(spec.name, spec.address, profile)
        try:
            handle.identify(timeout=bound)
        except ConformanceError:
            raise
        except PeerError as exc:
            raise BrokerUnreachable(f"{spec.address.redacted()} did not complete the AMQP handshake within "
                                    f"{bound:g} s (--frame-timeout): {exc}; check that it is an AMQP 1.0 broker "
                                    "and that it is ready") from None
        return handle
    managed = MANAGED[spec.name]()
    node = managed.start(port)
    return BrokerHandle(spec.name, parse_url(node.url), profile, tools=managed.tools, env=managed.env or None,
                        product=node.extra.get("product"), version=node.extra.get("version"), managed=managed,
                        node=node_info(node))           # the node's own URL, parsed once where it is born


def node_info(node: NodeRecord) -> dict:
    """What another process needs to check on a node: its pid and log files."""
    return {"pid": node.pid, "logs": node.extra.get("logs", []), "managed": True}


def describe(handle: BrokerHandle, spec: BrokerSpec) -> dict:
    """The one serialisable description of a broker that another process rebuilds its handle from
    (`attach`): plain values, the address as its fields. Its `address`, `tools` and `env` may carry
    credentials (`SECRET_FIELDS`): the run pipeline sends those through a 0600 file, never on a command line
    or in results."""
    return {"name": handle.name, "address": handle.address.fields(), "profile": spec.profile,
            "tools": handle.tools, "env": handle.env, "product": handle.product, "version": handle.version,
            "node": handle.node}


SECRET_FIELDS = ("address", "tools", "env")     # what a description may carry credentials in


def attach(description: dict, name: str | None = None) -> BrokerHandle:
    """The handle of a broker another process started or checked, from its `describe` (the address rebuilt
    from its fields: no URL is parsed). `name`: the handle's name when it is not the description's."""
    d = description
    return BrokerHandle(name or d["name"], BrokerAddress(**d["address"]), load_profile(d["profile"]),
                        tools=d.get("tools"), env=d.get("env"), product=d.get("product"),
                        version=d.get("version"), node=d.get("node"))


__all__ = ["MANAGED", "DEFAULT_BROKER", "TESTED", "SERIES", "series", "register_kind", "Broker", "WrappedBroker", "is_broker",
           "BrokerSpec", "BrokerHandle", "HookFailed", "HookUnsupported", "resolve",
           "start", "attach", "describe", "SECRET_FIELDS", "BrokerAddress", "record_broker_identity", "stop_all", "install_cleanup", "available_profiles", "load_profile",
           "Profile", "NodeRecord"]
