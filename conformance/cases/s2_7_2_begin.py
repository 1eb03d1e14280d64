"""2.7.2 Begin — handle-max: a handle outside the range the broker announced."""

from ..casekit import REFUSALS, case


@case("2.7.2/1", "Attach with a handle above the broker's handle-max: connection closed with framing-error",
      ["2.7.2/handle-max"], deliberate=["2.7.2/handle-max"],
      refusals_judged=REFUSALS,     # the broker's error answer is the subject
      expectation="attach(handle = handle-max + 1) -> close(error=amqp:connection:framing-error)")
def handle_above_handle_max(ctx):
    """A peer that receives a handle outside the supported range MUST close the connection with framing-error."""
    session = ctx.session()
    handle_max = session.broker_handle_max
    if handle_max >= 0xFFFFFFFF:
        return ctx.informational("the broker's handle-max is 2^32-1: no handle lies outside its range",
                                 handle_max=handle_max)
    queue = ctx.queue()
    session.attach_raw_receiver(queue, handle=handle_max + 1)
    session.expect_connection_error("amqp:connection:framing-error", requirement="2.7.2/handle-max")
    return ctx.passed(f"handle {handle_max + 1} above handle-max {handle_max} closed the connection")
