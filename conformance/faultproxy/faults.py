"""The fault-injecting proxy's protocol faults: sans-IO frame rewriting, one requirement broken per fault.

This module owns what the proxy does to AMQP frames (never sockets, threads or clocks). A `Mutation` is
the per-connection state machine: `from_peer(frame)` and `from_broker(frame)` take one decoded frame and
return an `Out` (frames for the broker, frames for the peer, or `drop` = cut the connection). The base
class forwards every frame unchanged; each subclass breaks exactly one requirement of
`conformance/catalogue/requirements.toml` (its `requirement`) and keeps every other frame of the
conversation consistent on both sides: when a fault injects transfers, later delivery-ids, transfer-ids
(next-outgoing-id / next-incoming-id), delivery-counts and disposition ranges are renumbered so that the
peer and the broker each see a valid conversation.

`FAULTS` maps the fault names (`--fault NAME`) to their classes; the names, the requirement each breaks and
its one-line summary are entries of the one fault catalogue (`conformance.catalogue.faults`), which the
reference broker's faults come from too. Where a requirement is quoted, the spec text (2.5.6, 2.6.7, 2.7.4)
is in the repository's `spec/core-flow-control.md`.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from ..catalogue import faults as fault_catalogue
from ..peer.state import LinkState, PeerState, SessionState, tracked
from ..wire import Attach, Begin, Disposition, Flow, Frame, Transfer, serial_add, serial_diff, serial_lt
from ..wire.serial import MASK


@dataclass
class Out:
    """What one incoming frame turns into."""

    to_broker: list = field(default_factory=list)
    to_peer: list = field(default_factory=list)
    drop: bool = False      # close both sockets instead of forwarding anything more


# -- bookkeeping: the peer's own (conformance.peer.state) ---------------------------------------------------
# The proxy keeps the conversation as the broker has it: the broker's frames as it sent them ("in") and the
# frames the broker received, as forwarded ("out"), in a PeerState seen from the peer's side. So `link_credit`
# and `delivery_count` of a link where the broker sends are the broker's own, whatever a fault rewrote.

_uint = tracked


# -- the faults -------------------------------------------------------------------------------------------

class Mutation:
    """No fault: every frame forwarded unchanged (the proxy still decodes and re-encodes it)."""

    name = "none"
    requirement: str | None = None       # set from the fault catalogue for each fault below
    summary = "no fault: every frame decoded and re-encoded unchanged"

    def __init__(self):
        self.state = PeerState()

    def from_peer(self, frame: Frame) -> Out:
        s = self.state.sessions.get(frame.channel)
        handle = _uint(getattr(frame.body, "handle", None))
        link = s.links.get(handle) if s is not None and handle is not None else None
        out = self.peer_frame(frame, s, link)
        for forwarded in out.to_broker:          # what the broker receives
            self.state.observe_out(forwarded)
        return out

    def from_broker(self, frame: Frame) -> Out:
        s = self.state.by_remote_channel.get(frame.channel)
        handle = _uint(getattr(frame.body, "handle", None))
        link = s.remote_links.get(handle) if s is not None and handle is not None else None
        out = self.broker_frame(frame, s, link)
        self.state.observe_in(frame)             # what the broker sent
        return out

    # hooks: s / link are the session and link the frame belongs to (None when unknown), state before it;
    # `link.is_receiver`: the peer receives on the link (the broker sends)
    def peer_frame(self, frame: Frame, s: SessionState | None, link: LinkState | None) -> Out:
        return Out(to_broker=[frame])

    def broker_frame(self, frame: Frame, s: SessionState | None, link: LinkState | None) -> Out:
        return Out(to_peer=[frame])


def _with(frame: Frame, **changes) -> Frame:
    """A copy of `frame` with body fields changed (the original is left alone)."""
    return Frame(frame.channel, replace(frame.body, **changes), frame.payload, frame.frame_type)


class CumulativeCredit(Mutation):
    """The peer's link-credit is added to the credit the broker still has instead of replacing it: each
    flow the peer sends on a receiving link reaches the broker as flow(delivery-count = the count the proxy
    saw, link-credit = credit left + the peer's credit)."""

    name = "cumulative-credit"

    def peer_frame(self, frame, s, link):
        body = frame.body
        if (isinstance(body, Flow) and link is not None and link.is_receiver
                and _uint(body.link_credit) is not None and link.delivery_count is not None):
            left = max(link.link_credit, 0)     # the broker's credit left (the forwarded flow sets it to the sum)
            total = min(left + int(body.link_credit), MASK)
            return Out(to_broker=[_with(frame, delivery_count=link.delivery_count, link_credit=total)])
        return Out(to_broker=[frame])


class DrainStripped(Mutation):
    """The drain flag of the peer's flows never reaches the broker."""

    name = "drain-stripped"

    def peer_frame(self, frame, s, link):
        if isinstance(frame.body, Flow) and frame.body.drain:
            return Out(to_broker=[_with(frame, drain=None)])
        return Out(to_broker=[frame])


class EchoStripped(Mutation):
    """The echo flag of the peer's flows never reaches the broker, so its state is never sent back."""

    name = "echo-stripped"

    def peer_frame(self, frame, s, link):
        if isinstance(frame.body, Flow) and frame.body.echo:
            return Out(to_broker=[_with(frame, echo=None)])
        return Out(to_broker=[frame])


class DeliveryCountShifted(Mutation):
    """The broker's flows on links where it is the sender carry delivery-count + 1. Once the peer has seen
    a shifted count, its own flows on that link are shifted back, so the broker keeps computing the credit
    the peer meant (only the reported count is wrong)."""

    name = "delivery-count-shifted"
    SHIFT = 1

    def broker_frame(self, frame, s, link):
        body = frame.body
        if isinstance(body, Flow) and link is not None and link.is_receiver and \
                _uint(body.delivery_count) is not None:
            link.extra["shifted"] = True
            return Out(to_peer=[_with(frame, delivery_count=serial_add(int(body.delivery_count), self.SHIFT))])
        return Out(to_peer=[frame])

    def peer_frame(self, frame, s, link):
        body = frame.body
        if isinstance(body, Flow) and link is not None and link.extra.get("shifted") and \
                _uint(body.delivery_count) is not None:
            return Out(to_broker=[_with(frame, delivery_count=serial_add(int(body.delivery_count), -self.SHIFT))])
        return Out(to_broker=[frame])


class IncomingWindowRaised(Mutation):
    """The peer's session incoming-window (in begin and flow) reaches the broker raised by RAISE, so a
    broker that honours the window it was told still sends more transfer frames than the peer allowed."""

    name = "incoming-window-raised"
    RAISE = 10000

    def peer_frame(self, frame, s, link):
        body = frame.body
        if isinstance(body, (Begin, Flow)) and _uint(body.incoming_window) is not None:
            return Out(to_broker=[_with(frame, incoming_window=min(int(body.incoming_window) + self.RAISE, MASK))])
        return Out(to_broker=[frame])


class AlarmDropsConnection(Mutation):
    """When the broker closes its session incoming-window (a flow with incoming-window 0 after a non-zero
    one: how RabbitMQ throttles publishers during a resource alarm), the proxy drops the connection instead
    of forwarding the flow: throttling by a dropped connection rather than by flow control."""

    name = "alarm-drops-connection"

    def broker_frame(self, frame, s, link):
        body = frame.body
        if isinstance(body, Flow) and s is not None and _uint(body.incoming_window) == 0 \
                and (s.remote_window_announced or 0) > 0:
            return Out(drop=True)
        return Out(to_peer=[frame])


class TransferBeyondCredit(Mutation):
    """After the broker used the last credit of the peer's latest flow on a link, the proxy sends the peer
    one more transfer: a copy of the message just delivered, with the next delivery-id and a new
    delivery-tag. The same happens after a broker flow reporting link-credit 0 (drain answered, echo after
    a stop) when a message was delivered on the link before. At most one extra delivery per flow the peer
    sends, so the peer sees the sender exceed the delivery-limit.

    Renumbering keeps both sides consistent: broker -> peer, later delivery-ids, next-outgoing-id and the
    link's delivery-count are shifted by what was injected; peer -> broker, next-incoming-id and
    delivery-count are shifted back, and dispositions lose the injected ids (ranges are split)."""

    name = "transfer-beyond-credit"

    # session data: id_shift, frame_shift, injected_p (peer-view ids), dup_after_b (broker ids duplicated),
    #               next_p (next peer-view delivery-id)
    # link data:    count_shift, dc_p (peer-view delivery-count), limit_p, armed, current, last_message

    @staticmethod
    def _sdata(s: SessionState) -> dict:
        d = s.extra
        if not d:
            d.update(id_shift=0, frame_shift=0, injected_p=[], dup_after_b=[], next_p=None)
        return d

    @staticmethod
    def _ldata(link: LinkState) -> dict:
        d = link.extra
        if not d:
            d.update(count_shift=0, dc_p=None, limit_p=None, pending_credit=None, armed=False, current=[],
                     last_message=None, last_b=None)
        return d

    # -- broker -> peer ------------------------------------------------------------------------------------

    def broker_frame(self, frame, s, link):
        body = frame.body
        if s is None:
            return Out(to_peer=[frame])
        sd = self._sdata(s)
        if isinstance(body, Attach) and link is None:
            named = s.link_by_name(body.name, not bool(body.role))     # the peer's end of this link
            if named is not None and named.is_receiver:
                ld = self._ldata(named)
                ld["dc_p"] = _uint(body.initial_delivery_count)
                if ld["pending_credit"] is not None and ld["dc_p"] is not None:
                    ld["limit_p"] = serial_add(ld["dc_p"], ld["pending_credit"])
            return Out(to_peer=[frame])
        if isinstance(body, Transfer):
            changes = {}
            b_id = _uint(body.delivery_id)
            if b_id is not None:
                p_id = serial_add(b_id, sd["id_shift"])
                sd["next_p"] = serial_add(p_id, 1)
                if sd["id_shift"]:
                    changes["delivery_id"] = p_id
            mapped = _with(frame, **changes) if changes else frame
            out = Out(to_peer=[mapped])
            if link is not None and link.is_receiver:
                ld = self._ldata(link)
                if not link.in_delivery:
                    ld["current"] = []
                    ld["last_b"] = b_id
                    if ld["dc_p"] is not None:
                        ld["dc_p"] = serial_add(ld["dc_p"], 1)
                ld["current"].append(frame)
                done = not (bool(body.more) and not bool(body.aborted))
                if done:
                    ld["last_message"] = ld["current"]
                    if ld["armed"] and ld["limit_p"] is not None and ld["dc_p"] is not None \
                            and serial_diff(ld["limit_p"], ld["dc_p"]) >= 0:
                        out.to_peer += self._inject(s, link)
            return out
        if isinstance(body, Flow):
            changes = {}
            if sd["frame_shift"] and _uint(body.next_outgoing_id) is not None:
                changes["next_outgoing_id"] = serial_add(int(body.next_outgoing_id), sd["frame_shift"])
            inject = []
            if link is not None and link.is_receiver:
                ld = self._ldata(link)
                if _uint(body.delivery_count) is not None:
                    dc_p = serial_add(int(body.delivery_count), ld["count_shift"])
                    ld["dc_p"] = dc_p
                    if ld["count_shift"]:
                        changes["delivery_count"] = dc_p
                if _uint(body.link_credit) == 0 and ld["armed"] and ld["last_message"] and not link.in_delivery:
                    inject = True
            out = Out(to_peer=[_with(frame, **changes) if changes else frame])
            if inject:
                out.to_peer += self._inject(s, link)
            return out
        if isinstance(body, Disposition) and body.role is False:     # the broker settling its own deliveries
            changes = {"first": self._b_to_p(sd, int(body.first))}
            if _uint(body.last) is not None:
                changes["last"] = self._b_to_p(sd, int(body.last))
            return Out(to_peer=[_with(frame, **changes)] if sd["id_shift"] else [frame])
        return Out(to_peer=[frame])

    def _inject(self, s: SessionState, link: LinkState) -> list:
        sd, ld = self._sdata(s), self._ldata(link)
        if sd["next_p"] is None:
            return []
        p_id = sd["next_p"]
        frames = []
        for i, original in enumerate(ld["last_message"]):
            changes = {"delivery_id": p_id if i == 0 or original.body.delivery_id is not None else None}
            if i == 0:
                tag = bytes(original.body.delivery_tag or b"")
                changes["delivery_tag"] = (tag + b"\xfe") if len(tag) < 32 else tag[:31] + bytes([tag[31] ^ 0xFF])
            frames.append(_with(original, **changes))
        sd["injected_p"].append(p_id)
        sd["dup_after_b"].append(ld["last_b"])
        sd["id_shift"] += 1
        sd["frame_shift"] += len(frames)
        sd["next_p"] = serial_add(p_id, 1)
        ld["count_shift"] += 1
        if ld["dc_p"] is not None:
            ld["dc_p"] = serial_add(ld["dc_p"], 1)
        ld["armed"] = False
        return frames

    @staticmethod
    def _b_to_p(sd: dict, b_id: int) -> int:
        before = sum(1 for x in sd["dup_after_b"] if x is not None and serial_lt(x, b_id))
        return serial_add(b_id, before)

    # -- peer -> broker ------------------------------------------------------------------------------------

    def peer_frame(self, frame, s, link):
        body = frame.body
        if s is None:
            return Out(to_broker=[frame])
        sd = self._sdata(s)
        if isinstance(body, Flow):
            changes = {}
            if sd["frame_shift"] and _uint(body.next_incoming_id) is not None:
                changes["next_incoming_id"] = serial_add(int(body.next_incoming_id), -sd["frame_shift"])
            if link is not None and link.is_receiver:
                ld = self._ldata(link)
                count = _uint(body.delivery_count)
                credit = _uint(body.link_credit)
                if credit is not None:
                    base = count if count is not None else link.initial_delivery_count
                    if base is None:
                        ld["pending_credit"] = credit
                    else:
                        ld["limit_p"] = serial_add(base, credit)
                    ld["armed"] = True
                if count is not None and ld["count_shift"]:
                    changes["delivery_count"] = serial_add(count, -ld["count_shift"])
            return Out(to_broker=[_with(frame, **changes) if changes else frame])
        if isinstance(body, Disposition) and body.role is True and sd["injected_p"]:
            return Out(to_broker=self._map_disposition(frame, sd))
        return Out(to_broker=[frame])

    def _map_disposition(self, frame: Frame, sd: dict) -> list:
        """Peer-view delivery-id range -> broker-view ranges without the injected ids."""
        first = int(frame.body.first)
        last = int(frame.body.last) if _uint(frame.body.last) is not None else first
        span = serial_diff(first, last)
        injected = set(sd["injected_p"])
        runs: list[list[int]] = []
        for i in range(max(span, 0) + 1):
            p = serial_add(first, i)
            if p in injected:
                runs.append([])
                continue
            b = serial_add(p, -sum(1 for q in sd["injected_p"] if serial_lt(q, p)))
            if not runs or not runs[-1]:
                runs.append([b, b])
            else:
                runs[-1][1] = b
        return [_with(frame, first=r[0], last=r[1] if r[1] != r[0] or frame.body.last is not None else None)
                for r in runs if r]


FAULTS: dict[str, type[Mutation]] = {cls.name: cls for cls in (
    CumulativeCredit, DrainStripped, EchoStripped, DeliveryCountShifted, IncomingWindowRaised,
    TransferBeyondCredit, AlarmDropsConnection,
)}
for _cls in FAULTS.values():          # what each breaks is the catalogue's word, written once
    _cls.requirement = fault_catalogue.get(_cls.name).requirement
    _cls.summary = fault_catalogue.get(_cls.name).summary


def mutation_for(name: str | None) -> type[Mutation]:
    """The Mutation class for a fault name (None or "none": no fault). KeyError for an unknown name."""
    if name in (None, "none"):
        return Mutation
    return FAULTS[name]
