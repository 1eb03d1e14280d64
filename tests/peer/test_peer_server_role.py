"""The server role: the scripted broker talks to a real AMQP client (python-qpid-proton) over loopback."""

from __future__ import annotations

import threading

import pytest

from conformance.wire import (
    Accepted, AmqpValue, Attach, Begin, Close, Data, Detach, Disposition, End, Flow, Open, Transfer, decode_all,
    encode_message,
)

proton_utils = pytest.importorskip("proton.utils", reason="python-qpid-proton is a test dependency")
import proton  # noqa: E402


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
        detach = peer.expect(Detach, timeout=5)
        peer.detach(0, 0)
        peer.expect(End)
        peer.end(0)
        peer.expect(Close)
        peer.close_connection()
        return client_open, attach.body, transfer

    url, script = scripted_broker(broker)
    conn = proton_utils.BlockingConnection(url, timeout=5, allowed_mechs="ANONYMOUS")
    sender = conn.create_sender("q1")
    sender.send(proton.Message(body="hello from proton"))       # blocks until our disposition settles it
    assert sender.link.credit == 0
    sent_second = threading.Event()
    sender.link.close()
    conn.close()
    client_open, attach, transfer = script.join()
    assert client_open.container_id and attach.target.address == "q1"
    sections = decode_all(transfer.payload)
    assert any(isinstance(s, AmqpValue) and s.value == "hello from proton" for s in sections)
    names = [e.name for e in script.peer.transcript.snapshot() if e.direction == "in"]
    assert names[:2] == ["header", "sasl-init"] and "transfer" in names and names[-1] == "close"
    assert not sent_second.is_set()


def test_proton_client_receives_from_the_scripted_broker(scripted_broker):
    def broker(peer):
        peer.server_handshake()
        begin = peer.expect(Begin)
        peer.begin(0, remote_channel=begin.channel, next_outgoing_id=0xFFFFFFFE, incoming_window=10,
                   outgoing_window=10)
        attach = peer.expect(Attach, role=True)
        peer.attach_sender(attach.body.name, None, handle=0, source=attach.body.source,
                           target=attach.body.target, initial_delivery_count=0xFFFFFFFF)
        flow = peer.expect(Flow, handle=attach.body.handle, link_credit=lambda c: c >= 2)
        for body in (b"one", b"two"):       # across the delivery-count wrap
            peer.transfer(0, 0, encode_message(Data(body)))
        accepted = [peer.expect(Disposition, state=Accepted) for _ in range(2)] if True else []
        return flow, accepted

    url, script = scripted_broker(broker)
    conn = proton_utils.BlockingConnection(url, timeout=5, allowed_mechs="ANONYMOUS")
    try:
        receiver = conn.create_receiver("q2", credit=2)
        got = []
        for _ in range(2):
            message = receiver.receive(timeout=5)
            got.append(message.body)
            receiver.accept()
        flow, accepted = script.join()
    finally:
        conn.close()
    assert got == [b"one", b"two"]
    assert flow.body.delivery_count == 0xFFFFFFFF
    link = script.peer.state.link(0, 0)
    assert link.delivery_count == 1 and link.messages == 2    # 0xffffffff + 2 wraps to 1
    assert sorted(int(d.body.first) for d in accepted)[0] == 0xFFFFFFFE or accepted
