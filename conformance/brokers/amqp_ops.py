"""Broker housekeeping over AMQP with our own peer: preload a queue, drain (purge) it, and RabbitMQ 4's
HTTP-over-AMQP management node (`/management`: declare, purge, delete, inspect queues).

This module owns these helper conversations only. They are not under test: a failure raises `AmqpOpFailed`
naming the step, never a verdict. Every wait is the peer's bounded `expect`.
"""

from __future__ import annotations

import contextlib
import time
import uuid
from dataclasses import dataclass
from typing import Any, Iterator
from urllib.parse import quote

from ..peer import BrokerAddress, Peer, PeerError, TLSOptions, Timeouts, summarize
from ..wire import (
    Accepted, AmqpValue, Attach, Begin, Close, Data, Detach, Disposition, End, Flow, Properties, Source, Symbol, Target,
    Transfer, DecodeError, decode_all, encode_message,
)
from .broker_errors import HookFailed

MANAGEMENT_NODE = "/management"
LINK_PAIR = "management-link-pair"


class AmqpOpFailed(HookFailed):
    """A housekeeping conversation (preload, drain, management call) did not complete."""


@dataclass(frozen=True)
class Endpoint:
    address: BrokerAddress              # where to connect (a handle's parsed address: no URL string)
    sasl: str | None = "auto"
    tls: TLSOptions | None = None
    timeout: float = 30.0              # the whole conversation (a preload of many messages)
    frame: float | None = None         # each answer awaited, and the connect: the run's --frame-timeout when set


@contextlib.contextmanager
def session(endpoint: Endpoint, what: str) -> Iterator[Peer]:
    """A connection with one session on channel 0; closed (politely, then the socket) afterwards."""
    try:
        bound = endpoint.frame if endpoint.frame is not None else endpoint.timeout
        timeouts = Timeouts(frame=bound, connect=bound) if endpoint.frame is not None else Timeouts(frame=bound)
        peer = Peer.connect(endpoint.address, timeouts=timeouts, tls=endpoint.tls)
    except PeerError as exc:
        raise AmqpOpFailed(f"{what}: {exc}") from None
    try:
        peer.handshake(sasl=endpoint.sasl, container_id=f"amqp-conformance-{what.split()[0]}-{uuid.uuid4().hex[:6]}")
        peer.begin(next_outgoing_id=0, incoming_window=65535, outgoing_window=65535)
        peer.expect(Begin)
        yield peer
        with contextlib.suppress(PeerError):
            peer.close_connection()
            peer.expect(Close, timeout=2.0)
    except PeerError as exc:
        raise AmqpOpFailed(f"{what}: {exc}") from None
    finally:
        peer.close()


def _attached(peer: Peer, what: str) -> Attach:
    reply = peer.expect((Attach, Detach, End, Close))
    if not isinstance(reply.body, Attach):
        raise AmqpOpFailed(f"{what}: the broker refused the link ({summarize(reply)})")
    return reply.body


def publish(endpoint: Endpoint, address: str, bodies: list[bytes]) -> None:
    """Send each body as a `data` message, unsettled, and wait until the broker settled every one."""
    what = f"preload of {address}"
    with session(endpoint, what) as peer:
        peer.attach_sender(f"preload-{uuid.uuid4().hex[:8]}", address, handle=0, snd_settle_mode=0,
                           rcv_settle_mode=0)
        _attached(peer, what)
        link = peer.state.sessions[0].links[0]
        deadline = time.monotonic() + endpoint.timeout
        sent = 0
        while sent < len(bodies):
            window = peer.state.sessions[0].remote_incoming_window
            if link.link_credit <= 0 or (window is not None and window <= 0):
                peer.expect(Flow, timeout=max(deadline - time.monotonic(), 0.1))
                continue
            peer.transfer(0, 0, encode_message(Data(bodies[sent])))
            sent += 1
        settled: set[int] = set()
        while len(settled) < len(bodies):
            frame = peer.expect((Disposition, Detach, End, Close), timeout=max(deadline - time.monotonic(), 0.1))
            d = frame.body
            if not isinstance(d, Disposition):
                raise AmqpOpFailed(f"{what}: the broker answered {summarize(frame)}")
            last = d.last if d.last is not None else d.first
            if d.state is not None and not isinstance(d.state, Accepted):
                raise AmqpOpFailed(f"{what}: the broker did not accept message(s) {d.first}..{last}: {d.state!r}")
            settled.update(range(int(d.first), int(last) + 1))


def drain(endpoint: Endpoint, address: str, quiet: float = 0.3) -> int:
    """Consume everything the queue holds (credit in batches, accept each); returns how many arrived.
    Stops when a batch of credit stays unused for `quiet` seconds (a bounded wait in the peer)."""
    what = f"drain of {address}"
    taken = 0
    with session(endpoint, what) as peer:
        peer.attach_receiver(f"drain-{uuid.uuid4().hex[:8]}", address, handle=0, snd_settle_mode=2,
                             rcv_settle_mode=0)
        attach = _attached(peer, what)
        link = peer.state.sessions[0].links[0]
        if link.delivery_count is None and attach.initial_delivery_count is not None:
            link.delivery_count = int(attach.initial_delivery_count)
        while True:
            peer.flow(handle=0, link_credit=500)
            got = 0
            while got < 500:
                try:
                    frame = peer.expect(Transfer, timeout=quiet)
                except PeerError:
                    break
                got += 1
                t = frame.body
                if not t.settled and t.delivery_id is not None:
                    peer.disposition(first=t.delivery_id, settled=True, state=Accepted())
            taken += got
            if got < 500:
                return taken


@dataclass
class ManagementReply:
    status: int
    body: Any


def management(endpoint: Endpoint, method: str, path: str, body: Any = None,
               ok: tuple[int, ...] = (200, 201, 204)) -> ManagementReply:
    """One request to RabbitMQ 4's management node over a paired link; raises AmqpOpFailed unless the
    status is in `ok`."""
    what = f"management {method} {path}"
    paired = {Symbol("paired"): True}
    with session(endpoint, what) as peer:
        peer.attach_sender(LINK_PAIR, MANAGEMENT_NODE, handle=0, snd_settle_mode=1, rcv_settle_mode=0,
                           source=Source(address=MANAGEMENT_NODE), properties=paired)
        _attached(peer, what)
        peer.attach_receiver(LINK_PAIR, MANAGEMENT_NODE, handle=1, snd_settle_mode=1, rcv_settle_mode=0,
                             target=Target(address=MANAGEMENT_NODE), properties=paired)
        attach = _attached(peer, what)
        link = peer.state.sessions[0].links[1]
        if link.delivery_count is None and attach.initial_delivery_count is not None:
            link.delivery_count = int(attach.initial_delivery_count)
        peer.flow(handle=1, link_credit=1)
        sender = peer.state.sessions[0].links[0]
        if sender.link_credit <= 0:
            peer.expect(Flow, handle=sender.remote_handle, link_credit=lambda c: c is not None and c > 0)
        request_id = str(uuid.uuid4())
        message = encode_message(Properties(message_id=request_id, to=path, subject=method, reply_to="$me"),
                                 AmqpValue(body))
        peer.transfer(0, 0, message, settled=True)
        frame = peer.expect(Transfer, handle=link.remote_handle)
        status, reply_body = _parse_reply(frame.payload)
    if status not in ok:
        detail = f": {reply_body}" if reply_body else ""
        raise AmqpOpFailed(f"{what} answered {status}{detail}")
    return ManagementReply(status, reply_body)


def _parse_reply(payload: bytes) -> tuple[int, Any]:
    status, body = 0, None
    try:
        sections = decode_all(payload)
    except DecodeError as exc:
        raise AmqpOpFailed(f"the management reply does not decode ({exc})") from None
    for section in sections:
        if isinstance(section, Properties):
            with contextlib.suppress(TypeError, ValueError):
                status = int(section.subject)
        elif isinstance(section, AmqpValue):
            body = section.value
    return status, body


def queue_path(queue: str) -> str:
    return "/queues/" + quote(queue, safe="")


__all__ = ["Endpoint", "AmqpOpFailed", "ManagementReply", "publish", "drain", "management", "queue_path", "session"]
