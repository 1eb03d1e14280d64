"""2.6.10 Stopping A Link — Figure 2.46.

The receiver sets link-credit to 0 with echo=true while transfers are in flight. Transfers sent before the
sender saw the new state may still arrive (footnote 1); after the echoed flow, none may (footnote 2).
"""

from ..casekit import case

QUEUED = 500
LATE = 20


@case("2.6.10/1", "Stopping a link: after the echoed flow no transfer arrives; new credit resumes delivery",
      ["2.6.10/stopping-a-link", "2.6.7/no-send-without-credit", "2.6.7/credit-formula"], figure="2.46",
      expectation=f"{QUEUED} queued, credit {QUEUED}; flow(link-credit=0, echo=true) mid-stream -> the echoed flow; "
                  f"no transfer after it, not even for {LATE} messages queued later; new credit delivers the rest "
                  "in order, nothing lost or duplicated")
def stopping_a_link(ctx):
    """Figure 2.46: in-flight transfers (1) may still arrive; after the sender's flow (2), no more.
    A small session window keeps most of the credit unused at the broker when the stop arrives, so the
    broker's answer shows whether it set its link-credit to 0, whatever the timing."""
    queue = ctx.queue(preload=QUEUED)
    session = ctx.session(incoming_window=20)
    link = session.attach_receiver(queue)
    link.flow(link_credit=QUEUED)
    link.expect_transfers(10, requirement="2.6.7/no-send-without-credit")
    link.flow(link_credit=0, echo=True)
    mark = link._mark
    session.set_incoming_window(2048)       # processed after the stop: only what was in flight may come
    link._mark = mark
    echoed = link.await_flow()                                               # (2)
    if echoed is None:
        return ctx.unobservable("2.6.10/stopping-a-link", "the broker answered no flow(echo=true): the point "
                                "after which no transfer may come (footnote 2) is not shown (echo is a SHOULD, "
                                "judged by 2.7.4/1)")
    link.require_credit(echoed, 0, requirement="2.6.7/credit-formula",
                        why="the receiver set link-credit to 0")
    in_flight = link.take_transfers_before(echoed) - 10                      # (1)
    link.expect_no_transfer(requirement="2.6.7/no-send-without-credit",
                            why="the echoed flow showed link-credit 0 at the sender")
    ctx.preload(queue, LATE)
    link.expect_no_transfer(requirement="2.6.7/no-send-without-credit",
                            why="messages queued after the stop must wait for new credit")
    remaining = QUEUED + LATE - len(link.received)
    link.flow(link_credit=remaining)
    link.expect_transfers(remaining, requirement="2.6.10/stopping-a-link")
    link.expect_no_transfer(requirement="2.6.7/no-send-without-credit")
    ctx.observe(in_flight_after_stop=in_flight, resumed=remaining)
    ctx.require(link.bodies() == ctx.preloaded_bodies(queue), "2.6.10/stopping-a-link",
                "messages were lost, duplicated or reordered across the stop",
                expected=f"{QUEUED + LATE} bodies in order", actual=f"{len(link.received)} transfers")
    return ctx.passed(f"quiesced after the echoed flow ({in_flight} in flight after the stop); "
                      f"resumed with {remaining}")
