"""2.7.4 Flow — the fields of the flow performative: echo, handle, and link fields on session-only flows."""

from ..casekit import REFUSALS, case


@case("2.7.4/1", "Echo on a link flow: the broker answers with its link state, without echo",
      ["2.7.4/echo", "2.7.4/echo-no-loop", "2.7.4/sender-delivery-count-set", "2.6.7/credit-decrease-on-send"],
      subject=["2.7.4/echo", "2.7.4/sender-delivery-count-set"],
      expectation="credit 5, 2 queued -> 2 transfers; flow(echo=true) -> flow(handle, delivery-count = start + 2, "
                  "link-credit = 3, available) with echo not set")
def echo_on_link(ctx):
    """The sender's flow state: delivery-count advanced by the transfers, link-credit lowered by as many."""
    queue = ctx.queue(preload=2)
    link = ctx.session().attach_receiver(queue)
    start = link.delivery_count
    link.flow(link_credit=5)
    link.expect_transfers(2, requirement="2.6.7/no-send-without-credit")
    link.flow(link_credit=3, echo=True)
    reply = link.expect_flow(requirement="2.7.4/echo")
    link.require_delivery_count(reply, start + 2, requirement="2.7.4/sender-delivery-count-set",
                                why="the sender's flow carries its current delivery-count")
    ctx.require(reply.link_credit == 3, "2.6.7/credit-decrease-on-send",
                "the broker's link-credit does not match the delivery-limit we set",
                expected="link-credit 3", actual=f"link-credit {reply.link_credit}")
    ctx.require(not reply.echo, "2.7.4/echo-no-loop", "the echo reply itself requested an echo",
                expected="echo unset or false", actual="echo=true")
    return ctx.passed(f"echo answered: delivery-count {int(reply.delivery_count):#x}, link-credit 3, "
                      f"available {reply.available}")


@case("2.7.4/2", "Echo on a session-only flow: session state echoed, no link fields without a handle",
      ["2.7.4/echo", "2.7.4/echo-session", "2.7.4/link-fields-need-handle", "2.7.4/echo-no-loop"],
      subject=["2.7.4/echo", "2.7.4/link-fields-need-handle"],
      expectation="flow(echo=true) without handle -> a flow with session fields; if it has no handle it carries "
                  "no delivery-count, link-credit, available, drain or properties")
def echo_on_session(ctx):
    """The reply MAY carry link state (with a handle); without a handle, link fields MUST NOT be set."""
    session = ctx.session()
    reply = session.echo(requirement="2.7.4/echo")
    if reply.handle is None:
        present = [f for f in ("delivery_count", "link_credit", "available", "properties")
                   if getattr(reply, f) is not None] + (["drain"] if reply.drain else [])
        ctx.require(not present, "2.7.4/link-fields-need-handle",
                    "the broker's session-only flow carries link fields",
                    expected="no link fields without a handle", actual=", ".join(present))
    ctx.require(not reply.echo, "2.7.4/echo-no-loop", "the echo reply itself requested an echo",
                expected="echo unset or false", actual="echo=true")
    return ctx.passed("session state echoed" + (" with link state" if reply.handle is not None else ""))


@case("2.7.4/3", "Flow on an unattached handle: the session is ended with unattached-handle",
      ["2.7.4/unattached-handle", "2.8.17/unattached-handle", "2.5.4/session-error-end"],
      deliberate=["2.7.4/unattached-handle"],
      refusals_judged=REFUSALS,     # the broker's error answer is the subject
      expectation="flow(handle=7) with no link on handle 7 -> end(error=amqp:session:unattached-handle)")
def flow_unattached_handle(ctx):
    """The recipient MUST respond by ending the session with an unattached-handle session error."""
    session = ctx.session()
    session.flow(handle=7, link_credit=1, delivery_count=0)
    session.expect_session_error("amqp:session:unattached-handle", requirement="2.7.4/unattached-handle")
    return ctx.passed("the session was ended with amqp:session:unattached-handle")


@case("2.7.4/4", "A receiver's flow omitting delivery-count before the sender's attach is accepted",
      ["2.7.4/receiver-delivery-count", "2.6.7/unknown-delivery-count"], subject=["2.6.7/unknown-delivery-count"],
      expectation="attach receiver and send flow(link-credit=1) without delivery-count in the same write, before "
                  "the broker's attach -> the broker attaches and sends one transfer")
def flow_before_sender_attach(ctx):
    """Before the receiving endpoint has seen the sender's attach, delivery-count MUST NOT be set (our side
    keeps that); the broker, the sender, must then assume its own initial delivery-count (its subject)."""
    queue = ctx.queue(preload=2)
    session = ctx.session()
    link = session.attach_receiver(queue, pipelined_flow={"link_credit": 1})
    link.expect_transfers(1, requirement="2.6.7/unknown-delivery-count")
    link.expect_no_transfer(requirement="2.6.7/no-send-without-credit")
    return ctx.passed("the pipelined flow without delivery-count granted exactly one transfer")
