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
    """Figure 2.44, footnote (2): no message within the timeout; drain makes the sender advance delivery-count."""
    queue = ctx.queue(preload=0)
    link = ctx.session().attach_receiver(queue)
    link.flow(link_credit=1)
    link.expect_no_transfer(requirement="2.6.7/no-send-without-credit")   # *wait for link-credit <= 0*
    start = link.delivery_count
    link.flow(link_credit=1, drain=True)
    reply = link.expect_flow(requirement="2.6.7/drain-advance", link_credit=0)
    link.require_delivery_count(reply, start + 1, requirement="2.6.7/drain-advance",
                                why="the unused credit of 1 must be consumed by advancing delivery-count")
    link.expect_no_transfer(requirement="2.6.7/no-send-without-credit")
    return ctx.passed("drain advanced delivery-count by the unused credit and set link-credit 0")


@case("2.6.8/3", "Synchronous get with timeout, message available: the transfer, then the drained flow",
      ["2.6.8/synchronous-get-timeout", "2.6.7/drain-advance"], figure="2.44",
      expectation="flow(link-credit=1), flow(drain=true) -> transfer, then flow(link-credit=0) "
                  "with delivery-count advanced by 1 in total")
def synchronous_get_timeout_available(ctx):
    """Figure 2.44, footnote (1): the message arrives; the drained flow comes after it and consumes nothing more."""
    queue = ctx.queue(preload=1)
    link = ctx.session().attach_receiver(queue)
    start = link.delivery_count
    link.flow(link_credit=1, drain=True)
    link.expect_transfers(1, requirement="2.6.8/synchronous-get-timeout")
    reply = link.expect_flow(requirement="2.6.7/drain-advance", link_credit=0)
    link.require_after_transfers(reply, requirement="2.6.7/drain-advance")
    link.require_delivery_count(reply, start + 1, requirement="2.6.7/drain-advance",
                                why="one transfer consumed the one credit")
    return ctx.passed("the transfer arrived, then the flow with link-credit 0 and delivery-count advanced by 1")
