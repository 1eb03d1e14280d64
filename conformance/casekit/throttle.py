"""How a broker throttles a publisher, as facts: `Means` (how it stopped one), `Budget` (how far a producer
pushes), `ThrottlePoint` and `Resume`, the classification of what stopped a producer (its link ended, a
refusal, the window closed, credit held back or withdrawn: `_finish`, `_ended`, `_refusal`, `_held`, ...),
the bounded waits for outcomes, and the facts a case records (`producer_facts`, `producer_summary`).

Nothing here judges and nothing here sends: the producers (producers.py) send, a case turns the facts into
findings and observations. Every wait is bounded and named.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field
from enum import Enum
from typing import Any

from ..peer import ConnectionLost, ExpectationTimeout, Peer, PeerError, summarize
from ..wire import Close, Detach, Disposition, End, Flow, Modified, Rejected, Released, serial_diff



class Means(str, Enum):
    """How a broker stopped a publisher."""

    CREDIT_WITHDRAWN = "link-credit withdrawn"        # a flow lowered the limit to what was sent (credit 0)
    NOT_TOPPED_UP = "credit not topped up"            # the grant was used up and no new one came
    WINDOW = "session incoming-window 0"
    REJECTED = "rejected"
    RELEASED = "released"
    NO_OUTCOME = "no outcome"
    LINK_ENDED = "link detached"
    SESSION_ENDED = "session ended"
    CONNECTION_ENDED = "connection ended"
    STALLED = "connection stalled"     # nothing answered on the publisher's connection (TCP backpressure)
    NONE = "not throttled"

    @property
    def by_flow_control(self) -> bool:
        """The protocol's own flow control (2.5.6 window, 2.6.7 credit): the publisher is held, not refused."""
        return self in (Means.CREDIT_WITHDRAWN, Means.NOT_TOPPED_UP, Means.WINDOW)

    @property
    def throttled(self) -> bool:
        """The publisher was stopped by some means (not NONE), refusals and ended connections included."""
        return self is not Means.NONE

    @property
    def ended(self) -> bool:
        return self in (Means.LINK_ENDED, Means.SESSION_ENDED, Means.CONNECTION_ENDED)

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True)
class Budget:
    """How far a producer pushes: at least past the broker's first credit grant, at most `messages` and
    `seconds` (the cap a "not throttled" names)."""

    messages: int
    seconds: float

    @classmethod
    def past_first_grant(cls, grant: int, *, floor: int = 50, cap: int = 2500, seconds: float = 45.0) -> "Budget":
        """Enough to use the broker's first grant up once (and one more), within a hard cap."""
        return cls(min(cap, max(floor, grant + 1)), seconds)

    def __str__(self) -> str:
        return f"{self.messages} messages / {self.seconds:g} s"


@dataclass
class ThrottlePoint:
    """Where and how a producer was stopped (or that it was not, within its budget)."""

    mode: str                        # "synchronous" | "pipelined"
    means: Means
    detail: str = ""                 # the frame that showed it (a flow, a rejected outcome's error, a detach)
    error: str | None = None         # the error condition, when the means carried one
    drain: bool | None = None        # CREDIT_WITHDRAWN: whether that flow had drain=true
    sent: int = 0
    accepted: int = 0
    rejected: int = 0
    released: int = 0
    no_outcome: int = 0
    at_message: int | None = None    # the number (1-based) of the first message the broker did not take
    depth: int | None = None         # the queue's depth when stopped (by our count of accepted, unconsumed)
    in_flight: int | None = None     # pipelined: transfers sent after the broker's credit-0 flow, before we read it
    first_grant: int = 0
    budget: str = ""
    elapsed_s: float = 0.0
    sends: list = field(default_factory=list, repr=False)   # pipelined: (delivery-id, count before, arrival mark)

    def facts(self) -> dict:
        d = asdict(self)
        d.pop("sends")
        d["means"] = self.means.value
        d["elapsed_s"] = round(self.elapsed_s, 3)
        return d

    def text(self) -> str:
        if not self.means.throttled:
            return f"{self.mode}: not throttled within {self.budget} ({self.accepted} of {self.sent} accepted)"
        how = self.means.value
        if self.means is Means.CREDIT_WITHDRAWN:
            how += " (flow link-credit 0" + (", drain" if self.drain else "") + ")"
        elif self.error:
            how += f" ({self.error})"
        flight = f", {self.in_flight} in flight" if self.in_flight else ""
        return f"{self.mode}: {how} after {self.accepted} accepted (queue depth {self.depth}){flight}"


@dataclass
class Resume:
    """What consuming did: the depth at which credit or acceptance came back, and what was still there."""

    resumed: bool = False
    depth: int | None = None         # queue depth (our count) when the publisher could send again
    how: str = ""
    consumed: list[bytes] = field(default_factory=list)
    consumer: Any = field(default=None, repr=False)     # the receiving link that consumed (drain the rest with it)
    publisher: Any = field(default=None, repr=False)    # a new publisher link the resume published with, if any

    def facts(self) -> dict:
        return {"resumed": self.resumed, "depth": self.depth, "how": self.how, "consumed": len(self.consumed)}


# -- the producers ------------------------------------------------------------------------------------------


def producer_facts(limit: str | None, throttle: ThrottlePoint, resume: Resume | None,
                   pipelined: ThrottlePoint | None = None, *, lost: int, accepted: int) -> dict:
    """The facts a case records under `observations["producer"]` (the report's producer-flow-control row)."""
    return {"limit": limit, "means": throttle.means.value, "drain": throttle.drain, "error": throttle.error,
            "detail": throttle.detail, "at_message": throttle.at_message if throttle.means.throttled else None,
            "depth": throttle.depth, "budget": throttle.budget,
            "in_flight": pipelined.in_flight if pipelined is not None else None,
            "pipelined_means": pipelined.means.value if pipelined is not None else None,
            "resumed": resume.resumed if resume is not None else None,
            "resume_depth": resume.depth if resume is not None and resume.resumed else None,
            "resume_how": resume.how if resume is not None else None,
            "accepted": accepted, "lost": lost,
            "synchronous": throttle.facts() if throttle.mode == "synchronous" else None,
            "pipelined": (pipelined or (throttle if throttle.mode == "pipelined" else None)).facts()
            if (pipelined or throttle.mode == "pipelined") else None}


def producer_summary(p: dict) -> str:
    """One line for a case's reason: means, throttle point, in flight, resume point, lost."""
    if p["means"] == Means.NONE.value:
        head = f"publisher not throttled within {p['budget']}"
    else:
        how = p["means"] + (" (flow link-credit 0, drain)" if p.get("drain") else "") + (
            f" ({p['error']})" if p.get("error") else "")
        head = f"publisher throttled by {how} at message {p['at_message']} (queue depth {p['depth']})"
    parts = [head + (f", limit {p['limit']}" if p.get("limit") else "")]
    if p.get("in_flight") is not None:
        parts.append(f"{p['in_flight']} in flight when a pipelined publisher was stopped")
    if p.get("resumed"):
        parts.append(f"resumed at depth {p['resume_depth']}")
    elif p.get("resumed") is not None:
        parts.append("did not resume" + (f" ({p['resume_how']})" if p.get("resume_how") else ""))
    parts.append(f"{p['lost'] or 'nothing'} of {p['accepted']} accepted lost" if p["lost"] else "nothing lost")
    return "; ".join(parts)


def _finish(point: ThrottlePoint, stop: tuple[Means, str, str | None], started: float, depth: int) -> ThrottlePoint:
    point.means, point.detail, point.error = stop
    if point.means is Means.CREDIT_WITHDRAWN:
        point.drain = "drain=true" in point.detail
    point.at_message = point.accepted + 1
    point.depth = depth + point.accepted
    point.elapsed_s = time.monotonic() - started
    return point


def _ended(link) -> tuple[Means, str, str | None] | None:
    """The broker's detach of the link, end of its session or close of the connection, if one came (frames
    are scanned once: the position reached is kept on the link)."""
    peer = link.peer
    start, found = getattr(link, "_ended_scan", (0, None))
    if found is not None:
        return found
    arrived = peer.arrived[start:]
    link._ended_scan = (start + len(arrived), None)
    for item in arrived:
        body = getattr(item, "body", None)
        found = None
        if isinstance(body, Close):
            found = Means.CONNECTION_ENDED, summarize(item), Peer.error_condition(item)
        elif isinstance(body, End) and item.channel == link.session.remote_channel:
            found = Means.SESSION_ENDED, summarize(item), Peer.error_condition(item)
        elif isinstance(body, Detach) and item.channel == link.session.remote_channel \
                and body.handle == link.broker_handle:
            found = Means.LINK_ENDED, summarize(item), Peer.error_condition(item)
        if found is not None:
            link._ended_scan = (0, found)
            return found
    if peer.ending is not None:
        return Means.CONNECTION_ENDED, f"the connection ended ({peer.ending})", None
    return None


def _refusal(link) -> tuple[Means, str, str | None] | None:
    for state in _outcomes(link).values():
        if isinstance(state, Rejected):
            cond = state.error.condition if state.error is not None else None
            return Means.REJECTED, f"rejected({cond or 'no error'})", cond and str(cond)
        if isinstance(state, (Released, Modified)):
            return Means.RELEASED, type(state).__name__.lower(), None
    return None


def _window_open(link) -> bool:
    w = link.session.state.remote_incoming_window
    return w is None or w > 0


def _held(link, point: ThrottlePoint, *, waited: bool = False) -> tuple[Means, str, str | None] | None:
    """None when credit and window let the next transfer go (after a bounded wait for a top-up: the absence
    window); else how the broker holds the publisher. `waited`: a whole absence window in which nothing at all
    arrived on the connection has just passed (`_collect_outcomes` ended on one), after every outcome that came:
    the top-up's window is that one, not one more."""
    if link.credit > 0 and _window_open(link):
        return None
    # no barrier round trip: a broker holding a publisher may stop reading its connection altogether
    # (Qpid Broker-J over its limit, RabbitMQ 3.10), and a barrier would only wait out the frame timeout.
    # The outcomes of what was sent are in (synchronous: each one; pipelined: collected first), and a broker
    # sends its top-up no later than those: one absence window after them.
    wait = 0.0 if waited else link.session.absence_window()
    if _await(link.peer, lambda: link.credit > 0 and _window_open(link), wait, "a credit top-up"):
        return None
    if not _window_open(link):
        return Means.WINDOW, "incoming-window 0", None
    flows = _link_flows(link)
    last = flows[-1].body if flows else None
    if last is not None and last.drain:      # 2.6.7: the sender answers a drain with its flow state
        try:
            link.peer.flow(link.session.channel, handle=link.handle, link_credit=max(0, link.credit), drain=True)
        except PeerError:
            pass
    if last is not None and (last.link_credit or 0) == 0 and len(flows) > 1:
        return Means.CREDIT_WITHDRAWN, summarize(flows[-1]), None
    return Means.NOT_TOPPED_UP, f"{point.first_grant} credits used up; last flow " + (
        summarize(flows[-1]) if flows else "none"), None


def _link_flows(link) -> list:
    return [f for f in link.peer.received(Flow) if f.channel == link.session.remote_channel
            and f.body.handle == link.broker_handle]


def _withdrawing_flow(link, since: int) -> tuple[int, int] | None:
    """(arrival position, delivery-limit) of the broker's first flow from arrival position `since` on that set
    link-credit 0 (credit withdrawn), or None."""
    peer = link.peer
    for position, item in enumerate(peer.arrived):
        if position < since:
            continue
        body = getattr(item, "body", None)
        if isinstance(body, Flow) and item.channel == link.session.remote_channel \
                and body.handle == link.broker_handle and body.link_credit is not None and int(body.link_credit) == 0 \
                and body.delivery_count is not None:
            return position, int(body.delivery_count)
    return None


def _outcomes(link) -> dict[int, Any]:
    """delivery-id -> the broker's outcome for our deliveries on this link (first one given). Frames are
    scanned once (the position reached and the map are kept on the link); a disposition for a delivery
    not sent yet cannot come."""
    start, out = getattr(link, "_outcome_scan", (0, {}))
    sent = link.sent
    arrived = link.peer.arrived[start:]
    link._outcome_scan = (start + len(arrived), out)
    for item in arrived:
        body = getattr(item, "body", None)
        if isinstance(body, Disposition) and body.role is True and body.state is not None:
            last = body.last if body.last is not None else body.first
            for i in range(serial_diff(int(body.first), int(last)) + 1):
                did = (int(body.first) + i) & 0xFFFFFFFF
                if did in sent:
                    out.setdefault(did, body.state)
    return out


def _await_outcome(link, did: int, mark: int):
    """The outcome of delivery `did`: waited for twice the absence window (a broker that gives none: None).
    No barrier: a broker that holds a transfer without outcome may not read that connection any more
    (RabbitMQ 3.10 at a queue's max-length), and frames it leaves unread make its close a TCP reset."""
    peer = link.peer

    def covers(f) -> bool:
        b = f.body
        last = b.last if b.last is not None else b.first
        return b.role is True and serial_diff(int(b.first), did) >= 0 and serial_diff(did, int(last)) >= 0

    def wait(timeout):
        return peer.expect(Disposition, channel=link.session.remote_channel, after=mark, where=covers,
                           timeout=timeout, unless=link.ended_by).body.state
    try:
        return wait(2 * link.session.absence_window())
    except PeerError:
        return None


def _collect_outcomes(link, dids: list[int]) -> bool:
    """Wait (bounded: two absence windows without a disposition) until every one of `dids` has an outcome or
    none comes any more. True when it ended on a whole absence window in which nothing at all arrived on the
    connection (outcomes still missing), which is the window a credit top-up is waited for (`_held`)."""
    peer = link.peer
    window = link.session.absence_window()
    barrier_done = False      # one more window granted after the first silent one
    while dids and len(set(dids) - set(_outcomes(link))) > 0:
        if _ended(link):
            return False
        before = peer.mark()
        try:
            peer.expect(Disposition, channel=link.session.remote_channel, timeout=window)
        except ExpectationTimeout:
            if barrier_done:
                return peer.mark() == before
            barrier_done = True       # a second window (no barrier: see _held)
        except PeerError:
            return False
    return False


def _await(peer, condition, timeout: float, what: str) -> bool:
    """Whether `condition()` holds now or becomes true as frames arrive within `timeout` (a named wait)."""
    if condition():
        return True
    try:
        peer.expect(where=lambda f: condition(), after=peer.mark(), timeout=timeout)
        return True
    except ExpectationTimeout:
        return condition()
    except ConnectionLost:
        return condition()
    except PeerError:
        return False
