"""The peer's transport: one socket (plain or TLS), the reader thread, heartbeats, and how the connection ended.

This module owns every byte that crosses the socket and every thread of a peer. It knows nothing about
frames: each chunk of bytes read goes to `on_data` and, when the stream ends, `on_end` is called once with
how it ended (FIN: the other side closed its end; RESET: TCP RST; SOCKET_ERROR: anything else). Writes are
serialised by one lock; a failed write raises OSError for the caller to describe.

Who reads: one read lock makes reading, and handing the chunk on, one step at a time, so chunks reach
`on_data` in stream order whoever read them. A thread waiting for input (the script, in an expectation)
reads the socket itself with `read_here` (plain sockets): no hand-off from another thread per read. The
reader thread reads everything else, as it always did: input that comes while nobody waits is taken and
recorded at once, except within HOLD_OFF (5 ms) of a waiter's last read and until the script next sends
(a script between two expectations of a stream: the next expectation reads it). The end of the stream
(FIN, reset, error) is taken at once in every case. A TLS stream is read by the reader thread only.
"""

from __future__ import annotations

import select
import socket
import threading
import time
from typing import Callable

from .errors import FIN, RESET, SOCKET_ERROR

RECV_SIZE = 1 << 18    # bytes asked for per read: a backlog of many frames is taken in one read
HOLD_OFF = 0.005       # seconds the reader thread leaves input to a waiter that has just read (the GIL's
                       # switch interval: a busy script delayed the old reader thread up to as long)
_ENDED = select.POLLRDHUP | select.POLLERR | select.POLLHUP | select.POLLNVAL
_READABLE = select.POLLIN | _ENDED
_NEVER = float("-inf")


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
        self._read_lock = threading.Lock()   # held while one chunk is read and handed to on_data
        self._done = False                   # the stream ended or on_data refused: nobody reads again
        self._waiter_read_at = _NEVER        # monotonic time a waiter last read (read_here); _NEVER once we send
        self._wake = threading.Event()       # ends the reader thread's hold-off early (a send, close)
        self.direct = isinstance(sock, socket.socket)   # a waiter may read itself (not TLS)
        self._recv = self._recv_function()
        self._reader = threading.Thread(target=self._read_loop, name=f"{name}-reader", daemon=True)

    def start(self) -> None:
        self._reader.start()

    @property
    def stopping(self) -> bool:
        return self._stopping.is_set()

    # -- writing -------------------------------------------------------------------------------------------

    def write(self, raw: bytes, before: Callable[[], None] | None = None) -> None:
        """Send `raw` whole; `before()` runs under the send lock first (the transcript records in send order)."""
        if self._waiter_read_at is not _NEVER:   # a script that sends is not between two expectations:
            self._waiter_read_at = _NEVER          # what comes now is taken at once, as before
            self._wake.set()
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

    def reading(self):
        """The read lock as a context manager: no chunk is read and handed on while it is held (the peer
        arms and releases a hold of its reads under it, so frames stay in stream order)."""
        return self._read_lock

    def read_here(self, timeout: float) -> bool:
        """For a thread waiting for input: read one chunk on this thread, waiting up to `timeout` seconds for
        it, and hand it to `on_data` (or the end to `on_end`) before returning. False when this thread cannot
        read (TLS, reading has ended, or another thread is reading now): then the reader thread delivers."""
        if not self.direct or self._done or not self._read_lock.acquire(blocking=False):
            return False
        try:
            self._waiter_read_at = time.monotonic()
            if self._done or self._stopping.is_set():
                return False
            self._read_one(timeout)
            self._waiter_read_at = time.monotonic()
            return True
        finally:
            self._read_lock.release()

    def _read_loop(self) -> None:
        if not self.direct:
            while not self._done and not self._stopping.is_set():
                with self._read_lock:
                    self._read_one(None)
            return
        poller = select.poll()
        poller.register(self.sock, _READABLE)
        while not self._done and not self._stopping.is_set():
            try:
                events = poller.poll()   # unbounded: close() shuts the socket down, which wakes it
            except (OSError, ValueError):
                events = [(0, select.POLLERR)]
            ended = any(ev & _ENDED for _, ev in events)
            idle = time.monotonic() - self._waiter_read_at
            if not ended and idle < HOLD_OFF:   # a waiter is taking the input: look again when it may have stopped
                self._wake.wait(HOLD_OFF - idle)   # bounded-wait-ok: the hold-off, at most HOLD_OFF
                self._wake.clear()
                continue
            with self._read_lock:
                if self._done or self._stopping.is_set():
                    return
                self._read_one(0.0)    # a waiter may have drained it meanwhile: then nothing is read

    def _read_one(self, timeout: float | None) -> bool:
        """Under the read lock: one read (timeout None: block; else wait up to `timeout` s for input), handed
        on. Returns whether anything (bytes or the end) was handed on."""
        how: str | None = None
        try:
            data = self._recv(timeout)
        except ConnectionResetError:
            how, data = RESET, b""
        except (OSError, ValueError):
            how, data = SOCKET_ERROR, b""
        if data is None:
            return False
        if not data:
            self._done = True
            self._on_end(None if self._stopping.is_set() else (how or FIN))
        elif not self._on_data(data):
            self._done = True
        return True

    def _recv_function(self) -> Callable[[float | None], bytes | None]:
        """One read of whatever has arrived, up to RECV_SIZE bytes (None: nothing arrived within the
        timeout): into one buffer allocated once (a fresh buffer that large per read would be mapped and
        unmapped by the allocator every time), then copied out at its length. A TLS stream reads its own
        way (blocking)."""
        sock = self.sock
        if not isinstance(sock, socket.socket):
            return lambda timeout: sock.recv(RECV_SIZE)
        buf = bytearray(RECV_SIZE)
        view = memoryview(buf)
        recv_into = sock.recv_into
        dontwait = socket.MSG_DONTWAIT
        poller = select.poll()
        poller.register(sock, _READABLE)

        def recv(timeout: float | None) -> bytes | None:
            if timeout is None:
                return bytes(view[:recv_into(buf)])
            if timeout > 0 and not poller.poll(int(timeout * 1000.0 + 0.999)):   # at once if readable
                return None                 # (timeout 0: the reader thread, which has just polled)
            try:
                return bytes(view[:recv_into(buf, 0, dontwait)])
            except BlockingIOError:       # readable, yet nothing to read (spurious wake-up)
                return None
        return recv

    # -- ending --------------------------------------------------------------------------------------------

    def close(self) -> None:
        """Drop the socket and wait (bounded) for the threads: the socket is closed, they end at once."""
        self._stopping.set()
        self._wake.set()
        for step in (lambda: self.sock.shutdown(socket.SHUT_RDWR), self.sock.close):
            try:
                step()
            except OSError:
                pass
        for thread in (self._reader, self._heartbeat_thread):
            if thread is not None and thread.is_alive() and thread is not threading.current_thread():
                thread.join(timeout=2.0)
