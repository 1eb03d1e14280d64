"""2.7.5 Transfer (with 2.6.14) — settled mode, delivery-id on the first frame, one credit per multi-frame
message, no interleaving."""

from ..casekit import case


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
