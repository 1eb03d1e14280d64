"""The transcript of one connection: every protocol header and frame in and out, in order.

This module owns what is recorded (monotonic time, direction, raw bytes, decoded performative) and the
redaction of secrets: a SASL initial-response / response is replaced before it is stored, in the decoded
frame and in the raw bytes alike, and any registered secret (the URL's password) is masked in raw bytes
and notes, so no rendering (JSON, ladder, logs) can show a password. It never touches sockets.

JSON schema (`Transcript.to_json()`, version 1):
    {"schema": "amqp-conformance/transcript/1", "label": str, "entries": [entry, ...]}
    entry = {"index": int, "t": float seconds since the transcript began (monotonic clock),
             "direction": "out" (peer -> other side) | "in", "name": "header" | "empty" | "raw" | performative
             name ("flow", "sasl-init"...), "raw": hex of the exact bytes (redacted), "summary": str,
             and for frames: "channel": int, "frame_type": "amqp" | "sasl", "fields": {"type": name,
             field: value...} (only fields present; binary as {"binary": hex}, described as {"type", "value"}),
             "payload_size": int; for headers: "protocol_id": int; optional "auto": true (heartbeats the peer
             sent on its own), "note": str}
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import Any

from ..wire import Frame, ProtocolHeader, SaslInit, SaslResponse, encode_frame
from ..wire.frames import SASL_FRAME
from . import ladder

REDACTED = b"<redacted>"
SCHEMA = "amqp-conformance/transcript/1"


@dataclass(slots=True)
class Entry:
    index: int
    t: float                 # seconds since the transcript started (monotonic clock)
    direction: str           # "out": peer -> broker, "in": broker -> peer
    item: Any                # Frame or ProtocolHeader (decoded), or bytes for raw sends
    raw: bytes
    auto: bool = False       # sent by the peer on its own (heartbeats)
    note: str = ""

    @property
    def name(self) -> str:
        if isinstance(self.item, ProtocolHeader):
            return "header"
        if isinstance(self.item, Frame):
            return self.item.name
        return "raw"

    def to_json(self) -> dict:
        d: dict[str, Any] = {"index": self.index, "t": round(self.t, 6), "direction": self.direction,
                             "name": self.name, "raw": self.raw.hex()}
        if isinstance(self.item, Frame):
            d["channel"] = self.item.channel
            d["frame_type"] = "sasl" if self.item.frame_type == SASL_FRAME else "amqp"
            d["summary"] = ladder.summarize(self.item)
            d["fields"] = _fields_json(self.item.body)
            d["payload_size"] = len(self.item.payload)
        elif isinstance(self.item, ProtocolHeader):
            d["summary"] = ladder.summarize(self.item)
            d["protocol_id"] = self.item.protocol_id
        else:
            d["summary"] = f"raw bytes ({len(self.raw)})"
        if self.auto:
            d["auto"] = True
        if self.note:
            d["note"] = self.note
        return d


def _json_value(v: Any) -> Any:
    if v is None or isinstance(v, (bool, str)):
        return v if not isinstance(v, str) else str(v)
    if isinstance(v, int):
        return int(v)
    if isinstance(v, float):
        return float(v)
    if isinstance(v, (bytes, bytearray)):
        return {"binary": bytes(v).hex()}
    if isinstance(v, dict):
        return {str(k): _json_value(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_json_value(x) for x in v]
    if hasattr(v, "items") and hasattr(v, "element_type"):
        return [_json_value(x) for x in v.items]
    if hasattr(v, "present_fields"):
        return {"type": v.NAME, **{k: _json_value(x) for k, x in v.present_fields().items()}}
    if hasattr(v, "VALUE_TYPE"):
        return {"type": v.NAME, "value": _json_value(v.value)}
    return str(v)


def _fields_json(body) -> dict | None:
    if body is None:
        return None
    return {"type": body.NAME, **{k: _json_value(v) for k, v in body.present_fields().items()}}


def redact(frame: Frame) -> Frame:
    """A copy of a SASL frame with credentials replaced; other frames unchanged."""
    body = frame.body
    if isinstance(body, SaslInit) and body.initial_response is not None and str(body.mechanism) != "ANONYMOUS":
        body = body.replace(initial_response=REDACTED)
    elif isinstance(body, SaslResponse):
        body = body.replace(response=REDACTED)
    else:
        return frame
    raw = encode_frame(body, frame.channel, frame.payload, frame.frame_type)
    return Frame(frame.channel, body, frame.payload, frame.frame_type, raw=raw, offset=frame.offset)


class Transcript:
    """Thread-safe, append-only record of a connection (the reader thread and the script both add)."""

    def __init__(self, label: str = "broker"):
        self.label = label
        self._entries: list[Entry] = []   # recorded and made into entries
        self._pending: list = []          # recorded since: Entry, or (first index, t, direction, items) of a read
        self._count = 0                   # entries recorded so far (made or pending)
        self._t0 = time.monotonic()
        self._lock = threading.Lock()
        self._secrets: list[bytes] = []

    @property
    def entries(self) -> list[Entry]:
        """Every entry in order. The frames of a read are kept as the decoded items until someone reads the
        transcript: their entries are made then (the same entries `add` would have made at once)."""
        with self._lock:
            return self._made()

    def _made(self) -> list[Entry]:
        entries, pending = self._entries, self._pending
        if pending:
            for record in pending:
                if record.__class__ is Entry:
                    entries.append(record)
                else:
                    first, t, direction, items = record
                    entries.extend(Entry(first + k, t, direction, item, item.raw) for k, item in enumerate(items))
            pending.clear()
        return entries

    def add_secret(self, secret: str | bytes) -> None:
        """Mask this secret wherever it would appear in raw bytes or notes recorded from now on."""
        value = secret.encode() if isinstance(secret, str) else bytes(secret)
        if len(value) >= 3:     # masking one or two bytes would corrupt every frame, not protect anything
            with self._lock:
                self._secrets.append(value)

    def _scrub(self, data: bytes) -> bytes:
        for secret in self._secrets:
            if secret in data:
                data = data.replace(secret, b"*" * len(secret))
        return data

    def add(self, direction: str, item: Any, raw: bytes, *, auto: bool = False, note: str = "") -> Entry:
        if isinstance(item, Frame) and item.frame_type == SASL_FRAME:
            item = redact(item)
            raw = item.raw or raw
        if self._secrets:
            raw = self._scrub(bytes(raw))
            if isinstance(item, (bytes, bytearray)):
                item = raw
            note = self._scrub(note.encode()).decode(errors="replace")
        with self._lock:
            entry = Entry(self._count, time.monotonic() - self._t0, direction, item, raw, auto, note)
            self._pending.append(entry)
            self._count += 1
            return entry

    def add_items(self, direction: str, items: list) -> None:
        """Record decoded headers and frames that came off one read, in order: the entries `add(direction,
        item, item.raw)` would make for each, with one clock reading (they arrived together) and one lock.
        In the common case (no SASL frame, no secret in the bytes) the items are kept as they are and their
        entries made when the transcript is read: recording costs one list append per read."""
        secrets = self._secrets
        scrub = bool(secrets) and any(secret in b"".join(item.raw for item in items) for secret in secrets)
        sasl = SASL_FRAME
        plain = not scrub and not any(item.__class__ is Frame and item.frame_type == sasl for item in items)
        with self._lock:
            t = time.monotonic() - self._t0
            index = self._count
            self._count += len(items)
            if plain:
                self._pending.append((index, t, direction, items))
                return
            append = self._pending.append
            for item in items:
                raw = item.raw
                if item.__class__ is Frame and item.frame_type == sasl:
                    item = redact(item)
                    raw = item.raw or raw
                if scrub:
                    raw = self._scrub(bytes(raw))
                append(Entry(index, t, direction, item, raw))
                index += 1

    def frames(self, direction: str | None = None, name: str | None = None) -> list[Frame]:
        with self._lock:
            entries = list(self._made())
        return [e.item for e in entries if isinstance(e.item, Frame)
                and (direction is None or e.direction == direction) and (name is None or e.name == name)]

    def snapshot(self) -> list[Entry]:
        with self._lock:
            return list(self._made())

    def to_json(self) -> dict:
        return {"schema": SCHEMA, "label": self.label, "entries": [e.to_json() for e in self.snapshot()]}

    def ladder(self, *, peer_is_receiver: bool = True, receiver_side: str | None = None, width: int = 110,
               include_sasl: bool = True) -> str:
        """The transcript as a ladder (Figures 2.43-2.46): the receiver of the link under study on the left.
        `receiver_side="peer"|"broker"` is the same choice as `peer_is_receiver`."""
        if receiver_side is not None:
            if receiver_side not in ("peer", "broker"):
                raise ValueError(f"receiver_side must be 'peer' or 'broker', not {receiver_side!r}")
            peer_is_receiver = receiver_side == "peer"
        entries = self.snapshot()
        if not include_sasl:
            entries = [e for e in entries if not (isinstance(e.item, Frame) and e.item.frame_type == SASL_FRAME)]
        if peer_is_receiver:
            return ladder.render(entries, left="peer", left_label="Receiver (peer)",
                                 right_label=f"Sender ({self.label})", width=width)
        return ladder.render(entries, left="broker", left_label=f"Receiver ({self.label})",
                             right_label="Sender (peer)", width=width)


def frames_after_the_end(doc: dict | list) -> list[str]:
    """What a transcript (its JSON, `Transcript.to_json()`, or a run's transcript file: a list of them, one per
    connection) shows our side sending after the other side ended: any frame after its close except one close
    of ours (2.4.3: the close "MUST be the last thing ever written onto a connection"), and any frame on a
    session's channel after its end except our one end (a begin after both ends starts a new session). One
    line per frame found, naming its index (and connection); [] when there is none."""
    if isinstance(doc, list):
        return [f"connection {n}: {line}" for n, one in enumerate(doc, 1) for line in frames_after_the_end(one)]
    found: list[str] = []
    closed_at: int | None = None
    our_close = False
    ours_of: dict[int, int] = {}       # the other side's channel -> ours (from its begin's remote-channel)
    ended: dict[int, int] = {}         # our channel -> index of the other side's end, until our end answers it
    ending: set[int] = set()           # our channels where our end went out first (their end completes it)
    for e in doc.get("entries", []):
        name, channel, index = e.get("name"), e.get("channel"), e.get("index")
        if e.get("direction") == "in":
            fields = e.get("fields") or {}
            if name == "close":
                closed_at = index if closed_at is None else closed_at
            elif name == "begin" and fields.get("remote_channel") is not None:
                ours_of[channel] = fields["remote_channel"]
            elif name == "end" and channel in ours_of:
                ours = ours_of.pop(channel)
                if ours in ending:
                    ending.discard(ours)       # the answer to our end: the channel is free again
                else:
                    ended.setdefault(ours, index)
            continue
        if closed_at is not None:
            if name == "close" and not our_close:
                our_close = True
                continue
            found.append(f"frame {index} {e.get('summary', name)} after the other side's close (frame {closed_at})")
            continue
        if name in ("close", "empty") or channel is None or e.get("frame_type") == "sasl":
            continue
        if channel in ended:
            if name == "end":
                del ended[channel]             # our end answers theirs: the session is over
            else:
                found.append(f"frame {index} {e.get('summary', name)} on channel {channel} after the other side's "
                             f"end of that session (frame {ended[channel]})")
        elif name == "end":
            ending.add(channel)
    return found
