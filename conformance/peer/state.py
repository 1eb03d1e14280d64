"""What the peer knows about its sessions and links, updated from every frame in and out (sans-IO).

This module owns the peer-side bookkeeping of 2.5.6 and 2.6.7: our next-outgoing-id and windows, the
broker's windows as last announced, each link's delivery-count and link-credit as the peer sees them. It
is used to fill session fields of frames a script builds (unless the script sets them) and for
assertions. It never sends anything and never decides a verdict.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..wire import Attach, Begin, Detach, End, Flow, Frame, Transfer, serial_add, serial_diff


@dataclass
class LinkState:
    name: str
    handle: int                       # ours
    is_receiver: bool                 # our role on the link
    remote_handle: int | None = None
    remote_attach: Attach | None = None
    initial_delivery_count: int | None = None
    delivery_count: int | None = None  # our view (receiver: last known of the sender)
    link_credit: int = 0               # our view of the credit left
    remote_flow: Flow | None = None    # the broker's last flow for this link
    transfers: list = field(default_factory=list)   # transfer frames received on this link
    messages: int = 0                  # complete messages received (or sent, for a sender link)
    detached_by_remote: Detach | None = None
    detached_by_us: bool = False


@dataclass
class SessionState:
    channel: int                       # ours
    initial_outgoing_id: int
    next_outgoing_id: int
    incoming_window: int
    outgoing_window: int
    remote_channel: int | None = None
    remote_begin: Begin | None = None
    next_incoming_id: int | None = None
    remote_incoming_window: int | None = None
    remote_outgoing_window: int | None = None
    remote_flow: Flow | None = None
    transfers_in: int = 0
    next_delivery_id: int = 0
    ended_by_remote: End | None = None
    ended_by_us: bool = False
    links: dict[int, LinkState] = field(default_factory=dict)          # by our handle
    remote_links: dict[int, LinkState] = field(default_factory=dict)   # by the broker's handle

    def session_fields(self) -> dict:
        """The four session fields of a flow as this endpoint would send them now (2.7.4)."""
        return {"next_incoming_id": self.next_incoming_id, "incoming_window": self.incoming_window,
                "next_outgoing_id": self.next_outgoing_id, "outgoing_window": self.outgoing_window}

    def link_by_name(self, name: str) -> LinkState | None:
        for link in self.links.values():
            if link.name == name:
                return link
        return None


class PeerState:
    """Sessions by our channel; the broker's channels mapped through begin's remote-channel."""

    def __init__(self):
        self.sessions: dict[int, SessionState] = {}
        self.by_remote_channel: dict[int, SessionState] = {}

    # -- frames we send ----------------------------------------------------------------------------------

    def observe_out(self, frame: Frame) -> None:
        body = frame.body
        if isinstance(body, Begin):
            s = SessionState(frame.channel, int(body.next_outgoing_id), int(body.next_outgoing_id),
                             int(body.incoming_window), int(body.outgoing_window))
            self.sessions[frame.channel] = s
            if body.remote_channel is not None:      # answering the broker's begin (server role)
                s.remote_channel = int(body.remote_channel)
                self.by_remote_channel[s.remote_channel] = s
            return
        s = self.sessions.get(frame.channel)
        if s is None:
            return
        if isinstance(body, Attach):
            link = s.link_by_name(body.name)
            if link is None:
                link = LinkState(body.name, int(body.handle), bool(body.role))
                s.links[link.handle] = link
            if not link.is_receiver and body.initial_delivery_count is not None:
                link.initial_delivery_count = int(body.initial_delivery_count)
                link.delivery_count = link.initial_delivery_count
        elif isinstance(body, Flow):
            s.incoming_window = int(body.incoming_window)
            s.outgoing_window = int(body.outgoing_window)
            link = s.links.get(body.handle) if body.handle is not None else None
            if link is not None and link.is_receiver and body.link_credit is not None:
                count = body.delivery_count if body.delivery_count is not None else link.initial_delivery_count
                if count is not None and link.delivery_count is not None:
                    # the credit left once the sender applies our flow
                    link.link_credit = serial_diff(link.delivery_count, serial_add(int(count), int(body.link_credit)))
                else:
                    link.link_credit = int(body.link_credit)
        elif isinstance(body, Transfer):
            s.next_outgoing_id = serial_add(s.next_outgoing_id, 1)
            if s.remote_incoming_window is not None:
                s.remote_incoming_window -= 1
            if body.delivery_id is not None:
                s.next_delivery_id = serial_add(int(body.delivery_id), 1)
            link = s.links.get(body.handle)
            if link is not None and not body.more:
                link.messages += 1
                if link.delivery_count is not None:
                    link.delivery_count = serial_add(link.delivery_count, 1)
                link.link_credit -= 1
        elif isinstance(body, Detach):
            link = s.links.get(body.handle)
            if link is not None:
                link.detached_by_us = True
        elif isinstance(body, End):
            s.ended_by_us = True

    # -- frames the broker sends -----------------------------------------------------------------------

    def observe_in(self, frame: Frame) -> None:
        body = frame.body
        if isinstance(body, Begin):
            s = self.sessions.get(body.remote_channel) if body.remote_channel is not None else None
            if s is None:
                return
            s.remote_channel = frame.channel
            s.remote_begin = body
            s.next_incoming_id = int(body.next_outgoing_id)
            s.remote_incoming_window = serial_diff(s.next_outgoing_id,
                                                   serial_add(s.initial_outgoing_id, int(body.incoming_window)))
            s.remote_outgoing_window = int(body.outgoing_window)
            self.by_remote_channel[frame.channel] = s
            return
        s = self.by_remote_channel.get(frame.channel)
        if s is None:
            return
        if isinstance(body, Attach):
            link = s.link_by_name(body.name)
            if link is None:
                return
            link.remote_handle = int(body.handle)
            link.remote_attach = body
            s.remote_links[link.remote_handle] = link
            if link.is_receiver and body.initial_delivery_count is not None:
                link.initial_delivery_count = int(body.initial_delivery_count)
                if link.delivery_count is None:
                    link.delivery_count = link.initial_delivery_count
        elif isinstance(body, Transfer):
            s.transfers_in += 1
            if s.next_incoming_id is not None:
                s.next_incoming_id = serial_add(s.next_incoming_id, 1)
            if s.remote_outgoing_window is not None:
                s.remote_outgoing_window -= 1
            link = s.remote_links.get(body.handle)
            if link is not None:
                link.transfers.append(frame)
                if not body.more:
                    link.messages += 1
                    if link.delivery_count is not None:
                        link.delivery_count = serial_add(link.delivery_count, 1)
                    link.link_credit -= 1
        elif isinstance(body, Flow):
            s.remote_flow = body
            if body.next_outgoing_id is not None:
                s.next_incoming_id = int(body.next_outgoing_id)
            s.remote_outgoing_window = int(body.outgoing_window)
            base = int(body.next_incoming_id) if body.next_incoming_id is not None else s.initial_outgoing_id
            s.remote_incoming_window = serial_diff(s.next_outgoing_id, serial_add(base, int(body.incoming_window)))
            link = s.remote_links.get(body.handle) if body.handle is not None else None
            if link is not None:
                link.remote_flow = body
                if link.is_receiver and body.delivery_count is not None:
                    # the sender's state: frames are ordered, so every transfer before this flow is counted
                    link.delivery_count = int(body.delivery_count)
                    if body.link_credit is not None:
                        link.link_credit = int(body.link_credit)
                if not link.is_receiver and body.link_credit is not None and link.delivery_count is not None:
                    # 2.6.7: link-credit(snd) := delivery-count(rcv) + link-credit(rcv) - delivery-count(snd)
                    rcv_count = int(body.delivery_count) if body.delivery_count is not None \
                        else link.initial_delivery_count
                    link.link_credit = serial_diff(link.delivery_count, serial_add(rcv_count, int(body.link_credit)))
        elif isinstance(body, Detach):
            link = s.remote_links.get(body.handle)
            if link is not None:
                link.detached_by_remote = body
        elif isinstance(body, End):
            s.ended_by_remote = body
