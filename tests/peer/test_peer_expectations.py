"""Expectations over real loopback sockets: a scripted broker (server role) and a scripted client."""

from __future__ import annotations

import re
import time

import pytest

from conformance.errors import EXIT_MALFORMED_FRAME
from conformance.peer import (
    ConnectionLost, ExpectationTimeout, MalformedInput, PeerError, ScriptError, UnexpectedFrame,
)
from conformance.wire import (
    Accepted, Attach, Begin, Close, Detach, Disposition, End, Error, Flow, Open, Symbol, Transfer, encode_frame,
)


def handshake_and_begin(peer):
    """The broker's side up to an answered begin on channel 0."""
    peer.server_handshake()
    theirs = peer.expect(Begin)
    peer.begin(0, remote_channel=theirs.channel, next_outgoing_id=0, incoming_window=100, outgoing_window=100)


def test_expect_matches_fields_by_value_class_and_predicate(scripted_broker, connect):
    def broker(peer):
        handshake_and_begin(peer)
        peer.send(Flow(next_incoming_id=0, incoming_window=100, next_outgoing_id=0, outgoing_window=100))
        peer.send(Flow(next_incoming_id=0, incoming_window=100, next_outgoing_id=0, outgoing_window=100,
                       handle=0, delivery_count=0, link_credit=3))
        peer.send(Disposition(role=False, first=0, settled=True, state=Accepted()))
        peer.expect(Close)

    url, script = scripted_broker(broker)
    client = connect(url)
    client.handshake(sasl=None)
    client.begin(0)
    client.expect(Begin, remote_channel=0)
    link_flow = client.expect(Flow, handle=0, link_credit=lambda v: v > 0)
    assert link_flow.body.link_credit == 3
    assert client.expect(Disposition, state=Accepted).body.first == 0
    session_flow = client.expect(Flow)          # the earlier, non-matching frame stayed in the inbox
    assert session_flow.body.handle is None
    assert client.pending() == []
    assert [f.name for f in client.received()] == ["open", "begin", "flow", "flow", "disposition"]
    client.close_connection()
    script.join()


def test_a_misspelt_field_is_refused_before_waiting(scripted_broker, connect):
    url, script = scripted_broker(lambda peer: peer.server_handshake())
    client = connect(url)
    client.handshake(sasl=None)
    script.join()
    with pytest.raises(ScriptError, match="flow has no field 'credit'"):
        client.expect(Flow, credit=1)


def test_timeout_names_the_wait_and_lists_what_arrived(scripted_broker, connect):
    def broker(peer):
        handshake_and_begin(peer)
        peer.send(Flow(next_incoming_id=0, incoming_window=100, next_outgoing_id=0, outgoing_window=100,
                       handle=0, delivery_count=0, link_credit=0))

    url, script = scripted_broker(broker)
    client = connect(url)
    client.handshake(sasl=None)
    client.begin(0)
    script.join()
    client.expect(Begin)
    started = time.monotonic()
    with pytest.raises(ExpectationTimeout) as caught:
        client.expect(Flow, timeout=0.3, handle=0, link_credit=lambda v: v > 0)
    assert 0.3 <= time.monotonic() - started < 2.0
    message = str(caught.value)
    assert "flow(handle=0, link-credit=<predicate>)" in message
    assert "<- flow(handle=0, delivery-count=0, link-credit=0" in message
    assert "<- begin(remote-channel=0" in message and "<- open(" in message
    assert caught.value.waited == 0.3 and len(caught.value.arrived) == 4


def test_expect_nothing_returns_what_arrived_and_raises_on_a_match(scripted_broker, connect):
    def broker(peer):
        handshake_and_begin(peer)
        peer.expect(Attach)
        peer.expect_nothing(quiet=0.2)     # a bounded pause: the client's quiet period is under way
        peer.send(Flow(next_incoming_id=0, incoming_window=100, next_outgoing_id=0, outgoing_window=100,
                       handle=0, delivery_count=0, link_credit=0, echo=True))
        peer.expect(Flow)
        peer.transfer(0, 0, b"unwanted", settled=True)
        peer.expect(Close)

    url, script = scripted_broker(broker)
    client = connect(url)
    client.handshake(sasl=None)
    client.begin(0)
    client.attach_receiver("r", "q")
    started = time.monotonic()
    during = client.expect_nothing(Transfer, quiet=0.8)
    assert time.monotonic() - started >= 0.8
    assert [f.name for f in during if hasattr(f, "name")][-1] == "flow"   # arrived in the period, not a transfer
    client.expect(Flow, echo=True)                                        # and still available
    client.flow(0, handle=0, link_credit=0)
    with pytest.raises(UnexpectedFrame, match=r"expected no transfer\(\) within \d+\.\d\d s: got transfer\(handle=0") \
            as caught:
        client.expect_nothing(Transfer, quiet=2.0)
    # the period is the quiet time plus the measured round trip (a loaded machine's: 2.01 s, not 2.00 s)
    assert float(re.search(r"within (\d+\.\d\d) s", str(caught.value)).group(1)) >= 2.0
    client.close_connection()
    script.join()


def test_expect_after_a_mark_ignores_older_frames(scripted_broker, connect):
    def broker(peer):
        handshake_and_begin(peer)
        for credit in (1, 2):
            peer.expect(Flow)
            peer.send(Flow(next_incoming_id=0, incoming_window=100, next_outgoing_id=0, outgoing_window=100,
                           handle=0, delivery_count=0, link_credit=credit))

    url, script = scripted_broker(broker)
    client = connect(url)
    client.handshake(sasl=None)
    client.begin(0)
    client.expect(Begin)
    client.flow(0)
    client.expect(Flow, link_credit=1)
    mark = client.mark()
    client.flow(0)
    assert client.expect(Flow, after=mark).body.link_credit == 2
    script.join()


@pytest.mark.parametrize("kind", ["detach", "end", "close"])
def test_expect_error_reports_which_frame_carried_the_condition(scripted_broker, connect, kind):
    condition = "amqp:session:unattached-handle"

    def broker(peer):
        handshake_and_begin(peer)
        peer.expect(Transfer)
        error = Error(condition=Symbol(condition), description="no such handle")
        peer.send({"detach": Detach(handle=7, closed=True, error=error), "end": End(error=error),
                   "close": Close(error=error)}[kind])

    url, script = scripted_broker(broker)
    client = connect(url)
    client.handshake(sasl=None)
    client.begin(0)
    client.expect(Begin)
    client.transfer(0, 7, b"to a handle never attached")
    frame = client.expect_error(condition)
    assert frame.name == kind and client.error_condition(frame) == condition
    script.join()


def test_expect_error_with_another_condition_is_unexpected(scripted_broker, connect):
    def broker(peer):
        peer.server_handshake()
        peer.close_connection(error="amqp:internal-error")

    url, script = scripted_broker(broker)
    client = connect(url)
    client.handshake(sasl=None)
    script.join()
    with pytest.raises(UnexpectedFrame, match="expected detach/end/close with error amqp:not-found: got "
                                              r"close\(error=amqp:internal-error\)"):
        client.expect_error("amqp:not-found")


def test_connection_lost_while_waiting_lists_what_came(scripted_broker, connect):
    def broker(peer):
        peer.server_handshake()
        peer.disconnect()

    url, script = scripted_broker(broker)
    client = connect(url)
    client.handshake(sasl=None)
    script.join()
    with pytest.raises(ConnectionLost, match=r"waiting for begin\(\); arrived: <- header\(AMQP 1.0.0\); <- open"):
        client.expect(Begin, timeout=5)
    assert client.closed_by_remote


def test_garbage_from_the_broker_is_malformed_input_with_its_offset(scripted_broker, connect):
    def broker(peer):
        peer.server_handshake()
        good = encode_frame(Begin(remote_channel=0, next_outgoing_id=0, incoming_window=1, outgoing_window=1))
        peer.send_raw(good + b"\x00\x00\x00\x10\x02\x00\x00\x00\xff\xff\xff\xff\xff\xff\xff\xff")

    url, script = scripted_broker(broker)
    client = connect(url)
    client.handshake(sasl=None)
    script.join()
    opened_at = client.received(Open)[0].offset + len(client.received(Open)[0].raw)
    assert client.expect(Begin).body.remote_channel == 0    # the whole frame before the garbage is kept
    with pytest.raises(MalformedInput) as caught:
        client.expect(Flow)
    error = caught.value
    begin_len = len(client.received(Begin)[0].raw)
    assert error.offset == opened_at + begin_len + 8        # the bad constructor right after the frame header
    assert error.raw.startswith(b"\x00\x00\x00\x10") and isinstance(error, PeerError)
    assert error.exit_code == EXIT_MALFORMED_FRAME
    assert f"stream offset {error.offset}" in str(error)
    last = client.transcript.snapshot()[-1]
    assert last.direction == "in" and "undecodable" in last.note


def test_send_is_exact_and_send_raw_is_verbatim(scripted_broker, connect):
    def broker(peer):
        peer.server_handshake()
        first = peer.expect(Flow)
        peer.expect_header()
        return first

    url, script = scripted_broker(broker)
    client = connect(url)
    client.handshake(sasl=None)
    sent = client.send(Flow(incoming_window=5, next_outgoing_id=9, outgoing_window=5))   # nothing filled in
    client.send_raw(b"AMQP\x09\x01\x00\x00")
    received = script.join()
    assert received.raw == sent.raw and received.body.next_incoming_id is None
    assert client.transcript.snapshot()[-1].raw == b"AMQP\x09\x01\x00\x00"
