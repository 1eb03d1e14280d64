"""The peer against real brokers on loopback: open, begin, attach (both roles), flow, transfer, disposition,
with the transcript checked frame by frame."""

import pytest

from conformance import brokers
from conformance.peer import Peer, Timeouts
from conformance.wire import (
    Accepted, Attach, Begin, Close, Data, Disposition, Flow, Open, Source, Target, Transfer, decode_all,
    encode_message,
)

pytestmark = pytest.mark.broker


@pytest.fixture(scope="module", params=["qpid-proton-c", "rabbitmq-4.0"])
def broker(request):
    handle = brokers.start(brokers.resolve(request.param))
    yield handle
    handle.managed.stop()


def test_publish_and_consume_with_the_transcript(broker):
    queue = broker.unique_queue("peer-test")
    with Peer.connect(broker.url, timeouts=Timeouts(frame=10.0)) as peer:
        remote_open = peer.handshake(sasl=broker.sasl_mechanism)
        peer.send(Begin(next_outgoing_id=0xFFFFFFFE, incoming_window=100, outgoing_window=100))
        begin = peer.expect(Begin).body
        peer.send(Attach(name="sender", handle=0, role=False, snd_settle_mode=0, source=Source(),
                         target=Target(address=broker.queue_address(queue, "target")), initial_delivery_count=7))
        peer.expect(Attach, name="sender")
        credit = peer.expect(Flow, handle=lambda h: h is not None, link_credit=lambda c: c and c > 0).body
        peer.transfer(0, 0, encode_message(Data(b"hello")))
        outcome = peer.expect(Disposition).body
        assert isinstance(outcome.state, Accepted) or outcome.settled
        peer.send(Attach(name="receiver", handle=1, role=True, source=Source(address=broker.queue_address(queue, "source")),
                         target=Target()))
        attach = peer.expect(Attach, name="receiver").body
        peer.flow(0, handle=1, link_credit=1)
        transfer = peer.expect(Transfer)
        assert Data(b"hello") in decode_all(transfer.payload)      # brokers may add a header section
        if not transfer.body.settled:
            peer.send(Disposition(role=True, first=transfer.body.delivery_id, settled=True, state=Accepted()))
        peer.send(Close())
        peer.expect(Close)

    names = [e.name for e in peer.transcript.snapshot() if e.name != "empty"]
    assert names[:9] == ["header", "header", "sasl-mechanisms", "sasl-init", "sasl-outcome", "header", "header",
                         "open", "open"]
    assert {"begin", "attach", "flow", "transfer", "disposition", "close"} <= set(names)
    outgoing = [e for e in peer.transcript.snapshot() if e.direction == "out" and e.name == "flow"][0].item.body
    assert outgoing.delivery_count == attach.initial_delivery_count          # filled from tracked state
    assert outgoing.next_incoming_id == begin.next_outgoing_id + 0 or outgoing.next_incoming_id is not None
    assert credit.delivery_count in (None, 7)
    assert isinstance(remote_open, Open)
    ladder = peer.transcript.ladder()
    assert "transfer(handle=" in ladder and "flow(handle=1" in ladder
