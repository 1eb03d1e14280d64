"""Judging one observed AMQP connection, both endpoints, from a vantage point between them (sans-IO).

This module owns turning the two byte streams of one TCP connection, as a proxy or a capture saw them, into
findings: which endpoint (client or server, with the container-id and product/version of its open) broke
which requirement, at which frame. It never does I/O: `ConnectionJudge.feed(side, data)` takes bytes in the
order the vantage point saw them and returns the findings they complete.

Both endpoints are judged with the in-flight rule (conformance/model/oracle.py): from between the two, either
side may have sent a frame before it saw the other's. The oracle applies its rule to the side it judges as
"in", so each side is judged by its own oracle fed the conversation from the other side's seat: the server
by an oracle where the client's frames are "out", the client by one where the server's frames are "out".

Streams whose start was not captured (mid-stream) are judged from their first whole frame: the decoder
searches a frame boundary (a chain of plausible frame headers that decode), and the oracle, which only
keeps state for sessions and links whose begin / attach it saw, leaves what it cannot know unknown: frames of
sessions begun before the capture started are not judged, never judged against a guessed count or window.
A stream that opens with a TLS header or a TLS record is skipped as `tls`, one that is neither AMQP nor
TLS as `not-amqp`; an undecodable frame is a finding (`decode-error`) and ends judging that connection.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

from ..model.oracle import IN, OUT, FlowOracle
from ..verdict import Verdict
from ..peer.ladder import summarize
from ..wire import DecodeError, Frame, FrameDecoder, ProtocolHeader
from ..wire.frames import PROTOCOL_TLS, SASL_FRAME, decode_frame

CLIENT, SERVER = "client", "server"
SIDES = (CLIENT, SERVER)
DECODE_ERROR = "decode-error"          # the requirement column of a finding for bytes that are no frame
DECODE_LEVEL = Verdict.ERROR.value     # its level: the judging broke there, as an error verdict says
UNKNOWN = "unknown"

_HEADER = struct.Struct(">IBBH")
_SYNC_MAX_FRAME = 1 << 24              # a frame header claiming more is taken for a false boundary
_SYNC_CHAIN = 3                        # whole frames in a row that make a mid-stream boundary certain
_SYNC_GIVE_UP = 1 << 20                # bytes searched for a boundary before a stream is called not AMQP


def other(side: str) -> str:
    return SERVER if side == CLIENT else CLIENT


@dataclass
class Endpoint:
    """Who one side of the connection is, from its open (unknown when the open was not captured)."""

    address: str = ""
    container_id: str | None = None
    product: str | None = None
    version: str | None = None

    @property
    def label(self) -> str:
        product = f"{self.product or UNKNOWN}@{self.version or UNKNOWN}"
        return f"{self.container_id or UNKNOWN} ({product})"

    def to_json(self) -> dict:
        return {"address": self.address, "container_id": self.container_id, "product": self.product,
                "version": self.version}


@dataclass(frozen=True)
class Finding:
    connection: str
    requirement_id: str
    level: str
    endpoint: str              # "client" | "server": whose frame broke it
    container_id: str | None
    product: str | None
    version: str | None
    frame_index: int           # among the connection's frames (both directions), from 0
    frame: str                 # the frame, summarised
    detail: str
    t: float | None = None     # capture / proxy time of the frame, when known

    def to_json(self) -> dict:
        return dict(self.__dict__)

    def line(self) -> str:
        product = f"{self.product or UNKNOWN}@{self.version or UNKNOWN}"
        return (f"{self.level:<7} {self.requirement_id:<40} {self.connection}  {self.endpoint} "
                f"{self.container_id or UNKNOWN} ({product})  frame #{self.frame_index} {self.frame}: {self.detail}")


def _text(value) -> str | None:
    if value is None:
        return None
    if isinstance(value, (bytes, bytearray)):
        return bytes(value).decode("utf-8", "replace")
    return str(value)


def _is_tls_record(data: bytes) -> bool:
    return len(data) >= 3 and data[0] == 0x16 and data[1] == 0x03 and data[2] <= 0x04


def _plausible(buf: bytes, pos: int) -> int:
    """The size of a plausible AMQP frame header at pos (0: none)."""
    size, doff, ftype, _channel = _HEADER.unpack_from(buf, pos)
    if size < 8 or size > _SYNC_MAX_FRAME or doff != 2 or ftype > SASL_FRAME:
        return 0
    if size > 8 and len(buf) - pos >= 10 and buf[pos + 8:pos + 10] != b"\x00\x53":
        return 0                             # a performative is described by a smallulong code
    return size


def find_boundary(buf: bytes, first: int = 0) -> int | None:
    """The first offset in buf (from `first`) from which whole frames follow one another up to the end of the
    data or for three frames in a row (mid-stream sync); None: no such offset yet. An offset below len(buf) - 7
    that is not returned never will be, whatever follows: a caller with more data may start at len(buf) - 7."""
    n = len(buf)
    for start in range(first, max(first, n - 7)):
        pos, whole = start, 0
        while n - pos >= 8:
            size = _plausible(buf, pos)
            if not size:
                break
            if n - pos < size:
                break
            try:
                decode_frame(buf[pos:pos + size], pos)
            except DecodeError:
                size = 0
                break
            whole += 1
            pos += size
            if whole >= _SYNC_CHAIN:
                return start
        else:
            size = 1
        if whole and size:                   # whole frames, then the end of what was captured so far
            return start
    return None


class _Stream:
    """One direction's bytes to frames: from the start of the stream, or mid-stream after a boundary."""

    def __init__(self, from_start: bool):
        self.decoder = FrameDecoder()
        self.from_start = from_start
        self.synced = from_start
        self.pending = bytearray()
        self.seen = 0
        self.scanned = 0                   # mid-stream: offsets of `pending` below this are no frame boundary
        self.kind: str | None = None       # None (AMQP or undecided), "tls", "not-amqp"

    def feed(self, data: bytes) -> list:
        if self.kind is not None:
            return []
        if self.seen == 0 and self.from_start and data:
            self.pending += data
            head = bytes(self.pending[:8])
            if _is_tls_record(head):
                self.kind = "tls"
                return []
            if len(head) < 3 and head[:1] == b"\x16":
                return []                        # perhaps a TLS record: wait for its version bytes
            if head[:4] != b"AMQP"[:len(head)]:
                self.kind = "not-amqp"           # the stream's first bytes: an AMQP stream opens with "AMQP"
                return []
            elif len(head) < 8:
                return []
            else:
                data, self.pending = bytes(self.pending), bytearray()
                self.seen = len(data)
                return self._decode(data)
        self.seen += len(data)
        if not self.synced:
            self.pending += data
            buf = bytes(self.pending)
            if buf[:4] == b"AMQP" and len(buf) >= 8:
                start = 0
            elif _is_tls_record(buf[:3]):
                self.kind = "tls"
                return []
            else:
                start = find_boundary(buf, self.scanned)
            if start is None:
                self.scanned = max(self.scanned, len(buf) - 7)
                if len(buf) > _SYNC_GIVE_UP:
                    self.kind = "not-amqp"
                return []
            self.synced, self.pending = True, bytearray()
            return self._decode(buf[start:])
        return self._decode(data)

    def _decode(self, data: bytes) -> list:
        items = self.decoder.feed(data)
        for item in items:
            if isinstance(item, ProtocolHeader):
                if item.protocol_id == PROTOCOL_TLS:
                    self.kind = "tls"
                    return [item]
                if item.protocol_id not in (0, 3):
                    self.kind = "not-amqp"
                    return []
        return items


class ConnectionJudge:
    """One connection's two streams in, findings out. `from_start`: whether the capture saw its beginning."""

    def __init__(self, name: str, *, client: str = "", server: str = "", from_start: bool = True):
        self.name = name
        self.endpoints = {CLIENT: Endpoint(client), SERVER: Endpoint(server)}
        self.streams = {CLIENT: _Stream(from_start), SERVER: _Stream(from_start)}
        self.mid_stream = not from_start
        # judges the server: the client's frames are "out"; judges the client: the server's frames are "out"
        self._oracles = {SERVER: FlowOracle(judge="in"), CLIENT: FlowOracle(judge="in")}
        self.findings: list[Finding] = []
        self.frames = 0
        self.headers = 0
        self.stopped: str | None = None     # why judging ended early (decode error)
        self.t: float | None = None
        self.on_items = None                # called with (side, items) for every decoded batch (transcripts)

    @property
    def kind(self) -> str:
        """"amqp", "tls", "not-amqp" or "empty" (no byte of AMQP seen)."""
        kinds = {s.kind for s in self.streams.values()} - {None}
        if "tls" in kinds:
            return "tls"
        if "not-amqp" in kinds and not self.frames:
            return "not-amqp"
        if self.frames or self.headers:
            return "amqp"
        if any(s.seen for s in self.streams.values()):
            return "not-amqp"
        return "empty"

    def feed(self, side: str, data: bytes, t: float | None = None) -> list[Finding]:
        """Bytes `side` sent, in the order the vantage point saw them; returns the new findings."""
        if self.stopped is not None or not data:
            return []
        self.t = t
        try:
            items = self.streams[side].feed(data)
        except DecodeError as exc:
            self.stopped = f"{side} sent bytes that are no AMQP frame at stream offset {exc.offset}: {exc}"
            finding = self._finding(side, DECODE_ERROR, DECODE_LEVEL, "undecodable bytes", str(exc))
            self.findings.append(finding)
            return [finding]
        if self.on_items is not None and items:
            self.on_items(side, items)
        return self.observe(side, items)

    def gap(self, side: str) -> None:
        """Bytes `side` sent were never captured: what follows cannot be judged (its state is unknown)."""
        if self.stopped is None:
            self.stopped = f"bytes the {side} sent are missing from the capture; not judged after frame #{self.frames}"

    def observe(self, side: str, items: list) -> list[Finding]:
        """Decoded protocol headers and frames `side` sent (what a proxy that decodes anyway hands in)."""
        found: list[Finding] = []
        server_dir = OUT if side == CLIENT else IN          # direction for the oracle judging the server
        client_dir = IN if side == CLIENT else OUT
        judge_server = self._oracles[SERVER].observe
        judge_client = self._oracles[CLIENT].observe
        frames = self.frames
        for item in items:
            if item.__class__ is not Frame:
                self.headers += 1
                continue
            if item.frame_type == SASL_FRAME:
                frames += 1
                continue
            body = item.body
            if body is not None and body.NAME == "open":
                self._identify(side, body)
            vs = judge_server(server_dir, item)
            vc = judge_client(client_dir, item)
            if vs or vc:
                self.frames = frames
                for v in vs + vc:
                    if v.level in ("MUST", "SHOULD"):
                        found.append(self._finding(side, v.requirement_id, v.level, summarize(item), v.detail))
            frames += 1
        self.frames = frames
        self.findings += found
        return found

    def _identify(self, side: str, body) -> None:
        ep = self.endpoints[side]
        ep.container_id = _text(body.container_id)
        props = body.properties or {}
        for key, value in props.items():
            name = str(key).lower()
            if name == "product":
                ep.product = _text(value)
            elif name == "version":
                ep.version = _text(value)

    def _finding(self, side: str, requirement: str, level: str, frame: str, detail: str) -> Finding:
        ep = self.endpoints[side]
        return Finding(self.name, requirement, level, side, ep.container_id, ep.product, ep.version,
                       self.frames, frame, detail, self.t)

    def summary(self) -> dict:
        return {"connection": self.name, "kind": self.kind, "mid_stream": self.mid_stream,
                "frames": self.frames, "findings": len(self.findings), "stopped": self.stopped,
                "client": self.endpoints[CLIENT].to_json(), "server": self.endpoints[SERVER].to_json()}
