"""The peer's transport: one socket (plain or TLS), the reader thread, heartbeats, and how the connection ended.

This module owns every byte that crosses the socket and every thread of a peer. It knows nothing about
frames: the reader hands each chunk of bytes to `on_data` and, when the stream ends, calls `on_end` once with
how it ended (FIN: the other side closed its end; RESET: TCP RST; SOCKET_ERROR: anything else). Writes are
serialised by one lock; a failed write raises OSError for the caller to describe.
"""

from __future__ import annotations

import socket
import threading
from typing import Callable

from .errors import FIN, RESET, SOCKET_ERROR

RECV_SIZE = 1 << 18    # bytes asked for per read: a backlog of many frames is taken in one read


class Transport:
    def __init__(self, sock, *, name: str, on_data: Callable[[bytes], bool], on_end: Callable[[str | None], None]):
        """`on_data(bytes)` returns False to stop reading (the input was malformed); `on_end(how)` gets None
        when we closed the connection ourselves."""
        self.sock = sock
        self.name = name
        self._on_data = on_data
        self._on_end = on_end
        self._send_lock = threading.Lock()
        self._stopping = threading.Event()
        self._heartbeat_thread: threading.Thread | None = None
        self._reader = threading.Thread(target=self._read_loop, name=f"{name}-reader", daemon=True)

    def start(self) -> None:
        self._reader.start()

    @property
    def stopping(self) -> bool:
        return self._stopping.is_set()

    # -- writing -------------------------------------------------------------------------------------------

    def write(self, raw: bytes, before: Callable[[], None] | None = None) -> None:
        """Send `raw` whole; `before()` runs under the send lock first (the transcript records in send order)."""
        with self._send_lock:
            if before is not None:
                before()
            self.sock.sendall(raw)

    def half_close(self) -> None:
        """Stop sending (TCP FIN) but keep reading: some servers answer only once the request has ended."""
        try:
            self.sock.shutdown(socket.SHUT_WR)
        except OSError:
            pass

    # -- heartbeats ----------------------------------------------------------------------------------------

    def start_heartbeats(self, interval: float, beat: Callable[[], bool]) -> bool:
        """Call `beat()` every `interval` seconds until it returns False or the transport closes."""
        if self._heartbeat_thread is not None:
            return True
        self._heartbeat_thread = threading.Thread(target=self._heartbeat_loop, args=(interval, beat),
                                                  name=f"{self.name}-heartbeat", daemon=True)
        self._heartbeat_thread.start()
        return True

    def _heartbeat_loop(self, interval: float, beat: Callable[[], bool]) -> None:
        while not self._stopping.wait(interval):   # the stop event doubles as the bounded interval
            if not beat():
                return

    # -- reading -------------------------------------------------------------------------------------------

    def _read_loop(self) -> None:
        how: str | None = None
        recv = self._recv_function()
        while not self._stopping.is_set():
            try:
                data = recv()
            except ConnectionResetError:
                how, data = RESET, b""
            except (OSError, ValueError):
                how, data = SOCKET_ERROR, b""
            if not data:
                self._on_end(None if self._stopping.is_set() else (how or FIN))
                return
            if not self._on_data(data):
                return

    def _recv_function(self) -> Callable[[], bytes]:
        """One read of whatever has arrived, up to RECV_SIZE bytes: into one buffer allocated once (a
        fresh buffer that large per read would be mapped and unmapped by the allocator every time), then
        copied out at its length. A TLS stream reads its own way."""
        sock = self.sock
        if not isinstance(sock, socket.socket):
            return lambda: sock.recv(RECV_SIZE)
        buf = bytearray(RECV_SIZE)
        view = memoryview(buf)
        recv_into = sock.recv_into

        def recv() -> bytes:
            return bytes(view[:recv_into(buf)])
        return recv

    # -- ending --------------------------------------------------------------------------------------------

    def close(self) -> None:
        """Drop the socket and wait (bounded) for the threads: the socket is closed, they end at once."""
        self._stopping.set()
        for step in (lambda: self.sock.shutdown(socket.SHUT_RDWR), self.sock.close):
            try:
                step()
            except OSError:
                pass
        for thread in (self._reader, self._heartbeat_thread):
            if thread is not None and thread.is_alive() and thread is not threading.current_thread():
                thread.join(timeout=2.0)
