"""2.5.6 Session Flow Control — incoming/outgoing windows, the transfer-id sequence, and resource alarms.

The peer's session windows are set through begin and flow; the broker must count transfer frames against
the window it was last told (remote-incoming-window) and keep its own transfer-ids consistent.

Alarms: a broker short of memory or disk should throttle publishers with the protocol's own flow control
(an incoming-window of 0, or link-credit withheld) while consumers keep receiving, and lose nothing. The
spec does not oblige a broker to have alarms, so how it throttles is recorded; MUST-level rules that still
apply (no transfer beyond credit or window) are judged by the model over the whole exchange. Each alarm
case drives its scenario to the end whatever it found on the way, and says whether publishers were
throttled, consumers continued and nothing was lost. Alarm cases are broker-wide: they run alone.
"""

from ..casekit import REFUSALS, case
from ..casekit.producers import (
    Budget, Means, Resume, accept_received, consume_and_accept, count_in_flight, credit_back, held_by_broker, producer_facts,
    publish_pipelined,
)
from ..casekit.scripts import Excess


@case("2.5.6/1", "Peer incoming-window 0: no transfer despite link credit; widening the window resumes",
      ["2.5.6/remote-incoming-window-formula", "2.5.6/remote-incoming-window-decrement", "2.5.6/incoming-window"],
      subject=["2.5.6/remote-incoming-window-decrement"],
      expectation="begin(incoming-window=0), credit 5, 5 queued -> nothing; flow(incoming-window=3) -> exactly 3; "
                  "flow(incoming-window=100) -> the other 2")
def incoming_window_zero(ctx):
    """remote-incoming-window = next-incoming-id(flow) + incoming-window(flow) - next-outgoing-id(endpoint)."""
    queue = ctx.queue(preload=5)
    session = ctx.session(incoming_window=0)
    link = session.attach_receiver(queue)
    link.flow(link_credit=5)
    link.expect_no_transfer(requirement="2.5.6/remote-incoming-window-decrement",
                            why="the peer's incoming-window is 0")
    session.set_incoming_window(3)
    link.expect_transfers(3, requirement="2.5.6/remote-incoming-window-decrement")
    link.expect_no_transfer(requirement="2.5.6/remote-incoming-window-decrement",
                            why="a window of 3 admits exactly 3 transfer frames")
    session.set_incoming_window(100)
    link.expect_transfers(2, requirement="2.5.6/remote-incoming-window-decrement")
    return ctx.passed("no transfer with window 0, exactly 3 with window 3, the rest after widening")


@case("2.5.6/2", "Peer exceeds the broker's incoming-window (informational)",
      ["2.5.6/incoming-window", "2.8.17/window-violation", "2.5.4/session-error-end", "2.6.7/initial-flow-state"],
      deliberate=["2.5.6/remote-incoming-window-decrement"],
      refusals_judged=REFUSALS,     # any error answer to the excess is the subject (recorded)
      expectation="send remote-incoming-window + 1 transfer frames without waiting -> the broker ends the session "
                  "with amqp:session:window-violation, or handles them (recorded)")
def exceed_broker_window(ctx):
    """The spec defines window-violation but not what a receiving endpoint must do: record what it does."""
    queue = ctx.queue()
    session = ctx.session()
    window = session.remote_incoming_window
    if window > 5000:
        return ctx.informational(f"the broker's incoming-window is {window}: too large to exceed within the "
                                 "case budget", broker_incoming_window=window)
    links = [session.attach_sender(queue, initial_delivery_count=0)]
    links[0].expect_credit(requirement="2.6.7/initial-flow-state")
    while sum(link.credit for link in links) <= window and len(links) < 20:
        link = session.attach_sender(queue, initial_delivery_count=0)
        link.expect_credit(requirement="2.6.7/initial-flow-state")
        links.append(link)
    to_send = window + 1
    sent = 0
    for link in links:
        while link.credit > 0 and sent < to_send:
            link.transfer(f"w-{sent}".encode(), ignore_session_window=True)
            sent += 1
    outcome, seen = session.observe_window_excess(sent)
    ctx.require(outcome is not Excess.DROPPED, "2.5.4/session-error-end",
                "the broker dropped the connection instead of ending the session with an error",
                expected="end(error=amqp:session:window-violation) or the transfers handled", actual=seen)
    return ctx.informational(f"sent {sent} transfers against an incoming-window of {window}: the broker {seen}",
                             broker_incoming_window=window, sent=sent, outcome=outcome.value)


TOP_UP_BUDGET = 1000     # 2.5.6/3 uses up a publisher credit up to this size, so the broker tops it up


@case("2.5.6/3", "The broker's flows carry next-incoming-id and next-outgoing-id consistent with the transfers",
      ["2.5.6/update-from-flow", "2.5.6/next-outgoing-id-serial", "2.7.4/next-incoming-id-set",
       "2.6.7/initial-flow-state"], subject=["2.5.6/update-from-flow", "2.5.6/next-outgoing-id-serial"],
      expectation="receive 3 and publish the whole credit granted (2 when it exceeds 1000) -> the broker's next "
                  "flow (its own credit top-up, else its answer to flow(echo=true) without handle) has "
                  "next-outgoing-id = its begin's + 3 and next-incoming-id = ours + the transfers (the echo is only "
                  "the means: a broker that shows neither makes the subject not observable, 2.7.4/2 judges echo)")
def session_sequence_numbers(ctx):
    """next-incoming-id must follow our next-outgoing-id; the broker's transfer-ids advance by one per frame.
    A flow the broker sends on its own after our transfers (a credit top-up) serves as well as the echo."""
    inbound = ctx.queue(preload=3)
    outbound = ctx.queue()
    session = ctx.session()
    receiver = session.attach_receiver(inbound)
    receiver.flow(link_credit=3)
    receiver.expect_transfers(3, requirement="2.6.7/credit-formula")
    sender = session.attach_sender(outbound, initial_delivery_count=0)
    sender.expect_credit(requirement="2.6.7/initial-flow-state")
    sender.require_credit_at_least(2)
    count = sender.credit if sender.credit <= TOP_UP_BUDGET else 2     # all of it: a broker wanting more says so
    for i in range(count):
        sender.transfer(f"s{i}".encode())
    reply = session.own_flow_after_transfers() or session.echo(requirement=None, settled=True)
    if reply is None:
        return ctx.unobservable("2.5.6/update-from-flow", "the broker answered no flow(echo=true) on the session "
                                "and sent no flow of its own after our transfers (echo is a SHOULD, judged by 2.7.4/2)")
    if ctx.require(reply.next_incoming_id is not None, "2.7.4/next-incoming-id-set",
                   "the broker's flow omits next-incoming-id after it received our begin",
                   expected="next-incoming-id set", actual="absent"):
        session.require_next_incoming_id(reply, session.next_outgoing_id, requirement="2.5.6/update-from-flow")
    session.require_next_outgoing_id(reply, session.broker_initial_outgoing_id + 3,
                                     requirement="2.5.6/next-outgoing-id-serial")
    return ctx.passed(f"next-incoming-id and next-outgoing-id matched the {count} and 3 transfers exchanged")


# -- resource alarms --------------------------------------------------------------------------------------

THROTTLE_REQUIREMENTS = ["2.5.6/incoming-window", "2.6.7/link-credit-receiver", "3.2.1/durable-not-lost",
                         "3.4.2/accepted-at-target",
                         "2.6.7/no-send-without-credit", "2.6.7/initial-flow-state", "2.6.7/credit-formula"]


def _alarm_verdict(ctx, kind: str, throttle: Means, consumers: bool, resumed: bool, lost: int, duplicated: int,
                   accepted: int, producer: dict | None = None, served: dict | None = None):
    """The alarm's own subject, judged whatever was found on the way: throttled by flow control,
    consumers served, publishing resumed, nothing lost."""
    observations = dict(throttled_by=throttle.value, consumers_continued=consumers, resumed=resumed,
                        accepted=accepted, lost=lost, duplicated=duplicated)
    if producer is not None:
        observations["producer"] = producer
    ctx.require(not lost, "3.2.1/durable-not-lost",
                f"{lost} accepted durable messages lost across the {kind} alarm",
                expected=f"each of the {accepted} accepted durable messages consumed",
                actual=f"{lost} lost")
    ctx.require(not duplicated, "3.4.2/accepted-at-target",
                f"{duplicated} accepted messages delivered twice across the {kind} alarm",
                expected=f"each of the {accepted} accepted messages consumed once",
                actual=f"{lost} lost, {duplicated} duplicated")
    how = (producer or {}).get("resume_how")
    summary = (f"{kind} alarm: publisher {'throttled by ' + throttle.value if throttle.by_flow_control else throttle.value}; "
               f"consumers {'continued' if consumers else 'stopped'}{_unserved(served) if not consumers else ''}; "
               f"publishing "
               f"{'resumed' if resumed else 'did not resume'}{f' ({how})' if how and resumed else ''}; "
               f"{'nothing' if not lost else lost} lost")
    if throttle.by_flow_control and consumers and resumed and not lost and not duplicated:
        return ctx.passed(summary, **observations)
    return ctx.informational(summary, **observations)


def _unserved(served: dict | None) -> str:
    """Which consumer went short during the alarm, and why (for the summary): `served` maps where it consumed
    to what it took (`Taken`)."""
    where = {"publisher_connection": "on the publisher's connection", "new_connection": "on a new connection"}
    short = [f"{where.get(k, k)}: {t.text()}" for k, t in (served or {}).items() if not t.complete]
    return f" ({'; '.join(short)})" if short else ""


def _consume_during_alarm(ctx, queue: str, publisher, *consumers) -> Resume:
    """What an operator does about a held publisher: consumers drain the queue (accepting, which frees memory
    and room) while the alarm is still on. Artemis' memory alarm (an address over its BLOCK limit) clears
    this way: from 2.26 a publisher blocked on its address gets no credit when the setting is merely removed.
    Bounded waits only. `consumers`: the case's receiving links, whose messages are accepted too."""
    accept_received(*consumers)
    reader = consume_and_accept(ctx, queue)
    if credit_back(publisher):
        return Resume(resumed=True, depth=0, how="credit back after consuming, with the alarm still raised",
                      consumer=reader)
    return Resume(consumer=reader)


def _resume_after_clear(publisher, during: Resume) -> Resume:
    """After the alarm is cleared: credit back then, if consuming did not bring it back before."""
    if during.resumed:
        return during
    if credit_back(publisher):
        return Resume(resumed=True, how="credit back when the alarm cleared", consumer=during.consumer)
    return Resume(how="no credit after consuming the queue and clearing the alarm", consumer=during.consumer)


def _alarm_case(ctx, kind: str):
    """Publisher and consumer share one session; the alarm is raised mid-stream, then cleared. The publisher
    is pipelined (sends within the credit it knows, reading the broker's flows between transfers)."""
    queue = ctx.queue(preload=30)
    session = ctx.session()
    consumer = session.attach_receiver(queue)
    publisher = session.attach_sender(queue, initial_delivery_count=0, durable=True)
    with ctx.step():
        publisher.expect_credit(requirement="2.6.7/initial-flow-state")
    consumer.flow(link_credit=10)
    with ctx.step():
        consumer.expect_transfers(10, requirement="2.6.7/credit-formula")
    consumers = True
    probe = None
    served: dict = {}          # where a consumer took messages during the alarm -> what it took (Taken)
    with ctx.alarm(kind):
        before = ctx.queue_depth_now(queue)         # the broker's own count (None where only a tool could tell)
        point = publish_pipelined(publisher, Budget.past_first_grant(publisher.credit, cap=2000), tag="a",
                                  depth=20)
        throttle = point.means
        with ctx.step():
            # consumers keep receiving: the case's subject, informative (a sender MAY use the credit it is
            # given; none is obliged to send), recorded whatever it shows, never a finding of its own
            consumers = False
            on_publisher = throttle is not Means.CONNECTION_ENDED   # a closed connection took its consumer along
            if on_publisher:
                consumer.flow(link_credit=10)
                # a stall is proven by a round trip left unanswered: within the frame timeout, or within the
                # absence window while the broker's own count shows it took nothing the publisher sent
                held = held_by_broker(ctx, publisher, point, before) if throttle.throttled else None
                taken = served["publisher_connection"] = consumer.take_transfers(10, held=held)
                on_publisher = taken.complete
                if taken.stalled and throttle.throttled and not throttle.ended:
                    # nothing answered on the publisher's connection: it was held by the socket, not by flow control
                    point.means, point.detail = Means.STALLED, taken.detail
                    throttle = point.means
            newcomer = ctx.session()                                            # a consume-only connection
            probe = newcomer.attach_receiver(queue)
            probe.flow(link_credit=1)
            taken = served["new_connection"] = probe.take_transfers(1)
            consumers = on_publisher and taken.complete
        during = _consume_during_alarm(ctx, queue, publisher, consumer, *([probe] if probe else [])) \
            if not throttle.ended else Resume()
    resume = _resume_after_clear(publisher, during) if not throttle.ended else Resume(how="the broker ended it")
    resumed = resume.resumed and publisher.publish_after_clear(count=5)
    drained = ctx.drain_queue(queue, consumer, *([probe] if probe else []),
                              *([resume.consumer] if resume.consumer else []))
    accepted = publisher.accepted_bodies()
    lost = [b for b in accepted if b not in drained]
    duplicated = len(drained) - len(set(drained))
    count_in_flight(publisher, point)     # with the broker's later flows and outcomes in
    producer = producer_facts(f"{kind} alarm", point, resume, point, lost=len(lost), accepted=len(accepted))
    ctx.observe(consumers_served_during_alarm={k: t.text() for k, t in served.items()})
    return _alarm_verdict(ctx, kind, throttle, consumers, resumed, len(lost), duplicated, len(accepted), producer,
                          served)


@case("2.5.6/4", "Memory alarm: publisher throttled by flow control, consumers unaffected, nothing lost",
      THROTTLE_REQUIREMENTS, subject=["2.5.6/incoming-window", "2.6.7/link-credit-receiver"],
      needs=("memory_alarm",), exclusive=True,
      expectation="raise the memory alarm while publishing -> incoming-window 0 or credit withheld (not a closed "
                  "connection or a stalled socket); consumer keeps receiving; a new consume-only connection is "
                  "accepted; after clearing, publishing resumes on the same link; accepted messages consumed once")
def memory_alarm(ctx):
    """Throttling by the protocol's own flow control: window 0 (2.5.6) or credit withheld (2.6.7)."""
    return _alarm_case(ctx, "memory")


@case("2.5.6/5", "Disk alarm: publisher throttled by flow control, consumers unaffected, nothing lost",
      THROTTLE_REQUIREMENTS, subject=["2.5.6/incoming-window", "2.6.7/link-credit-receiver"],
      needs=("disk_alarm",), exclusive=True,
      expectation="as 2.5.6/4 with the disk alarm")
def disk_alarm(ctx):
    """Throttling by the protocol's own flow control: window 0 (2.5.6) or credit withheld (2.6.7)."""
    return _alarm_case(ctx, "disk")


@case("2.5.6/6", "A session begun during an alarm: publishing throttled from the start, consuming works",
      ["2.5.6/incoming-window", "2.6.7/link-credit-receiver", "2.6.7/no-send-without-credit",
       "2.6.7/credit-formula"], subject=["2.5.6/incoming-window", "2.6.7/link-credit-receiver"],
      needs=("memory_alarm",), exclusive=True,
      expectation="with the memory alarm on, begin -> incoming-window 0 or no publisher credit; a receiver on the "
                  "same session gets its messages; after clearing, the publisher may send")
def session_begun_during_alarm(ctx):
    """What the broker announces in begin and attach while an alarm is active."""
    queue = ctx.queue(preload=5)
    consumers = False
    with ctx.alarm("memory"):
        session = ctx.session()
        begin_window = session.remote_incoming_window
        publisher = session.attach_sender(queue, initial_delivery_count=0)
        credit_during = publisher.wait_for_credit(quiet=True)
        consumer = session.attach_receiver(queue)
        consumer.flow(link_credit=3)
        with ctx.step():
            taken = consumer.take_transfers(3)       # consuming works: the case's subject (informative)
            ctx.observe(consumer_during_alarm=taken.text())
            consumers = taken.complete
            if consumers:
                consumer.expect_no_transfer(requirement="2.6.7/no-send-without-credit")
        during = _consume_during_alarm(ctx, queue, publisher, consumer)
    resume = _resume_after_clear(publisher, during)
    resumed = resume.resumed and publisher.publish_after_clear(count=1)
    throttled = begin_window == 0 or not credit_during
    observations = dict(begin_incoming_window=begin_window, credit_during_alarm=credit_during,
                        consumers_continued=consumers, resumed=resumed, resumed_by=resume.how)
    how = "incoming-window 0" if begin_window == 0 else "credit withheld" if not credit_during else "not throttled"
    means = Means.WINDOW if begin_window == 0 else Means.NOT_TOPPED_UP if not credit_during else Means.NONE
    observations["producer"] = {   # the report's producer row: stopped before its first message, or not at all
        "limit": "memory alarm", "means": means.value, "drain": None, "error": None,
        "detail": f"begin incoming-window {begin_window}, credit {credit_during} at attach",
        "at_message": 1 if means.throttled else None, "depth": None, "budget": "1 message",
        "in_flight": None, "pipelined_means": None, "resumed": resumed,
        "resume_depth": resume.depth if resumed else None, "resume_how": resume.how,
        "accepted": len(publisher.accepted_bodies()), "lost": None, "synchronous": None, "pipelined": None}
    summary = (f"session begun during the alarm: publisher {how} (incoming-window {begin_window}, credit "
               f"{credit_during}); consumer {'served' if consumers else 'not served'}; publishing "
               f"{'resumed' if resumed else 'did not resume'}")
    if throttled and resumed and consumers:
        return ctx.passed(summary, **observations)
    return ctx.informational(summary, **observations)
