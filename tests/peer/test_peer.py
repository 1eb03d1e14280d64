"""The scripted peer over real loopback sockets: client against the server role, expectations, heartbeats,
malformed input, URL handling and redaction of secrets."""

import json
import threading
import time

import pytest

from conformance.errors import EXIT_BROKER_UNREACHABLE, EXIT_USAGE, UsageError
from conformance.peer import (
    ConnectFailed, ExpectationTimeout, MalformedInput, Peer, PeerServer, SaslFailed, Timeouts, UnexpectedFrame,
    parse_url, server_handshake,
)
from conformance.wire import (
    Attach, Begin, Close, Detach, End, Error, Flow, Open, SaslInit, Symbol, Transfer, encode_frame,
)

FAST = Timeouts(frame=1.0, quiet=0.2, connect=2.0)


def run_server(script, **kw):
    """Start a scripted broker in a thread; returns (server, thread, errors)."""
    server = PeerServer(timeouts=FAST)
    errors = []

    def target():
        try:
            peer = server.accept()
            script(peer)
        except Exception as exc:  # surfaced by the test
            errors.append(exc)

    t = threading.Thread(target=target, daemon=True)
    t.start()
    return server, t, errors


def test_handshake_session_and_expectations_against_a_scripted_broker():
    def broker(peer):
        server_handshake(peer, idle_time_out=None)
        peer.expect(Begin)
        peer.send(Begin(remote_channel=0, next_outgoing_id=10, incoming_window=5, outgoing_window=5))
        peer.expect(Attach)
        peer.send(Attach(name="r", handle=0, role=False, initial_delivery_count=0xFFFFFFFF))
        peer.expect(Flow, link_credit=2)
        peer.send(Transfer(handle=0, delivery_id=0, delivery_tag=b"a"), payload=b"m")
        peer.send(End(error=Error(condition=Symbol("amqp:session:window-violation"))))

    server, thread, errors = run_server(broker)
    with Peer.connect(server.url, timeouts=FAST) as peer:
        remote = peer.handshake(sasl="ANONYMOUS")
        assert remote.container_id == "scripted-broker"
        peer.send(Begin(next_outgoing_id=0, incoming_window=10, outgoing_window=10))
        assert peer.expect(Begin).body.remote_channel == 0
        peer.send(Attach(name="r", handle=0, role=True))
        peer.expect(Attach, name="r")
        peer.flow(0, handle=0, link_credit=2)
        flow_sent = [e for e in peer.transcript.snapshot() if e.name == "flow"][0].item.body
        assert flow_sent.delivery_count == 0xFFFFFFFF and flow_sent.next_incoming_id == 10
        transfer = peer.expect(Transfer, handle=lambda h: h == 0)
        assert transfer.payload == b"m"
        assert peer.state.sessions[0].links[0].delivery_count == 0      # wrapped
        end = peer.expect_error()
        assert Peer.error_condition(end) == "amqp:session:window-violation"
    thread.join(2)
    assert not errors


def test_timeout_lists_what_arrived_and_quiet_period_catches_frames():
    def broker(peer):
        server_handshake(peer)
        peer.expect(Begin)
        peer.send(Begin(remote_channel=0, next_outgoing_id=0, incoming_window=5, outgoing_window=5))
        peer.expect(Flow)
        peer.send(Flow(next_incoming_id=0, incoming_window=5, next_outgoing_id=0, outgoing_window=5, echo=None))

    server, thread, errors = run_server(broker)
    with Peer.connect(server.url, timeouts=FAST) as peer:
        peer.handshake(sasl="ANONYMOUS")
        peer.send(Begin(next_outgoing_id=0, incoming_window=10, outgoing_window=10))
        peer.expect(Begin)
        with pytest.raises(ExpectationTimeout) as info:
            peer.expect(Transfer, timeout=0.2)
        assert "begin(" in str(info.value) and "transfer" in str(info.value)
        peer.flow(0)
        with pytest.raises(UnexpectedFrame) as info:
            peer.expect_nothing(Flow, quiet=0.5)
        assert info.value.frame.body.incoming_window == 5
        assert peer.expect_nothing(Transfer, quiet=0.1) is not None
    thread.join(5)
    assert not thread.is_alive() and not errors, errors


def test_heartbeats_are_sent_when_the_broker_asks_and_recorded():
    done = threading.Event()

    def broker(peer):
        server_handshake(peer, idle_time_out=200)
        assert done.wait(15), "the test never finished"
        # the client recorded two beats as it wrote them; the scripted broker's reader may still be taking the
        # second in: wait for it, bounded
        deadline = time.monotonic() + 5
        while True:
            received = [e for e in peer.transcript.snapshot() if e.direction == "in" and e.name == "empty"]
            if len(received) >= 2 or time.monotonic() > deadline:
                break
            time.sleep(0.01)   # bounded-wait-ok: polling what the reader thread recorded, at most 5 s
        assert len(received) >= 2, received                   # the scripted broker got the heartbeats

    server, thread, errors = run_server(broker)
    with Peer.connect(server.url, timeouts=FAST) as peer:
        peer.handshake(sasl="ANONYMOUS")
        deadline = time.monotonic() + 10                      # until two beats went out, bounded
        while len([e for e in peer.transcript.snapshot() if e.auto]) < 2 and time.monotonic() < deadline:
            with pytest.raises(ExpectationTimeout):
                peer.expect(Close, timeout=0.1)               # meanwhile, the heartbeat thread works
        beats = [e for e in peer.transcript.snapshot() if e.auto]
        assert len(beats) >= 2 and all(e.raw == b"\x00\x00\x00\x08\x02\x00\x00\x00" for e in beats)
        done.set()
        thread.join(5)
    assert not thread.is_alive() and not errors, errors


def test_malformed_input_from_the_broker_is_a_typed_error_with_offset():
    def broker(peer):
        server_handshake(peer)
        peer.send_raw(b"\x00\x00\x00\x10\x02\x00\x00\x00\x00\x53\x10\xc0\xff\x01\x02\x03")

    server, thread, errors = run_server(broker)
    with Peer.connect(server.url, timeouts=FAST) as peer:
        peer.handshake(sasl="ANONYMOUS")
        with pytest.raises(MalformedInput) as info:
            peer.expect(Begin)
        assert info.value.error.offset > 0 and info.value.exit_code == 11
    thread.join(5)
    assert not thread.is_alive() and not errors, errors


def test_plain_credentials_never_reach_the_transcript():
    def broker(peer):
        server_handshake(peer)

    server, thread, _ = run_server(broker)
    url = f"amqp://alice:s3cr3t-pw@127.0.0.1:{server.port}"
    with Peer.connect(url, timeouts=FAST) as peer:
        peer.handshake()
        init = [e for e in peer.transcript.snapshot() if e.name == "sasl-init"][0]
        text = json.dumps(peer.transcript.to_json()) + peer.transcript.ladder() + repr(peer.transcript.entries)
        assert "s3cr3t" not in text and b"s3cr3t".hex() not in text and b"s3cr3t" not in init.raw
        assert isinstance(init.item.body, SaslInit)
        assert "s3cr3t" not in repr(peer.address) and "***" in peer.address.redacted()


def test_failed_sasl_outcome_is_an_auth_error():
    def broker(peer):
        server_handshake(peer, sasl_code=1)

    server, thread, _ = run_server(broker)
    with Peer.connect(f"amqp://u:p@127.0.0.1:{server.port}", timeouts=FAST) as peer:
        with pytest.raises(SaslFailed) as info:
            peer.handshake()
        assert info.value.exit_code == 6 and "p@" not in str(info.value)


def test_unreachable_broker_and_bad_urls():
    server = PeerServer()
    port = server.port
    server.close()
    with pytest.raises(ConnectFailed) as info:
        Peer.connect(f"amqp://user:pw@127.0.0.1:{port}", timeouts=FAST)
    assert info.value.exit_code == EXIT_BROKER_UNREACHABLE and "pw" not in str(info.value)
    for bad in ("http://h", "amqp://", "amqp://h:notaport", "amqps//x"):
        with pytest.raises(UsageError) as info:
            parse_url(bad)
        assert info.value.exit_code == EXIT_USAGE
    assert parse_url("amqps://h").port == 5671 and parse_url("amqp://h/vh").vhost == "vh"


def test_invalid_frames_are_sent_exactly_as_written():
    received = []

    def broker(peer):
        server_handshake(peer)
        received.append(peer.expect(Detach, timeout=1.0))

    server, thread, errors = run_server(broker)
    raw = encode_frame(Detach(handle=1), doff=3, extended_header=b"\xaa\xbb\xcc\xdd")
    with Peer.connect(server.url, timeouts=FAST) as peer:
        peer.handshake(sasl="ANONYMOUS")
        peer.send_raw(raw)
        thread.join(2)
    assert received and received[0].raw == raw
