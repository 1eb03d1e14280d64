"""The server role: the scripted broker talks to a real AMQP client (python-qpid-proton) over loopback."""

from __future__ import annotations

import pytest

from conformance.wire import (
    Accepted, AmqpValue, Attach, Begin, Close, Detach, Disposition, End, Flow, Transfer, decode_all,
    encode_message,
)

proton_utils = pytest.importorskip("proton.utils", reason="python-qpid-proton is a test dependency")
import proton  # noqa: E402

pytestmark = pytest.mark.timeout(60)


def close_client(conn, script) -> None:
    """Close the proton connection; if the scripted broker already failed, drop its socket first so that
    proton's close does not wait for an answer that will never come."""
    script.thread.join(0.5)
    if not script.thread.is_alive() and script.error is not None and script.peer is not None:
        script.peer.disconnect()
    conn.close()


def answer_until_close(peer) -> list:
    """Take every frame until the client's close, answering its detach / end / close in whatever order it
    sends them; return the frames (proton flushes dispositions and flows lazily, often with its close)."""
    seen = []
    while True:
        frame = peer.expect(timeout=5)
        seen.append(frame)
        if isinstance(frame.body, Detach):
            peer.detach(frame.channel, int(frame.body.handle), closed=frame.body.closed)
        elif isinstance(frame.body, End):
            peer.end(frame.channel)
        elif isinstance(frame.body, Close):
            peer.close_connection()
            return seen


def test_proton_client_sends_to_the_scripted_broker(scripted_broker):
    def broker(peer):
        client_open = peer.server_handshake(max_frame_size=65536)
        begin = peer.expect(Begin)
        peer.begin(0, remote_channel=begin.channel, next_outgoing_id=0, incoming_window=10, outgoing_window=10)
        attach = peer.expect(Attach, role=False)           # proton attaches as sender
        peer.attach_receiver(attach.body.name, None, handle=0, target=attach.body.target,
                             source=attach.body.source)
        peer.flow(0, handle=0, link_credit=1)
        transfer = peer.expect(Transfer, handle=attach.body.handle)
        peer.disposition(0, first=transfer.body.delivery_id)
        peer.expect_nothing(Transfer, quiet=0.3)             # no credit left: proton must not send
        closing = answer_until_close(peer)
        return client_open, attach.body, transfer, closing

    url, script = scripted_broker(broker)
    conn = proton_utils.BlockingConnection(url, timeout=5, allowed_mechs="ANONYMOUS")
    sender = conn.create_sender("q1")
    sender.send(proton.Message(body="hello from proton"))       # blocks until our disposition settles it
    assert sender.link.credit == 0
    sender.close()
    close_client(conn, script)
    client_open, attach, transfer, closing = script.join()
    assert [f.name for f in closing][0] == "detach" and closing[-1].name == "close"
    assert client_open.container_id and attach.target.address == "q1"
    sections = decode_all(transfer.payload)
    assert any(isinstance(s, AmqpValue) and s.value == "hello from proton" for s in sections)
    names = [e.name for e in script.peer.transcript.snapshot() if e.direction == "in"]
    assert names[:2] == ["header", "sasl-init"] and "transfer" in names and names[-1] == "close"


def test_proton_client_receives_from_the_scripted_broker(scripted_broker):
    def broker(peer):
        peer.server_handshake()
        begin = peer.expect(Begin)
        peer.begin(0, remote_channel=begin.channel, next_outgoing_id=0xFFFFFFFE, incoming_window=10,
                   outgoing_window=10)
        attach = peer.expect(Attach, role=True)
        peer.attach_sender(attach.body.name, None, handle=0, source=attach.body.source,
                           target=attach.body.target, initial_delivery_count=0xFFFFFFFF)
        peer.expect(Flow, handle=attach.body.handle, link_credit=lambda c: c >= 2)
        for body in ("one", "two"):         # across the delivery-count wrap
            peer.transfer(0, 0, encode_message(AmqpValue(body)))
        return answer_until_close(peer)

    url, script = scripted_broker(broker)
    conn = proton_utils.BlockingConnection(url, timeout=5, allowed_mechs="ANONYMOUS")
    got = []
    try:
        receiver = conn.create_receiver("q2", credit=2)
        for _ in range(2):
            got.append(receiver.receive(timeout=5).body)   # (proton 0.40 hands binary out as a dangling view)
            receiver.accept()
    finally:
        close_client(conn, script)
    closing = script.join()
    assert got == ["one", "two"]
    link = script.peer.state.link(0, 0)
    assert link.delivery_count == 1 and link.messages == 2    # 0xffffffff + 2 wraps to 1
    # proton agrees: its flow after the two transfers carries delivery-count 1 and next-incoming-id 0
    flows = [f.body for f in closing if isinstance(f.body, Flow)]
    assert flows and flows[-1].delivery_count == 1 and flows[-1].next_incoming_id == 0
    dispositions = [f.body for f in closing if isinstance(f.body, Disposition)]
    covered = {d for disp in dispositions for d in range(int(disp.first), int(disp.last if disp.last is not None
                                                                                   else disp.first) + 1)}
    assert covered == {0, 1} and all(isinstance(d.state, Accepted) for d in dispositions)
