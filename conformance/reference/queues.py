"""The reference broker's delivery store and its view of sessions and links.

This module owns `Queue` (the messages and their length limit), `OutgoingLink` / `IncomingLink` (a link on
which the broker sends or receives, its state kept in `peer.state`), `Session` (with the limit the broker
enforces on its incoming-window), `BrokerState` (the queues every connection of one broker shares),
`queue_name` (address -> queue) and what it reads of a message (`_durable`, `_message_body`).
"""

from __future__ import annotations

import collections
from dataclasses import dataclass, field

from ..peer.state import LinkState, SessionState
from ..wire import Data, DecodeError

from .config import BrokerConfig, Faults

NON_DURABLE = "Non-durable message store cannot accept durable message."


@dataclass
class Queue:
    name: str
    messages: collections.deque = field(default_factory=collections.deque)
    max_length: int | None = None


@dataclass
class OutgoingLink:
    """A link on which the broker sends (the peer receives): its state is `books` (delivery-count, credit)."""

    books: LinkState
    queue: str
    drain: bool = False
    settled: bool = False
    next_tag: int = 0
    was_stopped: bool = False     # the last flow granted no credit (the stopped-link-stays-stopped fault)
    held: int = 0                 # credits the broker leaves unused (the drain-leaves-credit fault)

    @property
    def handle(self) -> int:
        return self.books.handle


@dataclass
class IncomingLink:
    """A link on which the broker receives (the peer publishes): its state is `books`."""

    books: LinkState
    queue: str
    blocked: bool = False
    received: int = 0             # transfers taken on this link (the lose_after fault)

    @property
    def handle(self) -> int:
        return self.books.handle


@dataclass
class Session:
    """A session as the broker runs it: its state is `books`; the broker adds the limit it enforces on its
    incoming-window (and the earlier, larger one while transfers sent under it may be in flight)."""

    books: SessionState
    first_incoming_id: int
    incoming_limit: int          # transfer-id up to which the peer may send (last announced window)
    grace_limit: int             # the limit before the last reduction: transfers in flight stay legal
    outgoing: dict = field(default_factory=dict)   # peer handle -> OutgoingLink
    incoming: dict = field(default_factory=dict)   # peer handle -> IncomingLink

    @property
    def channel(self) -> int:
        return self.books.channel

    @property
    def ended(self) -> bool:
        return self.books.ended_by_us


class BrokerState:
    """Queues shared by every connection of one fake broker."""

    def __init__(self, config: BrokerConfig | None = None, faults: Faults | None = None):
        self.config = config or BrokerConfig()
        self.faults = faults or Faults()
        self.queues: dict[str, Queue] = {}
        self.alarm = False
        self.connections: list["BrokerConnection"] = []

    def queue(self, name: str) -> Queue:
        if name not in self.queues:
            self.queues[name] = Queue(name)
        return self.queues[name]


def queue_name(address: str | None) -> str:
    address = address or ""
    for prefix in ("/queues/", "/queue/", "/amq/queue/"):
        if address.startswith(prefix):
            return address[len(prefix):]
    return address


def _durable(payload: bytes) -> bool:
    """Whether the message's header section says durable (a first transfer frame carries it)."""
    from ..wire import Header, decode_all
    try:
        sections = decode_all(payload)
    except DecodeError:
        return False
    return any(isinstance(sec, Header) and bool(sec.durable) for sec in sections)


def _message_body(payload: bytes) -> bytes:
    """The body bytes of a simple message (a single data section); the raw payload otherwise."""
    from ..wire import decode_all
    try:
        sections = decode_all(payload)
    except DecodeError:
        return payload
    for sec in sections:
        if isinstance(sec, Data):
            return sec.value
    return payload
