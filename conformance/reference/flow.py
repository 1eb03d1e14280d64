"""The reference broker's flow handling: the peer's flows (credit, drain, echo), the broker's answers, and
sending messages from the queues within link-credit and the session's window (the faults on credit,
drain and echo are computed here).

`FlowHandling` is a part of `BrokerConnection` (broker.py): its methods run on the connection's state.
"""

from __future__ import annotations

import contextlib

from ..wire import Data, Flow, Transfer, encode_message, serial_add, serial_diff

from .queues import OutgoingLink, Session, Queue


class FlowHandling:
    """Flows in and out, and sending messages (a part of BrokerConnection)."""

    # -- flow ----------------------------------------------------------------------------------------------

    def _on_flow(self, channel, flow, payload) -> None:
        s = self.sessions.get(channel)
        if s is not None and s.ended and self.faults.answer_after_session_error and flow.echo:
            self._send(self._session_flow(s), channel)
            return
        if s is None or s.ended:
            return
        # 2.5.6: the peer's session state (next-incoming-id, its windows) was taken from the flow by the books
        if flow.handle is None:
            if flow.echo and not self.faults.ignore_echo:
                extra = {"link_credit": 0} if self.faults.link_fields_in_session_flow else {}
                with self._late_if_configured():
                    self._send(self._session_flow(s, echo=self.faults.echo_with_echo, **extra), channel)
            self._pump_session(s)
            return
        if flow.handle in s.outgoing:
            self._on_receiver_flow(s, s.outgoing[flow.handle], flow)
        elif flow.handle in s.incoming:
            link = s.incoming[flow.handle]
            if flow.echo and not self.faults.ignore_echo:
                reported = serial_add(link.books.delivery_count, self.faults.receiver_delivery_count_offset)
                with self._late_if_configured():
                    self._send(self._session_flow(s, link, echo=self.faults.echo_with_echo,
                                                  delivery_count=reported, link_credit=link.books.link_credit),
                               channel)
        elif not self.faults.ignore_unattached_handle:
            self._end_session(s, "amqp:session:unattached-handle", f"flow for unattached handle {flow.handle}")
        self._pump_session(s)

    def _on_receiver_flow(self, s: Session, link: OutgoingLink, flow: Flow) -> None:
        credit = flow.link_credit or 0
        b = link.books
        before = self._credit_before.get(flow.handle, b.link_credit)
        if self.faults.end_session_on_drain and flow.drain and len(self.state.queue(link.queue).messages) < credit:
            b.link_credit = max(len(self.state.queue(link.queue).messages) - 1, 0)
            self._pump_link(s, link)
            self._end_session(s, self.cfg.drain_end_condition, "drain failed")
            return
        if self.faults.ignore_flow_without_delivery_count and flow.delivery_count is None:
            b.link_credit = before
            return
        if self.faults.ignore_stale_stop and credit == 0 and flow.delivery_count is not None \
                and serial_diff(int(flow.delivery_count), b.delivery_count) > 0:
            b.link_credit = before            # the stop crossed our transfers: "not meant for now", ignored
            self._pump_link(s, link)
            return
        # 2.6.7: link-credit(snd) := delivery-count(rcv) + link-credit(rcv) - delivery-count(snd) (an unspecified
        # delivery-count(rcv) is our attach's initial one): the books computed it from the flow; faults differ
        if self.faults.plain_arithmetic and flow.delivery_count is not None:
            b.link_credit = flow.delivery_count + credit - b.delivery_count   # no wrap at 2^32
        elif self.faults.cumulative_credit:
            b.link_credit = before + credit
        elif self.faults.stale_count_as_credit:
            b.link_credit = credit
        link.drain = bool(flow.drain)
        link.held = 1 if self.faults.drain_leaves_credit and link.drain else 0
        if self.faults.drop_resume and credit > 0 and link.was_stopped:
            b.link_credit = 0
        link.was_stopped = credit == 0
        if link.drain and self.cfg.flow_before_drain_transfers:
            self._send_link_state(s, link)
        self._pump_link(s, link)
        answered = self._finish_drain(s, link)
        if flow.echo and not answered and not self.faults.ignore_echo:
            with self._late_if_configured():
                self._send_link_state(s, link, echo=self.faults.echo_with_echo)

    def _send_link_state(self, s: Session, link: OutgoingLink, echo: bool = False) -> None:
        q = self.state.queue(link.queue)
        self._send(self._session_flow(
            s, link, echo=echo,
            delivery_count=serial_add(link.books.delivery_count, self.faults.delivery_count_offset),
            link_credit=max(link.books.link_credit, 0), available=len(q.messages), drain=link.drain), s.channel)

    def _finish_drain(self, s: Session, link: OutgoingLink) -> bool:
        """The drained flow (True: sent). None when the transfers used the credit up and the broker is one that
        sends no flow then (`BrokerConfig.drained_flow_after_transfers`)."""
        if not link.drain or self.faults.ignore_drain or link.held:
            return False
        b = link.books
        if b.link_credit <= 0 and not self.cfg.drained_flow_after_transfers:
            return False
        if b.link_credit > 0 and not self.faults.drain_without_advance:
            b.delivery_count = serial_add(b.delivery_count, b.link_credit)
            b.link_credit = 0
        if self.faults.drain_overshoot:               # one more than "until link-credit is zero"
            b.delivery_count = serial_add(b.delivery_count, 1)
        with self._late_if_configured():
            self._send_link_state(s, link)
        return True

    def _pump_session(self, s: Session) -> None:
        for link in list(s.outgoing.values()):
            before = link.books.link_credit
            self._pump_link(s, link)
            if link.drain and before != link.books.link_credit:
                self._finish_drain(s, link)

    def _pump_link(self, s: Session, link: OutgoingLink) -> None:
        q = self.state.queue(link.queue)
        extra = self.faults.extra_transfers
        while q.messages:
            window_ok = (s.books.remote_incoming_window or 0) > 0 or self.faults.ignore_incoming_window
            if not window_ok:
                break
            beyond = link.books.link_credit <= link.held
            if beyond:
                if extra <= 0:
                    break
                extra -= 1
            with self._late_if_configured() if beyond else contextlib.nullcontext():
                self._send_message(s, link, q)

    def _send_message(self, s: Session, link: OutgoingLink, q: Queue) -> None:
        """One message from `q` as transfer frame(s) on `link` (split at the peer's max-frame-size)."""
        body = q.messages.popleft()
        tag = link.next_tag.to_bytes(4, "big")
        link.next_tag += 1
        payload = encode_message(Data(body))
        settled = True if link.settled and not self.faults.unsettled_in_settled_mode else None
        chunks = [payload[i:i + self.max_payload] for i in range(0, len(payload), self.max_payload)] or [b""]
        delivery_id = s.books.next_delivery_id     # the books count transfer-ids, delivery-ids and credit
        for n, chunk in enumerate(chunks):
            first, last = n == 0, n == len(chunks) - 1
            self._send(Transfer(handle=link.handle, delivery_id=None if not first or self.faults.no_delivery_id
                                else delivery_id, delivery_tag=tag if first else None,
                                message_format=0 if first else None, settled=settled,
                                more=None if last else True), s.channel, chunk)
        s.books.next_delivery_id = serial_add(delivery_id, 1)
