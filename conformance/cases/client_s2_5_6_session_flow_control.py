"""2.5.6 Session Flow Control, the client's side: a client library sending within the broker's session
incoming-window."""

from ..casekit import case
from ..peer import UnexpectedFrame
from ..wire import Transfer


@case("2.5.6/101", "Client sender respects the broker's session incoming-window (2 transfers, then wait)",
      ["2.5.6/remote-incoming-window-decrement"], kind="client",
      expectation="begin(incoming-window=2), link-credit 10, the application sends 5: 2 transfers, nothing "
                  "until the session flow reopens the window")
def client_session_window(ctx):
    """The remote-incoming-window MUST be decremented after every transfer sent: with our window at 2 the client
    sends 2 transfers, then waits for our session flow."""
    ctx.begin_fields = {**ctx.begin_fields, "incoming_window": 2}
    conn = ctx.connect()
    opened = ctx.app("sender", address="q")
    link = conn.expect_attach()
    ctx.answer(opened)
    sending = ctx.app("send", count=5, timeout_ms=4000)
    conn.flow(link, link_credit=10)
    taken, rounds = 0, 0
    while taken < 5 and rounds < 5:
        rounds += 1
        for _ in range(min(2, 5 - taken)):
            conn.expect_transfer(link)
            taken += 1
        if taken < 5:
            try:
                conn.expect_nothing(Transfer, handle=link.client_handle)
            except UnexpectedFrame as extra:
                ctx.finding("2.5.6/remote-incoming-window-decrement", "the client sent a transfer beyond our "
                            "session incoming-window", conn, extra.frame,
                            expected="no transfer until our next flow", actual="a transfer")
                break
            conn.flow(channel=link.channel, incoming_window=2)
    taken += len(conn.take_transfers(link))
    while taken < 5:
        conn.flow(channel=link.channel, incoming_window=5)
        conn.expect_transfer(link)
        taken += 1 + len(conn.take_transfers(link))
    answer = ctx.answer(sending, 4.0)
    ctx.observe(application=answer)
    return ctx.passed("the client sent at most 2 transfers per window")
