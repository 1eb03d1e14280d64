"""The flow-control oracle: fed one connection's frames in order, it names every sentence a frame breaks.

This module owns judging a transcript against 2.5.6 (session windows), 2.6.7 (link credit) and the flow
field rules of 2.7.4. It never does I/O and never sees clocks: frames in, violations and answers out.

Directions. "out" is a frame our peer sent, "in" one the broker sent; the transcript is the order our peer
saw them in. Only the attribute names of `conformance.wire` performatives are read (duck typing), and the
performative is recognised by its `NAME` ("flow", ...) or, failing that, its lower-cased class name.
Sessions are matched by channel (a begin's remote-channel joins the two channels; a begin answering one never
observed starts a session that is not judged, its partner's state being unknown), links by attach name and
direction (the two handles are independent), and a detach/end frees the handle/channel for reuse. 2.6.1: "Link
names MUST uniquely identify the link amongst all links of the same direction between the two participating
containers"; "the link can be globally identified by the (ordered) tuple (A,B,<name>)", A the container of the
source, B of the target. So a sender and a receiver may share a name (python-qpid-proton's Container names both
links to one address alike): an attach joins the link of its name whose sender is the same side (role sender:
the side that sent it; role receiver: the other side), never the other direction's.

Who is judged. `FlowOracle(judge="in")` (default) reports the broker's violations; "out" our peer's, "both"
both. Every rule is symmetric; only what each side could have seen differs (next paragraph).

In-flight rule (conservative: no false fails). A frame our peer receives was sent after everything
before it in the transcript, so our peer is judged against exactly the state it had seen. The broker is
not: it may have sent a frame before it processed our latest flows (2.6.7: "If the link-credit is reduced
by the receiver when transfers are in-flight..."). For every delivery-limit (link) and incoming
transfer-id limit (session) our peer announced, the oracle keeps the frame index that carried it. A broker
frame is judged against every limit it may still have been acting on: the latest one it has *proved* it
processed and all limits announced after it; a transfer is legal if any of them allows it. Proofs are
kept per link (link limits) and per session (window limits); a link proof at our frame k also proves the
session processed k. The broker proves it processed our frame k only by:
  - an attach answering our attach (k = that attach; a begin needs none: our begin's window is the first
    limit, and stays one until a later one is proved);
  - doing something the limit proved so far cannot explain: a transfer it would not allow, or a flow as
    sender whose link-credit differs from max(0, limit - delivery-count) for it; k = the earliest later
    limit that explains it (if none does, nothing is proved and the frame is judged);
  - a flow as sender with drain=true when the proved limit has drain=false (k = our earliest drain=true flow).
Each proof assumes the broker was correct so far, so a wrong proof needs a broker already at fault; the
frame reported is the first one no explanation fits (an over-send that could not be told from a legal
in-flight transfer may surface later as the sender's inconsistent flow, 2.6.7/credit-formula).
Echo replies prove nothing (a spontaneous broker flow can cross our echo request). `in_flight="strict"`
instead judges the broker against our latest limits as if it saw each flow at once (for cases that know it).

Multi-frame deliveries are one message, counted at their first frame; an aborted delivery counts as sent
(the spec is silent). A sender's flow may show a delivery-count lagging ours by the aborted deliveries it
did not count, or by the delivery in progress, without blame.
"""

from __future__ import annotations

import copy
from bisect import bisect_left, bisect_right
from operator import attrgetter
from dataclasses import dataclass, field
from typing import Iterable

from .. import catalogue
from ..wire.serial import HALF as _HALF, MASK, MODULUS as _MODULUS, SerialUndefined, serial_diff
from .endpoints import LinkEndpoint, SessionEndpoint, credit_left

IN, OUT = "in", "out"
JUDGE_SETS = {"in": frozenset({IN}), "out": frozenset({OUT}), "both": frozenset({IN, OUT})}
IN_FLIGHT_MODES = ("tolerate", "strict")

# The rules the oracle checks, by short name -> requirement id (conformance/catalogue/requirements.toml).
RULES = {
    "no-credit": "2.6.7/no-send-without-credit",
    "session-window": "2.5.6/remote-incoming-window-decrement",
    "sender-count": "2.7.4/sender-delivery-count-set",
    "credit-not-decreased": "2.6.7/credit-decrease-on-send",
    "credit-formula": "2.6.7/credit-formula",
    "drain-advance": "2.6.7/drain-advance",
    "link-fields": "2.7.4/link-fields-need-handle",
    "echo-loop": "2.7.4/echo-no-loop",
    "next-incoming-id": "2.7.4/next-incoming-id-set",
    "receiver-count": "2.7.4/receiver-delivery-count",
    "initial-count": "2.7.3/initial-delivery-count-sender",
    "delivery-id": "2.7.5/delivery-id-first",
}

# 2.7.4: "When the handle field is not set, this field MUST NOT be set." (field, value meaning "not set")
LINK_ONLY_FIELDS = (("delivery_count", None), ("link_credit", None), ("available", None), ("drain", False),
                    ("properties", None))

_INDEX = attrgetter("index")


_QUARTER = 1 << 30


def _allowance_of(grants: list, current: int) -> int | None:
    """max(g.left(current)) over the grants whose left is defined (inlined: left = credit - serial_diff(base,
    current), undefined when current - base is exactly 2^31); None when none is."""
    best = None
    for g in grants:
        d = (current - g.base) & MASK
        if d == _HALF:
            continue
        x = g.credit - (d - _MODULUS if d > _HALF else d)
        if best is None or x > best:
            best = x
    return best


def _allows(g, current: int) -> bool:
    """`g.allows(current)` (`_Grant.allows`), without the method call: the transfer path's one test."""
    d = (current - g.base) & MASK
    return d != _HALF and g.credit > (d - _MODULUS if d > _HALF else d)


def _other(direction: str) -> str:
    return OUT if direction == IN else IN


def _int(value) -> int | None:
    return None if value is None else int(value)


@dataclass(frozen=True)
class Violation:
    requirement_id: str
    section: str
    level: str
    sentence: str          # verbatim from the catalogue
    frame_index: int       # the position of the frame among all observe() calls, from 0
    detail: str
    direction: str = IN    # whose frame broke it


@dataclass
class _Grant:
    """A limit a receiving side announced: `credit` more messages/transfer frames counted from `base`."""

    index: int                 # frame index of the frame that carried it (-1: the initial state)
    base: int | None           # delivery-count / transfer-id it counts from; None: the sender's initial value
    credit: int
    drain: bool = False
    sent: int = 0              # messages the sender had sent (as observed) when it was announced

    @property
    def resolved(self) -> bool:
        return self.base is not None

    @property
    def limit(self) -> int:
        return (self.base + self.credit) & MASK

    def allows(self, current: int) -> bool:
        """Whether one more fits at `current`: left(current) is defined and positive (inlined)."""
        d = (current - self.base) & MASK
        return d != _HALF and self.credit > (d - _MODULUS if d > _HALF else d)

    def left(self, current: int) -> int | None:
        try:
            return credit_left(self.base, self.credit, current)
        except SerialUndefined:
            return None


@dataclass
class _Link:
    name: str
    handles: dict = field(default_factory=dict)          # direction -> handle
    attach_index: dict = field(default_factory=dict)     # direction -> frame index of its attach
    sender: str | None = None                            # the direction whose endpoint sends messages
    snd: LinkEndpoint | None = None                      # the sender's state, from its own frames
    grants: list = field(default_factory=list)           # the receiver's delivery-limits, oldest first
    uncounted_aborts: int = 0                            # aborted deliveries the sender may not have counted
    delivery_id: int | None = None                       # of the multi-frame delivery in progress
    receiver_shown_count: int | None = None              # the last delivery-count the receiver's flows showed
    proven_out: int = -1                                 # our latest frame on this link the broker processed


@dataclass
class _Session:
    begin_index: dict = field(default_factory=dict)
    begin_values: dict = field(default_factory=dict)     # direction -> (next-outgoing-id, in-window, out-window)
    ep: dict = field(default_factory=dict)               # direction -> SessionEndpoint of that side
    grants: dict = field(default_factory=lambda: {IN: [], OUT: []})   # incoming transfer-id limits per side
    proven_out: int = -1                                 # our latest session frame the broker processed
    links: dict = field(default_factory=dict)            # (attach name, sending side) -> _Link
    by_handle: dict = field(default_factory=lambda: {IN: {}, OUT: {}})
    echo_asked: dict = field(default_factory=lambda: {IN: False, OUT: False})   # side asked to echo
    shown_next_incoming: dict = field(default_factory=lambda: {IN: None, OUT: None})


@dataclass(frozen=True)
class LinkView:
    """A snapshot of one link as the oracle sees it (sequence numbers are 32-bit values)."""

    name: str
    sender: str                      # "out" (our peer sends messages) or "in" (the broker does)
    our_handle: int | None
    broker_handle: int | None
    delivery_count: int | None       # the sender's, from its transfers and flows
    delivery_limit: int | None       # the latest limit the receiver announced
    link_credit: int | None          # latest limit - delivery-count (negative: sent in flight beyond it)
    tolerated_credit: int | None     # the most any limit the sender may still act on allows (in-flight rule)
    available: int
    drain: bool                      # the drain mode the receiver last asked for
    messages: int                    # messages sent on the link (a multi-frame delivery is one)
    in_delivery: bool


class FlowOracle:
    """Observes one connection's frames in order and reports the flow-control sentences they break."""

    def __init__(self, judge: str = "in", *, in_flight: str = "tolerate"):
        if judge not in JUDGE_SETS:
            raise ValueError(f"judge must be one of {sorted(JUDGE_SETS)}, not {judge!r}")
        if in_flight not in IN_FLIGHT_MODES:
            raise ValueError(f"in_flight must be one of {IN_FLIGHT_MODES}, not {in_flight!r}")
        self.judged = JUDGE_SETS[judge]
        self.strict = in_flight == "strict"
        self.frame_index = -1
        self.violations: list[Violation] = []
        self._by_channel: dict[str, dict[int, _Session]] = {IN: {}, OUT: {}}
        self._found: list[Violation] = []
        self._allow_cache: dict = {}     # id(a holder's grants) -> what _allowance remembers of them

    # -- observing -------------------------------------------------------------------------------------

    def observe(self, direction: str, frame) -> list[Violation]:
        """Feed the next frame ("out": our peer sent it, "in": the broker did); returns what it breaks."""
        if direction not in (IN, OUT):
            raise ValueError(f"direction must be 'in' or 'out', not {direction!r}")
        self.frame_index += 1
        body = getattr(frame, "body", None)
        if body is None:
            return []
        handler = self._HANDLERS.get(getattr(body, "NAME", None) or type(body).__name__.lower())
        if handler is None:
            return []
        found = self._found = []
        handler(self, direction, int(getattr(frame, "channel", 0) or 0), body)
        self.violations += found
        return found

    def observe_all(self, frames: Iterable[tuple[str, object]]) -> list[Violation]:
        """Feed (direction, frame) pairs in order; returns every violation found."""
        out: list[Violation] = []
        for direction, frame in frames:
            out += self.observe(direction, frame)
        return out

    def _flag(self, direction: str, rule: str, detail: str) -> None:
        if direction not in self.judged:
            return
        req = catalogue.get(RULES[rule])
        self._found.append(Violation(req.id, req.section, req.level, req.text, self.frame_index, detail,
                                     direction))

    # -- queries ---------------------------------------------------------------------------------------

    def broker_may_send(self, channel: int, handle: int, *, in_flight: bool = False) -> int:
        """How many more single-frame transfers the broker may send now on our receiving link (our channel
        and handle): its link-credit and our session incoming-window together. With in_flight=True, the
        most any limit it may still be acting on allows (what the oracle tolerates)."""
        return self._may_send(channel, handle, IN, in_flight)

    def peer_may_send(self, channel: int, handle: int) -> int:
        """How many more single-frame transfers our peer may send now on its sending link (our channel and
        handle): the link-credit and the broker's session incoming-window as last announced to it."""
        return self._may_send(channel, handle, OUT, False)

    def link(self, channel: int, handle: int) -> LinkView:
        """The state of the link with our handle on our channel."""
        s, link = self._lookup(channel, handle)
        latest = self._latest(link.grants)
        dc = link.snd.delivery_count if link.snd is not None else None
        known = dc is not None and latest is not None
        return LinkView(link.name, link.sender, link.handles.get(OUT), link.handles.get(IN), dc,
                        latest.limit if known else None, latest.left(dc) if known else None,
                        self._allowance(self._candidates(link, link.grants, _other(link.sender)), dc)
                        if dc is not None else None,
                        link.snd.available if link.snd is not None else 0,
                        latest.drain if latest is not None else False,
                        link.snd.messages if link.snd is not None else 0,
                        link.snd.in_delivery if link.snd is not None else False)

    def session(self, channel: int, side: str = OUT) -> SessionEndpoint:
        """A copy of one side's 2.5.6 session state for our channel (side "out": our peer, exact)."""
        s = self._by_channel[OUT].get(channel)
        if s is None or side not in s.ep:
            raise LookupError(f"no session on our channel {channel} with a begin from {side!r}")
        return copy.copy(s.ep[side])

    def _lookup(self, channel: int, handle: int) -> tuple[_Session, _Link]:
        s = self._by_channel[OUT].get(channel)
        link = s.by_handle[OUT].get(handle) if s is not None else None
        if link is None:
            raise LookupError(f"no attached link with our handle {handle} on our channel {channel}")
        return s, link

    def _may_send(self, channel: int, handle: int, sender: str, in_flight: bool) -> int:
        s, link = self._lookup(channel, handle)
        if link.sender != sender:
            raise LookupError(f"our handle {handle} on channel {channel} is not a link the "
                              f"{'broker' if sender == IN else 'peer'} sends on")
        receiver = _other(sender)
        if link.snd is None or link.snd.delivery_count is None:      # (its attach came after its begin)
            return 0
        def pick(holder, grants):
            return self._candidates(holder, grants, receiver) if in_flight else [g for g in grants if g.resolved][-1:]
        link_left = self._allowance(pick(link, link.grants), link.snd.delivery_count)
        window_left = self._allowance(pick(s, s.grants[receiver]), s.ep[sender].next_outgoing_id)
        if link_left is None or window_left is None:
            return 0
        return max(0, min(link_left, window_left))

    # -- limits and proofs -----------------------------------------------------------------------------

    @staticmethod
    def _latest(grants: list) -> _Grant | None:
        resolved = [g for g in grants if g.resolved]
        return resolved[-1] if resolved else None

    def _candidates(self, holder, grants: list, announcer: str) -> list:
        """The resolved limits the sender may be acting on: the latest, if it saw each at once; otherwise
        the latest the broker proved it processed and every later one."""
        if not grants or not grants[-1].resolved:
            grants = [g for g in grants if g.resolved]
            if not grants:
                return []
        start = len(grants) - 1
        if announcer == OUT and not self.strict and grants[start].index > holder.proven_out:
            # the last grant at or before the proven frame (grants are in frame order), else the first
            start = max(0, bisect_right(grants, holder.proven_out, key=_INDEX) - 1)
        del grants[:start]                     # superseded for good: keeps every lookup short
        return grants[:]

    def _allowance(self, grants: list, current: int, run: list | None = None) -> int | None:
        """max(g.left(current)) over the grants whose left is defined; None when none is.

        The judging hot path: `run`, the holder's list the grants are a window of (`_candidates`), lets
        the maximum be remembered. A run's windows only move forward (grants join its end; a window's start
        only moves to later grants; a resolved grant's base and credit never change), so while the grant
        that gave the maximum stays in the window, the next maximum is the remembered one moved by the
        distance `current` advanced, or a grant that joined since. That is exact while every base lies within
        2^30 of `current` (no left crosses the 2^31 discontinuity); otherwise, or when the maximum's grant
        left the window, the full pass."""
        n = len(grants)
        if run is None or n < 4:
            return _allowance_of(grants, current)
        cache = self._allow_cache
        entry = cache.get(id(run))
        first, last = grants[0], grants[-1]
        if entry is not None and entry[0] is run:
            _run, first_c, last_c, star, c0, best, spread = entry
            k = (current - c0) & MASK
            k = k - _MODULUS if k >= _HALF else k
            spread += k if k >= 0 else -k
            if spread < _QUARTER and first.index >= first_c.index and last.index >= last_c.index \
                    and first.index <= star.index <= last.index:
                pos = bisect_left(grants, star.index, key=_INDEX)
                if pos < n and grants[pos] is star:
                    best -= k
                    for g in grants[bisect_right(grants, last_c.index, key=_INDEX):]:   # joined since
                        d = (current - g.base) & MASK
                        d = d - _MODULUS if d >= _HALF else d
                        if not -_QUARTER < d < _QUARTER:
                            break
                        if d < 0 and -d > spread:
                            spread = -d
                        elif d > spread:
                            spread = d
                        x = g.credit - d
                        if x > best:
                            best, star = x, g
                    else:
                        cache[id(run)] = (run, first, last, star, current, best, spread)
                        return best
        best = star = None
        spread = 0
        for g in grants:
            d = (current - g.base) & MASK
            if d == _HALF:
                spread = _QUARTER
                continue
            d = d - _MODULUS if d > _HALF else d
            if d < 0 and -d > spread:
                spread = -d
            elif d > spread:
                spread = d
            x = g.credit - d
            if best is None or x > best:
                best, star = x, g
        if best is not None and spread < _QUARTER:
            if len(cache) > 1024:
                cache.clear()
            cache[id(run)] = (run, first, last, star, current, best, spread)
        else:
            cache.pop(id(run), None)
        return best

    @staticmethod
    def _prove(holder, index: int) -> None:
        holder.proven_out = max(holder.proven_out, index)

    def _prove_by(self, holder, grants: list, consistent) -> int | None:
        """When the limit proved so far cannot explain what the broker just did, it processed a later one:
        prove the earliest later limit that can (returns its frame index, None when nothing moved)."""
        if self.strict:
            return None
        limits = self._candidates(holder, grants, OUT)
        if not limits or consistent(limits[0]):
            return None
        match = next((g for g in limits[1:] if consistent(g)), None)
        if match is None:
            return None
        self._prove(holder, match.index)
        return match.index

    # -- begin / end -----------------------------------------------------------------------------------

    def _on_begin(self, d: str, channel: int, body) -> None:
        other = _other(d)
        s = None
        remote = _int(getattr(body, "remote_channel", None))
        if remote is not None:
            s = self._by_channel[other].get(remote)
            if s is None:
                # it answers a begin never observed (sent before a capture started, or in a direction not
                # captured): the session's windows and ids cannot be known, so it is not judged at all
                self._by_channel[d].pop(channel, None)
                return
            if d in s.ep:
                s = None
        if s is None:
            s = _Session()
        s.begin_index[d] = self.frame_index
        self._by_channel[d][channel] = s
        values = (int(body.next_outgoing_id), int(body.incoming_window), int(body.outgoing_window))
        s.begin_values[d] = values
        s.ep[d] = SessionEndpoint.begin(*values)
        s.grants[d].append(_Grant(self.frame_index, None, values[1]))
        if other in s.ep:
            s.ep[d].on_remote_begin(*s.begin_values[other])
            s.ep[other].on_remote_begin(*values)
            for side in (IN, OUT):
                for g in s.grants[side]:
                    if g.base is None:
                        g.base = s.ep[_other(side)].initial_outgoing_id

    def _on_end(self, d: str, channel: int, body) -> None:
        self._by_channel[d].pop(channel, None)

    # -- attach / detach -------------------------------------------------------------------------------

    def _on_attach(self, d: str, channel: int, body) -> None:
        s = self._by_channel[d].get(channel)
        if s is None:
            return
        name = body.name
        is_sender = not bool(body.role)
        sender = d if is_sender else _other(d)
        key = (name, sender)                    # 2.6.1: a link is its name and its direction
        link = s.links.get(key)
        if link is None or d in link.handles:
            link = _Link(name, sender=sender)
            s.links[key] = link
        handle = int(body.handle)
        link.handles[d] = handle
        link.attach_index[d] = self.frame_index
        s.by_handle[d][handle] = link
        if is_sender and link.sender == d and link.snd is None:
            initial = _int(getattr(body, "initial_delivery_count", None))
            if initial is None:
                self._flag(d, "initial-count", "the sender's attach has no initial-delivery-count")
                link.snd = LinkEndpoint(True)
                # limits counted from the initial value it did not give can never be placed: dropped
                link.grants[:] = [g for g in link.grants if g.base is not None]
            else:
                link.snd = LinkEndpoint.sender(initial)
                link.grants.insert(0, _Grant(-1, initial & MASK, 0))
                for g in link.grants:
                    if g.base is None:
                        g.base = initial & MASK
        if d == IN and OUT in link.attach_index:
            self._prove(s, link.attach_index[OUT])
            self._prove(link, link.attach_index[OUT])

    def _on_detach(self, d: str, channel: int, body) -> None:
        s = self._by_channel[d].get(channel)
        if s is None:
            return
        link = s.by_handle[d].pop(_int(body.handle), None)
        if link is None:
            return
        link.handles.pop(d, None)
        if not link.handles and s.links.get((link.name, link.sender)) is link:
            del s.links[(link.name, link.sender)]

    # -- transfer --------------------------------------------------------------------------------------

    def _on_transfer(self, d: str, channel: int, body) -> None:
        s = self._by_channel[d].get(channel)
        if s is None:
            return
        receiver = OUT if d == IN else IN
        eps = s.ep
        ep = eps[d]
        tid = ep.next_outgoing_id
        grants = s.grants[receiver]
        # The ordinary transfer is decided by the first candidate alone: when the earliest limit the sender may be
        # acting on allows it, nothing is proved (that limit explains it) and the maximum over the candidates is
        # positive, so neither the proof nor the maximum (`_beyond`) is sought. Most often that limit is the list's
        # first, known without `_candidates` (which would prune nothing): the only limit, or for our peer's limits
        # (judging the broker, in-flight rule) the last one the broker proved it processed, when every later one
        # is unproved. The test is inlined, here and for the link's limits below: it runs for every frame.
        if not (grants and grants[-1].base is not None and (
                len(grants) == 1 or d == IN and not self.strict and grants[1].index > s.proven_out)
                and _allows(grants[0], tid)):
            window = self._beyond(s, grants, d, tid, s)
            if window is not None:
                limits = ", ".join(f"{(g.limit - 1) & MASK:#x}" for g in window)
                self._flag(d, "session-window", f"transfer-id {tid:#x} is beyond the incoming-window "
                           f"(last transfer-id allowed: {limits})")
        ep.on_send_transfer()
        rep = eps.get(receiver)
        if rep is not None:
            rep.on_receive_transfer()
        handle = body.handle
        link = s.by_handle[d].get(None if handle is None else int(handle))
        if link is None or link.sender != d:
            return
        snd = link.snd
        if snd is None:
            return
        delivery_id = getattr(body, "delivery_id", None)
        if delivery_id is not None:
            delivery_id = int(delivery_id)
        if not snd.in_delivery:
            if delivery_id is None:
                self._flag(d, "delivery-id", "the first transfer of a delivery has no delivery-id")
            link.delivery_id = delivery_id
            current = snd.delivery_count
            if current is not None:
                grants = link.grants
                if not (grants and grants[-1].base is not None and (
                        len(grants) == 1 or d == IN and not self.strict and grants[1].index > link.proven_out)
                        and _allows(grants[0], current)):
                    limits = self._beyond(link, grants, d, current, s)
                    if limits is not None:
                        shown = ", ".join(f"{g.limit:#x}" for g in limits)
                        self._flag(d, "no-credit", f"message at delivery-count {current:#x} with no link-credit "
                                   f"(delivery-limit {shown})")
        elif delivery_id is not None and link.delivery_id is not None and delivery_id != link.delivery_id:
            self._flag(d, "delivery-id", f"continuation transfer has delivery-id {delivery_id}, the delivery "
                       f"began with {link.delivery_id}")
        aborted = getattr(body, "aborted", None)
        if aborted:
            snd.on_transfer_frame(body.more, True)
            link.uncounted_aborts += 1
        else:
            snd.on_transfer_frame(body.more, False)

    def _beyond(self, holder, grants: list, d: str, current: int, s: _Session) -> list | None:
        """The limits side d's transfer at `current` (transfer-id / delivery-count) is judged against when
        none of them allows it; None when one does or none is known, and always for a side not judged.

        A broker transfer the limit proved so far cannot explain first proves a later one (`_prove_by`; for
        a link's limits the session's too). `_on_transfer` calls this only when its ordinary-transfer test
        did not already decide the transfer."""
        limits = self._candidates(holder, grants, OUT if d == IN else IN)
        if not limits or limits[0].allows(current):
            return None
        if d == IN:
            index = self._prove_by(holder, grants, lambda g: g.allows(current))
            if index is not None:
                self._prove(s, index)             # the session processed everything before it, too
            limits = self._candidates(holder, grants, OUT)
        if d not in self.judged:
            return None
        left = self._allowance(limits, current, grants)
        return limits if left is not None and left <= 0 else None

    # -- flow ------------------------------------------------------------------------------------------

    def _on_flow(self, d: str, channel: int, body) -> None:
        s = self._by_channel[d].get(channel)
        if s is None:
            return
        other = _other(d)
        self._session_flow(s, d, body)
        if s.echo_asked[d] and bool(getattr(body, "echo", None)):
            self._flag(d, "echo-loop", "a flow answering an echo request itself sets echo=true")
        s.echo_asked[d] = False
        if bool(getattr(body, "echo", None)):
            s.echo_asked[other] = True
        handle = _int(body.handle)
        if handle is None:
            present = [name for name, unset in LINK_ONLY_FIELDS if getattr(body, name, None) not in (None, unset)]
            if present:
                self._flag(d, "link-fields", "a flow without handle carries " + ", ".join(present))
            return
        link = s.by_handle[d].get(handle)
        if link is None:
            return
        if link.sender == d:
            self._sender_flow(s, link, d, body)
        else:
            self._receiver_flow(link, d, body)

    def _session_flow(self, s: _Session, d: str, body) -> None:
        other = _other(d)
        nid = _int(body.next_incoming_id)
        seen_begin = self._has_seen_begin(s, d)
        if seen_begin is True and nid is None:
            self._flag(d, "next-incoming-id", "flow without next-incoming-id after the partner's begin")
        elif seen_begin is False and nid is not None:
            self._flag(d, "next-incoming-id", "flow sets next-incoming-id before the partner's begin arrived")
        if nid is not None and other in s.ep:
            sent = s.ep[other].next_outgoing_id
            floor = s.shown_next_incoming[d]
            floor = s.ep[other].initial_outgoing_id if floor is None else floor
            if serial_diff(nid, sent) < 0:
                self._flag(d, "next-incoming-id", f"next-incoming-id {nid:#x} is ahead of the next transfer-id "
                           f"{sent:#x} the partner will send")
            elif serial_diff(floor, nid) < 0:
                self._flag(d, "next-incoming-id", f"next-incoming-id {nid:#x} went back (before {floor:#x})")
            else:
                s.shown_next_incoming[d] = nid
        incoming, outgoing = int(body.incoming_window), int(body.outgoing_window)
        base = nid if nid is not None else (s.ep[other].initial_outgoing_id if other in s.ep else None)
        s.grants[d].append(_Grant(self.frame_index, base, incoming))
        s.ep[d].set_windows(incoming, outgoing)
        if other in s.ep:
            s.ep[other].on_remote_flow(nid, incoming, int(body.next_outgoing_id), outgoing)

    def _has_seen_begin(self, s: _Session, d: str) -> bool | None:
        """Whether side d had received its partner's begin when it sent this frame (None: cannot know)."""
        other = _other(d)
        if d == OUT:
            return other in s.begin_index
        if other not in s.begin_index:
            return False                          # we have not even sent ours
        if s.begin_index[other] < s.begin_index[d]:
            return True                           # the broker's begin answered ours
        return None

    def _sender_flow(self, s: _Session, link: _Link, d: str, body) -> None:
        snd = link.snd
        if snd is None:
            return
        receiver = _other(d)
        dc = _int(body.delivery_count)
        credit = _int(body.link_credit)
        available = _int(body.available)
        drain = bool(getattr(body, "drain", None))
        if dc is None:
            self._flag(d, "sender-count", "the sender's flow has no delivery-count")
            return
        dc &= MASK
        if snd.delivery_count is None:
            snd.delivery_count = dc
        lag = serial_diff(dc, snd.delivery_count)            # > 0: the flow shows less than it sent
        excused = link.uncounted_aborts + (1 if snd.in_delivery else 0)
        if lag > excused:
            self._flag(d, "sender-count", f"delivery-count {dc:#x} is behind {snd.delivery_count:#x}, the count "
                       "its transfers reached")
        elif lag < 0 or (lag > 0 and not snd.in_delivery):
            if lag > 0:
                link.uncounted_aborts -= lag                 # it did not count aborted deliveries
            snd.delivery_count = dc
        if available is not None:
            snd.available = available
        if receiver == OUT:
            if credit is not None and not self._kept_credit(link, dc, credit):
                self._prove_link(s, link, lambda g: g.left(dc) is not None and max(g.left(dc), 0) == credit)
            if drain:
                self._prove_link(s, link, lambda g: g.drain)
        limits = self._candidates(link, link.grants, receiver)
        if limits and lag <= excused:
            self._judge_sender_state(link, d, dc, credit, available, drain, lag < 0, limits)

    def _kept_credit(self, link: _Link, dc: int, credit: int) -> bool:
        """Whether delivery-count + link-credit could be an earlier limit never decreased by the transfers
        since (2.6.7/credit-decrease-on-send broken): such a flow proves nothing."""
        shown, sends = (dc + credit) & MASK, link.snd.messages
        return credit > 0 and any(g.sent != sends and (g.limit + (sends - g.sent)) & MASK == shown
                                  for g in self._candidates(link, link.grants, OUT))

    def _prove_link(self, s: _Session, link: _Link, consistent) -> None:
        index = self._prove_by(link, link.grants, consistent)
        if index is not None:
            self._prove(s, index)             # the session processed everything before it, too

    def _judge_sender_state(self, link: _Link, d: str, dc: int, credit: int | None, available: int | None,
                            drain: bool, advanced: bool, limits: list) -> None:
        """A sender's flow: its delivery-count + link-credit must be a delivery-limit the receiver identified."""
        named = ", ".join(f"{g.limit:#x}" for g in limits)
        if advanced and all((g.left(dc) or 0) < 0 for g in limits):
            self._flag(d, "credit-formula", f"delivery-count advanced to {dc:#x} without transfers, past every "
                       f"delivery-limit ({named})")
            return
        if credit is None:
            return
        draining = drain or all(g.drain for g in limits)
        if draining and credit > 0 and available == 0:
            self._flag(d, "drain-advance", f"drain is set and nothing is available, yet link-credit is {credit} "
                       f"(delivery-count {dc:#x} not advanced)")
            return
        if credit > 0:
            shown = (dc + credit) & MASK
            if shown in {g.limit for g in limits}:
                return
            sends = link.snd.messages
            if any(g.sent != sends and (g.limit + (sends - g.sent)) & MASK == shown for g in limits):
                self._flag(d, "credit-not-decreased", f"delivery-count {dc:#x} + link-credit {credit}: the credit "
                           f"was not decreased by the transfers sent since it was granted ({named})")
            else:
                self._flag(d, "credit-formula", f"delivery-count {dc:#x} + link-credit {credit} = {shown:#x} is not "
                           f"a delivery-limit the receiver identified ({named})")
            return
        if all((g.left(dc) or 0) > 0 for g in limits):
            rule = "drain-advance" if draining else "credit-formula"
            self._flag(d, rule, f"link-credit 0 at delivery-count {dc:#x}, short of the delivery-limit ({named})")

    def _receiver_flow(self, link: _Link, d: str, body) -> None:
        dc = _int(body.delivery_count)
        credit = _int(body.link_credit)
        drain = bool(getattr(body, "drain", None))
        seen_attach = self._has_seen_sender_attach(link, d)
        if seen_attach is True and dc is None:
            self._flag(d, "receiver-count", "the receiver's flow has no delivery-count though it has seen the "
                       "sender's attach")
        elif seen_attach is False and dc is not None:
            self._flag(d, "receiver-count", "the receiver's flow sets delivery-count before the sender's attach")
        snd = link.snd
        if dc is not None and snd is not None and snd.delivery_count is not None:
            dc &= MASK
            floor = link.receiver_shown_count if link.receiver_shown_count is not None else snd.initial_delivery_count
            if serial_diff(dc, snd.delivery_count) < 0:
                self._flag(d, "receiver-count", f"delivery-count {dc:#x} is ahead of the sender's "
                           f"{snd.delivery_count:#x}")
            elif floor is not None and serial_diff(floor, dc) < 0:
                self._flag(d, "receiver-count", f"delivery-count {dc:#x} went back (before {floor:#x})")
            else:
                link.receiver_shown_count = dc
        if credit is None:
            return
        base = dc if dc is not None else (snd.initial_delivery_count if snd is not None else None)
        if base is None and snd is not None:
            return                       # counted from an initial value the sender's attach did not give
        link.grants.append(_Grant(self.frame_index, base, credit, drain, snd.messages if snd is not None else 0))

    @staticmethod
    def _has_seen_sender_attach(link: _Link, d: str) -> bool | None:
        sender = _other(d)
        if sender not in link.attach_index:
            return False
        if d == OUT:
            return True
        return True if link.attach_index[sender] < link.attach_index[d] else None

    _HANDLERS = {
        "begin": _on_begin,
        "end": _on_end,
        "attach": _on_attach,
        "detach": _on_detach,
        "transfer": _on_transfer,
        "flow": _on_flow,
    }


def emitted_requirement_ids() -> frozenset:
    """Every requirement id the oracle can report."""
    return frozenset(RULES.values())


def transcript_violations(entries: Iterable) -> list[tuple[Violation, object, int]]:
    """Judge a whole transcript (entries with `direction`, `item` and `index`, in order) with a fresh
    oracle: (violation, frame, transcript index) for every MUST or SHOULD the broker's frames break."""
    oracle = FlowOracle()
    found = []
    for entry in entries:
        if getattr(entry.item, "body", None) is None:
            continue
        for v in oracle.observe(entry.direction, entry.item):
            if v.level in ("MUST", "SHOULD"):
                found.append((v, entry.item, entry.index))
    return found
