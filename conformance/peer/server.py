"""The peer in the server role: accept a connection on loopback and script the broker's side.

The suite's own tests use it to stand in for a broker that misbehaves in exactly one way. The accepted
connection is an ordinary `Peer` (same script API, same transcript); `server_handshake()` plays the
broker's half of header / SASL / open (handshake.py). Like the client role it never sends a frame on its own, except
heartbeats when the client's open asked for an idle-time-out.
"""

from __future__ import annotations

import socket
import ssl
from dataclasses import dataclass

from ..errors import PortInUse
from .connection import Peer, Timeouts
from .errors import ExpectationTimeout
from .tls import TlsStream
from .transcript import Transcript


@dataclass(frozen=True)
class ServerTLS:
    """Certificate and key (PEM files) for a scripted broker that speaks TLS (`amqps://`)."""
    cert_file: str
    key_file: str

    def context(self) -> ssl.SSLContext:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(self.cert_file, self.key_file)
        return ctx


class PeerServer:
    """A listening socket on 127.0.0.1 (port 0: any free port). `accept()` returns the next client as a Peer.
    With `tls`, every accepted connection is wrapped in TLS first (clients use `amqps://`)."""

    def __init__(self, host: str = "127.0.0.1", port: int = 0, *, timeouts: Timeouts | None = None,
                 tls: ServerTLS | None = None):
        try:
            self.listener = socket.create_server((host, port))
        except OSError as exc:
            raise PortInUse(f"cannot listen on {host}:{port} ({exc.strerror or exc}); choose another port "
                            "or port 0 for any free one") from None
        self.host, self.port = self.listener.getsockname()[:2]
        self.timeouts = timeouts or Timeouts()
        self.tls = tls
        self._tls_context = tls.context() if tls is not None else None
        self.accepted: list[Peer] = []

    @property
    def url(self) -> str:
        return f"{'amqps' if self.tls else 'amqp'}://{self.host}:{self.port}"

    def accept(self, timeout: float | None = None, *, container_id: str = "scripted-broker") -> Peer:
        """Wait (bounded by `timeout`, default the connect timeout) for one client connection."""
        wait = self.timeouts.connect if timeout is None else timeout
        self.listener.settimeout(wait)
        try:
            sock, _ = self.listener.accept()
        except (socket.timeout, TimeoutError):
            raise ExpectationTimeout(f"a client connection on {self.host}:{self.port}", wait, []) from None
        sock.settimeout(None)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        if self._tls_context is not None:
            stream = TlsStream(sock, self._tls_context, server_side=True)
            try:
                stream.handshake(wait)
            except (ssl.SSLError, OSError) as exc:
                sock.close()
                raise ExpectationTimeout(f"a TLS handshake from the client ({exc})", wait, []) from None
            sock = stream
        peer = Peer(sock, timeouts=self.timeouts, transcript=Transcript(label="client"), role="server",
                    container_id=container_id)
        self.accepted.append(peer)
        return peer

    def close(self) -> None:
        """Stop listening and drop every accepted connection."""
        for peer in self.accepted:
            peer.disconnect()
        try:
            self.listener.close()
        except OSError:
            pass

    def __enter__(self) -> "PeerServer":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
