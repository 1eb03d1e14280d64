"""2.5.6 Session Flow Control — incoming/outgoing windows and the transfer-id sequence.

The peer's session windows are set through begin and flow; the broker must count transfer frames against
the window it was last told (remote-incoming-window) and keep its own transfer-ids consistent.
"""

from .base import case


@case("2.5.6/1", "Peer incoming-window 0: no transfer despite link credit; widening the window resumes",
      ["2.5.6/remote-incoming-window-formula", "2.5.6/remote-incoming-window-decrement", "2.5.6/incoming-window"],
      expectation="begin(incoming-window=0), credit 5, 5 queued -> nothing; flow(incoming-window=3) -> exactly 3; "
                  "flow(incoming-window=100) -> the other 2")
def incoming_window_zero(ctx):
    """remote-incoming-window = next-incoming-id(flow) + incoming-window(flow) - next-outgoing-id(endpoint)."""
    queue = ctx.queue(preload=5)
    session = ctx.session(incoming_window=0)
    link = session.attach_receiver(queue)
    link.flow(link_credit=5)
    link.expect_no_transfer(requirement="2.5.6/remote-incoming-window-decrement",
                            why="the peer's incoming-window is 0")
    session.set_incoming_window(3)
    link.expect_transfers(3, requirement="2.5.6/remote-incoming-window-decrement")
    link.expect_no_transfer(requirement="2.5.6/remote-incoming-window-decrement",
                            why="a window of 3 admits exactly 3 transfer frames")
    session.set_incoming_window(100)
    link.expect_transfers(2, requirement="2.5.6/remote-incoming-window-decrement")
    return ctx.passed("no transfer with window 0, exactly 3 with window 3, the rest after widening")


@case("2.5.6/2", "Peer exceeds the broker's incoming-window (informational)",
      ["2.5.6/incoming-window", "2.8.17/window-violation", "2.5.4/session-error-end"],
      expectation="send remote-incoming-window + 1 transfer frames without waiting -> the broker ends the session "
                  "with amqp:session:window-violation, or handles them (recorded)")
def exceed_broker_window(ctx):
    """The spec defines window-violation but not what a receiving endpoint must do: record what it does."""
    queue = ctx.queue()
    session = ctx.session()
    window = session.remote_incoming_window
    if window > 5000:
        return ctx.informational(f"the broker's incoming-window is {window}: too large to exceed within the "
                                 "case budget", broker_incoming_window=window)
    links = [session.attach_sender(queue, initial_delivery_count=0)]
    links[0].expect_credit(requirement="2.6.7/initial-flow-state")
    while sum(link.credit for link in links) <= window and len(links) < 20:
        link = session.attach_sender(queue, initial_delivery_count=0)
        link.expect_credit(requirement="2.6.7/initial-flow-state")
        links.append(link)
    to_send = window + 1
    sent = 0
    for link in links:
        while link.credit > 0 and sent < to_send:
            link.transfer(f"w-{sent}".encode(), ignore_session_window=True)
            sent += 1
    outcome = session.observe_window_excess(sent)
    ctx.require(outcome != "dropped the connection without a close frame", "2.5.4/session-error-end",
                "the broker dropped the connection instead of ending the session with an error",
                expected="end(error=amqp:session:window-violation) or the transfers handled", actual=outcome)
    return ctx.informational(f"sent {sent} transfers against an incoming-window of {window}: the broker {outcome}",
                             broker_incoming_window=window, sent=sent, outcome=outcome)


@case("2.5.6/3", "The broker's flows carry next-incoming-id and next-outgoing-id consistent with the transfers",
      ["2.5.6/update-from-flow", "2.5.6/next-outgoing-id-serial", "2.7.4/next-incoming-id-set", "2.7.4/echo"],
      expectation="receive 3 and publish 2, then flow(echo=true) without handle -> the broker's flow has "
                  "next-outgoing-id = its begin's + 3 and next-incoming-id = ours + 2")
def session_sequence_numbers(ctx):
    """next-incoming-id must follow our next-outgoing-id; the broker's transfer-ids advance by one per frame."""
    inbound = ctx.queue(preload=3)
    outbound = ctx.queue()
    session = ctx.session()
    receiver = session.attach_receiver(inbound)
    receiver.flow(link_credit=3)
    receiver.expect_transfers(3, requirement="2.6.7/credit-formula")
    sender = session.attach_sender(outbound, initial_delivery_count=0)
    sender.expect_credit(requirement="2.6.7/initial-flow-state")
    sender.require_credit_at_least(2)
    sender.transfer(b"a")
    sender.transfer(b"b")
    reply = session.echo(requirement="2.7.4/echo")
    ctx.require(reply.next_incoming_id is not None, "2.7.4/next-incoming-id-set",
                "the broker's flow omits next-incoming-id after it received our begin",
                expected="next-incoming-id set", actual="absent")
    session.require_next_incoming_id(reply, session.next_outgoing_id, requirement="2.5.6/update-from-flow")
    session.require_next_outgoing_id(reply, session.broker_initial_outgoing_id + 3,
                                     requirement="2.5.6/next-outgoing-id-serial")
    return ctx.passed("next-incoming-id and next-outgoing-id matched the 2 and 3 transfers exchanged")

