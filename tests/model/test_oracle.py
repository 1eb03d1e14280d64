"""The oracle's rules, one test per sentence it can report, plus the in-flight rule, channel/handle mapping,
queries and bad arguments. Sequence numbers start near 2^32 so most tests also cross the wrap."""

import ast
import dataclasses
import tomllib
from pathlib import Path

import pytest
from flowsim import receiver_link, sender_link

from conformance.model import RULES, FlowOracle, emitted_requirement_ids
from conformance.model.oracle import LINK_ONLY_FIELDS
from conformance.wire import Attach, Begin, Detach, End, Flow, Frame, Source, Target, Transfer

CATALOGUE = Path(__file__).resolve().parents[2] / "conformance" / "catalogue" / "requirements.toml"
ORACLE = Path(__file__).resolve().parents[2] / "conformance" / "model" / "oracle.py"
INITIAL = 0xFFFFFFFB       # RabbitMQ 4's initial delivery-count


def test_every_id_the_oracle_can_emit_is_in_the_catalogue_with_its_verbatim_sentence():
    rows = {r["id"]: r for r in tomllib.loads(CATALOGUE.read_text("utf-8"))["requirement"]}
    assert emitted_requirement_ids() == {
        "2.6.7/no-send-without-credit", "2.5.6/remote-incoming-window-decrement", "2.7.4/sender-delivery-count-set",
        "2.6.7/credit-decrease-on-send", "2.6.7/credit-formula", "2.6.7/drain-advance",
        "2.7.4/link-fields-need-handle", "2.7.4/echo-no-loop", "2.7.4/next-incoming-id-set",
        "2.7.4/receiver-delivery-count", "2.7.3/initial-delivery-count-sender", "2.7.5/delivery-id-first"}
    assert emitted_requirement_ids() <= set(rows)
    s = receiver_link(INITIAL)
    s.out(s.our_flow(handle=0, delivery_count=INITIAL, link_credit=1))
    s.inn(s.transfer(3))
    [v] = s.inn(s.transfer(3))
    assert (v.requirement_id, v.section, v.level, v.sentence) == (
        "2.6.7/no-send-without-credit", "2.6.7", "MUST", rows["2.6.7/no-send-without-credit"]["text"])
    assert v.frame_index == 6 and v.direction == "in"
    with pytest.raises(dataclasses.FrozenInstanceError):
        v.detail = "x"


def _flagged_rules() -> set[str]:
    """The rule names oracle.py passes to `_flag` (a literal, or a name bound to literals in the function)."""
    found = set()
    for func in ast.walk(ast.parse(ORACLE.read_text("utf-8"))):
        if not isinstance(func, ast.FunctionDef) or ("__mutmut_" in func.name and "__mutmut_orig" not in func.name):
            continue                                 # (under `./dev mutate`, the mutants' copies are not the code)
        bound = {t.id: n.value for n in ast.walk(func) if isinstance(n, ast.Assign) for t in n.targets
                 if isinstance(t, ast.Name)}
        for call in ast.walk(func):
            if isinstance(call, ast.Call) and getattr(call.func, "attr", None) == "_flag":
                rule = call.args[1]
                rule = bound.get(rule.id, rule) if isinstance(rule, ast.Name) else rule
                found |= {c.value for c in ast.walk(rule) if isinstance(c, ast.Constant) and isinstance(c.value, str)}
    return found


def test_every_rule_is_reported_somewhere_and_only_known_rules_are():
    """RULES (what emitted_requirement_ids answers) names exactly the rules the oracle's code can flag: a rule
    whose check was removed, or a check flagging a rule RULES lacks, fails here."""
    assert _flagged_rules() == set(RULES)


# -- link credit (2.6.7) ----------------------------------------------------------------------------------

def test_transfers_beyond_credit_are_flagged_across_the_wrap():
    s = receiver_link(INITIAL)
    assert s.oracle.broker_may_send(0, 0) == 0
    s.out(s.our_flow(handle=0, delivery_count=INITIAL, link_credit=6))
    for left in range(6, 0, -1):
        assert s.oracle.broker_may_send(0, 0) == left
        assert s.ids(s.transfer(3)) == []
    view = s.oracle.link(0, 0)
    assert (view.delivery_count, view.link_credit, view.messages) == (1, 0, 6)      # wrapped past 0xffffffff
    assert s.oracle.broker_may_send(0, 0) == 0
    assert s.ids(s.transfer(3)) == ["2.6.7/no-send-without-credit"]


def test_unknown_delivery_count_means_the_initial_one_of_the_senders_attach():
    """Our flow is pipelined before the broker's attach, without delivery-count (2.6.7/unknown-delivery-count)."""
    pipelined = Flow(next_incoming_id=7, incoming_window=100, next_outgoing_id=0, outgoing_window=100, handle=0,
                     link_credit=2)
    s = receiver_link(0xFFFFFFFE, pipelined_flow=pipelined)
    assert s.oracle.link(0, 0).delivery_limit == 0
    assert s.ids(s.transfer(3)) == [] and s.ids(s.transfer(3)) == []
    assert s.ids(s.transfer(3)) == ["2.6.7/no-send-without-credit"]


def test_a_multi_frame_delivery_is_one_message_but_every_frame_uses_the_session_window():
    s = receiver_link(INITIAL, our_window=3)
    s.out(s.our_flow(handle=0, delivery_count=INITIAL, link_credit=1))
    assert s.ids(s.transfer(3, more=True)) == []
    assert s.oracle.link(0, 0).in_delivery
    assert s.ids(s.transfer(3, first=False, more=True)) == []
    assert s.ids(s.transfer(3, first=False)) == []
    assert s.oracle.link(0, 0).messages == 1 and s.oracle.broker_may_send(0, 0) == 0
    assert s.oracle.session(0).next_incoming_id == 10
    assert s.ids(s.transfer(3)) == ["2.5.6/remote-incoming-window-decrement", "2.6.7/no-send-without-credit"]


def test_a_continuation_with_another_delivery_id_and_a_first_transfer_without_one_are_flagged():
    s = receiver_link(INITIAL)
    s.out(s.our_flow(handle=0, delivery_count=INITIAL, link_credit=5))
    s.inn(Transfer(handle=3, delivery_id=4, more=True))
    assert s.ids(Transfer(handle=3, delivery_id=5)) == ["2.7.5/delivery-id-first"]
    assert s.ids(Transfer(handle=3)) == ["2.7.5/delivery-id-first"]


def test_an_aborted_delivery_counts_as_sent_and_a_sender_not_counting_it_is_not_blamed():
    s = receiver_link(INITIAL)
    s.out(s.our_flow(handle=0, delivery_count=INITIAL, link_credit=2))
    s.inn(s.transfer(3, more=True))
    assert s.ids(s.transfer(3, first=False, more=True, aborted=True)) == []    # aborted wins over more
    view = s.oracle.link(0, 0)
    assert (view.messages, view.link_credit, view.in_delivery) == (1, 1, False)
    # the broker did not count it: excused, and its count is adopted (one more message allowed)
    assert s.ids(s.broker_flow(handle=3, delivery_count=INITIAL, link_credit=2)) == []
    assert s.oracle.broker_may_send(0, 0) == 2


def test_a_sender_flow_must_carry_its_current_delivery_count():
    s = receiver_link(INITIAL)
    s.out(s.our_flow(handle=0, delivery_count=INITIAL, link_credit=4))
    s.inn(s.transfer(3))
    s.inn(s.transfer(3))
    assert s.ids(s.broker_flow(handle=3, link_credit=2)) == ["2.7.4/sender-delivery-count-set"]
    assert s.ids(s.broker_flow(handle=3, delivery_count=INITIAL + 1, link_credit=3)) == \
        ["2.7.4/sender-delivery-count-set"]
    assert s.ids(s.broker_flow(handle=3, delivery_count=INITIAL + 2, link_credit=2)) == []


def test_a_sender_flow_mid_delivery_may_show_the_count_before_or_after_the_message():
    s = receiver_link(INITIAL)
    s.out(s.our_flow(handle=0, delivery_count=INITIAL, link_credit=4))
    s.inn(s.transfer(3, more=True))
    assert s.ids(s.broker_flow(handle=3, delivery_count=INITIAL, link_credit=4)) == []
    assert s.ids(s.broker_flow(handle=3, delivery_count=INITIAL + 1, link_credit=3)) == []


def test_credit_not_decreased_by_transfers_and_a_foreign_limit_are_told_apart():
    s = receiver_link(INITIAL)
    s.out(s.our_flow(handle=0, delivery_count=INITIAL, link_credit=5))
    s.inn(s.transfer(3))
    s.inn(s.transfer(3))
    assert s.ids(s.broker_flow(handle=3, delivery_count=(INITIAL + 2) & 0xFFFFFFFF, link_credit=5)) == \
        ["2.6.7/credit-decrease-on-send"]
    assert s.ids(s.broker_flow(handle=3, delivery_count=(INITIAL + 2) & 0xFFFFFFFF, link_credit=9)) == \
        ["2.6.7/credit-formula"]
    assert s.ids(s.broker_flow(handle=3, delivery_count=(INITIAL + 2) & 0xFFFFFFFF, link_credit=3)) == []
    assert s.ids(s.broker_flow(handle=3, delivery_count=(INITIAL + 2) & 0xFFFFFFFF, link_credit=0)) == \
        ["2.6.7/credit-formula"]                       # credit 0 short of the limit, no drain asked


def test_advancing_delivery_count_past_every_limit_is_flagged():
    s = receiver_link(INITIAL)
    s.out(s.our_flow(handle=0, delivery_count=INITIAL, link_credit=2))
    assert s.ids(s.broker_flow(handle=3, delivery_count=(INITIAL + 3) & 0xFFFFFFFF, link_credit=0)) == \
        ["2.6.7/credit-formula"]



def test_a_sender_flow_one_short_of_the_delivery_limit_is_flagged():
    """link-credit 0 while the delivery-count is exactly one below the limit (the boundary of the rule)."""
    for sent, flagged in ((1, ["2.6.7/credit-formula"]), (2, [])):
        s = receiver_link(INITIAL)
        s.out(s.our_flow(handle=0, delivery_count=INITIAL, link_credit=2))
        for _ in range(sent):
            s.inn(s.transfer(3))                     # the first transfer proves the broker saw our grant
        assert s.ids(s.broker_flow(handle=3, delivery_count=(INITIAL + sent) & 0xFFFFFFFF, link_credit=0)) \
            == flagged, sent
    s = _drained()                                   # limit INITIAL + 5, two sent: a drain answer one short
    assert s.ids(s.broker_flow(handle=3, delivery_count=(INITIAL + 4) & 0xFFFFFFFF, link_credit=0, drain=True)) \
        == ["2.6.7/drain-advance"]

# -- drain ------------------------------------------------------------------------------------------------

def _drained(available=0):
    s = receiver_link(INITIAL)
    s.out(s.our_flow(handle=0, delivery_count=INITIAL, link_credit=5, drain=True))
    s.inn(s.transfer(3))
    s.inn(s.transfer(3))
    return s


def test_drain_answered_by_advancing_delivery_count_to_the_limit_is_clean():
    s = _drained()
    reply = s.broker_flow(handle=3, delivery_count=(INITIAL + 5) & 0xFFFFFFFF, link_credit=0, available=0,
                          drain=True)
    assert s.ids(reply) == []
    assert s.oracle.link(0, 0).delivery_count == (INITIAL + 5) & 0xFFFFFFFF
    assert s.oracle.broker_may_send(0, 0) == 0
    assert s.ids(s.transfer(3)) == ["2.6.7/no-send-without-credit"]


def test_drain_answered_without_advancing_is_flagged():
    s = _drained()
    assert s.ids(s.broker_flow(handle=3, delivery_count=(INITIAL + 2) & 0xFFFFFFFF, link_credit=0, drain=True)) \
        == ["2.6.7/drain-advance"]
    s = _drained()
    assert s.ids(s.broker_flow(handle=3, delivery_count=(INITIAL + 2) & 0xFFFFFFFF, link_credit=3, available=0,
                               drain=True)) == ["2.6.7/drain-advance"]


def test_a_flow_while_draining_with_messages_maybe_left_is_not_judged_as_the_drain_answer():
    s = _drained()
    assert s.ids(s.broker_flow(handle=3, delivery_count=(INITIAL + 2) & 0xFFFFFFFF, link_credit=3, available=4,
                               drain=True)) == []
    assert s.ids(s.broker_flow(handle=3, delivery_count=(INITIAL + 2) & 0xFFFFFFFF, link_credit=3,
                               drain=True)) == []


# -- the in-flight rule ------------------------------------------------------------------------------------

def test_transfers_in_flight_when_we_stop_are_legal_until_the_broker_shows_it_saw_the_stop():
    s = receiver_link(INITIAL)
    s.out(s.our_flow(handle=0, delivery_count=INITIAL, link_credit=10))
    s.out(s.our_flow(handle=0, delivery_count=INITIAL, link_credit=0))         # stop (2.6.10)
    assert s.oracle.broker_may_send(0, 0) == 0
    assert s.oracle.broker_may_send(0, 0, in_flight=True) == 10
    for _ in range(3):
        assert s.ids(s.transfer(3)) == []
    assert s.oracle.link(0, 0).tolerated_credit == 7
    # its flow shows link-credit 0 at delivery-count +3: only the stop explains that
    assert s.ids(s.broker_flow(handle=3, delivery_count=(INITIAL + 3) & 0xFFFFFFFF, link_credit=0)) == []
    assert s.oracle.broker_may_send(0, 0, in_flight=True) == 0
    assert s.ids(s.transfer(3)) == ["2.6.7/no-send-without-credit"]


def test_a_spontaneous_broker_flow_from_before_our_stop_proves_nothing():
    s = receiver_link(INITIAL)
    s.out(s.our_flow(handle=0, delivery_count=INITIAL, link_credit=10))
    s.inn(s.transfer(3))
    s.out(s.our_flow(handle=0, delivery_count=(INITIAL + 1) & 0xFFFFFFFF, link_credit=0))
    assert s.ids(s.broker_flow(handle=3, delivery_count=(INITIAL + 1) & 0xFFFFFFFF, link_credit=9)) == []
    assert s.ids(s.transfer(3)) == []                  # still legal: it may not have seen the stop yet


def test_strict_mode_judges_against_our_latest_flow_at_once():
    s = receiver_link(INITIAL, in_flight="strict")
    s.out(s.our_flow(handle=0, delivery_count=INITIAL, link_credit=10))
    s.out(s.our_flow(handle=0, delivery_count=INITIAL, link_credit=0))
    assert s.ids(s.transfer(3)) == ["2.6.7/no-send-without-credit"]


def test_a_stale_delivery_count_in_our_flow_gives_the_limit_the_broker_computes():
    s = receiver_link(INITIAL)
    s.out(s.our_flow(handle=0, delivery_count=INITIAL, link_credit=3))
    for _ in range(3):
        s.inn(s.transfer(3))
    s.out(s.our_flow(handle=0, delivery_count=INITIAL, link_credit=4))          # stale: limit is +4
    assert s.oracle.broker_may_send(0, 0) == 1
    assert s.ids(s.transfer(3)) == []
    assert s.ids(s.transfer(3)) == ["2.6.7/no-send-without-credit"]


def test_our_window_lowered_in_flight_is_tolerated_until_proved():
    s = receiver_link(INITIAL, our_window=10)
    s.out(s.our_flow(handle=0, delivery_count=INITIAL, link_credit=100))
    s.out(s.our_flow(incoming_window=1))
    assert s.oracle.broker_may_send(0, 0) == 1 and s.oracle.broker_may_send(0, 0, in_flight=True) == 10
    for _ in range(10):
        assert s.ids(s.transfer(3)) == []
    assert s.ids(s.transfer(3)) == ["2.5.6/remote-incoming-window-decrement"]


# -- session windows (2.5.6) ------------------------------------------------------------------------------

def test_transfers_beyond_our_incoming_window_are_flagged_and_a_new_window_counts_from_next_incoming_id():
    s = receiver_link(INITIAL, our_window=2, broker_next_outgoing=0xFFFFFFFF)
    s.out(s.our_flow(handle=0, delivery_count=INITIAL, link_credit=10))
    assert s.oracle.broker_may_send(0, 0) == 2
    assert s.ids(s.transfer(3)) == [] and s.ids(s.transfer(3)) == []
    assert s.ids(s.transfer(3)) == ["2.5.6/remote-incoming-window-decrement"]
    s.out(s.our_flow(incoming_window=2))               # next-incoming-id 2 (wrapped) + 2
    assert s.oracle.broker_may_send(0, 0) == 2


def test_a_flow_without_next_incoming_id_counts_the_window_from_the_partners_initial_id():
    s = Script_with_early_flow()
    for _ in range(3):
        assert s.ids(s.transfer(3)) == []
    assert s.ids(s.transfer(3)) == ["2.5.6/remote-incoming-window-decrement"]


def Script_with_early_flow():
    from flowsim import Script
    s = Script(judge="both")
    s.out(Begin(next_outgoing_id=0, incoming_window=1, outgoing_window=100))
    # before the broker's begin: next-incoming-id MUST NOT be set, and is not
    assert s.ids(Flow(incoming_window=3, next_outgoing_id=0, outgoing_window=100), direction="out") == []
    s.inn(Begin(remote_channel=0, next_outgoing_id=0xFFFFFFFE, incoming_window=400, outgoing_window=400))
    s.out(Attach(name="r", handle=0, role=True, source=Source(address="q"), target=Target()))
    s.inn(Attach(name="r", handle=3, role=False, source=Source(), target=Target(), initial_delivery_count=0))
    s.out(Flow(next_incoming_id=0xFFFFFFFE, incoming_window=3, next_outgoing_id=0, outgoing_window=100,
               handle=0, delivery_count=0, link_credit=100))
    return s


def test_session_state_follows_2_5_6():
    s = receiver_link(INITIAL, our_window=5, broker_next_outgoing=0xFFFFFFFF)
    s.out(s.our_flow(handle=0, delivery_count=INITIAL, link_credit=10))
    s.inn(s.transfer(3))
    ours = s.oracle.session(0)
    assert (ours.next_incoming_id, ours.remote_outgoing_window, ours.remote_incoming_window) == (0, 399, 400)
    theirs = s.oracle.session(0, "in")
    assert (theirs.next_outgoing_id, theirs.remote_incoming_window) == (0, 4)


# -- flow fields (2.7.4) ----------------------------------------------------------------------------------

@pytest.mark.parametrize("name,value", [(n, 1 if n != "drain" else True) for n, _ in LINK_ONLY_FIELDS
                                        if n != "properties"] + [("properties", {"k": 1})])
def test_link_fields_on_a_flow_without_handle_are_flagged(name, value):
    s = receiver_link(INITIAL)
    assert s.ids(s.broker_flow(**{name: value})) == ["2.7.4/link-fields-need-handle"]


def test_drain_false_on_a_session_flow_is_the_default_and_fine():
    s = receiver_link(INITIAL)
    assert s.ids(s.broker_flow(drain=False)) == []


def test_answering_an_echo_with_echo_is_flagged_but_asking_spontaneously_is_not():
    s = receiver_link(INITIAL)
    assert s.ids(s.broker_flow(echo=True)) == []
    s.out(s.our_flow(echo=True))
    [v] = s.inn(s.broker_flow(echo=True))
    assert (v.requirement_id, v.level) == ("2.7.4/echo-no-loop", "SHOULD")
    assert s.ids(s.broker_flow(echo=True)) == []       # our request was answered already


def test_next_incoming_id_must_be_set_after_our_begin_and_never_ahead_of_what_we_sent():
    s = receiver_link(INITIAL)
    assert s.ids(s.broker_flow(next_incoming_id=None)) == ["2.7.4/next-incoming-id-set"]
    assert s.ids(s.broker_flow(next_incoming_id=1)) == ["2.7.4/next-incoming-id-set"]
    assert s.ids(s.broker_flow(next_incoming_id=0)) == []


def test_next_incoming_id_must_not_be_set_before_the_broker_has_our_begin():
    from flowsim import Script
    s = Script()
    s.inn(Begin(next_outgoing_id=0, incoming_window=10, outgoing_window=10))
    assert s.ids(Flow(next_incoming_id=0, incoming_window=10, next_outgoing_id=0, outgoing_window=10)) == \
        ["2.7.4/next-incoming-id-set"]


# -- the broker as receiver: our peer sends ---------------------------------------------------------------

def test_peer_may_send_follows_the_brokers_credit_and_window():
    s = sender_link(0xFFFFFFFE, broker_window=3)
    assert s.oracle.peer_may_send(0, 1) == 0
    s.inn(s.broker_flow(handle=5, delivery_count=0xFFFFFFFE, link_credit=5))
    assert s.oracle.peer_may_send(0, 1) == 3                 # the session window is the tighter one
    for _ in range(3):
        s.out(s.transfer(1, direction="out"))
    assert s.oracle.peer_may_send(0, 1) == 0
    s.inn(s.broker_flow(handle=5, delivery_count=1, link_credit=5))
    assert s.oracle.peer_may_send(0, 1) == 3                 # window: 0xfffffff3 + 3 - 0xfffffff3
    assert s.oracle.link(0, 1).sender == "out"


def test_the_brokers_receiver_flow_must_carry_a_delivery_count_it_can_know():
    s = sender_link(0xFFFFFFFE)
    assert s.ids(s.broker_flow(handle=5, link_credit=5)) == ["2.7.4/receiver-delivery-count"]
    assert s.ids(s.broker_flow(handle=5, delivery_count=0, link_credit=5)) == ["2.7.4/receiver-delivery-count"]
    s.out(s.transfer(1, direction="out"))
    s.out(s.transfer(1, direction="out"))
    assert s.ids(s.broker_flow(handle=5, delivery_count=0, link_credit=5)) == []
    assert s.ids(s.broker_flow(handle=5, delivery_count=0xFFFFFFFF, link_credit=5)) == \
        ["2.7.4/receiver-delivery-count"]                    # went back


def test_judging_our_own_peer_reports_direction_out():
    s = sender_link(0xFFFFFFFE, judge="both")
    [v] = s.out(s.transfer(1, direction="out"))
    assert (v.requirement_id, v.direction) == ("2.6.7/no-send-without-credit", "out")
    s = sender_link(0xFFFFFFFE, judge="in")
    assert s.out(s.transfer(1, direction="out")) == []


def test_a_senders_attach_without_initial_delivery_count_is_flagged():
    from flowsim import Script
    s = Script()
    s.out(Begin(next_outgoing_id=0, incoming_window=10, outgoing_window=10))
    s.inn(Begin(remote_channel=0, next_outgoing_id=0, incoming_window=10, outgoing_window=10))
    s.out(Attach(name="r", handle=0, role=True))
    assert s.ids(Attach(name="r", handle=0, role=False)) == ["2.7.3/initial-delivery-count-sender"]


# -- mapping, lifecycle, queries, bad input ----------------------------------------------------------------

def test_channels_and_handles_are_mapped_per_direction_and_reused_after_detach():
    from flowsim import Script
    s = Script()
    s.out(Begin(next_outgoing_id=0, incoming_window=100, outgoing_window=100), channel=1)
    s.inn(Begin(remote_channel=1, next_outgoing_id=50, incoming_window=100, outgoing_window=100), channel=5)
    for name, ours, theirs in (("a", 0, 7), ("b", 1, 0)):
        s.out(Attach(name=name, handle=ours, role=True), channel=1)
        s.inn(Attach(name=name, handle=theirs, role=False, initial_delivery_count=INITIAL), channel=5)
    s.out(s.our_flow(channel=1, handle=0, delivery_count=INITIAL, link_credit=1), channel=1)
    s.out(s.our_flow(channel=1, handle=1, delivery_count=INITIAL, link_credit=2), channel=1)
    assert (s.oracle.broker_may_send(1, 0), s.oracle.broker_may_send(1, 1)) == (1, 2)
    assert s.ids(Transfer(handle=0, delivery_id=0), channel=5) == []          # broker handle 0 is link "b"
    assert (s.oracle.broker_may_send(1, 0), s.oracle.broker_may_send(1, 1)) == (1, 1)
    view = s.oracle.link(1, 0)
    assert (view.name, view.our_handle, view.broker_handle, view.sender) == ("a", 0, 7, "in")
    # detach "a" both ways; attach "c" reusing both handles: fresh state
    s.out(Detach(handle=0, closed=True), channel=1)
    s.inn(Detach(handle=7, closed=True), channel=5)
    with pytest.raises(LookupError, match="no attached link with our handle 0 on our channel 1"):
        s.oracle.broker_may_send(1, 0)
    s.out(Attach(name="c", handle=0, role=True), channel=1)
    s.inn(Attach(name="c", handle=7, role=False, initial_delivery_count=3), channel=5)
    assert s.oracle.link(1, 0).name == "c" and s.oracle.broker_may_send(1, 0) == 0
    assert s.ids(Transfer(handle=7, delivery_id=1), channel=5) == ["2.6.7/no-send-without-credit"]
    s.out(End(), channel=1)
    s.inn(End(), channel=5)
    with pytest.raises(LookupError):
        s.oracle.session(1)


@pytest.mark.parametrize("broker_answers", ["in order", "receiver first"])
def test_a_sender_and_a_receiver_sharing_a_name_are_two_links(broker_answers):
    """2.6.1: "Link names MUST uniquely identify the link amongst all links of the same direction between the
    two participating containers" -- a link is its name and its direction, so a sender and a receiver named
    alike (python-qpid-proton's Container names both links to one address so) are two links, whatever order
    the attaches come in; each side's credit and counts are its own link's."""
    from flowsim import Script
    s = Script("both")
    s.out(Begin(next_outgoing_id=0, incoming_window=100, outgoing_window=100))
    s.inn(Begin(remote_channel=0, next_outgoing_id=50, incoming_window=100, outgoing_window=100))
    s.out(Attach(name="q", handle=0, role=False, target=Target(address="q"), initial_delivery_count=10))
    s.out(Attach(name="q", handle=1, role=True, source=Source(address="q")))
    answers = [Attach(name="q", handle=4, role=True, target=Target(address="q")),
               Attach(name="q", handle=5, role=False, source=Source(address="q"), initial_delivery_count=INITIAL)]
    for body in (answers if broker_answers == "in order" else answers[::-1]):
        assert s.inn(body) == []
    assert s.inn(s.broker_flow(handle=4, delivery_count=10, link_credit=2)) == []      # credit for our sender
    assert s.out(s.our_flow(handle=1, delivery_count=INITIAL, link_credit=3)) == []   # credit for the broker's
    for _ in range(2):
        assert s.ids(s.transfer(0, "out"), direction="out") == []
    for _ in range(3):
        assert s.ids(s.transfer(5)) == []
    assert s.ids(s.transfer(5)) == ["2.6.7/no-send-without-credit"]                  # the broker's 4th: beyond 3
    assert s.ids(s.transfer(0, "out"), direction="out") == ["2.6.7/no-send-without-credit"]   # our 3rd: beyond 2
    ours, theirs = s.oracle.link(0, 0), s.oracle.link(0, 1)
    assert (ours.name, ours.sender, ours.broker_handle, ours.messages) == ("q", "out", 4, 3)
    assert (theirs.name, theirs.sender, theirs.broker_handle, theirs.messages) == ("q", "in", 5, 4)
    # detaching one leaves the other attached
    s.out(Detach(handle=0, closed=True))
    s.inn(Detach(handle=4, closed=True))
    assert s.oracle.link(0, 1).broker_handle == 5


def test_heartbeats_and_unknown_frames_are_counted_but_never_judged():
    o = FlowOracle()
    assert o.observe("in", Frame(0, None)) == []
    assert o.observe("in", Transfer(handle=0)) == []         # no session: nothing to judge, no crash
    assert o.frame_index == 1


def test_bad_arguments_are_named():
    with pytest.raises(ValueError, match="judge must be one of"):
        FlowOracle("broker")
    with pytest.raises(ValueError, match="in_flight must be one of"):
        FlowOracle(in_flight="maybe")
    with pytest.raises(ValueError, match="direction must be 'in' or 'out'"):
        FlowOracle().observe("sideways", Frame(0, None))
    s = sender_link()
    with pytest.raises(LookupError, match="not a link the broker sends on"):
        s.oracle.broker_may_send(0, 1)


def test_stand_in_frames_with_the_same_attribute_names_work():
    """The oracle reads attribute names only (duck typing)."""

    @dataclasses.dataclass
    class begin:
        remote_channel: int | None = None
        next_outgoing_id: int = 0
        incoming_window: int = 0
        outgoing_window: int = 0

    @dataclasses.dataclass
    class attach:
        name: str = ""
        handle: int = 0
        role: bool = False
        initial_delivery_count: int | None = None

    @dataclasses.dataclass
    class flow:
        next_incoming_id: int | None = None
        incoming_window: int = 0
        next_outgoing_id: int = 0
        outgoing_window: int = 0
        handle: int | None = None
        delivery_count: int | None = None
        link_credit: int | None = None
        available: int | None = None
        drain: bool | None = None
        echo: bool | None = None
        properties: dict | None = None

    @dataclasses.dataclass
    class transfer:
        handle: int
        delivery_id: int | None = None
        more: bool | None = None
        aborted: bool | None = None

    @dataclasses.dataclass
    class frame:
        channel: int
        body: object

    o = FlowOracle()
    feed = [("out", begin(None, 0, 10, 10)), ("in", begin(0, 0, 10, 10)), ("out", attach("x", 0, True)),
            ("in", attach("x", 9, False, 0xFFFFFFFF)),
            ("out", flow(0, 10, 0, 10, handle=0, delivery_count=0xFFFFFFFF, link_credit=1)),
            ("in", transfer(9, 0))]
    assert o.observe_all((d, frame(0, b)) for d, b in feed) == []
    assert [v.requirement_id for v in o.observe("in", frame(0, transfer(9, 1)))] == ["2.6.7/no-send-without-credit"]
    assert len(o.violations) == 1


# -- queries and lifecycle (each field of the link view; handles and channels freed and reused) --------------

def test_the_link_view_before_and_after_credit():
    from conformance.model.oracle import LinkView
    s = receiver_link(INITIAL)
    assert s.oracle.link(0, 0) == LinkView("r", "in", 0, 3, INITIAL, INITIAL, 0, 0, 0, False, 0, False)
    s.out(s.our_flow(handle=0, delivery_count=INITIAL, link_credit=3, drain=True))
    s.inn(s.transfer(3, more=True))
    view = s.oracle.link(0, 0)
    assert (view.delivery_limit, view.link_credit, view.drain, view.messages, view.in_delivery) == \
        ((INITIAL + 3) & 0xFFFFFFFF, 2, True, 1, True)     # a delivery counts at its first frame
    s.inn(s.transfer(3, first=False))
    view = s.oracle.link(0, 0)
    assert (view.delivery_count, view.link_credit, view.messages, view.in_delivery) == \
        ((INITIAL + 1) & 0xFFFFFFFF, 2, 1, False)
    s.inn(s.broker_flow(handle=3, delivery_count=(INITIAL + 1) & 0xFFFFFFFF, link_credit=2, available=7))
    assert s.oracle.link(0, 0).available == 7
    with pytest.raises(LookupError, match="no attached link with our handle 9 on our channel 0"):
        s.oracle.link(0, 9)
    with pytest.raises(LookupError):
        s.oracle.peer_may_send(0, 0)                 # a receiving link: the broker sends on it


def test_a_sender_link_before_any_credit_may_send_nothing():
    s = sender_link()
    assert s.oracle.peer_may_send(0, 1) == 0
    view = s.oracle.link(0, 1)
    assert (view.sender, view.delivery_count, view.delivery_limit, view.link_credit) == ("out", 0xFFFFFFFE,
                                                                                          0xFFFFFFFE, 0)
    s.inn(s.broker_flow(handle=5, delivery_count=0xFFFFFFFE, link_credit=2))
    assert s.oracle.peer_may_send(0, 1) == 2


def test_detach_frees_the_handle_and_end_frees_the_channel():
    s = receiver_link(INITIAL)
    s.out(Detach(handle=0, closed=True))
    with pytest.raises(LookupError):
        s.oracle.link(0, 0)                          # our handle is free at once
    s.inn(Detach(handle=3, closed=True))
    s.out(Attach(name="r2", handle=0, role=True, source=Source(address="q"), target=Target()))
    s.inn(Attach(name="r2", handle=3, role=False, source=Source(address="q"), target=Target(),
                 initial_delivery_count=5))
    assert s.oracle.link(0, 0).name == "r2" and s.oracle.link(0, 0).delivery_count == 5
    s.out(End())
    s.inn(End())
    with pytest.raises(LookupError):
        s.oracle.session(0)


def test_violations_accumulate_over_frames():
    s = receiver_link(INITIAL)
    s.out(s.our_flow(handle=0, delivery_count=INITIAL, link_credit=0))
    s.inn(s.transfer(3))
    s.inn(s.transfer(3))
    assert [v.requirement_id for v in s.oracle.violations] == ["2.6.7/no-send-without-credit"] * 2
