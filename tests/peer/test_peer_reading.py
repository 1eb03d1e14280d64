"""Who reads the socket: a waiting script reads it itself (no hand-off per read); when nobody waits, the
reader thread still takes the input, records it and notices the end of the stream (transport.py)."""

from __future__ import annotations

import threading
import time

import pytest

from conformance.peer import ConnectionLost
from conformance.wire import Begin, Close, Flow


def _flow(**link):
    return Flow(next_incoming_id=0, incoming_window=100, next_outgoing_id=0, outgoing_window=100, **link)


def _wait_until(cond, bound=2.0):
    deadline = time.monotonic() + bound
    while not cond():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.005)   # bounded-wait-ok: a test polling what a background thread did, at most `bound` s
    return True


def _readers(peer) -> list:
    """Record the thread that hands each chunk to the peer."""
    names = []
    inner = peer.transport._on_data

    def on_data(data):
        names.append(threading.current_thread().name)
        return inner(data)
    peer.transport._on_data = on_data
    return names


def test_a_waiting_script_reads_the_socket_itself(session_on):
    go = threading.Event()

    def broker(peer):
        assert go.wait(5)
        peer.send_together([(_flow(handle=0, delivery_count=0, link_credit=credit), 0) for credit in range(1, 6)])
        peer.expect(Close)

    client, script = session_on(broker)
    names = _readers(client)
    read_here = client._read_here

    def waiting(timeout):
        # the broker sends only once this thread waits for input: input that comes while nobody waits is the
        # reader thread's to take (test_input_is_recorded_when_nobody_waits), and a loaded machine may hold this
        # thread between two statements longer than the reader thread's hold-off
        go.set()
        return read_here(timeout)
    client._read_here = waiting
    got = [client.expect(Flow).body.link_credit for _ in range(5)]
    assert got == [1, 2, 3, 4, 5]
    assert names and set(names) == {threading.current_thread().name}
    assert [e.name for e in client.transcript.snapshot() if e.direction == "in"][-5:] == ["flow"] * 5
    client.close_connection()
    script.join()


def test_input_is_recorded_when_nobody_waits(scripted_broker, connect):
    def broker(peer):
        peer.server_handshake()
        theirs = peer.expect(Begin)
        peer.begin(0, remote_channel=theirs.channel, next_outgoing_id=0, incoming_window=100, outgoing_window=100)
        peer.send(_flow(handle=0, delivery_count=0, link_credit=7))
        peer.expect(Close)

    url, script = scripted_broker(broker)
    client = connect(url)
    client.handshake(sasl=None)
    names = _readers(client)      # before the begin: on a loaded machine its answer may be read at once
    client.begin(0)
    # the script waits for nothing: the reader thread takes the begin and the flow (after its hold-off)
    assert _wait_until(lambda: [f.name for f in client.received()][-2:] == ["begin", "flow"])
    assert names and threading.current_thread().name not in names
    assert client.expect(Flow, timeout=0.1).body.link_credit == 7
    client.close_connection()
    script.join()


def test_the_end_of_the_stream_is_noticed_when_nobody_waits(scripted_broker, connect):
    def broker(peer):
        peer.server_handshake()
        peer.disconnect()

    url, script = scripted_broker(broker)
    client = connect(url)
    client.handshake(sasl=None)
    script.join()
    assert _wait_until(lambda: client.ending is not None)
    with pytest.raises(ConnectionLost):
        client.expect(Begin, timeout=1.0)


def test_a_waiting_script_notices_the_end_at_once(scripted_broker, connect):
    release = threading.Event()

    def broker(peer):
        peer.server_handshake()
        release.wait(5)
        peer.disconnect()

    url, script = scripted_broker(broker)
    client = connect(url)
    client.handshake(sasl=None)
    release.set()
    t = time.monotonic()
    with pytest.raises(ConnectionLost):
        client.expect(Begin, timeout=5.0)
    assert time.monotonic() - t < 2.0
    script.join()
