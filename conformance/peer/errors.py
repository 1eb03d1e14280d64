"""Errors of the scripted peer. Each says what was expected and lists what arrived instead.

All are `PeerError`s. Connection-level failures (unreachable, authentication, undecodable bytes) are also
`ConformanceError`s, so the CLI maps them to their exit codes without a traceback.
"""

from __future__ import annotations

from ..errors import AuthenticationFailed, BrokerUnreachable, MalformedFrame, NotAmqpServer

SHOWN = 12   # how many of the most recent arrivals an error message lists


class PeerError(Exception):
    """Base of everything the peer raises about the conversation."""


class ScriptError(PeerError):
    """The script asked for something impossible (a misspelt field, a channel with no session...)."""


def arrivals(frames: list) -> str:
    """The last frames that arrived, one ladder-style arrow each: `<- flow(handle=0, ...)`."""
    if not frames:
        return "nothing arrived"
    shown = "; ".join("<- " + describe(f) for f in frames[-SHOWN:])
    more = f" (last {SHOWN} of {len(frames)})" if len(frames) > SHOWN else ""
    return f"arrived{more}: {shown}"


class PredicateError(Exception):
    """A pattern's predicate (`where=`, `unless=` or a field predicate) raised: a bug in the script, never the
    broker's doing. Not a `PeerError` (nothing about the conversation): it ends the wait at once, and the case
    runner reports it as a suite error naming the case, the predicate, the frame and the exception."""

    def __init__(self, role: str, predicate, frame, exc: BaseException):
        self.role = role
        self.predicate = predicate
        self.frame = frame
        self.exc = exc
        code = getattr(predicate, "__code__", None)
        where = f" ({code.co_filename.rsplit('/', 1)[-1]}:{code.co_firstlineno})" if code is not None else ""
        name = getattr(predicate, "__qualname__", repr(predicate))
        super().__init__(f"the {role} predicate {name}{where} raised {type(exc).__name__}: {exc} "
                         f"on {describe(frame)}")


class ExpectationTimeout(PeerError):
    def __init__(self, description: str, waited: float, arrived: list):
        self.description = description
        self.waited = waited
        self.arrived = arrived
        super().__init__(f"timed out after {waited:.2f} s waiting for {description}; {arrivals(arrived)}")


class UnexpectedFrame(PeerError):
    def __init__(self, description: str, frame, arrived: list):
        self.description = description
        self.frame = frame
        self.arrived = arrived
        super().__init__(f"{description}: got {describe(frame)}")


# How a connection ended (`ConnectionLost.how`, `Peer.ending`): the other side sent its close frame and then
# closed the socket; closed the socket without a close frame (TCP FIN); reset it (TCP RST, also what a
# process killed with unread bytes in its socket gives); or another socket error.
CLOSE_FRAME, FIN, RESET, SOCKET_ERROR = "close-frame", "fin", "reset", "socket-error"

_HOW = {
    CLOSE_FRAME: "closed by the other side after its close frame",
    FIN: "closed by the other side without a close frame (FIN)",
    RESET: "reset by the other side (RST)",
    SOCKET_ERROR: "lost (socket error)",
}


class ConnectionLost(PeerError):
    """The connection ended while the script waited or sent. `how` is one of CLOSE_FRAME, FIN, RESET,
    SOCKET_ERROR (None when it is not known)."""

    def __init__(self, description: str, arrived: list, how: str | None = None):
        self.description = description
        self.arrived = arrived
        self.how = how
        ended = _HOW.get(how, "closed by the other side")
        super().__init__(f"connection {ended} while waiting for {description}; {arrivals(arrived)}")


class MalformedInput(PeerError, MalformedFrame):
    """Bytes our codec cannot decode. `offset` is the stream offset (bytes since the connection began)."""

    def __init__(self, error, raw: bytes, arrived: list | None = None):
        self.error = error
        self.offset = getattr(error, "offset", None)
        self.reason = getattr(error, "reason", str(error))
        self.raw = raw
        self.arrived = arrived or []
        msg = (f"the other side sent bytes our codec cannot decode at stream offset {self.offset}: {self.reason}; "
               f"the bytes received: {raw[:32].hex()}{'...' if len(raw) > 32 else ''}")
        PeerError.__init__(self, msg)
        MalformedFrame.__init__(self, msg)


class NotAmqp(PeerError, NotAmqpServer):
    """The other side answered with bytes that are not an AMQP protocol header (an HTTP server, say)."""

    def __init__(self, who: str, data: bytes, role: str = "server", answer: str | None = None):
        self.data = bytes(data)
        msg = (f"{who} is not an AMQP 1.0 {role}: it answered {answer or excerpt(data)}; check the host and "
               f"port (AMQP 1.0 listens on 5672, or 5671 for amqps://)")
        PeerError.__init__(self, msg)
        NotAmqpServer.__init__(self, msg)


def excerpt(data: bytes, limit: int = 80) -> str:
    """The start of `data` as printable text in quotes: runs of whitespace (line breaks too) as one space,
    other unprintable bytes as \\xNN, at most `limit` characters."""
    text = "".join(chr(b) if 32 <= b < 127 else " " if chr(b).isspace() else f"\\x{b:02x}" for b in bytes(data))
    text = " ".join(text.split())
    cut = text[:limit]
    return f'"{cut}{"..." if len(text) > limit else ""}"'


class ConnectFailed(PeerError, BrokerUnreachable):
    def __init__(self, message: str):
        PeerError.__init__(self, message)
        BrokerUnreachable.__init__(self, message)


class SaslFailed(PeerError, AuthenticationFailed):
    def __init__(self, message: str):
        PeerError.__init__(self, message)
        AuthenticationFailed.__init__(self, message)


def describe(item) -> str:
    """A short one-line description of a frame or protocol header, for error messages."""
    from .ladder import summarize
    return summarize(item)
