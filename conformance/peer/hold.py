"""Holding reads: frames the other side sent that our endpoint has received but not yet read.

This module owns `ReadHold`, the state of one hold (sans-IO: frames in, frames out, no socket). A script
that needs a frame *in flight* when it sends its own (Figure 2.46: a stop crossing transfers; 2.6.7: "If the
link-credit is reduced by the receiver when transfers are in-flight ...") arms a hold after a frame it names
(`Peer.hold_reads_after`): from the frame after that one on, what arrives is decoded but kept here, neither
recorded in the transcript nor shown to the session/link bookkeeping nor queued for expectations. The script
waits until a frame it names is among the held ones (`Peer.await_held`: it is then in our receive buffer,
unread), sends its frame (whose fields come from the bookkeeping, so they show only what was read: e.g. a
delivery-count behind the other side's), and releases the hold (`Peer.release_reads`): the held frames are
then read in order, each recorded with a note saying it was held while our frame went out. That note is the
record that the crossing happened.
"""

from __future__ import annotations

import time
from typing import Callable

from ..wire import Frame


class ReadHold:
    """One hold: armed after the first frame `after(frame)` accepts; then every later item is kept."""

    def __init__(self, after: Callable[[Frame], bool] | None):
        """`after` None: hold from now on (the next frame that arrives is the first kept)."""
        self.after = after
        self.holding = after is None
        self.held: list = []           # items received and not read, in order
        self.since: float | None = time.monotonic() if after is None else None

    def split(self, items: list) -> list:
        """The items of one read that are read now; the rest are kept (in order)."""
        if self.holding:
            self.held.extend(items)
            return []
        for i, item in enumerate(items):
            if item.__class__ is Frame and item.body is not None and self.after(item):
                self.holding = True
                self.since = time.monotonic()
                self.held.extend(items[i + 1:])
                return items[:i + 1]
        return items

    def find(self, predicate: Callable[[Frame], bool]) -> Frame | None:
        """The first held frame `predicate` accepts (None: none yet)."""
        return next((f for f in self.held if f.__class__ is Frame and f.body is not None and predicate(f)), None)
