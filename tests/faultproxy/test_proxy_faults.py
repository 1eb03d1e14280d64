"""Each fault's frame rewriting, sans-IO: frames in, frames out, with the bookkeeping kept consistent."""

from __future__ import annotations

import pytest

from conformance.faultproxy.faults import (
    FAULTS, AlarmDropsConnection, CumulativeCredit, DeliveryCountShifted, DrainStripped, EchoStripped,
    IncomingWindowRaised, Mutation, TransferBeyondCredit, mutation_for,
)
from conformance.wire import (
    Accepted, Attach, Begin, Disposition, Flow, Frame, Source, Target, Transfer, decode_frame, encode_frame,
)

IDC = 0xFFFFFFFE        # the broker's initial delivery-count: counts wrap within the test


def peer(m, body, channel=0):
    out = m.from_peer(Frame(channel, body))
    _encodable(out.to_broker + out.to_peer)
    return out


def broker(m, body, channel=1, payload=b""):
    out = m.from_broker(Frame(channel, body, payload))
    _encodable(out.to_peer + out.to_broker)
    return out


def _encodable(frames):
    for f in frames:      # every frame a fault produces goes through the codec and back
        assert decode_frame(encode_frame(f.body, f.channel, f.payload)).body == f.body


def receiving_link(m, *, broker_next_outgoing=0xFFFFFFFF, broker_window=400, role=True):
    """Peer begins channel 0 (broker answers on 1), attaches handle 0 (broker uses handle 5)."""
    peer(m, Begin(next_outgoing_id=0, incoming_window=2048, outgoing_window=2048))
    broker(m, Begin(remote_channel=0, next_outgoing_id=broker_next_outgoing, incoming_window=broker_window,
                    outgoing_window=2048))
    peer(m, Attach(name="l", handle=0, role=role, source=Source(address="q"), target=Target()))
    broker(m, Attach(name="l", handle=5, role=not role, source=Source(address="q"), target=Target(),
                     initial_delivery_count=None if role is False else IDC))


def transfer(delivery_id, more=False, tag=None):
    return Transfer(handle=5, delivery_id=delivery_id, delivery_tag=tag or delivery_id.to_bytes(4, "big"),
                    message_format=0, more=more or None)


def link_flow(**fields):
    values = dict(next_incoming_id=0xFFFFFFFF, incoming_window=2048, next_outgoing_id=0, outgoing_window=2048,
                  handle=0)
    values.update(fields)
    return Flow(**values)


def broker_flow(**fields):
    values = dict(next_incoming_id=0, incoming_window=400, next_outgoing_id=0, outgoing_window=2048, handle=5)
    values.update(fields)
    return Flow(**values)


def test_registry_names_a_catalogue_requirement_for_every_fault():
    from conformance import catalogue
    assert len(FAULTS) >= 6
    for name, cls in FAULTS.items():
        assert cls.name == name and catalogue.get(cls.requirement)
    assert mutation_for(None) is Mutation and mutation_for("none") is Mutation
    with pytest.raises(KeyError):
        mutation_for("no-such-fault")


def test_no_fault_forwards_the_very_same_frames():
    m = Mutation()
    receiving_link(m)
    f = Frame(0, link_flow(link_credit=3, delivery_count=IDC))
    assert m.from_peer(f).to_broker == [f] and m.from_peer(f).to_broker[0] is f
    t = Frame(1, transfer(0), b"payload")
    out = m.from_broker(t)
    assert out.to_peer[0] is t and not out.to_broker and not out.drop


def test_cumulative_credit_adds_the_peers_credit_to_what_is_left():
    m = CumulativeCredit()
    receiving_link(m)
    first = peer(m, link_flow(link_credit=50, delivery_count=IDC)).to_broker[0].body
    assert (first.link_credit, first.delivery_count) == (50, IDC)
    second = peer(m, link_flow(link_credit=50, delivery_count=IDC)).to_broker[0].body
    assert (second.link_credit, second.delivery_count) == (100, IDC)       # set, not added: would be 50
    for i in range(10):
        broker(m, transfer(i))
    third = peer(m, link_flow(link_credit=5, delivery_count=IDC + 10 - (1 << 32))).to_broker[0].body
    assert third.link_credit == 95 and third.delivery_count == (IDC + 10) & 0xFFFFFFFF
    broker(m, broker_flow(delivery_count=(IDC + 20) & 0xFFFFFFFF, link_credit=0, drain=True))  # drained
    fourth = peer(m, link_flow(link_credit=4)).to_broker[0].body
    assert fourth.link_credit == 4 and fourth.delivery_count == (IDC + 20) & 0xFFFFFFFF


def test_cumulative_credit_leaves_publisher_links_alone():
    m = CumulativeCredit()
    receiving_link(m, role=False)
    f = Frame(0, link_flow(link_credit=7, delivery_count=0))
    assert m.from_peer(f).to_broker[0] is f


def test_drain_and_echo_flags_are_stripped_and_nothing_else_changes():
    for cls, flag in ((DrainStripped, "drain"), (EchoStripped, "echo")):
        m = cls()
        receiving_link(m)
        sent = link_flow(link_credit=10, delivery_count=IDC, **{flag: True})
        out = peer(m, sent).to_broker[0].body
        assert not getattr(out, flag)
        assert {k: getattr(out, k) for k in ("link_credit", "delivery_count", "next_incoming_id", "handle")} == \
               {k: getattr(sent, k) for k in ("link_credit", "delivery_count", "next_incoming_id", "handle")}
        plain = Frame(0, link_flow(link_credit=1))
        assert m.from_peer(plain).to_broker[0] is plain


def test_delivery_count_shifted_in_the_senders_flows_and_shifted_back_in_the_peers():
    m = DeliveryCountShifted()
    receiving_link(m)
    before = Frame(0, link_flow(link_credit=3, delivery_count=IDC))
    assert m.from_peer(before).to_broker[0] is before                 # nothing shifted seen yet
    reply = broker(m, broker_flow(delivery_count=IDC + 1, link_credit=2)).to_peer[0].body
    assert reply.delivery_count == (IDC + 2) & 0xFFFFFFFF
    back = peer(m, link_flow(link_credit=5, delivery_count=(IDC + 2) & 0xFFFFFFFF)).to_broker[0].body
    assert back.delivery_count == IDC + 1


def test_delivery_count_shift_spares_links_where_the_broker_receives():
    m = DeliveryCountShifted()
    receiving_link(m, role=False)
    f = Frame(1, broker_flow(delivery_count=7, link_credit=100))
    assert m.from_broker(f).to_peer[0] is f


def test_incoming_window_raised_in_begin_and_flow():
    m = IncomingWindowRaised()
    assert peer(m, Begin(next_outgoing_id=0, incoming_window=0, outgoing_window=10)).to_broker[0].body \
        .incoming_window == IncomingWindowRaised.RAISE
    assert peer(m, link_flow(incoming_window=3)).to_broker[0].body.incoming_window == 3 + IncomingWindowRaised.RAISE
    top = peer(m, link_flow(incoming_window=0xFFFFFFF0)).to_broker[0].body.incoming_window
    assert top == 0xFFFFFFFF


def test_alarm_drop_replaces_a_closing_window_by_a_dropped_connection():
    m = AlarmDropsConnection()
    receiving_link(m, broker_window=400)
    assert not broker(m, broker_flow(incoming_window=300, handle=None, link_credit=None)).drop
    out = broker(m, broker_flow(incoming_window=0, handle=None, link_credit=None))
    assert out.drop and not out.to_peer


def test_alarm_drop_leaves_a_session_begun_with_window_zero_alone():
    m = AlarmDropsConnection()
    receiving_link(m, broker_window=0)
    assert not broker(m, broker_flow(incoming_window=0, handle=None, link_credit=None)).drop


def test_transfer_beyond_credit_injects_a_copy_once_the_limit_is_reached():
    m = TransferBeyondCredit()
    receiving_link(m, broker_next_outgoing=0xFFFFFFFF)
    peer(m, link_flow(link_credit=2, delivery_count=IDC))
    assert broker(m, transfer(0xFFFFFFFF), payload=b"m0").to_peer[0].body.delivery_id == 0xFFFFFFFF
    out = broker(m, transfer(0), payload=b"m1")
    assert len(out.to_peer) == 2
    extra = out.to_peer[1]
    assert extra.body.delivery_id == 1 and extra.body.delivery_tag == b"\x00\x00\x00\x00\xfe"
    assert extra.payload == b"m1" and extra.body.handle == 5
    # no second injection for the same flow
    peer(m, link_flow(link_credit=0))           # the peer stops: arms again, but nothing is delivered
    # later broker frames are renumbered towards the peer ...
    peer(m, link_flow(link_credit=2, delivery_count=(IDC + 3) & 0xFFFFFFFF, next_incoming_id=2))
    t = broker(m, transfer(1), payload=b"m2").to_peer[0].body
    assert t.delivery_id == 2
    f = broker(m, broker_flow(next_outgoing_id=2, delivery_count=(IDC + 3) & 0xFFFFFFFF, link_credit=1)).to_peer[0]
    assert f.body.next_outgoing_id == 3 and f.body.delivery_count == (IDC + 4) & 0xFFFFFFFF


def test_transfer_beyond_credit_renumbers_the_peers_frames_back():
    m = TransferBeyondCredit()
    receiving_link(m)
    peer(m, link_flow(link_credit=1, delivery_count=IDC))
    assert len(broker(m, transfer(0xFFFFFFFF)).to_peer) == 2          # injected id 0
    flow = peer(m, link_flow(link_credit=3, delivery_count=0, next_incoming_id=1)).to_broker[0].body
    assert flow.delivery_count == IDC + 1 and flow.next_incoming_id == 0   # the injected one taken back
    only_injected = peer(m, Disposition(role=True, first=0, settled=True, state=Accepted()))
    assert only_injected.to_broker == []
    broker(m, transfer(0))                                          # reaches the peer as delivery-id 1
    broker(m, transfer(1))                                          # as 2
    split = peer(m, Disposition(role=True, first=0xFFFFFFFF, last=2, settled=True, state=Accepted())).to_broker
    assert [(d.body.first, d.body.last) for d in split] == [(0xFFFFFFFF, 0xFFFFFFFF), (0, 1)]


def test_transfer_beyond_credit_after_a_zero_credit_flow_and_for_multi_frame_messages():
    m = TransferBeyondCredit()
    receiving_link(m)
    peer(m, link_flow(link_credit=10, delivery_count=IDC, drain=True))
    broker(m, transfer(7, more=True), payload=b"a")
    broker(m, Transfer(handle=5, more=None), payload=b"b")
    out = broker(m, broker_flow(delivery_count=(IDC + 10) & 0xFFFFFFFF, link_credit=0, drain=True)).to_peer
    assert [f.name for f in out] == ["flow", "transfer", "transfer"]
    first, second = out[1], out[2]
    assert first.body.delivery_id == 8 and first.body.more and first.payload == b"a"
    assert second.body.delivery_id is None and second.payload == b"b"
    assert out[0].body.delivery_count == (IDC + 10) & 0xFFFFFFFF   # the flow itself precedes the injection
