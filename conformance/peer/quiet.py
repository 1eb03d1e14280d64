"""Letting a connection go quiet: wait (bounded) until the other side stops sending on its own.

This module owns `settle`, used before a request whose answer must not be confused with frames the other
side sends unprompted (credit top-ups): after it, those frames have landed and the answer comes next.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..wire import Flow
from .errors import ExpectationTimeout

if TYPE_CHECKING:
    from .connection import Peer


def settle(peer: "Peer", quiet: float, rounds: int = 40) -> None:
    """Wait until nothing new arrives for `quiet` seconds (at most `rounds` periods)."""
    for _ in range(rounds):
        before = peer.mark()
        try:
            peer.expect(Flow, where=lambda f: False, timeout=quiet)     # a named, bounded wait
        except ExpectationTimeout:
            pass
        if peer.mark() == before:
            return
