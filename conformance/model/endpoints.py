"""Link and session endpoint flow-control state, exactly as 2.6.7 and 2.5.6 define it.

This module owns the state variables and their update rules; it knows nothing of transcripts, brokers or
verdicts, and never does I/O. Every sequence number is handled with RFC 1982 arithmetic.

Link endpoint (2.6.7): delivery-count, link-credit, available, drain.
- sender, on receiving flow state: link-credit := delivery-count(rcv) + link-credit(rcv) - delivery-count(snd),
  where an unspecified delivery-count(rcv) means the sender's initial delivery-count;
- sender, on sending a message: delivery-count += 1, link-credit -= 1;
- sender, draining with nothing to send: delivery-count += link-credit, link-credit := 0;
- receiver, on receiving a message: delivery-count += 1, link-credit -= 1, available floored at zero;
- receiver, on receiving the sender's flow: delivery-count and available taken from it.

Session endpoint (2.5.6): next-incoming-id, incoming-window, next-outgoing-id, outgoing-window,
remote-incoming-window, remote-outgoing-window, with the rules for sending and receiving transfers and
receiving a flow (remote-incoming-window := next-incoming-id(flow) + incoming-window(flow) -
next-outgoing-id(endpoint), or initial-outgoing-id(endpoint) instead of next-incoming-id(flow) when unset).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..wire.serial import serial_add, serial_diff


@dataclass
class LinkEndpoint:
    is_sender: bool
    delivery_count: int | None = None      # None: a receiver that has not seen the sender's attach
    initial_delivery_count: int | None = None
    link_credit: int = 0
    available: int = 0
    drain: bool = False

    # -- the sender ------------------------------------------------------------------------------------

    @classmethod
    def sender(cls, initial_delivery_count: int) -> "LinkEndpoint":
        return cls(True, initial_delivery_count & 0xFFFFFFFF, initial_delivery_count & 0xFFFFFFFF)

    def on_receiver_flow(self, delivery_count: int | None, link_credit: int | None, drain: bool | None) -> None:
        """2.6.7: the sender's link-credit follows the delivery-limit the receiver identified."""
        if link_credit is not None:
            rcv_count = delivery_count if delivery_count is not None else self.initial_delivery_count
            self.link_credit = serial_diff(self.delivery_count, serial_add(rcv_count, link_credit))
        if drain is not None:
            self.drain = bool(drain)

    def on_send(self) -> None:
        self.delivery_count = serial_add(self.delivery_count, 1)
        self.link_credit -= 1

    def on_drain_exhausted(self) -> None:
        """Drain with no message available: consume all link-credit by advancing delivery-count."""
        if self.link_credit > 0:
            self.delivery_count = serial_add(self.delivery_count, self.link_credit)
            self.link_credit = 0

    @property
    def delivery_limit(self) -> int:
        return serial_add(self.delivery_count, self.link_credit) if self.link_credit >= 0 else self.delivery_count

    def may_send(self) -> int:
        """How many more messages may be sent now (0 when link-credit <= 0)."""
        return max(self.link_credit, 0)

    # -- the receiver ----------------------------------------------------------------------------------

    @classmethod
    def receiver(cls) -> "LinkEndpoint":
        return cls(False)

    def on_sender_attach(self, initial_delivery_count: int) -> None:
        self.initial_delivery_count = initial_delivery_count & 0xFFFFFFFF
        if self.delivery_count is None:
            self.delivery_count = self.initial_delivery_count

    def set_credit(self, link_credit: int, drain: bool = False) -> None:
        self.link_credit = link_credit
        self.drain = drain

    def on_receive(self) -> None:
        if self.delivery_count is not None:
            self.delivery_count = serial_add(self.delivery_count, 1)
        self.link_credit -= 1
        self.available = max(self.available - 1, 0)   # 2.6.7: a floor of zero

    def on_sender_flow(self, delivery_count: int | None, link_credit: int | None, available: int | None) -> None:
        if delivery_count is not None:
            if self.delivery_count is not None and link_credit is None:
                # keep the delivery-limit: credit shrinks by what the sender advanced
                self.link_credit -= serial_diff(self.delivery_count, delivery_count)
            self.delivery_count = delivery_count & 0xFFFFFFFF
        if link_credit is not None:
            self.link_credit = link_credit
        if available is not None:
            self.available = available


@dataclass
class SessionEndpoint:
    next_outgoing_id: int
    incoming_window: int
    outgoing_window: int
    initial_outgoing_id: int = 0
    next_incoming_id: int | None = None
    remote_incoming_window: int | None = None
    remote_outgoing_window: int | None = None

    @classmethod
    def begin(cls, next_outgoing_id: int, incoming_window: int, outgoing_window: int) -> "SessionEndpoint":
        return cls(next_outgoing_id & 0xFFFFFFFF, incoming_window, outgoing_window, next_outgoing_id & 0xFFFFFFFF)

    def on_remote_begin(self, next_outgoing_id: int, incoming_window: int, outgoing_window: int) -> None:
        self.next_incoming_id = next_outgoing_id & 0xFFFFFFFF
        self.remote_incoming_window = serial_diff(self.next_outgoing_id,
                                                  serial_add(self.initial_outgoing_id, incoming_window))
        self.remote_outgoing_window = outgoing_window

    def on_send_transfer(self) -> None:
        self.next_outgoing_id = serial_add(self.next_outgoing_id, 1)
        if self.remote_incoming_window is not None:
            self.remote_incoming_window -= 1

    def on_receive_transfer(self) -> None:
        if self.next_incoming_id is not None:
            self.next_incoming_id = serial_add(self.next_incoming_id, 1)
        if self.remote_outgoing_window is not None:
            self.remote_outgoing_window -= 1

    def on_remote_flow(self, next_incoming_id: int | None, incoming_window: int, next_outgoing_id: int,
                       outgoing_window: int) -> None:
        """2.5.6 "receiving a flow"."""
        self.next_incoming_id = next_outgoing_id & 0xFFFFFFFF
        self.remote_outgoing_window = outgoing_window
        base = next_incoming_id if next_incoming_id is not None else self.initial_outgoing_id
        self.remote_incoming_window = serial_diff(self.next_outgoing_id, serial_add(base, incoming_window))

    def may_send(self) -> int | None:
        """Transfer frames that can be sent without exceeding the remote incoming-window (None: unknown)."""
        return None if self.remote_incoming_window is None else max(self.remote_incoming_window, 0)
