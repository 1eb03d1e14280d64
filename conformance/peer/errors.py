"""Errors of the scripted peer. Each says what was expected and lists what arrived instead.

Connection-level failures are also ConformanceErrors, so the CLI maps them to their exit codes.
"""

from __future__ import annotations

from ..errors import AuthenticationFailed, BrokerUnreachable, MalformedFrame


class PeerError(Exception):
    """Base of everything the peer raises about the conversation."""


class ExpectationTimeout(PeerError):
    def __init__(self, description: str, waited: float, arrived: list):
        self.description = description
        self.waited = waited
        self.arrived = arrived
        shown = "; ".join(describe(f) for f in arrived[-12:]) or "nothing"
        more = f" (last 12 of {len(arrived)})" if len(arrived) > 12 else ""
        super().__init__(f"timed out after {waited:.1f} s waiting for {description}; arrived{more}: {shown}")


class UnexpectedFrame(PeerError):
    def __init__(self, description: str, frame, arrived: list):
        self.description = description
        self.frame = frame
        self.arrived = arrived
        super().__init__(f"{description}: got {describe(frame)}")


class ConnectionLost(PeerError):
    def __init__(self, description: str, arrived: list):
        self.description = description
        self.arrived = arrived
        shown = "; ".join(describe(f) for f in arrived[-8:]) or "nothing"
        super().__init__(f"connection closed by the broker while waiting for {description}; last frames: {shown}")


class MalformedInput(PeerError, MalformedFrame):
    def __init__(self, error, raw_tail: bytes):
        self.error = error
        self.raw_tail = raw_tail
        msg = (f"the broker sent bytes our codec cannot decode ({error}); the bytes around it: "
               f"{raw_tail[-32:].hex()}")
        PeerError.__init__(self, msg)
        MalformedFrame.__init__(self, msg)


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
