"""Holding reads (peer/hold.py): frames the other side sent stay unread while we send, so our frame crosses
them; the bookkeeping shows only what was read, and the transcript says which frames were held."""

from __future__ import annotations

import threading

import pytest

from conformance.peer import Peer, PeerServer, Timeouts
from conformance.peer.errors import ExpectationTimeout
from conformance.wire import Attach, Begin, Flow, Transfer, encode_message, AmqpValue

pytestmark = pytest.mark.timeout(30)
FAST = Timeouts(frame=2.0, quiet=0.1, connect=2.0)


@pytest.fixture()
def pair():
    """(scripted broker, client): a session and a link on which the client sends, credit 10."""
    server = PeerServer(timeouts=FAST)
    accepted = {}
    t = threading.Thread(target=lambda: accepted.update(peer=server.accept()))
    t.start()
    client = Peer.connect(server.url, timeouts=FAST)
    t.join()
    broker = accepted["peer"]
    shake = threading.Thread(target=lambda: broker.server_handshake(mechanisms=("ANONYMOUS",)))
    shake.start()
    client.handshake(sasl="ANONYMOUS")
    shake.join()
    client.begin(0)
    begin = broker.expect(Begin)
    broker.begin(0, remote_channel=begin.channel)
    client.expect(Begin)
    client.attach_sender("l", "q", handle=0)
    attach = broker.expect(Attach)
    broker.attach_receiver(attach.body.name, None, handle=0, target=attach.body.target)
    client.expect(Attach)
    yield broker, client
    client.close()
    broker.close()
    server.close()


def _send(client, n):
    for i in range(n):
        client.transfer(0, 0, encode_message(AmqpValue(f"m{i}")), settled=True)


def test_frames_after_the_named_one_stay_unread_until_released(pair):
    broker, client = pair
    third = [0]

    def after(frame):
        if isinstance(frame.body, Transfer):
            third[0] += 1
        return third[0] == 3
    broker.hold_reads_after(after)
    broker.flow(0, handle=0, link_credit=10)
    client.expect(Flow)
    _send(client, 5)
    for _ in range(3):
        broker.expect(Transfer)
    held = broker.await_held(lambda f: isinstance(f.body, Transfer), "the 4th transfer")
    assert held.body.delivery_id == 3
    assert broker.state.link(0, 0).delivery_count == 3            # the books show only what was read
    with pytest.raises(ExpectationTimeout):
        broker.expect(Transfer, timeout=0.2)                       # held: no expectation sees it
    ours = broker.flow(0, handle=0, link_credit=0)
    assert ours.body.delivery_count == 3                           # behind the client's: the crossing
    released = broker.release_reads(note="unread when our flow went out")
    assert [int(f.body.delivery_id) for f in released if isinstance(f.body, Transfer)][:2] == [3, 4]
    entries = broker.transcript.snapshot()
    flow_at = next(e.index for e in entries if e.item is ours)
    noted = [e for e in entries if e.note == "unread when our flow went out"]
    assert noted and all(e.index > flow_at and e.direction == "in" for e in noted)
    assert broker.expect(Transfer).body.delivery_id == 3          # readable now, in order
    assert broker.state.link(0, 0).delivery_count == 5


def test_a_hold_from_now_keeps_the_next_frame(pair):
    broker, client = pair
    broker.hold_reads_after(None)
    client.flow(0, handle=0, link_credit=0, delivery_count=0, echo=True)
    got = broker.await_held(lambda f: isinstance(f.body, Flow), "the client's flow")
    assert got.body.echo and broker.held() == [got] and broker.holding
    broker.release_reads()
    assert not broker.holding
    assert broker.expect(Flow).body.echo and broker.held() == []
