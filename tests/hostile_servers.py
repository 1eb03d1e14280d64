"""Hostile loopback servers for the suite's own tests: each accepts TCP connections on 127.0.0.1 and answers
in exactly one wrong way (not AMQP at all, an oversized frame after a valid header, ...).

`HostileServer(answer)` runs `answer(conn)` for every accepted connection in a thread of its own; leaving the
`with` block closes the listener and every connection. Only loopback, bounded by the tests' own timeouts.
"""

from __future__ import annotations

import socket
import threading
from typing import Callable

AMQP_HEADER = b"AMQP\x00\x01\x00\x00"


class HostileServer:
    def __init__(self, answer: Callable[[socket.socket], None]):
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.listener.settimeout(0.1)
        self.port = self.listener.getsockname()[1]
        self.url = f"amqp://127.0.0.1:{self.port}"
        self.answer = answer
        self.connections: list[socket.socket] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True, name="hostile-server")

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self.listener.accept()
            except OSError:
                continue
            self.connections.append(conn)
            threading.Thread(target=self._answer, args=(conn,), daemon=True).start()

    def _answer(self, conn: socket.socket) -> None:
        try:
            self.answer(conn)
        except OSError:
            pass

    def __enter__(self) -> "HostileServer":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join(timeout=2)
        for conn in self.connections:
            try:
                conn.close()
            except OSError:
                pass
        self.listener.close()


def http_400(conn: socket.socket) -> None:
    """What a web server says to bytes that are not HTTP: a 400 status line, then it closes."""
    conn.recv(64)
    conn.sendall(b"HTTP/1.0 400 Bad request syntax\r\nContent-Type: text/html\r\n\r\n<html>bad</html>\n")
    conn.shutdown(socket.SHUT_WR)


def http_400_after_eof(conn: socket.socket) -> None:
    """Like python3 -m http.server: reads a request line until newline or EOF, then answers 400."""
    data = b""
    conn.settimeout(10)
    while b"\n" not in data:
        chunk = conn.recv(1024)
        if not chunk:
            break
        data += chunk
    conn.sendall(b"HTTP/1.0 400 Bad request syntax ('AMQP')\r\n\r\n")
    conn.shutdown(socket.SHUT_WR)


def amqp_0_9_1(conn: socket.socket) -> None:
    """What an AMQP 0-9-1 broker (RabbitMQ without AMQP 1.0) says to any other protocol header: its own
    header, then it closes."""
    conn.recv(8)
    conn.sendall(b"AMQP\x00\x00\x09\x01")
    conn.shutdown(socket.SHUT_WR)


def frame_size(size: int) -> Callable[[socket.socket], None]:
    """The client's own protocol header echoed (SASL or AMQP: a valid answer), then a frame header whose SIZE
    is `size` (and nothing after it)."""
    def answer(conn: socket.socket) -> None:
        header = conn.recv(8)
        conn.sendall(header + size.to_bytes(4, "big") + b"\x02\x01\x00\x00")
        conn.settimeout(10)
        while conn.recv(1024):       # keep the connection open until the client goes
            pass
    return answer
