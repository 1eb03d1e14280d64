"""2.6.8 Synchronous Get, the client's side — Figure 2.44 (synchronous get with a timeout) as client libraries
offer it (JMS `receive(timeout)` with prefetch 0, proton's `receive(timeout)`, go-amqp's `Receive(ctx)`).

The suite is the broker (the sender, right in the figure); the client library is the receiver. Our attach
starts the delivery-count at 2^32-5, so the counts the client must echo are near the serial wrap.
"""

from ..casekit import case
from ..clients.driver import DriverError
from ..wire import End

TIMEOUT_MS = 400


def _get_with_timeout(ctx):
    """The application opens a receiver with no prefetch and gets with TIMEOUT_MS on an empty queue: our end
    of the link, the pending receive, the client's credit grant and its drain flow (None when it sent none
    within the timeout and the answer window)."""
    link = ctx.receiver(0)
    got = ctx.app("receive", timeout_ms=TIMEOUT_MS)
    grant = link.expect_credit()
    # bounded by the timeout and the answer window; once the receive came back to the application the
    # library is done with the get: one quiet period more for a drain it sends after returning
    drain = link.await_flow_until(got, drain=True, timeout=TIMEOUT_MS / 1000 + ctx.answer_window())
    return link, got, grant, drain


@case("2.6.8/101", "Client receive(timeout), no message: its drain, then its next flow counts the drained credit",
      ["2.7.4/receiver-delivery-count", "2.6.8/synchronous-get-timeout"], kind="client", figure="2.44",
      expectation="flow(link-credit=1); at the timeout flow(drain=true); after our flow(delivery-count+1, "
                  "link-credit=0) the next receive's flow carries delivery-count advanced by 1")
def client_get_timeout_drained(ctx):
    """The application gets with a timeout on an empty queue: the credit it grants, the drain it sends when the
    time is up, and — after our drained flow consumed the credit — its next flow's delivery-count."""
    link, got, grant, drain = _get_with_timeout(ctx)
    link.drained(drain if drain is not None else grant, drain=drain is not None)
    first = ctx.answer(got)
    ctx.observe(drain_sent=drain is not None, first_receive=first)
    ctx.require(drain is not None, "2.6.8/synchronous-get-timeout", "the client sent no drain when the receive "
                "timed out (its credit stays granted)", expected="flow(drain=true) after the timeout",
                actual="no flow with drain", conn=link.conn)
    expected_dc = link.delivery_count         # ours, after the drained flow
    again = ctx.app("receive", timeout_ms=TIMEOUT_MS * 3)
    nxt = link.await_flow(link_credit=lambda c: c is not None and c > 0,
                          timeout=TIMEOUT_MS / 1000 + ctx.answer_window())
    if nxt is not None:
        link.transfer("after-drain")
        dc = nxt.body.delivery_count
        ctx.require(dc is not None and int(dc) == expected_dc, "2.7.4/receiver-delivery-count", "after the drained "
                    "flow the client's flow does not carry the sender's delivery-count",
                    expected=f"delivery-count={expected_dc:#x}", actual=f"delivery-count={dc}", conn=link.conn,
                    frame=nxt)
    ctx.observe(second_receive=ctx.answer(again))
    if nxt is None:
        return ctx.informational("after the drained get the client granted no more credit for the next receive")
    return ctx.passed("the get sent credit, the timeout a drain, and the next flow counted the drained credit")


@case("2.6.8/102", "Client receive(timeout): the message comes with the drain, before the drained flow",
      ["2.6.8/synchronous-get-timeout", "2.7.4/receiver-delivery-count"], kind="client", figure="2.44",
      expectation="flow(link-credit=1), flow(drain=true) <- transfer, flow(link-credit=0): the application "
                  "gets the message")
def client_get_timeout_message_at_drain(ctx):
    """Footnote (1) of Figure 2.44 from the receiver's side: the message arrives in answer to the drain. The
    link-credit was consumed by the transfer, so the receiver can tell a message arrived: the application
    should get it (informative: what it got is recorded, from the library's own return values)."""
    link, got, _, drain = _get_with_timeout(ctx)
    link.transfer("at-the-drain")
    link.drained(drain=drain is not None)
    answer = ctx.answer(got)
    messages = list(answer.get("messages") or [])
    if not messages:                 # the library may hand it to the next receive
        messages = list(ctx.do("receive", timeout_ms=TIMEOUT_MS).get("messages") or [])
    ctx.observe(drain_sent=drain is not None, messages=messages)
    ctx.require("at-the-drain" in messages, "2.6.8/synchronous-get-timeout", "the message that consumed the credit "
                "never reached the application", expected="the application gets 'at-the-drain'",
                actual=f"the library's receive returned {messages}", conn=link.conn)
    return ctx.passed("the message that answered the drain reached the application")


@case("2.6.8/103", "Broker ends the session during the client's drain: the application is told, nothing hangs",
      ["2.6.8/synchronous-get-timeout"], kind="client", figure="2.44",
      expectation="flow(drain=true) <- end(error=amqp:internal-error): the receive returns an error (or a "
                  "timeout) within its own timeout plus the frame timeout; the client answers with end")
def client_session_ended_during_drain(ctx):
    """The broker cannot fill the drain and ends the session (as brokers do under resource trouble): the
    receive must come back to the application, and the client should end its side too."""
    link, got, _, drain = _get_with_timeout(ctx)
    link.end_session(error="amqp:internal-error")
    try:
        answer = ctx.answer(got)
    except DriverError as exc:
        ctx.add_finding("2.6.8/synchronous-get-timeout", "the receive never came back after the broker ended the "
                        "session", expected="an error or a timeout for the application", actual=str(exc),
                        conn=link.conn)
        raise
    ended = link.await_ending(End)
    told = (not answer.get("ok")) or bool(answer.get("events"))
    ctx.observe(drain_sent=drain is not None, application=answer, client_ended=ended is not None)
    how = f"told of the error ({answer.get('error') or answer.get('events')})" if told else "saw a plain timeout"
    return ctx.informational(f"the receive came back in {answer.get('ms')} ms; the application {how}; the client "
                             f"{'answered' if ended is not None else 'did not answer'} with end")
