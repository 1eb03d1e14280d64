"""The script API: fields filled from tracked state unless given, heartbeats, SASL, URLs, TLS, errors."""

from __future__ import annotations

import subprocess
import time

import pytest

from conformance.errors import EXIT_AUTH_FAILED, EXIT_BROKER_UNREACHABLE, EXIT_USAGE, UsageError
from conformance.peer import (
    ConnectFailed, Peer, PeerServer, SaslFailed, ServerTLS, Timeouts, TLSOptions, parse_url,
)
from conformance.wire import Attach, Begin, Close, Flow, Open, Transfer

FAST = Timeouts(frame=2.0, quiet=0.3, connect=2.0)


def test_flow_fills_session_fields_and_delivery_count_unless_given(scripted_broker, connect):
    def broker(peer):
        peer.server_handshake()
        theirs = peer.expect(Begin)
        peer.begin(0, remote_channel=theirs.channel, next_outgoing_id=0xFFFFFFFC, incoming_window=400,
                   outgoing_window=9)
        attach = peer.expect(Attach)
        peer.attach_sender("r", "q", handle=3, initial_delivery_count=0xFFFFFFFB, source=attach.body.source)
        peer.transfer(0, 3, b"m1", settled=True)
        return [peer.expect(Flow).body for _ in range(3)]

    url, script = scripted_broker(broker)
    client = connect(url)
    client.handshake(sasl=None)
    client.begin(0, incoming_window=50, outgoing_window=60)
    client.expect(Begin)
    client.attach_receiver("r", "q")
    client.expect(Attach)
    client.expect(Transfer)
    client.flow(0, handle=0, link_credit=5)
    client.flow(0, handle=0, link_credit=5, delivery_count=7, incoming_window=1)
    client.flow(0, handle=0, link_credit=5, next_incoming_id=None, echo=True)
    filled, overridden, omitted = script.join()
    assert (filled.next_incoming_id, filled.incoming_window, filled.next_outgoing_id, filled.outgoing_window) == \
        (0xFFFFFFFD, 50, 0, 60)                       # broker's next-outgoing-id + 1 transfer
    assert filled.delivery_count == 0xFFFFFFFC        # the link's initial count + 1 delivery
    assert overridden.delivery_count == 7 and overridden.incoming_window == 1
    assert omitted.next_incoming_id is None and omitted.echo is True
    link = client.state.link(0, 0)
    assert link.remote_handle == 3 and link.messages == 1


def test_attach_helpers_and_transfer_choose_handles_and_delivery_ids(scripted_broker, connect):
    def broker(peer):
        peer.server_handshake()
        peer.begin(0, remote_channel=peer.expect(Begin).channel)
        attaches = [peer.expect(Attach).body for _ in range(2)]
        transfers = [peer.expect(Transfer).body for _ in range(2)]
        return attaches, transfers

    url, script = scripted_broker(broker)
    client = connect(url)
    client.handshake(sasl=None)
    client.begin(0)
    client.attach_receiver("in", "q")
    client.attach_sender("out", "q", initial_delivery_count=10)
    client.transfer(0, 1, b"a")
    client.transfer(0, 1, b"b", delivery_tag=b"mine")
    attaches, transfers = script.join()
    assert [(a.handle, a.role, a.initial_delivery_count) for a in attaches] == [(0, True, None), (1, False, 10)]
    assert attaches[0].source.address == "q" and attaches[1].target.address == "q"
    assert [(t.delivery_id, t.delivery_tag) for t in transfers] == [(0, b"\x00\x00\x00\x00"), (1, b"mine")]
    assert client.state.link(0, 1).delivery_count == 12


def test_heartbeats_at_half_the_idle_time_out_the_broker_asked_for(scripted_broker, connect):
    def broker(peer):
        peer.server_handshake(idle_time_out=200)
        peer.expect(Close, timeout=5)

    url, script = scripted_broker(broker)
    client = connect(url)
    assert client.handshake(sasl=None).idle_time_out == 200

    def sent():
        return [e for e in client.transcript.snapshot() if e.direction == "out" and e.name == "empty"]

    deadline = time.monotonic() + 10                              # event-based: until 5 beats, bounded
    while len(sent()) < 5 and time.monotonic() < deadline:
        client.expect_nothing(quiet=0.1)
    client.close_connection()
    script.join()
    beats = sent()
    assert len(beats) >= 5 and all(e.auto for e in beats), beats
    gaps = [b.t - a.t for a, b in zip(beats, beats[1:])]
    # every 100 ms (half of 200): a busy machine only stretches gaps, so none is shorter than the interval
    # (the timer waits it out after each beat) and, over 4 or more gaps, at least one stays under 200 ms
    # (a beat at the whole idle-time-out could not)
    assert all(g > 0.09 for g in gaps) and min(gaps) < 0.18, gaps
    received = [e for e in script.peer.transcript.snapshot() if e.direction == "in" and e.name == "empty"]
    assert len(received) >= 4 and not script.peer.pending()     # the broker recorded them, never queued them
    assert "empty frame [auto]" in client.transcript.ladder()


def test_no_heartbeats_without_an_idle_time_out(scripted_broker, connect):
    url, script = scripted_broker(lambda peer: peer.server_handshake())
    client = connect(url)
    client.handshake(sasl=None)
    client.expect_nothing(quiet=0.3)
    script.join()
    assert not [e for e in client.transcript.snapshot() if e.direction == "out" and e.name == "empty"]
    assert [e.name for e in client.transcript.snapshot() if e.direction == "out"] == ["header", "open"]


def test_sasl_plain_and_anonymous_are_negotiated(scripted_broker, connect):
    for url_auth, mechanism, response in [("", "ANONYMOUS", None), ("u:p%40ss@", "PLAIN", b"\x00u\x00p@ss")]:
        url, script = scripted_broker(lambda peer: (peer.server_handshake(), peer.client_sasl_init)[1])
        client = connect(url.replace("://", "://" + url_auth))
        assert isinstance(client.handshake(), Open)
        init = script.join()
        assert (str(init.mechanism), init.initial_response) == (mechanism, response)


def test_sasl_failure_is_an_authentication_error(scripted_broker, connect):
    url, script = scripted_broker(lambda peer: peer.server_handshake(sasl_code=1))
    client = connect(url.replace("://", "://guest:wrong@"))
    with pytest.raises(SaslFailed) as caught:
        client.handshake()
    script.join()
    assert caught.value.exit_code == EXIT_AUTH_FAILED
    assert "outcome code 1" in str(caught.value) and "wrong" not in str(caught.value)


def test_a_mechanism_the_broker_does_not_offer_is_refused(scripted_broker, connect):
    url, script = scripted_broker(lambda peer: peer.server_handshake(mechanisms=("ANONYMOUS",)))
    client = connect(url.replace("://", "://guest:pw@"))
    with pytest.raises(SaslFailed, match="offers SASL ANONYMOUS, not PLAIN"):
        client.handshake()


def test_refused_port_is_broker_unreachable():
    server = PeerServer()
    port = server.port
    server.close()
    started = time.monotonic()
    with pytest.raises(ConnectFailed) as caught:
        Peer.connect(f"amqp://guest:hunter22@127.0.0.1:{port}", timeouts=FAST)
    assert time.monotonic() - started < 2
    assert caught.value.exit_code == EXIT_BROKER_UNREACHABLE
    assert "connection refused" in str(caught.value) and "hunter22" not in str(caught.value)


@pytest.mark.parametrize("url, problem", [
    ("http://host", "scheme must be amqp or amqps"),
    ("amqp://", "no host"),
    ("amqp://host:notaport", "bad broker URL"),
    ("amqp://user:topsecret@host:99999", "bad broker URL"),
])
def test_bad_urls_are_usage_errors_without_the_password(url, problem):
    with pytest.raises(UsageError) as caught:
        parse_url(url)
    assert problem in str(caught.value) and caught.value.exit_code == EXIT_USAGE
    assert "topsecret" not in str(caught.value)


def test_url_defaults_and_redaction():
    a = parse_url("amqps://me:p%3Ass@broker.example:1234/my%20vhost")
    assert (a.scheme, a.host, a.port, a.user, a.password, a.vhost, a.tls) == \
        ("amqps", "broker.example", 1234, "me", "p:ss", "my vhost", True)
    assert a.redacted() == "amqps://me:***@broker.example:1234/my vhost" and "p:ss" not in repr(a)
    assert parse_url("amqp://127.0.0.1").port == 5672 and parse_url("amqps://127.0.0.1").port == 5671
    assert parse_url("amqp://[::1]:5").redacted() == "amqp://[::1]:5"


@pytest.fixture(scope="module")
def self_signed(tmp_path_factory):
    """A throwaway certificate for 127.0.0.1 made with the openssl command."""
    d = tmp_path_factory.mktemp("tls")
    cert, key = d / "cert.pem", d / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj",
                    "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", str(key), "-out",
                    str(cert)], check=True, capture_output=True, timeout=60)
    return str(cert), str(key)


def test_amqps_with_a_verified_certificate(scripted_broker, connect, self_signed):
    cert, key = self_signed
    url, script = scripted_broker(lambda peer: peer.server_handshake(), tls=ServerTLS(cert, key))
    assert url.startswith("amqps://")
    client = connect(url, tls=TLSOptions(ca_file=cert))
    assert client.handshake(sasl="ANONYMOUS").container_id == "scripted-broker"
    script.join()
    assert client.sock.version() is not None       # really TLS


def test_amqps_with_an_unknown_ca_fails_clearly(scripted_broker, self_signed):
    cert, key = self_signed
    url, script = scripted_broker(lambda peer: None, tls=ServerTLS(cert, key))
    with pytest.raises(ConnectFailed, match="TLS handshake with amqps://127.0.0.1:.* failed .*CERTIFICATE_VERIFY"):
        Peer.connect(url, timeouts=FAST)
    with pytest.raises(Exception):
        script.join()       # the scripted broker saw the handshake fail too
    # verify=False accepts it
    url2, script2 = scripted_broker(lambda peer: peer.server_handshake(), tls=ServerTLS(cert, key))
    client = Peer.connect(url2, timeouts=FAST, tls=TLSOptions(verify=False))
    try:
        client.handshake()
        script2.join()
    finally:
        client.disconnect()


def test_send_together_writes_its_frames_in_one_write_and_records_them_in_order(scripted_broker, connect):
    """A flow pipelined with its attach (2.6.7/6, 2.7.4/4): nothing of the broker's can be recorded between."""
    def broker(peer):
        peer.server_handshake()
        theirs = peer.expect(Begin)
        peer.begin(0, remote_channel=theirs.channel, next_outgoing_id=0, incoming_window=400, outgoing_window=9)
        attach = peer.expect(Attach)
        peer.attach_sender("r", "q", handle=0, initial_delivery_count=5, source=attach.body.source)
        return [peer.expect(Flow).body for _ in range(2)]

    url, script = scripted_broker(broker)
    client = connect(url)
    client.handshake(sasl=None)
    client.begin(0, incoming_window=50, outgoing_window=60)
    client.expect(Begin)
    fields = dict(next_incoming_id=0, incoming_window=50, next_outgoing_id=0, outgoing_window=60, handle=0)
    sent = client.send_together([(Attach(name="r", handle=0, role=True), 0), (Flow(link_credit=2, **fields), 0),
                                 (Flow(link_credit=5, **fields), 0)])
    client.expect(Attach)
    flows = script.join()
    assert [f.link_credit for f in flows] == [2, 5] and all(f.delivery_count is None for f in flows)
    out = [e for e in client.transcript.snapshot() if e.direction == "out"][-3:]
    assert [e.item for e in out] == sent and client.state.sessions[0].links[0].initial_delivery_count == 5
