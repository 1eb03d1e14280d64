"""The scripted peer: one AMQP connection over a real socket, driven frame by frame by a script.

This module owns the socket, the reader thread, the inbox of frames not yet expected, and the waits. A
script decides every frame that goes out; the peer itself only ever sends heartbeats (empty frames) when
the other side announced an idle-time-out, and records those in the transcript too. Every wait has a
bound and says what it waited for when it runs out.

Inbox semantics: frames arrive in order into the inbox. `expect` scans the inbox in arrival order and
removes the first frame that matches; frames that do not match stay for later expectations. `arrived`
keeps every incoming frame whether expected or not.
"""

from __future__ import annotations

import socket
import ssl
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable, Iterable

from ..wire import (
    AMQP_HEADER, SASL_HEADER, Attach, Begin, Close, DecodeError, Detach, End, Error, Flow, Frame, FrameDecoder,
    Open, ProtocolHeader, SaslInit, SaslMechanisms, SaslOutcome, Symbol, Transfer, encode_frame, heartbeat,
)
from ..wire.frames import AMQP_FRAME, SASL_FRAME
from .errors import (
    ConnectFailed, ConnectionLost, ExpectationTimeout, MalformedInput, SaslFailed, UnexpectedFrame,
)
from .ladder import summarize
from .state import PeerState
from .transcript import Transcript
from .url import BrokerAddress, parse_url


@dataclass(frozen=True)
class Timeouts:
    frame: float = 5.0       # default bound on waiting for an expected frame
    quiet: float = 0.5       # how long "nothing (matching) arrives" is watched
    connect: float = 5.0     # TCP/TLS connect


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


Matcher = Any  # a value compared with ==, or a callable predicate


def _kinds(kinds) -> tuple:
    if kinds is None:
        return ()
    if isinstance(kinds, (tuple, list)):
        return tuple(kinds)
    return (kinds,)


def matches(item: Any, kinds: tuple, channel: int | None, where: Callable | None, fields: dict) -> bool:
    if not isinstance(item, Frame) or item.body is None:
        return False
    if kinds and not isinstance(item.body, kinds):
        return False
    if channel is not None and item.channel != channel:
        return False
    for name, want in fields.items():
        have = getattr(item.body, name, None)
        if callable(want):
            if not want(have):
                return False
        elif have != want:
            return False
    return where is None or bool(where(item))


def describe_pattern(kinds: tuple, channel: int | None, fields: dict) -> str:
    names = "|".join(getattr(k, "NAME", k.__name__) for k in kinds) or "any frame"
    parts = [f"{k.replace('_', '-')}={'<predicate>' if callable(v) else v}" for k, v in fields.items()]
    if channel is not None:
        parts.insert(0, f"channel={channel}")
    return f"{names}({', '.join(parts)})"


class Peer:
    """One connection. Build with `Peer.connect(url)` (client) or `PeerServer.accept()` (server role)."""

    def __init__(self, sock: socket.socket, *, address: BrokerAddress | None = None,
                 timeouts: Timeouts | None = None, transcript: Transcript | None = None, role: str = "client"):
        self.sock = sock
        self.address = address
        self.timeouts = timeouts or Timeouts()
        self.transcript = transcript or Transcript()
        self.role = role
        self.state = PeerState()
        self.remote_open: Open | None = None
        self.arrived: list = []           # every incoming header/frame, in order
        self._inbox: list = []            # (seq, item) not yet consumed by an expectation
        self._cond = threading.Condition()
        self._send_lock = threading.Lock()
        self._closed_by_remote = False
        self._failure: Exception | None = None
        self._stopping = threading.Event()
        self._decoder = FrameDecoder()
        self._heartbeat_thread: threading.Thread | None = None
        self._reader = threading.Thread(target=self._read_loop, name="amqp-peer-reader", daemon=True)
        self._reader.start()

    # -- construction ----------------------------------------------------------------------------------

    @classmethod
    def connect(cls, url: str | BrokerAddress, *, timeouts: Timeouts | None = None, tls: TLSOptions | None = None,
                transcript: Transcript | None = None) -> "Peer":
        address = parse_url(url) if isinstance(url, str) else url
        timeouts = timeouts or Timeouts()
        try:
            sock = socket.create_connection((address.host, address.port), timeout=timeouts.connect)
        except socket.gaierror as exc:
            raise ConnectFailed(f"cannot resolve {address.host} ({exc.strerror}); check the host in "
                                f"{address.redacted()}") from None
        except (ConnectionRefusedError, TimeoutError, socket.timeout, OSError) as exc:
            reason = "connection refused" if isinstance(exc, ConnectionRefusedError) else (
                "timed out" if isinstance(exc, (TimeoutError, socket.timeout)) else str(exc))
            raise ConnectFailed(f"cannot reach the broker at {address.redacted()} ({reason}); check that it "
                                "is running and the host and port are right") from None
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        if address.tls or tls is not None:
            opts = tls or TLSOptions()
            try:
                sock = opts.context().wrap_socket(sock, server_hostname=opts.server_hostname or address.host)
            except (ssl.SSLError, OSError) as exc:
                sock.close()
                raise ConnectFailed(f"TLS handshake with {address.redacted()} failed ({exc}); check the CA and "
                                    "certificate options") from None
        sock.settimeout(None)
        return cls(sock, address=address, timeouts=timeouts, transcript=transcript)

    # -- sending ---------------------------------------------------------------------------------------

    def send(self, body: Any, channel: int = 0, payload: bytes = b"", *, frame_type: int = AMQP_FRAME,
             validate: bool = True, **frame_options) -> Frame:
        """Send one frame exactly as given (session fields are not filled in here)."""
        raw = encode_frame(body, channel, payload, frame_type, validate=validate, **frame_options)
        frame = Frame(channel, body, payload, frame_type, raw=raw)
        with self._cond:   # before the bytes leave: the answer may be read before sendall returns
            self.state.observe_out(frame)
        self._write(raw, frame)
        return frame

    def send_raw(self, data: bytes, note: str = "raw bytes") -> None:
        """Send bytes verbatim (recorded, decoded if they happen to be one whole frame)."""
        self._write(data, data, note=note)

    def send_header(self, header: bytes = AMQP_HEADER) -> None:
        self._write(header, ProtocolHeader(header[4], header[5], header[6], header[7], raw=header))

    def _write(self, raw: bytes, item: Any, *, auto: bool = False, note: str = "") -> None:
        with self._send_lock:
            self.transcript.add("out", item, raw, auto=auto, note=note)
            try:
                self.sock.sendall(raw)
            except OSError as exc:
                raise ConnectionLost(f"sending {summarize(item) if not isinstance(item, bytes) else 'bytes'} "
                                     f"({exc})", self.arrived) from None

    # -- session conveniences (fields filled from tracked state unless given) ------------------------

    def flow(self, channel: int = 0, **fields) -> Frame:
        """Send a flow; next-incoming-id, the windows and next-outgoing-id come from tracked state unless given.
        For a link flow, delivery-count defaults to our view of the link. Pass a field as None to omit it."""
        s = self.state.sessions.get(channel)
        values = s.session_fields() if s is not None else {}
        handle = fields.get("handle")
        if s is not None and handle is not None and "delivery_count" not in fields:
            link = s.links.get(handle)
            if link is not None and link.delivery_count is not None:
                values["delivery_count"] = link.delivery_count
        values.update(fields)
        return self.send(Flow(**values), channel)

    def transfer(self, channel: int, handle: int, payload: bytes, **fields) -> Frame:
        """Send a transfer; delivery-id and delivery-tag are chosen from tracked state unless given."""
        s = self.state.sessions.get(channel)
        delivery_id = s.next_delivery_id if s is not None else 0
        values = {"handle": handle, "delivery_id": delivery_id,
                  "delivery_tag": int(delivery_id).to_bytes(4, "big"), "message_format": 0}
        values.update(fields)
        return self.send(Transfer(**values), channel, payload)

    # -- expectations ----------------------------------------------------------------------------------

    def mark(self) -> int:
        """A position in the incoming stream; `expect(..., after=mark)` ignores frames that came before it."""
        with self._cond:
            return len(self.arrived)

    def expect(self, kinds=None, *, timeout: float | None = None, channel: int | None = None,
               where: Callable | None = None, after: int | None = None, **fields: Matcher) -> Frame:
        """Wait for the first frame matching the pattern; remove it from the inbox and return it."""
        kinds_t = _kinds(kinds)
        wait = self.timeouts.frame if timeout is None else timeout
        deadline = time.monotonic() + wait
        what = describe_pattern(kinds_t, channel, fields)
        with self._cond:
            while True:
                for i, (seq, item) in enumerate(self._inbox):
                    if (after is None or seq >= after) and matches(item, kinds_t, channel, where, fields):
                        del self._inbox[i]
                        return item
                if self._failure is not None:
                    raise self._failure
                if self._closed_by_remote:
                    raise ConnectionLost(what, list(self.arrived))
                left = deadline - time.monotonic()
                if left <= 0:
                    raise ExpectationTimeout(what, wait, list(self.arrived))
                self._cond.wait(left)

    def expect_any(self, *kinds, timeout: float | None = None, **fields) -> Frame:
        return self.expect(kinds, timeout=timeout, **fields)

    def expect_header(self, protocol_id: int | None = None, *, timeout: float | None = None) -> ProtocolHeader:
        wait = self.timeouts.frame if timeout is None else timeout
        deadline = time.monotonic() + wait
        with self._cond:
            while True:
                for i, (seq, item) in enumerate(self._inbox):
                    if isinstance(item, ProtocolHeader):
                        del self._inbox[i]
                        return item
                if self._failure is not None:
                    raise self._failure
                if self._closed_by_remote:
                    raise ConnectionLost("a protocol header", list(self.arrived))
                left = deadline - time.monotonic()
                if left <= 0:
                    raise ExpectationTimeout("a protocol header", wait, list(self.arrived))
                self._cond.wait(left)

    def expect_nothing(self, kinds=None, *, quiet: float | None = None, channel: int | None = None,
                       where: Callable | None = None, **fields: Matcher) -> list:
        """Watch the quiet period: raise UnexpectedFrame if a matching frame is (or becomes) available.
        Returns the frames that arrived during the period (they stay in the inbox)."""
        kinds_t = _kinds(kinds)
        period = self.timeouts.quiet if quiet is None else quiet
        start = self.mark()
        deadline = time.monotonic() + period
        what = describe_pattern(kinds_t, channel, fields)
        with self._cond:
            while True:
                for seq, item in self._inbox:
                    if matches(item, kinds_t, channel, where, fields):
                        raise UnexpectedFrame(f"expected no {what} within {period:.2f} s", item,
                                              list(self.arrived))
                if self._failure is not None:
                    raise self._failure
                left = deadline - time.monotonic()
                if left <= 0 or self._closed_by_remote:
                    return list(self.arrived[start:])
                self._cond.wait(left)

    def expect_error(self, condition: str | None = None, *, accept=(Detach, End, Close),
                     timeout: float | None = None, channel: int | None = None) -> Frame:
        """Wait for one of `accept` (detach/end/close) and return it, whatever its error condition.
        The caller compares `frame.body.error.condition` with what it wanted (see `error_condition`)."""
        try:
            return self.expect(tuple(accept), timeout=timeout, channel=channel)
        except ConnectionLost:
            raise

    @staticmethod
    def error_condition(frame: Frame) -> str | None:
        err = getattr(frame.body, "error", None)
        return str(err.condition) if isinstance(err, Error) else None

    def pending(self) -> list:
        """Frames received and not yet consumed by an expectation."""
        with self._cond:
            return [item for _, item in self._inbox]

    @property
    def closed_by_remote(self) -> bool:
        return self._closed_by_remote

    # -- handshakes --------------------------------------------------------------------------------------

    def handshake(self, *, sasl: str | None = "auto", container_id: str = "amqp-conformance",
                  hostname: str | None = None, **open_fields) -> Open:
        """Protocol header(s), SASL (PLAIN with URL credentials, else ANONYMOUS; None skips SASL), open;
        waits for the broker's open and returns it."""
        address = self.address
        if sasl == "auto":
            sasl = "PLAIN" if address is not None and address.user is not None else "ANONYMOUS"
        if sasl:
            self.send_header(SASL_HEADER)
            header = self.expect_header()
            if header.protocol_id != 3:
                raise SaslFailed(f"the broker answered the SASL header with {summarize(header)}; it may not "
                                 "support SASL: try without SASL")
            mechs = self.expect(SaslMechanisms).body
            offered = [str(m) for m in (mechs.sasl_server_mechanisms if not isinstance(
                mechs.sasl_server_mechanisms, str) else [mechs.sasl_server_mechanisms])]
            if sasl not in offered:
                raise SaslFailed(f"the broker offers SASL {', '.join(offered)}, not {sasl}; pass credentials "
                                 "in the URL for PLAIN or choose a profile with a supported mechanism")
            response = None
            if sasl == "PLAIN":
                user = address.user or ""
                response = b"\x00" + user.encode() + b"\x00" + (address.password or "").encode()
            self.send(SaslInit(mechanism=Symbol(sasl), initial_response=response,
                               hostname=hostname or (address.host if address else None)), frame_type=SASL_FRAME)
            outcome = self.expect(SaslOutcome).body
            if outcome.code != 0:
                who = address.redacted() if address else "the broker"
                raise SaslFailed(f"authentication failed at {who} (SASL {sasl}, outcome code {outcome.code}); "
                                 "check the user name and password")
        self.send_header(AMQP_HEADER)
        header = self.expect_header()
        if header.protocol_id != 0:
            raise SaslFailed(f"the broker answered the AMQP header with {summarize(header)}; it requires SASL")
        fields = {"container_id": container_id, "hostname": hostname or (address.vhost or address.host
                                                                       if address else None)}
        fields.update(open_fields)
        self.send(Open(**fields))
        remote = self.expect(Open).body
        self.remote_open = remote
        self._start_heartbeats()
        return remote

    def _start_heartbeats(self) -> None:
        idle = self.remote_open.idle_time_out if self.remote_open is not None else None
        if not idle:
            return
        interval = max(int(idle) / 2000.0, 0.01)
        self._heartbeat_thread = threading.Thread(target=self._heartbeat_loop, args=(interval,),
                                                  name="amqp-peer-heartbeat", daemon=True)
        self._heartbeat_thread.start()

    def _heartbeat_loop(self, interval: float) -> None:
        while not self._stopping.wait(interval):
            if self._closed_by_remote:
                return
            try:
                raw = heartbeat()
                self._write(raw, Frame(0, None, raw=raw), auto=True)
            except Exception:
                return

    # -- reading ---------------------------------------------------------------------------------------

    def _read_loop(self) -> None:
        sock = self.sock
        while not self._stopping.is_set():
            try:
                data = sock.recv(65536)
            except (OSError, ValueError):
                data = b""
            if not data:
                with self._cond:
                    self._closed_by_remote = True
                    self._cond.notify_all()
                return
            try:
                items = self._decoder.feed(data)
            except DecodeError as exc:
                with self._cond:
                    self._failure = MalformedInput(exc, data)
                    self.transcript.add("in", data, data, note=f"undecodable: {exc}")
                    self._cond.notify_all()
                return
            with self._cond:
                for item in items:
                    self.transcript.add("in", item, item.raw)
                    if isinstance(item, Frame):
                        if item.body is None:
                            continue       # heartbeats are recorded, not queued
                        self.state.observe_in(item)
                    self._inbox.append((len(self.arrived), item))
                    self.arrived.append(item)
                self._cond.notify_all()

    def close(self) -> None:
        """Drop the socket (no close frame: a script sends close itself when it wants one)."""
        self._stopping.set()
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        try:
            self.sock.close()
        except OSError:
            pass

    def __enter__(self) -> "Peer":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def iter_frames(items: Iterable) -> list[Frame]:
    return [i for i in items if isinstance(i, Frame)]
