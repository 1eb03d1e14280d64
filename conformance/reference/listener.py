"""Runs the reference broker engine on a loopback socket (one thread per connection).

This module owns the fake broker's sockets and threads; all protocol behaviour is in `engine`. Used by the
suite's own tests as a broker that behaves (or misbehaves, with `Faults`) exactly as configured.
"""

from __future__ import annotations

import socket
import threading

from .broker import BrokerConfig, BrokerConnection, BrokerState, Faults


class ReferenceBroker:
    """`with ReferenceBroker(faults=Faults(ignore_drain=True)) as broker: ... broker.url ...`"""

    def __init__(self, config: BrokerConfig | None = None, faults: Faults | None = None):
        self.state = BrokerState(config, faults)
        self._lock = threading.RLock()
        self._listener: socket.socket | None = None
        self._sockets: dict[BrokerConnection, socket.socket] = {}
        self._threads: list[threading.Thread] = []
        self._stopping = threading.Event()
        self.port = 0

    # -- lifecycle ---------------------------------------------------------------------------------------

    def start(self, port: int = 0) -> "ReferenceBroker":
        self._listener = socket.create_server(("127.0.0.1", port))
        self._listener.settimeout(0.2)
        self.port = self._listener.getsockname()[1]
        t = threading.Thread(target=self._accept_loop, name="reference-broker-accept", daemon=True)
        t.start()
        self._threads.append(t)
        return self

    def stop(self) -> None:
        self._stopping.set()
        with self._lock:
            for sock in self._sockets.values():
                _close(sock)
            self._sockets.clear()
        if self._listener is not None:
            _close(self._listener)
        for t in self._threads:
            t.join(timeout=2.0)

    def __enter__(self) -> "ReferenceBroker":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    @property
    def url(self) -> str:
        return f"amqp://127.0.0.1:{self.port}"

    # -- broker-wide controls (what profile hooks do on a real broker) -----------------------------------

    def preload(self, queue: str, bodies) -> None:
        with self._lock:
            q = self.state.queue(queue)
            q.messages.extend(bodies)
            self._pump_everything()

    def queue_depth(self, queue: str) -> int:
        with self._lock:
            return len(self.state.queue(queue).messages)

    def set_queue_limit(self, queue: str, max_length: int | None) -> None:
        with self._lock:
            self.state.queue(queue).max_length = max_length

    def set_alarm(self, on: bool) -> None:
        with self._lock:
            self.state.alarm = on
            for conn in list(self._sockets):
                conn.set_alarm(on)
            self._pump_everything()

    # -- internals ---------------------------------------------------------------------------------------

    def _accept_loop(self) -> None:
        while not self._stopping.is_set():
            try:
                sock, _ = self._listener.accept()
            except (socket.timeout, TimeoutError):
                continue
            except OSError:
                return
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            conn = BrokerConnection(self.state)
            with self._lock:
                self.state.connections.append(conn)
                self._sockets[conn] = sock
            t = threading.Thread(target=self._serve, args=(conn, sock), name="reference-broker-conn", daemon=True)
            t.start()
            self._threads.append(t)

    def _serve(self, conn: BrokerConnection, sock: socket.socket) -> None:
        sock.settimeout(0.2)
        while not self._stopping.is_set():
            try:
                data = sock.recv(65536)
            except (socket.timeout, TimeoutError):
                continue
            except OSError:
                break
            if not data:
                break
            with self._lock:
                self._send_bytes(conn, conn.receive(data))
                self._pump_everything()
                if conn.closed:
                    break
        with self._lock:
            self._flush(conn)
            self._sockets.pop(conn, None)
            if conn in self.state.connections:
                self.state.connections.remove(conn)
        _close(sock)

    def _pump_everything(self) -> None:
        for conn in list(self._sockets):
            if not conn.closed:
                conn.queue_drained()
                conn.pump_all()
            self._flush(conn)

    def _send_bytes(self, conn: BrokerConnection, data: bytes) -> None:
        sock = self._sockets.get(conn)
        if data and sock is not None:
            try:
                sock.sendall(data)
            except OSError:
                pass

    def _flush(self, conn: BrokerConnection) -> None:
        self._send_bytes(conn, conn.take())
        sock = self._sockets.get(conn)
        if conn.closed and sock is not None:
            try:
                sock.shutdown(socket.SHUT_WR)
            except OSError:
                pass


def _close(sock: socket.socket) -> None:
    try:
        sock.close()
    except OSError:
        pass
