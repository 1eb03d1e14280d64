"""Session and link flow control under resource alarms and queue limits (2.5.6, 2.6.7).

A broker short of memory or disk should throttle publishers with the protocol's own flow control (an
incoming-window of 0, or link-credit withheld) while consumers keep receiving, and lose nothing. The spec
does not oblige a broker to have alarms, so how it throttles is recorded; MUST-level rules that still apply
(no transfer beyond credit or window) are judged. Alarm cases are broker-wide: they run alone (exclusive).
"""

from .base import case

THROTTLE_REQUIREMENTS = ["2.5.6/incoming-window", "2.6.7/link-credit-receiver", "3.4.2/accepted-at-target",
                         "2.6.7/no-send-without-credit"]


def _alarm_case(ctx, kind: str):
    """Publisher and consumer share one session; the alarm is raised mid-stream, then cleared."""
    queue = ctx.queue(preload=30)
    session = ctx.session()
    consumer = session.attach_receiver(queue)
    publisher = session.attach_sender(queue, initial_delivery_count=0)
    publisher.expect_credit(requirement="2.6.7/initial-flow-state")
    consumer.flow(link_credit=10)
    consumer.expect_transfers(10, requirement="2.6.7/credit-formula")
    with ctx.alarm(kind):
        throttle = publisher.publish_until_throttled(limit=2000)
        consumer.flow(link_credit=10)
        consumer.expect_transfers(10, requirement="2.6.7/credit-formula")     # consumers keep receiving
        newcomer = ctx.session()                                              # a consume-only connection
        probe = newcomer.attach_receiver(queue)
        probe.flow(link_credit=1)
        probe.expect_transfers(1, requirement="2.6.7/credit-formula")
    resumed = publisher.publish_after_clear(count=5)
    drained = ctx.drain_queue(queue, consumer, probe)
    ctx.require_model_clean()          # no transfer beyond credit or window, alarm or not
    accepted = publisher.accepted_bodies()
    lost = [b for b in accepted if b not in drained]
    duplicated = len(drained) - len(set(drained))
    observations = dict(throttled_by=throttle, resumed=resumed, accepted=len(accepted), lost=len(lost),
                        duplicated=duplicated)
    if lost or duplicated:
        return ctx.informational(f"{kind} alarm: throttled by {throttle}; {len(lost)} accepted messages lost, "
                                 f"{duplicated} duplicated", **observations)
    if throttle in ("session incoming-window 0", "link-credit withheld") and resumed:
        return ctx.passed(f"{kind} alarm throttled the publisher by {throttle}; consumers kept receiving; "
                          "publishing resumed; nothing lost", **observations)
    return ctx.informational(f"{kind} alarm: publisher {throttle}; resumed={resumed}; nothing lost", **observations)


@case("2.5.6/4", "Memory alarm: publisher throttled by flow control, consumers unaffected, nothing lost",
      THROTTLE_REQUIREMENTS, needs=("memory_alarm",), exclusive=True,
      expectation="raise the memory alarm while publishing -> incoming-window 0 or credit withheld (not a closed "
                  "connection or a stalled socket); consumer keeps receiving; a new consume-only connection is "
                  "accepted; after clearing, publishing resumes on the same link; accepted messages consumed once")
def memory_alarm(ctx):
    """Throttling by the protocol's own flow control: window 0 (2.5.6) or credit withheld (2.6.7)."""
    return _alarm_case(ctx, "memory")


@case("2.5.6/5", "Disk alarm: publisher throttled by flow control, consumers unaffected, nothing lost",
      THROTTLE_REQUIREMENTS, needs=("disk_alarm",), exclusive=True,
      expectation="as 2.5.6/4 with the disk alarm")
def disk_alarm(ctx):
    """Throttling by the protocol's own flow control: window 0 (2.5.6) or credit withheld (2.6.7)."""
    return _alarm_case(ctx, "disk")


@case("2.5.6/6", "A session begun during an alarm: publishing throttled from the start, consuming works",
      ["2.5.6/incoming-window", "2.6.7/link-credit-receiver", "2.6.7/no-send-without-credit"],
      needs=("memory_alarm",), exclusive=True,
      expectation="with the memory alarm on, begin -> incoming-window 0 or no publisher credit; a receiver on the "
                  "same session gets its messages; after clearing, the publisher may send")
def session_begun_during_alarm(ctx):
    """What the broker announces in begin and attach while an alarm is active."""
    queue = ctx.queue(preload=5)
    with ctx.alarm("memory"):
        session = ctx.session()
        begin_window = session.remote_incoming_window
        publisher = session.attach_sender(queue, initial_delivery_count=0)
        credit_during = publisher.wait_for_credit(quiet=True)
        consumer = session.attach_receiver(queue)
        consumer.flow(link_credit=3)
        consumer.expect_transfers(3, requirement="2.6.7/credit-formula")
        consumer.expect_no_transfer(requirement="2.6.7/no-send-without-credit")
    resumed = publisher.publish_after_clear(count=1)
    ctx.require_model_clean()
    throttled = begin_window == 0 or not credit_during
    observations = dict(begin_incoming_window=begin_window, credit_during_alarm=credit_during, resumed=resumed)
    if throttled and resumed:
        how = "incoming-window 0" if begin_window == 0 else "credit withheld"
        return ctx.passed(f"the session begun during the alarm was throttled ({how}); consumer served", **observations)
    return ctx.informational(f"session begun during the alarm: incoming-window {begin_window}, publisher credit "
                             f"{credit_during}, resumed={resumed}", **observations)


@case("2.6.7/14", "Queue at its length limit: publisher credit withheld (or transfers rejected), no disconnect",
      ["2.6.7/link-credit-receiver", "3.4.2/accepted-at-target", "2.6.7/no-send-without-credit"],
      needs=("queue_length_limit",),
      expectation="queue limited to 10 messages with reject-publish overflow -> after 10, credit withheld or "
                  "transfers rejected (recorded), connection stays open; after draining, publishing resumes")
def queue_length_limit(ctx):
    """How a full queue pushes back: withheld credit (flow control) or rejected outcomes (recorded which)."""
    queue = ctx.queue(max_length=10)
    session = ctx.session()
    publisher = session.attach_sender(queue, initial_delivery_count=0)
    publisher.expect_credit(requirement="2.6.7/initial-flow-state")
    pushback = publisher.publish_until_throttled(limit=200)
    consumer = ctx.session().attach_receiver(queue)       # its own connection: the publisher's may be blocked
    consumer.flow(link_credit=5)
    consumer.expect_transfers(5, requirement="2.6.7/credit-formula")
    consumer.expect_no_transfer(requirement="2.6.7/no-send-without-credit")
    consumer.flow(link_credit=5)
    consumer.expect_transfers(5, requirement="2.6.7/credit-formula")
    resumed = publisher.publish_after_clear(count=1)
    ctx.require_model_clean()
    observations = dict(pushback=pushback, resumed=resumed, sent=len(publisher.sent),
                        accepted=len(publisher.accepted_bodies()), rejected=publisher.rejected_count())
    if pushback in ("link-credit withheld", "transfers rejected") and resumed:
        how = "withheld credit" if pushback == "link-credit withheld" else "rejected the excess transfers"
        return ctx.passed(f"the full queue {how} without a disconnect; publishing resumed after draining",
                          **observations)
    if pushback == "link-credit withheld" and resumed:
        return ctx.passed("the full queue withheld credit; credit returned after draining", **observations)
    return ctx.informational(f"full queue: publisher {pushback}; {observations['accepted']} of "
                             f"{observations['sent']} transfers accepted, {observations['rejected']} rejected; "
                             f"resumed={resumed}", **observations)
