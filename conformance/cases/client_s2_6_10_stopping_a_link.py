"""2.6.10 Stopping a Link, the client's side: the application stops its consumer; what the client sends, and
what it does with transfers in flight across its stop (forced: our reads are held until its stop is in our
receive buffer, so our transfers cross it)."""

from ..casekit import case
from ..wire import Close, Detach, End, Flow


@case("2.6.10/101", "Client stops a consumer: link-credit 0 (or a detach), and transfers in flight are taken",
      ["2.6.10/stopping-a-link", "2.7.4/echo"], kind="client", figure="2.46",
      expectation="prefetch 5, one message received, then stop -> flow(link-credit=0) (echo answered when it "
                  "asks) or detach; two transfers sent while that stop was in our receive buffer, unread (within "
                  "the credit we knew), do not end the session")
def client_stop_consumer(ctx):
    """Stopping the transfers on a link is accomplished by updating the link-credit to be zero and sending the
    updated flow state; transfers in flight may still arrive. The crossing is forced on every run; what the
    library does is recorded."""
    link = ctx.receiver(5)
    link.expect_credit()
    link.transfer("before-stop")
    ctx.do("receive", timeout_ms=1000)
    link.hold_reads()                                             # from now on: the client's stop stays unread
    stopping = ctx.app("stop")
    handle = link.client_handle
    crossing = link.cross(
        lambda f: getattr(f.body, "handle", None) == handle and (isinstance(f.body, Detach) or (
            isinstance(f.body, Flow) and f.body.link_credit == 0)) or isinstance(f.body, (End, Close)),
        lambda: [link.transfer("in-flight-1"), link.transfer("in-flight-2")][-1], "two transfers crossing the stop")
    how = link.conn.await_frame((Flow, Detach), handle=handle,
                                where=lambda f: isinstance(f.body, Detach) or f.body.link_credit == 0)
    if how is None:
        answer = ctx.answer(stopping)
        return ctx.informational(f"the library's stop ({answer.get('api')}) sent neither link-credit 0 nor a detach")
    if isinstance(how.body, Detach):
        link.detach()
        ctx.answer(stopping)
        return ctx.informational("the library stops a consumer by detaching the link (not link-credit 0)",
                                 stop=str(how.body), crossing=crossing.happened)
    if how.body.echo:
        link.flow(echo=False)
    answer = ctx.answer(stopping)
    reaction = link.await_ending((End, Close))
    ctx.observe(application=answer, stop=str(how.body))
    if reaction is not None:
        return ctx.informational(f"after link-credit 0 the client answered transfers in flight with "
                                 f"{reaction.body.NAME} ({link.peer.error_condition(reaction)})")
    return ctx.passed("the client stopped with link-credit 0 and took the transfers in flight")
