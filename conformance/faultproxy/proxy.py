"""The fault-injecting proxy's sockets and threads: a loopback AMQP 1.0 proxy between the scripted peer and a broker.

This module owns the I/O: a listening socket on 127.0.0.1, one upstream connection per accepted client,
a reader thread per direction and a writer thread per socket. Protocol headers and SASL frames pass
through byte for byte (nothing is decoded before the AMQP protocol header; a TLS header switches the
connection to a raw byte pipe). After the AMQP header every frame is decoded with our codec, handed to the
connection's `Mutation` (conformance.faultproxy.faults, sans-IO) and re-encoded. A frame our codec cannot
decode is forwarded as it came. Nothing the proxy sees is logged, so SASL credentials never leave it.

A `Transport` fault (issue #14) breaks the network instead of the protocol: `delay` holds every frame (and
header) for that long before it is written on, in both directions and in order (latency, not a slower
pipe); `reset` and `stall` fire at the trigger, the first frame the peer sends after the broker attached a
link (the case has set up its link and now acts): `reset` closes both sockets with a TCP reset (RST, what a
crashed middlebox or a dead host's router gives), `stall` forwards nothing any more in either direction and
leaves both sockets open (the broker stops reading; the peer's bytes vanish) until the peer closes.
"""

from __future__ import annotations

import queue
import socket
import struct
import threading
import time
from dataclasses import dataclass

from ..catalogue import faults as fault_catalogue
from ..options import RunOptions
from ..wire import Attach, DecodeError, EncodeError, decode_frame, encode_frame
from .faults import Mutation, mutation_for

_CLOSE = object()   # writer: flush, then half-close (the other side ended its stream)
_DROP = object()    # writer: flush, then drop (a fault dropped the connection: FIN to the peer, cut the broker)


@dataclass(frozen=True)
class Transport:
    """A fault of the network between the peer and the broker (names and expectations: the fault catalogue,
    conformance.catalogue.faults)."""

    name: str
    delay: float = 0.0          # seconds each frame is held before it is written on (both directions)
    reset: bool = False         # at the trigger: TCP reset on both sockets
    stall: bool = False         # from the trigger on: nothing forwarded, sockets left open

    @property
    def fires(self) -> bool:
        """The fault acts at a trigger (reset, stall) rather than on every frame (delay)."""
        return self.reset or self.stall


def transport_for(name: str) -> Transport:
    """The Transport of the fault catalogue's transport fault `name` (KeyError for any other name)."""
    entry = fault_catalogue.get(name)
    if entry.kind != "transport":
        raise KeyError(f"{name} is not a transport fault")
    return Transport(entry.name, delay=entry.delay, reset=entry.reset, stall=entry.stall)


@dataclass
class ProxyStats:
    """Counters of one connection; `MutantProxy.stats` sums them over every connection."""

    connections: int = 0
    frames: int = 0            # AMQP frames decoded and handed to the mutation
    identical: int = 0         # frames forwarded unchanged whose re-encoding equals the received bytes
    reencoded_differently: int = 0   # unchanged frames whose re-encoding differs from the received bytes
    passthrough: int = 0       # headers, SASL frames, heartbeats and undecodable frames forwarded verbatim
    rewritten: int = 0         # frames the fault changed, added or removed
    drops: int = 0
    errors: int = 0            # a fault raised (a bug in the fault): the connection was cut
    resets: int = 0            # transport fault: connections reset at the trigger
    stalls: int = 0            # transport fault: connections stalled at the trigger


class _Splitter:
    """Splits one direction's byte stream into protocol headers, SASL frames (verbatim) and AMQP frames."""

    def __init__(self):
        self.buf = bytearray()
        self.offset = 0
        self.mode = "preamble"      # -> "amqp" after the AMQP header, "raw" after a TLS header or bad framing

    def feed(self, data: bytes) -> list:
        """Items: ("raw", bytes) to forward verbatim, ("frame", raw bytes, offset) to decode."""
        if self.mode == "raw":
            return [("raw", bytes(data))] if data else []
        self.buf += data
        items = []
        buf = self.buf
        pos = 0
        while len(buf) - pos >= 8:
            if buf[pos:pos + 4] == b"AMQP":
                header = bytes(buf[pos:pos + 8])
                items.append(("raw", header))
                pos += 8
                if header[4] == 0:
                    self.mode = "amqp"
                elif header[4] == 2:
                    self.mode = "raw"
                    break
                continue
            size = int.from_bytes(buf[pos:pos + 4], "big")
            if size < 8:
                self.mode = "raw"
                break
            if len(buf) - pos < size:
                break
            raw = bytes(buf[pos:pos + size])
            items.append(("frame" if self.mode == "amqp" else "raw", raw, self.offset + pos))
            pos += size
        if self.mode == "raw":
            if pos < len(buf):
                items.append(("raw", bytes(buf[pos:])))
            pos = len(buf)
        del buf[:pos]
        self.offset += pos
        return items


class _Writer:
    """One socket's outgoing bytes, written in order by its own thread (readers never block on a send)."""

    def __init__(self, sock: socket.socket, on_drop, on_error, delay: float = 0.0):
        self.sock = sock
        self.delay = delay
        self.queue: queue.SimpleQueue = queue.SimpleQueue()
        self.on_drop = on_drop
        self.on_error = on_error
        self.thread = threading.Thread(target=self._run, name="mutant-proxy-writer", daemon=True)
        self.thread.start()

    def put(self, item) -> None:
        self.queue.put((time.monotonic() + self.delay, item))

    def _run(self) -> None:
        while True:
            due, item = self.queue.get()
            wait = due - time.monotonic()
            if wait > 0:
                time.sleep(wait)  # bounded-wait-ok: the transport fault's deliberate per-frame delay (<= delay)
            if item is _CLOSE:
                _quietly(lambda: self.sock.shutdown(socket.SHUT_WR))
                return
            if item is _DROP:
                self.on_drop()
                return
            try:
                self.sock.sendall(item)
            except OSError:
                self.on_error()
                return


class _Connection:
    """One proxied connection: peer socket, broker socket, the mutation between them."""

    def __init__(self, proxy: "MutantProxy", peer_sock: socket.socket, broker_sock: socket.socket):
        self.proxy = proxy
        self.peer_sock = peer_sock
        self.broker_sock = broker_sock
        self.mutation: Mutation = proxy.mutation_class()
        self.transport: Transport | None = proxy.transport
        self.stats = ProxyStats(connections=1)
        self.lock = threading.Lock()
        self.dropped = False
        self.stalled = False
        self.attached = False       # the broker attached a link: the next frame from the peer is the trigger
        # a dropped connection: the peer gets a clean end of stream (what a broker closing its socket gives;
        # the proxy reads and discards whatever the peer still sends), the broker loses its socket at once
        delay = self.transport.delay if self.transport is not None else 0.0
        self.to_peer = _Writer(peer_sock, lambda: _quietly(lambda: peer_sock.shutdown(socket.SHUT_WR)), self.cut,
                               delay)
        self.to_broker = _Writer(broker_sock, lambda: _close_hard(broker_sock), self.cut, delay)
        self.threads = [threading.Thread(target=self._pump, args=(peer_sock, True), daemon=True,
                                         name="mutant-proxy-from-peer"),
                        threading.Thread(target=self._pump, args=(broker_sock, False), daemon=True,
                                         name="mutant-proxy-from-broker")]
        for t in self.threads:
            t.start()

    def cut(self) -> None:
        """Close both sockets at once (a socket error, or the proxy stopping)."""
        self.dropped = True
        for sock in (self.peer_sock, self.broker_sock):
            _close_hard(sock)

    def _fire(self) -> None:
        """The transport fault at its trigger (called with the lock held)."""
        if self.transport.reset:
            self.stats.resets += 1
            self.proxy.note_transport_event()
            self.dropped = True
            for sock in (self.peer_sock, self.broker_sock):
                _reset(sock)
        else:
            self.stats.stalls += 1
            self.proxy.note_transport_event()
            self.stalled = True

    def _pump(self, src: socket.socket, from_peer: bool) -> None:
        splitter = _Splitter()
        same = self.to_broker if from_peer else self.to_peer
        other = self.to_peer if from_peer else self.to_broker
        stats = self.stats
        while True:
            try:
                data = src.recv(65536)
            except OSError:
                data = b""
            if not data:
                if self.dropped:
                    _quietly(src.close)
                elif self.stalled:
                    self.cut()          # the peer gave up on the stalled connection: let the broker go too
                else:
                    same.put(_CLOSE)
                return
            forward: list[bytes] = []
            back: list[bytes] = []
            drop = False
            with self.lock:
                if self.dropped:
                    if from_peer:
                        continue      # discarded until the peer closes its end
                    return
                if self.stalled:
                    continue          # a stalled connection forwards nothing, in either direction
                for item in splitter.feed(data):
                    if item[0] == "raw":
                        forward.append(item[1])
                        stats.passthrough += 1
                        continue
                    raw = item[1]
                    try:
                        frame = decode_frame(raw, item[2])
                    except DecodeError:
                        forward.append(raw)
                        stats.passthrough += 1
                        continue
                    if frame.body is None:          # heartbeat
                        forward.append(raw)
                        stats.passthrough += 1
                        continue
                    stats.frames += 1
                    if self.transport is not None and self.transport.fires:
                        if not from_peer and isinstance(frame.body, Attach):
                            self.attached = True
                        elif from_peer and self.attached:
                            self._fire()
                            break
                    try:
                        out = self.mutation.from_peer(frame) if from_peer else self.mutation.from_broker(frame)
                    except Exception as exc:      # a bug in a fault: never forward a half-rewritten stream
                        stats.errors += 1
                        self.proxy.last_error = f"{type(exc).__name__}: {exc}"
                        self.cut()
                        return
                    ahead, behind = (out.to_broker, out.to_peer) if from_peer else (out.to_peer, out.to_broker)
                    if out.drop:
                        stats.drops += 1
                        drop = True
                        break
                    if len(ahead) != 1 or ahead[0] is not frame or behind:
                        stats.rewritten += 1
                    for f in ahead:
                        forward.append(self._encode(f, raw if f is frame else None))
                    for f in behind:
                        back.append(self._encode(f, None))
                if self.dropped and not drop:   # reset at the trigger: nothing more to write
                    return
                if drop:
                    self.dropped = True
                if forward:
                    same.put(b"".join(forward))
                if back:
                    other.put(b"".join(back))
                if drop:
                    same.put(_DROP)
                    other.put(_DROP)
                    if not from_peer:
                        return

    def _encode(self, frame, received: bytes | None) -> bytes:
        stats = self.stats
        try:
            data = encode_frame(frame.body, frame.channel, frame.payload, frame.frame_type, validate=False)
        except EncodeError:
            if received is None:
                raise
            stats.passthrough += 1
            return received
        if received is not None:
            if data == received:
                stats.identical += 1
            else:
                stats.reencoded_differently += 1
        return data

    def close(self) -> None:
        self.cut()
        for w in (self.to_peer, self.to_broker):
            w.put(_CLOSE)


class MutantProxy:
    """`with MutantProxy("127.0.0.1", 5672, fault="drain-stripped") as proxy: ... proxy.port ...`

    Listens on 127.0.0.1 (a free port unless given); each accepted connection gets its own upstream
    connection to (host, port) and a fresh Mutation of the fault (None / "none": transparent); `transport`
    adds a fault of the network (delay, reset, stall) to every connection; `connect_timeout` (default the
    run's, RunOptions.connect_timeout) bounds each upstream connect."""

    def __init__(self, host: str, port: int, fault: str | None = None, *, transport: Transport | None = None,
                 listen_port: int = 0, connect_timeout: float | None = None):
        self.upstream = (host, port)
        self.fault = fault or "none"
        self.mutation_class = mutation_for(fault)
        self.transport = transport
        self.transport_events = 0               # resets / stalls fired so far (over every connection)
        self.listen_port = listen_port
        self.connect_timeout = RunOptions().connect_timeout if connect_timeout is None else connect_timeout
        self.connections: list[_Connection] = []
        self._finished: list[_Connection] = []
        self._listener: socket.socket | None = None
        self._accepter: threading.Thread | None = None
        self._stopping = threading.Event()
        self._lock = threading.Lock()
        self.port = 0
        self.last_error: str | None = None     # what the last failing fault raised (no frame content)

    def note_transport_event(self) -> None:
        with self._lock:
            self.transport_events += 1

    def start(self) -> "MutantProxy":
        self._listener = socket.create_server(("127.0.0.1", self.listen_port))
        self.port = self._listener.getsockname()[1]
        self._accepter = threading.Thread(target=self._accept_loop, name="mutant-proxy-accept", daemon=True)
        self._accepter.start()
        return self

    def _accept_loop(self) -> None:
        while not self._stopping.is_set():
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            if self._stopping.is_set():
                _quietly(client.close)
                return
            try:
                upstream = socket.create_connection(self.upstream, timeout=self.connect_timeout)
            except OSError:
                _quietly(client.close)        # the peer sees the refusal as a closed connection
                continue
            for sock in (client, upstream):
                sock.settimeout(None)
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            with self._lock:
                self.connections.append(_Connection(self, client, upstream))

    def stop(self) -> None:
        self._stopping.set()
        if self._listener is not None:
            _quietly(lambda: self._listener.shutdown(socket.SHUT_RDWR))
            _quietly(self._listener.close)
        with self._lock:
            conns, self.connections = self.connections, []
            self._finished += conns
        for c in conns:
            c.close()
        if self._accepter is not None:
            self._accepter.join(timeout=2.0)     # bounded: the listener is closed, accept returns at once

    def __enter__(self) -> "MutantProxy":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    @property
    def stats(self) -> ProxyStats:
        """Counters summed over every connection so far."""
        total = ProxyStats()
        with self._lock:
            conns = self._finished + self.connections
        for c in conns:
            for name in ProxyStats.__dataclass_fields__:
                setattr(total, name, getattr(total, name) + getattr(c.stats, name))
        return total

    @property
    def address(self) -> tuple[str, int]:
        return ("127.0.0.1", self.port)


def _reset(sock: socket.socket) -> None:
    """Close with a TCP reset (RST) instead of an orderly FIN: linger on with timeout zero; SHUT_RD first
    wakes a reader thread blocked on the socket (it sends nothing), so the close really happens."""
    _quietly(lambda: sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0)))
    _quietly(lambda: sock.shutdown(socket.SHUT_RD))
    _quietly(sock.close)


def _close_hard(sock: socket.socket) -> None:
    _quietly(lambda: sock.shutdown(socket.SHUT_RDWR))
    _quietly(sock.close)


def _quietly(step) -> None:
    try:
        step()
    except OSError:
        pass
