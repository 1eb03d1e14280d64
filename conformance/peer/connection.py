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
from typing import Any, Callable

from ..wire import (
    AMQP_HEADER, SASL_HEADER, Accepted, Attach, Begin, Close, DecodeError, Detach, Disposition, End, Error, Flow,
    Frame, FrameDecoder, Open, ProtocolHeader, SaslInit, SaslMechanisms, SaslOutcome, Source, Symbol, Target,
    Transfer, decode_frame, encode_frame, heartbeat,
)
from ..wire.frames import AMQP_FRAME, PROTOCOL_AMQP, PROTOCOL_SASL, SASL_FRAME
from .errors import (
    ConnectFailed, ConnectionLost, ExpectationTimeout, MalformedInput, SaslFailed, ScriptError, UnexpectedFrame,
)
from .ladder import summarize
from .state import PeerState
from .tls import TlsStream
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


def _field_matches(want: Any, have: Any) -> bool:
    if isinstance(want, type):                 # a class: state=Accepted
        return isinstance(have, want)
    if callable(want):                         # a predicate; one that raises (e.g. on None) does not match
        try:
            return bool(want(have))
        except Exception:
            return False
    return have == want


def matches(item: Any, kinds: tuple, channel: int | None, where: Callable | None, fields: dict) -> bool:
    """Whether a received frame matches a pattern (performative kinds, channel, field matchers, predicate)."""
    if not isinstance(item, Frame) or item.body is None:
        return False
    if kinds and not isinstance(item.body, kinds):
        return False
    if channel is not None and item.channel != channel:
        return False
    for name, want in fields.items():
        if not _field_matches(want, getattr(item.body, name, None)):
            return False
    if where is None:
        return True
    try:
        return bool(where(item))
    except Exception:
        return False


def check_fields(kinds: tuple, fields: dict) -> None:
    """A misspelt field name would make an expectation silently never match: refuse it up front."""
    for name in fields:
        if kinds and not any(name in {f.attr for f in getattr(k, "FIELDS", ())} for k in kinds):
            known = sorted({f.attr for k in kinds for f in getattr(k, "FIELDS", ())})
            raise ScriptError(f"{'/'.join(k.NAME for k in kinds)} has no field {name!r}; fields are "
                              f"{', '.join(known)}")


def describe_pattern(kinds: tuple, channel: int | None, fields: dict) -> str:
    names = "|".join(getattr(k, "NAME", k.__name__) for k in kinds) or "any frame"
    parts = []
    for k, v in fields.items():
        shown = v.__name__ if isinstance(v, type) else "<predicate>" if callable(v) else v
        parts.append(f"{k.replace('_', '-')}={shown}")
    if channel is not None:
        parts.insert(0, f"channel={channel}")
    return f"{names}({', '.join(parts)})"


def as_error(error: Any) -> Any:
    """`"amqp:not-found"` -> Error(condition=...); an Error (or None) is passed through."""
    if isinstance(error, str):
        return Error(condition=Symbol(error))
    return error


class Peer:
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
        self._inbox: list = []            # (arrival index, item) not yet consumed by an expectation
        self._cond = threading.Condition()
        self._send_lock = threading.Lock()
        self._closed_by_remote = False
        self._failure: Exception | None = None
        self._stopping = threading.Event()
        self._decoder = FrameDecoder()
        self._undelivered = bytearray()   # bytes fed to the decoder and not yet returned as items
        self._stream_pos = 0              # stream offset of _undelivered[0]
        self._heartbeat_thread: threading.Thread | None = None
        self._reader = threading.Thread(target=self._read_loop, name=f"amqp-peer-{role}-reader", daemon=True)
        self._reader.start()

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
            self.state.observe_out(frame)
        self._write(raw, frame)
        return frame

    def send_raw(self, data: bytes, note: str = "raw bytes") -> None:
        """Send bytes verbatim (recorded as raw bytes; not tracked in the session state)."""
        self._write(bytes(data), bytes(data), note=note)

    def send_header(self, header: bytes = AMQP_HEADER) -> None:
        """Send a protocol header (AMQP_HEADER, SASL_HEADER, TLS_HEADER or any 8 bytes)."""
        header = bytes(header)
        item = ProtocolHeader(header[4], header[5], header[6], header[7], raw=header) \
            if len(header) == 8 and header[:4] == b"AMQP" else header
        self._write(header, item)

    def _write(self, raw: bytes, item: Any, *, auto: bool = False, note: str = "") -> None:
        with self._send_lock:
            self.transcript.add("out", item, raw, auto=auto, note=note)
            try:
                self.sock.sendall(raw)
            except OSError as exc:
                what = "bytes" if isinstance(item, bytes) else summarize(item)
                raise ConnectionLost(f"nothing: sending {what} failed ({exc.strerror or exc})",
                                     list(self.arrived)) from None

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

    # -- expectations ----------------------------------------------------------------------------------

    def mark(self) -> int:
        """A position in the incoming stream; `expect(..., after=mark)` ignores frames that came before it."""
        with self._cond:
            return len(self.arrived)

    def _wait(self, what: str, timeout: float | None, find: Callable[[], Any]) -> Any:
        """Wait (bounded, named) until `find()` (called under the lock) returns something."""
        wait = self.timeouts.frame if timeout is None else timeout
        deadline = time.monotonic() + wait
        with self._cond:
            while True:
                found = find()
                if found is not None:
                    return found
                if self._failure is not None:
                    raise self._failure
                if self._closed_by_remote:
                    raise ConnectionLost(what, list(self.arrived))
                left = deadline - time.monotonic()
                if left <= 0:
                    raise ExpectationTimeout(what, wait, list(self.arrived))
                self._cond.wait(left)

    def _take(self, accept: Callable[[int, Any], bool]) -> Callable[[], Any]:
        def find():
            for i, (seq, item) in enumerate(self._inbox):
                if accept(seq, item):
                    del self._inbox[i]
                    return item
            return None
        return find

    def expect(self, kinds=None, *, timeout: float | None = None, channel: int | None = None,
               where: Callable | None = None, after: int | None = None, **fields: Matcher) -> Frame:
        """Wait for the first frame in the inbox (arrival order) matching the pattern; remove and return it.

        kinds: a performative class or a tuple of them (None: any). fields: value (==), class (isinstance)
        or predicate per field. where: a predicate on the whole Frame. after: a `mark()`.
        """
        kinds_t = _kinds(kinds)
        check_fields(kinds_t, fields)
        what = describe_pattern(kinds_t, channel, fields)
        return self._wait(what, timeout, self._take(
            lambda seq, item: (after is None or seq >= after) and matches(item, kinds_t, channel, where, fields)))

    def expect_any(self, *kinds, timeout: float | None = None, **fields) -> Frame:
        """`expect((A, B, ...))`: whichever of the kinds comes first."""
        return self.expect(kinds, timeout=timeout, **fields)

    def expect_header(self, protocol_id: int | None = None, *, timeout: float | None = None) -> ProtocolHeader:
        """Wait for a protocol header; with `protocol_id`, a different one raises UnexpectedFrame."""
        header = self._wait("a protocol header", timeout,
                            self._take(lambda seq, item: isinstance(item, ProtocolHeader)))
        if protocol_id is not None and header.protocol_id != protocol_id:
            raise UnexpectedFrame(f"expected protocol header id {protocol_id}", header, list(self.arrived))
        return header

    def expect_nothing(self, kinds=None, *, quiet: float | None = None, channel: int | None = None,
                       where: Callable | None = None, after: int | None = None, **fields: Matcher) -> list:
        """Watch the quiet period: raise UnexpectedFrame as soon as a matching frame is in the inbox (one
        that arrived earlier and was not consumed counts too, unless `after` excludes it). Returns the
        frames that arrived during the period; they stay in the inbox for later expectations. A connection
        closed by the other side ends the period early (the next expect reports it)."""
        kinds_t = _kinds(kinds)
        check_fields(kinds_t, fields)
        period = self.timeouts.quiet if quiet is None else quiet
        start = self.mark()
        deadline = time.monotonic() + period
        what = describe_pattern(kinds_t, channel, fields)
        with self._cond:
            while True:
                for seq, item in self._inbox:
                    if (after is None or seq >= after) and matches(item, kinds_t, channel, where, fields):
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
        """Wait for the first of `accept` (default detach, end or close) and return it: a broker may answer
        with end or close where detach was asked, and the caller sees which came (`frame.name`).
        With `condition`, a frame carrying another error condition (or none) raises UnexpectedFrame."""
        frame = self.expect(tuple(accept), timeout=timeout, channel=channel)
        got = self.error_condition(frame)
        if condition is not None and got != condition:
            raise UnexpectedFrame(f"expected {'/'.join(k.NAME for k in accept)} with error {condition}", frame,
                                  list(self.arrived))
        return frame

    @staticmethod
    def error_condition(frame: Frame) -> str | None:
        """The error condition a detach/end/close carries, as a string (None without an error)."""
        err = getattr(frame.body, "error", None)
        return str(err.condition) if isinstance(err, Error) and err.condition is not None else None

    def pending(self) -> list:
        """Frames received and not yet consumed by an expectation, in arrival order."""
        with self._cond:
            return [item for _, item in self._inbox]

    def received(self, kind=None) -> list:
        """Every frame that arrived (consumed or not), optionally only one performative kind."""
        kinds_t = _kinds(kind)
        with self._cond:
            return [f for f in self.arrived if isinstance(f, Frame) and (not kinds_t or isinstance(f.body, kinds_t))]

    @property
    def closed_by_remote(self) -> bool:
        return self._closed_by_remote

    # -- handshake -----------------------------------------------------------------------------------------

    def handshake(self, *, sasl: str | None = "auto", container_id: str | None = None,
                  hostname: str | None = None, **open_fields) -> Open:
        """Protocol header(s), SASL, open; waits for the other side's open, starts heartbeats if it
        asked for an idle-time-out, and returns its open. sasl: "auto" (PLAIN when the URL has a user,
        else ANONYMOUS), "PLAIN", "ANONYMOUS", or None (no SASL layer)."""
        address = self.address
        if sasl == "auto":
            sasl = "PLAIN" if address is not None and address.user is not None else "ANONYMOUS"
        if sasl:
            self.send_header(SASL_HEADER)
            header = self.expect_header()
            if header.protocol_id != PROTOCOL_SASL:
                raise SaslFailed(f"the broker answered the SASL header with {summarize(header)}; it may not "
                                 "support SASL: try without SASL (sasl=None)")
            mechs = self.expect(SaslMechanisms).body
            offered = mechs.sasl_server_mechanisms
            offered = [str(offered)] if isinstance(offered, str) else [str(m) for m in offered or ()]
            if sasl not in offered:
                raise SaslFailed(f"the broker offers SASL {', '.join(offered) or 'nothing'}, not {sasl}; pass "
                                 "credentials in the URL for PLAIN or choose a mechanism it offers")
            self.sasl_init(sasl, hostname=hostname)
            outcome = self.expect(SaslOutcome).body
            if outcome.code != 0:
                who = address.redacted() if address else "the broker"
                raise SaslFailed(f"authentication failed at {who} (SASL {sasl}, outcome code {outcome.code}); "
                                 "check the user name and password")
        self.send_header(AMQP_HEADER)
        header = self.expect_header()
        if header.protocol_id != PROTOCOL_AMQP:
            raise SaslFailed(f"the broker answered the AMQP header with {summarize(header)}; it requires SASL")
        fields = dict(open_fields)
        if container_id is not None:
            fields["container_id"] = container_id
        if hostname is not None:
            fields["hostname"] = hostname
        self.open(**fields)
        remote = self.expect(Open).body
        self.remote_open = remote
        self.start_heartbeats(remote.idle_time_out)
        return remote

    def server_handshake(self, **options) -> Open | None:
        """Server role: the broker's half of header / SASL / open (see `server.server_handshake`)."""
        from .server import server_handshake
        return server_handshake(self, **options)

    # -- heartbeats: the only frames the peer sends on its own ----------------------------------------

    def start_heartbeats(self, idle_time_out_ms: Any) -> bool:
        """Send empty frames at half the other side's idle-time-out (ms), recorded with auto=True.
        Returns whether heartbeats were started."""
        if isinstance(idle_time_out_ms, bool) or not isinstance(idle_time_out_ms, int) or idle_time_out_ms <= 0:
            return False
        if self._heartbeat_thread is not None:
            return True
        interval = max(idle_time_out_ms / 2000.0, 0.005)
        self._heartbeat_thread = threading.Thread(target=self._heartbeat_loop, args=(interval,),
                                                  name=f"amqp-peer-{self.role}-heartbeat", daemon=True)
        self._heartbeat_thread.start()
        return True

    def _heartbeat_loop(self, interval: float) -> None:
        raw = heartbeat()
        while not self._stopping.wait(interval):   # the stop event doubles as the bounded interval
            if self._closed_by_remote:
                return
            try:
                self._write(raw, Frame(0, None, raw=raw), auto=True)
            except ConnectionLost:
                return

    # -- reading ---------------------------------------------------------------------------------------

    def _read_loop(self) -> None:
        while not self._stopping.is_set():
            try:
                data = self.sock.recv(65536)
            except (OSError, ValueError):
                data = b""
            if not data:
                with self._cond:
                    self._closed_by_remote = not self._stopping.is_set()
                    self._cond.notify_all()
                return
            self._undelivered += data
            try:
                items = self._decoder.feed(data)
            except DecodeError as exc:
                self._malformed(exc)
                return
            self._deliver(items)

    def _deliver(self, items: list) -> None:
        if items:
            last = items[-1]
            end = last.offset + len(last.raw)
            del self._undelivered[:end - self._stream_pos]
            self._stream_pos = end
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

    def _malformed(self, exc: DecodeError) -> None:
        """Deliver the whole frames before the bad bytes, record the bad bytes, fail every later wait."""
        good = _whole_items(bytes(self._undelivered), self._stream_pos, exc.offset)
        self._deliver(good)
        rest = bytes(self._undelivered)
        with self._cond:
            self.transcript.add("in", rest, rest, note=f"undecodable at stream offset {exc.offset}: {exc.reason}")
            self._failure = MalformedInput(exc, rest, list(self.arrived))
            self._cond.notify_all()

    # -- ending --------------------------------------------------------------------------------------------

    def disconnect(self) -> None:
        """Drop the socket without any frame (a script sends close itself when it wants one)."""
        self._stopping.set()
        for step in (lambda: self.sock.shutdown(socket.SHUT_RDWR), self.sock.close):
            try:
                step()
            except OSError:
                pass
        for thread in (self._reader, self._heartbeat_thread):
            if thread is not None and thread is not threading.current_thread():
                thread.join(timeout=2.0)   # bounded: the socket is closed, the threads end at once

    close = disconnect   # `with Peer.connect(...)` and older callers

    def __enter__(self) -> "Peer":
        return self

    def __exit__(self, *exc) -> None:
        self.disconnect()


def _whole_items(buf: bytes, base: int, bad_offset: int) -> list:
    """The headers and frames that lie wholly before `bad_offset` in `buf` (which starts at stream offset
    `base`), decoded one by one so that the bad one does not take the good ones with it."""
    items, pos = [], 0
    while pos + 8 <= len(buf) and base + pos < bad_offset:
        if buf[pos:pos + 4] == b"AMQP":
            raw = buf[pos:pos + 8]
            items.append(ProtocolHeader(raw[4], raw[5], raw[6], raw[7], raw=raw, offset=base + pos))
            pos += 8
            continue
        size = int.from_bytes(buf[pos:pos + 4], "big")
        if size < 8 or pos + size > len(buf) or base + pos + size > bad_offset:
            break
        try:
            items.append(decode_frame(buf[pos:pos + size], base + pos))
        except DecodeError:
            break
        pos += size
    return items
