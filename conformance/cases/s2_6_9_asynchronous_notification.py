"""2.6.9 Asynchronous Notification — Figure 2.45.

The peer keeps a target amount of link-credit and tops it up as transfers stream in; the broker must never
exceed the delivery-limit in force, checked frame by frame by the flow-control model over the transcript
(after every case).
"""

from ..casekit import case
from ..wire import serial_diff

TARGET = 200
STEP = 10          # top up after every STEP transfers: each top-up crosses the broker's transfers in flight
MESSAGES = 1000
WINDOW = 2 * STEP  # the session incoming-window: the broker holds the rest of the granted credit back


@case("2.6.9/1", "Asynchronous notification: a credit window topped up while transfers stream",
      ["2.6.9/asynchronous-notification", "2.6.7/no-send-without-credit", "2.6.7/credit-formula"],
      figure="2.45",
      expectation=f"{MESSAGES} queued; keep link-credit at {TARGET}: after every {STEP} transfers consumed, "
                  f"flow(delivery-count=start + consumed, link-credit={TARGET}), which crosses the transfers in flight "
                  f"-> all {MESSAGES} arrive in order, and no transfer ever exceeds the delivery-limit in force")
def asynchronous_notification(ctx):
    """Figure 2.45: flow(link-credit=delta) crosses transfers in flight; the model judges each transfer.
    More messages are queued than the case ever grants credit for, so a sender that adds credit instead of
    setting it overruns the final delivery-limit whatever the timing. Each top-up is sent while most of the
    credit granted is still unused and names the delivery-count we consumed up to, so the broker has transfers
    in flight when it takes the new flow: a sender that does not count those against
    delivery-count(rcv) + link-credit(rcv) overruns the limit. A session incoming-window of 2 x STEP (every
    top-up reopens it) keeps most of the granted credit held back inside the broker, counted by its queue but
    not yet transferred, when each top-up arrives: without it RabbitMQ 3.10 overran the limit in 15 of 16
    runs, depending on how far its queue ran ahead of its session; with it, in every run (2.6.7/3 holds
    transfers back the same way). The last grant is then let through by widening the window."""
    queue = ctx.queue(preload=MESSAGES + 3 * TARGET)
    link = ctx.session(incoming_window=WINDOW).attach_receiver(queue)
    start = link.delivery_count
    limit = link.flow(link_credit=TARGET)              # the delivery-limit this flow identifies
    received = 0
    while received < MESSAGES:
        link.expect_transfers(1, requirement="2.6.9/asynchronous-notification")
        received += 1
        if received % STEP == 0 and received < MESSAGES:
            # back to the target from what we consumed: delivery-count(rcv) = start + received, behind the
            # sender's by the transfers under way, which the sender must count against the new limit
            limit = link.flow(link_credit=TARGET, delivery_count=start + received)
    remaining = serial_diff(int(start + received), limit)
    link.session.set_incoming_window(TARGET)             # the window no longer holds the last grant back
    link.expect_transfers(remaining, requirement="2.6.9/asynchronous-notification")   # the last grant
    link.expect_no_transfer(requirement="2.6.7/no-send-without-credit",
                            why="every credit granted has been used; more messages are queued")
    bodies = link.bodies()
    ctx.require(bodies == ctx.preloaded_bodies(queue)[:len(bodies)], "2.6.9/asynchronous-notification",
                "messages were lost, duplicated or reordered",
                expected=f"{len(bodies)} bodies in queue order", actual="order differs")
    return ctx.passed(f"{len(bodies)} transfers in order, delivery-limit never exceeded")
