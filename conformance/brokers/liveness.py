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

The connections themselves can break while the broker lives (the network: `selfcheck --transport`):
`cut_or_stalled(peers, timeout)`, asked right after the case and before its connections are dropped, says
why they cannot carry a verdict: one was reset (TCP RST: cut below AMQP), or one still open does not answer
our close within the frame timeout (the closing handshake is the liveness check of the connection: it
stalled, and the silence a verdict may rest on was the network's, not the broker's). A connection on which
the broker already let a wait run out the whole frame timeout and has sent nothing since is given
`STILL_SILENT` (1 s) for its close, not another frame timeout: it has shown it is not answering, and a
broker that stops mid-case gives `error` within the frame timeout plus that second, not twice the timeout.
"""

from __future__ import annotations

from ..peer import ConnectFailed, PeerError, SaslFailed
from .interface import Broker
from ..peer.errors import CLOSE_FRAME, FIN, RESET, SOCKET_ERROR
from ..verdict import CONCLUDED          # verdicts a silent (hung) broker could cause

LOST = {FIN: "closed without a close frame (FIN)", RESET: "reset (RST)", SOCKET_ERROR: "lost (socket error)",
        CLOSE_FRAME: "closed after a close frame"}   # a broker shutting down cleanly sends close first
STILL_SILENT = 1.0   # the close wait on a connection whose broker is already silent past a frame timeout


def process_gone(broker: Broker) -> str | None:
    """A broker whose process no longer runs (one that can be watched: managed nodes): why; else None."""
    try:
        if broker.alive():
            return None
        pid = broker.pid
    except OSError:              # the process table could not be read: that proves nothing
        return None
    return f"its process{f' (pid {pid})' if pid else ''} is gone"


def unanswered(broker: Broker, timeout: float) -> str | None:
    """Connect again and complete an AMQP handshake within `timeout`: why that failed, or None when it worked."""
    from ..peer import Peer, Timeouts
    try:
        peer = Peer.connect(broker.address, timeouts=Timeouts(frame=timeout, connect=timeout), tls=broker.tls)
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


def cut_or_stalled(peers, timeout: float) -> str | None:
    """Why the case's connections (its peers, in order) cannot carry a verdict, or None. Sends our close on
    every connection still open that has not seen one either way (the case is over: that is its end)."""
    from ..peer import ConnectionLost, ExpectationTimeout
    from ..wire import Close
    for number, peer in enumerate(peers, 1):
        if peer.ending == RESET:
            return f"connection {number} was reset (TCP RST) during the case: cut below AMQP, no verdict"
        if peer.ending is not None or peer.received(Close) or peer.transcript.frames("out", "close"):
            continue
        silent = _silent(peer)
        wait = min(STILL_SILENT, timeout) if silent else timeout
        try:
            peer.close_connection()
            peer.expect(Close, timeout=wait)
        except ExpectationTimeout:
            since = " (nor anything since a wait ran out the frame timeout)" if silent else ""
            return (f"connection {number} stalled: the broker did not answer our close within {wait:g} s "
                    f"after the case{since}, so the silence the verdict rests on says nothing")
        except ConnectionLost:
            # the case was over when we sent close: a broker that answers it with a reset (RabbitMQ 3.10 closes
            # with our unread transfers in its buffer) ended the connection, it was not cut under the case
            continue
        except (PeerError, OSError):    # the check itself could not run (e.g. a send refused): it proves nothing
            continue
    return None


def died_during(peers, broker: Broker, timeout: float, verdict: str | None = None) -> str | None:
    """Why the broker is taken to have died (or hung) during the case (one line), or None when it is alive.
    `verdict`: the case's own; any verdict a case drew from talking to the broker may come from a broker that
    stopped answering (a hung process keeps its connections open: a missing answer reads as a fail, a missing
    frame as a pass), so then it is asked too."""
    lost = [p.ending for p in peers if p.ending in LOST and not _we_closed(p)]
    # every connection of the case ended with the broker answering our close: it was answering at the end of
    # the case, so its silences during it were not a hang (a hung broker leaves our close unanswered, which
    # cut_or_stalled reports); asking again on a new connection would only measure how fast it accepts one
    answered_to_the_end = bool(peers) and all(_we_closed(p) for p in peers)
    gone = process_gone(broker)
    if gone is not None:
        what = "died"
    elif lost or (peers and verdict in CONCLUDED and not answered_to_the_end):
        gone, what = unanswered(broker, timeout), "died" if lost else "stopped answering"
    if gone is None:
        return None
    how = f"a connection was {LOST[lost[0]]} and " if lost else ""
    return f"the broker {what} during the case: {how}{gone}; no verdict can be drawn from this case"


def _silent(peer) -> bool:
    silent = getattr(peer, "silent_since_timeout", None)
    return bool(silent()) if silent is not None else False


def _we_closed(peer) -> bool:
    """The connection ended as we asked: our close, answered by the broker's (cut_or_stalled sends it after
    the case). A broker that dies answers with no close frame, so that still counts as lost."""
    transcript = getattr(peer, "transcript", None)
    return peer.ending == CLOSE_FRAME and transcript is not None and bool(transcript.frames("out", "close"))


def _short(exc: BaseException) -> str:
    text = str(exc).split(";")[0]
    return text if len(text) <= 160 else text[:157] + "..."
