"""The reference broker's link handling: attach and detach, the credit it grants publishers, and the
transfers it takes from them (queue limits, alarms, rejects, the faults on publishing).

`LinkHandling` is a part of `BrokerConnection` (broker.py): its methods run on the connection's state.
"""

from __future__ import annotations

from ..wire import (
    Attach, Detach, Disposition, Error, Source, Symbol, Target, serial_add, serial_diff, Accepted, Rejected,
)
from .queues import IncomingLink, OutgoingLink, Session, queue_name, NON_DURABLE, _durable, _message_body
from .config import HANDLE_MAX, ROLE_RECEIVER, ROLE_SENDER


class LinkHandling:
    """Attach, detach and publishers (a part of BrokerConnection)."""

    # -- links ---------------------------------------------------------------------------------------------

    def _on_attach(self, channel, attach, payload) -> None:
        s = self.sessions.get(channel)
        if s is None or s.ended:
            return
        if attach.handle > HANDLE_MAX and not self.faults.ignore_handle_max:
            # 2.7.2: a handle outside the supported range closes the connection with framing-error
            self._close_with("amqp:connection:framing-error", f"handle {attach.handle} above handle-max")
            return
        handle = s.books.next_free_handle()
        node = attach.source if attach.role == ROLE_RECEIVER else attach.target
        address = node.address if isinstance(node, (Source, Target)) else None
        if not self.cfg.create_on_attach and queue_name(address) not in self.state.queues:
            self._send(Attach(name=attach.name, handle=handle, role=not attach.role, source=None, target=None,
                              initial_delivery_count=0 if attach.role == ROLE_RECEIVER else None), channel)
            self._send(Detach(handle=handle, closed=True, error=Error(
                condition=Symbol("amqp:not-found"), description=f"Unknown node '{address}'")), channel)
            return
        if attach.role == ROLE_RECEIVER:
            address = attach.source.address if isinstance(attach.source, Source) else None
            q = self.state.queue(queue_name(address))
            count = self.cfg.initial_delivery_count
            self._send(Attach(name=attach.name, handle=handle, role=ROLE_SENDER,
                              snd_settle_mode=attach.snd_settle_mode, rcv_settle_mode=0,
                              source=attach.source, target=attach.target,
                              initial_delivery_count=None if self.faults.omit_initial_delivery_count
                              else count), channel)
            books = s.books.links[handle]
            books.initial_delivery_count = books.delivery_count = count    # also when the attach omits it
            s.outgoing[attach.handle] = OutgoingLink(books, q.name, settled=attach.snd_settle_mode == 1)
        else:
            address = attach.target.address if isinstance(attach.target, Target) else None
            q = self.state.queue(queue_name(address))
            self._send(Attach(name=attach.name, handle=handle, role=ROLE_RECEIVER,
                              snd_settle_mode=attach.snd_settle_mode, rcv_settle_mode=0,
                              source=attach.source, target=attach.target), channel)
            books = s.books.links[handle]
            if books.delivery_count is None:       # the publisher's attach named none: 0
                books.delivery_count = 0
            link = s.incoming[attach.handle] = IncomingLink(books, q.name)
            self._grant_publisher_credit(s, link)

    def _on_detach(self, channel, detach, payload) -> None:
        s = self.sessions.get(channel)
        if s is None:
            return
        link = s.outgoing.pop(detach.handle, None) or s.incoming.pop(detach.handle, None)
        if link is not None:
            self._send(Detach(handle=link.handle, closed=detach.closed), channel)

    def _publisher_blocked(self, link: IncomingLink) -> bool:
        q = self.state.queues.get(link.queue)
        return self.faults.no_sender_credit or (q is not None and q.max_length is not None
                                                and len(q.messages) >= q.max_length
                                                and not self.cfg.reject_on_overflow)

    def _grant_publisher_credit(self, s: Session, link: IncomingLink) -> None:
        if self._publisher_blocked(link):
            link.blocked = True
            return
        link.blocked = False
        q = self.state.queues.get(link.queue)
        room = None if q is None or q.max_length is None or self.cfg.reject_on_overflow \
            or self.cfg.withdraw_on_full else q.max_length - len(q.messages)
        b = link.books
        b.link_credit = self.cfg.publisher_credit if room is None else min(self.cfg.publisher_credit, room)
        reported = serial_add(b.delivery_count, self.faults.receiver_delivery_count_offset)
        if self.faults.omit_receiver_delivery_count:
            reported = None
        self._send(self._session_flow(s, link, delivery_count=reported, link_credit=b.link_credit), s.channel)

    def _top_up_mark(self) -> int:
        """The credit left at which a publisher's credit is topped up."""
        mark = self.cfg.publisher_top_up_at
        return self.cfg.publisher_credit // 2 if mark is None else mark

    # -- transfers from the peer (publishers) --------------------------------------------------------------

    def _on_transfer(self, channel, transfer, payload) -> None:
        s = self.sessions.get(channel)
        if s is None or s.ended:
            return
        transfer_id = serial_add(s.books.next_incoming_id, -1)   # the books counted this transfer already
        limit = s.grace_limit if serial_diff(s.incoming_limit, s.grace_limit) > 0 else s.incoming_limit
        if self.faults.drop_on_window_excess and serial_diff(s.first_incoming_id, transfer_id) >= \
                self.cfg.incoming_window:
            self.closed = True       # crashes once more transfers arrived than its first window held
            return
        if serial_diff(transfer_id, limit) <= 0 and not self.faults.window_violation_tolerated:
            self._end_session(s, "amqp:session:window-violation", "transfer beyond the incoming-window")
            return
        link = s.incoming.get(transfer.handle)
        if link is None:
            self._end_session(s, "amqp:session:unattached-handle", f"transfer on unattached handle {transfer.handle}")
            return
        # the books took one credit and advanced the delivery-count: below zero, the publisher had none
        if link.books.link_credit < 0 and self.faults.drop_on_excess:
            self.closed = True
            return
        if link.books.link_credit < 0 and self.faults.detach_on_excess:
            self._send(Detach(handle=link.handle, closed=True,
                              error=Error(condition=Symbol("amqp:link:transfer-limit-exceeded"))), channel)
            s.incoming.pop(transfer.handle, None)
            return
        if not self.cfg.durable_store and _durable(payload):
            self._send(Detach(handle=link.handle, closed=True, error=Error(
                condition=Symbol("amqp:precondition-failed"), description=NON_DURABLE)), channel)
            s.incoming.pop(transfer.handle, None)
            self._end_session(s, "amqp:session:errant-link", "link detached after a refused message")
            self._close_with("amqp:session:unattached-handle", "session ended after a refused message")  # as 9.2.1
            return
        q = self.state.queue(link.queue)
        link.received += 1
        full = self.cfg.reject_on_overflow and q.max_length is not None and len(q.messages) >= q.max_length
        if not full and not (self.faults.lose_after and link.received > self.faults.lose_after):
            q.messages.append(_message_body(payload))
        if not transfer.settled:
            self._send(Disposition(role=ROLE_RECEIVER, first=transfer.delivery_id, settled=True,
                                   state=Rejected() if full else Accepted()), channel)
        if self._publisher_blocked(link):
            if self.cfg.withdraw_on_full and not link.blocked:
                # reported, not booked: transfers in flight under the earlier credit are still taken
                self._send(self._session_flow(s, link, delivery_count=link.books.delivery_count, link_credit=0,
                                              drain=True), s.channel)
            link.blocked = True
        elif link.books.link_credit <= self._top_up_mark() and not self.faults.drop_on_excess:
            self._grant_publisher_credit(s, link)
        for other in self.state.connections:
            other.pump_all()

    def _on_disposition(self, channel, disposition, payload) -> None:
        return None
