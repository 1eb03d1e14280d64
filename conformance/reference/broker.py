"""Sans-IO reference broker: queues, links and sessions with flow control per 2.5.6 and 2.6.7.

This module owns the fake broker's connection (`BrokerConnection`): the I/O boundary, the connection and
its sessions, and the broker-wide events; its link handling is in links.py, its flow handling in flow.py,
its switches in config.py, its delivery store in queues.py (all importable from here). It consumes bytes
(`receive`) and returns the bytes to send; it never touches sockets or clocks. `Faults` switches on one deliberate deviation at a time; each is an entry
of the fault catalogue (conformance.catalogue.faults), which names the requirement it breaks.

Its sessions and links are kept in `conformance.peer.state` (the one bookkeeping of the package, here in the
broker's role: "ours" is the broker, "remote" the client): every frame in and out is observed there, so
transfer-ids, windows, delivery-counts and credit follow the frames. The broker adds only what a broker
decides: queues, the limit it enforces on its incoming-window, and what a fault makes it compute otherwise
(its own credit, written back into the link's state).
"""

from __future__ import annotations

import contextlib

from ..peer.state import PeerState
from ..wire import (
    AMQP_HEADER, SASL_HEADER, Begin, Close, DecodeError, End, Error, Flow, Frame, FrameDecoder, Open, ProtocolHeader,
    SaslInit, SaslMechanisms, SaslOutcome, Symbol, Transfer, encode_frame, serial_add, serial_diff,
)
from ..wire.frames import AMQP_FRAME, SASL_FRAME
from .config import HANDLE_MAX, BrokerConfig, Faults
from .queues import BrokerState, Queue, Session, queue_name, NON_DURABLE
from .links import LinkHandling
from .flow import FlowHandling

__all__ = ["BrokerConfig", "BrokerConnection", "BrokerState", "Faults", "HANDLE_MAX", "NON_DURABLE", "Queue", "queue_name"]


class BrokerConnection(LinkHandling, FlowHandling):
    """One connection's protocol state: feed bytes in, collect bytes out."""

    def __init__(self, state: BrokerState):
        self.state = state
        self.cfg = state.config
        self.faults = state.faults
        self.decoder = FrameDecoder()
        self.out = bytearray()
        self.books = PeerState()                  # every frame in and out observed here (broker's role)
        self._credit_before: dict = {}
        self.sessions: dict[int, Session] = {}    # peer channel -> Session
        self.phase = "header"
        self.closed = False
        self.close_after_flush = False
        self.max_payload = 1 << 20
        self._holding = 0                         # > 0: _send writes into _held (BrokerConfig.late_by_frames)
        self._held = bytearray()
        self._late: list = []                     # [frames still to handle, bytes] written when the count is 0
        self._unread: list = []                   # frames not handled yet (BrokerConfig.hold_connection_on_alarm)

    # -- I/O boundary ------------------------------------------------------------------------------------

    def receive(self, data: bytes) -> bytes:
        try:
            items = self.decoder.feed(data)
        except DecodeError as exc:
            self._close_with("amqp:decode-error", str(exc))
            return self.take()
        self._unread.extend(items)
        self._handle_unread()
        return self.take()

    def _handle_unread(self) -> None:
        """Handle the frames read so far, in order; a transfer during an alarm with `hold_connection_on_alarm`
        stops here (it and what follows wait for the alarm to clear)."""
        while self._unread and not self.closed:
            item = self._unread[0]
            if self.cfg.hold_connection_on_alarm and self.state.alarm and isinstance(getattr(item, "body", None),
                                                                                      Transfer):
                return
            del self._unread[0]
            if isinstance(item, ProtocolHeader):
                self._on_header(item)
            else:
                self._on_frame(item)

    def take(self) -> bytes:
        data = bytes(self.out)
        self.out.clear()
        return data

    def _send(self, body, channel: int = 0, payload: bytes = b"", frame_type: int = 0) -> None:
        (self._held if self._holding else self.out).extend(encode_frame(body, channel, payload, frame_type))
        if frame_type != AMQP_FRAME:
            return
        keep = None
        if isinstance(body, Flow):     # the credit the broker grants is its decision, whatever it reports
            link = self.books.link(channel, body.handle) if body.handle is not None else None
            keep = (link, link.link_credit) if link is not None and link.is_receiver else None
        self.books.observe_out(Frame(channel, body, payload))
        if keep is not None:
            keep[0].link_credit = keep[1]

    # -- connection ----------------------------------------------------------------------------------------

    def _on_header(self, header: ProtocolHeader) -> None:
        if header.protocol_id == 3:
            self.out += SASL_HEADER
            self._send(SaslMechanisms(sasl_server_mechanisms=[Symbol(m) for m in self.cfg.sasl_mechanisms]),
                       frame_type=SASL_FRAME)
            self.phase = "sasl"
        elif header.protocol_id == 0:
            if self.cfg.require_sasl and self.phase == "header":
                self.out += SASL_HEADER
                self.closed = True
                return
            self.out += AMQP_HEADER
            self.phase = "open"
        else:
            self.out += SASL_HEADER
            self.closed = True

    def _on_frame(self, frame) -> None:
        body = frame.body
        if body is None:
            return
        if isinstance(body, SaslInit):
            self._send(SaslOutcome(code=0), frame_type=SASL_FRAME)
            self.phase = "sasl-done"
            return
        self._credit_before = self._credits(frame.channel) if isinstance(body, Flow) else {}
        self.books.observe_in(frame)
        earlier = len(self._late)
        handler = getattr(self, "_on_" + body.NAME, None)
        if handler is not None:
            handler(frame.channel, body, frame.payload)
        self._release_late(earlier)

    @contextlib.contextmanager
    def _late_if_configured(self):
        """Frames sent inside are held for `BrokerConfig.late_by_frames` more frames of the peer's."""
        if self.cfg.late_by_frames <= 0:
            yield
            return
        self._holding += 1
        try:
            yield
        finally:
            self._holding -= 1
            if not self._holding and self._held:
                self._late.append([self.cfg.late_by_frames, bytes(self._held)])
                self._held.clear()

    def _release_late(self, earlier: int) -> None:
        """One more frame handled: count down what was held before it; write what is due, in order."""
        for entry in self._late[:earlier]:
            entry[0] -= 1
        while self._late and self._late[0][0] <= 0:
            self.out += self._late.pop(0)[1]

    def _credits(self, peer_channel: int) -> dict:
        """Link-credit of each of the session's links before a flow is observed (faults compute their own)."""
        s = self.sessions.get(peer_channel)
        return {} if s is None else {h: link.books.link_credit for h, link in s.outgoing.items()}

    def _on_open(self, channel, open_, payload) -> None:
        if open_.max_frame_size is not None:
            # room for the frame header and a transfer performative with all its fields
            self.max_payload = max(int(open_.max_frame_size) - 64, 64)
        self._send(Open(container_id="reference-broker", max_frame_size=self.cfg.max_frame_size,
                        channel_max=self.cfg.channel_max,
                        properties={"product": self.cfg.product, "version": self.cfg.version}))

    def _on_close(self, channel, close, payload) -> None:
        if not self.closed:
            self._send(Close())
        self.closed = True

    def _close_with(self, condition: str, description: str) -> None:
        self._send(Close(error=Error(condition=Symbol(condition), description=description)))
        self.closed = True

    # -- sessions ------------------------------------------------------------------------------------------

    def _on_begin(self, channel, begin, payload) -> None:
        window = 0 if self.state.alarm and not self.cfg.hold_connection_on_alarm else self.cfg.incoming_window
        self._send(Begin(remote_channel=channel, next_outgoing_id=self.cfg.next_outgoing_id,
                         incoming_window=window, outgoing_window=self.cfg.outgoing_window,
                         handle_max=HANDLE_MAX), channel)
        books = self.books.sessions[channel]          # ours, on the peer's channel number
        first = books.next_incoming_id if books.next_incoming_id is not None else 0
        books.next_incoming_id = first
        limit = serial_add(first, window)
        self.sessions[channel] = Session(books, first_incoming_id=first, incoming_limit=limit, grace_limit=limit)

    def _on_end(self, channel, end, payload) -> None:
        s = self.sessions.pop(channel, None)
        if s is not None and not s.ended and self.cfg.answer_ends:
            self._send(End(), channel)

    def _end_session(self, s: Session, condition: str, description: str) -> None:
        self._send(End(error=Error(condition=Symbol(condition), description=description)), s.channel)

    def _session_flow(self, s: Session, link=None, echo: bool = False, **link_fields) -> Flow:
        b = s.books
        new_limit = serial_add(b.next_incoming_id, b.incoming_window)
        if serial_diff(s.grace_limit, new_limit) >= 0:
            s.grace_limit = new_limit              # growing: the new limit is the only one
        # shrinking: transfers in flight under the earlier, larger limit stay legal (grace_limit kept)
        s.incoming_limit = new_limit
        fields = dict(next_incoming_id=None if self.faults.omit_next_incoming_id else b.next_incoming_id,
                      incoming_window=b.incoming_window,
                      next_outgoing_id=serial_add(b.next_outgoing_id, self.faults.next_outgoing_id_offset),
                      outgoing_window=b.outgoing_window)
        if link is not None:
            fields.update(handle=link.handle)
        fields.update(link_fields)
        if echo:
            fields["echo"] = True
        return Flow(**fields)

    # -- broker-wide events --------------------------------------------------------------------------------

    def pump_all(self) -> None:
        for s in self.sessions.values():
            if not s.ended:
                self._pump_session(s)

    def set_alarm(self, on: bool) -> None:
        if on and self.faults.close_on_alarm:
            self._close_with("amqp:resource-limit-exceeded", "alarm")
            return
        if self.cfg.hold_connection_on_alarm:      # no flow control: the held frames are handled once it clears
            if not on:
                self._handle_unread()
            return
        for s in self.sessions.values():
            if s.ended:
                continue
            s.books.incoming_window = 0 if on else self.cfg.incoming_window
            self._send(self._session_flow(s), s.channel)

    def queue_drained(self) -> None:
        for s in self.sessions.values():
            for link in s.incoming.values():
                if link.blocked and not self._publisher_blocked(link):
                    self._grant_publisher_credit(s, link)
