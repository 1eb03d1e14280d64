"""Producers as people run them, against a broker that may throttle: how far they get, how they are stopped,
when they may go on, and whether every accepted message is still there.

This module owns the producers (the facts they return, `Means`, `Budget`, `ThrottlePoint` and `Resume`, and
how a stop is classified live in throttle.py, importable from here): `publish_synchronously` (each transfer waits for its
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

from ..peer import ExpectationTimeout, PeerError, summarize
from ..wire import Accepted, Modified, Rejected, Released, Transfer, serial_diff
from .throttle import (  # noqa: F401 (producer_facts, producer_summary: re-exported for the cases)
    Budget, Means, Resume, ThrottlePoint, producer_facts, producer_summary, _await, _await_outcome, _collect_outcomes, _ended, _finish, _held,
    _outcomes, _refusal, _window_open, _withdrawing_flow,
)

SINGLE_STEPS_UP_TO = 20     # resume: below a limit this small, consume one message per step (else halve)
RESUME_SECONDS = 15.0       # resume: consuming stops after this long without credit or acceptance back


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
    settled_at = None      # frames arrived when the outcomes were last collected until silence
    for n in range(budget.messages):
        if time.monotonic() - started > budget.seconds:
            break
        refused = _refusal(link)
        stop = _ended(link) or refused
        if stop is None and (link.credit <= 0 or not _window_open(link)):
            # the broker's answers to what it took (outcomes, and the top-up it sends with them) come first
            silent = _collect_outcomes(link, [d for d, _, _ in sends])
            stop = _ended(link) or _refusal(link) or _held(link, point, waited=silent)
            if stop is not None:
                settled_at = len(peer.arrived)     # outcomes collected until silent, then a window for a top-up
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
    if settled_at is None or len(peer.arrived) != settled_at:    # else nothing came since: silent already
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
    grants credit on a timer of its own after memory was freed: Artemis, about 1.5 s). A broker that held
    transfers without an outcome answers them first and tops credit up with or after those answers (ActiveMQ
    tops a link up once it has answered all but 30 % of its grant): while they keep coming (one within each
    absence window), credit is waited for a window longer each time."""
    if _ended(link):
        return False
    answered = len(_outcomes(link))
    if _held(link, ThrottlePoint("synchronous", Means.NONE)) is None:      # one absence window
        return True
    window = link.session.absence_window()
    while len(_outcomes(link)) > answered and not _ended(link):     # answers still coming: credit may follow
        answered = len(_outcomes(link))
        if _await(link.peer, lambda: link.credit > 0 and _window_open(link), window, "credit after the answers"):
            return True
    return _await(link.peer, lambda: link.credit > 0 and _window_open(link), at_least, "credit after consuming")


def held_by_broker(ctx, link, point: ThrottlePoint, depth_before: int | None):
    """The broker's own evidence that it stopped reading the connection of publisher `link` (for
    `take_transfers(held=...)`): a function giving a text while (1) nothing at all has arrived on that connection
    since the publisher's last transfer was sent and (2) the broker's own count of the queue (`queue_depth_now`,
    read before publishing as `depth_before`) is no higher than then plus what it accepted: none of the transfers
    still without an outcome reached the queue. None when the profile cannot read the depth without a tool."""
    if depth_before is None or not point.sends:
        return None
    peer, last_sent = link.peer, point.sends[-1][2]

    def held() -> str | None:
        if len(peer.arrived) != last_sent:
            return None
        outcomes = _outcomes(link)
        waiting = sum(1 for d in link.sent if d not in outcomes)
        accepted = sum(1 for d in link.sent if isinstance(outcomes.get(d), Accepted))
        now = ctx.queue_depth_now(link.queue)
        if not waiting or now is None or now > depth_before + accepted:
            return None
        return (f"nothing arrived on it since our last transfer, and the broker's own count of the queue is {now} "
                f"(before publishing {depth_before}, {accepted} accepted since): none of the {waiting} transfers "
                "without an outcome was queued")
    return held


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
    # a connection we dropped (a publisher given up on) or the broker ended can bring no more outcomes
    answering = lambda link: not link.peer.transport.stopping and not link.peer.closed_by_remote   # noqa: E731
    pending = lambda: sum(len(set(link.sent) - set(_outcomes(link))) for link in publishers    # noqa: E731
                          if answering(link))
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
