"""Producers as people run them, against a broker that may throttle: how far they get, how they are stopped,
when they may go on, and whether every accepted message is still there.

This module owns `Means` (how a broker stopped a publisher), `Budget` (how far a producer pushes), the
`ThrottlePoint` and `Resume` facts, and the producers: `publish_synchronously` (each transfer waits for its
outcome, as a JMS persistent send does: the exact throttle point), `publish_pipelined` (sends within the
credit it knows, the broker's flows read between transfers: how many transfers were in flight when the
broker withdrew credit) and `resume_by_consuming` (consume until credit or acceptance comes back). Every
message body carries its sequence number (`<queue>!<tag><n>`), so `lost_messages` names what went missing.

In flight (the model's rule, conformance/model/oracle.py): a transfer our peer sent within the credit it
knew, after the broker had written a flow that lowered the limit but before that flow arrived, is legal on
both sides; the broker may accept it. Nothing here judges: a case turns these facts into findings and
observations. Every wait is bounded and named (a top-up, an outcome, a resume step).
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field
from enum import Enum
from typing import Any

from ..peer import ConnectionLost, ExpectationTimeout, Peer, PeerError, summarize
from ..wire import (
    Accepted, Close, Detach, Disposition, End, Flow, Modified, Rejected, Released, Transfer, serial_diff,
)


SINGLE_STEPS_UP_TO = 20     # resume: below a limit this small, consume one message per step (else halve)
RESUME_SECONDS = 15.0       # resume: consuming stops after this long without credit or acceptance back


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

def publish_synchronously(link, budget: Budget, *, tag: str = "s", depth: int = 0) -> ThrottlePoint:
    """Send one message at a time, each waiting for its outcome (bounded: the absence window, then a barrier
    round trip and the window again); before each, credit and window must allow it (a missing top-up is
    waited for, bounded the same way). `depth`: messages already in the queue."""
    point = ThrottlePoint("synchronous", Means.NONE, first_grant=max(0, link.credit), budget=str(budget))
    started = time.monotonic()
    peer = link.peer
    for n in range(budget.messages):
        if time.monotonic() - started > budget.seconds:
            break
        stop = _ended(link) or _held(link, point)
        if stop is not None:
            return _finish(point, stop, started, depth)
        body = f"{link.queue}!{tag}{n}".encode()
        mark = peer.mark()
        try:
            frame = link.transfer(body)
        except PeerError:
            return _finish(point, _ended(link) or (Means.CONNECTION_ENDED, "the connection failed", None), started,
                           depth)
        point.sent += 1
        did = int(frame.body.delivery_id)
        outcome = _await_outcome(link, did, mark)
        if isinstance(outcome, Accepted):
            point.accepted += 1
            continue
        if isinstance(outcome, Rejected):
            point.rejected += 1
            cond = outcome.error.condition if outcome.error is not None else None
            return _finish(point, (Means.REJECTED, f"rejected({cond or 'no error'})", cond and str(cond)),
                           started, depth)
        if isinstance(outcome, (Released, Modified)):
            point.released += 1
            return _finish(point, (Means.RELEASED, type(outcome).__name__.lower(), None), started, depth)
        point.no_outcome += 1
        return _finish(point, _ended(link) or (Means.NO_OUTCOME, f"no outcome for delivery {did}", None),
                       started, depth)
    point.elapsed_s = time.monotonic() - started
    point.depth = depth + point.accepted
    return point


def publish_pipelined(link, budget: Budget, *, tag: str = "p", depth: int = 0) -> ThrottlePoint:
    """Send within the credit our peer knows (the reader thread applies each broker flow as it arrives), without
    waiting for outcomes; when credit runs out, a bounded wait for a top-up. Afterwards the outcomes are
    collected (bounded) and the transfers in flight when the broker withdrew credit are counted."""
    point = ThrottlePoint("pipelined", Means.NONE, first_grant=max(0, link.credit), budget=str(budget))
    started = time.monotonic()
    peer = link.peer
    sends: list[tuple[int, int, int]] = []       # (delivery-id, our delivery-count before it, arrival mark)
    stop = None
    for n in range(budget.messages):
        if time.monotonic() - started > budget.seconds:
            break
        refused = _refusal(link)
        stop = _ended(link) or refused
        if stop is None and (link.credit <= 0 or not _window_open(link)):
            # the broker's answers to what it took (outcomes, and the top-up it sends with them) come first
            _collect_outcomes(link, [d for d, _, _ in sends])
            stop = _ended(link) or _refusal(link) or _held(link, point)
        if stop is not None:
            break
        count_before = int(link.state.delivery_count)
        mark = peer.mark()
        try:
            frame = link.transfer(f"{link.queue}!{tag}{n}".encode())
        except PeerError:
            stop = _ended(link) or (Means.CONNECTION_ENDED, "the connection failed", None)
            break
        sends.append((int(frame.body.delivery_id), count_before, mark))
        point.sent += 1
    _collect_outcomes(link, [d for d, _, _ in sends])
    states = _outcomes(link)
    point.accepted = sum(1 for d, _, _ in sends if isinstance(states.get(d), Accepted))
    point.rejected = sum(1 for d, _, _ in sends if isinstance(states.get(d), Rejected))
    point.released = sum(1 for d, _, _ in sends if isinstance(states.get(d), (Released, Modified)))
    point.no_outcome = sum(1 for d, _, _ in sends if d not in states)
    point.sends = sends
    if stop is None:
        stop = _ended(link) or _refusal(link)
    if stop is None:
        point.elapsed_s = time.monotonic() - started
        point.depth = depth + point.accepted
        return count_in_flight(link, point)
    _finish(point, stop, started, depth)
    return count_in_flight(link, point)


def count_in_flight(link, point: ThrottlePoint) -> ThrottlePoint:
    """Once the broker's later frames are in (a burst may be written whole before its credit-0 flow arrives):
    the transfers sent after the broker's first credit-0 flow for them and before it arrived (in flight), and
    the outcomes now known. A withdrawal seen only now makes the means CREDIT_WITHDRAWN."""
    sends = point.sends
    if not sends:
        return point
    states = _outcomes(link)
    point.accepted = sum(1 for d, _, _ in sends if isinstance(states.get(d), Accepted))
    point.rejected = sum(1 for d, _, _ in sends if isinstance(states.get(d), Rejected))
    point.released = sum(1 for d, _, _ in sends if isinstance(states.get(d), (Released, Modified)))
    point.no_outcome = sum(1 for d, _, _ in sends if d not in states)
    withdrawal = _withdrawing_flow(link, sends[0][2])
    if withdrawal is None:
        return point
    position, limit = withdrawal
    point.in_flight = sum(1 for _, count, mark in sends if mark <= position and serial_diff(limit, count) >= 0)
    if point.means is Means.NONE:
        flow = link.peer.arrived[position]
        point.means, point.detail, point.drain = Means.CREDIT_WITHDRAWN, summarize(flow), bool(flow.body.drain)
        point.at_message = sum(1 for _, count, _ in sends if serial_diff(limit, count) < 0) + 1
    return point


def resume_by_consuming(ctx, link, point: ThrottlePoint, *, limit: int | None, step_wait: float | None = None,
                        tag: str = "r") -> Resume:
    """Consume from the queue until the publisher may send again; the depth (our count) at which it could.
    Above `limit` nothing resumes, so the queue is consumed down to it at once, then one message at a time
    (a limit above SINGLE_STEPS_UP_TO messages, or a byte limit: half the queue at a time; RESUME_SECONDS at most),
    each step followed by a bounded wait (`step_wait`, default the absence window) for credit (flow-control
    means) or by a probe message sent synchronously (refusals: accepted means resumed). A link the broker
    ended is not resumed here."""
    queue = link.queue
    depth = point.depth or 0
    consumer = ctx.session().attach_receiver(queue)
    wait = step_wait if step_wait is not None else consumer.session.absence_window()
    resume = Resume(consumer=consumer)
    seconds = RESUME_SECONDS
    deadline = time.monotonic() + seconds
    first = max(0, depth - (limit if limit is not None else depth))

    def consume(k: int) -> bool:
        nonlocal depth
        if k <= 0:
            return True
        consumer.flow(link_credit=k)
        try:
            frames = consumer.expect_transfers(k, requirement="2.6.7/credit-formula")
        except Exception:        # a halted expectation: the finding is recorded, the resume stops here
            return False
        resume.consumed += [consumer.body_of(f) for f in frames if not f.body.more]
        unsettled = [int(f.body.delivery_id) for f in frames if f.body.delivery_id is not None and not f.body.settled]
        if unsettled:          # consumed means accepted: a broker counts unsettled messages as still queued
            consumer.peer.disposition(consumer.session.channel, first=unsettled[0], last=unsettled[-1])
        depth -= k
        return True

    if point.means.ended or not point.means.throttled:
        resume.how = "not tried: " + ("the broker ended the link" if point.means.ended else "not throttled")
        resume.depth = depth
        return resume
    if point.means is Means.NO_OUTCOME:
        return _resume_on_a_new_connection(ctx, link, resume, depth, consume, tag)
    if not consume(first):
        return resume
    probe = 0
    while True:
        if point.means.by_flow_control:
            if _await(link.peer, lambda: link.credit > 0 and _window_open(link), wait, "credit after consuming"):
                resume.resumed, resume.depth = True, depth
                resume.how = f"credit {link.credit} granted again"
                break
        else:
            sent = publish_synchronously(link, Budget(1, wait * 4), tag=f"{tag}{probe}", depth=depth)
            probe += 1
            if sent.accepted:
                resume.resumed, resume.depth = True, depth
                resume.how = "a probe message was accepted"
                depth += 1
                break
            if sent.means.ended:
                resume.how = f"the probe ended the link: {sent.detail}"
                break
        if depth <= 0:
            resume.how = resume.how or f"nothing came back within {wait:.2f} s of emptying the queue"
            break
        if time.monotonic() > deadline:
            resume.how = f"nothing came back within {seconds:g} s of consuming (stopped at depth {depth})"
            break
        single = limit is not None and limit <= SINGLE_STEPS_UP_TO
        if not consume(1 if single else max(1, depth // 2)):   # a large or byte limit: halve the queue
            break
    resume.depth = depth if not resume.resumed else resume.depth
    return resume


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


def _resume_on_a_new_connection(ctx, link, resume: Resume, depth: int, consume, tag: str) -> Resume:
    """A send that never completes: the application gives up on that connection (closes its socket: a broker
    that stopped reading it, RabbitMQ 3.10, would answer a close frame with a reset), the queue is consumed,
    and one message is published synchronously on a new connection."""
    link.peer.close()
    if not consume(depth):
        return resume
    publisher = ctx.session().attach_sender(link.queue, initial_delivery_count=0, durable=link.durable)
    if not _await(publisher.peer, lambda: publisher.credit > 0, 2 * publisher.session.absence_window(), "credit"):
        resume.how = "no credit on a new connection after consuming the queue"
        publisher.peer.close()
        return resume
    sent = publish_synchronously(publisher, Budget(1, 5.0), tag=f"{tag}-new", depth=0)
    if sent.accepted:
        resume.resumed, resume.depth = True, 0
        resume.how = "a new connection's message was accepted once the queue was consumed"
    else:
        resume.how = f"a new connection's message got {sent.means.value} after consuming the queue"
        publisher.peer.close()
    resume.publisher = publisher
    return resume


def credit_back(link, *, at_least: float = 0.0) -> bool:
    """Whether the publisher may send again: credit and window now, or within a bounded wait (twice the
    absence window; `at_least` seconds in all, for a broker that
    grants credit on a timer of its own after memory was freed: Artemis, about 1.5 s)."""
    if _ended(link):
        return False
    if _held(link, ThrottlePoint("synchronous", Means.NONE)) is None:
        return True
    return _await(link.peer, lambda: link.credit > 0 and _window_open(link), at_least, "credit after consuming")


def consume_and_accept(ctx, queue: str, link=None):
    """Consume what the queue holds (as an operator's consumers would), accepting each message: a broker
    frees memory and queue room on settlement, not on delivery. `link`: a receiving link of the case to
    consume with (else a new connection's). Returns the link it consumed with (the case's drain counts its
    messages as delivered)."""
    reader = link if link is not None else ctx.session(incoming_window=0x7FFFFFFF).attach_receiver(queue)
    before = len(reader.state.transfers)
    reader.flow(link_credit=10000)
    reader.session.settle_by_barrier(queue, through_queue=True)
    gap = reader.session.absence_window()
    peer = reader.peer
    while True:
        try:
            peer.expect(Transfer, channel=reader.session.remote_channel, handle=reader.broker_handle, timeout=gap)
        except (ExpectationTimeout, PeerError):
            break
    frames = reader.state.transfers[before:]
    unsettled = [int(f.body.delivery_id) for f in frames if f.body.delivery_id is not None and not f.body.settled]
    if unsettled:
        try:
            peer.disposition(reader.session.channel, first=unsettled[0], last=unsettled[-1])
        except PeerError:
            pass
    return reader


def consume_until_settled(ctx, queue: str, publishers, *, seconds: float = 10.0) -> list:
    """Consume and accept the queue until every transfer of `publishers` has its outcome (or `seconds` ran
    out, or a round brought neither messages nor outcomes): a broker that stopped reading a held producer's
    connection (Qpid Broker-J) reads its unread transfers only when the queue has room again, and answers
    that connection's close only after them. Returns the links it consumed with (for the case's drain)."""
    readers = []
    deadline = time.monotonic() + seconds
    pending = lambda: sum(len(set(link.sent) - set(_outcomes(link))) for link in publishers)   # noqa: E731
    while pending() and time.monotonic() < deadline:
        before = pending()
        reader = consume_and_accept(ctx, queue)
        readers.append(reader)
        for link in publishers:
            _collect_outcomes(link, list(link.sent))
        if pending() == before and not reader.state.transfers:
            break
    return readers


def accept_received(*links) -> None:
    """Accept (settle) every unsettled message the given receiving links got: consumed, not just delivered."""
    for link in links:
        ids = [int(f.body.delivery_id) for f in link.state.transfers
               if f.body.delivery_id is not None and not f.body.settled]
        if ids:
            try:
                link.peer.disposition(link.session.channel, first=min(ids), last=max(ids))
            except PeerError:
                pass


def lost_messages(accepted: list[bytes], consumed: list[bytes]) -> list[bytes]:
    """The accepted bodies that never came back (each body carries its sequence number)."""
    have = set(consumed)
    return [b for b in accepted if b not in have]


# -- what the broker did -------------------------------------------------------------------------------------

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


def _held(link, point: ThrottlePoint) -> tuple[Means, str, str | None] | None:
    """None when credit and window let the next transfer go (after a bounded wait for a top-up: the absence
    window); else how the broker holds the publisher."""
    if link.credit > 0 and _window_open(link):
        return None
    # no barrier round trip: a broker holding a publisher may stop reading its connection altogether
    # (Qpid Broker-J over its limit, RabbitMQ 3.10), and a barrier would only wait out the frame timeout.
    # The outcomes of what was sent are in (synchronous: each one; pipelined: collected first), and a broker
    # sends its top-up no later than those: one absence window after them.
    wait = link.session.absence_window()
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
                           timeout=timeout, unless=link._gone).body.state
    try:
        return wait(2 * link.session.absence_window())
    except PeerError:
        return None


def _collect_outcomes(link, dids: list[int]) -> None:
    """Wait (bounded: two absence windows without a disposition) until every one of `dids` has an outcome or
    none comes any more."""
    peer = link.peer
    window = link.session.absence_window()
    barrier_done = False      # one more window granted after the first silent one
    while dids and len(set(dids) - set(_outcomes(link))) > 0:
        if _ended(link):
            return
        try:
            peer.expect(Disposition, channel=link.session.remote_channel, timeout=window)
        except ExpectationTimeout:
            if barrier_done:
                return
            barrier_done = True       # a second window (no barrier: see _held)
        except PeerError:
            return


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
