"""The sans-IO state tracker: session and link bookkeeping from frames in both directions."""

from __future__ import annotations

from hypothesis import given, strategies as st

from conformance.peer import PeerState
from conformance.wire import Attach, Begin, Detach, End, Flow, Frame, Long, Source, Target, Transfer

WRAP = 0xFFFFFFFB   # RabbitMQ 4.0's initial-delivery-count: the serial wrap comes within a few messages


def out(state, body, channel=0):
    state.observe_out(Frame(channel, body))


def came(state, body, channel=0):
    state.observe_in(Frame(channel, body))


def receiver_session(initial_count=WRAP, broker_next_out=0xFFFFFFFC):
    state = PeerState()
    out(state, Begin(next_outgoing_id=0, incoming_window=100, outgoing_window=100))
    came(state, Begin(remote_channel=0, next_outgoing_id=broker_next_out, incoming_window=400, outgoing_window=50),
         channel=3)
    out(state, Attach(name="r", handle=0, role=True, source=Source(address="q"), target=Target()))
    came(state, Attach(name="r", handle=7, role=False, source=Source(address="q"), target=Target(),
                       initial_delivery_count=initial_count), channel=3)
    return state


def test_begin_maps_the_brokers_channel_and_windows():
    state = receiver_session()
    s = state.sessions[0]
    assert s.remote_channel == 3 and state.by_remote_channel[3] is s
    assert s.next_incoming_id == 0xFFFFFFFC
    assert s.remote_incoming_window == 400          # their next-incoming-id is our initial next-outgoing-id
    assert s.remote_outgoing_window == 50
    assert s.session_fields() == {"next_incoming_id": 0xFFFFFFFC, "incoming_window": 100,
                                  "next_outgoing_id": 0, "outgoing_window": 100}


def test_receiver_link_counts_across_the_serial_wrap():
    state = receiver_session()
    link = state.sessions[0].links[0]
    assert link.remote_handle == 7 and link.delivery_count == WRAP
    out(state, Flow(next_incoming_id=0xFFFFFFFC, incoming_window=100, next_outgoing_id=0, outgoing_window=100,
                    handle=0, delivery_count=WRAP, link_credit=10))
    assert link.link_credit == 10
    for i in range(7):
        came(state, Transfer(handle=7, delivery_id=i, delivery_tag=b"t", settled=True), channel=3)
    assert link.delivery_count == 2                  # 0xfffffffb + 7 wraps to 2
    assert link.link_credit == 3
    assert link.messages == 7 and len(link.transfers) == 7
    s = state.sessions[0]
    assert s.next_incoming_id == 3 and s.transfers_in == 7 and s.remote_outgoing_window == 43


def test_a_flow_from_the_sender_resets_the_receivers_view():
    state = receiver_session()
    link = state.sessions[0].links[0]
    came(state, Flow(next_incoming_id=0, incoming_window=400, next_outgoing_id=5, outgoing_window=50,
                     handle=7, delivery_count=2, link_credit=0, drain=True), channel=3)
    assert link.delivery_count == 2 and link.link_credit == 0
    assert state.sessions[0].next_incoming_id == 5
    assert link.remote_flow.drain is True


def test_sender_credit_follows_section_2_6_7():
    state = PeerState()
    out(state, Begin(next_outgoing_id=10, incoming_window=100, outgoing_window=100))
    came(state, Begin(remote_channel=0, next_outgoing_id=0, incoming_window=5, outgoing_window=5))
    out(state, Attach(name="s", handle=0, role=False, source=Source(), target=Target(address="q"),
                      initial_delivery_count=WRAP))
    came(state, Attach(name="s", handle=1, role=True, source=Source(), target=Target(address="q")))
    came(state, Flow(next_incoming_id=10, incoming_window=5, next_outgoing_id=0, outgoing_window=5, handle=1,
                     delivery_count=WRAP, link_credit=3))
    s, link = state.sessions[0], state.sessions[0].links[0]
    assert link.link_credit == 3
    out(state, Transfer(handle=0, delivery_id=0, delivery_tag=b"a"))
    out(state, Transfer(handle=0, delivery_id=1, delivery_tag=b"b"))
    assert link.delivery_count == WRAP + 2 and link.link_credit == 1
    assert s.next_outgoing_id == 12 and s.remote_incoming_window == 3 and s.next_delivery_id == 2
    # the receiver's flow carries its (older) delivery-count: credit = its count + credit - ours
    came(state, Flow(next_incoming_id=11, incoming_window=5, next_outgoing_id=0, outgoing_window=5, handle=1,
                     delivery_count=WRAP, link_credit=10))
    assert link.link_credit == 8
    assert s.remote_incoming_window == 4            # 11 + 5 - 12


def test_a_multi_frame_delivery_counts_once():
    state = receiver_session(initial_count=0)
    link = state.sessions[0].links[0]
    for more in (True, True, False):
        came(state, Transfer(handle=7, delivery_id=0 if more else None, more=more), channel=3)
    came(state, Transfer(handle=7, delivery_id=1, delivery_tag=b"x"), channel=3)
    assert link.messages == 2 and link.delivery_count == 2
    assert state.sessions[0].transfers_in == 4       # but every frame uses the session window


def test_our_flow_computes_the_credit_the_sender_will_see():
    state = receiver_session(initial_count=0)
    link = state.sessions[0].links[0]
    came(state, Transfer(handle=7, delivery_id=0, delivery_tag=b"x"), channel=3)
    out(state, Flow(next_incoming_id=0, incoming_window=100, next_outgoing_id=0, outgoing_window=100, handle=0,
                    delivery_count=0, link_credit=5))   # a stale delivery-count: the sender keeps 4
    assert link.link_credit == 4


def test_server_role_pairs_the_clients_begin_and_attach_with_ours():
    state = PeerState()
    came(state, Begin(next_outgoing_id=42, incoming_window=10, outgoing_window=10), channel=5)
    out(state, Begin(remote_channel=5, next_outgoing_id=0, incoming_window=100, outgoing_window=100), channel=1)
    s = state.sessions[1]
    assert s.remote_channel == 5 and s.next_incoming_id == 42 and s.remote_incoming_window == 10
    came(state, Attach(name="l", handle=3, role=True, source=Source(address="q"), target=Target()), channel=5)
    out(state, Attach(name="l", handle=0, role=False, source=Source(address="q"), target=Target(),
                      initial_delivery_count=0), channel=1)
    link = s.links[0]
    assert link.remote_handle == 3 and s.remote_links[3] is link and not link.is_receiver
    came(state, Flow(next_incoming_id=0, incoming_window=10, next_outgoing_id=42, outgoing_window=10,
                     handle=3, delivery_count=0, link_credit=2), channel=5)
    assert link.link_credit == 2


def test_a_sender_and_a_receiver_sharing_a_name_are_two_links_in_either_role():
    """2.6.1: a name identifies a link per direction, so our sender "q" and our receiver "q" are two links,
    each paired with the other side's attach of the opposite role, whichever comes first (client role) or is
    answered first (server role)."""
    state = PeerState()
    out(state, Begin(next_outgoing_id=0, incoming_window=100, outgoing_window=100))
    came(state, Begin(remote_channel=0, next_outgoing_id=0, incoming_window=100, outgoing_window=100), channel=2)
    out(state, Attach(name="q", handle=0, role=False, target=Target(address="q"), initial_delivery_count=5))
    out(state, Attach(name="q", handle=1, role=True, source=Source(address="q")))
    came(state, Attach(name="q", handle=8, role=False, source=Source(address="q"), initial_delivery_count=WRAP),
         channel=2)                                  # the answer to our receiver, first
    came(state, Attach(name="q", handle=9, role=True, target=Target(address="q")), channel=2)
    s = state.sessions[0]
    sender, receiver = s.links[0], s.links[1]
    assert sender is not receiver
    assert (sender.is_receiver, sender.remote_handle, sender.delivery_count) == (False, 9, 5)
    assert (receiver.is_receiver, receiver.remote_handle, receiver.delivery_count) == (True, 8, WRAP)

    server = PeerState()                             # the broker's side: the client attaches both first
    came(server, Begin(next_outgoing_id=0, incoming_window=10, outgoing_window=10), channel=0)
    out(server, Begin(remote_channel=0, next_outgoing_id=0, incoming_window=100, outgoing_window=100))
    came(server, Attach(name="q", handle=0, role=False, target=Target(address="q"), initial_delivery_count=5))
    came(server, Attach(name="q", handle=1, role=True, source=Source(address="q")))
    out(server, Attach(name="q", handle=0, role=False, source=Source(address="q"), initial_delivery_count=WRAP))
    out(server, Attach(name="q", handle=1, role=True, target=Target(address="q")))
    s = server.sessions[0]
    ours_sending, ours_receiving = s.links[0], s.links[1]
    assert (ours_sending.is_receiver, ours_sending.remote_handle) == (False, 1)
    assert (ours_receiving.is_receiver, ours_receiving.remote_handle, ours_receiving.delivery_count) == (True, 0, 5)


def test_detach_and_end_are_recorded():
    state = receiver_session()
    came(state, Detach(handle=7, closed=True), channel=3)
    came(state, End(), channel=3)
    out(state, End())
    s = state.sessions[0]
    assert s.links[0].detached_by_remote is not None and s.ended_by_remote is not None and s.ended_by_us


def test_odd_frames_are_not_tracked_and_never_raise():
    state = receiver_session()
    before = state.sessions[0].session_fields()
    out(state, Flow(handle=Long(-1), link_credit="lots"))            # wrong types on purpose
    out(state, Transfer(handle=None, delivery_id=Long(-5)))
    came(state, Flow(incoming_window=None, handle=99), channel=3)     # unknown handle
    came(state, Transfer(handle=12345), channel=99)                   # unknown channel
    came(state, Attach(name="nobody", handle=None, role=False), channel=3)
    assert state.sessions[0].session_fields()["incoming_window"] == before["incoming_window"]


@given(st.integers(0, 2**32 - 1), st.lists(st.integers(0, 20), min_size=1, max_size=10))
def test_receiver_credit_is_credit_granted_minus_deliveries(initial, grants):
    state = receiver_session(initial_count=initial)
    link = state.sessions[0].links[0]
    delivery_id = 0
    for credit in grants:
        out(state, Flow(next_incoming_id=0, incoming_window=100, next_outgoing_id=0, outgoing_window=100,
                        handle=0, delivery_count=link.delivery_count, link_credit=credit))
        assert link.link_credit == credit
        for _ in range(credit // 2):
            came(state, Transfer(handle=7, delivery_id=delivery_id, delivery_tag=b"t"), channel=3)
            delivery_id += 1
        assert link.link_credit == credit - credit // 2
    assert link.delivery_count == (initial + delivery_id) % 2**32


def test_windows_and_credit_up_to_2_32_minus_1_are_tracked_without_raising():
    """A window or a credit is a plain uint, not a serial number: 2^31 and more (a broker announcing an
    unlimited window as 0xFFFFFFFF) once raised SerialUndefined in the reader thread, found by the fuzzer."""
    big = 0xFFFFFFFF
    state = PeerState()
    state.observe_out(Frame(0, Begin(next_outgoing_id=0, incoming_window=big, outgoing_window=big)))
    state.observe_out(Frame(0, Attach(name="s", handle=0, role=False, source=Source(), target=Target(),
                                      initial_delivery_count=0)))
    state.observe_out(Frame(0, Attach(name="r", handle=1, role=True, source=Source(), target=Target())))
    state.observe_in(Frame(0, Begin(remote_channel=0, next_outgoing_id=0, incoming_window=big, outgoing_window=big)))
    state.observe_in(Frame(0, Attach(name="s", handle=0, role=True, source=Source(), target=Target())))
    state.observe_in(Frame(0, Attach(name="r", handle=1, role=False, source=Source(), target=Target(),
                                     initial_delivery_count=0)))
    state.observe_in(Frame(0, Flow(next_incoming_id=0, incoming_window=big, next_outgoing_id=0, outgoing_window=big,
                                   handle=0, delivery_count=0, link_credit=big)))
    session = state.sessions[0]
    assert session.remote_incoming_window == big
    assert session.links[0].link_credit == big
    state.observe_out(Frame(0, Flow(next_incoming_id=0, incoming_window=big, next_outgoing_id=0, outgoing_window=big,
                                    handle=1, delivery_count=0, link_credit=2 ** 31)))
    assert session.links[1].link_credit == 2 ** 31
