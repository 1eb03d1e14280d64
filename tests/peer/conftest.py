"""Fixtures for the peer's own tests: a scripted broker (the peer in the server role) on a real loopback
socket, run in a thread, whose failures are re-raised in the test."""

from __future__ import annotations

import threading

import pytest

from conformance.peer import Peer, PeerServer, Timeouts
from conformance.wire import Begin

FAST = Timeouts(frame=2.0, quiet=0.3, connect=2.0)


class BrokerScript:
    """Runs `script(peer)` on the first accepted connection in a thread; `join()` re-raises its error."""

    def __init__(self, server: PeerServer, script):
        self.server = server
        self.script = script
        self.peer: Peer | None = None
        self.result = None
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._run, name="scripted-broker", daemon=True)
        self.thread.start()

    def _run(self):
        try:
            self.peer = self.server.accept()
            self.result = self.script(self.peer)
        except BaseException as exc:   # re-raised in the test thread by join()
            self.error = exc

    def join(self, timeout: float = 10.0):
        self.thread.join(timeout)
        if self.thread.is_alive():
            raise AssertionError(f"the scripted broker did not finish within {timeout} s")
        if self.error is not None:
            raise self.error
        return self.result


@pytest.fixture
def scripted_broker():
    """`start(script, **server_options) -> (url, BrokerScript)`; everything is closed after the test."""
    servers, clients = [], []

    def start(script, **options):
        options.setdefault("timeouts", FAST)
        server = PeerServer(**options)
        servers.append(server)
        return server.url, BrokerScript(server, script)

    yield start
    for server in servers:
        server.close()


@pytest.fixture
def connect():
    """`connect(url, **options) -> Peer` with short timeouts; disconnected after the test."""
    peers = []

    def _connect(url, **options):
        options.setdefault("timeouts", FAST)
        peer = Peer.connect(url, **options)
        peers.append(peer)
        return peer

    yield _connect
    for peer in peers:
        peer.disconnect()


@pytest.fixture
def session_on(scripted_broker, connect):
    """`session_on(after_begin) -> (client, BrokerScript)`: a client with a session on channel 0 against a
    scripted broker that answers the handshake and the begin, then runs `after_begin(peer)`."""
    def start(after_begin):
        def broker(peer):
            peer.server_handshake()
            theirs = peer.expect(Begin)
            peer.begin(0, remote_channel=theirs.channel, next_outgoing_id=0, incoming_window=100,
                       outgoing_window=100)
            after_begin(peer)

        url, script = scripted_broker(broker)
        client = connect(url)
        client.handshake(sasl=None)
        client.begin(0)
        client.expect(Begin)
        return client, script
    return start
