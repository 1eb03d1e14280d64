"""The connection handshakes of a peer, both roles: protocol header(s), SASL, open (§2.2, §2.4.1, §5.3.2).

`client_handshake` is the client's half (what `Peer.handshake()` does), `server_handshake` the broker's half
(what `Peer.server_handshake()` does for a scripted broker). Both use only the peer's script API (send,
expect), so everything they do is in the transcript; both start heartbeats when the other side's open
asks for an idle-time-out.

A server that stays silent after our first protocol header is asked once more in the only way every server
understands: we stop sending (TCP half-close) and wait a little (at most 1 s, within the frame timeout) for
an answer. A web server, for one, then answers its error page, and the peer reports "not an AMQP 1.0
server: it answered ..." instead of a bare timeout.
"""

from __future__ import annotations

import time

from ..wire import AMQP_HEADER, SASL_HEADER, Open, SaslInit, SaslMechanisms, SaslOutcome, Symbol
from ..wire.frames import PROTOCOL_AMQP, PROTOCOL_SASL, SASL_FRAME
from .errors import ConnectionLost, ExpectationTimeout, NotAmqp, SaslFailed
from .ladder import summarize

PROBE = 1.0   # the longest we wait for a silent server's answer to our half-close


def first_header(peer):
    """Wait for the other side's first protocol header; when nothing at all arrived, half-close and wait a
    little for an answer (a non-AMQP answer raises NotAmqp; anything else re-raises the timeout). A header of
    another AMQP version (an AMQP 0-9-1 broker answers "AMQP" 0 0 9 1 and closes) raises NotAmqp too."""
    try:
        header = peer.expect_header()
    except ExpectationTimeout as timeout:
        if peer.arrived:
            raise
        peer.transport.half_close()
        try:
            peer.expect_header(timeout=min(PROBE, peer.timeouts.frame))
        except (ExpectationTimeout, ConnectionLost):
            pass
        raise timeout from None
    if (header.major, header.minor, header.revision) != (1, 0, 0):
        version = ".".join(str(v) for v in (header.major, header.minor, header.revision))
        who = peer.address.redacted() if peer.address is not None else "the other side"
        raise NotAmqp(who, header.raw, answer=f"the protocol header of AMQP {version} "
                                             f"({header.raw.hex(' ')}), not 1.0.0")
    return header


def client_handshake(peer, *, sasl: str | None = "auto", container_id: str | None = None,
                     hostname: str | None = None, **open_fields) -> Open:
    """Protocol header(s), SASL, open; waits for the other side's open, starts heartbeats if it asked for
    an idle-time-out, and returns its open. sasl: "auto" (PLAIN when the URL has a user, else ANONYMOUS),
    "PLAIN", "ANONYMOUS", or None (no SASL layer)."""
    address = peer.address
    if sasl == "auto":
        sasl = "PLAIN" if address is not None and address.user is not None else "ANONYMOUS"
    if sasl:
        sent = time.monotonic()
        peer.send_header(SASL_HEADER)
        header = first_header(peer)
        peer.round_trip = max(peer.round_trip, time.monotonic() - sent)
        if header.protocol_id != PROTOCOL_SASL:
            raise SaslFailed(f"the broker answered the SASL header with {summarize(header)}; it may not "
                             "support SASL: try without SASL (sasl=None)")
        mechs = peer.expect(SaslMechanisms).body
        offered = mechs.sasl_server_mechanisms
        offered = [str(offered)] if isinstance(offered, str) else [str(m) for m in offered or ()]
        if sasl not in offered:
            if sasl == "PLAIN" and peer.transport.direct:   # a plain socket: not TLS
                raise SaslFailed(f"the broker offers SASL {', '.join(offered) or 'nothing'}, not PLAIN, on this "
                                 "connection without TLS (brokers often allow PLAIN over TLS only); use an amqps:// "
                                 "URL (the broker's TLS port) or a mechanism it offers")
            raise SaslFailed(f"the broker offers SASL {', '.join(offered) or 'nothing'}, not {sasl}; pass "
                             "credentials in the URL for PLAIN or choose a mechanism it offers")
        peer.sasl_init(sasl, hostname=hostname)
        outcome = peer.expect(SaslOutcome).body
        if outcome.code != 0:
            who = address.redacted() if address else "the broker"
            raise SaslFailed(f"authentication failed at {who} (SASL {sasl}, outcome code {outcome.code}); "
                             "check the user name and password")
    peer.send_header(AMQP_HEADER)
    header = peer.expect_header() if sasl else first_header(peer)
    if header.protocol_id != PROTOCOL_AMQP:
        raise SaslFailed(f"the broker answered the AMQP header with {summarize(header)}; it requires SASL")
    fields = dict(open_fields)
    if container_id is not None:
        fields["container_id"] = container_id
    if hostname is not None:
        fields["hostname"] = hostname
    sent = time.monotonic()
    peer.open(**fields)
    remote = peer.expect(Open).body
    peer.round_trip = max(peer.round_trip, time.monotonic() - sent)     # quiet periods add it (expectations)
    peer.remote_open = remote
    peer.start_heartbeats(remote.idle_time_out)
    return remote


def server_handshake(peer, *, mechanisms=("ANONYMOUS", "PLAIN"), sasl_code: int = 0,
                     **open_fields) -> Open | None:
    """The broker's half: answer the client's protocol header(s) (with SASL mechanisms and the outcome
    `sasl_code` when it starts with SASL), then answer its open with ours (`open_fields` override).
    Returns the client's open (None when the SASL outcome was a failure). The client's sasl-init is kept
    in `peer.client_sasl_init`. Starts heartbeats if the client's open asked for an idle-time-out."""
    header = peer.expect_header()
    if header.protocol_id == PROTOCOL_SASL:
        peer.send_header(SASL_HEADER)
        peer.send(SaslMechanisms(sasl_server_mechanisms=[Symbol(m) for m in mechanisms]), frame_type=SASL_FRAME)
        peer.client_sasl_init = peer.expect(SaslInit).body
        peer.send(SaslOutcome(code=sasl_code), frame_type=SASL_FRAME)
        if sasl_code != 0:
            return None
        peer.expect_header(0)
    peer.send_header(AMQP_HEADER)
    client_open = peer.expect(Open).body
    peer.open(**open_fields)
    peer.remote_open = client_open
    peer.start_heartbeats(client_open.idle_time_out)
    return client_open
