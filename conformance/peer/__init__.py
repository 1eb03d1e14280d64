"""The scripted peer: speaks raw AMQP 1.0 to a broker (or plays one), records everything it sees.

- `Peer.connect(url)` / `PeerServer().accept()`: a connection driven frame by frame by a script.
- `peer.expect(...)`, `peer.expect_nothing(...)`, `peer.expect_error(...)`: bounded, named waits.
- `Transcript`: every header and frame in and out, redacted; JSON and ladder diagrams.
"""

from .connection import Peer, TLSOptions, Timeouts, matches
from .errors import (
    ConnectFailed, ConnectionLost, ExpectationTimeout, MalformedInput, PeerError, SaslFailed, ScriptError,
    UnexpectedFrame,
)
from .ladder import summarize
from .server import PeerServer, ServerTLS, server_handshake
from .state import LinkState, PeerState, SessionState
from .transcript import SCHEMA, Entry, Transcript
from .url import BrokerAddress, parse_url

__all__ = [
    "Peer", "PeerServer", "ServerTLS", "Entry", "SCHEMA", "server_handshake", "TLSOptions", "Timeouts", "Transcript", "PeerState", "SessionState",
    "LinkState", "BrokerAddress", "parse_url", "PeerError", "ExpectationTimeout", "UnexpectedFrame",
    "ConnectionLost", "MalformedInput", "ConnectFailed", "SaslFailed", "ScriptError", "summarize", "matches",
]
