"""A pattern's predicate that raises is a bug in the script: `PredicateError` at once, naming the predicate,
the frame and the exception; never "no match" (which would end in a timeout blamed on the broker)."""

from __future__ import annotations

import time

import pytest

from conformance.peer import PeerError, PredicateError
from conformance.wire import Begin, End, Flow


def _broker_sends_a_flow(peer):
    peer.server_handshake()
    theirs = peer.expect(Begin)
    peer.begin(0, remote_channel=theirs.channel, next_outgoing_id=0, incoming_window=100, outgoing_window=100)
    peer.send(Flow(next_incoming_id=0, incoming_window=100, next_outgoing_id=0, outgoing_window=100))


@pytest.fixture
def client(scripted_broker, connect):
    url, script = scripted_broker(_broker_sends_a_flow)
    peer = connect(url)
    peer.handshake(sasl=None)
    peer.begin(0)
    script.join()
    peer.expect(Begin)
    return peer


def _raises_at_once(call) -> PredicateError:
    started = time.monotonic()
    with pytest.raises(PredicateError) as caught:
        call()
    assert time.monotonic() - started < 1.0, "a raising predicate must end the wait at once, not time out"
    assert not isinstance(caught.value, PeerError), "a suite bug is not about the conversation"
    return caught.value


def test_a_raising_where_predicate_is_a_predicate_error(client):
    error = _raises_at_once(lambda: client.expect(Flow, where=lambda f: f.body.no_such_field > 0, timeout=5))
    assert isinstance(error.exc, AttributeError)
    message = str(error)
    assert "where= predicate" in message and "test_peer_predicates.py:" in message
    assert "AttributeError" in message and "no_such_field" in message and "flow(" in message
    assert [f.name for f in client.pending()] == ["flow"]      # the frame stays for later expectations


def test_a_raising_field_predicate_is_a_predicate_error(client):
    # the session flow has no link-credit: the predicate sees None and `None > 0` raises TypeError
    error = _raises_at_once(lambda: client.expect(Flow, link_credit=lambda c: c > 0, timeout=5))
    assert isinstance(error.exc, TypeError) and "link_credit= predicate" in str(error)


def test_a_raising_unless_predicate_is_a_predicate_error(client):
    error = _raises_at_once(lambda: client.expect(End, unless=lambda f: 1 / 0, timeout=5))
    assert isinstance(error.exc, ZeroDivisionError) and "unless= predicate" in str(error)


def test_a_raising_predicate_in_an_absence_check_is_a_predicate_error(client):
    error = _raises_at_once(lambda: client.expect_nothing(Flow, where=lambda f: {}["x"], quiet=5))
    assert isinstance(error.exc, KeyError)


def test_a_predicate_that_guards_against_absent_fields_still_just_does_not_match(client):
    with pytest.raises(PeerError, match="timed out"):
        client.expect(Flow, link_credit=lambda c: c is not None and c > 0, timeout=0.2)
