"""`expect(..., unless=...)`: a wait ends at once (Precluded) when a frame arrives that rules out the awaited
one (the session's end), and that frame stays for the next expectation. No timing is asserted: the wait's
bound is 60 s under a 30 s test timeout."""

from __future__ import annotations

import pytest

from conformance.peer import ExpectationTimeout, Precluded
from conformance.wire import Close, End, Error, Flow, Symbol, Transfer


@pytest.mark.timeout(30)
def test_a_wait_ends_when_the_session_ends_and_the_end_stays(session_on):
    def broker(peer):
        peer.expect(Flow)
        peer.send(End(error=Error(condition=Symbol("amqp:internal-error"))))
        peer.expect(Close)

    client, script = session_on(broker)
    client.flow(0, handle=0, link_credit=1, delivery_count=0)
    ends = lambda f: isinstance(f.body, End)
    with pytest.raises(Precluded) as caught:
        client.expect(Transfer, channel=0, timeout=60, unless=ends)
    assert isinstance(caught.value, ExpectationTimeout)          # callers that catch timeouts catch it too
    assert caught.value.frame.name == "end"
    assert client.expect(End, timeout=0).body.error.condition == "amqp:internal-error"   # still in the inbox
    client.close_connection()
    script.join()


@pytest.mark.timeout(30)
def test_a_matching_frame_before_the_precluding_one_is_taken(session_on):
    def broker(peer):
        peer.send(Flow(next_incoming_id=0, incoming_window=100, next_outgoing_id=0, outgoing_window=100, echo=None))
        peer.send(End())
        peer.expect(Close)

    client, script = session_on(broker)
    # the flow comes before the end (one connection: in order), so it is taken even if both are there
    assert client.expect(Flow, timeout=60, unless=lambda f: isinstance(f.body, End)).name == "flow"
    assert client.expect(End).name == "end"
    client.close_connection()
    script.join()
