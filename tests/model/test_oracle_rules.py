"""More of the oracle's rules, each against the spec sentence it applies (quoted from the OASIS AMQP 1.0 text,
sections 2.5.6, 2.6.7, 2.7.3-2.7.5): the boundaries, the branches and the findings' own words that the
mutation run (`./dev mutate`) showed no test held. Sequence numbers sit near 2^32 so most cases cross the wrap."""

import dataclasses

import pytest
from flowsim import Script, receiver_link, sender_link

from conformance.model import FlowOracle
from conformance.model.oracle import LinkView
from conformance.wire import Attach, Begin, Detach, End, Flow, Frame, Source, Target, Transfer

I = 0xFFFFFFFB             # the broker's initial delivery-count on a receiving link
M = 0xFFFFFFFF


def _found(vs):
    return [(v.requirement_id, v.detail) for v in vs]


# -- each finding names what the frame showed and the limit it was judged against ---------------------------
# (the developers' guide: a finding records the requirement, the expected and the actual value, and the frame)

def _credit(n=5, **kw):
    s = receiver_link(I, **kw)
    s.out(s.our_flow(handle=0, delivery_count=I, link_credit=n))
    return s


def _two_sent(n=5, drain=False):
    s = receiver_link(I)
    s.out(s.our_flow(handle=0, delivery_count=I, link_credit=n, drain=drain))
    s.inn(s.transfer(3))
    s.inn(s.transfer(3))
    return s


def _after_back():
    s = sender_link()
    s.inn(s.broker_flow(handle=5, delivery_count=0xFFFFFFFE, link_credit=5))
    for _ in range(3):
        s.out(s.transfer(1, direction="out"))
    s.inn(s.broker_flow(handle=5, delivery_count=1, link_credit=5, next_incoming_id=0xFFFFFFF3))
    return s, s.broker_flow(handle=5, delivery_count=1, link_credit=5, next_incoming_id=0xFFFFFFF1)


def _scenarios():
    """(name, script and frame, requirement, detail)"""
    def window():
        s = _credit(our_window=1, broker_next_outgoing=M)
        s.inn(s.transfer(3))
        return s, s.transfer(3)

    def no_credit():
        s = _credit(1)
        s.inn(s.transfer(3))
        return s, s.transfer(3)

    def no_credit_two_limits():
        s = _credit(2)
        s.out(s.our_flow(handle=0, delivery_count=I, link_credit=1))          # lowered in flight
        s.inn(s.transfer(3))
        s.inn(s.transfer(3))
        return s, s.transfer(3)

    def window_two_limits():
        s = _credit(our_window=1, broker_next_outgoing=0)
        s.out(s.our_flow(incoming_window=1))
        s.inn(s.transfer(3))
        return s, s.transfer(3)

    def continuation():
        s = _credit()
        s.inn(Transfer(handle=3, delivery_id=4, more=True))
        return s, Transfer(handle=3, delivery_id=5)

    def echo():
        s = receiver_link(I)
        s.out(s.our_flow(echo=True))
        return s, s.broker_flow(echo=True)

    def early_nid():
        s = Script()
        s.inn(Begin(next_outgoing_id=0, incoming_window=10, outgoing_window=10))
        return s, Flow(next_incoming_id=0, incoming_window=10, next_outgoing_id=0, outgoing_window=10)

    def advanced():
        s = _credit(2)
        return s, s.broker_flow(handle=3, delivery_count=(I + 3) & M, link_credit=0)

    def initial():
        s = Script()
        s.out(Begin(next_outgoing_id=0, incoming_window=10, outgoing_window=10))
        s.inn(Begin(remote_channel=0, next_outgoing_id=0, incoming_window=10, outgoing_window=10))
        s.out(Attach(name="r", handle=0, role=True))
        return s, Attach(name="r", handle=0, role=False)

    def early_count():
        s = _broker_receiver_first()
        return s, s.broker_flow(handle=2, delivery_count=5, link_credit=3)

    def with_flow(setup, **fields):
        def make():
            s = setup()
            return s, s.broker_flow(**fields)
        return make

    two = with_flow
    return [
        ("no delivery-id", lambda: (_credit(), Transfer(handle=3)), "2.7.5/delivery-id-first",
         "the first transfer of a delivery has no delivery-id"),
        ("other delivery-id", continuation, "2.7.5/delivery-id-first",
         "continuation transfer has delivery-id 5, the delivery began with 4"),
        ("window", window, "2.5.6/remote-incoming-window-decrement",
         "transfer-id 0x0 is beyond the incoming-window (last transfer-id allowed: 0xffffffff)"),
        ("credit", no_credit, "2.6.7/no-send-without-credit",
         "message at delivery-count 0xfffffffc with no link-credit (delivery-limit 0xfffffffc)"),
        ("credit, two limits", no_credit_two_limits, "2.6.7/no-send-without-credit",
         "message at delivery-count 0xfffffffd with no link-credit (delivery-limit 0xfffffffd, 0xfffffffc)"),
        ("window, two limits", window_two_limits, "2.5.6/remote-incoming-window-decrement",
         "transfer-id 0x1 is beyond the incoming-window (last transfer-id allowed: 0x0, 0x0)"),
        ("echo", echo, "2.7.4/echo-no-loop", "a flow answering an echo request itself sets echo=true"),
        ("link fields", with_flow(lambda: receiver_link(I), link_credit=1, drain=True),
         "2.7.4/link-fields-need-handle", "a flow without handle carries link_credit, drain"),
        ("no next-incoming-id", with_flow(lambda: receiver_link(I), next_incoming_id=None),
         "2.7.4/next-incoming-id-set", "flow without next-incoming-id after the partner's begin"),
        ("next-incoming-id ahead", with_flow(lambda: receiver_link(I), next_incoming_id=1),
         "2.7.4/next-incoming-id-set", "next-incoming-id 0x1 is ahead of the next transfer-id 0x0 the partner "
         "will send"),
        ("next-incoming-id early", early_nid, "2.7.4/next-incoming-id-set",
         "flow sets next-incoming-id before the partner's begin arrived"),
        ("next-incoming-id back", _after_back, "2.7.4/next-incoming-id-set",
         "next-incoming-id 0xfffffff1 went back (before 0xfffffff3)"),
        ("sender count missing", two(_two_sent, handle=3, link_credit=2), "2.7.4/sender-delivery-count-set",
         "the sender's flow has no delivery-count"),
        ("sender count behind", two(_two_sent, handle=3, delivery_count=I + 1, link_credit=3),
         "2.7.4/sender-delivery-count-set",
         "delivery-count 0xfffffffc is behind 0xfffffffd, the count its transfers reached"),
        ("credit kept", two(_two_sent, handle=3, delivery_count=(I + 2) & M, link_credit=5),
         "2.6.7/credit-decrease-on-send", "delivery-count 0xfffffffd + link-credit 5: the credit was not "
         "decreased by the transfers sent since it was granted (0x0)"),
        ("foreign limit", two(_two_sent, handle=3, delivery_count=(I + 2) & M, link_credit=9),
         "2.6.7/credit-formula", "delivery-count 0xfffffffd + link-credit 9 = 0x6 is not a delivery-limit the "
         "receiver identified (0x0)"),
        ("credit 0 short", two(_two_sent, handle=3, delivery_count=(I + 2) & M, link_credit=0),
         "2.6.7/credit-formula", "link-credit 0 at delivery-count 0xfffffffd, short of the delivery-limit (0x0)"),
        ("advanced", advanced, "2.6.7/credit-formula", "delivery-count advanced to 0xfffffffe without "
         "transfers, past every delivery-limit (0xfffffffb, 0xfffffffd)"),
        ("drain credit left", two(lambda: _two_sent(drain=True), handle=3, delivery_count=(I + 2) & M,
                                  link_credit=3, available=0, drain=True),
         "2.6.7/drain-advance", "drain is set and nothing is available, yet link-credit is 3 (delivery-count "
         "0xfffffffd not advanced)"),
        ("drain short", two(lambda: _two_sent(drain=True), handle=3, delivery_count=(I + 2) & M, link_credit=0,
                            drain=True),
         "2.6.7/drain-advance", "link-credit 0 at delivery-count 0xfffffffd, short of the delivery-limit (0x0)"),
        ("receiver count missing", with_flow(sender_link, handle=5, link_credit=5), "2.7.4/receiver-delivery-count",
         "the receiver's flow has no delivery-count though it has seen the sender's attach"),
        ("receiver count ahead", with_flow(sender_link, handle=5, delivery_count=0, link_credit=5),
         "2.7.4/receiver-delivery-count", "delivery-count 0x0 is ahead of the sender's 0xfffffffe"),
        ("receiver count early", early_count, "2.7.4/receiver-delivery-count",
         "the receiver's flow sets delivery-count before the sender's attach"),
        ("no initial count", initial, "2.7.3/initial-delivery-count-sender",
         "the sender's attach has no initial-delivery-count"),
    ]


@pytest.mark.parametrize("make,rule,detail", [s[1:] for s in _scenarios()], ids=[s[0] for s in _scenarios()])
def test_each_finding_names_the_value_it_saw_and_the_limit_it_was_judged_against(make, rule, detail):
    s, frame = make()
    assert _found(s.inn(frame)) == [(rule, detail)]


def test_the_broker_is_judged_against_the_limits_it_may_still_act_on_and_the_finding_names_exactly_those():
    """2.5.6: the incoming-window "identifies a current maximum incoming transfer-id that can be computed by
    subtracting one from the sum of incoming-window and next-incoming-id". A transfer our begin's window
    would not allow shows the broker acted on our later, larger window: from then on the begin's window is
    no longer one it may be acting on, and the finding lists only the window it was judged against."""
    s = receiver_link(I, our_window=1, broker_next_outgoing=0)
    s.out(s.our_flow(handle=0, delivery_count=I, link_credit=10))        # credit; the window stays 1
    s.out(s.our_flow(incoming_window=2))                                 # last transfer-id allowed: 1
    assert s.ids(s.transfer(3)) == [] and s.ids(s.transfer(3)) == []
    assert _found(s.inn(s.transfer(3))) == [("2.5.6/remote-incoming-window-decrement",
                                             "transfer-id 0x2 is beyond the incoming-window (last transfer-id "
                                             "allowed: 0x1)")]


# -- 2.7.4 delivery-count on the receiver's flow, and next-incoming-id, judged for both sides -----------------

def _broker_receiver_first(judge="in"):
    """The broker opens a link on which it receives (it attaches first, as receiver; our peer is the sender)."""
    s = Script(judge)
    s.out(Begin(next_outgoing_id=0, incoming_window=10, outgoing_window=10))
    s.inn(Begin(remote_channel=0, next_outgoing_id=0, incoming_window=10, outgoing_window=10))
    assert s.ids(Attach(name="x", handle=2, role=True)) == []            # a receiver's: no initial count
    return s


def test_a_receivers_flow_sets_delivery_count_only_once_it_can_have_seen_the_senders_attach():
    """2.7.4 delivery-count: "In the event that the receiving link endpoint has not yet seen the initial attach
    frame from the sender this field MUST NOT be set." Once our attach may be in flight, neither is judged."""
    s = _broker_receiver_first()
    assert s.ids(s.broker_flow(handle=2, delivery_count=5, link_credit=3)) == ["2.7.4/receiver-delivery-count"]
    assert s.ids(s.broker_flow(handle=2, link_credit=3)) == []
    s.out(Attach(name="x", handle=0, role=False, initial_delivery_count=5))
    assert s.ids(s.broker_flow(handle=2, link_credit=3)) == []               # it may not have our attach yet
    assert s.ids(s.broker_flow(handle=2, delivery_count=5, link_credit=3)) == []
    assert s.oracle.link(0, 0).sender == "out"


def test_our_attach_answering_the_brokers_proves_nothing_it_had_not_seen():
    """The in-flight rule (2.6.7: "If the link-credit is reduced by the receiver when transfers are
    in-flight, the receiver MAY either handle the excess messages normally ..."; likewise our session window):
    only the broker's attach answering ours shows it processed our earlier frames. When the broker attached
    first, our answer proves nothing, and its transfers on another link may still use our larger window."""
    s = receiver_link(I, our_window=10, broker_next_outgoing=0)
    s.out(s.our_flow(handle=0, delivery_count=I, link_credit=20))
    s.out(s.our_flow(incoming_window=1))                                   # lowered: may be in flight
    s.inn(Attach(name="x", handle=4, role=False, initial_delivery_count=0))
    s.out(Attach(name="x", handle=1, role=True))
    for _ in range(10):
        assert s.ids(s.transfer(3)) == []
    assert s.ids(s.transfer(3)) == ["2.5.6/remote-incoming-window-decrement"]


@pytest.mark.parametrize("fields,found", [({}, ["2.7.4/receiver-delivery-count"]),
                                          ({"delivery_count": I}, [])])
def test_our_receivers_flow_after_the_brokers_attach_must_carry_its_delivery_count(fields, found):
    """2.7.4: from the receiver "this field MUST be set to the last known value of the corresponding sending
    endpoint": our peer has seen the broker's attach, so it knows it."""
    s = receiver_link(I, judge="both")
    assert [(v.requirement_id, v.direction) for v in s.out(s.our_flow(handle=0, link_credit=1, **fields))] == \
        [(r, "out") for r in found]


def test_a_receivers_delivery_count_may_not_go_back_before_the_senders_initial_one():
    """2.7.4: the receiver's delivery-count is "the last known value of the corresponding sending endpoint";
    the first known value is the initial-delivery-count of the sender's attach."""
    s = sender_link(0xFFFFFFFE)
    assert _found(s.inn(s.broker_flow(handle=5, delivery_count=0xFFFFFFFD, link_credit=5))) == [
        ("2.7.4/receiver-delivery-count", "delivery-count 0xfffffffd went back (before 0xfffffffe)")]


def test_a_receivers_flow_without_delivery_count_counts_its_credit_from_the_initial_one():
    """2.6.7: "In the event that the receiver does not yet know the delivery-count, i.e., delivery-count_rcv
    is unspecified, the sender MUST assume that the delivery-count_rcv is the first delivery-count_snd sent
    from sender to receiver" (the flow itself is flagged: the broker had our attach)."""
    s = sender_link(0xFFFFFFFE, judge="both")
    s.inn(s.broker_flow(handle=5, link_credit=2))
    assert s.oracle.peer_may_send(0, 1) == 2
    assert s.ids(s.transfer(1, direction="out"), direction="out") == []
    assert s.ids(s.transfer(1, direction="out"), direction="out") == []
    assert s.ids(s.transfer(1, direction="out"), direction="out") == ["2.6.7/no-send-without-credit"]


def test_our_flow_after_the_brokers_begin_must_carry_next_incoming_id():
    """2.7.4 next-incoming-id: "This value MUST be set if the peer has received the begin frame for the
    session, and MUST NOT be set if it has not." (our peer judged: it has the broker's begin)"""
    s = receiver_link(I, judge="both")
    assert [(v.requirement_id, v.direction) for v in s.out(s.our_flow(next_incoming_id=None))] == \
        [("2.7.4/next-incoming-id-set", "out")]


def test_the_brokers_flow_on_a_session_it_began_is_judged_only_before_our_begin():
    """2.7.4 next-incoming-id (as above): before our answering begin the broker cannot have it; after it, its
    flow may have crossed our begin, so either is legal. 2.5.6: without next-incoming-id the window counts
    from "initial-outgoing-id_endpoint + incoming-window_flow" (our initial-outgoing-id)."""
    s = Script(judge="both")
    s.inn(Begin(next_outgoing_id=100, incoming_window=10, outgoing_window=10), channel=5)
    assert s.ids(Flow(next_incoming_id=0, incoming_window=2, next_outgoing_id=100, outgoing_window=10),
                 channel=5) == ["2.7.4/next-incoming-id-set"]
    assert s.ids(Flow(incoming_window=2, next_outgoing_id=100, outgoing_window=10), channel=5) == []
    s.out(Begin(remote_channel=5, next_outgoing_id=0xFFFFFFF0, incoming_window=10, outgoing_window=10))
    # our transfers (no link needed: every transfer frame uses the session window) against 0xfffffff0 + 2
    assert s.ids(Transfer(handle=1, delivery_id=0), direction="out") == []
    assert s.ids(Transfer(handle=1, delivery_id=1), direction="out") == []
    assert s.ids(Transfer(handle=1, delivery_id=2), direction="out") == ["2.5.6/remote-incoming-window-decrement"]
    assert s.ids(Flow(incoming_window=2, next_outgoing_id=100, outgoing_window=10), channel=5) == []


def test_a_flow_without_next_incoming_id_after_the_begin_still_counts_from_the_initial_outgoing_id():
    """2.5.6: "If the next-incoming-id field of the flow frame is not set, then remote-incoming-window is
    computed as follows: initial-outgoing-id_endpoint + incoming-window_flow - next-outgoing-id_endpoint"."""
    s = sender_link(0xFFFFFFFE, judge="both")                # our first transfer-id: 0xfffffff0
    s.inn(s.broker_flow(handle=5, delivery_count=0xFFFFFFFE, link_credit=10))
    s.out(s.transfer(1, direction="out"))
    assert s.ids(s.broker_flow(next_incoming_id=None, incoming_window=2)) == ["2.7.4/next-incoming-id-set"]
    assert s.ids(s.transfer(1, direction="out"), direction="out") == []
    assert s.ids(s.transfer(1, direction="out"), direction="out") == ["2.5.6/remote-incoming-window-decrement"]


def test_session_state_on_each_side_follows_our_flow():
    """2.5.6 receiving a flow: the remote-incoming-window is "next-incoming-id_flow + incoming-window_flow -
    next-outgoing-id_endpoint"; our own incoming-window is the one our flow announced."""
    s = receiver_link(I, our_window=5, broker_next_outgoing=0xFFFFFFFF)
    s.out(s.our_flow(handle=0, delivery_count=I, link_credit=10))
    s.inn(s.transfer(3))
    s.inn(s.transfer(3))
    s.out(s.our_flow(incoming_window=7))                # next-incoming-id 1 (wrapped)
    assert s.oracle.session(0).incoming_window == 7
    assert s.oracle.session(0, "in").remote_incoming_window == 7     # 1 + 7 - 1


# -- 2.6.7 link credit: proofs of what the broker processed, credit kept, drain -------------------------------

def test_a_transfer_the_proved_limit_allows_proves_no_later_one():
    """2.6.7: "If the link-credit is reduced by the receiver when transfers are in-flight, the receiver MAY
    either handle the excess messages normally ...": a transfer our earlier credit allows says nothing about
    whether the broker saw our reduction."""
    s = _credit(10)
    s.out(s.our_flow(handle=0, delivery_count=I, link_credit=2))
    for _ in range(10):
        assert s.ids(s.transfer(3)) == []
    assert s.ids(s.transfer(3)) == ["2.6.7/no-send-without-credit"]


def test_a_transfer_proves_the_earliest_later_limit_and_with_it_our_session_window():
    """2.6.7 delivery-limit ("adding the link-credit to the delivery-count") and 2.5.6 incoming-window: a
    transfer that only our later flow allows proves the broker processed that flow, its session window
    included (the first frame that explains it; no later one)."""
    s = receiver_link(I, our_window=100, broker_next_outgoing=0)
    s.out(s.our_flow(handle=0, delivery_count=I, link_credit=1, incoming_window=10))     # A
    s.out(s.our_flow(handle=0, delivery_count=I, link_credit=10, incoming_window=2))     # B: ids 0, 1 only
    assert s.ids(s.transfer(3)) == []          # A's credit: A proved
    assert s.ids(s.transfer(3)) == []          # only B's credit allows it: B proved (A's window allowed it)
    assert s.ids(s.transfer(3)) == ["2.5.6/remote-incoming-window-decrement"]


@pytest.mark.parametrize("first,credit,sent", [(0, 5, 2), (0, 1, 1), (1, 5, 2)])
def test_a_flow_showing_credit_not_decreased_proves_nothing(first, credit, sent):
    """2.6.7: "whenever the sender increases delivery-count, it MUST decrease link-credit by the same amount in
    order to maintain the delivery-limit identified by the receiver." A sender flow showing our earlier limit
    plus the messages sent since may be that error as well as the answer to our later flow with that same
    limit: it is clean, but proves nothing, so our later, smaller session window is not yet binding."""
    s = receiver_link(I, our_window=100, broker_next_outgoing=0)
    dc = I
    if first:                                               # a grant consumed before the one kept
        s.out(s.our_flow(handle=0, delivery_count=dc, link_credit=first))
        s.inn(s.transfer(3))
        dc += first
    s.out(s.our_flow(handle=0, delivery_count=dc & M, link_credit=credit))                          # A
    for _ in range(sent):
        s.inn(s.transfer(3))
    now = (dc + sent) & M
    s.out(s.our_flow(handle=0, delivery_count=now, link_credit=credit, incoming_window=0))          # B
    assert s.ids(s.broker_flow(handle=3, delivery_count=now, link_credit=credit)) == []
    assert s.oracle.broker_may_send(0, 0) == 0                       # B: no window
    assert s.oracle.broker_may_send(0, 0, in_flight=True) == credit  # B not proved: A's window may still hold


def test_a_flow_that_only_our_later_limit_explains_proves_it():
    """2.6.7: link-credit_snd := delivery-count_rcv + link-credit_rcv - delivery-count_snd. A sender flow that
    only our later flow's limit explains shows it processed that flow, and its session window with it."""
    s = receiver_link(I, our_window=100, broker_next_outgoing=0)
    s.out(s.our_flow(handle=0, delivery_count=I, link_credit=5))
    s.inn(s.transfer(3))
    s.inn(s.transfer(3))
    s.out(s.our_flow(handle=0, delivery_count=(I + 2) & M, link_credit=4, incoming_window=1))
    assert s.ids(s.broker_flow(handle=3, delivery_count=(I + 2) & M, link_credit=4)) == []
    assert s.ids(s.transfer(3)) == []
    assert s.ids(s.transfer(3)) == ["2.5.6/remote-incoming-window-decrement"]


def test_kept_credit_granted_after_earlier_transfers_is_told_from_a_foreign_limit():
    """2.6.7 credit-decrease-on-send (as above), for a grant made after messages were already sent."""
    s = _credit(4)
    s.inn(s.transfer(3))
    s.inn(s.transfer(3))
    s.out(s.our_flow(handle=0, delivery_count=(I + 2) & M, link_credit=5))          # limit I + 7, 2 sent
    s.inn(s.transfer(3))
    assert s.ids(s.broker_flow(handle=3, delivery_count=(I + 3) & M, link_credit=5)) == \
        ["2.6.7/credit-decrease-on-send"]


def test_credit_kept_from_a_flow_sent_before_the_senders_attach():
    """2.6.7 credit-decrease-on-send, for the credit of a flow pipelined before the broker's attach (no
    messages had been sent when it was granted)."""
    pipelined = Flow(next_incoming_id=7, incoming_window=100, next_outgoing_id=0, outgoing_window=100, handle=0,
                     link_credit=2)
    s = receiver_link(I, pipelined_flow=pipelined)
    s.inn(s.transfer(3))
    assert s.ids(s.broker_flow(handle=3, delivery_count=(I + 1) & M, link_credit=2)) == \
        ["2.6.7/credit-decrease-on-send"]


def test_a_senders_flow_with_drain_set_proves_it_processed_our_drain_request():
    """2.7.4 drain: "When flow state is sent from the sender to the receiver, this field contains the actual
    drain mode of the sender" and 2.6.7: "The sender's value is always the last known value indicated by the
    receiver": drain=true shows it has our flow that asked for it (here with no link-credit on it)."""
    s = _credit(10)
    s.out(s.our_flow(handle=0, delivery_count=I, link_credit=2, drain=True))
    assert s.ids(s.broker_flow(handle=3, delivery_count=I, drain=True)) == []
    assert s.ids(s.transfer(3)) == [] and s.ids(s.transfer(3)) == []
    assert s.ids(s.transfer(3)) == ["2.6.7/no-send-without-credit"]


@pytest.mark.parametrize("ours,theirs,credit,found", [
    (False, True, 3, ["2.6.7/drain-advance"]),     # its own flow says it drains
    (True, False, 3, ["2.6.7/drain-advance"]),     # every limit it may act on asked for drain
    (True, True, 1, ["2.6.7/drain-advance"]),      # one credit left is still credit left
    (False, False, 3, []),                         # no drain: credit left and nothing available is fine
])
def test_drain_with_nothing_available_must_use_up_the_credit(ours, theirs, credit, found):
    """2.6.7: "If the sender's drain flag is set and there are no available messages, the sender MUST advance
    its delivery-count until link-credit is zero, and send its updated flow state to the receiver."""
    s = receiver_link(I)
    s.out(s.our_flow(handle=0, delivery_count=I, link_credit=credit + 2, drain=ours))
    s.inn(s.transfer(3))
    s.inn(s.transfer(3))
    assert s.ids(s.broker_flow(handle=3, delivery_count=(I + 2) & M, link_credit=credit, available=0,
                               drain=theirs)) == found


def test_one_credit_left_matching_the_limit_is_clean():
    """2.6.7: link-credit_snd := delivery-count_rcv + link-credit_rcv - delivery-count_snd (here 1)."""
    s = _two_sent(3)
    assert s.ids(s.broker_flow(handle=3, delivery_count=(I + 2) & M, link_credit=1)) == []


def test_a_flow_behind_the_count_is_one_finding():
    """2.7.4 (sender): "this field MUST be set to the current delivery-count of the link endpoint": a flow
    showing a count behind the transfers is that error alone (its credit is not judged against it)."""
    s = _two_sent(5)
    assert s.ids(s.broker_flow(handle=3, delivery_count=I, link_credit=9)) == ["2.7.4/sender-delivery-count-set"]


# -- aborted and multi-frame deliveries (2.6.14, 2.7.5) ---------------------------------------------------------

@pytest.mark.parametrize("aborts,lag,found", [
    (2, 2, []),                                           # neither aborted delivery counted: excused
    (1, 2, ["2.7.4/sender-delivery-count-set"]),          # one excuse, two behind
])
def test_a_sender_may_leave_aborted_deliveries_uncounted_but_no_more(aborts, lag, found):
    """2.7.5 aborted: "An aborted message is implicitly settled" (whether it consumed credit the spec does not
    say; the oracle counts it and excuses a sender that does not); 2.7.4: the sender's delivery-count MUST
    be its current one."""
    s = _credit(5)
    for _ in range(aborts):
        s.inn(s.transfer(3, aborted=True))
    s.inn(s.transfer(3))
    assert s.ids(s.broker_flow(handle=3, delivery_count=(I + aborts + 1 - lag) & M, link_credit=4 + lag -
                               aborts)) == found


def test_an_abort_excuses_one_uncounted_delivery_once():
    """2.7.4 (sender delivery-count, as above): after the flow that left the aborted delivery out, the excuse
    is used up."""
    s = _credit(5)
    s.inn(s.transfer(3, aborted=True))
    assert s.ids(s.broker_flow(handle=3, delivery_count=I, link_credit=5)) == []
    s.inn(s.transfer(3))
    assert s.ids(s.broker_flow(handle=3, delivery_count=I, link_credit=5)) == ["2.7.4/sender-delivery-count-set"]


def test_a_flow_mid_delivery_may_lag_by_the_message_in_progress_only():
    """2.7.4 sender delivery-count (as above); 2.6.14: a multi-frame message is one message, so a flow sent
    between its frames may show the count before it, but not two behind, and the message still counts."""
    s = _credit(2)
    s.inn(s.transfer(3))
    s.inn(s.transfer(3, more=True))
    assert s.ids(s.broker_flow(handle=3, delivery_count=I, link_credit=2)) == ["2.7.4/sender-delivery-count-set"]
    s = _credit(2)
    s.inn(s.transfer(3, more=True))
    assert s.ids(s.broker_flow(handle=3, delivery_count=I, link_credit=2)) == []
    s.inn(s.transfer(3, first=False))
    assert s.ids(s.transfer(3)) == []
    assert s.ids(s.transfer(3)) == ["2.6.7/no-send-without-credit"]


# -- lifecycle, unknown handles and channels, attach fields --------------------------------------------------

def test_a_transfer_from_the_links_receiver_is_no_message_of_its_sender():
    """2.6.7 delivery-count: "is incremented whenever a message is sent" by the sender; "Only the sender MAY
    independently modify this field." (our peer's transfer on its receiving link moves nothing)"""
    s = _credit(1)
    s.out(s.transfer(0, direction="out"))
    assert s.oracle.link(0, 0).messages == 0
    assert s.ids(s.transfer(3)) == []


def test_a_receivers_attach_needs_no_initial_delivery_count():
    """2.7.3 initial-delivery-count: "This MUST NOT be null if role is sender, and it is ignored if the role is
    receiver.\""""
    s = Script()
    s.out(Begin(next_outgoing_id=0, incoming_window=10, outgoing_window=10))
    s.inn(Begin(remote_channel=0, next_outgoing_id=0, incoming_window=10, outgoing_window=10))
    s.out(Attach(name="s", handle=1, role=False, initial_delivery_count=0))
    assert s.ids(Attach(name="s", handle=5, role=True)) == []


def test_a_transfer_before_the_partners_begin_has_no_window_to_be_judged_by():
    """2.5.6: the remote-incoming-window is "computed from the values of the partner's incoming-window": before
    the partner's begin there is none, so the session window judges nothing (and the oracle does not fail)."""
    s = Script()
    s.inn(Begin(next_outgoing_id=0, incoming_window=10, outgoing_window=10))
    assert s.ids(Transfer(handle=0, delivery_id=0)) == []
    s = Script("both")
    s.out(Begin(next_outgoing_id=0, incoming_window=10, outgoing_window=10))
    assert s.ids(Transfer(handle=0, delivery_id=0), direction="out") == []


def test_a_receivers_attach_needs_no_initial_delivery_count_even_when_both_ends_are_receivers():
    """2.7.3 initial-delivery-count "is ignored if the role is receiver": a broker attaching as receiver to our
    receiving link (a role conflict, no flow-control rule) is not judged as a sender's attach."""
    s = Script()
    s.out(Begin(next_outgoing_id=0, incoming_window=10, outgoing_window=10))
    s.inn(Begin(remote_channel=0, next_outgoing_id=0, incoming_window=10, outgoing_window=10))
    s.out(Attach(name="r", handle=0, role=True))
    assert s.ids(Attach(name="r", handle=3, role=True)) == []
    assert s.oracle.link(0, 0).delivery_count is None


def test_a_limit_exactly_2_31_from_the_transfer_id_neither_allows_nor_proves_the_transfer():
    """RFC 1982 (2.1.3 sequence numbers) leaves two numbers 2^31 apart unordered: a window counted from there
    neither allows a transfer nor shows the broker processed it, so the earlier window still judges it (2.5.6:
    "the remote-incoming-window ... MUST NOT" be exceeded)."""
    s = Script()
    s.out(Begin(next_outgoing_id=0, incoming_window=1, outgoing_window=10))
    s.inn(Begin(remote_channel=0, next_outgoing_id=7, incoming_window=10, outgoing_window=10))
    assert s.ids(Transfer(handle=9, delivery_id=0)) == []                       # transfer-id 7
    s.out(Flow(next_incoming_id=(9 + (1 << 31)) & 0xFFFFFFFF, incoming_window=10, next_outgoing_id=0,
               outgoing_window=10))                                             # 2^31 ahead of transfer-id 9
    assert s.ids(Transfer(handle=9, delivery_id=1)) == ["2.5.6/remote-incoming-window-decrement"]   # 8
    assert s.ids(Transfer(handle=9, delivery_id=2)) == ["2.5.6/remote-incoming-window-decrement"]   # 9


def test_a_transfer_proves_the_first_later_window_that_allows_it_not_a_wider_one():
    """The proof is the earliest later window that allows the transfer (one left suffices): here ours allowing
    exactly it, not the wider one after it, whose start is 2^31 - 1 back; at the next transfer-id that one is
    2^31 away (unordered, RFC 1982), so ours, used up, judges it (2.5.6)."""
    s = Script()
    s.out(Begin(next_outgoing_id=0, incoming_window=1, outgoing_window=10))
    s.inn(Begin(remote_channel=0, next_outgoing_id=7, incoming_window=10, outgoing_window=10))
    assert s.ids(Transfer(handle=9, delivery_id=0)) == []                       # transfer-id 7
    s.out(Flow(next_incoming_id=8, incoming_window=1, next_outgoing_id=0, outgoing_window=10))
    s.out(Flow(next_incoming_id=(9 + (1 << 31)) & 0xFFFFFFFF, incoming_window=(1 << 31) + 1, next_outgoing_id=0,
               outgoing_window=10))
    assert s.ids(Transfer(handle=9, delivery_id=1)) == []                       # 8: proves the first flow
    assert s.ids(Transfer(handle=9, delivery_id=2)) == ["2.5.6/remote-incoming-window-decrement"]   # 9


def test_after_an_attach_without_initial_delivery_count_the_senders_flow_gives_the_count():
    """2.7.3 (as above) is flagged; 2.7.4: the sender's flow "MUST be set to the current delivery-count", so
    from it on the link's credit is judged (2.6.7: "a sender MUST NOT send more messages")."""
    s = Script()
    s.out(Begin(next_outgoing_id=0, incoming_window=10, outgoing_window=10))
    s.inn(Begin(remote_channel=0, next_outgoing_id=0, incoming_window=10, outgoing_window=10))
    s.out(Attach(name="r", handle=0, role=True))
    assert s.ids(Attach(name="r", handle=3, role=False)) == ["2.7.3/initial-delivery-count-sender"]
    view = s.oracle.link(0, 0)
    assert (view.delivery_count, view.delivery_limit, view.link_credit, view.tolerated_credit) == \
        (None, None, None, None)
    assert s.oracle.broker_may_send(0, 0) == 0
    assert s.ids(s.broker_flow(handle=3, delivery_count=5, link_credit=0)) == []
    assert s.oracle.link(0, 0).delivery_count == 5 and s.oracle.broker_may_send(0, 0) == 0
    s.out(s.our_flow(handle=0, delivery_count=5, link_credit=1))
    assert s.ids(s.transfer(3)) == []
    assert s.ids(s.transfer(3)) == ["2.6.7/no-send-without-credit"]


def test_a_limit_that_cannot_be_placed_is_left_out_and_the_others_still_judge():
    """2.6.7: the delivery-limit is "adding the link-credit to the delivery-count"; a flow of ours with no
    delivery-count on a link whose sender never gave an initial one names no limit (2.7.3 broken by the
    broker), but the limit we did place still judges its flow: link-credit_snd := delivery-count_rcv +
    link-credit_rcv - delivery-count_snd."""
    s = Script()
    s.out(Begin(next_outgoing_id=0, incoming_window=10, outgoing_window=10))
    s.inn(Begin(remote_channel=0, next_outgoing_id=0, incoming_window=10, outgoing_window=10))
    s.out(Attach(name="r", handle=0, role=True))
    s.inn(Attach(name="r", handle=3, role=False))
    s.out(s.our_flow(handle=0, delivery_count=5, link_credit=2))
    s.out(s.our_flow(handle=0, link_credit=1))
    assert s.oracle.link(0, 0).tolerated_credit is None               # no delivery-count known yet
    assert s.ids(s.broker_flow(handle=3, delivery_count=5, link_credit=7)) == ["2.6.7/credit-formula"]
    assert s.ids(s.broker_flow(handle=3, delivery_count=5, link_credit=2)) == []


def test_the_link_view_before_the_senders_attach():
    """2.6.7: "The receiver initializes its delivery-count upon receiving the sender's attach": before it,
    nothing about the sender's count or credit is known."""
    s = Script()
    s.out(Begin(next_outgoing_id=0, incoming_window=10, outgoing_window=10))
    s.inn(Begin(remote_channel=0, next_outgoing_id=0, incoming_window=10, outgoing_window=10))
    s.out(Attach(name="r", handle=0, role=True))
    assert s.oracle.link(0, 0) == LinkView("r", "in", 0, None, None, None, None, None, 0, False, 0, False)
    assert s.oracle.broker_may_send(0, 0) == 0


def test_unknown_handles_and_channels_are_not_judged_but_transfers_use_the_session_window():
    """2.7.4 handle: a flow "set to a handle that is not currently associated with an attached link" is for
    the recipient to end the session over (not a flow-control finding); 2.5.6: every transfer frame
    still takes a transfer-id from the session ("The session endpoint assigns each outgoing transfer frame an
    implicit transfer-id")."""
    s = receiver_link(I, our_window=1)
    assert s.ids(s.broker_flow(handle=9, delivery_count=1, link_credit=1)) == []
    assert s.ids(Detach(handle=9)) == [] and s.ids(End(), channel=4) == []
    assert s.ids(Transfer(handle=9, delivery_id=0)) == []
    assert s.ids(Transfer(handle=9, delivery_id=1)) == ["2.5.6/remote-incoming-window-decrement"]
    assert s.oracle.link(0, 0).messages == 0
    s = Script()                                       # no link at all, our window lowered in flight
    s.out(Begin(next_outgoing_id=0, incoming_window=2, outgoing_window=10))
    s.inn(Begin(remote_channel=0, next_outgoing_id=0, incoming_window=10, outgoing_window=10))
    s.out(Flow(next_incoming_id=0, incoming_window=1, next_outgoing_id=0, outgoing_window=10))
    assert s.ids(Transfer(handle=9, delivery_id=0)) == [] and s.ids(Transfer(handle=9, delivery_id=1)) == []
    assert s.ids(Transfer(handle=9, delivery_id=2)) == ["2.5.6/remote-incoming-window-decrement"]


def test_a_link_name_attached_again_after_both_detaches_starts_afresh():
    """2.6.7: "The sender MAY choose an arbitrary point to initialize the delivery-count. This value is
    communicated in the initial attach frame": a new attach of the same name is a new link's initial state."""
    s = _credit(3)
    s.inn(s.transfer(3))
    s.out(Detach(handle=0, closed=True))
    s.inn(Detach(handle=3, closed=True))
    s.out(Attach(name="r", handle=0, role=True, source=Source(address="q"), target=Target()))
    s.inn(Attach(name="r", handle=3, role=False, source=Source(address="q"), target=Target(),
                 initial_delivery_count=40))
    view = s.oracle.link(0, 0)
    assert (view.delivery_count, view.messages, view.broker_handle) == (40, 0, 3)


def test_our_end_detached_and_attached_again_while_the_brokers_sender_stays_carries_on_its_count():
    """2.6.7 delivery-count: "Only the sender MAY independently modify this field": when our receiving end
    detaches and attaches the same link name again before the broker's sender detached, the broker's link
    endpoint lives on, so its delivery-count and our earlier credit still judge its transfers."""
    s = _credit(2)
    s.inn(s.transfer(3))
    s.out(Detach(handle=0))
    s.out(Attach(name="r", handle=2, role=True, source=Source(address="q"), target=Target()))
    view = s.oracle.link(0, 2)
    assert (view.delivery_count, view.messages, view.broker_handle) == ((I + 1) & 0xFFFFFFFF, 1, 3)
    assert s.ids(s.transfer(3)) == []
    assert s.ids(s.transfer(3)) == ["2.6.7/no-send-without-credit"]


def test_a_begin_naming_a_session_already_answered_or_no_session_begins_a_new_one():
    """2.5.6 state is per session endpoint; a broker begin whose remote-channel names no session of ours waiting
    for an answer starts its own session (its flows are judged on their own)."""
    s = receiver_link(I)
    s.inn(Begin(remote_channel=0, next_outgoing_id=50, incoming_window=10, outgoing_window=10), channel=1)
    s.inn(Begin(remote_channel=6, next_outgoing_id=60, incoming_window=10, outgoing_window=10), channel=2)
    assert s.oracle.session(0, "in").next_outgoing_id == 7
    assert s.ids(Flow(incoming_window=1, next_outgoing_id=50, outgoing_window=1), channel=1) == []
    with pytest.raises(LookupError, match="no session on our channel 1 with a begin from 'out'"):
        s.oracle.session(1)


def test_queries_name_what_is_missing():
    s = receiver_link(I)
    with pytest.raises(LookupError, match="not a link the peer sends on"):
        s.oracle.peer_may_send(0, 0)
    with pytest.raises(LookupError, match="no attached link with our handle 0 on our channel 4"):
        s.oracle.link(4, 0)


def test_observe_all_returns_the_findings_of_every_frame():
    s = _credit(0)
    o = s.oracle
    frames = [("in", Frame(0, s.transfer(3))), ("in", Frame(0, s.transfer(3))), ("out", Frame(0, None))]
    assert [v.requirement_id for v in o.observe_all(frames)] == ["2.6.7/no-send-without-credit"] * 2


def test_transcript_violations_keeps_musts_and_shoulds():
    """The catalogue's levels: MUST and SHOULD findings decide a verdict (echo-no-loop is a SHOULD)."""
    from types import SimpleNamespace
    from conformance.model.oracle import transcript_violations
    s = receiver_link(I)
    feed = [("out", s.our_flow(echo=True)), ("in", s.broker_flow(echo=True))]
    s2 = receiver_link(I)
    o = s2.oracle
    entries = [SimpleNamespace(direction=d, item=Frame(0, b), index=i) for i, (d, b) in enumerate(feed)]
    del o
    # a fresh oracle sees only these frames: replay the link's set-up first
    setup = [("out", Begin(next_outgoing_id=0, incoming_window=100, outgoing_window=100)),
             ("in", Begin(remote_channel=0, next_outgoing_id=7, incoming_window=400, outgoing_window=400))]
    entries = [SimpleNamespace(direction=d, item=Frame(0, b), index=100 + i) for i, (d, b) in enumerate(setup)] + \
        entries
    [(v, frame, index)] = transcript_violations(entries)
    assert (v.requirement_id, v.level, index) == ("2.7.4/echo-no-loop", "SHOULD", 1)


# -- duck typing: a field left out is the field's default ------------------------------------------------------

def test_stand_in_frames_leaving_optional_fields_out_mean_their_defaults():
    """The oracle reads attribute names only; a stand-in that leaves an optional field out means the spec's
    default (2.7.4 flow: drain and echo "default=false"; 2.7.5 transfer: more and aborted "default=false";
    a frame without a channel is on channel 0), and performatives are known by their NAME."""

    class BeginBody:
        NAME = "begin"

        def __init__(self, remote_channel=None, **kw):
            if remote_channel is not None:
                self.remote_channel = remote_channel
            self.next_outgoing_id, self.incoming_window, self.outgoing_window = 0, 10, 10

    @dataclasses.dataclass
    class AttachBody:
        name: str
        handle: int
        role: bool
        NAME = "attach"

    @dataclasses.dataclass
    class SenderAttach(AttachBody):
        initial_delivery_count: int = 0

    @dataclasses.dataclass
    class FlowBody:
        handle: int | None = None
        delivery_count: int | None = None
        link_credit: int | None = None
        available: int | None = None
        next_incoming_id: int | None = 0
        incoming_window: int = 10
        next_outgoing_id: int = 0
        outgoing_window: int = 10
        NAME = "flow"

    @dataclasses.dataclass
    class TransferBody:
        handle: int
        delivery_id: int | None = None
        more: bool | None = None
        NAME = "transfer"

    @dataclasses.dataclass
    class Bare:
        body: object

    o = FlowOracle()
    feed = [("out", BeginBody()), ("in", BeginBody(remote_channel=0)), ("out", AttachBody("x", 0, True)),
            ("in", SenderAttach("x", 9, False, 0)), ("out", FlowBody(handle=0, delivery_count=0, link_credit=1)),
            ("in", FlowBody()), ("in", FlowBody(handle=9, delivery_count=0, link_credit=1)),
            ("in", TransferBody(9, 0))]
    assert o.observe_all((d, Bare(b)) for d, b in feed) == []
    assert o.link(0, 0).messages == 1
    assert [v.requirement_id for v in o.observe("in", Bare(TransferBody(9, 1)))] == \
        ["2.6.7/no-send-without-credit"]
    assert [v.requirement_id for v in o.observe("in", Bare(TransferBody(9)))] == \
        ["2.7.5/delivery-id-first", "2.6.7/no-send-without-credit"]

    @dataclasses.dataclass
    class BareTransfer:                   # no delivery-id attribute at all
        handle: int
        more: bool | None = None
        NAME = "transfer"

    assert [v.requirement_id for v in o.observe("in", Bare(BareTransfer(9)))] == \
        ["2.7.5/delivery-id-first", "2.6.7/no-send-without-credit"]

    @dataclasses.dataclass
    class EchoFlow(FlowBody):
        echo: bool = True

    assert o.observe("out", Bare(EchoFlow(next_incoming_id=3))) == [] and o.observe("in", Bare(FlowBody())) == []
    o.observe("out", Bare(AttachBody("y", 1, True)))
    assert [v.requirement_id for v in o.observe("in", Bare(AttachBody("y", 8, False)))] == \
        ["2.7.3/initial-delivery-count-sender"]


def test_a_limit_counted_from_an_initial_count_the_sender_never_gave_judges_nothing():
    """2.7.3: initial-delivery-count "MUST NOT be null if role is sender". A broker sender whose attach leaves it
    out is flagged; a flow our receiver sent without delivery-count (2.7.4: counted from the sender's initial
    value) then has no base: it neither allows, limits nor proves anything, and the oracle does not fail on
    the broker's flows and transfers. Our later flow with delivery-count judges them as usual."""
    s = Script()
    s.out(Begin(next_outgoing_id=0, incoming_window=100, outgoing_window=100))
    s.inn(Begin(remote_channel=0, next_outgoing_id=0, incoming_window=100, outgoing_window=100))
    s.out(Attach(name="r", handle=0, role=True, source=Source(address="q"), target=Target()))
    assert s.ids(Attach(name="r", handle=3, role=False, source=Source(address="q"), target=Target())) == \
        ["2.7.3/initial-delivery-count-sender"]
    s.out(s.our_flow(handle=0, link_credit=5))                 # no delivery-count: counted from the unknown
    s.out(s.our_flow(handle=0, delivery_count=10, link_credit=1))
    assert s.ids(s.broker_flow(handle=3, delivery_count=10, link_credit=1)) == []
    assert s.ids(s.transfer(3)) == []                            # delivery-count 10, limit 11
    assert s.ids(s.transfer(3)) == ["2.6.7/no-send-without-credit"]
    assert s.oracle.link(0, 0).link_credit == -1
    s.out(s.our_flow(handle=0, link_credit=7))                 # again without: flagged, and no limit
    s.out(s.our_flow(handle=0, delivery_count=12, link_credit=1))
    assert s.ids(s.broker_flow(handle=3, delivery_count=12, link_credit=5)) == ["2.6.7/credit-formula"]
    assert s.ids(s.transfer(3)) == []                            # delivery-count 12, limit 13
    assert s.ids(s.transfer(3)) == ["2.6.7/no-send-without-credit"]


def test_a_limit_counted_from_an_initial_count_the_sender_never_gave_is_dropped_when_its_attach_comes():
    """The same, with our flow before the broker's attach: the limit waits for the initial value (2.7.4), the
    attach does not give it, so the limit is dropped and a sender flow that does not match our later limit
    is judged against that limit alone."""
    s = Script()
    s.out(Begin(next_outgoing_id=0, incoming_window=100, outgoing_window=100))
    s.inn(Begin(remote_channel=0, next_outgoing_id=0, incoming_window=100, outgoing_window=100))
    s.out(Attach(name="r", handle=0, role=True, source=Source(address="q"), target=Target()))
    s.out(s.our_flow(handle=0, link_credit=5))
    assert s.ids(Attach(name="r", handle=3, role=False, source=Source(address="q"), target=Target())) == \
        ["2.7.3/initial-delivery-count-sender"]
    s.out(s.our_flow(handle=0, delivery_count=10, link_credit=1))
    assert s.ids(s.broker_flow(handle=3, delivery_count=10, link_credit=5)) == ["2.6.7/credit-formula"]
    assert s.ids(s.transfer(3)) == []
    assert s.ids(s.transfer(3)) == ["2.6.7/no-send-without-credit"]
