"""The peer in the server role: accept a connection on loopback and script the broker's side.

The suite's own tests use it to stand in for a broker that misbehaves in exactly one way. Same script API
as the client (`Peer`), plus `server_handshake()` for the broker's half of header/SASL/open.
"""

from __future__ import annotations

import socket

from ..wire import AMQP_HEADER, SASL_HEADER, Open, SaslInit, SaslMechanisms, SaslOutcome, Symbol
from ..wire.frames import SASL_FRAME
from .connection import Peer, Timeouts
from .errors import ExpectationTimeout
from .transcript import Transcript


class PeerServer:
    def __init__(self, host: str = "127.0.0.1", port: int = 0, *, timeouts: Timeouts | None = None):
        self.listener = socket.create_server((host, port))
        self.host, self.port = self.listener.getsockname()[:2]
        self.timeouts = timeouts or Timeouts()

    @property
    def url(self) -> str:
        return f"amqp://{self.host}:{self.port}"

    def accept(self, timeout: float | None = None) -> Peer:
        wait = self.timeouts.connect if timeout is None else timeout
        self.listener.settimeout(wait)
        try:
            sock, _ = self.listener.accept()
        except (socket.timeout, TimeoutError):
            raise ExpectationTimeout("a client connection", wait, []) from None
        sock.settimeout(None)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return Peer(sock, timeouts=self.timeouts, transcript=Transcript(label="client"), role="server")

    def close(self) -> None:
        try:
            self.listener.close()
        except OSError:
            pass

    def __enter__(self) -> "PeerServer":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def server_handshake(peer: Peer, *, container_id: str = "scripted-broker", mechanisms=("ANONYMOUS", "PLAIN"),
                     sasl_code: int = 0, **open_fields) -> Open:
    """The broker's half: answer the client's headers, SASL and open. Returns the client's open."""
    header = peer.expect_header()
    if header.protocol_id == 3:
        peer.send_header(SASL_HEADER)
        peer.send(SaslMechanisms(sasl_server_mechanisms=[Symbol(m) for m in mechanisms]), frame_type=SASL_FRAME)
        peer.expect(SaslInit)
        peer.send(SaslOutcome(code=sasl_code), frame_type=SASL_FRAME)
        if sasl_code != 0:
            return None
        header = peer.expect_header()
    peer.send_header(AMQP_HEADER)
    client_open = peer.expect(Open).body
    peer.send(Open(container_id=container_id, **open_fields))
    peer.remote_open = client_open
    return client_open
