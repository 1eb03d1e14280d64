"""2.6.7 Flow Control, the client's side: a client library as receiver (its credit across the serial wrap, a
transfer beyond its credit) and as sender (never without credit, credit withdrawn mid-stream, a drain with
nothing to send).

The suite is the broker: as sender it starts the delivery-count at 2^32-5 (casekit/client_context.py), as receiver
it grants exactly the credit the case says and settles every transfer.
"""

from ..casekit import case
from ..casekit.client_context import INITIAL_DELIVERY_COUNT
from ..peer import ExpectationTimeout, UnexpectedFrame
from ..wire import Detach, End, Flow, Transfer
from ..wire.serial import serial_add, serial_diff

WINDOW = 5
SEND_WAIT_MS = 8000      # a library's own wait for credit per message: longer than our longest pause


def _take_the_rest(conn, link, taken: int, total: int, sending) -> None:
    """Grant what is still to come, one flow per transfer taken, until `total` transfers were taken or the
    application stopped sending (its send answered: e.g. the library's own send timeout)."""
    while taken < total:
        conn.flow(link, link_credit=total - taken)
        try:
            conn.expect_transfer(link)
        except ExpectationTimeout:
            if sending.done():
                return
            raise
        taken += 1 + len(conn.take_transfers(link))


def _sender(ctx):
    conn = ctx.connect()
    opened = ctx.app("sender", address="q")
    link = conn.expect_attach()
    ctx.answer(opened)
    return conn, link


@case("2.6.7/101", "Client receiver with a credit window: its flows across the delivery-count wrap",
      ["2.7.4/receiver-delivery-count", "2.6.7/link-credit-receiver"], kind="client",
      expectation="prefetch 5; five transfers take the delivery-count from 2^32-5 across 0; every flow the "
                  "client sends carries a delivery-count between 2^32-5 and ours; its credit is set (at most "
                  "the window), not added")
def client_credit_window_across_wrap(ctx):
    """The receiver's view of the formula: its delivery-count is the sender's last known (RFC 1982 across the
    wrap), and its link-credit counts from there, so delivery-count + link-credit is its limit."""
    conn, link = ctx.open_receiver(WINDOW)
    first = conn.expect_flow(link, link_credit=lambda c: c is not None and c > 0)
    for i in range(WINDOW):
        conn.transfer(link, f"w{i}")
    answer = ctx.do("receive", count=WINDOW, timeout_ms=1000)
    conn.settle_down(Flow)                                          # let its top-ups arrive
    ours = link.delivery_count
    # flows after our attach that carry a delivery-count (one sent before the client saw our attach carries
    # none, or the model flags it): each must be one the sender had
    flows = [f for f in conn.client_frames(Flow) if f.body.handle == link.client_handle
             and conn.arrived_index(f) >= link.attached_at and f.body.delivery_count is not None]
    for f in flows:
        dc = f.body.delivery_count
        if serial_diff(INITIAL_DELIVERY_COUNT, int(dc)) < 0 or serial_diff(int(dc), ours) < 0:
            ctx.finding("2.7.4/receiver-delivery-count", "a flow of the client carries a delivery-count the "
                        "sender never had", conn, f, expected=f"between {INITIAL_DELIVERY_COUNT:#x} and {ours:#x} "
                        "(RFC 1982)", actual=f"delivery-count={dc}")
            break
    for f in flows:
        dc, credit = f.body.delivery_count, f.body.link_credit
        if dc is not None and credit is not None and int(credit) > WINDOW:
            ctx.finding("2.6.7/link-credit-receiver", "the client's link-credit exceeds its window (added to what "
                        "was left instead of set)", conn, f, expected=f"link-credit <= {WINDOW}",
                        actual=f"link-credit={credit}")
            break
    ctx.observe(first_flow=str(first.body), messages=answer.get("messages"), flows=len(flows))
    return ctx.passed(f"{len(flows)} flows, each with a delivery-count the sender had and credit within the window")


@case("2.6.7/102", "Client receiver gets a transfer beyond its credit: what it does (informational)",
      ["2.6.7/excess-transfers", "2.7.4/receiver-delivery-count"], kind="client",
      expectation="receive(timeout) grants 1; the broker sends 2 transfers; the client takes both or detaches "
                  "with transfer-limit-exceeded; a later flow counts both")
def client_transfer_beyond_credit(ctx):
    """2.6.7: a receiver MAY handle excess messages normally or detach with transfer-limit-exceeded. Recorded;
    a later flow must still carry the sender's delivery-count (both transfers counted)."""
    conn, link = ctx.open_receiver(0)
    got = ctx.app("receive", timeout_ms=1000)
    conn.expect_flow(link, link_credit=lambda c: c is not None and c > 0)
    conn.transfer(link, "within")
    conn.transfer(link, "beyond")
    first = ctx.answer(got)
    reaction = None
    try:
        reaction = conn.expect((Detach, End), timeout=ctx.options.quiet_period)
    except ExpectationTimeout:
        pass
    if reaction is not None:
        ctx.observe(reaction=str(reaction.body), first_receive=first)
        return ctx.informational(f"the client answered the excess transfer with {type(reaction.body).__name__.lower()}"
                                 f" ({conn.peer.error_condition(reaction)})")
    again = ctx.app("receive", timeout_ms=1000)
    second = None
    try:
        nxt = conn.expect_flow(link, link_credit=lambda c: c is not None and c > 0, timeout=1 + ctx.answer_window())
        conn.transfer(link, "later")
        expected = serial_add(INITIAL_DELIVERY_COUNT, 2)
        if nxt.body.delivery_count is None or int(nxt.body.delivery_count) != expected:
            ctx.finding("2.7.4/receiver-delivery-count", "after the excess transfer the client's flow does not "
                        "count both transfers", conn, nxt, expected=f"delivery-count={expected:#x}",
                        actual=f"delivery-count={nxt.body.delivery_count}")
    except ExpectationTimeout:
        pass
    second = ctx.answer(again)
    ctx.observe(first_receive=first, second_receive=second)
    seen = (first.get("messages") or []) + (second.get("messages") or [])
    return ctx.informational(f"the client took the transfer beyond its credit normally; the application got {seen}")


@case("2.6.7/103", "Client sender never sends without credit: the broker grants 5, the application sends 10",
      ["2.6.7/no-send-without-credit"], kind="client",
      expectation="flow(link-credit=5) -> 5 transfers, then nothing; flow(link-credit=5) -> the other 5")
def client_sender_within_credit(ctx):
    """A sender MUST NOT send when its link-credit is zero: the sixth message waits for the broker's credit."""
    conn, link = _sender(ctx)
    sending = ctx.app("send", count=10, timeout_ms=SEND_WAIT_MS)
    conn.flow(link, link_credit=5)
    for _ in range(5):
        conn.expect_transfer(link)
    try:
        conn.expect_nothing(Transfer, handle=link.client_handle)
    except UnexpectedFrame as extra:
        ctx.finding("2.6.7/no-send-without-credit", "the client sent a sixth transfer with no credit left", conn,
                    extra.frame, expected="no transfer until the next flow",
                    actual="a transfer")
    _take_the_rest(conn, link, 5 + len(conn.take_transfers(link)), 10, sending)
    answer = ctx.answer(sending, SEND_WAIT_MS / 1000)
    ctx.observe(application=answer)
    return ctx.passed("5 transfers for 5 credits, then nothing until more credit came")


@case("2.6.7/104", "Client sender stops when the broker withdraws credit mid-stream, resumes when it returns",
      ["2.6.7/no-send-without-credit", "2.7.4/echo"], kind="client",
      expectation="the application sends 20; flow(link-credit=10); after 3 transfers flow(link-credit=0, echo=true): after the client's "
                  "answer no transfer; flow(link-credit=10) -> the rest")
def client_sender_credit_withdrawn(ctx):
    """Producer flow control as Broker-J does it: link-credit 0 in the middle of a stream. Transfers sent before
    the client saw our flow are in flight (tolerated); once it answered our echo, none may follow."""
    conn, link = _sender(ctx)
    sending = ctx.app("send", count=20, timeout_ms=SEND_WAIT_MS)
    conn.flow(link, link_credit=10)
    for _ in range(3):
        conn.expect_transfer(link)
    conn.flow(link, link_credit=0, echo=True)
    answered = None
    try:
        answered = conn.expect_flow(link, timeout=ctx.answer_window())
    except ExpectationTimeout:
        ctx.finding("2.7.4/echo", "the client did not answer the echo of the credit-0 flow", conn,
                    expected="its flow state", actual="no flow")
    in_flight = len(conn.take_transfers(link))
    try:
        conn.expect_nothing(Transfer, handle=link.client_handle)
    except UnexpectedFrame as late:
        if answered is not None:
            ctx.finding("2.6.7/no-send-without-credit", "the client sent a transfer after it answered the flow "
                        "that withdrew its credit", conn, late.frame, expected="no transfer while link-credit is 0",
                        actual="a transfer")
    _take_the_rest(conn, link, 3 + in_flight + len(conn.take_transfers(link)), 20, sending)
    answer = ctx.answer(sending, SEND_WAIT_MS / 1000)
    ctx.observe(in_flight=in_flight, application=answer)
    return ctx.passed(f"the client stopped ({in_flight} in flight) and resumed when credit returned")


@case("2.6.7/105", "Client sender with nothing to send answers drain: delivery-count advanced, flow sent",
      ["2.6.7/drain-advance"], kind="client",
      expectation="flow(link-credit=5, drain=true) to an idle sender -> its flow with delivery-count + 5, "
                  "link-credit 0")
def client_sender_drain(ctx):
    """2.6.7: If the sender's drain flag is set and there are no available messages, the sender MUST advance
    its delivery-count until link-credit is zero, and send its updated flow state to the receiver."""
    conn, link = _sender(ctx)
    start = link.delivery_count
    conn.flow(link, link_credit=5, drain=True)
    try:
        reply = conn.expect_flow(link, timeout=ctx.answer_window())
    except ExpectationTimeout:
        ctx.finding("2.6.7/drain-advance", "the client's idle sender did not answer the drain", conn,
                    expected="flow(delivery-count=+5, link-credit=0)", actual="no flow")
        return ctx.passed("(no answer)")
    expected = serial_add(start, 5)
    dc, credit = reply.body.delivery_count, reply.body.link_credit
    if dc is None or int(dc) != expected or (credit is not None and int(credit) != 0):
        ctx.finding("2.6.7/drain-advance", "the client's answer to the drain did not consume the credit", conn,
                    reply, expected=f"delivery-count={expected:#x}, link-credit=0",
                    actual=f"delivery-count={dc}, link-credit={credit}")
    return ctx.passed("the idle sender advanced its delivery-count by the credit and sent its flow")
