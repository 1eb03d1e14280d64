"""Link and session endpoint flow-control state, exactly as 2.6.7 and 2.5.6 define it.

This module owns the state variables of one endpoint and their update rules. It knows nothing of
transcripts, brokers or verdicts, and never does I/O (no sockets, clocks or threads). Every sequence number
(delivery-count, transfer-id) is handled with RFC 1982 arithmetic from `conformance.wire.serial`; credit and
window values are plain non-negative counts and may be as large as 2^32 - 1, so a limit is never formed by
adding a count to a sequence number: "may I send?" is answered as `credit - distance(base, current) > 0`.

Link endpoint (2.6.7): delivery-count, link-credit, available, drain.
- sender, on receiving flow state: link-credit := delivery-count(rcv) + link-credit(rcv) - delivery-count(snd),
  where an unspecified delivery-count(rcv) means the delivery-count of the sender's initial attach;
- sender, on sending a message: delivery-count += 1, link-credit -= 1 (a multi-frame delivery is one
  message, counted at its first frame; an aborted delivery still counts: the spec is silent, and the
  delivery-count it consumed is not given back);
- sender, drain set and nothing to send: delivery-count += link-credit, link-credit := 0;
- receiver, on receiving a message: delivery-count += 1, link-credit -= 1, available -= 1 floored at zero;
- receiver, on receiving the sender's flow: delivery-count and available taken from it, and link-credit
  re-derived so that the receiver's delivery-limit is unchanged (only the receiver chooses the limit).

Session endpoint (2.5.6): next-incoming-id, incoming-window, next-outgoing-id, outgoing-window,
remote-incoming-window, remote-outgoing-window:
- sending a transfer: next-outgoing-id += 1, remote-incoming-window -= 1;
- receiving a transfer: next-incoming-id += 1, remote-outgoing-window -= 1;
- receiving a flow: next-incoming-id := next-outgoing-id(flow), remote-outgoing-window := outgoing-window(flow),
  remote-incoming-window := next-incoming-id(flow) + incoming-window(flow) - next-outgoing-id(endpoint), with
  initial-outgoing-id(endpoint) in place of next-incoming-id(flow) when the flow does not carry it.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..wire.serial import MASK, serial_add, serial_diff


def credit_left(base: int, credit: int, current: int) -> int:
    """base + credit - current for a sequence-number base/current and a count credit (no 2^31 limit on credit)."""
    return credit - serial_diff(base, current)


@dataclass
class LinkEndpoint:
    """One link endpoint's 2.6.7 state. `delivery_count` is None for a receiver not yet told the sender's."""

    is_sender: bool
    delivery_count: int | None = None
    initial_delivery_count: int | None = None
    link_credit: int = 0
    available: int = 0
    drain: bool = False
    in_delivery: bool = False        # a multi-frame delivery (more=true) is in progress
    messages: int = 0                # messages sent (sender) or received (receiver) since attach

    # -- construction ----------------------------------------------------------------------------------

    @classmethod
    def sender(cls, initial_delivery_count: int) -> "LinkEndpoint":
        dc = int(initial_delivery_count) & MASK
        return cls(True, dc, dc)

    @classmethod
    def receiver(cls) -> "LinkEndpoint":
        return cls(False)

    # -- both roles ------------------------------------------------------------------------------------

    def on_transfer_frame(self, more: bool | None, aborted: bool | None) -> bool:
        """Account one transfer frame (sent by a sender, received by a receiver). Returns True when the
        frame starts a new message, i.e. the frame that consumes one unit of link-credit."""
        starts = not self.in_delivery
        self.in_delivery = bool(more) and not bool(aborted)     # aborted takes precedence over more (2.7.5)
        if starts:
            if self.is_sender:
                self.on_send()
            else:
                self.on_receive()
        return starts

    @property
    def delivery_limit(self) -> int | None:
        """delivery-count + link-credit (None while delivery-count is unknown or link-credit < 0)."""
        if self.delivery_count is None or self.link_credit < 0:
            return None
        return (self.delivery_count + self.link_credit) & MASK

    def may_send(self) -> int:
        """How many more messages the sender may send now (0 when link-credit <= 0)."""
        return max(self.link_credit, 0)

    # -- the sender ------------------------------------------------------------------------------------

    def on_receiver_flow(self, delivery_count: int | None, link_credit: int | None, drain: bool | None) -> None:
        """2.6.7: the sender's link-credit follows the delivery-limit the receiver identified."""
        if link_credit is not None:
            base = self.initial_delivery_count if delivery_count is None else int(delivery_count) & MASK
            if base is not None and self.delivery_count is not None:
                self.link_credit = credit_left(base, int(link_credit), self.delivery_count)
        if drain is not None:
            self.drain = bool(drain)

    def on_send(self) -> None:
        if self.delivery_count is not None:
            self.delivery_count = (self.delivery_count + 1) & MASK
        self.link_credit -= 1
        self.available = max(self.available - 1, 0)
        self.messages += 1

    def on_drain_exhausted(self) -> None:
        """Drain set and no message available: consume all link-credit by advancing delivery-count."""
        if self.link_credit > 0:
            step = self.link_credit
            while step:                                  # serial_add takes steps below 2^31
                part = min(step, (1 << 31) - 1)
                self.delivery_count = serial_add(self.delivery_count, part)
                step -= part
            self.link_credit = 0

    # -- the receiver ----------------------------------------------------------------------------------

    def on_sender_attach(self, initial_delivery_count: int) -> None:
        self.initial_delivery_count = int(initial_delivery_count) & MASK
        if self.delivery_count is None:
            self.delivery_count = self.initial_delivery_count

    def set_credit(self, link_credit: int, drain: bool = False) -> None:
        """The receiver chooses a new link-credit (and drain mode); it identifies delivery-count + link-credit."""
        self.link_credit = int(link_credit)
        self.drain = bool(drain)

    def on_receive(self) -> None:
        if self.delivery_count is not None:
            self.delivery_count = (self.delivery_count + 1) & MASK
        self.link_credit -= 1
        self.available = max(self.available - 1, 0)      # 2.6.7: a floor of zero
        self.messages += 1

    def on_sender_flow(self, delivery_count: int | None, link_credit: int | None, available: int | None) -> None:
        """The sender's flow: delivery-count and available are the sender's; the receiver keeps its limit.
        (`link_credit` is the sender's echo of our value and changes nothing here.)"""
        del link_credit
        if delivery_count is not None:
            dc = int(delivery_count) & MASK
            if self.delivery_count is not None:
                self.link_credit -= serial_diff(self.delivery_count, dc)
            self.delivery_count = dc
        if available is not None:
            self.available = int(available)


@dataclass
class SessionEndpoint:
    """One session endpoint's 2.5.6 state. Remote windows are None until the partner's begin is seen."""

    next_outgoing_id: int
    incoming_window: int
    outgoing_window: int
    initial_outgoing_id: int = 0
    next_incoming_id: int | None = None
    remote_incoming_window: int | None = None
    remote_outgoing_window: int | None = None

    @classmethod
    def begin(cls, next_outgoing_id: int, incoming_window: int, outgoing_window: int) -> "SessionEndpoint":
        first = int(next_outgoing_id) & MASK
        return cls(first, int(incoming_window), int(outgoing_window), first)

    def on_remote_begin(self, next_outgoing_id: int, incoming_window: int, outgoing_window: int) -> None:
        """The partner's begin carries its initial state; its incoming-window counts from our initial id."""
        self.next_incoming_id = int(next_outgoing_id) & MASK
        self.remote_incoming_window = credit_left(self.initial_outgoing_id, int(incoming_window),
                                                  self.next_outgoing_id)
        self.remote_outgoing_window = int(outgoing_window)

    def set_windows(self, incoming_window: int, outgoing_window: int) -> None:
        """Our own policy changed the windows (announced in a flow we send)."""
        self.incoming_window = int(incoming_window)
        self.outgoing_window = int(outgoing_window)

    def on_send_transfer(self) -> None:
        self.next_outgoing_id = (self.next_outgoing_id + 1) & MASK
        if self.remote_incoming_window is not None:
            self.remote_incoming_window -= 1

    def on_receive_transfer(self) -> None:
        if self.next_incoming_id is not None:
            self.next_incoming_id = (self.next_incoming_id + 1) & MASK
        if self.remote_outgoing_window is not None:
            self.remote_outgoing_window -= 1

    def on_remote_flow(self, next_incoming_id: int | None, incoming_window: int, next_outgoing_id: int,
                       outgoing_window: int) -> None:
        """2.5.6 "receiving a flow"."""
        self.next_incoming_id = int(next_outgoing_id) & MASK
        self.remote_outgoing_window = int(outgoing_window)
        base = self.initial_outgoing_id if next_incoming_id is None else int(next_incoming_id) & MASK
        self.remote_incoming_window = credit_left(base, int(incoming_window), self.next_outgoing_id)

    def may_send(self) -> int | None:
        """Transfer frames that can be sent without exceeding the remote incoming-window (None: unknown)."""
        return None if self.remote_incoming_window is None else max(self.remote_incoming_window, 0)
