"""2.6.7 Flow Control — link-credit, delivery-count, available and drain (Figures 2.40–2.42).

Receiver-side cases: the peer receives from a queue (the broker is the link's sender).
Sender-side cases: the peer publishes to a queue (the broker is the link's receiver).
Delivery-counts are compared with RFC 1982 arithmetic only: brokers start them anywhere, RabbitMQ 4 near 2^32.
A drain opens the obligation 2.6.7/drain-advance: a broker that ends the session or closes the connection
with an error before answering it (a flow with link-credit 0, or transfers that use the credit up) has broken
that MUST, whatever the case was waiting for at the time. A drained flow is owed only when credit is left
after the sender sent what it had (`ReceiverScript.expect_drain_completed`).
"""

from ..casekit import REFUSALS, case
from ..casekit.producers import (
    Budget, Means, consume_until_settled, count_in_flight, lost_messages, producer_facts, producer_summary, publish_pipelined, publish_synchronously,
    resume_by_consuming,
)
from ..casekit.scripts import Excess
from ..casekit.top_up import cross_top_up_alone, send_pipelined
from ..wire import serial_add


# -- receiver side ----------------------------------------------------------------------------------------

@case("2.6.7/1", "Drain with credit N and fewer than N messages: all messages, then delivery-count advanced",
      ["2.6.7/drain-advance", "2.6.7/drain-behaviour"],
      expectation="3 queued, flow(link-credit=10, drain=true) -> 3 transfers, then flow(link-credit=0) with "
                  "delivery-count = start + 10")
def drain_with_fewer_messages(ctx):
    """The sender sends what it has, then advances delivery-count by the remaining 7 and reports its state."""
    queue = ctx.queue(preload=3)
    link = ctx.session().attach_receiver(queue)
    start = link.delivery_count
    link.flow(link_credit=10, drain=True)
    link.expect_drain_completed(start, 10, messages=3, requirement="2.6.7/drain-behaviour")   # 7 left: flow owed
    link.expect_no_transfer(requirement="2.6.7/no-send-without-credit")
    return ctx.passed("3 transfers, then delivery-count advanced by the full credit of 10 and link-credit 0")


@case("2.6.7/2", "Drain with link-credit 0",
      ["2.6.7/drain-advance", "2.6.7/no-send-without-credit"],
      expectation="flow(link-credit=0, drain=true) with messages queued -> no transfer; a flow in reply is "
                  "optional and, if sent, carries link-credit 0 and an unchanged delivery-count")
def drain_with_zero_credit(ctx):
    """With nothing to consume, drain has nothing to advance; no transfer may be sent without credit."""
    queue = ctx.queue(preload=2)
    link = ctx.session().attach_receiver(queue)
    start = link.delivery_count
    link.flow(link_credit=0, drain=True)
    link.expect_no_transfer(requirement="2.6.7/no-send-without-credit")
    flow = link.arrived_flow()                 # after expect_no_transfer's barrier: here if it was sent
    if flow is not None:
        link.require_delivery_count(flow, start, requirement="2.6.7/drain-advance",
                                    why="zero credit leaves nothing to advance")
    return ctx.informational(
        "no transfer without credit; the broker " + ("answered with a flow" if flow is not None else "sent no flow"),
        replied_with_flow=flow is not None)


WINDOW = 10   # 2.6.7/3 holds the broker's transfers back with a session incoming-window this small


@case("2.6.7/3", "Link-credit is set, not added: flows naming the same delivery-limit allow at most 50 transfers",
      ["2.6.7/credit-formula", "2.6.7/no-send-without-credit"],
      expectation=f"100 queued, session incoming-window {WINDOW}; flow(delivery-count=start, link-credit=50) twice -> "
                  f"{WINDOW} transfers; the same flow again while the rest wait for the window; window opened -> "
                  "exactly 50 transfers in all")
def credit_is_not_cumulative(ctx):
    """Every flow names the same delivery-limit (start + 50), in flight or not: link-credit(snd) :=
    delivery-count(rcv) + link-credit(rcv) - delivery-count(snd) leaves the sender exactly what remains of 50.
    A sender that adds credit, or sets it without counting the transfers it already has under way, sends more.
    The small session window keeps the broker's transfers under way when the third flow comes, on every run
    (RabbitMQ 3.10 sent 50, 90 or 100 for two back-to-back flows, depending on its own timing)."""
    queue = ctx.queue(preload=100)
    session = ctx.session(incoming_window=WINDOW)
    link = session.attach_receiver(queue)
    start = link.delivery_count
    link.flow(link_credit=50, delivery_count=start)
    link.flow(link_credit=50, delivery_count=start)
    link.expect_transfers(WINDOW, requirement="2.6.7/credit-formula")
    link.flow(link_credit=50, delivery_count=start)        # the broker holds the rest, waiting for our window
    session.set_incoming_window(2048)
    link.expect_transfers(50 - WINDOW, requirement="2.6.7/credit-formula")
    link.expect_no_transfer(requirement="2.6.7/credit-formula",
                            why="every flow set the delivery-limit to start + 50 (credit is set, not added)")
    return ctx.passed("exactly 50 transfers after three flows naming the delivery-limit start + 50")


@case("2.6.7/4", "Credit lowered: the broker honours the new, smaller limit",
      ["2.6.7/credit-formula", "2.6.7/no-send-without-credit"],
      expectation="credit 10 with 4 queued -> 4 transfers; flow(link-credit=2); 10 more queued -> exactly 2 more")
def credit_lowered(ctx):
    """After receiving 4 of 10 credits, the receiver lowers the credit to 2: the new limit is delivery-count + 2."""
    queue = ctx.queue(preload=4)
    link = ctx.session().attach_receiver(queue)
    link.flow(link_credit=10)
    link.expect_transfers(4, requirement="2.6.7/no-send-without-credit")
    link.flow(link_credit=2)
    link.session.barrier()     # the broker has processed the lower credit before more messages arrive
    ctx.preload(queue, 10)
    link.expect_transfers(2, requirement="2.6.7/credit-formula")
    link.expect_no_transfer(requirement="2.6.7/credit-formula",
                            why="the lowered credit set the delivery-limit to delivery-count + 2")
    return ctx.passed("after lowering credit to 2, exactly 2 more transfers")


@case("2.6.7/5", "Delivery-count reconciliation: a stale delivery-count(rcv) shrinks the credit",
      ["2.6.7/credit-formula"],
      expectation="receive k=3, then flow(delivery-count=start, link-credit=5) -> exactly 5 - 3 = 2 more transfers")
def stale_delivery_count(ctx):
    """link-credit(snd) := delivery-count(rcv) + link-credit(rcv) - delivery-count(snd) = start + 5 - (start + 3)."""
    queue = ctx.queue(preload=20)
    link = ctx.session().attach_receiver(queue)
    start = link.delivery_count
    link.flow(link_credit=3)
    link.expect_transfers(3, requirement="2.6.7/no-send-without-credit")
    link.flow(link_credit=5, delivery_count=start)         # as if the 3 transfers were still in flight
    link.expect_transfers(2, requirement="2.6.7/credit-formula")
    link.expect_no_transfer(requirement="2.6.7/credit-formula",
                            why="delivery-count(rcv) + link-credit(rcv) - delivery-count(snd) = 2, not 5")
    return ctx.passed("the stale delivery-count was reconciled: 2 more transfers, not 5")


@case("2.6.7/6", "Unknown delivery-count(rcv): the sender assumes its initial delivery-count",
      ["2.6.7/unknown-delivery-count", "2.6.7/credit-formula"],
      expectation="attach receiver, flow(link-credit=2) and flow(link-credit=5), both without delivery-count, "
                  "written with the attach in one write -> exactly 5 transfers in all (both flows name "
                  "the delivery-limit initial + 5; a sender that took its current delivery-count sends 7)")
def unspecified_delivery_count(ctx):
    """A flow without delivery-count means delivery-count(rcv) = the initial delivery-count from the attach
    (2.6.7), and our flows may omit it only while we have not seen the broker's attach (2.7.4: "this field
    MUST NOT be set" before, "MUST be set to the last known value" after). So both flows go out with the
    attach in one write (nothing of the broker's can have been seen before them). A broker that sent the 2
    transfers for the first before it processed the second must count them against initial + 5 (3 more, not
    5); one that processed both first sends 5 either way."""
    queue = ctx.queue(preload=20)
    link = ctx.session().attach_receiver(queue, pipelined_flow=[{"link_credit": 2}, {"link_credit": 5}])
    link.expect_transfers(5, requirement="2.6.7/unknown-delivery-count")
    link.expect_no_transfer(requirement="2.6.7/unknown-delivery-count",
                            why="both flows without delivery-count name the delivery-limit initial + 5")
    return ctx.passed("flows without delivery-count were counted from the initial delivery-count: 5 transfers")


@case("2.6.7/7", "Serial-number wrap: reconciliation and drain across 2^32",
      ["2.6.7/delivery-count-serial", "2.6.7/credit-formula", "2.6.7/drain-advance", "2.6.7/drain-behaviour"],
      subject=["2.6.7/credit-formula", "2.6.7/drain-advance"],
      expectation="whatever the broker's initial delivery-count, limits computed across the wrap hold: "
                  "receive 3 per step, stale count, then drain with credit 4 and 23 queued -> 4 transfers that "
                  "complete the drain (a flow after them optional; if sent, it carries the count across the "
                  "wrap), with delivery-counts shown modulo 2^32")
def serial_wrap(ctx):
    """Runs reconciliation and drain while the delivery-count crosses 0xffffffff -> 0 when the broker starts near it.
    The drain finds more messages than credit: the transfers use the credit up and complete it, so no drained
    flow is owed (2.6.7 owes one only "if ... there are no available messages"); one that comes is judged."""
    queue = ctx.queue(preload=30)
    link = ctx.session().attach_receiver(queue)
    start = link.delivery_count
    ctx.observe(initial_delivery_count=int(start), crosses_wrap=int(start) > 0xFFFFFFFF - 20)
    for _ in range(2):          # from RabbitMQ 4's 0xfffffffb, the stale count below straddles the wrap
        link.flow(link_credit=3)
        link.expect_transfers(3, requirement="2.6.7/credit-formula")
    stale = serial_add(int(link.delivery_count), -3)
    link.flow(link_credit=5, delivery_count=stale)
    link.expect_transfers(2, requirement="2.6.7/credit-formula")
    link.expect_no_transfer(requirement="2.6.7/credit-formula", why="stale delivery-count across the wrap")
    before = link.delivery_count
    link.flow(link_credit=4, drain=True)       # 23 still queued: the 4 transfers use the credit, no flow owed
    link.expect_drain_completed(before, 4, messages=23, requirement="2.6.7/drain-behaviour")
    return ctx.passed(f"limits held across delivery-counts from {int(start):#010x} to {int(link.delivery_count):#010x}")


@case("2.6.7/8", "Available reflects the queue depth (informational)",
      ["2.6.7/available-sender-only", "2.7.4/available"],
      expectation="5 queued, flow(link-credit=0, echo=true) -> the echoed flow's available is recorded (the echo "
                  "is only the means: a broker that answers no echo makes available not observable)")
def available_reported(ctx):
    """The spec leaves the accuracy of available to the sender: what the broker reports is recorded."""
    queue = ctx.queue(preload=5)
    link = ctx.session().attach_receiver(queue)
    link.flow(link_credit=0, echo=True)
    reply = link.await_flow()
    if reply is None:
        return ctx.unobservable("2.6.7/available-sender-only", "the broker answered no flow(echo=true) on the link "
                                "(echo is a SHOULD, judged by 2.7.4/1)")
    available = reply.available
    return ctx.informational(
        f"broker reported available={available} with 5 messages queued",
        available=None if available is None else int(available), queue_depth=5)


@case("2.6.7/9", "Two receivers on one session: stopping one does not stop the other",
      ["2.6.7/no-send-without-credit", "2.6.7/credit-formula"],
      expectation="link A credit 0, link B credit 3 -> B gets 3 transfers, A none")
def independent_links(ctx):
    """Link credit is per link: a stopped link must not hold back another link's deliveries."""
    queue_a = ctx.queue(preload=5)
    queue_b = ctx.queue(preload=5)
    session = ctx.session()
    link_a = session.attach_receiver(queue_a)
    link_b = session.attach_receiver(queue_b)
    link_a.flow(link_credit=2)
    link_a.expect_transfers(2, requirement="2.6.7/no-send-without-credit")
    link_a.flow(link_credit=0)
    link_b.flow(link_credit=3)
    link_b.expect_transfers(3, requirement="2.6.7/credit-formula")
    link_a.expect_no_transfer(requirement="2.6.7/no-send-without-credit")
    return ctx.passed("the stopped link stayed quiet while the other received its 3")


WRAP_BUDGET = 1000    # 2.6.7/11 uses up a publisher credit up to this size, so the broker tops it up

# -- sender side ------------------------------------------------------------------------------------------

@case("2.6.7/10", "The broker grants credit to a publisher after attach",
      ["2.6.7/initial-flow-state", "2.7.4/receiver-delivery-count"],
      expectation="attach as sender -> a flow with link-credit > 0 and delivery-count = our initial-delivery-count")
def publisher_gets_credit(ctx):
    """The peer never sends without credit; the broker's first flow names our delivery-count."""
    queue = ctx.queue()
    link = ctx.session().attach_sender(queue, initial_delivery_count=7)
    flow = link.expect_credit(requirement="2.6.7/initial-flow-state")
    link.require_delivery_count(flow, 7, requirement="2.7.4/receiver-delivery-count",
                                why="the receiver reports the last known delivery-count of the sender")
    return ctx.passed(f"credit {int(flow.link_credit)} granted with delivery-count 7")


@case("2.6.7/11", "Publisher with initial-delivery-count near 2^32: wrapped counts stay right",
      ["2.7.4/receiver-delivery-count", "2.6.7/delivery-count-serial", "2.6.7/initial-flow-state",
       "3.2.1/durable-not-lost"], subject=["2.7.4/receiver-delivery-count"],
      expectation="initial-delivery-count 2^32-3, send the whole credit granted (4 when it exceeds "
                  f"{WRAP_BUDGET}) -> every flow the broker sends for the link carries a delivery-count our transfers "
                  "explain, and one sent after the last carries the wrapped count; the wrap is "
                  "read from the flows the broker sends on its own (credit top-ups), echo only as a fallback; "
                  "all accepted and queued")
def publisher_wrap(ctx):
    """The broker's flows as receiver must carry our delivery-count modulo 2^32. Frames the broker must send
    judge first: its flows for the link (the model checks each against our transfers), its dispositions and
    the queue depth; an echo is asked only when no flow after the wrap came on its own. Messages are durable
    (loss is judged by 3.2.1); a broker that refuses durable messages (a non-durable store) gets the same
    scenario with non-durable ones on a new connection, and loss is then not judged."""
    queue = ctx.queue()
    link, count, outcomes = _publish_across_the_wrap(ctx, queue, durable=True)
    refused = ctx.refusals(link.connection)
    if refused:       # durability is not the subject: a broker that refuses durable messages gets non-durable ones
        ctx.worked_around(link.connection, "durable messages refused: the wrap is judged with non-durable ones "
                          "(3.2.1/durable-not-lost is then not judged)")
        ctx.observe(durable_refused=refused[0].text())
        link, count, outcomes = _publish_across_the_wrap(ctx, queue, durable=False)
    ended = link.ended_by_broker()
    ctx.require(ended is None, "2.6.7/credit-formula", f"the broker ended the link after {count} transfers within "
                "the credit it granted, across the delivery-count wrap", expected="the link kept open",
                actual=ended or "")
    after = link.flow_after_transfers()
    source = "a flow the broker sent on its own"
    if after is None:
        after = link.echo(requirement=None, settled=True)
        source = "the broker's answer to flow(echo=true)"
    accepted = link.accepted_bodies()
    depth = ctx.queue_depth(queue)
    ctx.observe(sent=count, accepted=len(accepted), outcomes=outcomes,
                flow_source=source if after is not None else None)
    ctx.require(not link.durable or depth is None or depth >= len(accepted), "3.2.1/durable-not-lost",
                f"the queue holds {depth} messages after {len(accepted)} of {count} durable transfers were accepted",
                expected=f"at least {len(accepted)} messages", actual=f"{depth} messages")
    if after is None:
        return ctx.unobservable("2.7.4/receiver-delivery-count",
                                "the broker sent no flow for the link after the wrapped transfers, on its own or as "
                                "an answer to echo (echo is a SHOULD, judged by 2.6.7/13)", accepted=len(accepted))
    wrapped = serial_add(0xFFFFFFFD, count)
    link.require_delivery_count(after, wrapped, requirement="2.7.4/receiver-delivery-count",
                                why=f"2^32 - 3 + {count} wraps to {wrapped}")
    return ctx.passed(f"delivery-count 0xfffffffd + {count} reported as {wrapped:#x} in {source}; "
                      f"{len(accepted)} of {count} accepted")


def _publish_across_the_wrap(ctx, queue: str, *, durable: bool):
    """A publisher from initial-delivery-count 2^32-3 on a new connection sends the whole credit granted (4
    when it exceeds WRAP_BUDGET); returns the link, how many it sent and how many outcomes came."""
    link = ctx.session().attach_sender(queue, initial_delivery_count=0xFFFFFFFD, durable=durable)
    link.expect_credit(requirement="2.6.7/initial-flow-state")
    link.require_credit_at_least(4)
    count = link.credit if link.credit <= WRAP_BUDGET else 4     # all of it: a broker wanting more must say so
    link.transfer(b"wrap-0")
    if durable:
        link.await_outcomes(1)      # a store that refuses durable messages says so at the first: send no more
    if send_pipelined(link, count) and count > 4:       # a broker topping the credit up (Artemis) does so
        link.await_outcomes(len(link.sent))             # while the burst arrives: its next top-up crosses
        cross_top_up_alone(link)                        # our last transfer alone (casekit/top_up.py)
    return link, len(link.sent), link.await_outcomes(len(link.sent))


@case("2.6.7/12", "Transfers beyond the granted credit: handled or detached, never lost silently",
      ["2.6.7/excess-transfers", "2.8.18/transfer-limit-exceeded", "2.6.5/link-error-detach",
       "2.6.7/initial-flow-state"], deliberate=["2.6.7/no-send-without-credit"],
      refusals_judged=REFUSALS,     # any answer to the excess is the subject
      expectation="send credit + 2 transfers -> either all are queued, or the link is detached with "
                  "amqp:link:transfer-limit-exceeded (informational which); a crash or silent loss fails")
def transfers_beyond_credit(ctx):
    """The spec lets the receiver handle excess transfers or detach with transfer-limit-exceeded."""
    queue = ctx.queue()
    session = ctx.session()
    link = session.attach_sender(queue, initial_delivery_count=0)
    link.expect_credit(requirement="2.6.7/initial-flow-state")
    credit = link.credit
    if credit > 500:
        return ctx.informational(f"the broker granted {credit} credits; the case does not exceed that many",
                                 credit=credit)
    for i in range(credit + 2):
        link.transfer(f"excess-{i}".encode(), allow_without_credit=True)
    outcome, seen = link.expect_handled_or_detached(credit + 2, condition="amqp:link:transfer-limit-exceeded",
                                                    requirement="2.6.5/link-error-detach")
    if outcome is Excess.HANDLED:
        depth = ctx.queue_depth(queue)
        ctx.require(depth is None or depth >= credit + 2, "2.6.7/excess-transfers",
                    f"the queue holds {depth} messages after {credit + 2} transfers: handling the excess normally "
                    "means queueing it; anything else is neither of the two behaviours the sentence permits",
                    expected=f"{credit + 2} messages", actual=f"{depth} messages")
    return ctx.informational(f"the broker {seen} the {credit + 2} transfers sent against {credit} credits",
                             credit=credit, outcome=outcome.value)


@case("2.6.7/13", "Echo from the peer as sender: the broker answers with its receiver-side state",
      ["2.7.4/echo", "2.7.4/receiver-delivery-count", "2.7.4/echo-no-loop", "2.6.7/initial-flow-state"],
      expectation="after sending 2, flow(echo=true) on the sender link -> flow with delivery-count = ours "
                  "and echo not set")
def echo_as_sender(ctx):
    """The receiver reports delivery-count as the last known value of the sender."""
    queue = ctx.queue()
    link = ctx.session().attach_sender(queue, initial_delivery_count=100)
    link.expect_credit(requirement="2.6.7/initial-flow-state")
    link.require_credit_at_least(2)
    link.transfer(b"one")
    link.transfer(b"two")
    reply = link.echo(requirement="2.7.4/echo")
    link.require_delivery_count(reply, 102, requirement="2.7.4/receiver-delivery-count",
                                why="the broker saw 2 transfers after initial-delivery-count 100")
    ctx.require(not reply.echo, "2.7.4/echo-no-loop", "the echo reply itself requested an echo",
                expected="echo unset or false", actual="echo=true")
    return ctx.passed("echo answered with delivery-count 102, without echo")


LIMIT = 10              # 2.6.7/14: the queue's limit in messages ...
LIMIT_BYTES = 10 * 1024  # ... or in bytes, where the broker takes no message limit (Artemis before 2.32)
PIPELINED_BURST = 200    # the pipelined publisher's cap: more than a broker reads before its credit-0 flow arrives


@case("2.6.7/14", "Queue at its limit: the publisher is throttled (by any means), resumes after consuming, loses nothing",
      ["2.6.7/link-credit-receiver", "2.6.7/no-send-without-credit", "2.6.7/initial-flow-state",
       "2.6.7/credit-formula", "3.2.1/durable-not-lost"], subject=["2.6.7/link-credit-receiver"],
      needs=("queue_length_limit|queue_size_limit",), own_node=True,
      expectation=f"queue limited to {LIMIT} messages (else {LIMIT_BYTES} bytes), durable messages: a synchronous "
                  "publisher (each transfer waits for its outcome) pushes past the broker's first credit grant "
                  "-> stopped by credit withdrawn or not topped up, window 0, rejected/released, or an ended link "
                  "(recorded with the message number and queue depth); consuming brings credit or acceptance "
                  "back (depth recorded); where credit was withdrawn, a pipelined publisher then shows the transfers "
                  "in flight; every "
                  "accepted message is consumed")
def queue_length_limit(ctx):
    """Throttling itself is not a spec requirement: a broker that stops the publisher by any means and loses
    nothing passes; one not throttled within the budget is recorded (informational)."""
    if ctx.broker.has_hook("queue_length_limit"):
        queue, limit_used, limit = ctx.queue(max_length=LIMIT), f"{LIMIT} messages", LIMIT
    else:
        queue, limit_used, limit = ctx.queue(max_length_bytes=LIMIT_BYTES), f"{LIMIT_BYTES} bytes", None
    publisher = ctx.session().attach_sender(queue, initial_delivery_count=0, durable=True)
    publisher.expect_credit(requirement="2.6.7/initial-flow-state")
    budget = Budget.past_first_grant(publisher.credit)
    synchronous = publish_synchronously(publisher, budget)
    resume = resume_by_consuming(ctx, publisher, synchronous, limit=limit)
    pipelined = None
    second = None
    if resume.resumed and synchronous.means is Means.CREDIT_WITHDRAWN:   # in flight: only where credit is withdrawn
        second = ctx.session().attach_sender(queue, initial_delivery_count=0, durable=True)   # a fresh producer
        second.expect_credit(requirement="2.6.7/initial-flow-state")
        pipelined = publish_pipelined(second, Budget(PIPELINED_BURST, budget.seconds), depth=resume.depth or 0)
    # consumed and accepted (a broker holding a producer counts unsettled messages) until every transfer has
    # its outcome: one the broker left unread is taken once the queue has room
    readers = consume_until_settled(ctx, queue, [link for link in (publisher, second) if link is not None])
    if pipelined is not None:
        count_in_flight(second, pipelined)
    drained = ctx.drain_queue(queue, *readers, *([resume.consumer] if resume.consumer else []))
    accepted = [b for link in (publisher, second, resume.publisher) if link is not None for b in link.accepted_bodies()]
    lost = lost_messages(accepted, drained)
    ctx.require(not lost, "3.2.1/durable-not-lost", f"{len(lost)} accepted durable messages were not there to "
                "consume after the queue limit", expected=f"each of the {len(accepted)} accepted messages consumed",
                actual="lost: " + ", ".join(b.decode(errors="replace") for b in lost[:5]))
    producer = producer_facts(limit_used, synchronous, resume, pipelined, lost=len(lost), accepted=len(accepted))
    summary = producer_summary(producer)
    if synchronous.means.throttled and not lost:
        return ctx.passed(summary, producer=producer)
    return ctx.informational(summary, producer=producer)
