"""2.7.4 Flow, the client's side: the fields of the flows a client library sends (delivery-count once it has
seen the sender's attach), echo answered, and a flow on a handle it never attached (the session MUST end)."""

from ..casekit import case
from ..casekit.client_context import INITIAL_DELIVERY_COUNT
from ..peer import ExpectationTimeout, PeerError
from ..wire import Close, End, Flow
from ..wire.serial import serial_add


@case("2.7.4/101", "Client receiver's first flow after our attach carries our initial delivery-count",
      ["2.7.4/receiver-delivery-count"], kind="client",
      expectation="attach(initial-delivery-count=2^32-5) -> the client's flow: delivery-count=2^32-5")
def client_flow_delivery_count(ctx):
    """2.7.4: from the receiver, delivery-count MUST be the last known value of the sending endpoint (and MUST
    NOT be set before it has seen the sender's attach)."""
    conn, link = ctx.open_receiver(5)
    conn.expect_flow(link, link_credit=lambda c: c is not None and c > 0)
    conn.transfer(link, "one")
    ctx.do("receive", timeout_ms=1000)
    conn.settle_down(Flow)
    # a flow that came after our attach and carries a delivery-count either saw the attach (then it is the
    # sender's: 2^32-5, or 2^32-4 once it counted our transfer) or did not (then it MUST NOT carry one);
    # flows that came before our attach the model judges
    after = [f for f in conn.client_frames(Flow)[0:] if f.body.handle == link.client_handle
             and f.body.delivery_count is not None and conn.arrived_index(f) >= link.attached_at]
    allowed = (INITIAL_DELIVERY_COUNT, serial_add(INITIAL_DELIVERY_COUNT, 1))
    for flow in after:
        if int(flow.body.delivery_count) not in allowed:
            ctx.finding("2.7.4/receiver-delivery-count", "the client's flow does not carry the sender's "
                        "delivery-count from our attach", conn, flow,
                        expected=f"delivery-count={INITIAL_DELIVERY_COUNT:#x} (or +1 after our transfer)",
                        actual=f"delivery-count={flow.body.delivery_count}")
            break
    return ctx.passed("the client's flow carried the initial delivery-count of our attach")


@case("2.7.4/102", "Client sender answers echo: its flow state comes back",
      ["2.7.4/echo"], kind="client",
      expectation="flow(link-credit=3, echo=true) to the client's sender -> its flow (without echo)")
def client_sender_echo(ctx):
    """2.7.4: If set to true then the receiver SHOULD send its state at the earliest convenient opportunity."""
    conn = ctx.connect()
    opened = ctx.app("sender", address="q")
    link = conn.expect_attach()
    ctx.answer(opened)
    conn.flow(link, link_credit=3, echo=True)
    try:
        conn.expect_flow(link, timeout=ctx.answer_window())
    except ExpectationTimeout:
        ctx.finding("2.7.4/echo", "the client's sender did not answer our echo", conn,
                    expected="its flow state", actual=f"no flow within {ctx.answer_window():.1f} s")
    return ctx.passed("the client answered the echo with its flow state")


@case("2.7.4/104", "Client receiver answers echo from the sender: its flow state comes back",
      ["2.7.4/echo"], kind="client",
      expectation="flow(delivery-count, link-credit, echo=true) from our sender -> the client's flow")
def client_receiver_echo(ctx):
    """2.7.4 echo, the other way: the sender asks the receiving client for its state."""
    conn, link = ctx.open_receiver(5)
    conn.expect_flow(link, link_credit=lambda c: c is not None and c > 0)
    conn.flow(link, link_credit=5, available=0, echo=True)
    try:
        conn.expect_flow(link, timeout=ctx.answer_window())
    except ExpectationTimeout:
        ctx.finding("2.7.4/echo", "the client's receiver did not answer our echo", conn,
                    expected="its flow state", actual=f"no flow within {ctx.answer_window():.1f} s")
    return ctx.passed("the client answered the echo with its flow state")


@case("2.7.4/103", "Client ends the session with unattached-handle when the broker flows on a handle it never "
      "attached", ["2.7.4/unattached-handle"], kind="client",
      expectation="flow(handle=9) on a session whose only link is handle 0 -> end(error=amqp:session:unattached-handle)")
def client_unattached_handle(ctx):
    """2.7.4: If set to a handle that is not currently associated with an attached link, the recipient MUST
    respond by ending the session with an unattached-handle session error."""
    conn, link = ctx.open_receiver(5)
    conn.expect_flow(link, link_credit=lambda c: c is not None and c > 0)
    conn.peer.flow(link.channel, handle=link.handle + 9, delivery_count=0, link_credit=1)
    try:
        frame = conn.expect((End, Close), timeout=ctx.answer_window())
    except ExpectationTimeout:
        ctx.finding("2.7.4/unattached-handle", "the client ignored a flow on an unattached handle", conn,
                    expected="end(error=amqp:session:unattached-handle)",
                    actual=f"no end within {ctx.answer_window():.1f} s")
        return ctx.passed("(ignored)")
    except PeerError as exc:
        ctx.finding("2.7.4/unattached-handle", "the client dropped the connection instead of ending the session "
                    "with unattached-handle", conn, expected="end(error=amqp:session:unattached-handle)",
                    actual=f"the connection ended ({conn.peer.ending or type(exc).__name__}), no end frame")
        return ctx.passed("(dropped)")
    condition = conn.peer.error_condition(frame)
    if not isinstance(frame.body, End) or condition != "amqp:session:unattached-handle":
        ctx.finding("2.7.4/unattached-handle", "the client did not end the session with unattached-handle", conn,
                    frame, expected="end(error=amqp:session:unattached-handle)")
    return ctx.passed("the client ended the session with unattached-handle")
