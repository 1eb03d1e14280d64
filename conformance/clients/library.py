"""The client libraries the suite can drive, at pinned versions, and where each one's driver lives.

`Library(name, version, language, registry, ...)`; its `label` (`rhea-3.0.5`) names it everywhere (the
`broker` field of results, test ids, history). `resolve("rhea")` gives the newest pinned release of a
library, `resolve("rhea-2.0.8")` that release; `series("rhea")` every pinned release, oldest first (for
`bisect --series`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..errors import UsageError

DRIVERS = Path(__file__).resolve().parents[2] / "clients"     # the repository's driver programs


@dataclass(frozen=True)
class Library:
    name: str               # the library's own name (package name where it is one)
    version: str
    language: str
    registry: str           # pypi | npm | maven | go | crates | debian
    package: str            # what the registry's client installs
    driver: str             # folder under clients/
    summary: str            # what it is and which API the driver uses
    flow_api: str = ""      # what the API lets the application do in flow control where the library asks it to
                            # take part (a drain on a sender), or that it offers no way: quoted by findings and
                            # bug reports, so a verdict never blames the library for what the application owes

    @property
    def label(self) -> str:
        return f"{self.name}-{self.version}"

    @property
    def driver_dir(self) -> Path:
        return DRIVERS / self.driver


def _lib(name, versions, language, registry, package, driver, summary, flow_api="") -> list[Library]:
    return [Library(name, v, language, registry, package, driver, summary, flow_api) for v in versions]


LIBRARIES: tuple[Library, ...] = tuple(
    _lib("python-qpid-proton", ("0.39.0", "0.40.0"), "Python", "pypi", "python-qpid-proton",
         "python-qpid-proton", "Qpid Proton's Python binding; BlockingConnection, create_receiver(credit=N), "
         "receive(timeout)",
         "BlockingConnection gives the application no drain of a sender to answer: proton-c hands it to the "
         "application as a link-flow event with drain mode set, and only the event API (MessagingHandler, "
         "Link.drained()) lets it answer; BlockingSender has neither")
    + _lib("rhea", ("2.0.8", "3.0.5"), "JavaScript", "npm", "rhea", "rhea",
           "the Node.js AMQP 1.0 library under Azure's JS SDKs; receiver credit_window or add_credit/drain",
           "a drain on a sender is handed to the application (event sender_draining); the application answers "
           "with set_drained(true) when it has nothing to send (README: it \"must be called in response to\" "
           "the event): the driver does")
    + _lib("qpid-jms", ("1.11.0", "2.7.0"), "Java", "maven", "org.apache.qpid:qpid-jms-client", "qpid-jms",
           "Qpid JMS (javax.jms in 1.x, jakarta.jms in 2.x); consumer.receive(timeout) with "
           "jms.prefetchPolicy.all=N",
           "JMS has no flow-control API: the provider answers a drain on a producer's link itself")
    + _lib("protonj2", ("1.0.0-M23",), "Java", "maven", "org.apache.qpid:protonj2-client", "protonj2",
           "Qpid protonj2 imperative client; openReceiver with creditWindow(N), receive(timeout)",
           "the client answers a drain on a sender itself when no send is blocked (ClientSender "
           "handleCreditStateUpdated: sender.drained()); Receiver.drain() returns a future completed by the "
           "drained flow")
    + _lib("go-amqp", ("1.4.0", "1.7.0"), "Go", "go", "github.com/Azure/go-amqp", "go-amqp",
           "Azure's Go AMQP 1.0 client; ReceiverOptions.Credit (-1: IssueCredit/DrainCredit), Receive(ctx)",
           "Sender has no drain API: the library reads a receiver's flow into its credit and never looks at the "
           "drain flag (sender.go muxHandleFrame), so the application has no way to answer a drain")
    + _lib("fe2o3-amqp", ("0.14.0", "0.18.4"), "Rust", "crates", "fe2o3-amqp", "fe2o3-amqp",
           "the Rust AMQP 1.0 crate (tokio); CreditMode::Auto(N) or Manual with set_credit/drain, recv(), "
           "Sender::send",
           "the crate answers a drain on a sender itself, at once (src/link/state.rs on_incoming_flow: with drain "
           "set it advances delivery-count by the link-credit and sends its flow); the application has no drain "
           "hook, and Receiver::drain() starts a receiver's drain")
    + _lib("qpid-proton-cpp", ("0.37.0",), "C++", "debian", "libqpid-proton-cpp12-dev", "qpid-proton-cpp",
           "Qpid Proton C++ (Debian's only upstream release); messaging_handler, credit_window(N) or "
           "add_credit/drain, on_sender_drain_start -> return_credit",
           "a drain on a sender is handed to the application (messaging_handler::on_sender_drain_start); the "
           "application answers with sender::return_credit() when it has nothing to send (sender.hpp: \"Return all "
           "unused credit to the receiver in response to a drain request\"): the driver does")
    + _lib("azure-servicebus", ("7.15.0",), "Python", "pypi", "azure-servicebus", "azure-servicebus",
           "the pure-Python AMQP stack of the Azure Service Bus SDK (azure.servicebus._pyamqp; only 7.15.0 decodes "
           "a begin whose trailing fields are omitted); ReceiveClient(link_credit=N), receive_message_batch, "
           "SendClient.send_message",
           "the Sender has no drain API and _pyamqp's SenderLink never reads a flow's drain flag (sender.py "
           "_incoming_flow), so the application has no way to answer a drain")
    + _lib("rhea-promise", ("2.1.0", "3.0.3"), "JavaScript", "npm", "rhea-promise", "rhea-promise",
           "the promise layer over rhea that @azure/core-amqp (the Azure JS SDKs) uses; createReceiver "
           "credit_window or addCredit/drain, AwaitableSender.send",
           "a drain on a sender is handed to the application (rhea's sender_draining, re-emitted as "
           "SenderEvents.senderDraining); the application answers with setDrained(true) when it has nothing to "
           "send: the driver does; but createAwaitableSender resolves only at the sender's first `sendable` event "
           "(lib/session.ts _createSender), so a drain in the flow that first grants credit reaches no listener")
    + _lib("vertx-proton", ("4.5.24", "5.0.7"), "Java", "maven", "io.vertx:vertx-proton", "vertx-proton",
           "Vert.x's AMQP 1.0 layer over proton-j; ProtonReceiver setPrefetch(N) or flow(n)/drain, "
           "ProtonSender sendQueueFull/send",
           "ProtonSender answers a drain itself (setAutoDrained: \"True by default\"; ProtonSenderImpl "
           "handleLinkFlow: drained() when the link is draining); ProtonReceiver.drain(timeout, handler) drains a "
           "receiver")
    + _lib("vertx-amqp-client", ("4.5.24", "5.0.7"), "Java", "maven", "io.vertx:vertx-amqp-client",
           "vertx-amqp-client", "the Vert.x AMQP client (Quarkus/SmallRye) on vertx-proton, with its own credit "
           "handling: maxBufferedMessages then flow(1) per message; sendWithAck, writeQueueFull/drainHandler",
           "AmqpSender leaves a drain to vertx-proton, which answers it itself (auto-drained); the receiver side "
           "offers no drain and no manual credit (AmqpReceiverImpl manages credit: maxBufferedMessages, then "
           "flow(1) per message)")
)

BY_LABEL = {lib.label: lib for lib in LIBRARIES}


def _version_key(version: str):
    import re
    return [int(p) if p.isdigit() else p for p in re.split(r"[.-]", version)]


def series(name: str) -> list[Library]:
    """Every pinned release of library `name`, oldest first."""
    found = sorted((lib for lib in LIBRARIES if lib.name == name), key=lambda l: _version_key(l.version))
    if not found:
        raise UsageError(f"unknown client library {name!r}; `amqp-conformance clients list` shows them")
    return found


def resolve(value: str) -> Library:
    """A library by label (`rhea-3.0.5`) or name (its newest pinned release)."""
    if value in BY_LABEL:
        return BY_LABEL[value]
    if any(lib.name == value for lib in LIBRARIES):
        return series(value)[-1]
    known = ", ".join(sorted({lib.name for lib in LIBRARIES}))
    raise UsageError(f"unknown client {value!r}; use a library name ({known}) or a label from "
                     "`amqp-conformance clients list`")
