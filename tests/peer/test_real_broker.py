"""The peer against a real broker on loopback: the Qpid Proton C example broker, started by this module.

open / begin / attach (sender and receiver) / flow / transfer / disposition / detach / end / close, and the
transcript of it all. Uses the managed-broker API (conformance.brokers); skips only when the broker cannot
be provisioned on this machine (no apt, not root), never when it fails to start.
"""

from __future__ import annotations

import json

import pytest

from conformance.errors import PermissionProblem, ProvisionFailed
from conformance.peer import Peer, Timeouts
from conformance.wire import (
    Accepted, AmqpValue, Attach, Begin, Close, Detach, Disposition, End, Flow, Open, Transfer, decode_all,
    encode_message,
)

pytestmark = [pytest.mark.broker, pytest.mark.timeout(120)]


@pytest.fixture(scope="module")
def proton_c_url():
    from conformance.brokers.proton_c import ProtonCBroker
    broker = ProtonCBroker()
    try:
        broker.ensure_provisioned()
    except (ProvisionFailed, PermissionProblem) as exc:
        pytest.skip(f"the Qpid Proton C example broker cannot be provisioned here: {exc}")
    node = broker.start()       # a start failure is an error, not a skip
    try:
        yield node.url
    finally:
        broker.stop()


def test_send_and_receive_through_a_real_broker(proton_c_url):
    queue = "peer-selftest"
    peer = Peer.connect(proton_c_url, timeouts=Timeouts(frame=5.0, quiet=0.4))
    try:
        broker_open = peer.handshake(sasl="ANONYMOUS", container_id="peer-real-broker-test")
        assert isinstance(broker_open, Open) and broker_open.container_id

        peer.begin(0, next_outgoing_id=0xFFFFFFFE, incoming_window=100, outgoing_window=100)
        their_begin = peer.expect(Begin, remote_channel=0)
        channel = their_begin.channel

        # our sender: the broker answers the attach and grants credit on its own
        peer.attach_sender("peer-out", queue, handle=0, initial_delivery_count=0xFFFFFFFF)
        broker_rcv = peer.expect(Attach, channel=channel, name="peer-out", role=True)
        credit = peer.expect(Flow, channel=channel, handle=broker_rcv.body.handle, link_credit=lambda c: c > 0)
        assert peer.state.link(0, 0).link_credit == credit.body.link_credit

        # our receiver: no credit yet, so nothing may come
        peer.attach_receiver("peer-in", queue, handle=1)
        broker_snd = peer.expect(Attach, channel=channel, name="peer-in", role=False)

        sent = peer.transfer(0, 0, encode_message(AmqpValue("hello through a real broker")))
        assert sent.body.delivery_id == 0
        outcome = peer.expect(Disposition, channel=channel, role=True, first=0, state=Accepted)
        assert outcome.body.settled is True
        assert peer.state.link(0, 0).delivery_count == 0            # 0xffffffff + 1 wraps
        peer.expect_nothing(Transfer, channel=channel)               # stored, not sent without credit

        peer.flow(0, handle=1, link_credit=1)
        delivery = peer.expect(Transfer, channel=channel, handle=broker_snd.body.handle)
        sections = decode_all(delivery.payload)
        assert AmqpValue("hello through a real broker") in sections
        if not delivery.body.settled:
            peer.disposition(0, first=delivery.body.delivery_id)
        receiver = peer.state.link(0, 1)
        assert receiver.messages == 1 and receiver.link_credit == 0
        peer.expect_nothing(Transfer, channel=channel)               # credit used up

        peer.detach(0, 0)
        peer.detach(0, 1)
        peer.expect(Detach, channel=channel, handle=broker_rcv.body.handle)
        peer.expect(Detach, channel=channel, handle=broker_snd.body.handle)
        peer.end(0)
        peer.expect(End, channel=channel)
        peer.close_connection()
        peer.expect(Close)
    finally:
        peer.disconnect()

    # the transcript tells the story in order, both directions, with raw bytes
    doc = peer.transcript.to_json()
    json.dumps(doc)
    flow_of = [(e["direction"], e["name"]) for e in doc["entries"] if e["name"] not in ("empty",)]
    order = [pair for pair in flow_of if pair[1] in ("begin", "attach", "flow", "transfer", "disposition")]
    assert order.index(("out", "transfer")) < order.index(("in", "disposition"))
    assert order.index(("out", "flow")) < order.index(("in", "transfer"))
    assert ("in", "flow") in order and flow_of[-1] == ("in", "close")
    assert all(bytes.fromhex(e["raw"]) for e in doc["entries"])
    granted = next(e for e in doc["entries"] if e["direction"] == "in" and e["name"] == "flow")
    assert granted["fields"]["link_credit"] > 0
    our_flow = next(e for e in doc["entries"] if e["direction"] == "out" and e["name"] == "flow")
    assert our_flow["fields"]["link_credit"] == 1 and our_flow["fields"]["next_incoming_id"] is not None

    ladder = peer.transcript.ladder(receiver_side="peer")
    assert "sasl-init(mechanism=ANONYMOUS)" in ladder
    assert "flow(handle=1, delivery-count=" in ladder and "link-credit=1" in ladder
    assert "<----------  transfer(handle=" in ladder
    assert "transfer(handle=0, delivery-id=0)" in ladder
