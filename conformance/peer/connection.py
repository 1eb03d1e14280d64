"""The scripted peer: one AMQP connection over a real socket, driven frame by frame by a script.

This module owns the `Peer` a script talks to and the frames it builds: `send` sends exactly what it is
given, the performative helpers (`begin`, `flow`, `transfer`, ...) fill session fields from the tracked state
unless a field is given. The rest of a peer lives beside it, one concern each: `transport` (the socket, the
reader thread, heartbeats, how the connection ended), `inbound` (bytes to frames, sans-IO, with the limits we
put on the other side), `expectations` (the inbox and the bounded, named waits) and `handshake` (header,
SASL and open, client and server role). A script decides every frame that goes out; the peer itself only
ever sends heartbeats (empty frames) when the other side announced an idle-time-out, and records those in
the transcript too.

The peer stops at the other side's close or end (2.4.3: a close "MUST be the last thing ever written onto a
connection"; 2.5.x: an ended session takes no more frames): after the other side's close, `send` sends at
most our own close; after its end of a session, at most our end on that channel; after our own close,
nothing. A frame a script would send beyond that is not sent: it is recorded in `skipped` (a one-line
summary each) and returned unsent; after a close the script's next expectation ends at once.
"""

from __future__ import annotations

import socket
import ssl
import threading
from collections import deque
from dataclasses import dataclass
from typing import Any, Callable

from ..options import DEFAULTS
from ..wire import (
    AMQP_HEADER, Accepted, Attach, Begin, Close, Detach, Disposition, End, Error, Flow, Frame, Open,
    ProtocolHeader, SaslInit, Source, Symbol, Target, Transfer, encode_frame, heartbeat,
)
from ..wire.frames import AMQP_FRAME, SASL_FRAME
from .errors import (
    CLOSE_FRAME, FIN, RESET, ConnectFailed, ConnectionLost, MalformedInput, NotAmqp,
)
from .expectations import Expectations
from .handshake import client_handshake, server_handshake
from .hold import ReadHold
from .inbound import Inbound
from .ladder import summarize
from .state import PeerState
from .tls import TlsStream
from .transcript import Transcript
from .transport import Transport
from .url import BrokerAddress, parse_url


@dataclass(frozen=True)
class Timeouts:
    frame: float = DEFAULTS.frame_timeout       # default bound on waiting for an expected frame
    quiet: float = DEFAULTS.quiet_period        # how long "nothing (matching) arrives" is watched
    connect: float = DEFAULTS.connect_timeout   # TCP/TLS connect


@dataclass(frozen=True)
class TLSOptions:
    ca_file: str | None = None
    cert_file: str | None = None
    key_file: str | None = None
    verify: bool = True
    server_hostname: str | None = None

    def context(self) -> ssl.SSLContext:
        ctx = ssl.create_default_context(cafile=self.ca_file)
        if not self.verify:
            ctx.check_hostname = False
            ctx.verify_mode = ssl.CERT_NONE
        if self.cert_file:
            ctx.load_cert_chain(self.cert_file, self.key_file)
        return ctx


def as_error(error: Any) -> Any:
    """`"amqp:not-found"` -> Error(condition=...); an Error (or None) is passed through."""
    if isinstance(error, str):
        return Error(condition=Symbol(error))
    return error


class Peer(Expectations):
    """One connection driven by a script. Build with `Peer.connect(url)` (client role) or
    `PeerServer.accept()` (server role: the peer plays the broker)."""

    def __init__(self, sock: "socket.socket | TlsStream", *, address: BrokerAddress | None = None,
                 timeouts: Timeouts | None = None, transcript: Transcript | None = None, role: str = "client",
                 container_id: str | None = None):
        self.sock = sock
        self.address = address
        self.timeouts = timeouts or Timeouts()
        self.transcript = transcript or Transcript()
        self.role = role
        self.container_id = container_id or ("amqp-conformance" if role == "client" else "scripted-broker")
        if address is not None and address.password:
            self.transcript.add_secret(address.password)
        self.state = PeerState()
        self.remote_open: Open | None = None
        self.client_sasl_init: SaslInit | None = None   # server role: what the client sent
        self.arrived: list = []           # every incoming header/frame except heartbeats, in order
        self.ending: str | None = None    # how the other side ended the connection (errors.CLOSE_FRAME, FIN, ...)
        self.remote_closed = False        # the other side's close frame arrived (the socket may still be open)
        self.closed_by_us = False         # our close frame went out
        self.skipped: list[str] = []      # frames a script asked for after the other side's close / end: not sent
        self._inbox: deque = deque()      # (arrival index, item) not yet consumed by an expectation
        self._cond = threading.Condition()
        self._failure: Exception | None = None
        self._inbound = Inbound(self.state)
        self._hold: ReadHold | None = None   # frames received and not read yet (hold.py)
        self.released_at = 0                 # arrival position right after the frames the last hold kept
        self.transport = Transport(sock, name=f"amqp-peer-{role}", on_data=self._received, on_end=self._ended)
        self._read_here = self.transport.read_here if self.transport.direct else None
        self.transport.start()

    # -- construction ----------------------------------------------------------------------------------

    @classmethod
    def connect(cls, url: str | BrokerAddress, *, timeouts: Timeouts | None = None, tls: TLSOptions | None = None,
                transcript: Transcript | None = None, container_id: str | None = None) -> "Peer":
        """Open the TCP (and, for amqps:// or `tls`, TLS) connection. Nothing is sent: the script continues
        with `handshake()` or with `send_header()` / `sasl_init()` / `open()` step by step."""
        address = parse_url(url) if isinstance(url, str) else url
        timeouts = timeouts or Timeouts()
        try:
            sock = socket.create_connection((address.host, address.port), timeout=timeouts.connect)
        except socket.gaierror as exc:
            raise ConnectFailed(f"cannot resolve {address.host} ({exc.strerror}); check the host in "
                                f"{address.redacted()}") from None
        except (TimeoutError, socket.timeout):
            raise ConnectFailed(f"connecting to {address.redacted()} timed out after {timeouts.connect:.1f} s; "
                                "check that the broker is running and reachable") from None
        except OSError as exc:
            reason = "connection refused" if isinstance(exc, ConnectionRefusedError) else (exc.strerror or str(exc))
            raise ConnectFailed(f"cannot reach the broker at {address.redacted()} ({reason}); check that it "
                                "is running and the host and port are right") from None
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.settimeout(None)
        if address.tls or tls is not None:
            opts = tls or TLSOptions()
            try:
                stream = TlsStream(sock, opts.context(), server_side=False,
                                   server_hostname=opts.server_hostname or address.host)
                stream.handshake(timeouts.connect)
            except (ssl.SSLError, OSError) as exc:
                sock.close()
                raise ConnectFailed(f"TLS handshake with {address.redacted()} failed ({exc}); check the CA, "
                                    "certificate and verify options") from None
            sock = stream
        return cls(sock, address=address, timeouts=timeouts, transcript=transcript, container_id=container_id)

    # -- sending exactly what the script says ------------------------------------------------------------

    def send(self, body: Any, channel: int = 0, payload: bytes = b"", *, frame_type: int = AMQP_FRAME,
             validate: bool = True, **frame_options) -> Frame:
        """Send one frame exactly as given: nothing is filled in. `frame_options` go to `encode_frame`
        (doff, extended_header, size) for malformed-on-purpose frames; validate=False sends a missing
        mandatory field as null."""
        raw = encode_frame(body, channel, payload, frame_type, validate=validate, **frame_options)
        frame = Frame(channel, body, payload, frame_type, raw=raw)
        with self._cond:   # tracked before the bytes leave: the answer may be read before sendall returns
            why = self._silenced(channel, body)
            if why is not None:
                self.skipped.append(f"{summarize(frame)} on channel {channel}: not sent, {why}")
                return frame
            self.state.observe_out(frame)
            self.closed_by_us = self.closed_by_us or isinstance(body, Close)
            self._inbound.sent(body)
        self._write(raw, frame)
        return frame

    def send_together(self, frames: list[tuple[Any, int]]) -> list[Frame]:
        """Send (body, channel) frames in one write, recorded in order: all are on the wire before an answer to
        the first can have been read, and nothing the other side sends comes between them in the transcript
        (a flow pipelined with its attach; a frame in flight across the other side's end of a session). The
        stop rule is applied once, before the first."""
        built = [Frame(channel, body, b"", AMQP_FRAME, raw=encode_frame(body, channel)) for body, channel in frames]
        with self._cond:
            why = self._silenced(built[0].channel, built[0].body)
            if why is not None:
                self.skipped.extend(f"{summarize(f)} on channel {f.channel}: not sent, {why}" for f in built)
                return built
            for frame in built:
                self.state.observe_out(frame)
                self._inbound.sent(frame.body)

        def record():
            for frame in built:
                self.transcript.add("out", frame, frame.raw)
        self._write(b"".join(f.raw for f in built), built[0], record=record)
        return built

    def _silenced(self, channel: int, body: Any) -> str | None:
        """Under `_cond`: why `body` on `channel` must not be sent (the other side closed the connection or
        ended that session), or None."""
        if self.closed_by_us:
            return "our close had gone out (the last frame of a connection)"
        if self.remote_closed:
            return None if isinstance(body, Close) else "the other side had closed the connection"
        s = self.state.sessions.get(channel)
        if s is None or s.ended_by_remote is None or isinstance(body, (Close, Begin)) and s.ended_by_us:
            return None       # (a begin after both ends starts a new session on the channel)
        if isinstance(body, End) and not s.ended_by_us:
            return None
        if isinstance(body, Close):
            return None
        return "the other side had ended the session"

    def send_raw(self, data: bytes, note: str = "raw bytes") -> None:
        """Send bytes verbatim (recorded as raw bytes; not tracked in the session state)."""
        self._write(bytes(data), bytes(data), note=note)

    def send_header(self, header: bytes = AMQP_HEADER) -> None:
        """Send a protocol header (AMQP_HEADER, SASL_HEADER, TLS_HEADER or any 8 bytes)."""
        header = bytes(header)
        item = ProtocolHeader(header[4], header[5], header[6], header[7], raw=header) \
            if len(header) == 8 and header[:4] == b"AMQP" else header
        self._write(header, item)

    def _write(self, raw: bytes, item: Any, *, auto: bool = False, note: str = "",
               record: Callable[[], None] | None = None) -> None:
        try:
            self.transport.write(raw, record or (lambda: self.transcript.add("out", item, raw, auto=auto, note=note)))
        except OSError as exc:
            what = "bytes" if isinstance(item, bytes) else summarize(item)
            how = self.ending or (RESET if isinstance(exc, ConnectionResetError) else FIN
                                  if isinstance(exc, BrokenPipeError) else None)
            raise ConnectionLost(f"nothing: sending {what} failed ({exc.strerror or exc})",
                                 list(self.arrived), how) from None

    # -- performatives with defaults from tracked state (any field given explicitly wins) --------------

    def sasl_init(self, mechanism: str = "ANONYMOUS", initial_response: bytes | None = None,
                  hostname: str | None = None, **fields) -> Frame:
        """SASL init. For PLAIN without an initial_response, the URL's user and password are used
        (the transcript records the response redacted)."""
        if mechanism == "PLAIN" and initial_response is None:
            user = (self.address.user if self.address else None) or ""
            password = (self.address.password if self.address else None) or ""
            initial_response = b"\x00" + user.encode() + b"\x00" + password.encode()
        if hostname is None and self.address is not None:
            hostname = self.address.host
        return self.send(SaslInit(mechanism=Symbol(mechanism), initial_response=initial_response,
                                  hostname=hostname, **fields), frame_type=SASL_FRAME)

    def open(self, **fields) -> Frame:
        """Send open; container-id defaults to the peer's, hostname to the URL's vhost or host."""
        values: dict[str, Any] = {"container_id": self.container_id}
        if self.address is not None and self.role == "client":
            values["hostname"] = self.address.vhost or self.address.host
        values.update(fields)
        return self.send(Open(**values))

    def begin(self, channel: int = 0, **fields) -> Frame:
        """Send begin (next-outgoing-id 0, windows 2048 unless given)."""
        values = {"next_outgoing_id": 0, "incoming_window": 2048, "outgoing_window": 2048}
        values.update(fields)
        return self.send(Begin(**values), channel)

    def attach_receiver(self, name: str, source_address: str | None, *, channel: int = 0,
                        handle: int | None = None, **fields) -> Frame:
        """Attach as receiver (role=receiver) from `source_address`; handle = the lowest free one."""
        values = {"name": name, "handle": self._handle(channel, handle), "role": True,
                  "source": Source(address=source_address), "target": Target()}
        values.update(fields)
        return self.send(Attach(**values), channel)

    def attach_sender(self, name: str, target_address: str | None, *, channel: int = 0,
                      handle: int | None = None, initial_delivery_count: int = 0, **fields) -> Frame:
        """Attach as sender (role=sender) to `target_address`; handle = the lowest free one."""
        values = {"name": name, "handle": self._handle(channel, handle), "role": False, "source": Source(),
                  "target": Target(address=target_address), "initial_delivery_count": initial_delivery_count}
        values.update(fields)
        return self.send(Attach(**values), channel)

    def _handle(self, channel: int, handle: int | None) -> int:
        if handle is not None:
            return handle
        s = self.state.sessions.get(channel)
        return s.next_free_handle() if s is not None else 0

    def flow(self, channel: int = 0, **fields) -> Frame:
        """Send a flow. next-incoming-id, incoming-window, next-outgoing-id and outgoing-window come from
        the tracked session unless given; with a handle, delivery-count defaults to our view of the link.
        Pass a field as None to leave it out."""
        s = self.state.sessions.get(channel)
        values = s.session_fields() if s is not None else {}
        handle = fields.get("handle")
        if s is not None and handle is not None and "delivery_count" not in fields:
            link = s.links.get(handle)
            if link is not None and link.delivery_count is not None:
                values["delivery_count"] = link.delivery_count
        values.update(fields)
        return self.send(Flow(**values), channel)

    def transfer(self, channel: int, handle: int, payload: bytes = b"", **fields) -> Frame:
        """Send a transfer; delivery-id (the session's next), delivery-tag (4-byte delivery-id) and
        message-format 0 unless given. `payload` is the encoded message bytes."""
        s = self.state.sessions.get(channel)
        delivery_id = s.next_delivery_id if s is not None else 0
        values = {"handle": handle, "delivery_id": delivery_id,
                  "delivery_tag": int(delivery_id).to_bytes(4, "big"), "message_format": 0}
        values.update(fields)
        return self.send(Transfer(**values), channel, payload)

    def disposition(self, channel: int = 0, *, first: int, last: int | None = None, role: bool = True,
                    settled: bool = True, state: Any = "accepted", **fields) -> Frame:
        """Send a disposition (default: as receiver, settled, accepted)."""
        values = {"role": role, "first": first, "last": last, "settled": settled,
                  "state": Accepted() if state == "accepted" else state}
        values.update(fields)
        return self.send(Disposition(**values), channel)

    def detach(self, channel: int = 0, handle: int = 0, *, closed: bool = True, error: Any = None,
               **fields) -> Frame:
        """Send detach; `error` may be a condition string ("amqp:internal-error") or an Error."""
        return self.send(Detach(handle=handle, closed=closed, error=as_error(error), **fields), channel)

    def end(self, channel: int = 0, *, error: Any = None) -> Frame:
        return self.send(End(error=as_error(error)), channel)

    def close_connection(self, *, error: Any = None) -> Frame:
        """Send the close performative (the socket stays open; `disconnect()` drops it)."""
        return self.send(Close(error=as_error(error)))

    @property
    def closed_by_remote(self) -> bool:
        """The other side ended the connection (with or without a close frame; `ending` says how)."""
        return self.ending is not None

    # -- handshakes (handshake.py) -------------------------------------------------------------------------

    def handshake(self, *, sasl: str | None = "auto", container_id: str | None = None,
                  hostname: str | None = None, **open_fields) -> Open:
        """Client role: protocol header(s), SASL, open (see `handshake.client_handshake`); returns the other
        side's open."""
        return client_handshake(self, sasl=sasl, container_id=container_id, hostname=hostname, **open_fields)

    def server_handshake(self, **options) -> Open | None:
        """Server role: the broker's half of header / SASL / open (see `handshake.server_handshake`)."""
        return server_handshake(self, **options)

    # -- heartbeats: the only frames the peer sends on its own ----------------------------------------

    def start_heartbeats(self, idle_time_out_ms: Any) -> bool:
        """Send empty frames at half the other side's idle-time-out (ms), recorded with auto=True.
        Returns whether heartbeats were started."""
        if isinstance(idle_time_out_ms, bool) or not isinstance(idle_time_out_ms, int) or idle_time_out_ms <= 0:
            return False
        return self.transport.start_heartbeats(max(idle_time_out_ms / 2000.0, 0.005), self._beat)

    def _beat(self) -> bool:
        if self.ending is not None or self.remote_closed:
            return False
        raw = heartbeat()
        try:
            self._write(raw, Frame(0, None, raw=raw), auto=True)
        except ConnectionLost:
            return False
        return True

    # -- what reading hands over (the reader thread, or a waiting thread: transport.py) -------------------

    def _received(self, data: bytes) -> bool:
        """Bytes off the socket: decode (inbound.py), record, queue; False ends reading (malformed input).
        The transport's read lock makes this one call at a time, in stream order. While reads are held
        (hold.py) the decoded frames are kept unread; malformed input ends the hold (all is read first)."""
        fed = self._inbound.decode(data)     # only the reading thread decodes: no peer lock held meanwhile
        items = fed.items
        hold = self._hold
        if hold is not None:
            if fed.error is None:
                items = hold.split(items)
                if not items:
                    with self._cond:
                        self._cond.notify_all()      # a script awaiting a held frame looks again
                    return True
            else:
                items, self._hold = hold.held + items, None
        if items:
            self.transcript.add_items("in", items)
        with self._cond:
            if items:
                self._read(items)
            if fed.error is not None:
                exc = fed.error
                if hasattr(exc, "data"):          # wire.NotAProtocolHeader: not an AMQP peer at all
                    self.transcript.add("in", fed.bad, fed.bad, note="not an AMQP protocol header")
                    who = self.address.redacted() if self.address is not None else "the client"
                    self._failure = NotAmqp(who, fed.bad, "server" if self.role == "client" else "client")
                else:
                    self.transcript.add("in", fed.bad, fed.bad,
                                        note=f"undecodable at stream offset {exc.offset}: {exc.reason}")
                    self._failure = MalformedInput(exc, fed.bad, list(self.arrived))
            self._cond.notify_all()
            return fed.error is None

    def _read(self, items: list) -> None:
        """Under `_cond`: show frames to the bookkeeping and queue them for expectations, in order."""
        self._inbound.observe(items)
        arrived, inbox = self.arrived, self._inbox
        for item in items:
            if isinstance(item, Frame) and item.body is None:
                continue       # heartbeats are recorded, not queued
            if isinstance(item, Frame) and isinstance(item.body, Close):
                self.remote_closed = True
            inbox.append((len(arrived), item))
            arrived.append(item)

    # -- holding reads (hold.py): a frame of the other side in flight while ours goes out ----------------------

    def hold_reads_after(self, after: Callable[[Frame], bool] | None) -> None:
        """Arm a hold: once a frame `after(frame)` accepts has been read, what arrives later is kept unread
        (not recorded, not in the bookkeeping, not expected) until `release_reads()`. Arm it before that
        frame can arrive. `after` None: hold from now on."""
        with self.transport.reading(), self._cond:
            self._hold = ReadHold(after)

    def await_held(self, predicate: Callable[[Frame], bool], what: str, timeout: float | None = None) -> Frame:
        """Wait (bounded: the frame timeout unless given) until a frame `predicate` accepts has arrived and is
        held unread: it is in our receive buffer while we send. `ExpectationTimeout` naming `what` else."""
        def find():
            hold = self._hold
            return hold.find(predicate) if hold is not None and hold.holding else None
        return self._wait(f"{what} (held unread)", timeout, find)

    @property
    def holding(self) -> bool:
        """A hold is armed (frames after the one it names stay unread until `release_reads`)."""
        return self._hold is not None

    def held(self) -> list:
        """The frames received and not read yet (empty without a hold)."""
        return [f for f in self.held_items() if isinstance(f, Frame)]

    def held_items(self) -> list:
        """Every item received and not read yet (frames and headers), in order."""
        with self.transport.reading(), self._cond:
            hold = self._hold
            return list(hold.held) if hold is not None else []

    def release_reads(self, note: str = "", *, noted: int | None = None) -> list:
        """End the hold: the held frames are read now, in order; the first `noted` (default all) are recorded
        with `note` (e.g. that it was unread while our frame went out: frames held later arrived meanwhile).
        Returns them; `released_at` is the arrival position after the noted ones."""
        with self.transport.reading():
            with self._cond:
                hold, self._hold = self._hold, None
            items = hold.held if hold is not None else []
            count = len(items) if noted is None else noted
            for k, item in enumerate(items):
                self.transcript.add("in", item, item.raw, note=note if k < count else "")
            with self._cond:
                start = len(self.arrived)
                if items:
                    self._read(items)
                self.released_at = start + sum(1 for item in items[:count]
                                               if not (isinstance(item, Frame) and item.body is None))
                self._cond.notify_all()
        return [f for f in items if isinstance(f, Frame)]

    def _ended(self, how: str | None) -> None:
        """The stream ended: `how` from the transport (None: we closed it), CLOSE_FRAME when a close came."""
        with self._cond:
            if how is not None:
                closed = any(isinstance(f, Frame) and isinstance(f.body, Close) for f in self.arrived)
                self.ending = CLOSE_FRAME if closed else how
            self._cond.notify_all()

    # -- ending --------------------------------------------------------------------------------------------

    def disconnect(self) -> None:
        """Drop the socket without any frame (a script sends close itself when it wants one)."""
        self.transport.close()

    close = disconnect   # `with Peer.connect(...)` and older callers

    def __enter__(self) -> "Peer":
        return self

    def __exit__(self, *exc) -> None:
        self.disconnect()
