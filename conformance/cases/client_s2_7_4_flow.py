"""2.7.4 Flow, the client's side: the fields of the flows a client library sends (delivery-count once it has
seen the sender's attach), echo answered, and a flow on a handle it never attached (the session MUST end)."""

import contextlib
from typing import NoReturn

from ..casekit import case
from ..casekit.client_context import INITIAL_DELIVERY_COUNT
from ..clients.driver import DriverError
from ..peer import PeerError
from ..peer.errors import MalformedInput
from ..wire import Close, End
from ..wire.loose import describe_frame, missing_mandatory
from ..wire.serial import serial_add

AFTER = "after-the-flow"        # 2.7.4/103: the message right behind our flow(handle=9)


@case("2.7.4/101", "Client receiver's first flow after our attach carries our initial delivery-count",
      ["2.7.4/receiver-delivery-count"], kind="client",
      expectation="attach(initial-delivery-count=2^32-5) -> the client's flow: delivery-count=2^32-5")
def client_flow_delivery_count(ctx):
    """2.7.4: from the receiver, delivery-count MUST be the last known value of the sending endpoint (and MUST
    NOT be set before it has seen the sender's attach)."""
    link = ctx.receiver(5)
    link.expect_credit()
    link.transfer("one")
    ctx.do("receive", timeout_ms=1000)
    link.settle_flows()
    # a flow that came after our attach and carries a delivery-count either saw the attach (then it is the
    # sender's: 2^32-5, or 2^32-4 once it counted our transfer) or did not (then it MUST NOT carry one);
    # flows that came before our attach the model judges
    allowed = (INITIAL_DELIVERY_COUNT, serial_add(INITIAL_DELIVERY_COUNT, 1))
    wrong = next((f for f in link.flows_after(link.attached_at) if f.body.delivery_count is not None
                  and int(f.body.delivery_count) not in allowed), None)
    ctx.require(wrong is None, "2.7.4/receiver-delivery-count", "the client's flow does not carry the sender's "
                "delivery-count from our attach", expected=f"delivery-count={INITIAL_DELIVERY_COUNT:#x} (or +1 after "
                "our transfer)", conn=link.conn, frame=wrong)
    return ctx.passed("the client's flow carried the initial delivery-count of our attach")


@case("2.7.4/102", "Client sender answers echo: its flow state comes back",
      ["2.7.4/echo"], kind="client",
      expectation="flow(link-credit=3, echo=true) to the client's sender -> its flow (without echo)")
def client_sender_echo(ctx):
    """2.7.4: If set to true then the receiver SHOULD send its state at the earliest convenient opportunity."""
    link = ctx.sender()
    link.echo(requirement="2.7.4/echo", link_credit=3)      # after its own flows (one on attach is no answer)
    return ctx.passed("the client answered the echo with its flow state")


@case("2.7.4/104", "Client receiver answers echo from the sender: its flow state comes back",
      ["2.7.4/echo"], kind="client",
      expectation="flow(delivery-count, link-credit, echo=true) from our sender -> the client's flow")
def client_receiver_echo(ctx):
    """2.7.4 echo, the other way: the sender asks the receiving client for its state."""
    link = ctx.receiver(5)
    grant = link.expect_credit()
    # at once after its grant (an earlier flow still unread is not the answer: only one after our echo is)
    link.echo(requirement="2.7.4/echo", settled=True, link_credit=int(grant.body.link_credit), available=0)
    return ctx.passed("the client answered the echo with its flow state")


@case("2.7.4/103", "Client ends the session with unattached-handle when the broker flows on a handle it never "
      "attached", ["2.7.4/unattached-handle"], kind="client", deliberate=["2.7.4/unattached-handle"],
      expectation="flow(handle=9) on a session whose only link is handle 0 (then a message on that link: the "
                  "application receiving it is the round trip that bounds the wait) -> "
                  "end(error=amqp:session:unattached-handle)")
def client_unattached_handle(ctx):
    """2.7.4: If set to a handle that is not currently associated with an attached link, the recipient MUST
    respond by ending the session with an unattached-handle session error."""
    link = ctx.receiver(5)
    link.expect_credit()
    ours = link.session_flow(handle=link.handle + 9, delivery_count=0, link_credit=1)
    # The round trip that proves absence: right behind our flow, a message on the attached link, and the
    # application receives. A client reads a session's frames in order, so a library that hands the
    # application that message has read our flow(handle=9): its end then gets one quiet period more. Without
    # that proof the wait is the frame timeout. (Not sent once the client's end has been read.)
    link.transfer(AFTER)
    got = ctx.app("receive", timeout_ms=500)
    read_it = lambda answer: AFTER in (answer.get("messages") or [])     # noqa: E731
    try:
        frame = link.conn.expect_until((End, Close), got, proves=read_it)
    except PeerError as exc:
        if got.done() and read_it(got.result(0)):
            ctx.observe(round_trip=f"the application received {AFTER!r}, sent right behind our flow(handle=9)")
        _collect(ctx, got)
        _no_end(ctx, link, exc)
    if isinstance(frame.body, End):
        link.end_session()               # our end answers the client's (it may wait for it before it closes)
    _collect(ctx, got)
    condition = link.peer.error_condition(frame)
    error = frame.body.error
    said = f', "{error.description}"' if error is not None and error.description is not None else ""
    ctx.observe(answered_after_s=round(link.conn.seconds_between(ours, frame), 3))
    ctx.require(isinstance(frame.body, End) and condition == "amqp:session:unattached-handle",
                "2.7.4/unattached-handle", f"the client answered our flow(handle=9) with {frame.body.NAME}(error="
                f"{condition or 'none'}{said}), not with end(error=amqp:session:unattached-handle)",
                expected="end(error=amqp:session:unattached-handle)", conn=link.conn, frame=frame)
    return ctx.passed("the client ended the session with unattached-handle")


def _collect(ctx, got) -> None:
    """The application's receive, for the record (bounded; a driver that hangs in it is replaced)."""
    with contextlib.suppress(DriverError):
        ctx.answer(got)


def _no_end(ctx, link, exc) -> NoReturn:
    """No end or close decoded: the wait ran out, the client dropped the connection, or it sent a frame our
    codec refuses (said exactly: its performative and which mandatory field it lacks). Halts on the finding."""
    if isinstance(exc, MalformedInput):
        sent = describe_frame(exc.raw) or f"bytes our codec cannot decode ({exc.reason})"
        lacks = missing_mandatory(exc.raw)
        why = f": its {', '.join(lacks)} is missing, a mandatory field" if lacks else ""
        reason, actual = (f"the client answered our flow(handle=9) with {sent}{why}; not an end of the session with "
                          "unattached-handle", sent)
    elif link.peer.closed_by_remote:
        how = {"fin": "a TCP FIN", "reset": "a TCP reset"}.get(link.peer.ending, link.peer.ending)
        reason, actual = (f"the client dropped the connection ({how}) with no frame after our flow(handle=9): no "
                          "end, no close", f"{how}, no end or close frame")
    elif ctx.observations.get("round_trip"):
        reason, actual = ("the client ignored a flow on an unattached handle: its application received the message "
                          f"we sent right behind it ({AFTER!r}), so the library had read the flow, and it sent no end",
                          f"no end or close; {AFTER!r} received, then {ctx.options.quiet_period:.1f} s quiet")
    else:
        reason, actual = ("the client ignored a flow on an unattached handle",
                          f"no end or close within {ctx.options.frame_timeout:.1f} s")
    ctx.halt("2.7.4/unattached-handle", reason, expected="end(error=amqp:session:unattached-handle)", actual=actual,
             conn=link.conn)
