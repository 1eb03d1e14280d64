"""What the script waits for: matching received frames against patterns, and the bounded, named waits.

This module owns the inbox semantics. Frames arrive in order into the inbox. `expect` scans the inbox in
arrival order and removes the first frame that matches; frames that do not match stay for later
expectations. `arrived` keeps every incoming frame whether expected or not. Every wait has a bound and says
what it waited for when it runs out; a connection that ended or bytes that could not be decoded end every
wait at once with the error that says so; so does the other side's close frame (nothing may follow it).
A predicate that raises is a bug in the script: it ends the wait at once with `PredicateError` (never "no
match", which would become a broker finding after the timeout).

`Expectations` is the part of `Peer` that waits; it reads the peer's inbox under the peer's condition
(`_cond`, `_inbox`, `arrived`, `_failure`, `ending`, `timeouts`), which the peer's reading fills. A waiting
thread reads the socket itself when `_read_here` allows (transport.py: no hand-off per read); otherwise the
reader thread fills the inbox and notifies.
"""

from __future__ import annotations

import time
from itertools import islice
from typing import Any, Callable

from ..wire import Close, Detach, End, Error, Frame, ProtocolHeader
from .errors import CLOSE_FRAME, ConnectionLost, ExpectationTimeout, PredicateError, ScriptError, UnexpectedFrame


class Precluded(ExpectationTimeout):
    """An expectation ended early: a frame arrived that rules out the awaited one (e.g. the broker ended
    the session whose answer we waited for). An `ExpectationTimeout` that waited 0 s, naming that frame."""

    def __init__(self, description: str, frame: Any, arrived: list):
        super().__init__(description, 0.0, arrived)
        self.frame = frame


Matcher = Any  # a value compared with ==, or a callable predicate


def _kinds(kinds) -> tuple:
    if kinds is None:
        return ()
    if isinstance(kinds, (tuple, list)):
        return tuple(kinds)
    return (kinds,)


def _holds(predicate: Callable, value: Any, role: str, frame: Any) -> bool:
    """`predicate(value)`; a predicate that raises is a bug in the script (`PredicateError`), never "no
    match": that would turn a typo into a broker finding after the frame timeout."""
    try:
        return bool(predicate(value))
    except Exception as exc:      # any exception of the predicate becomes the one documented error
        raise PredicateError(role, predicate, frame, exc) from exc


def _field_matches(want: Any, have: Any, name: str, frame: Any) -> bool:
    if isinstance(want, type):                 # a class: state=Accepted
        return isinstance(have, want)
    if callable(want):                         # a predicate: it sees None for an absent field
        return _holds(want, have, f"{name}=", frame)
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
        if not _field_matches(want, getattr(item.body, name, None), name, item):
            return False
    if where is None:
        return True
    return _holds(where, item, "where=", item)


def unless_matches(item: Any, unless: Callable) -> bool:
    """Whether a received frame rules the awaited one out (`expect(..., unless=)`)."""
    return isinstance(item, Frame) and item.body is not None and _holds(unless, item, "unless=", item)


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


class Expectations:
    """Waiting for frames (mixed into `Peer`)."""

    # The round-trip time measured during the handshake (seconds; 0 until measured). A quiet period is
    # watched from when an answer to our last frame could have arrived: on a slow network the broker's
    # answer comes a round trip later, and an absence check must not end before it could come.
    round_trip: float = 0.0
    # Wait accounting (seconds, per connection): expectations that ran out, and quiet periods watched.
    timed_out_s: float = 0.0
    quiet_s: float = 0.0
    # How many frames had arrived when a wait bounded by the whole frame timeout last ran out (None: none
    # has): a broker that owed an answer and has sent nothing since is not answering (`silent_since_timeout`).
    _ran_out_at: int | None = None
    # The other side's close frame arrived (set by the peer's reading): every wait ends at once.
    remote_closed: bool = False

    # `transport.read_here` (set by the peer): read the socket on the waiting thread. None: wait for the
    # reader thread only.
    _read_here: Callable[[float], bool] | None = None

    # -- expectations ----------------------------------------------------------------------------------

    def mark(self) -> int:
        """A position in the incoming stream; `expect(..., after=mark)` ignores frames that came before it."""
        with self._cond:
            return len(self.arrived)

    def _wait(self, what: str | Callable[[], str], timeout: float | None, find: Callable[[], Any]) -> Any:
        """Wait (bounded, named) until `find()` (called under the lock) returns something. `what` may be a
        function giving the name: it is called only when the wait fails."""
        wait = self.timeouts.frame if timeout is None else timeout
        deadline = time.monotonic() + wait
        read_here = self._read_here
        with self._cond:
            while True:
                found = find()
                if found is not None:
                    return found
                if self._failure is not None:
                    raise self._failure
                if self.ending is not None or self.remote_closed:   # nothing may follow the other side's close
                    raise ConnectionLost(what() if callable(what) else what, list(self.arrived),
                                         self.ending or CLOSE_FRAME)
                left = deadline - time.monotonic()
                if left <= 0:
                    self.timed_out_s += wait
                    if wait >= self.timeouts.frame:
                        self._ran_out_at = len(self.arrived)
                    raise ExpectationTimeout(what() if callable(what) else what, wait, list(self.arrived))
                self._await_input(read_here, left)

    def silent_since_timeout(self) -> bool:
        """A wait bounded by the whole frame timeout ran out and nothing has arrived since: the other side
        has already failed to answer within the frame timeout, and is still silent."""
        with self._cond:
            return self._ran_out_at is not None and len(self.arrived) == self._ran_out_at

    def _await_input(self, read_here: Callable[[float], bool] | None, left: float) -> None:
        """Under `_cond`: let input arrive for up to `left` seconds. This thread reads the socket itself when
        it can (`read_here`, outside the lock; what it reads is queued before it returns), else it waits
        for the reader thread's notification. The caller looks at the inbox again either way."""
        if read_here is not None:
            seen = (len(self.arrived), self.ending, self._failure)
            self._cond.release()
            try:
                if read_here(left):
                    return
            finally:
                self._cond.acquire()
            if (len(self.arrived), self.ending, self._failure) != seen:   # delivered while the lock was free
                return
        self._cond.wait(left)

    def _take(self, accept: Callable[[int, Any], bool]) -> Callable[[], Any]:
        def find():
            inbox = self._inbox
            if not inbox:
                return None
            if accept(*inbox[0]):                 # the common case: the oldest frame is the one expected
                return inbox.popleft()[1]
            for i, (seq, item) in enumerate(islice(inbox, 1, None), 1):
                if accept(seq, item):
                    del inbox[i]
                    return item
            return None
        return find

    def expect(self, kinds=None, *, timeout: float | None = None, channel: int | None = None,
               where: Callable | None = None, after: int | None = None, unless: Callable | None = None,
               **fields: Matcher) -> Frame:
        """Wait for the first frame in the inbox (arrival order) matching the pattern; remove and return it.

        kinds: a performative class or a tuple of them (None: any). fields: value (==), class (isinstance)
        or predicate per field. where: a predicate on the whole Frame. after: a `mark()`. unless: a
        predicate on a Frame that rules the awaited one out (e.g. the session's end): when such a frame is
        in the inbox (from `after` on) and no matching one came before it, `Precluded` is raised at once
        and the frame stays in the inbox.
        """
        kinds_t = _kinds(kinds)
        check_fields(kinds_t, fields)
        what = lambda: describe_pattern(kinds_t, channel, fields)   # noqa: E731 - named only when the wait fails
        accept = lambda seq, item: (after is None or seq >= after) and matches(item, kinds_t, channel, where, fields)
        if unless is None:
            return self._wait(what, timeout, self._take(accept))

        def find():
            for i, (seq, item) in enumerate(self._inbox):
                if accept(seq, item):
                    del self._inbox[i]
                    return item
                if (after is None or seq >= after) and unless_matches(item, unless):
                    raise Precluded(what(), item, list(self.arrived))
            return None
        return self._wait(what, timeout, find)

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
        that arrived earlier and was not consumed counts too, unless `after` excludes it); the period is
        `quiet` (default timeouts.quiet) plus the measured round trip (`round_trip`). Returns the
        frames that arrived during the period; they stay in the inbox for later expectations. A connection
        closed by the other side ends the period early (the next expect reports it)."""
        kinds_t = _kinds(kinds)
        check_fields(kinds_t, fields)
        period = (self.timeouts.quiet if quiet is None else quiet) + self.round_trip
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
                if left <= 0 or self.ending is not None or self.remote_closed:
                    self.quiet_s += period - max(left, 0.0)
                    return list(self.arrived[start:])
                self._await_input(self._read_here, left)

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
