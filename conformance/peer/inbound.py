"""The peer's inbound path, sans-IO: bytes as they come off the socket in, protocol headers and frames out.

This module owns the limits a peer puts on what it reads (the stream opens with a protocol header; no frame
larger than the max-frame-size we announced -- 512 bytes before our open, §2.4.1 -- nor smaller than its
8-byte header, §2.3.1) and what happens at malformed input: the whole headers and frames before the bad
bytes are still delivered, the bad bytes are kept for the transcript, and nothing is decoded after them.
Every frame is also shown to the peer's session/link bookkeeping (`PeerState.observe_in`), which never
raises on odd values. No socket, no thread, no clock: `benchmarks/fuzz.py` drives it directly.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..wire import (
    MAX_FRAME_SIZE, MIN_MAX_FRAME_SIZE, DecodeError, Frame, FrameDecoder, Open, ProtocolHeader, decode_frame,
)
from .state import PeerState


@dataclass
class Fed:
    """What one chunk of bytes gave: the items completed, and the decode error that ended the stream (then
    `bad` holds the bytes from the first one not delivered)."""
    items: list = field(default_factory=list)
    error: DecodeError | None = None
    bad: bytes = b""


class Inbound:
    def __init__(self, state: PeerState | None = None):
        self.state = state if state is not None else PeerState()
        self.decoder = FrameDecoder(MIN_MAX_FRAME_SIZE, header_first=True)
        self.failed: DecodeError | None = None
        self._undelivered = bytearray()   # bytes fed to the decoder and not yet returned as items
        self._stream_pos = 0              # stream offset of _undelivered[0]

    @property
    def max_frame_size(self) -> int:
        return self.decoder.max_frame_size

    def sent(self, body) -> None:
        """We sent `body`: after our open, frames up to the max-frame-size it announced are allowed (its
        default is the largest SIZE; an announced value below the minimum still allows the minimum)."""
        if isinstance(body, Open):
            value = body.max_frame_size
            if isinstance(value, bool) or not isinstance(value, int):
                value = MAX_FRAME_SIZE
            self.decoder.max_frame_size = min(max(value, MIN_MAX_FRAME_SIZE), MAX_FRAME_SIZE)

    def feed(self, data: bytes) -> Fed:
        """Decode `data`; frames are observed in the state in order. After an error nothing more is decoded."""
        fed = self.decode(data)
        self.observe(fed.items)
        return fed

    def decode(self, data: bytes) -> Fed:
        """`feed` without the state: the reader decodes outside the peer's lock, then `observe`s the items
        under it (so a script sending meanwhile sees the state before or after the whole read, never half)."""
        if self.failed is not None:
            return Fed(error=self.failed)
        self._undelivered += data
        try:
            items = self.decoder.feed(data)
        except DecodeError as exc:
            self.failed = exc
            good = _whole_items(bytes(self._undelivered), self._stream_pos, exc.offset)
            self._delivered(good)
            bad = bytes(self._undelivered)
            self._undelivered.clear()
            return Fed(good, exc, bad)
        self._delivered(items)
        return Fed(items)

    def _delivered(self, items: list) -> None:
        if items:
            last = items[-1]
            end = last.offset + len(last.raw)
            del self._undelivered[:end - self._stream_pos]
            self._stream_pos = end

    def observe(self, items: list) -> None:
        """Show decoded frames to the session/link bookkeeping, in order (heartbeats and headers skipped)."""
        observe_in = self.state.observe_in
        for item in items:
            if item.__class__ is Frame and item.body is not None:
                observe_in(item)


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
