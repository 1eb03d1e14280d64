"""2.6.8 Synchronous Get — Figures 2.43 (synchronous get) and 2.44 (synchronous get with a timeout).

The peer is the receiver (left in the figures), the broker the sender (right).
"""

from ..casekit import case


@case("2.6.8/1", "Synchronous get: link-credit 1 yields exactly one transfer, then nothing",
      ["2.6.8/synchronous-get", "2.6.7/no-send-without-credit"], figure="2.43",
      expectation="flow(link-credit=1) -> one transfer; no further transfer within the quiet period")
def synchronous_get(ctx):
    """Figure 2.43: flow(link-credit=1) ---> ; <--- transfer(...); block until it arrives."""
    queue = ctx.queue(preload=3)
    link = ctx.session().attach_receiver(queue)
    link.flow(link_credit=1)
    link.expect_transfers(1, requirement="2.6.8/synchronous-get")
    link.expect_no_transfer(requirement="2.6.7/no-send-without-credit")
    return ctx.passed("one credit produced exactly one transfer with 3 messages queued")


@case("2.6.8/2", "Synchronous get with timeout, empty queue: drain consumes the credit, no transfer",
      ["2.6.8/synchronous-get-timeout", "2.6.7/drain-advance"], figure="2.44",
      expectation="flow(link-credit=1), then flow(drain=true) -> flow with delivery-count advanced by 1 and "
                  "link-credit 0; no transfer")
def synchronous_get_timeout_empty(ctx):
    """Figure 2.44, footnote (2): no message within the timeout; drain makes the sender advance delivery-count.
    The credit is left after the sender sent what it had (nothing), so the drained flow is owed (2.6.7)."""
    queue = ctx.queue(preload=0)
    link = ctx.session().attach_receiver(queue)
    link.flow(link_credit=1)
    link.expect_no_transfer(requirement="2.6.7/no-send-without-credit")   # *wait for link-credit <= 0*
    start = link.delivery_count
    link.flow(link_credit=1, drain=True)
    link.expect_drain_completed(start, 1, messages=0, requirement="2.6.8/synchronous-get-timeout")
    link.expect_no_transfer(requirement="2.6.7/no-send-without-credit")
    return ctx.passed("drain advanced delivery-count by the unused credit and set link-credit 0")


@case("2.6.8/3", "Synchronous get with timeout, message available: the transfer completes the drain",
      ["2.6.8/synchronous-get-timeout", "2.6.7/drain-advance"], figure="2.44",
      expectation="1 queued, flow(link-credit=1, drain=true) -> the transfer, which uses the credit and so "
                  "completes the drain; a flow after it is optional (recorded) and, if sent, carries link-credit 0 "
                  "and delivery-count advanced by 1; no transfer and no flow while credit is left fails")
def synchronous_get_timeout_available(ctx):
    """Figure 2.44, footnote (1): the message arrives and consumes the credit. A drained flow is owed only
    when credit is left after the sender sent what it had (2.6.7: "If the sender's drain flag is set and there
    are no available messages, ..."); here the transfer carries the new delivery-count, so a flow after it is
    good behaviour, recorded (`drained_flow`), never a finding; its fields are judged if it comes."""
    queue = ctx.queue(preload=1)
    link = ctx.session().attach_receiver(queue)
    start = link.delivery_count
    link.flow(link_credit=1, drain=True)
    reply = link.expect_drain_completed(start, 1, messages=1, requirement="2.6.8/synchronous-get-timeout")
    return ctx.passed("the transfer used the credit and completed the drain"
                      + (", then a flow with link-credit 0" if reply is not None else " (no flow after it)"))
