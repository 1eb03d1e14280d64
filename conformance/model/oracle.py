"""The flow-control oracle: fed a connection's frames in order, it names every sentence the broker breaks.

This module owns judging a transcript against 2.5.6, 2.6.7 and 2.7.4. Direction "out" is a frame our peer
sent, "in" one the broker sent. It never does I/O and never sees clocks.

In-flight rule (conservative: it never blames the broker for a race it could not see). When our peer
lowers a link's delivery-limit, transfers the broker sent before it processed our flow are legal
(2.6.7: "If the link-credit is reduced by the receiver when transfers are in-flight..."). The oracle cannot
see when the broker processed our flow, so a transfer is judged against the highest delivery-limit our
peer announced since the broker last proved it saw the latest one — by sending a flow for that link
whose delivery-count + link-credit equals our latest delivery-limit. Session windows are judged the same
way against the highest limit we announced.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .. import catalogue
from ..wire import Attach, Begin, Detach, End, Flow, Transfer
from ..wire.serial import serial_add, serial_diff
from .endpoints import LinkEndpoint, SessionEndpoint


@dataclass(frozen=True)
class Violation:
    requirement_id: str
    section: str
    level: str
    sentence: str
    frame_index: int
    detail: str


def _violation(rid: str, index: int, detail: str) -> Violation:
    req = catalogue.get(rid)
    return Violation(rid, req.section, req.level, req.text, index, detail)


def _max_serial(values):
    best = None
    for v in values:
        if best is None or serial_diff(best, v) > 0:
            best = v
    return best


@dataclass
class _Link:
    name: str
    our_handle: int | None = None
    broker_handle: int | None = None
    peer_is_receiver: bool = True
    endpoint: LinkEndpoint | None = None          # our peer's endpoint
    limits: list = field(default_factory=list)    # delivery-limits we announced, latest last (receiver links)
    messages_started: int = 0
    in_message: bool = False


@dataclass
class _Session:
    our_channel: int
    broker_channel: int | None = None
    ours: SessionEndpoint | None = None
    incoming_limits: list = field(default_factory=list)   # transfer-id limits we announced
    links_by_name: dict = field(default_factory=dict)
    links_by_ours: dict = field(default_factory=dict)
    links_by_broker: dict = field(default_factory=dict)
    echo_requested: bool = False


class FlowOracle:
    def __init__(self):
        self.sessions: dict[int, _Session] = {}
        self.by_broker_channel: dict[int, _Session] = {}
        self.index = -1

    # -- queries ---------------------------------------------------------------------------------------

    def broker_may_send(self, our_channel: int, our_handle: int) -> int:
        """Transfers the broker may still send on our receiver link: link credit and our window together."""
        s = self.sessions[our_channel]
        link = s.links_by_ours[our_handle]
        credit = link.endpoint.link_credit
        window = serial_diff(s.ours.next_incoming_id, s.incoming_limits[-1]) if s.incoming_limits else credit
        return max(min(credit, window), 0)

    # -- observing -------------------------------------------------------------------------------------

    def observe(self, direction: str, frame) -> list[Violation]:
        self.index += 1
        body = getattr(frame, "body", None)
        if body is None:
            return []
        if direction == "out":
            self._out(frame.channel, body)
            return []
        return self._in(frame.channel, body)

    def _announce_window(self, s: _Session) -> None:
        if s.ours.next_incoming_id is not None:
            s.incoming_limits.append(serial_add(s.ours.next_incoming_id, s.ours.incoming_window))

    def _out(self, channel: int, body) -> None:
        if isinstance(body, Begin):
            s = _Session(channel, ours=SessionEndpoint.begin(int(body.next_outgoing_id), int(body.incoming_window),
                                                             int(body.outgoing_window)))
            self.sessions[channel] = s
            return
        s = self.sessions.get(channel)
        if s is None:
            return
        if isinstance(body, Attach):
            link = s.links_by_name.get(body.name) or _Link(body.name)
            link.our_handle = int(body.handle)
            link.peer_is_receiver = bool(body.role)
            if link.endpoint is None:
                link.endpoint = LinkEndpoint.receiver() if body.role else LinkEndpoint.sender(
                    int(body.initial_delivery_count or 0))
            s.links_by_name[body.name] = link
            s.links_by_ours[link.our_handle] = link
        elif isinstance(body, Flow):
            s.ours.incoming_window = int(body.incoming_window)
            s.ours.outgoing_window = int(body.outgoing_window)
            self._announce_window(s)
            s.echo_requested = s.echo_requested or bool(body.echo)
            link = s.links_by_ours.get(body.handle) if body.handle is not None else None
            if link is not None and link.peer_is_receiver and body.link_credit is not None:
                ep = link.endpoint
                base = body.delivery_count if body.delivery_count is not None else ep.initial_delivery_count
                if base is not None:
                    link.limits.append(serial_add(int(base), int(body.link_credit)))
                    if ep.delivery_count is not None:
                        ep.link_credit = serial_diff(ep.delivery_count, link.limits[-1])
                ep.drain = bool(body.drain)
        elif isinstance(body, Transfer):
            s.ours.on_send_transfer()
            link = s.links_by_ours.get(body.handle)
            if link is not None and not link.peer_is_receiver and not body.more:
                link.endpoint.on_send()

    def _in(self, channel: int, body) -> list[Violation]:
        out: list[Violation] = []
        if isinstance(body, Begin):
            s = self.sessions.get(body.remote_channel) if body.remote_channel is not None else None
            if s is not None:
                s.broker_channel = channel
                self.by_broker_channel[channel] = s
                s.ours.on_remote_begin(int(body.next_outgoing_id), int(body.incoming_window),
                                       int(body.outgoing_window))
                self._announce_window(s)
            return out
        s = self.by_broker_channel.get(channel)
        if s is None:
            return out
        if isinstance(body, Attach):
            link = s.links_by_name.get(body.name)
            if link is not None:
                link.broker_handle = int(body.handle)
                s.links_by_broker[link.broker_handle] = link
                if link.peer_is_receiver and body.initial_delivery_count is not None:
                    link.endpoint.on_sender_attach(int(body.initial_delivery_count))
        elif isinstance(body, Transfer):
            out += self._broker_transfer(s, body)
        elif isinstance(body, Flow):
            out += self._broker_flow(s, body)
        elif isinstance(body, (Detach, End)):
            pass
        return out

    def _broker_transfer(self, s: _Session, body: Transfer) -> list[Violation]:
        out = []
        if s.incoming_limits and s.ours.next_incoming_id is not None:
            limit = _max_serial(s.incoming_limits)
            if serial_diff(s.ours.next_incoming_id, limit) <= 0:
                out.append(_violation("2.5.6/remote-incoming-window-decrement", self.index,
                                      f"transfer-id {s.ours.next_incoming_id:#x} beyond our incoming-window "
                                      f"(limit {limit:#x})"))
        s.ours.on_receive_transfer()
        link = s.links_by_broker.get(body.handle)
        if link is None or not link.peer_is_receiver:
            return out
        ep = link.endpoint
        if not link.in_message:
            # a new message: it needs credit
            if ep.delivery_count is not None:
                limit = _max_serial(link.limits) if link.limits else ep.delivery_count
                if serial_diff(ep.delivery_count, limit) <= 0:
                    out.append(_violation("2.6.7/no-send-without-credit", self.index,
                                          f"transfer at delivery-count {ep.delivery_count:#x} with delivery-limit "
                                          f"{limit:#x}"))
            link.messages_started += 1
        link.in_message = bool(body.more)
        if not body.more:
            ep.on_receive()
        return out

    def _broker_flow(self, s: _Session, body: Flow) -> list[Violation]:
        out = []
        if body.next_incoming_id is None:
            out.append(_violation("2.7.4/next-incoming-id-set", self.index,
                                  "the broker's flow omits next-incoming-id after our begin"))
        if s.echo_requested and body.echo:
            out.append(_violation("2.7.4/echo-no-loop", self.index, "the broker answered an echo with echo=true"))
        s.echo_requested = False
        if body.handle is None:
            present = [n for n in ("delivery_count", "link_credit", "available", "properties")
                       if getattr(body, n) is not None] + (["drain"] if body.drain else [])
            if present:
                out.append(_violation("2.7.4/link-fields-need-handle", self.index,
                                      "session-only flow carries " + ", ".join(present)))
            return out
        link = s.links_by_broker.get(body.handle)
        if link is None:
            return out
        ep = link.endpoint
        if link.peer_is_receiver:
            if body.delivery_count is None:
                out.append(_violation("2.7.4/sender-delivery-count-set", self.index,
                                      "the broker's flow as sender has no delivery-count"))
                return out
            dc = int(body.delivery_count)
            if ep.delivery_count is not None and not link.in_message and serial_diff(ep.delivery_count, dc) < 0:
                out.append(_violation("2.7.4/sender-delivery-count-set", self.index,
                                      f"delivery-count {dc:#x} is behind the {ep.delivery_count:#x} its transfers "
                                      "reached"))
            limit = _max_serial(link.limits) if link.limits else ep.delivery_count
            credit = int(body.link_credit) if body.link_credit is not None else 0
            if limit is not None and serial_diff(serial_add(dc, credit), limit) < 0:
                out.append(_violation("2.6.7/credit-formula", self.index,
                                      f"delivery-count {dc:#x} + link-credit {credit} exceeds the delivery-limit "
                                      f"{limit:#x} we set"))
            if link.limits and serial_add(dc, credit) == link.limits[-1]:
                link.limits = [link.limits[-1]]          # the broker showed it applied our latest flow
            ep.on_sender_flow(dc, credit, int(body.available) if body.available is not None else None)
        else:
            if body.delivery_count is not None and ep.delivery_count is not None:
                dc = int(body.delivery_count)
                if serial_diff(dc, ep.delivery_count) < 0 or serial_diff(ep.initial_delivery_count, dc) < 0:
                    out.append(_violation("2.7.4/receiver-delivery-count", self.index,
                                          f"delivery-count {dc:#x} is not a value our sender has had "
                                          f"({ep.initial_delivery_count:#x}..{ep.delivery_count:#x})"))
            ep.on_receiver_flow(int(body.delivery_count) if body.delivery_count is not None else None,
                                int(body.link_credit) if body.link_credit is not None else None, body.drain)
        return out
