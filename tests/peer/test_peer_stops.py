"""Our peer stops at the other side's close or end (issue #23): after the other side's close it sends at most
its own close; after the other side's end of a session, at most our end on that channel. What a script asks
for beyond that is not sent, is recorded in `peer.skipped`, and the transcript shows none of it."""

from __future__ import annotations

import time

import pytest

from conformance.peer import ConnectionLost, frames_after_the_end
from conformance.wire import Begin, Close, End, Flow

SETTLE = 0.3


def test_after_the_other_sides_end_only_our_end_goes_out_on_that_channel(scripted_broker, connect):
    def broker(peer):
        peer.server_handshake()
        theirs = peer.expect(Begin)
        peer.begin(0, remote_channel=theirs.channel)
        peer.end(0, error="amqp:internal-error")
        peer.expect(End)                           # our end: the only frame that comes on the channel
        peer.expect_nothing(Flow, quiet=SETTLE)

    url, script = scripted_broker(broker)
    client = connect(url)
    client.handshake(sasl=None)
    client.begin(0)
    client.expect(Begin)
    client.expect(End)
    client.flow(0, echo=True)                      # not sent
    client.end(0)                                  # sent
    client.flow(0, echo=True)                      # not sent either
    script.join()
    assert len(client.skipped) == 2 and all("the other side had ended the session" in s for s in client.skipped)
    assert frames_after_the_end(client.transcript.to_json()) == []


def test_after_the_other_sides_close_only_our_close_goes_out_and_waits_end_at_once(scripted_broker, connect):
    def broker(peer):
        peer.server_handshake()
        peer.close_connection(error="amqp:not-allowed")
        peer.expect(Close, timeout=2.0)            # our close; the socket stays open meanwhile
        peer.expect_nothing(quiet=SETTLE)

    url, script = scripted_broker(broker)
    client = connect(url)
    client.handshake(sasl=None)
    client.expect(Close)
    client.begin(0)                                # not sent
    started = time.monotonic()
    with pytest.raises(ConnectionLost):            # nothing may follow a close: no frame timeout to wait out
        client.expect(Begin)
    assert time.monotonic() - started < 1.0
    client.close_connection()                      # sent
    client.close_connection()                      # a second close is not
    script.join()
    assert len(client.skipped) == 2, client.skipped
    assert frames_after_the_end(client.transcript.to_json()) == []
