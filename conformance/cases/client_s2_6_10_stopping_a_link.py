"""2.6.10 Stopping a Link, the client's side: the application stops its consumer; what the client sends, and
whether it takes the transfers already in flight."""

from ..casekit import case
from ..peer import ExpectationTimeout, PeerError
from ..wire import Close, Detach, End, Flow


@case("2.6.10/101", "Client stops a consumer: link-credit 0 (or a detach), and transfers in flight are taken",
      ["2.6.10/stopping-a-link", "2.7.4/echo"], kind="client",
      expectation="prefetch 5, one message received, then stop -> flow(link-credit=0) (echo answered when it "
                  "asks) or detach; transfers sent before we saw it do not end the session")
def client_stop_consumer(ctx):
    """Stopping the transfers on a link is accomplished by updating the link-credit to be zero and sending the
    updated flow state; transfers in flight may still arrive. What the library does is recorded."""
    conn, link = ctx.open_receiver(5)
    conn.expect_flow(link, link_credit=lambda c: c is not None and c > 0)
    conn.transfer(link, "before-stop")
    ctx.do("receive", timeout_ms=1000)
    stopping = ctx.app("stop")
    how = conn.expect((Flow, Detach), handle=link.client_handle,
                      where=lambda f: isinstance(f.body, Detach) or f.body.link_credit == 0)
    if isinstance(how.body, Detach):
        conn.peer.detach(link.channel, link.handle)
        ctx.answer(stopping)
        return ctx.informational("the library stops a consumer by detaching the link (not link-credit 0)",
                                 stop=str(how.body))
    if how.body.echo:
        conn.flow(link, echo=False)
    conn.transfer(link, "in-flight-1")
    conn.transfer(link, "in-flight-2")
    answer = ctx.answer(stopping)
    reaction = None
    try:
        reaction = conn.expect((End, Close), timeout=ctx.options.quiet_period)
    except (ExpectationTimeout, PeerError):
        pass
    ctx.observe(application=answer, stop=str(how.body))
    if reaction is not None:
        return ctx.informational(f"after link-credit 0 the client answered transfers in flight with "
                                 f"{type(reaction.body).__name__.lower()} ({conn.peer.error_condition(reaction)})")
    return ctx.passed("the client stopped with link-credit 0 and took the transfers in flight")
