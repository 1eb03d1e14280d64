"""Servers that are not AMQP servers, or that send frames no AMQP peer may send, stop the peer at once with an
error that says so: "not an AMQP 1.0 server: it answered ..." (exit 15), or malformed input (exit 11) for a
frame SIZE above the max-frame-size we announced (512 before our open, §2.4.1) or below the 8-byte header."""

from __future__ import annotations

import socket
import struct
import time

import pytest
from hostile_servers import HostileServer, amqp_0_9_1, frame_size, http_400, http_400_after_eof

from conformance.errors import EXIT_MALFORMED_FRAME, EXIT_NOT_AMQP
from conformance.peer import MalformedInput, NotAmqp, Peer, Timeouts
from conformance.peer.errors import CLOSE_FRAME, FIN, RESET, ConnectionLost
from conformance.wire import Begin, FrameDecoder, NotAProtocolHeader, Transfer
from conformance.wire.decode import DecodeError


def handshake(url: str, frame: float = 3.0) -> tuple[BaseException, float]:
    t0 = time.monotonic()
    with Peer.connect(url, timeouts=Timeouts(frame=frame, connect=frame)) as peer:
        with pytest.raises(Exception) as info:
            peer.handshake()
    return info.value, time.monotonic() - t0


@pytest.mark.parametrize("answer", [http_400, http_400_after_eof], ids=["answers-at-once", "answers-at-eof"])
def test_a_web_server_is_not_an_amqp_server(answer):
    with HostileServer(answer) as server:
        error, elapsed = handshake(server.url, frame=1.0)
    assert isinstance(error, NotAmqp) and error.exit_code == EXIT_NOT_AMQP
    assert str(error).startswith(f"{server.url} is not an AMQP 1.0 server: it answered \"HTTP/1.0 400 Bad request")
    assert "\n" not in str(error)
    assert elapsed < 1.0 + 1.0 + 0.5          # the frame timeout, then at most the 1 s probe


def test_an_amqp_0_9_1_broker_is_not_an_amqp_1_0_server():
    with HostileServer(amqp_0_9_1) as server:
        error, elapsed = handshake(server.url, frame=3.0)
    assert isinstance(error, NotAmqp) and error.exit_code == EXIT_NOT_AMQP
    assert str(error).startswith(f"{server.url} is not an AMQP 1.0 server: it answered the protocol header of "
                                 "AMQP 0.9.1 (41 4d 51 50 00 00 09 01), not 1.0.0")
    assert elapsed < 1.0


def test_a_frame_larger_than_the_limit_before_open_is_malformed_at_once():
    with HostileServer(frame_size(0xFFFFFFFF)) as server:
        error, elapsed = handshake(server.url, frame=5.0)
    assert isinstance(error, MalformedInput) and error.exit_code == EXIT_MALFORMED_FRAME
    assert "SIZE 4294967295 exceeds max-frame-size 512" in str(error)
    assert elapsed < 2.0, "rejected when the frame header arrives, not after the frame timeout"


@pytest.mark.parametrize("size", [0, 7, 513])
def test_a_frame_size_below_the_header_or_above_512_is_malformed(size):
    with HostileServer(frame_size(size)) as server:
        error, elapsed = handshake(server.url, frame=5.0)
    assert isinstance(error, MalformedInput) and elapsed < 2.0


def test_after_our_open_the_limit_is_the_max_frame_size_we_announced(scripted_broker, connect):
    def script(peer):
        peer.server_handshake()
        peer.expect(Begin)
        peer.begin(remote_channel=0)
        peer.send(Transfer(handle=0, delivery_id=0, delivery_tag=b"t"), 0, b"x" * 2000)
    url, _ = scripted_broker(script)
    client = connect(url)
    client.handshake(max_frame_size=1024)
    client.begin()
    with pytest.raises(MalformedInput, match="exceeds max-frame-size 1024"):
        client.expect(Transfer)


def test_without_an_announced_limit_large_frames_are_fine(scripted_broker, connect):
    def script(peer):
        peer.server_handshake()
        peer.expect(Begin)
        peer.begin(remote_channel=0)
        peer.send(Transfer(handle=0, delivery_id=0, delivery_tag=b"t"), 0, b"x" * 200_000)
    url, _ = scripted_broker(script)
    client = connect(url)
    client.handshake()
    client.begin()
    assert len(client.expect(Transfer).payload) == 200_000


def test_the_decoder_limits():
    with pytest.raises(NotAProtocolHeader):
        FrameDecoder(header_first=True).feed(b"HT")
    assert FrameDecoder(header_first=True).feed(b"AMQ") == []
    with pytest.raises(DecodeError, match="exceeds max-frame-size 512"):
        FrameDecoder(512).feed(b"\xff\xff\xff\xff\x02\x00\x00\x00")
    with pytest.raises(DecodeError, match="less than the 8-byte header"):
        FrameDecoder().feed(b"\x00\x00\x00\x04\x02\x00\x00\x00")


def test_connection_lost_says_how(scripted_broker, connect):
    """FIN without a close frame, a close frame then FIN, and a reset (RST) are told apart."""
    def fin(peer):
        peer.server_handshake()
        peer.disconnect()

    def close_frame(peer):
        peer.server_handshake()
        peer.close_connection()
        peer.disconnect()

    for script, how in ((fin, FIN), (close_frame, CLOSE_FRAME)):
        url, broker = scripted_broker(script)
        client = connect(url)
        client.handshake()
        broker.join()
        with pytest.raises(ConnectionLost) as info:
            client.expect(Begin)
        # a close frame ends the wait at once (nothing may follow it), maybe before its FIN is read
        assert info.value.how == how and client.ending in ((how, None) if how == CLOSE_FRAME else (how,)), \
            script.__name__
        assert ("(FIN)" in str(info.value)) == (how == FIN)

    def reset(conn):
        conn.recv(8)
        conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        conn.close()

    with HostileServer(reset) as server:
        error, _ = handshake(server.url)
    assert isinstance(error, ConnectionLost) and error.how == RESET and "reset by the other side (RST)" in str(error)
