"""2.5.6 Session Flow Control, the client's side: a client library sending within the broker's session
incoming-window."""

from ..casekit import case

WINDOW = 2


@case("2.5.6/101", "Client sender respects the broker's session incoming-window (2 transfers, then wait)",
      ["2.5.6/remote-incoming-window-decrement"], kind="client",
      expectation=f"begin(incoming-window={WINDOW}), link-credit 10, the application sends 5: {WINDOW} transfers, "
                  "nothing until the session flow reopens the window")
def client_session_window(ctx):
    """The remote-incoming-window MUST be decremented after every transfer sent: with our window at 2 the client
    sends 2 transfers, then waits for our session flow."""
    link = ctx.sender(incoming_window=WINDOW)
    sending = ctx.app("send", count=5, timeout_ms=4000)
    link.flow(link_credit=10)
    taken = 0
    while taken < 5:
        taken += len(link.expect_transfers(min(WINDOW, 5 - taken)))
        if taken < 5:
            link.expect_no_transfer(requirement="2.5.6/remote-incoming-window-decrement",
                                    why=f"beyond our session incoming-window ({WINDOW} from our last flow)")
            taken += len(link.take_arrived())
            link.session_flow(incoming_window=WINDOW)          # next-incoming-id as read: room for 2 more
    ctx.observe(application=ctx.answer(sending, 4.0))
    return ctx.passed(f"the client sent at most {WINDOW} transfers per window")
