"""What the peer knows about its sessions and links, updated from every frame in and out (sans-IO).

This module owns the peer-side bookkeeping of 2.5.6 and 2.6.7: our next-outgoing-id and windows, the
other side's windows as last announced, each link's delivery-count and link-credit as the peer sees them.
The peer uses it to fill the session fields of frames a script builds (unless the script sets them) and
scripts use it for assertions. It works in both roles (client or scripted broker).

It never sends anything, never decides a verdict, and never raises on odd frames: negative cases send
wrong types and missing fields on purpose, so a value it cannot use is simply not tracked.

It is the one session and link bookkeeping of the package: the scripted peer, the fault-injecting proxy
(`conformance.faultproxy.faults`: the conversation as the broker has it) and the reference broker
(`conformance.reference.broker`) all keep their sessions and links here; serial arithmetic is
`conformance.wire.serial`'s. The flow-control model (`conformance.model`) keeps its own on purpose: it
judges what this bookkeeping helps to produce. tests/test_layers.py checks that no second copy appears.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..wire import Attach, Begin, Detach, End, Flow, Frame, Transfer, in_uint_range, serial_add
from ..wire import serial_room as _room      # never raises: odd values must not kill the reader tracking them


def tracked(value) -> int | None:
    """An int for a tracked field, or None when the frame carries something unusable there (a wrong type,
    a value outside uint): negative cases send those on purpose."""
    return int(value) if in_uint_range(value) else None


_int = tracked


@dataclass
class LinkState:
    name: str
    handle: int | None                 # ours (None until we attach)
    is_receiver: bool                  # our role on the link
    remote_handle: int | None = None
    remote_attach: Attach | None = None
    initial_delivery_count: int | None = None
    delivery_count: int | None = None  # our view (receiver: the sender's, as last known)
    link_credit: int = 0               # our view of the credit left (may go negative if the other side overran)
    remote_flow: Flow | None = None    # the other side's last flow for this link
    transfers: list = field(default_factory=list)   # transfer frames received on this link
    messages: int = 0                  # deliveries received (receiver) or sent (sender), counted at the first frame
    in_delivery: bool = False          # a multi-frame delivery is in progress
    detached_by_remote: Detach | None = None
    detached_by_us: bool = False
    extra: dict = field(default_factory=dict)   # free for a user of the bookkeeping (the fault-injecting proxy's faults)


@dataclass
class SessionState:
    channel: int                       # ours
    initial_outgoing_id: int
    next_outgoing_id: int
    incoming_window: int | None
    outgoing_window: int | None
    remote_channel: int | None = None
    remote_begin: Begin | None = None
    next_incoming_id: int | None = None
    remote_incoming_window: int | None = None   # how many more transfers the other side said it takes
    remote_outgoing_window: int | None = None
    remote_flow: Flow | None = None
    transfers_in: int = 0
    transfers_out: int = 0
    next_delivery_id: int = 0
    ended_by_remote: End | None = None
    ended_by_us: bool = False
    links: dict[int, LinkState] = field(default_factory=dict)          # by our handle
    remote_links: dict[int, LinkState] = field(default_factory=dict)   # by the other side's handle
    # by (name, the other side's role): a sender and a receiver may share a name (2.6.1)
    pending_remote_attaches: dict[tuple, tuple[int, Attach]] = field(default_factory=dict)
    extra: dict = field(default_factory=dict)   # free for a user of the bookkeeping (the fault-injecting proxy's faults)

    @property
    def remote_window_announced(self) -> int | None:
        """The incoming-window the other side announced last (its begin or latest flow), as sent."""
        last = self.remote_flow if self.remote_flow is not None else self.remote_begin
        return tracked(last.incoming_window) if last is not None else None

    def session_fields(self) -> dict:
        """The four session fields of a flow as this endpoint would send them now (2.7.4)."""
        return {"next_incoming_id": self.next_incoming_id, "incoming_window": self.incoming_window,
                "next_outgoing_id": self.next_outgoing_id, "outgoing_window": self.outgoing_window}

    def link_by_name(self, name, is_receiver: bool | None = None) -> LinkState | None:
        """Our link of that name (2.6.1: a name identifies a link per direction, so with `is_receiver` only
        the one where we have that role: a sender and a receiver may share a name)."""
        for link in self.links.values():
            if link.name == name and (is_receiver is None or link.is_receiver == is_receiver):
                return link
        return None

    def next_free_handle(self) -> int:
        used = set(self.links)
        handle = 0
        while handle in used:
            handle += 1
        return handle


class PeerState:
    """Sessions by our channel; the other side's channels mapped through begin's remote-channel."""

    def __init__(self):
        self.sessions: dict[int, SessionState] = {}
        self.by_remote_channel: dict[int, SessionState] = {}
        self.pending_remote_begins: dict[int, Begin] = {}   # begins the other side initiated, by its channel

    def session(self, channel: int) -> SessionState | None:
        return self.sessions.get(channel)

    def link(self, channel: int, handle: int) -> LinkState | None:
        s = self.sessions.get(channel)
        return s.links.get(handle) if s is not None else None

    # -- frames we send ----------------------------------------------------------------------------------

    def observe_out(self, frame: Frame) -> None:
        body = frame.body
        if isinstance(body, Begin):
            self._our_begin(frame.channel, body)
            return
        s = self.sessions.get(frame.channel)
        if s is None:
            return
        if isinstance(body, Attach):
            self._our_attach(s, body)
        elif isinstance(body, Flow):
            self._our_flow(s, body)
        elif isinstance(body, Transfer):
            self._our_transfer(s, body)
        elif isinstance(body, Detach):
            link = s.links.get(_int(body.handle))
            if link is not None:
                link.detached_by_us = True
        elif isinstance(body, End):
            s.ended_by_us = True

    def _our_begin(self, channel: int, body: Begin) -> None:
        start = _int(body.next_outgoing_id) or 0
        s = SessionState(channel, start, start, _int(body.incoming_window), _int(body.outgoing_window))
        self.sessions[channel] = s
        remote = _int(body.remote_channel)
        if remote is not None:                      # answering the other side's begin (server role)
            s.remote_channel = remote
            self.by_remote_channel[remote] = s
            theirs = self.pending_remote_begins.pop(remote, None)
            if theirs is not None:
                self._apply_remote_begin(s, theirs)

    def _our_attach(self, s: SessionState, body: Attach) -> None:
        handle = _int(body.handle)
        link = s.link_by_name(body.name, bool(body.role))
        if link is None:
            link = LinkState(body.name, handle, bool(body.role))
        link.handle = handle
        if handle is not None:
            s.links[handle] = link
        if not link.is_receiver:
            count = _int(body.initial_delivery_count)
            if count is not None:
                link.initial_delivery_count = count
                link.delivery_count = count
        pending = s.pending_remote_attaches.pop((body.name, not link.is_receiver), None)
        if pending is not None:                     # answering the other side's attach (server role)
            self._apply_remote_attach(s, link, *pending)

    def _our_flow(self, s: SessionState, body: Flow) -> None:
        if _int(body.incoming_window) is not None:
            s.incoming_window = _int(body.incoming_window)
        if _int(body.outgoing_window) is not None:
            s.outgoing_window = _int(body.outgoing_window)
        link = s.links.get(_int(body.handle))
        credit = _int(body.link_credit)
        if link is None or not link.is_receiver or credit is None:
            return
        count = _int(body.delivery_count)
        if count is None:
            count = link.initial_delivery_count
        if count is not None and link.delivery_count is not None:
            # the credit left once the sender applies this flow (2.6.7)
            link.link_credit = _room(link.delivery_count, count, credit)
        else:
            link.link_credit = credit

    def _our_transfer(self, s: SessionState, body: Transfer) -> None:
        s.transfers_out += 1
        s.next_outgoing_id = serial_add(s.next_outgoing_id, 1)
        if s.remote_incoming_window is not None:
            s.remote_incoming_window -= 1
        delivery_id = _int(body.delivery_id)
        if delivery_id is not None:
            s.next_delivery_id = serial_add(delivery_id, 1)
        link = s.links.get(_int(body.handle))
        if link is not None:
            self._count_delivery(link, body)

    @staticmethod
    def _count_delivery(link: LinkState, body: Transfer) -> None:
        """A delivery consumes one credit and advances delivery-count at its first frame."""
        if not link.in_delivery:
            link.messages += 1
            if link.delivery_count is not None:
                link.delivery_count = serial_add(link.delivery_count, 1)
            link.link_credit -= 1
        link.in_delivery = bool(body.more) and not bool(body.aborted)

    # -- frames the other side sends ---------------------------------------------------------------------

    def observe_in(self, frame: Frame) -> None:
        body = frame.body
        if body.__class__ is Transfer:          # the common case first (performance only)
            s = self.by_remote_channel.get(frame.channel)
            if s is not None:
                self._their_transfer(s, frame)
            return
        if isinstance(body, Begin):
            ours = self.sessions.get(_int(body.remote_channel)) if body.remote_channel is not None else None
            if ours is None:
                self.pending_remote_begins[frame.channel] = body
                return
            ours.remote_channel = frame.channel
            self.by_remote_channel[frame.channel] = ours
            self._apply_remote_begin(ours, body)
            return
        s = self.by_remote_channel.get(frame.channel)
        if s is None:
            return
        if isinstance(body, Attach):
            handle = _int(body.handle)
            link = s.link_by_name(body.name, not bool(body.role))      # theirs is the other end of ours
            if link is None:
                if handle is not None:
                    s.pending_remote_attaches[(body.name, bool(body.role))] = (handle, body)
                return
            if handle is not None:
                self._apply_remote_attach(s, link, handle, body)
        elif isinstance(body, Transfer):
            self._their_transfer(s, frame)
        elif isinstance(body, Flow):
            self._their_flow(s, body)
        elif isinstance(body, Detach):
            link = s.remote_links.get(_int(body.handle))
            if link is not None:
                link.detached_by_remote = body
        elif isinstance(body, End):
            s.ended_by_remote = body

    @staticmethod
    def _apply_remote_begin(s: SessionState, body: Begin) -> None:
        s.remote_begin = body
        s.next_incoming_id = _int(body.next_outgoing_id)
        window = _int(body.incoming_window)
        if window is not None:
            # their begin carries no next-incoming-id: it is implicitly our initial next-outgoing-id
            s.remote_incoming_window = _room(s.next_outgoing_id, s.initial_outgoing_id, window)
        s.remote_outgoing_window = _int(body.outgoing_window)

    @staticmethod
    def _apply_remote_attach(s: SessionState, link: LinkState, handle: int, body: Attach) -> None:
        link.remote_handle = handle
        link.remote_attach = body
        s.remote_links[handle] = link
        if link.is_receiver:
            count = _int(body.initial_delivery_count)
            if count is not None:
                link.initial_delivery_count = count
                if link.delivery_count is None:
                    link.delivery_count = count

    def _their_transfer(self, s: SessionState, frame: Frame) -> None:
        body = frame.body
        s.transfers_in += 1
        if s.next_incoming_id is not None:
            s.next_incoming_id = serial_add(s.next_incoming_id, 1)
        if s.remote_outgoing_window is not None:
            s.remote_outgoing_window -= 1
        link = s.remote_links.get(_int(body.handle))
        if link is not None:
            link.transfers.append(frame)
            self._count_delivery(link, body)

    @staticmethod
    def _their_flow(s: SessionState, body: Flow) -> None:
        s.remote_flow = body
        if _int(body.next_outgoing_id) is not None:
            s.next_incoming_id = _int(body.next_outgoing_id)
        if _int(body.outgoing_window) is not None:
            s.remote_outgoing_window = _int(body.outgoing_window)
        window = _int(body.incoming_window)
        if window is not None:
            base = _int(body.next_incoming_id)
            if base is None:
                base = s.initial_outgoing_id
            s.remote_incoming_window = _room(s.next_outgoing_id, base, window)
        link = s.remote_links.get(_int(body.handle))
        if link is None:
            return
        link.remote_flow = body
        count, credit = _int(body.delivery_count), _int(body.link_credit)
        if link.is_receiver:
            # the sender's own state; frames are ordered, so every transfer before this flow is counted in it
            if count is not None:
                link.delivery_count = count
            if credit is not None:
                link.link_credit = credit
        elif credit is not None and link.delivery_count is not None:
            # 2.6.7: link-credit(snd) := delivery-count(rcv) + link-credit(rcv) - delivery-count(snd)
            if count is None:
                count = link.initial_delivery_count
            if count is not None:
                link.link_credit = _room(link.delivery_count, count, credit)
