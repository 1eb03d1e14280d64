"""The flow-control model: endpoint rules of 2.5.6/2.6.7, the oracle's violations, and two properties:
the delivery-limit converges under any interleaving, and wrapping at 2^32 behaves like no wrap."""

from hypothesis import given, strategies as st

from conformance import catalogue
from conformance.model import FlowOracle, LinkEndpoint, SessionEndpoint
from conformance.wire import Attach, Begin, Flow, Frame, Source, Target, Transfer, serial_add, serial_diff


def test_sender_credit_formula_and_unknown_delivery_count():
    s = LinkEndpoint.sender(0xFFFFFFFE)
    s.on_send()
    s.on_send()                       # delivery-count wrapped to 0
    assert s.delivery_count == 0
    s.on_receiver_flow(0xFFFFFFFE, 5, False)          # receiver saw nothing yet: 5 - 2 = 3
    assert s.link_credit == 3
    s.on_receiver_flow(None, 5, False)                # unknown: initial delivery-count is assumed
    assert s.link_credit == 3
    s.on_drain_exhausted()
    assert (s.delivery_count, s.link_credit) == (3, 0)


def test_receiver_keeps_available_floor_and_follows_sender_flow():
    r = LinkEndpoint.receiver()
    r.on_sender_attach(10)
    r.set_credit(2)
    r.on_receive()
    assert (r.delivery_count, r.link_credit, r.available) == (11, 1, 0)
    r.on_sender_flow(12, 0, 4)
    assert (r.delivery_count, r.link_credit, r.available) == (12, 0, 4)


def test_session_remote_incoming_window_formula():
    s = SessionEndpoint.begin(next_outgoing_id=0xFFFFFFFF, incoming_window=10, outgoing_window=10)
    s.on_remote_begin(next_outgoing_id=7, incoming_window=5, outgoing_window=100)
    s.on_send_transfer()
    s.on_send_transfer()
    assert s.remote_incoming_window == 3
    s.on_remote_flow(next_incoming_id=0, incoming_window=5, next_outgoing_id=7, outgoing_window=100)
    assert s.remote_incoming_window == 4          # 0 + 5 - 1
    s.on_remote_flow(next_incoming_id=None, incoming_window=5, next_outgoing_id=7, outgoing_window=100)
    assert s.remote_incoming_window == 3          # initial 0xffffffff + 5 - 1


def _feed(oracle, direction, body, channel=0):
    return oracle.observe(direction, Frame(channel, body))


def _receiver_setup(initial=0xFFFFFFFB):
    o = FlowOracle()
    _feed(o, "out", Begin(next_outgoing_id=0, incoming_window=100, outgoing_window=100))
    _feed(o, "in", Begin(remote_channel=0, next_outgoing_id=0xFFFFFFFC, incoming_window=400, outgoing_window=400))
    _feed(o, "out", Attach(name="r", handle=0, role=True, source=Source(address="q"), target=Target()))
    _feed(o, "in", Attach(name="r", handle=3, role=False, source=Source(address="q"), target=Target(),
                          initial_delivery_count=initial))
    return o


def _flow(**kw):
    base = dict(next_incoming_id=0, incoming_window=100, next_outgoing_id=0, outgoing_window=100)
    base.update(kw)
    return Flow(**base)


def test_oracle_flags_transfer_beyond_credit_across_the_wrap():
    o = _receiver_setup()
    _feed(o, "out", _flow(handle=0, delivery_count=0xFFFFFFFB, link_credit=6))
    for i in range(6):
        assert _feed(o, "in", Transfer(handle=3, delivery_id=i)) == []
    assert o.broker_may_send(0, 0) == 0
    v = _feed(o, "in", Transfer(handle=3, delivery_id=6))
    assert [x.requirement_id for x in v] == ["2.6.7/no-send-without-credit"]


def test_oracle_tolerates_in_flight_transfers_until_the_broker_shows_the_new_limit():
    o = _receiver_setup(initial=0)
    _feed(o, "out", _flow(handle=0, delivery_count=0, link_credit=10))
    _feed(o, "out", _flow(handle=0, delivery_count=0, link_credit=0))      # stop while transfers fly
    assert _feed(o, "in", Transfer(handle=3, delivery_id=0)) == []          # in flight: legal
    assert _feed(o, "in", _flow(handle=3, delivery_count=1, link_credit=0)) == []   # broker saw the stop? not equal
    # the broker's flow shows delivery-count 1 + credit 0 != latest limit 0: still lenient
    assert _feed(o, "in", Transfer(handle=3, delivery_id=1)) == []


def test_oracle_checks_sender_flow_fields_and_session_flows():
    o = _receiver_setup(initial=5)
    _feed(o, "out", _flow(handle=0, delivery_count=5, link_credit=2))
    _feed(o, "in", Transfer(handle=3, delivery_id=0))
    v = _feed(o, "in", _flow(handle=3, delivery_count=5, link_credit=1))
    assert "2.7.4/sender-delivery-count-set" in [x.requirement_id for x in v]
    v = _feed(o, "in", _flow(handle=3, delivery_count=6, link_credit=9))
    assert "2.6.7/credit-formula" in [x.requirement_id for x in v]
    v = _feed(o, "in", _flow(link_credit=1))
    assert "2.7.4/link-fields-need-handle" in [x.requirement_id for x in v]
    v = _feed(o, "in", Flow(incoming_window=1, next_outgoing_id=0, outgoing_window=1))
    assert "2.7.4/next-incoming-id-set" in [x.requirement_id for x in v]
    _feed(o, "out", _flow(echo=True))
    v = _feed(o, "in", _flow(echo=True))
    assert "2.7.4/echo-no-loop" in [x.requirement_id for x in v]


def test_oracle_flags_transfers_beyond_our_incoming_window():
    o = FlowOracle()
    _feed(o, "out", Begin(next_outgoing_id=0, incoming_window=1, outgoing_window=100))
    _feed(o, "in", Begin(remote_channel=0, next_outgoing_id=0xFFFFFFFF, incoming_window=400, outgoing_window=400))
    assert _feed(o, "in", Transfer(handle=0, delivery_id=0)) == []
    v = _feed(o, "in", Transfer(handle=0, delivery_id=1))
    assert [x.requirement_id for x in v] == ["2.5.6/remote-incoming-window-decrement"]


def test_every_violation_id_is_in_the_catalogue():
    import inspect

    import conformance.model.oracle as oracle_module
    source = inspect.getsource(oracle_module)
    import re
    for rid in set(re.findall(r'"(\d\.\d+\.\d+/[a-z0-9-]+)"', source)):
        catalogue.get(rid)


# -- properties -------------------------------------------------------------------------------------------

steps = st.lists(st.one_of(st.tuples(st.just("flow"), st.integers(0, 20)),
                           st.tuples(st.just("send"), st.just(0)),
                           st.tuples(st.just("deliver_flow"), st.just(0)),
                           st.tuples(st.just("deliver_transfer"), st.just(0))), max_size=80)


def _simulate(initial: int, script):
    """A sender and a receiver exchanging flows and transfers through two FIFO channels."""
    sender = LinkEndpoint.sender(initial)
    receiver = LinkEndpoint.receiver()
    receiver.on_sender_attach(initial)
    to_sender, to_receiver = [], []
    trace = []
    for kind, value in script:
        if kind == "flow":
            receiver.set_credit(value)
            to_sender.append((receiver.delivery_count, value))
        elif kind == "send" and sender.may_send():
            sender.on_send()
            to_receiver.append(sender.delivery_count)
        elif kind == "deliver_flow" and to_sender:
            dc, credit = to_sender.pop(0)
            sender.on_receiver_flow(dc, credit, False)
        elif kind == "deliver_transfer" and to_receiver:
            to_receiver.pop(0)
            receiver.on_receive()
        trace.append((sender.link_credit, serial_diff(initial, sender.delivery_count)))
    while to_receiver:
        to_receiver.pop(0)
        receiver.on_receive()
    while to_sender:
        dc, credit = to_sender.pop(0)
        sender.on_receiver_flow(dc, credit, False)
    return sender, receiver, to_sender, trace


@given(steps, st.integers(0, 0xFFFFFFFF))
def test_delivery_limit_converges_under_any_interleaving(script, initial):
    sender, receiver, _, _ = _simulate(initial, script)
    if any(k == "flow" for k, _ in script):
        last_credit = [v for k, v in script if k == "flow"][-1]
        # once every frame has arrived, both sides agree on the delivery-limit the receiver last identified
        assert sender.link_credit <= last_credit
        assert sender.delivery_count == receiver.delivery_count
        assert sender.link_credit == receiver.link_credit      # the same delivery-limit on both sides


@given(steps, st.integers(1, 40))
def test_wrap_behaves_like_no_wrap(script, before_wrap):
    _, _, _, plain = _simulate(0, script)
    _, _, _, wrapped = _simulate((1 << 32) - before_wrap, script)
    assert plain == wrapped
