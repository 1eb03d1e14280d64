"""Endpoint rules of 2.6.7 (link) and 2.5.6 (session), near the 2^32 wrap."""

from conformance.model import LinkEndpoint, SessionEndpoint, credit_left


def test_sender_credit_formula_and_unknown_delivery_count():
    s = LinkEndpoint.sender(0xFFFFFFFE)
    s.on_send()
    s.on_send()                                       # delivery-count wrapped to 0
    assert (s.delivery_count, s.messages) == (0, 2)
    s.on_receiver_flow(0xFFFFFFFE, 5, False)          # the receiver saw none of them: 5 - 2 = 3
    assert s.link_credit == 3
    s.on_receiver_flow(None, 5, None)                 # unknown: the attach's initial delivery-count is assumed
    assert s.link_credit == 3 and s.delivery_limit == 3
    s.on_receiver_flow(0, 0, True)                    # stop, drain asked
    assert (s.link_credit, s.drain, s.may_send()) == (0, True, 0)


def test_sender_credit_can_go_negative_in_flight_and_may_send_floors_it():
    s = LinkEndpoint.sender(10)
    s.on_receiver_flow(10, 3, False)
    for _ in range(3):
        s.on_send()
    s.on_receiver_flow(10, 1, False)                  # lowered while three were in flight
    assert (s.link_credit, s.may_send(), s.delivery_limit) == (-2, 0, None)


def test_drain_advances_delivery_count_to_the_limit_even_for_huge_credit():
    s = LinkEndpoint.sender(0xFFFFFFF0)
    s.on_receiver_flow(0xFFFFFFF0, 0x20, True)
    s.on_drain_exhausted()
    assert (s.delivery_count, s.link_credit) == (0x10, 0)
    big = LinkEndpoint.sender(5)
    big.on_receiver_flow(5, 0xFFFFFFFF, True)         # link-credit is a uint: may exceed 2^31
    assert big.link_credit == 0xFFFFFFFF
    big.on_drain_exhausted()
    assert (big.delivery_count, big.link_credit) == (4, 0)


def test_multi_frame_and_aborted_deliveries_count_once():
    s = LinkEndpoint.sender(0xFFFFFFFF)
    s.on_receiver_flow(None, 2, False)
    assert s.on_transfer_frame(True, False) is True
    assert s.on_transfer_frame(True, False) is False and s.in_delivery
    assert s.on_transfer_frame(False, False) is False and not s.in_delivery
    assert s.on_transfer_frame(True, False) is True
    assert s.on_transfer_frame(True, True) is False and not s.in_delivery    # aborted ends it
    assert (s.delivery_count, s.link_credit, s.messages) == (1, 0, 2)


def test_receiver_available_floor_and_sender_flow_keep_the_receivers_limit():
    r = LinkEndpoint.receiver()
    assert r.delivery_count is None
    r.on_receive()                                    # before the attach: no count to advance
    r = LinkEndpoint.receiver()
    r.on_sender_attach(0xFFFFFFFF)
    r.set_credit(4)
    r.on_receive()
    assert (r.delivery_count, r.link_credit, r.available) == (0, 3, 0)   # available floored at zero
    r.on_sender_flow(3, 0, 7)                         # the sender drained: advanced 3, limit unchanged
    assert (r.delivery_count, r.link_credit, r.available, r.delivery_limit) == (3, 0, 7, 3)


def test_session_remote_incoming_window_formula_with_and_without_next_incoming_id():
    s = SessionEndpoint.begin(next_outgoing_id=0xFFFFFFFF, incoming_window=10, outgoing_window=10)
    s.on_remote_begin(next_outgoing_id=7, incoming_window=5, outgoing_window=100)
    s.on_send_transfer()
    s.on_send_transfer()                              # next-outgoing-id wrapped to 1
    assert (s.next_outgoing_id, s.remote_incoming_window, s.may_send()) == (1, 3, 3)
    s.on_remote_flow(next_incoming_id=0, incoming_window=5, next_outgoing_id=9, outgoing_window=50)
    assert (s.remote_incoming_window, s.next_incoming_id, s.remote_outgoing_window) == (4, 9, 50)
    s.on_remote_flow(next_incoming_id=None, incoming_window=5, next_outgoing_id=9, outgoing_window=50)
    assert s.remote_incoming_window == 3              # initial 0xffffffff + 5 - 1
    s.on_receive_transfer()
    assert (s.next_incoming_id, s.remote_outgoing_window) == (10, 49)
    s.on_remote_flow(next_incoming_id=1, incoming_window=0xFFFFFFFF, next_outgoing_id=10, outgoing_window=0)
    assert s.remote_incoming_window == 0xFFFFFFFF     # uint windows beyond 2^31 are fine


def test_credit_left_uses_serial_distance():
    assert credit_left(0xFFFFFFFE, 5, 2) == 1
    assert credit_left(5, 0, 3) == 2                  # a receiver behind the sender's count
    assert credit_left(3, 0, 5) == -2


def test_roles_counts_and_available_floor():
    snd, rcv = LinkEndpoint.sender(2 ** 32 + 5), LinkEndpoint.receiver()
    assert (snd.is_sender, snd.delivery_count, snd.initial_delivery_count) == (True, 5, 5)
    assert rcv.is_sender is False and rcv.delivery_count is None
    snd.set_credit(3)
    assert snd.drain is False
    snd.set_credit(3, drain=True)
    assert snd.drain is True
    snd.available = 2
    for left in (1, 0, 0):
        snd.on_send()
        assert snd.available == left
    assert snd.messages == 3 and snd.link_credit == 0 and snd.delivery_count == 8
    rcv.on_sender_attach(0xFFFFFFFF)
    assert rcv.initial_delivery_count == 0xFFFFFFFF and rcv.delivery_count == 0xFFFFFFFF
    rcv.set_credit(5)
    rcv.available = 1
    rcv.on_receive()
    rcv.on_receive()
    assert (rcv.available, rcv.messages, rcv.delivery_count, rcv.link_credit) == (0, 2, 1, 3)


def test_drain_exhausted_consumes_exactly_the_credit():
    snd = LinkEndpoint.sender(0xFFFFFFFE)
    snd.set_credit(1, drain=True)
    snd.on_drain_exhausted()
    assert (snd.delivery_count, snd.link_credit) == (0xFFFFFFFF, 0)
    snd.on_drain_exhausted()                          # nothing left: unchanged
    assert (snd.delivery_count, snd.link_credit) == (0xFFFFFFFF, 0)
    big = LinkEndpoint.sender(0)
    big.set_credit(2 ** 32 - 1, drain=True)           # more than one serial step: split below 2^31
    big.on_drain_exhausted()
    assert (big.delivery_count, big.link_credit) == (2 ** 32 - 1, 0)
    assert big.delivery_count == (2 ** 31 - 1 + 2 ** 31 - 1 + 1)


def test_session_may_send_is_never_negative_and_unknown_before_begin():
    s = SessionEndpoint.begin(0, 10, 10)
    assert s.may_send() is None
    s.on_remote_begin(0, 1, 10)
    assert s.may_send() == 1
    s.on_send_transfer()
    s.on_send_transfer()
    assert s.remote_incoming_window == -1 and s.may_send() == 0


def test_edges_of_receive_attach_and_an_early_flow():
    rcv = LinkEndpoint.receiver()
    rcv.on_receiver_flow(5, 3, None)                  # no delivery-count known yet: nothing to compute from
    assert (rcv.link_credit, rcv.delivery_count) == (0, None)
    rcv.on_sender_attach(5 + 2 ** 32)
    assert (rcv.initial_delivery_count, rcv.delivery_count) == (5, 5)
    rcv.set_credit(4)
    rcv.available = 3
    rcv.on_receive()
    assert rcv.available == 2
