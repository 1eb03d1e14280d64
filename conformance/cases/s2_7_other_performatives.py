"""2.7.2 Begin (handle-max), 2.7.3 Attach (initial-delivery-count), 2.7.5 Transfer (settled, delivery-id),
2.6.14 multi-frame deliveries, and 2.5.4 session errors — the flow-control parts of these performatives."""

from .base import CaseConclusion, case


@case("2.7.2/1", "Attach with a handle above the broker's handle-max: connection closed with framing-error",
      ["2.7.2/handle-max"],
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


@case("2.7.3/1", "The broker as sender sets initial-delivery-count in its attach",
      ["2.7.3/initial-delivery-count-sender", "2.6.7/initial-flow-state"],
      expectation="attach as receiver -> the broker's attach (role sender) carries initial-delivery-count")
def initial_delivery_count_set(ctx):
    """This MUST NOT be null if role is sender."""
    queue = ctx.queue()
    link = ctx.session().attach_receiver(queue, require_initial_delivery_count=False)
    attach = link.broker_attach
    ctx.require(attach.initial_delivery_count is not None, "2.7.3/initial-delivery-count-sender",
                "the broker's sender attach has no initial-delivery-count",
                expected="initial-delivery-count set", actual="null")
    return ctx.passed(f"initial-delivery-count {int(attach.initial_delivery_count):#010x}")


@case("2.7.5/1", "snd-settle-mode settled: every delivery is settled by the broker",
      ["2.7.5/settled-mode-settled"],
      expectation="attach(snd-settle-mode=settled) accepted as settled -> transfers carry settled=true")
def settled_mode(ctx):
    """If the negotiated snd-settle-mode is settled, settled MUST be true on at least one transfer of a delivery."""
    queue = ctx.queue(preload=3)
    link = ctx.session().attach_receiver(queue, snd_settle_mode=1)
    negotiated = link.broker_attach.snd_settle_mode
    if negotiated is None or negotiated != 1:
        return ctx.informational(f"the broker chose snd-settle-mode {negotiated} instead of settled",
                                 snd_settle_mode=negotiated)
    link.flow(link_credit=3)
    transfers = link.expect_transfers(3, requirement="2.6.7/credit-formula")
    unsettled = [t for t in transfers if not t.body.settled]
    ctx.require(not unsettled, "2.7.5/settled-mode-settled", "a delivery arrived unsettled in settled mode",
                expected="settled=true on every delivery", actual=f"{len(unsettled)} unsettled")
    return ctx.passed("3 deliveries, all settled")


@case("2.7.5/2", "Multi-frame deliveries: delivery-id on the first frame, one credit per message, no interleaving",
      ["2.7.5/delivery-id-first", "2.6.14/no-interleave", "2.6.7/credit-decrease-on-send"],
      expectation="open(max-frame-size=512), 2 messages of 2000 bytes, credit 1 -> one message in several "
                  "transfers (more=true on all but the last), delivery-id on the first; then nothing")
def multi_frame_delivery(ctx):
    """Credit counts messages, not frames; continuation frames may omit delivery-id but never change it."""
    queue = ctx.queue(preload=2, body_size=2000)
    link = ctx.session(max_frame_size=512).attach_receiver(queue)
    link.flow(link_credit=1)
    frames = link.expect_message(requirement="2.6.7/credit-decrease-on-send")
    first = frames[0].body
    ctx.require(first.delivery_id is not None, "2.7.5/delivery-id-first",
                "the first transfer of a multi-transfer delivery has no delivery-id",
                expected="delivery-id set", actual="absent")
    changed = [f for f in frames[1:] if f.body.delivery_id is not None and f.body.delivery_id != first.delivery_id]
    ctx.require(not changed, "2.7.5/delivery-id-first", "a continuation transfer changed the delivery-id",
                expected=f"delivery-id {first.delivery_id} or absent",
                actual=", ".join(str(f.body.delivery_id) for f in changed))
    link.expect_no_transfer(requirement="2.6.7/no-send-without-credit",
                            why="one credit allows one message, however many frames it takes")
    return ctx.passed(f"one message in {len(frames)} frames for one credit")


@case("2.5.4/1", "After a session error the broker discards frames until our end",
      ["2.5.4/session-error-end"],
      expectation="provoke a session error (flow on an unattached handle) -> end(error); then send flow(echo=true) "
                  "on that session -> nothing comes back; our end completes it and a new session works")
def session_error_discards(ctx):
    """It MUST then proceed to discard all incoming frames from the remote endpoint until our end."""
    session = ctx.session()
    session.flow(handle=9, link_credit=1, delivery_count=0)
    try:
        session.expect_session_error(None, requirement="2.5.4/session-error-end")
    except CaseConclusion as c:
        if ctx.observations.get("answered_with") == "close":
            return ctx.informational("the broker closed the connection instead of ending the session: discarding "
                                     "after a session error cannot be observed", answered=c.actual)
        raise
    session.flow(echo=True)
    session.expect_silence(requirement="2.5.4/session-error-end",
                           why="frames after the broker's end must be discarded")
    session.end()
    fresh = session.connection.begin()
    fresh.attach_receiver(ctx.queue())
    return ctx.passed("frames after the session error were discarded; a new session works")
