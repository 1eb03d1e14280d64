"""Whether the broker is still there: what decides that a lost connection is the broker's death, not a verdict.

A case may judge a dropped connection ("the broker dropped the connection instead of ending the session"),
but only when the broker dropped it on purpose. When the broker process died (killed, crashed, its host went
away), every connection it had ends too, and a verdict drawn from that would lie. So after a case:

- a managed broker whose process is gone is dead, whatever the case saw (a cheap check, always made);
- when one of the case's connections ended (TCP FIN or reset, or after a close frame, which a broker shutting
  down cleanly sends first: `Peer.ending`), the broker is asked once more: a new connection and an AMQP
  handshake, bounded by the run's frame timeout. A broker that no longer accepts connections, or accepts them
  and no longer completes the handshake, is dead.

`died_during(peers, broker, timeout)` returns the one-line reason (None when the broker is alive); the runner
turns the case into `error` with it.
"""

from __future__ import annotations

from ..peer import ConnectFailed, PeerError, SaslFailed
from .interface import Broker
from ..peer.errors import CLOSE_FRAME, FIN, RESET, SOCKET_ERROR

LOST = {FIN: "closed without a close frame (FIN)", RESET: "reset (RST)", SOCKET_ERROR: "lost (socket error)",
        CLOSE_FRAME: "closed after a close frame"}   # a broker shutting down cleanly sends close first


def process_gone(broker: Broker) -> str | None:
    """A broker whose process no longer runs (one that can be watched: managed nodes): why; else None."""
    try:
        if broker.alive():
            return None
        pid = broker.pid
    except Exception:
        return None
    return f"its process{f' (pid {pid})' if pid else ''} is gone"


def unanswered(broker: Broker, timeout: float) -> str | None:
    """Connect again and complete an AMQP handshake within `timeout`: why that failed, or None when it worked."""
    from ..peer import Peer, Timeouts
    try:
        peer = Peer.connect(broker.url, timeouts=Timeouts(frame=timeout, connect=timeout), tls=broker.tls)
    except ConnectFailed as exc:
        return f"a new connection failed ({_short(exc)})"
    try:
        peer.handshake(sasl=broker.sasl_mechanism, container_id="amqp-conformance-liveness")
    except SaslFailed:
        return None                      # it answers: alive, whatever it thinks of our credentials
    except (PeerError, OSError) as exc:
        return f"a new connection did not complete the AMQP handshake within {timeout:g} s ({_short(exc)})"
    finally:
        peer.close()
    return None


def died_during(peers, broker: Broker, timeout: float) -> str | None:
    """Why the broker is taken to have died during the case (one line), or None when it is alive."""
    lost = [p.ending for p in peers if getattr(p, "ending", None) in LOST]
    gone = process_gone(broker)
    if gone is None and lost:
        gone = unanswered(broker, timeout)
    if gone is None:
        return None
    how = f"a connection was {LOST[lost[0]]} and " if lost else ""
    return f"the broker died during the case: {how}{gone}; no verdict can be drawn from this case"


def _short(exc: BaseException) -> str:
    text = str(exc).split(";")[0]
    return text if len(text) <= 160 else text[:157] + "..."
