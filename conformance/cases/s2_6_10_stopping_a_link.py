"""2.6.10 Stopping A Link — Figure 2.46.

The receiver sets link-credit to 0 while transfers are in flight: forced on every run (our reads are held
until the broker's next transfer is in our receive buffer, unread, so the stop's delivery-count is behind the
sender's, as in the figure). Transfers sent before the sender read the stop may still arrive (footnote 1);
none may come after it. Which ones came after is shown without echo: our session incoming-window stops the
broker at a known transfer-id until our next flow, sent after the stop, opens it; the broker reads our frames
in order, so every transfer past that barrier was sent after it read the stop. The echoed flow (footnote 2),
when the broker answers echo, is a second barrier.
"""

from ..casekit import case
from ..casekit.crossing import at_or_past, summarize_first
from ..wire import Transfer

QUEUED = 500
LATE = 20
WINDOW = 20          # our session incoming-window: the barrier
READ = 10            # transfers read before the stop (the rest of the window is in flight)


@case("2.6.10/1", "Stopping a link: a stop crossing transfers in flight; nothing after the broker read it, new "
      "credit resumes delivery", ["2.6.10/stopping-a-link", "2.6.7/no-send-without-credit", "2.6.7/credit-formula"],
      figure="2.46",
      expectation=f"{QUEUED} queued, session incoming-window {WINDOW}, credit {QUEUED}; once the {READ + 1}th transfer "
                  f"is in our receive buffer, unread: flow(delivery-count={READ}, link-credit=0, echo=true) keeping the "
                  "window, then a flow opening it; no transfer past the window's barrier (nor after the echoed "
                  f"flow), not even for {LATE} messages queued later; new credit delivers the rest in order, nothing "
                  "lost or duplicated")
def stopping_a_link(ctx):
    """Figure 2.46: in-flight transfers (1) may still arrive; once the sender has read the stop, no more.
    2.6.7: link-credit(snd) := delivery-count(rcv) + 0 - delivery-count(snd), which is <= 0 here."""
    queue = ctx.queue(preload=QUEUED)
    session = ctx.session(incoming_window=WINDOW)
    link = session.attach_receiver(queue)
    link.hold_reads_after(READ)
    link.flow(link_credit=QUEUED)
    link.expect_transfers(READ, requirement="2.6.7/no-send-without-credit")
    barrier = session.window_limit()
    crossing = link.send_crossing(lambda: link.flow(link_credit=0, echo=True, **session.keep_window()),
                                  "flow(link-credit=0, echo=true), our delivery-count behind the broker's")
    session.set_incoming_window(2048)                # the barrier: the broker reads this after the stop
    echoed = link.await_flow()                                               # (2), if it answers echo
    session.settle_by_barrier(queue, through_queue=True)
    link.take_arrived()
    ours = [(tid, f) for tid, f in session.transfer_ids() if f.body.handle == link.broker_handle]
    after_echo = link.transfers_after(echoed) if echoed is not None else []
    late = at_or_past(ours, barrier) + [f for f in after_echo if all(f is not g for g in at_or_past(ours, barrier))]
    own = link.flows_after(crossing.read_on_at)       # the broker's flows for the link once it read the stop
    ctx.observe(after_the_barrier=len(at_or_past(ours, barrier)), after_the_echoed_flow=len(after_echo),
                in_flight_after_stop=len(ours) - READ - len(late), barrier_transfer_id=barrier,
                broker_flow_after_stop=summarize_first(own))
    held = sum(1 for f in crossing.held if isinstance(f.body, Transfer))   # sent before it could read the stop
    dc = crossing.sent.body.delivery_count if crossing.sent is not None else None
    dc = f"{int(dc):#x}" if dc is not None and int(dc) > 0xFFFF else dc
    ctx.require(not late, "2.6.7/no-send-without-credit", f"the broker sent {len(late)} transfer(s) after it had "
                f"read our flow(delivery-count={dc}, link-credit=0), at least {held} behind its own "
                f"(link-credit(snd) = delivery-count(rcv) + 0 - delivery-count(snd) <= -{held}): their transfer-ids lie "
                f"past the session window our stop left in place (up to {barrier:#x}), which only our next flow opened"
                + (", or they came after its echoed flow" if after_echo else "")
                + (f"; its own flow afterwards: {summarize_first(own)}" if own else ""),
                expected="no transfer once the stop was read", conn=session.connection, frame=late[0] if late else None)
    if echoed is not None:
        link.require_credit(echoed, 0, requirement="2.6.7/credit-formula", why="the receiver set link-credit to 0")
    ctx.preload(queue, LATE)
    link.expect_no_transfer(requirement="2.6.7/no-send-without-credit",
                            why="messages queued after the stop must wait for new credit")
    remaining = QUEUED + LATE - len(link.received)
    link.flow(link_credit=remaining)
    link.expect_transfers(remaining, requirement="2.6.10/stopping-a-link")
    link.expect_no_transfer(requirement="2.6.7/no-send-without-credit")
    ctx.require(link.bodies() == ctx.preloaded_bodies(queue), "2.6.10/stopping-a-link",
                "messages were lost, duplicated or reordered across the stop",
                expected=f"{QUEUED + LATE} bodies in order", actual=f"{len(link.received)} transfers")
    crossed = "crossing forced" if crossing.happened else f"no transfer of the broker's crossed the stop: none came " \
        f"within the frame timeout after the first {READ}"
    return ctx.passed(f"quiesced: nothing past the barrier ({len(ours) - READ} in flight when the stop went out, "
                      f"{crossed}); resumed with {remaining}")
