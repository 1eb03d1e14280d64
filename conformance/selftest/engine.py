"""Sans-IO reference broker: queues, links and sessions with flow control per 2.5.6 and 2.6.7.

This module owns the fake broker's behaviour. It consumes bytes (`receive`) and returns the bytes to send;
it never touches sockets or clocks. `Faults` switches on one deliberate deviation at a time; each is an entry
of the fault catalogue (conformance.catalogue.faults), which names the requirement it breaks.

Its sessions and links are kept in `conformance.peer.state` (the one bookkeeping of the package, here in the
broker's role: "ours" is the broker, "remote" the client): every frame in and out is observed there, so
transfer-ids, windows, delivery-counts and credit follow the frames. The broker adds only what a broker
decides: queues, the limit it enforces on its incoming-window, and what a fault makes it compute otherwise
(its own credit, written back into the link's state).
"""

from __future__ import annotations

import collections
import contextlib
from dataclasses import dataclass, field

from ..catalogue import faults as fault_catalogue
from ..peer.state import LinkState, PeerState, SessionState
from ..wire import (
    AMQP_HEADER, SASL_HEADER, Attach, Begin, Close, Data, DecodeError, Detach, Disposition, End, Error, Flow,
    Frame, FrameDecoder, Open, ProtocolHeader, SaslInit, SaslMechanisms, SaslOutcome, Source, Symbol, Target,
    Transfer, encode_frame, encode_message, serial_add, serial_diff, Accepted, Rejected,
)
from ..wire.frames import AMQP_FRAME, SASL_FRAME

HANDLE_MAX = 1023
ROLE_SENDER = False
ROLE_RECEIVER = True


@dataclass(frozen=True)
class Faults:
    """Deliberate deviations. All off = a broker that keeps every requirement the suite checks.

    Each switch is the reference broker's side of an entry of the one fault catalogue
    (`conformance.catalogue.faults`, which names the requirement it breaks); `Faults.named("drain-stripped")`
    switches on catalogue entries by name. tests/mutants/test_fault_catalogue.py keeps the two in step."""

    @classmethod
    def named(cls, *names: str) -> "Faults":
        """The switches of the catalogue's faults `names` (KeyError: unknown, or not the reference broker's)."""
        values: dict = {}
        for name in names:
            entry = fault_catalogue.get(name)
            if not entry.reference:
                raise KeyError(f"fault {name} is not one of the reference broker's")
            values.update(entry.reference)
        return cls(**values)

    cumulative_credit: bool = False       # 2.6.7/credit-formula: link-credit added instead of set
    ignore_drain: bool = False            # 2.6.7/drain-advance: drain flag ignored
    drain_without_advance: bool = False   # 2.6.7/drain-advance: drain answered but delivery-count not advanced
    drain_overshoot: bool = False         # 2.6.7/drain-advance: drain advances delivery-count one past the limit
    ignore_echo: bool = False             # 2.7.4/echo: echo requests never answered
    echo_with_echo: bool = False          # 2.7.4/echo-no-loop: echo answered with echo=true
    delivery_count_offset: int = 0        # 2.7.4/sender-delivery-count-set: flows carry a shifted delivery-count
    stale_count_as_credit: bool = False   # 2.6.7/credit-formula: receiver's delivery-count ignored (credit = c)
    extra_transfers: int = 0              # 2.6.7/no-send-without-credit: send this many beyond credit
    ignore_incoming_window: bool = False  # 2.5.6: peer's session incoming-window ignored
    ignore_unattached_handle: bool = False  # 2.7.4/unattached-handle: flow on unknown handle ignored
    no_sender_credit: bool = False        # never grants credit to publishers
    close_on_alarm: bool = False          # alarm closes the connection instead of flow control
    window_violation_tolerated: bool = False  # broker accepts transfers beyond its incoming-window
    detach_on_excess: bool = True         # excess transfers from publisher: detach (True) or accept (False)
    omit_next_incoming_id: bool = False   # 2.7.4/next-incoming-id-set
    drop_resume: bool = False             # 2.6.10: after credit 0 then new credit, deliver nothing
    answer_after_session_error: bool = False  # 2.5.4/session-error-end: keeps answering after its end
    drop_on_window_excess: bool = False   # 2.5.4/session-error-end: drops the connection, no end frame
    next_outgoing_id_offset: int = 0      # 2.5.6/next-outgoing-id-serial: flows carry a shifted next-outgoing-id
    plain_arithmetic: bool = False        # 2.6.7/delivery-count-serial: credit computed without wrap at 2^32
    receiver_delivery_count_offset: int = 0  # 2.7.4/receiver-delivery-count: reports the publisher's count shifted
    drop_on_excess: bool = False          # 2.6.5/link-error-detach: no credit top-ups; drops the connection on excess
    ignore_handle_max: bool = False       # 2.7.2/handle-max: attaches whatever handle it gets
    omit_initial_delivery_count: bool = False  # 2.7.3/initial-delivery-count-sender
    link_fields_in_session_flow: bool = False  # 2.7.4/link-fields-need-handle: session echo carries link-credit
    ignore_flow_without_delivery_count: bool = False  # 2.6.7/unknown-delivery-count
    unsettled_in_settled_mode: bool = False   # 2.7.5/settled-mode-settled
    no_delivery_id: bool = False          # 2.7.5/delivery-id-first: first transfer of a delivery lacks it
    end_session_on_drain: bool = False    # 2.6.7/drain-advance: a drain it cannot fill: all but one message, then
                                          # end(error=amqp:internal-error) instead of the drained flow (RabbitMQ 3.10)
    omit_receiver_delivery_count: bool = False  # 2.7.4/receiver-delivery-count: publisher flows lack delivery-count
    drain_leaves_credit: bool = False     # 2.6.7/drain-advance: a drain answered with one message fewer than the
                                          # credit allows (though it has them), then nothing: 1 credit left undrained
    lose_after: int = 0                   # accepts, then loses every transfer beyond the first N of a publisher link


@dataclass
class BrokerConfig:
    initial_delivery_count: int = 0xFFFFFFFB   # like RabbitMQ 4: wraps within a few messages
    next_outgoing_id: int = 0xFFFFFFFC
    incoming_window: int = 400
    outgoing_window: int = 0xFFFFFFFF
    publisher_credit: int = 100
    max_frame_size: int = 65536
    channel_max: int = 63
    product: str = "amqp-conformance-reference-broker"
    version: str = "1.0"
    require_sasl: bool = True
    # Not a fault (the spec orders frames per session, not a broker's work across links and queues): answers
    # to echo and drain, and transfers beyond credit (the extra_transfers fault), are written only after the
    # broker has handled this many more frames of the peer's, as by a broker whose queues run apart from its
    # sessions (RabbitMQ): they come after its answer to a later request (a barrier). 0: at once.
    late_by_frames: int = 0
    # Not judged by any case (session lifecycle is not the suite's subject): False leaves the peer's end of a
    # session unanswered, as RabbitMQ 3.10 sometimes does for the begin/end barrier's session.
    answer_ends: bool = True
    # Not a fault either: a queue at its length limit rejects the transfers beyond it (RabbitMQ's reject-publish
    # overflow) instead of withholding the publisher's credit.
    reject_on_overflow: bool = False
    # Not a fault: False sends no flow after a drain whose credit the transfers used up (Artemis, qpid-proton-c);
    # the transfers carry the new delivery-count, and a drained flow is owed only when credit is left (2.6.7).
    drained_flow_after_transfers: bool = True
    # Not a fault: True answers a drain with its link state (drain=true, the credit it has) before the transfers
    # for it, as RabbitMQ 3.10 does; that flow is not the one after the transfers.
    flow_before_drain_transfers: bool = False
    # Not a fault either: a queue at its length limit withdraws the publisher's credit with
    # flow(link-credit=0, drain=true) once it is full (Qpid Broker-J's producer flow control) instead of
    # granting no more than the room left.
    withdraw_on_full: bool = False
    # Configurations real brokers are run with (not faults: each refuses what it does not allow, with an error
    # a case reads as a refusal by configuration). A non-durable store refuses a durable message as Qpid
    # Broker-J 9.2.1 with a Memory virtual host does: detach(amqp:precondition-failed, NON_DURABLE), then
    # end(amqp:session:errant-link) and close(amqp:session:unattached-handle).
    durable_store: bool = True
    # False: an attach to an address with no queue is refused with detach(amqp:not-found) (no auto-creation).
    create_on_attach: bool = True
    # What SASL offers: ("SCRAM-SHA-256", "CRAM-MD5") is a broker that offers PLAIN over TLS only.
    sasl_mechanisms: tuple = ("ANONYMOUS", "PLAIN")
    # The condition the end_session_on_drain fault ends the session with (a refusal condition: the spec
    # still forbids ending the session while the drain is unanswered).
    drain_end_condition: str = "amqp:internal-error"


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


class BrokerConnection:
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

    # -- I/O boundary ------------------------------------------------------------------------------------

    def receive(self, data: bytes) -> bytes:
        try:
            items = self.decoder.feed(data)
        except DecodeError as exc:
            self._close_with("amqp:decode-error", str(exc))
            return self.take()
        for item in items:
            if self.closed:
                break
            if isinstance(item, ProtocolHeader):
                self._on_header(item)
            else:
                self._on_frame(item)
        return self.take()

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
        window = 0 if self.state.alarm else self.cfg.incoming_window
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
        elif link.books.link_credit <= self.cfg.publisher_credit // 2 and not self.faults.drop_on_excess:
            self._grant_publisher_credit(s, link)
        for other in self.state.connections:
            other.pump_all()

    def _on_disposition(self, channel, disposition, payload) -> None:
        return None

    # -- broker-wide events --------------------------------------------------------------------------------

    def pump_all(self) -> None:
        for s in self.sessions.values():
            if not s.ended:
                self._pump_session(s)

    def set_alarm(self, on: bool) -> None:
        if on and self.faults.close_on_alarm:
            self._close_with("amqp:resource-limit-exceeded", "alarm")
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
