"""The scripted peer: speaks raw AMQP 1.0 to a broker (or plays one), records everything it sees.

Owns the socket side of the suite; never decides a verdict, never sends a frame the script did not ask
for except heartbeats (empty frames at half the other side's idle-time-out, recorded with auto=True).

- `Peer.connect(url, timeouts=, tls=, transcript=, container_id=)`: TCP/TLS only; then `peer.handshake()`
  or step by step `send_header()`, `expect_header()`, `sasl_init()`, `open()`.
- Frames: `send(body, channel, payload)` sends exactly what is given; `begin`, `attach_receiver`,
  `attach_sender`, `flow`, `transfer`, `disposition`, `detach`, `end`, `close_connection` fill defaults and
  session fields from tracked state (`peer.state`, see `state.py`) unless a field is given; `send_raw(bytes)`.
- Expectations: `expect(Kind | (Kinds...), channel=, where=, after=, timeout=, **field_matchers)`,
  `expect_any(*Kinds)`, `expect_nothing(...)`, `expect_error(condition, accept=(Detach, End, Close))`,
  `expect_header()`; `mark()`, `pending()`, `received(Kind)`, `arrived`; `settle(peer, quiet)` waits
  (bounded) until the other side stops sending on its own.
- Server role: `PeerServer(host, port, tls=ServerTLS(cert, key)).accept()` -> Peer; `peer.server_handshake()`.
- How the connection ended: `peer.ending` (None while open; "close-frame", "fin", "reset", "socket-error"),
  also `ConnectionLost.how`. A non-AMQP answer to our header is `NotAmqp` (exit 15); a frame above the
  max-frame-size we announced (512 before our open) is `MalformedInput` (exit 11).
- Modules: connection (Peer, frame builders), transport, inbound (sans-IO), expectations, handshake, server.
- `Transcript`: every header and frame in and out, redacted; `to_json()` and `ladder()`;
  `frames_after_the_end(json)` lists frames of ours after the other side's close or end (none: the peer stops
  there, and records in `peer.skipped` what a script asked for beyond it).
"""

from .connection import Peer, TLSOptions, Timeouts
from .errors import (
    ConnectFailed, ConnectionLost, ExpectationTimeout, MalformedInput, NotAmqp, PeerError, PredicateError, SaslFailed,
    ScriptError, UnexpectedFrame,
)
from .ladder import summarize
from .expectations import Precluded, matches
from .quiet import settle
from .handshake import client_handshake, server_handshake
from .server import PeerServer, ServerTLS
from .state import LinkState, PeerState, SessionState
from .transcript import SCHEMA, Entry, Transcript, frames_after_the_end
from .url import BrokerAddress, parse_url

__all__ = [
    "Peer", "PeerServer", "ServerTLS", "Entry", "SCHEMA", "client_handshake", "server_handshake", "TLSOptions", "Timeouts", "Transcript", "PeerState", "SessionState",
    "LinkState", "BrokerAddress", "parse_url", "PeerError", "ExpectationTimeout", "UnexpectedFrame",
    "ConnectionLost", "Precluded", "MalformedInput", "NotAmqp", "ConnectFailed", "SaslFailed", "ScriptError", "PredicateError", "summarize", "matches", "settle",
    "frames_after_the_end",
]
