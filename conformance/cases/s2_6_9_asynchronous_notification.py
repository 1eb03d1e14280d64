"""2.6.9 Asynchronous Notification — Figure 2.45.

The peer keeps a target amount of link-credit and tops it up as transfers stream in; the broker must never
exceed the delivery-limit in force, checked frame by frame by the flow-control model over the transcript.
"""

from .base import case

TARGET = 200
THRESHOLD = 100
MESSAGES = 1000


@case("2.6.9/1", "Asynchronous notification: a credit window topped up while transfers stream",
      ["2.6.9/asynchronous-notification", "2.6.7/no-send-without-credit", "2.6.7/credit-formula"],
      figure="2.45",
      expectation=f"{MESSAGES} queued; keep link-credit at {TARGET}, top up below {THRESHOLD} -> all {MESSAGES} "
                  "arrive in order, and no transfer ever exceeds the delivery-limit in force")
def asynchronous_notification(ctx):
    """Figure 2.45: flow(link-credit=delta) crosses transfers in flight; the model judges each transfer."""
    queue = ctx.queue(preload=MESSAGES)
    link = ctx.session().attach_receiver(queue)
    link.flow(link_credit=TARGET)
    bodies = []
    outstanding = TARGET
    while len(bodies) < MESSAGES:
        transfer = link.expect_transfers(1, requirement="2.6.9/asynchronous-notification")[0]
        bodies.append(link.body_of(transfer))
        outstanding -= 1
        if outstanding < THRESHOLD:
            link.flow(link_credit=TARGET)        # restore the target: delivery-limit = delivery-count + TARGET
            outstanding = TARGET
    link.expect_no_transfer(requirement="2.6.7/no-send-without-credit")
    ctx.require_model_clean()
    ctx.require(bodies == ctx.preloaded_bodies(queue), "2.6.9/asynchronous-notification",
                "messages were lost, duplicated or reordered",
                expected=f"{MESSAGES} bodies in queue order", actual=f"{len(bodies)} bodies, order differs")
    return ctx.passed(f"{MESSAGES} transfers in order, delivery-limit never exceeded")
