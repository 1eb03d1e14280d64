"""2.7.3 Attach — the broker as sender announces its initial-delivery-count."""

from ..casekit import case


@case("2.7.3/1", "The broker as sender sets initial-delivery-count in its attach",
      ["2.7.3/initial-delivery-count-sender", "2.6.7/initial-flow-state"],
      expectation="attach as receiver -> the broker's attach (role sender) carries initial-delivery-count")
def initial_delivery_count_set(ctx):
    """This MUST NOT be null if role is sender."""
    queue = ctx.queue()
    link = ctx.session().attach_receiver(queue, require_initial_delivery_count=False)
    attach = link.broker_attach
    ctx.require(attach.initial_delivery_count is not None, "2.7.3/initial-delivery-count-sender",
                "the broker's sender attach has no initial-delivery-count",
                expected="initial-delivery-count set", actual="null")
    return ctx.passed(f"initial-delivery-count {int(attach.initial_delivery_count):#010x}")
