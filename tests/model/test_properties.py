"""Properties of the flow-control model, with frames in flight both ways:
(a) the delivery-limit is invariant: sender and receiver views converge once every frame has arrived, and a
    correct broker is never blamed under any interleaving (the in-flight rule makes no false fails);
(b) wrap behaves like no wrap: shifting every sequence number so the run crosses 2^32 changes no verdict."""

import random

import pytest
from flowsim import Faults, Simulation
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conformance.model import LinkEndpoint
from conformance.wire import serial_diff

MASK = 0xFFFFFFFF
# at least 300 examples; the "deep" hypothesis profile (tests/conftest.py) raises it
SETTINGS = settings(settings.default, max_examples=max(300, settings.default.max_examples), deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])

actions = st.lists(st.one_of(
    st.tuples(st.just("grant"), st.integers(0, 12), st.booleans(), st.integers(0, 12)),
    st.tuples(st.just("to_broker")),
    st.tuples(st.just("to_peer")),
    st.tuples(st.just("tick"), st.integers(1, 3)),
    st.tuples(st.just("broker_flow")),
    st.tuples(st.just("messages"), st.integers(0, 5)),
), min_size=10, max_size=150)

faults = st.builds(Faults, st.booleans(), st.booleans(), st.booleans(), st.booleans())


# -- (a) endpoints alone ----------------------------------------------------------------------------------

endpoint_steps = st.lists(st.one_of(st.tuples(st.just("flow"), st.integers(0, 20)),
                                    st.tuples(st.just("send"), st.just(0)),
                                    st.tuples(st.just("deliver_flow"), st.just(0)),
                                    st.tuples(st.just("deliver_transfer"), st.just(0))), max_size=80)


@SETTINGS
@given(endpoint_steps, st.integers(0, MASK))
def test_endpoint_delivery_limits_converge_under_any_interleaving(script, initial):
    sender, receiver = LinkEndpoint.sender(initial), LinkEndpoint.receiver()
    receiver.on_sender_attach(initial)
    to_sender, to_receiver = [], []
    for kind, value in script:
        if kind == "flow":
            receiver.set_credit(value)
            to_sender.append((receiver.delivery_count, value))
        elif kind == "send" and sender.may_send():
            sender.on_send()
            to_receiver.append(1)
        elif kind == "deliver_flow" and to_sender:
            sender.on_receiver_flow(*to_sender.pop(0), False)
        elif kind == "deliver_transfer" and to_receiver:
            to_receiver.pop(0)
            receiver.on_receive()
    for _ in to_receiver:
        receiver.on_receive()
    for flow in to_sender:
        sender.on_receiver_flow(*flow, False)
    assert sender.delivery_count == receiver.delivery_count
    assert sender.link_credit == receiver.link_credit
    if sender.link_credit >= 0:
        assert sender.delivery_limit == receiver.delivery_limit


# -- (a) a correct broker under any interleaving ----------------------------------------------------------

@SETTINGS
@given(actions, st.integers(0, MASK), st.integers(0, MASK), st.integers(0, MASK))
def test_a_correct_broker_is_never_blamed_and_views_converge(script, initial_dc, peer_id, broker_id):
    sim = Simulation(initial_dc, peer_id, broker_id)
    for action in script:
        sim.step(action)
        assert sim.found == [], sim.found
    sim.settle()
    assert sim.found == [], sim.found
    view = sim.oracle.link(0, 0)
    broker = sim.broker_link
    assert view.delivery_count == broker.delivery_count == sim.peer_link.delivery_count
    if broker.link_credit >= 0:
        # the receiver's latest delivery-limit is the one the broker applied, seen from both ends
        assert view.delivery_limit == broker.delivery_limit
        assert view.link_credit == broker.link_credit == sim.peer_link.link_credit
    assert sim.oracle.broker_may_send(0, 0) <= max(broker.link_credit, 0)
    ours = sim.oracle.session(0, "out")
    assert ours.next_incoming_id == sim.broker_session.next_outgoing_id == sim.peer_session.next_incoming_id


# -- (b) wrap behaves like no wrap ------------------------------------------------------------------------

def _verdicts(script, fault, dc, peer_id, broker_id):
    sim = Simulation(dc, peer_id, broker_id, fault)
    trace = []
    for action in script:
        sim.step(action)
        view = sim.oracle.link(0, 0)
        trace.append((sim.oracle.broker_may_send(0, 0), sim.oracle.broker_may_send(0, 0, in_flight=True),
                      view.link_credit, view.tolerated_credit, view.messages))
    sim.settle()
    verdicts = [(v.requirement_id, v.frame_index, v.direction) for v in sim.found]
    end = sim.oracle.link(0, 0)
    return verdicts, trace, serial_diff(dc, end.delivery_count), end.link_credit


@SETTINGS
@given(actions, faults, st.integers(1, 60), st.integers(0, 60), st.integers(0, 60))
def test_wrap_behaves_like_no_wrap(script, fault, before_wrap, peer_offset, broker_offset):
    plain = _verdicts(script, fault, 1000, 1000 + peer_offset, 1000 + broker_offset)
    shift = (1 << 32) - before_wrap - 1000                  # every run now starts just below 2^32
    wrapped = _verdicts(script, fault, (1000 + shift) & MASK, (1000 + peer_offset + shift) & MASK,
                        (1000 + broker_offset + shift) & MASK)
    assert plain == wrapped


BROKER_SENDER_RULES = {"2.6.7/no-send-without-credit", "2.5.6/remote-incoming-window-decrement",
                       "2.6.7/credit-formula", "2.6.7/credit-decrease-on-send", "2.6.7/drain-advance"}


@SETTINGS
@given(actions, faults)
def test_a_faulty_broker_is_blamed_only_under_broker_sender_rules(script, fault):
    sim = Simulation(0xFFFFFFF0, 0xFFFFFFFA, 0xFFFFFFFC, fault)
    for action in script:
        sim.step(action)
    sim.settle()
    assert {v.requirement_id for v in sim.found} <= BROKER_SENDER_RULES
    assert all(v.direction == "in" for v in sim.found)
    if fault == Faults():
        assert sim.found == []


def _random_script(rng: random.Random) -> list:
    script = []
    for _ in range(rng.randint(10, 150)):
        kind = rng.choice(["grant", "to_broker", "to_peer", "tick", "broker_flow", "messages"])
        if kind == "grant":
            script.append((kind, rng.randint(0, 12), rng.random() < 0.3, rng.randint(0, 12)))
        elif kind in ("tick", "messages"):
            script.append((kind, rng.randint(1, 3) if kind == "tick" else rng.randint(0, 5)))
        else:
            script.append((kind,))
    return script


@pytest.mark.parametrize("fault,own_rule", [
    (Faults(overdraft=True), None),
    (Faults(ignore_window=True), "2.5.6/remote-incoming-window-decrement"),
    (Faults(keep_credit=True), None),
    (Faults(ignore_drain=True), "2.6.7/drain-advance"),
])
def test_each_broker_fault_is_found_in_a_fixed_corpus(fault, own_rule):
    """Detection power over 300 seeded random scripts; a window or drain fault is always named first as
    itself. (An over-send the oracle could not yet prove may show first as the sender's inconsistent flow.)"""
    rng = random.Random(20261123)
    found = 0
    for _ in range(300):
        sim = Simulation(rng.getrandbits(32), rng.getrandbits(32), rng.getrandbits(32), fault)
        for action in _random_script(rng):
            sim.step(action)
        sim.settle()
        if sim.found:
            found += 1
            if own_rule is not None:
                assert sim.found[0].requirement_id == own_rule
    assert found >= 10
