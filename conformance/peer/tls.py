"""TLS for the peer over memory BIOs, so that one thread may read while another writes.

An `ssl.SSLSocket` must not be read and written from two threads at once (OpenSSL forbids concurrent use
of one SSL object), yet the peer's reader thread blocks in recv while the script sends. Here the socket
stays plain; a lock guards the `ssl.SSLObject`, and nobody holds it while blocked on the socket.
This module owns only the TLS layer: no AMQP, no frames.
"""

from __future__ import annotations

import socket
import ssl
import threading
import time


class TlsStream:
    """A TLS connection with the socket-like methods the peer uses: recv, sendall, shutdown, close, version."""

    def __init__(self, sock: socket.socket, context: ssl.SSLContext, *, server_side: bool,
                 server_hostname: str | None = None):
        self.sock = sock
        self._incoming = ssl.MemoryBIO()
        self._outgoing = ssl.MemoryBIO()
        self._tls = context.wrap_bio(self._incoming, self._outgoing, server_side=server_side,
                                     server_hostname=server_hostname)
        self._lock = threading.Lock()

    def handshake(self, timeout: float) -> None:
        """Complete the TLS handshake within `timeout` seconds (ssl.SSLError or OSError otherwise)."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                self._tls.do_handshake()
                self._flush()
                return
            except ssl.SSLWantReadError:
                self._flush()
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"TLS handshake not complete within {timeout:.1f} s")
            self.sock.settimeout(left)
            try:
                data = self.sock.recv(65536)
            finally:
                self.sock.settimeout(None)
            if not data:
                raise ConnectionResetError("the other side closed the connection during the TLS handshake")
            self._incoming.write(data)

    def _flush(self) -> None:
        data = self._outgoing.read()
        if data:
            self.sock.sendall(data)

    def sendall(self, data: bytes) -> None:
        with self._lock:
            view = memoryview(data)
            while view:
                written = self._tls.write(view)
                view = view[written:]
            self._flush()

    def recv(self, size: int) -> bytes:
        """Decrypted bytes; b"" when the other side closed (cleanly or not)."""
        while True:
            with self._lock:
                try:
                    data = self._tls.read(size)
                    self._flush()
                    return data
                except ssl.SSLWantReadError:
                    self._flush()          # e.g. a TLS 1.3 key update answer
                except (ssl.SSLZeroReturnError, ssl.SSLEOFError):
                    return b""
            raw = self.sock.recv(65536)    # blocking, without the lock
            if not raw:
                return b""
            with self._lock:
                self._incoming.write(raw)

    def version(self) -> str | None:
        return self._tls.version()

    def shutdown(self, how: int) -> None:
        self.sock.shutdown(how)

    def close(self) -> None:
        self.sock.close()
