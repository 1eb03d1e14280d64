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
    AMQP_HEADER, SASL_HEADER, Accepted, Attach, Begin, Close, DecodeError, Detach, Disposition, End, Error, Flow,
    Frame, FrameDecoder, Open, ProtocolHeader, SaslInit, SaslMechanisms, SaslOutcome, Source, Symbol, Target,
    Transfer, encode_frame, heartbeat,
)
from ..wire.frames import AMQP_FRAME, SASL_FRAME
from .errors import (
    ConnectFailed, ConnectionLost, ExpectationTimeout, MalformedInput, SaslFailed, ScriptError, UnexpectedFrame,
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
