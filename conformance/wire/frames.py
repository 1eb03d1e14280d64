"""AMQP 1.0 framing (Part 2 §2.2 protocol header, §2.3 frames; Part 5 §5.3.1 SASL frames).

This module owns the 8-byte frame header, protocol headers, heartbeats and the incremental frame decoder
that accepts bytes in arbitrary chunks. It never touches sockets: callers feed it bytes and send what
`encode_frame` returns.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from typing import Any

from .decode import DecodeError, decode_performative
from .encode import _COMPILED_FRAMES, EncodeError, encode_composite, encode_value
from .performatives import Composite

AMQP_FRAME = 0x00
SASL_FRAME = 0x01

PROTOCOL_AMQP = 0
PROTOCOL_TLS = 2
PROTOCOL_SASL = 3

AMQP_HEADER = b"AMQP\x00\x01\x00\x00"
TLS_HEADER = b"AMQP\x02\x01\x00\x00"
SASL_HEADER = b"AMQP\x03\x01\x00\x00"

MIN_MAX_FRAME_SIZE = 512
MAX_FRAME_SIZE = 0xFFFFFFFF   # the largest SIZE a frame header can carry (max-frame-size's default, §2.7.1)

_HEADER = struct.Struct(">IBBH")


class NotAProtocolHeader(DecodeError):
    """A stream that must open with a protocol header ("AMQP" + 4 bytes, §2.2) opens with something else:
    the other side does not speak AMQP. `data` holds the bytes seen so far."""

    def __init__(self, data: bytes):
        super().__init__(0, "the stream does not open with an AMQP protocol header")
        self.data = bytes(data)


@dataclass(frozen=True)
class ProtocolHeader:
    """The 8-octet protocol header: "AMQP", protocol id, major, minor, revision."""

    protocol_id: int
    major: int = 1
    minor: int = 0
    revision: int = 0
    raw: bytes = field(default=b"", compare=False, repr=False)
    offset: int = field(default=0, compare=False, repr=False)

    def encode(self) -> bytes:
        return b"AMQP" + bytes((self.protocol_id, self.major, self.minor, self.revision))

    @property
    def name(self) -> str:
        return {PROTOCOL_AMQP: "AMQP", PROTOCOL_TLS: "TLS", PROTOCOL_SASL: "SASL"}.get(
            self.protocol_id, f"protocol-{self.protocol_id}")


@dataclass(slots=True)
class Frame:
    """One frame: channel, body (a composite, or None for an empty frame / heartbeat) and payload.

    `raw` holds the exact bytes sent or received; `offset` the position of the frame in its stream.
    """

    channel: int
    body: Any
    payload: bytes = b""
    frame_type: int = AMQP_FRAME
    raw: bytes = field(default=b"", compare=False, repr=False)
    offset: int = field(default=0, compare=False, repr=False)

    @property
    def is_heartbeat(self) -> bool:
        return self.body is None

    @property
    def name(self) -> str:
        if self.body is None:
            return "empty"
        return getattr(self.body, "NAME", type(self.body).__name__)


def encode_frame(body: Any, channel: int = 0, payload: bytes = b"", frame_type: int = AMQP_FRAME, *,
                 doff: int = 2, extended_header: bytes = b"", validate: bool = True, size: int | None = None) -> bytes:
    """Encode one frame. `body` is a composite, pre-encoded bytes, or None for an empty frame.

    `doff`, `extended_header` and `size` can be set to anything (negative cases); by default the header is
    the standard 8 bytes and SIZE is the real length.
    """
    if size is None and doff == 2 and not extended_header:
        try:                           # the common case: a composite whose frame encoder is compiled
            return _COMPILED_FRAMES[body.__class__](body, channel, payload, validate, frame_type)
        except KeyError:
            if body.__class__ in _COMPILED_FRAMES:
                raise
        except (struct.error, OverflowError, UnicodeEncodeError) as exc:
            raise EncodeError(f"{body.NAME} frame: a value does not fit its field or the header ({exc})") from None
    if isinstance(body, Frame):
        return encode_frame(body.body, body.channel, body.payload, body.frame_type, doff=doff,
                            extended_header=extended_header, validate=validate, size=size)
    if body is None:
        encoded = b""
    elif isinstance(body, (bytes, bytearray)):
        encoded = bytes(body)
    elif isinstance(body, Composite):
        encoded = encode_composite(body, validate=validate)
    else:
        encoded = encode_value(body)
    if extended_header and doff == 2:
        if len(extended_header) % 4:
            raise EncodeError("extended header must be a multiple of 4 bytes (or pass doff= to send it anyway)")
        doff = 2 + len(extended_header) // 4
    total = 8 + len(extended_header) + len(encoded) + len(payload)
    try:
        header = _HEADER.pack(total if size is None else size, doff, frame_type, channel)
    except struct.error as exc:
        raise EncodeError(f"frame header field out of range (SIZE {total if size is None else size}, DOFF {doff},"
                          f" TYPE {frame_type}, channel {channel}): {exc}") from None
    return header + extended_header + encoded + bytes(payload)


def heartbeat() -> bytes:
    """An empty AMQP frame on channel 0 (§2.3.2 / §2.4.5)."""
    return b"\x00\x00\x00\x08\x02\x00\x00\x00"


class FrameDecoder:
    """Incremental decoder: `feed(bytes)` returns the protocol headers and frames completed so far.

    A protocol header is recognised where "AMQP" starts at a frame boundary. Malformed input raises
    DecodeError with the stream offset; after that the decoder is unusable (the connection must close).
    `max_frame_size`, when set, makes a larger SIZE an error (the limit a peer announced in `open`; before
    any open it is MIN-MAX-FRAME-SIZE, 512, §2.4.1); SIZE below 8 is always one. With `header_first` the
    stream must open with a protocol header: the first byte that differs from "AMQP" raises
    NotAProtocolHeader at once (a server that is not an AMQP server at all).
    """

    def __init__(self, max_frame_size: int | None = None, *, header_first: bool = False):
        self.max_frame_size = max_frame_size
        self.header_first = header_first
        self._buf = bytearray()
        self._offset = 0       # stream offset of _buf[0]
        self._failed: DecodeError | None = None

    @property
    def buffered(self) -> int:
        return len(self._buf)

    def feed(self, data: bytes) -> list:
        """The protocol headers and frames completed by `data`, in order; the rest stays buffered. A
        malformed frame raises DecodeError (the frames before it in `data` are consumed and lost to the
        caller: `peer.inbound` recovers them from its own copy of the bytes)."""
        if self._failed is not None:
            raise self._failed
        if self._buf:
            self._buf += data
            buf = bytes(self._buf)
        else:
            buf = data if type(data) is bytes else bytes(data)
        n = len(buf)
        pos = 0
        base = self._offset
        out = []
        append = out.append
        unpack = _HEADER.unpack_from
        frame_body = _frame_body
        limit = self.max_frame_size
        try:
            if self.header_first and base == 0 and buf[:4] != b"AMQP"[:n]:
                raise NotAProtocolHeader(buf)
            while n - pos >= 8:        # a frame header or protocol header is complete
                start = base + pos
                if buf[pos] == 0x41 and buf[pos:pos + 4] == b"AMQP":      # sliced only behind an "A"
                    raw = buf[pos:pos + 8]
                    append(ProtocolHeader(raw[4], raw[5], raw[6], raw[7], raw=raw, offset=start))
                    pos += 8
                    continue
                size, doff, ftype, channel = unpack(buf, pos)
                if size < 8:
                    raise DecodeError(start, f"frame SIZE {size} is less than the 8-byte header (§2.3.1)")
                if doff < 2:
                    raise DecodeError(start + 4, f"frame DOFF {doff} is less than 2 (§2.3.1)")
                if doff * 4 > size:
                    raise DecodeError(start + 4, f"frame DOFF {doff} points past the frame end (SIZE {size})")
                if limit is not None and size > limit:
                    raise DecodeError(start, f"frame SIZE {size} exceeds max-frame-size {limit}")
                if ftype > SASL_FRAME:
                    raise DecodeError(start + 5, f"unknown frame TYPE 0x{ftype:02x}")
                if n - pos < size:
                    break
                append(frame_body(buf[pos:pos + size], start, size, doff * 4, ftype, channel))
                pos += size
        except DecodeError as exc:
            self._failed = exc
            raise
        finally:
            self._buf = bytearray(buf[pos:]) if pos < n else bytearray()
            self._offset = base + pos
        return out


def decode_frame(raw: bytes, offset: int = 0) -> Frame:
    """Decode one complete frame (header included). Offsets in errors are relative to `offset`."""
    if len(raw) < 8:
        raise DecodeError(offset, "frame shorter than its 8-byte header")
    size, doff, ftype, channel = _HEADER.unpack_from(raw, 0)
    if size != len(raw):
        raise DecodeError(offset, f"frame SIZE {size} disagrees with the {len(raw)} bytes given")
    body_start = doff * 4
    if doff < 2:
        raise DecodeError(offset + 4, f"frame DOFF {doff} is less than 2 (§2.3.1)")
    if body_start > size:
        raise DecodeError(offset + 4, f"frame DOFF {doff} points past the frame end (SIZE {size})")
    if ftype not in (AMQP_FRAME, SASL_FRAME):
        raise DecodeError(offset + 5, f"unknown frame TYPE 0x{ftype:02x}")
    return _frame_body(raw, offset, size, body_start, ftype, channel)


def _frame_body(raw: bytes, offset: int, size: int, body_start: int, ftype: int, channel: int) -> Frame:
    """The rest of `decode_frame` once the header is checked (FrameDecoder.feed has checked it already)."""
    if body_start == size:
        if ftype == SASL_FRAME:
            raise DecodeError(offset, "empty SASL frame (§5.3.1: an irrecoverable error)")
        return Frame(channel, None, b"", ftype, raw=raw, offset=offset)
    body, pos = decode_performative(raw, body_start, size, base=offset)
    if not isinstance(body, Composite):
        raise DecodeError(offset + body_start, f"frame body is not a performative: {type(body).__name__}")
    want = "sasl-frame" if ftype == SASL_FRAME else "frame"
    if body.PROVIDES != want:
        raise DecodeError(offset + body_start, f"{body.NAME} is not allowed in a {'SASL' if ftype else 'AMQP'} frame")
    payload = raw[pos:]
    if ftype == SASL_FRAME and payload:
        raise DecodeError(offset + pos, "SASL frame carries bytes after its performative")
    return Frame(channel, body, payload, ftype, raw, offset)
