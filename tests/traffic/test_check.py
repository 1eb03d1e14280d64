"""`amqp-conformance check`: captures (synthetic ones with chosen pathologies, and real tshark loopback
captures), transcripts, and the one-line errors with their exit codes."""

from __future__ import annotations

import json
import random

import pytest
from capwriter import CLIENT, SERVER, Conversation, publisher, tcp_packet, write_pcap, write_pcapng

from conformance import errors
from conformance.cli import main
from conformance.traffic.check import judge_all
from conformance.traffic.judge import ConnectionJudge, find_boundary
from conformance.wire import AMQP_HEADER, Attach, Begin, Flow, Source, Target, Transfer, encode_frame

RDC = "2.7.4/receiver-delivery-count"


def findings(path):
    return [(f.requirement_id, f.endpoint, f.product, f.frame) for f in judge_all([path]).findings]


@pytest.mark.parametrize("fmt", ["pcap", "pcap-nano", "pcapng"])
def test_the_brokers_publisher_flow_without_delivery_count_is_found(tmp_path, fmt):
    path = tmp_path / "c.cap"
    packets = publisher(omit_delivery_count=True).packets()
    (write_pcapng(path, packets) if fmt == "pcapng" else write_pcap(path, packets, nano=fmt == "pcap-nano"))
    found = judge_all([path]).findings
    assert [(f.requirement_id, f.endpoint, f.container_id, f.product, f.version) for f in found] == \
        [(RDC, "server", "broker-1", "TestBroker", "9.9")]
    assert found[0].frame.startswith("flow(handle=0")


def test_a_conforming_conversation_has_no_findings(tmp_path):
    write_pcap(tmp_path / "ok.pcap", publisher(omit_delivery_count=False).packets())
    assert findings(tmp_path / "ok.pcap") == []


def test_retransmissions_and_out_of_order_segments_change_nothing(tmp_path):
    conv = publisher(transfers=8)
    clean = conv.packets()
    write_pcap(tmp_path / "clean.pcap", clean)
    rnd = random.Random(7)
    # runs of segments one side sent back to back arrive shuffled (TCP reorders within a direction only);
    # some segments are captured again later (retransmitted)
    sides = [""] * 2 + [side for side, _ in conv.chunks]
    messy, run = list(clean[:2]), []
    for k in range(2, len(clean) + 1):
        if run and (k == len(clean) or sides[k] != sides[run[-1]]):
            group = [clean[i] for i in run]
            rnd.shuffle(group)
            messy += group
            run = []
        if k < len(clean):
            run.append(k)
    for k in rnd.sample(range(2, len(messy)), 5):
        messy.insert(k + 1, messy[k])
    assert messy != clean
    write_pcap(tmp_path / "messy.pcap", messy)
    assert findings(tmp_path / "messy.pcap") == findings(tmp_path / "clean.pcap") != []
    conn = judge_all([tmp_path / "messy.pcap"]).connections[0]
    assert conn.frames == 15


def test_bytes_split_across_segments_and_overlapping_retransmission(tmp_path):
    conv = publisher()
    write_pcap(tmp_path / "clean.pcap", conv.packets())
    # every chunk in 7-byte segments, each but the first of a chunk followed by a retransmission overlapping
    # the previous segment by 3 bytes
    seq = {"c": 1001, "s": 5001}
    packets = [tcp_packet(CLIENT, SERVER, 1000, flags=0x02), tcp_packet(SERVER, CLIENT, 5000, flags=0x12)]
    for side, data in conv.chunks:
        src, dst = (CLIENT, SERVER) if side == "c" else (SERVER, CLIENT)
        for off in range(0, len(data), 7):
            packets.append(tcp_packet(src, dst, seq[side] + off, data[off:off + 7]))
            if off >= 3:
                packets.append(tcp_packet(src, dst, seq[side] + off - 3, data[off - 3:off + 7]))
        seq[side] += len(data)
    write_pcap(tmp_path / "split.pcap", packets)
    result = judge_all([tmp_path / "split.pcap"])
    assert result.connections[0].frames == 10
    assert findings(tmp_path / "split.pcap") == findings(tmp_path / "clean.pcap") != []


def _mid_stream_conversation() -> tuple[Conversation, int]:
    """A publisher conversation; the cut point lies inside the client's first transfer."""
    conv = publisher(omit_delivery_count=True, transfers=5)
    # later: a new session and link whose flow lacks delivery-count, all inside the capture
    conv.c(encode_frame(Begin(next_outgoing_id=0, incoming_window=100, outgoing_window=100), channel=1))
    conv.s(encode_frame(Begin(remote_channel=1, next_outgoing_id=0, incoming_window=100, outgoing_window=100),
                        channel=1))
    conv.c(encode_frame(Attach(name="pub2", handle=0, role=False, source=Source(), target=Target(address="q"),
                               initial_delivery_count=0xFFFFFFF0), channel=1))
    conv.s(encode_frame(Attach(name="pub2", handle=0, role=True, source=Source(), target=Target(address="q")),
                        channel=1))
    conv.s(encode_frame(Flow(next_incoming_id=0, incoming_window=100, next_outgoing_id=0, outgoing_window=100,
                             handle=0, link_credit=5), channel=1))
    first_transfer = next(k for k, (side, chunk) in enumerate(conv.chunks) if side == "c" and chunk[8:11] == b"\x00\x53\x14")
    return conv, first_transfer


def test_a_connection_captured_mid_stream_is_judged_from_its_first_whole_frame(tmp_path):
    conv, cut = _mid_stream_conversation()
    chunks = conv.chunks
    # the capture starts in the middle of a transfer: no SYN, no header, no open, begin or attach of session 0
    seq = {"c": 77777, "s": 99999}
    packets = []
    head_side, head = chunks[cut]
    packets.append(tcp_packet(CLIENT, SERVER, seq["c"], head[5:]))
    seq["c"] += len(head) - 5
    for side, data in chunks[cut + 1:]:
        src, dst = (CLIENT, SERVER) if side == "c" else (SERVER, CLIENT)
        packets.append(tcp_packet(src, dst, seq[side], data))
        seq[side] += len(data)
    # more transfers on the unknown link: beyond the 10 credit the capture never saw, yet never judged as 0
    for k in range(20):
        packets.append(tcp_packet(CLIENT, SERVER, seq["c"], encode_frame(
            Transfer(handle=0, delivery_id=100 + k, delivery_tag=b"x", settled=True), payload=b"x")))
        seq["c"] += len(packets[-1]) - 54
    write_pcap(tmp_path / "mid.pcap", packets)
    result = judge_all([tmp_path / "mid.pcap"])
    conn = result.connections[0]
    assert conn.mid_stream
    assert conn.endpoints["client"].container_id is None          # its open was not captured: unknown
    got = [(f.requirement_id, f.endpoint, f.frame.split("(")[0]) for f in result.findings]
    assert got == [(RDC, "server", "ch1 flow")]                 # only the flow of the session it saw begin
    assert result.findings[0].container_id is None and result.findings[0].product is None


def test_find_boundary_skips_a_partial_frame():
    frames = b"".join(encode_frame(Begin(next_outgoing_id=k, incoming_window=1, outgoing_window=1)) for k in range(4))
    assert find_boundary(frames[3:]) == len(encode_frame(Begin(next_outgoing_id=0, incoming_window=1,
                                                                outgoing_window=1))) - 3
    assert find_boundary(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n") is None


def test_an_undecodable_frame_is_a_finding_and_the_other_connections_go_on(tmp_path):
    bad = Conversation().c(AMQP_HEADER).s(AMQP_HEADER).c(b"\x00\x00\x00\x10\x02\x00\x00\x00\x00\x53\x10\xff\xff\xff\xff\xff")
    other = ("10.0.0.3", 40001)
    packets = bad.packets() + publisher().packets(client=other)
    write_pcap(tmp_path / "bad.pcap", packets)
    result = judge_all([tmp_path / "bad.pcap"])
    by_conn = {c.name.split(":", 1)[1]: [(f.requirement_id, f.endpoint) for f in c.findings] for c in result.connections}
    assert by_conn == {"10.0.0.1:40000->10.0.0.2:5672": [("decode-error", "client")],
                       "10.0.0.3:40001->10.0.0.2:5672": [(RDC, "server")]}


def test_the_suites_transcripts_are_judged_like_captures(tmp_path):
    conv = publisher()
    entries = [{"index": k, "t": 0.0, "direction": "out" if side == "c" else "in", "name": "x", "raw": data.hex()}
               for k, (side, data) in enumerate(conv.chunks)]
    (tmp_path / "transcripts").mkdir()
    (tmp_path / "transcripts" / "case__broker.json").write_text(json.dumps([{"schema": "amqp-conformance/transcript/1",
                                                                            "label": "b", "entries": entries}]))
    write_pcap(tmp_path / "same.pcap", conv.packets())
    assert findings(tmp_path / "transcripts" / "case__broker.json") == findings(tmp_path / "same.pcap") != []
    assert findings(tmp_path) == findings(tmp_path / "same.pcap") * 2     # a directory: both files


def _http_packets():
    return Conversation().c(b"GET / HTTP/1.1\r\nHost: example\r\n\r\n").s(
        b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok").packets(server=("10.0.0.2", 80))


def _tls_packets():
    hello = bytes.fromhex("160301002f0100002b0303") + bytes(32) + b"\x00\x00\x02\x13\x01\x01\x00"
    return Conversation().c(hello).s(bytes.fromhex("1603030031020000")).packets(server=("10.0.0.2", 5671))


@pytest.mark.parametrize("name, make, code, words", [
    ("truncated", lambda p: (write_pcap(p, publisher().packets()), p.write_bytes(p.read_bytes()[:-7])),
     errors.EXIT_CAPTURE_TRUNCATED, "cut short"),
    ("http", lambda p: write_pcap(p, _http_packets()), errors.EXIT_CAPTURE_NO_AMQP, "no AMQP 1.0 traffic"),
    ("tls", lambda p: write_pcapng(p, _tls_packets()), errors.EXIT_CAPTURE_TLS, "TLS-encrypted"),
    ("not-a-capture", lambda p: p.write_bytes(b"\x7fELF" + bytes(100)), errors.EXIT_NOT_A_CAPTURE,
     "is not a capture"),
    ("json-not-transcript", lambda p: p.write_text('{"a": 1}'), errors.EXIT_NOT_A_CAPTURE, "not a transcript"),
    ("missing", lambda p: None, errors.EXIT_NOT_A_CAPTURE, "does not exist"),
])
def test_bad_captures_are_one_line_and_a_distinct_exit_code(tmp_path, capsys, name, make, code, words):
    path = tmp_path / f"{name}.pcap"
    make(path)
    rc = main(["check", str(path), "--reports-dir", str(tmp_path / "reports")])
    err = capsys.readouterr().err
    assert rc == code
    assert err.count("\n") == 1 and err.startswith("error: ") and words in err and "Traceback" not in err


def test_the_capture_exit_codes_are_distinct():
    codes = [errors.EXIT_CAPTURE_TRUNCATED, errors.EXIT_CAPTURE_NO_AMQP, errors.EXIT_CAPTURE_TLS,
             errors.EXIT_NOT_A_CAPTURE]
    others = {v for k, v in vars(errors).items() if k.startswith("EXIT_")} - set(codes)
    assert len(set(codes)) == 4 and not set(codes) & others


def test_check_writes_a_traffic_run_directory_and_exits_1_on_a_must(tmp_path, capsys):
    write_pcap(tmp_path / "c.pcap", publisher().packets())
    rc = main(["check", str(tmp_path / "c.pcap"), "--reports-dir", str(tmp_path / "reports")])
    out = capsys.readouterr().out
    assert rc == errors.EXIT_MUST_FAILED
    assert RDC in out and "broker-1 (TestBroker@9.9)" in out
    run = next((tmp_path / "reports" / "traffic").iterdir())
    lines = (run / "findings.jsonl").read_text().splitlines()
    assert [json.loads(x)["requirement_id"] for x in lines] == [RDC]
    assert json.loads((run / "run.json").read_text())["connections"] == 1
    assert "| 2.7.4/receiver-delivery-count | MUST | server TestBroker@9.9 | 1 |" in (run / "report.md").read_text()


def test_a_judge_fed_decoded_frames_matches_one_fed_bytes():
    conv = publisher()
    a, b = ConnectionJudge("a"), ConnectionJudge("b")
    from conformance.wire import FrameDecoder
    decoders = {"client": FrameDecoder(), "server": FrameDecoder()}
    for side, data in conv.chunks:
        side = "client" if side == "c" else "server"
        a.feed(side, data)
        b.observe(side, decoders[side].feed(data))
    assert [f.requirement_id for f in a.findings] == [f.requirement_id for f in b.findings] == [RDC]


def _client_sends_after_the_stop(extra_after_seen: bool) -> list:
    """The broker stops a publisher (link-credit 0) while transfers are in flight; from between the two the
    stop is seen before the client's next transfer, which the client may have sent before the stop reached it.
    With extra_after_seen the client later sends again after proving it saw the stop (its own flow echoing it)."""
    conv = publisher(omit_delivery_count=False, transfers=2)
    conv.s(encode_frame(Flow(next_incoming_id=2, incoming_window=100, next_outgoing_id=0, outgoing_window=100,
                             handle=0, delivery_count=2, link_credit=0)))
    conv.c(encode_frame(Transfer(handle=0, delivery_id=2, delivery_tag=b"\x02", settled=True), payload=b"x"))
    if extra_after_seen:
        conv.s(encode_frame(Flow(next_incoming_id=3, incoming_window=100, next_outgoing_id=0, outgoing_window=100,
                                 handle=0, delivery_count=3, link_credit=0)))
        conv.c(encode_frame(Flow(next_incoming_id=0, incoming_window=100, next_outgoing_id=3, outgoing_window=100,
                                 handle=0, delivery_count=3, link_credit=0)))
        conv.c(encode_frame(Transfer(handle=0, delivery_id=3, delivery_tag=b"\x03", settled=True), payload=b"x"))
    judge = ConnectionJudge("c")
    for side, data in conv.chunks:
        judge.feed("client" if side == "c" else "server", data)
    return [(f.requirement_id, f.endpoint) for f in judge.findings]


def test_the_in_flight_rule_applies_to_the_client_too():
    assert _client_sends_after_the_stop(False) == []            # may have been sent before the stop arrived
    assert ("2.6.7/no-send-without-credit", "client") in _client_sends_after_the_stop(True)


def test_a_long_mid_stream_of_random_bytes_is_not_amqp_without_rescanning():
    data = random.Random(5).randbytes(1 << 20) + bytes(200)
    judge = ConnectionJudge("x", from_start=False)
    for off in range(0, len(data), 1400):            # 750 segments: each searched only from where the last stopped
        judge.feed("client", data[off:off + 1400])
    assert judge.kind == "not-amqp" and judge.frames == 0 and judge.streams["client"].scanned > len(data) - 10_000


def test_a_capture_mixing_amqp_http_and_tls_judges_the_amqp_and_says_what_it_skipped(tmp_path, capsys):
    write_pcapng(tmp_path / "mixed.pcapng", _http_packets() + _tls_packets()
                 + publisher().packets(client=("10.0.0.7", 40007)))
    rc = main(["check", str(tmp_path / "mixed.pcapng"), "--reports-dir", str(tmp_path / "reports")])
    out = capsys.readouterr().out
    assert rc == errors.EXIT_MUST_FAILED
    skipped = [x for x in out.splitlines() if x.startswith("skipped ")]
    assert len(skipped) == 2 and "TLS-encrypted" in skipped[1] and "not AMQP 1.0" in skipped[0]
    assert "1 connection(s) judged" in out and RDC in out
