"""Whether the broker is still there: what decides that a lost connection is the broker's death, not a verdict.

A case may judge a dropped connection ("the broker dropped the connection instead of ending the session"),
but only when the broker dropped it on purpose. When the broker process died (killed, crashed, its host went
away), every connection it had ends too, and a verdict drawn from that would lie. So after a case:

- a managed broker whose process is gone is dead, whatever the case saw (a cheap check, always made);
- when one of the case's connections ended (TCP FIN or reset, or after a close frame, which a broker shutting
  down cleanly sends first: `Peer.ending`), the broker is asked once more: a new connection and an AMQP
  handshake, bounded by the run's frame timeout. A broker that no longer accepts connections, or accepts them
  and no longer completes the handshake, is dead;
- so is one that no longer completes a handshake after a case that talked to it drew a verdict (pass, fail,
  non-strict, informational): a hung process (stopped, swapping, deadlocked) keeps its connections open and
  just stops answering, which a case would otherwise read as a missing answer (fail) or as the absence it
  watched for (pass). One handshake per case: milliseconds while the broker is well.

`died_during(peers, broker, timeout)` returns the one-line reason (None when the broker is alive); the runner
turns the case into `error` with it.
"""

from __future__ import annotations

from ..peer import ConnectFailed, PeerError, SaslFailed
from ..peer.errors import CLOSE_FRAME, FIN, RESET, SOCKET_ERROR

LOST = {FIN: "closed without a close frame (FIN)", RESET: "reset (RST)", SOCKET_ERROR: "lost (socket error)",
        CLOSE_FRAME: "closed after a close frame"}   # a broker shutting down cleanly sends close first
CONCLUDED = ("pass", "fail", "non-strict", "informational")   # verdicts a silent (hung) broker could cause


def process_gone(broker) -> str | None:
    """A managed broker (or one with a known pid) whose process no longer runs: why; else None."""
    alive = getattr(broker, "alive", None)
    if not callable(alive):
        return None
    try:
        if alive():
            return None
    except Exception:
        return None
    node = getattr(broker, "node", None) or {}
    managed = getattr(broker, "managed", None)
    pid = node.get("pid") if isinstance(node, dict) else None
    if pid is None and managed is not None and getattr(managed, "process", None) is not None:
        pid = managed.process.pid
    return f"its process{f' (pid {pid})' if pid else ''} is gone"


def unanswered(broker, timeout: float) -> str | None:
    """Connect again and complete an AMQP handshake within `timeout`: why that failed, or None when it worked."""
    url = getattr(broker, "url", None)
    if not url:
        return None
    from ..peer import Peer, Timeouts
    try:
        peer = Peer.connect(url, timeouts=Timeouts(frame=timeout, connect=timeout), tls=getattr(broker, "tls", None))
    except ConnectFailed as exc:
        return f"a new connection failed ({_short(exc)})"
    try:
        peer.handshake(sasl=getattr(broker, "sasl_mechanism", "auto"), container_id="amqp-conformance-liveness")
    except SaslFailed:
        return None                      # it answers: alive, whatever it thinks of our credentials
    except (PeerError, OSError) as exc:
        return f"a new connection did not complete the AMQP handshake within {timeout:g} s ({_short(exc)})"
    finally:
        peer.close()
    return None


def died_during(peers, broker, timeout: float, verdict: str | None = None) -> str | None:
    """Why the broker is taken to have died (or hung) during the case (one line), or None when it is alive.
    `verdict`: the case's own; any verdict a case drew from talking to the broker may come from a broker that
    stopped answering (a hung process keeps its connections open: a missing answer reads as a fail, a missing
    frame as a pass), so then it is asked too."""
    lost = [p.ending for p in peers if getattr(p, "ending", None) in LOST]
    gone = process_gone(broker)
    if gone is not None:
        what = "died"
    elif lost or (peers and verdict in CONCLUDED):
        gone, what = unanswered(broker, timeout), "died" if lost else "stopped answering"
    if gone is None:
        return None
    how = f"a connection was {LOST[lost[0]]} and " if lost else ""
    return f"the broker {what} during the case: {how}{gone}; no verdict can be drawn from this case"


def _short(exc: BaseException) -> str:
    text = str(exc).split(";")[0]
    return text if len(text) <= 160 else text[:157] + "..."
