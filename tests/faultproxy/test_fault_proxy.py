"""The fault-injecting proxy on real sockets, against the suite's reference broker (no real broker needed):
without a fault it is transparent; with each fault, the case aimed at the fault's requirement flips."""

from __future__ import annotations

import pytest

from conformance.cases import load_all
from conformance.faultproxy import FAULTS, MutantProxy
from conformance.faultproxy.handle import ProxiedBroker
from conformance.faultproxy.proxy import _Splitter
from conformance.options import RunOptions
from conformance.casekit.executor import run_case
from conformance.wire import AMQP_HEADER, SASL_HEADER, TLS_HEADER, Open, SaslInit, Symbol, encode_frame
from conformance.wire.frames import SASL_FRAME

OPTIONS = RunOptions(frame_timeout=2.0, quiet_period=0.25, connect_timeout=2.0)
CASES = load_all()

# fault -> (case aimed at its requirement, verdict through the proxy with the fault, requirements it may name)
TARGETS = {
    "cumulative-credit": ("2.6.7/3", "fail", ("2.6.7/credit-formula",)),
    "drain-stripped": ("2.6.7/1", "fail", ("2.6.7/drain-advance",)),
    "echo-stripped": ("2.7.4/1", "non-strict", ("2.7.4/echo",)),
    "delivery-count-shifted": ("2.7.4/1", "fail", ("2.7.4/sender-delivery-count-set",)),
    "incoming-window-raised": ("2.5.6/1", "fail", ("2.5.6/remote-incoming-window-decrement",)),
    "transfer-beyond-credit": ("2.6.8/1", "fail", ("2.6.7/no-send-without-credit",)),
    "alarm-drops-connection": ("2.5.6/4", "fail", ("2.4.3/close-frame-first",)),   # dropped without a close frame
}


def test_every_fault_has_a_target_case():
    assert set(TARGETS) == set(FAULTS)


def test_splitter_passes_headers_and_sasl_verbatim_and_decodes_after_the_amqp_header():
    sasl = encode_frame(SaslInit(mechanism=Symbol("PLAIN"), initial_response=b"\0user\0secret"),
                        frame_type=SASL_FRAME)
    amqp = encode_frame(Open(container_id="c"))
    stream = SASL_HEADER + sasl + AMQP_HEADER + amqp
    splitter = _Splitter()
    items = []
    for i in range(0, len(stream), 5):                      # arbitrary chunks
        items += splitter.feed(stream[i:i + 5])
    assert [i[0] for i in items] == ["raw", "raw", "raw", "frame"]
    assert items[1][1] == sasl and items[3][1] == amqp
    tls = _Splitter()
    assert [i[0] for i in tls.feed(TLS_HEADER + b"\x16\x03\x01 client hello")] == ["raw", "raw"]


def test_the_proxy_address_keeps_credentials_and_vhost():
    from conformance.peer import parse_url
    assert parse_url("amqp://guest:pw@10.0.0.1:5672/vh").at("127.0.0.1", 4000).url() == "amqp://guest:pw@127.0.0.1:4000/vh"
    assert parse_url("amqp://10.0.0.1:5672").at("127.0.0.1", 4000).url() == "amqp://127.0.0.1:4000"
    assert parse_url("amqp://a%40b:p%3Aw@h:1").url() == "amqp://a%40b:p%3Aw@h:1"


@pytest.mark.parametrize("case_id", ["2.6.8/1", "2.6.7/3", "2.5.6/1", "2.7.5/2", "2.7.4/3", "2.6.10/1"])
def test_proxy_without_fault_is_transparent(case_id, reference_broker):
    direct = run_case(CASES[case_id], reference_broker, OPTIONS)
    proxied = ProxiedBroker(reference_broker, None)
    try:
        through = run_case(CASES[case_id], proxied, OPTIONS)
    finally:
        proxied.stop_proxy()
    stats = proxied.proxy.stats
    assert through.verdict == direct.verdict, through.reason
    # byte level: every frame was decoded and re-encoded to exactly the bytes that came in
    assert stats.frames > 0 and stats.identical == stats.frames and stats.reencoded_differently == 0
    assert stats.rewritten == 0 and stats.drops == 0 and stats.errors == 0

    def shape(result, direction):
        return [(e["name"], e.get("channel"), e.get("payload_size"))
                for t in result.transcripts for e in t["entries"]
                if e["name"] != "empty" and e["direction"] == direction]
    if case_id in ("2.6.8/1", "2.6.7/3", "2.7.5/2", "2.7.4/3"):      # deterministic conversations
        # each direction's frames are the same; how the two directions interleave is up to timing
        for direction in ("out", "in"):
            assert shape(through, direction) == shape(direct, direction)


@pytest.mark.parametrize("fault", list(TARGETS))
def test_fault_flips_its_target_case(fault, reference_broker):
    case_id, verdict, requirements = TARGETS[fault]
    proxied = ProxiedBroker(reference_broker, fault)
    try:
        result = run_case(CASES[case_id], proxied, OPTIONS)
    finally:
        proxied.stop_proxy()
    assert result.verdict.value == verdict, f"{fault} on {case_id}: {result.verdict.value}: {result.reason}"
    assert result.violated in requirements, result.violated
    assert proxied.proxy.stats.rewritten + proxied.proxy.stats.drops > 0 and proxied.proxy.stats.errors == 0


def test_stopping_the_proxy_ends_its_connections(reference_broker):
    from conformance.peer import Peer, Timeouts
    proxy = MutantProxy("127.0.0.1", reference_broker.server.port).start()
    peer = Peer.connect(f"amqp://127.0.0.1:{proxy.port}", timeouts=Timeouts(frame=2.0, connect=2.0))
    peer.handshake(sasl="ANONYMOUS")
    proxy.stop()
    from conformance.peer import ConnectionLost
    with pytest.raises(ConnectionLost):
        peer.expect(timeout=2.0)
    peer.close()
