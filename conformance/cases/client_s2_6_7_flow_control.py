"""2.6.7 Flow Control, the client's side: a client library as receiver (its credit across the serial wrap, a
transfer beyond its credit) and as sender (never without credit, credit withdrawn while its transfers are in
flight, a drain with nothing to send).

The suite is the broker: as sender it starts the delivery-count at 2^32-5 (casekit/client_context.py), as receiver
it grants exactly the credit the case says and accepts and settles every transfer as it takes it.
"""

from ..casekit import case
from ..casekit.client_context import INITIAL_DELIVERY_COUNT
from ..peer import ExpectationTimeout, summarize
from ..wire import Detach, End, Transfer
from ..wire.serial import serial_add, serial_diff

WINDOW = 5
SEND_WAIT_MS = 8000      # a library's own wait for credit per message: longer than our longest pause
STOP_WINDOW = 6          # 2.6.7/104: our session incoming-window, below the credit (the barrier after the stop)


def _take_the_rest(link, taken: int, total: int, sending) -> None:
    """Grant what is still to come, one flow per transfer taken, until `total` transfers were taken or the
    application stopped sending (its send answered: e.g. the library's own send timeout)."""
    while taken < total:
        link.flow(link_credit=total - taken)
        try:
            link.expect_transfers(1)
        except ExpectationTimeout:
            if sending.done():
                return
            raise
        taken += 1 + len(link.take_arrived())


@case("2.6.7/101", "Client receiver with a credit window: its flows across the delivery-count wrap",
      ["2.7.4/receiver-delivery-count", "2.6.7/link-credit-receiver"], kind="client",
      expectation="prefetch 5; five transfers take the delivery-count from 2^32-5 across 0; every flow the "
                  "client sends carries a delivery-count between 2^32-5 and ours; its credit is set (at most "
                  "the window), not added")
def client_credit_window_across_wrap(ctx):
    """The receiver's view of the formula: its delivery-count is the sender's last known (RFC 1982 across the
    wrap), and its link-credit counts from there, so delivery-count + link-credit is its limit."""
    link = ctx.receiver(WINDOW)
    first = link.expect_credit()
    for i in range(WINDOW):
        link.transfer(f"w{i}")
    answer = ctx.do("receive", count=WINDOW, timeout_ms=1000)
    link.settle_flows()                                                # let its top-ups arrive
    ours = link.delivery_count
    # flows after our attach that carry a delivery-count (one sent before the client saw our attach carries
    # none, or the model flags it): each must be one the sender had
    flows = [f for f in link.flows_after(link.attached_at) if f.body.delivery_count is not None]
    unknown = next((f for f in flows if serial_diff(INITIAL_DELIVERY_COUNT, int(f.body.delivery_count)) < 0
                    or serial_diff(int(f.body.delivery_count), ours) < 0), None)
    ctx.require(unknown is None, "2.7.4/receiver-delivery-count", "a flow of the client carries a delivery-count "
                "the sender never had", expected=f"between {INITIAL_DELIVERY_COUNT:#x} and {ours:#x} (RFC 1982)",
                conn=link.conn, frame=unknown)
    added = next((f for f in flows if f.body.link_credit is not None and int(f.body.link_credit) > WINDOW), None)
    ctx.require(added is None, "2.6.7/link-credit-receiver", "the client's link-credit exceeds its window (added "
                "to what was left instead of set)", expected=f"link-credit <= {WINDOW}", conn=link.conn, frame=added)
    ctx.observe(first_flow=str(first.body), messages=answer.get("messages"), flows=len(flows))
    return ctx.passed(f"{len(flows)} flows, each with a delivery-count the sender had and credit within the window")


@case("2.6.7/102", "Client receiver gets a transfer beyond its credit: what it does (informational)",
      ["2.6.7/excess-transfers", "2.7.4/receiver-delivery-count"], kind="client",
      deliberate=["2.6.7/no-send-without-credit"],
      expectation="receive(timeout) grants 1; the broker sends 2 transfers (the second beyond the credit, on "
                  "purpose); the client takes both or detaches with transfer-limit-exceeded; a later flow counts both")
def client_transfer_beyond_credit(ctx):
    """2.6.7: a receiver MAY handle excess messages normally or detach with transfer-limit-exceeded. What the
    library does with a transfer beyond its credit is recorded (our second transfer breaks 2.6.7 on purpose:
    the subject is the answer to it); a later flow must still carry the sender's delivery-count."""
    link = ctx.receiver(0)
    got = ctx.app("receive", timeout_ms=1000)
    link.expect_credit()
    link.transfer("within")
    link.transfer("beyond")
    first = ctx.answer(got)
    reaction = link.await_ending((Detach, End))
    if reaction is not None:
        ctx.observe(reaction=str(reaction.body), first_receive=first)
        return ctx.informational(f"the client answered the excess transfer with {reaction.body.NAME} "
                                 f"({link.peer.error_condition(reaction)})")
    again = ctx.app("receive", timeout_ms=1000)
    seen = list(first.get("messages") or [])
    nxt = None
    if "beyond" not in seen:                  # a library that kept it hands it to the next receive, no credit asked
        # (once that receive came back, one quiet period more for a flow the library sends after it)
        nxt = link.await_flow_until(again, link_credit=lambda c: c is not None and c > 0,
                                    timeout=1 + ctx.answer_window())
    if nxt is not None:
        link.transfer("later")
        expected = serial_add(INITIAL_DELIVERY_COUNT, 2)
        dc = nxt.body.delivery_count
        ctx.require(dc is not None and int(dc) == expected, "2.7.4/receiver-delivery-count", "after the excess "
                    "transfer the client's flow does not count both transfers", expected=f"delivery-count={expected:#x}",
                    actual=f"delivery-count={dc}", conn=link.conn, frame=nxt)
    second = ctx.answer(again)
    seen += second.get("messages") or []
    ctx.observe(first_receive=first, second_receive=second, application_got=seen)
    return ctx.informational(f"the client took the transfer beyond its credit normally; the application got {seen}")


@case("2.6.7/103", "Client sender never sends without credit: the broker grants 5, the application sends 10",
      ["2.6.7/no-send-without-credit"], kind="client",
      expectation="flow(link-credit=5) -> 5 transfers, then nothing; flow(link-credit=5) -> the other 5")
def client_sender_within_credit(ctx):
    """A sender MUST NOT send when its link-credit is zero: the sixth message waits for the broker's credit."""
    link = ctx.sender()
    sending = ctx.app("send", count=10, timeout_ms=SEND_WAIT_MS)
    link.flow(link_credit=5)
    link.expect_transfers(5)
    link.expect_no_transfer(requirement="2.6.7/no-send-without-credit", why="with no credit left (5 for 5 credits)")
    _take_the_rest(link, 5 + len(link.take_arrived()), 10, sending)
    ctx.observe(application=ctx.answer(sending, SEND_WAIT_MS / 1000))
    return ctx.passed("5 transfers for 5 credits, then nothing until more credit came")


@case("2.6.7/104", "Client sender stops when credit is withdrawn while its transfers are in flight, and resumes",
      ["2.6.7/no-send-without-credit", "2.7.4/echo"], kind="client", figure="2.46",
      expectation=f"session incoming-window {STOP_WINDOW}, credit 10, the application sends 20; once its 4th "
                  "transfer is in our receive buffer, unread: flow(delivery-count=3, link-credit=0, echo=true) "
                  "keeping the window, then a flow opening it; no transfer past the window (the barrier: sent "
                  "after the client read the stop) nor after its echo answer; flow(link-credit=10) -> the rest")
def client_sender_credit_withdrawn(ctx):
    """Figure 2.46 from the receiving broker's seat: the stop crosses transfers in flight (forced: our reads
    are held until the next transfer is buffered, so our delivery-count is behind the client's). The sender's
    credit is then delivery-count(rcv) + 0 - delivery-count(snd) <= 0. Our session window keeps the client
    from sending past a known transfer-id until our next flow, sent after the stop: a transfer past it was
    sent after the client read the stop, whether or not it answers the echo (a SHOULD)."""
    link = ctx.sender(incoming_window=STOP_WINDOW)
    sending = ctx.app("send", count=20, timeout_ms=SEND_WAIT_MS)
    link.hold_reads_after(3)
    link.flow(link_credit=10)
    link.expect_transfers(3)
    barrier = link.window_limit()
    crossing = link.send_crossing(lambda: link.flow(link_credit=0, echo=True, **link.keep_window()),
                                  "flow(link-credit=0, echo=true), our delivery-count behind the client's")
    link.session_flow(incoming_window=2048)                              # the barrier: read after the stop
    taken = 3 + len(link.take_until_quiet())                             # in flight, and anything later
    echoed = next(iter(link.flows_after(crossing.read_on_at)), None)
    late = link.beyond(barrier, also_after=echoed)
    held = sum(1 for f in crossing.held if isinstance(f.body, Transfer))   # sent before it could read the stop
    ctx.require(not late, "2.6.7/no-send-without-credit", f"the client sent {len(late)} transfer(s) after it had "
                f"read our flow(delivery-count=3, link-credit=0), at least {held} behind its own (link-credit(snd) = "
                f"delivery-count(rcv) + 0 - delivery-count(snd) <= -{held}): past the session window our stop left in "
                f"place (transfer-id {barrier:#x}), which only our next flow opened"
                + (f", or after its answer to our echo, {summarize(echoed)}" if echoed is not None else ""),
                expected="no transfer until new credit", conn=link.conn, frame=late[0] if late else None)
    ctx.require(echoed is not None, "2.7.4/echo", "the client did not answer the echo of the credit-0 flow",
                expected="its flow state", actual=f"no flow within {ctx.answer_window():.1f} s", conn=link.conn)
    _take_the_rest(link, taken, 20, sending)
    ctx.observe(in_flight=len(crossing.held), late=len(late), after_the_barrier=len(link.beyond(barrier)),
                application=ctx.answer(sending, SEND_WAIT_MS / 1000))
    if not crossing.happened:
        return ctx.informational("the withdrawal crossed no transfer: the client sent no 4th transfer within the "
                                 "frame timeout, though it had credit 7 and 17 messages to send")
    return ctx.passed(f"the client stopped ({len(crossing.held)} in flight when the stop went out) and resumed")


@case("2.6.7/105", "Client sender with nothing to send answers drain: delivery-count advanced, flow sent",
      ["2.6.7/drain-advance"], kind="client",
      expectation="flow(link-credit=5, drain=true) to an idle sender -> its flow with delivery-count + 5, "
                  "link-credit 0 (where the library hands the drain to the application, the driver answers it "
                  "as the library documents)")
def client_sender_drain(ctx):
    """2.6.7: If the sender's drain flag is set and there are no available messages, the sender MUST advance
    its delivery-count until link-credit is zero, and send its updated flow state to the receiver."""
    link = ctx.sender()
    start = link.delivery_count
    link.settle_flows()                 # a flow it sends on attach has come (and is not the answer)
    mark = link.peer.mark()             # its answer comes after our drain
    link.flow(link_credit=5, drain=True)
    reply = link.await_flow(timeout=ctx.answer_window(), after=mark)
    ctx.app_events()                      # what the library handed the application meanwhile
    ctx.check_drains()
    api = ctx.library.flow_api
    if reply is None:
        ctx.halt("2.6.7/drain-advance", "the client's idle sender did not answer the drain"
                 + (f" ({api})" if api else ""), expected="flow(delivery-count=+5, link-credit=0)",
                 actual=f"no flow within {ctx.answer_window():.1f} s", conn=link.conn)
    expected = serial_add(start, 5)
    dc, credit = reply.body.delivery_count, reply.body.link_credit
    ctx.require(dc is not None and int(dc) == expected and (credit is None or int(credit) == 0),
                "2.6.7/drain-advance", "the client's answer to the drain did not consume the credit",
                expected=f"delivery-count={expected:#x}, link-credit=0", conn=link.conn, frame=reply)
    return ctx.passed("the idle sender advanced its delivery-count by the credit and sent its flow")
