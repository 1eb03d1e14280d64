"""Crossings forced, not hoped for, and the session window as a barrier: shared by broker and client cases.

This module owns what a case needs to make a frame of ours cross the other side's frames in flight and to
judge what came after it without an optional answer:

- `cross(...)`: with the peer's reads held (peer/hold.py), wait (bounded) until the other side's frame the
  case names is in our receive buffer, unread; send our frame(s), whose fields show only what we read (e.g. a
  delivery-count behind the sender's: Figure 2.46); read on. The `Crossing` is recorded in the observations.
- `window_limit(...)`, `keep_window(...)`: the transfer-id up to which our session incoming-window lets the
  other side send (2.5.6: next-incoming-id + incoming-window, from our latest begin or flow on the channel),
  and the session fields of a flow that leaves that limit where it is. A sender cannot send past the limit
  until it has read our next flow that moves it, and it reads our frames in order: every transfer past it was
  sent after the sender read whatever we sent before that flow (a stop).
- `transfer_ids(...)`: the implicit transfer-id of each transfer the other side sent on a session.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from ..peer import PeerError, summarize
from ..wire import Transfer, serial_add, serial_diff


@dataclass
class Crossing:
    """Our frame sent while a frame of the other side's was in our receive buffer, unread."""

    sent: Any                                  # our (last) frame
    awaited: Any = None                        # the other side's frame we waited for (None: it did not come)
    held: list = field(default_factory=list)   # the other side's frames that were unread when ours went out
    what: str = ""
    read_on_at: int = 0                        # arrival position from which frames were read after the crossing

    @property
    def happened(self) -> bool:
        return self.awaited is not None

    def to_record(self) -> dict:
        held = [summarize(f) for f in self.held[:6]] + ([f"(and {len(self.held) - 6} more)"] if len(self.held) > 6
                                                         else [])
        return {"happened": self.happened, "ours": summarize(self.sent) if self.sent is not None else None,
                "what": self.what, "awaited": summarize(self.awaited) if self.awaited is not None else None,
                "held_unread": held}


def cross(ctx, peer, awaited: Callable[[Any], bool], send: Callable[[], Any], what: str, *,
          timeout: float | None = None) -> Crossing:
    """The crossing (module docstring); the peer's reads must be held already (`peer.hold_reads_after`)."""
    try:
        got = peer.await_held(awaited, what=f"the frame our {what} must cross", timeout=timeout)
    except PeerError:
        got = None
    held_before = peer.held_items()
    before = len(peer.transcript.snapshot())
    send()
    ours = [e for e in peer.transcript.snapshot()[before:] if e.direction == "out" and not e.auto]
    sent, index = (ours[-1].item, ours[-1].index) if ours else (None, None)
    peer.release_reads(note=f"in our receive buffer, unread, when our frame {index} went out",
                       noted=len(held_before))
    held = [f for f in held_before if getattr(f, "body", None) is not None]
    crossing = Crossing(sent, got, held, what, peer.released_at)
    ctx.observe(crossing=crossing.to_record())
    return crossing


def transfers_held_after(count: int, channel: int, handle: int) -> Callable[[Any], bool]:
    """A hold predicate (`peer.hold_reads_after`): true at the `count`-th complete transfer on the other
    side's `channel` and `handle` read from now on."""
    seen = [0]

    def after(frame) -> bool:
        body = frame.body
        if isinstance(body, Transfer) and frame.channel == channel and body.handle == handle and not body.more:
            seen[0] += 1
            return seen[0] == count
        return False
    return after


def transfer_ids(peer, their_channel: int, initial: int) -> list[tuple[int, Any]]:
    """(transfer-id, frame) of every transfer read on the other side's `their_channel`, whose begin said
    next-outgoing-id `initial` (2.5.6: each transfer frame takes the next)."""
    frames = [f for f in peer.arrived if isinstance(getattr(f, "body", None), Transfer) and f.channel == their_channel]
    return [(serial_add(initial, k), f) for k, f in enumerate(frames)]


def window_limit(peer, our_channel: int, initial: int) -> int | None:
    """The transfer-id up to which (exclusive) our incoming-window lets the other side send: our latest begin
    or flow on `our_channel` (a begin counts from the other side's `initial` next-outgoing-id)."""
    for entry in reversed(peer.transcript.snapshot()):
        body = getattr(entry.item, "body", None)
        if entry.direction != "out" or body is None or getattr(entry.item, "channel", None) != our_channel:
            continue
        if body.NAME in ("flow", "begin") and body.incoming_window is not None:
            base = getattr(body, "next_incoming_id", None)
            return serial_add(initial if base is None else int(base), int(body.incoming_window))
    return None


def keep_window(session_state, limit: int | None) -> dict:
    """Session fields for a flow that leaves our window `limit` where it is: next-incoming-id as read so far,
    incoming-window what is left up to the limit."""
    nii = session_state.next_incoming_id
    if limit is None or nii is None:
        return {}
    return {"next_incoming_id": nii, "incoming_window": max(0, serial_diff(nii, limit))}


def at_or_past(ids: list[tuple[int, Any]], limit: int) -> list:
    """The frames of `ids` (transfer_ids) whose transfer-id is at or past `limit`."""
    return [f for tid, f in ids if serial_diff(limit, tid) >= 0]


def summarize_first(frames: list) -> str | None:
    """The first of `frames`, summarised (None: no frame)."""
    return summarize(frames[0]) if frames else None
