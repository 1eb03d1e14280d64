"""2.5.4 Session errors — after ending a session with an error, the broker discards frames until our end."""

from ..casekit import REFUSALS, case
from ..peer import summarize


@case("2.5.4/1", "After a session error the broker discards frames until our end",
      ["2.5.4/session-error-end", "2.7.4/unattached-handle"], subject=["2.5.4/session-error-end"],
      deliberate=["2.7.4/unattached-handle"],     # the session error it needs: a flow on an unattached handle
      refusals_judged=REFUSALS,     # the session error it provokes is the subject, whatever its condition
      expectation="provoke a session error (flow on an unattached handle) and send flow(echo=true) right behind it, "
                  "in flight when the broker ends the session -> end(error), and nothing comes back for the echo; "
                  "our end completes it and a new session works")
def session_error_discards(ctx):
    """It MUST then proceed to discard all incoming frames from the remote endpoint until our end.
    The flow on an unattached handle obliges the broker to end the session (2.7.4/unattached-handle). The echo
    goes out before the broker's end can have arrived: our peer sends nothing on a session after its end."""
    session = ctx.session()
    session.flow(handle=9, link_credit=1, delivery_count=0, and_echo=True)   # the echo in flight with it
    answer = session.await_session_error()
    if answer is None:
        return ctx.unobservable("2.5.4/session-error-end", "the broker did not end the session on a flow on an "
                                "unattached handle (judged by 2.7.4/3)")
    ctx.observe(answered_with=answer.name, condition=session.peer.error_condition(answer))
    if answer.name == "close":
        return ctx.unobservable("2.5.4/session-error-end", "the broker closed the connection instead of ending "
                                f"the session ({summarize(answer)}): there is no session left to discard frames on")
    session.expect_silence(requirement="2.5.4/session-error-end",
                           why="frames after the broker's end must be discarded")
    session.end()
    fresh = session.connection.begin()
    fresh.attach_receiver(ctx.queue())
    return ctx.passed("frames after the session error were discarded; a new session works")
