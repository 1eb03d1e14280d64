"""A link is its name and its direction (2.6.1), in every place traffic is judged: a sender and a receiver
sharing a name -- what python-qpid-proton's Container gives both links to one address unless the application
names them -- are two links in a capture, through `observe`, and in a case transcript, and judging them finds
what it finds when the same traffic names them apart.

2.6.1: "Link names MUST uniquely identify the link amongst all links of the same direction between the two
participating containers." ... "the link can be globally identified by the (ordered) tuple (A,B,<name>)"."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
from capwriter import Conversation, write_pcap

from conformance.model.oracle import transcript_violations
from conformance.reference.listener import ReferenceBroker
from conformance.traffic.check import judge_all
from conformance.wire import (AMQP_HEADER, Attach, Begin, Flow, Open, Source, Target, Transfer, encode_frame)

PAIRS = Path(__file__).with_name("proton_pairs.py")


def _pair_conversation(client_names: tuple[str, str], over_credit: bool = False) -> Conversation:
    """The client sends 2 messages on its sender and takes 2 on its receiver, on one queue; the server grants
    the sender 2 and sends within the receiver's credit of 2 (over_credit: a third transfer beyond it)."""
    snd, rcv = client_names
    c = Conversation()
    c.c(AMQP_HEADER).s(AMQP_HEADER)
    c.c(encode_frame(Open(container_id="app"))).s(encode_frame(Open(container_id="broker")))
    c.c(encode_frame(Begin(next_outgoing_id=0, incoming_window=100, outgoing_window=100)))
    c.s(encode_frame(Begin(remote_channel=0, next_outgoing_id=0, incoming_window=100, outgoing_window=100)))
    c.c(encode_frame(Attach(name=snd, handle=0, role=False, source=Source(), target=Target(address="q"),
                            initial_delivery_count=0)))
    c.c(encode_frame(Attach(name=rcv, handle=1, role=True, source=Source(address="q"), target=Target())))
    c.s(encode_frame(Attach(name=snd, handle=0, role=True, source=Source(), target=Target(address="q"))))
    c.s(encode_frame(Attach(name=rcv, handle=1, role=False, source=Source(address="q"), target=Target(),
                            initial_delivery_count=7)))
    c.c(encode_frame(Flow(next_incoming_id=0, incoming_window=100, next_outgoing_id=0, outgoing_window=100,
                          handle=1, delivery_count=7, link_credit=2)))
    c.s(encode_frame(Flow(next_incoming_id=0, incoming_window=100, next_outgoing_id=0, outgoing_window=100,
                          handle=0, delivery_count=0, link_credit=2)))
    for k in range(2):
        c.c(encode_frame(Transfer(handle=0, delivery_id=k, delivery_tag=bytes([k]), settled=True), payload=b"m"))
    for k in range(3 if over_credit else 2):
        c.s(encode_frame(Transfer(handle=1, delivery_id=k, delivery_tag=bytes([k]), settled=True), payload=b"m"))
    return c


def _found(path) -> list:
    return [(f.requirement_id, f.endpoint, f.frame_index) for f in judge_all([path]).findings]


def test_in_a_capture_a_sender_and_a_receiver_sharing_a_name_are_judged_as_two_links(tmp_path):
    for names, label in (((("q", "q")), "shared"), (("q-snd", "q-rcv"), "distinct")):
        write_pcap(tmp_path / f"{label}.pcap", _pair_conversation(names).packets())
        write_pcap(tmp_path / f"{label}-over.pcap", _pair_conversation(names, over_credit=True).packets())
    assert _found(tmp_path / "shared.pcap") == _found(tmp_path / "distinct.pcap") == []
    # the check can still fail: the server's third transfer is beyond the receiver's credit of 2
    assert _found(tmp_path / "shared-over.pcap") == _found(tmp_path / "distinct-over.pcap") == [
        ("2.6.7/no-send-without-credit", "server", 14)]


def _findings_by_kind(result) -> Counter:
    return Counter((f.requirement_id, f.endpoint) for f in result.findings)


@pytest.mark.skipif(shutil.which("tshark") is None, reason="tshark is not installed (./dev test installs it)")
def test_a_real_capture_of_proton_clients_with_default_link_names_finds_what_distinct_names_find(tmp_path):
    """python-qpid-proton clients, each sending to and receiving from its own queue, captured by tshark:
    with the Container's default link names (sender and receiver named alike) the findings are those of the
    same applications naming their links apart -- only the receivers' first flow, pipelined with their attach
    before the broker's attach came (`2.7.4/receiver-delivery-count`, client), which is real."""
    from test_real_captures import tshark_on
    broker = ReferenceBroker().start()
    try:
        results = {}
        for names in ("default", "distinct"):
            out = tmp_path / f"{names}.pcapng"
            with tshark_on(broker.port, out):
                app = subprocess.run([sys.executable, str(PAIRS), broker.url, "6", "12", names], capture_output=True,
                                     text=True, timeout=120)
            assert app.returncode == 0, app.stdout + app.stderr[-800:]
            results[names] = judge_all([out])
    finally:
        broker.stop()
    assert len(results["default"].connections) == len(results["distinct"].connections) == 6
    assert _findings_by_kind(results["default"]) == _findings_by_kind(results["distinct"])
    assert set(_findings_by_kind(results["default"])) <= {("2.7.4/receiver-delivery-count", "client")}


def test_through_observe_a_sender_and_a_receiver_sharing_a_name_are_two_links(tmp_path):
    from test_observe import start_observe
    broker = ReferenceBroker().start()
    try:
        runs = {}
        for names in ("default", "distinct"):
            reports = tmp_path / names
            proc, port, _ = start_observe(reports, broker.url, "--connections", "4")
            try:
                app = subprocess.run([sys.executable, str(PAIRS), f"amqp://127.0.0.1:{port}", "4", "12", names],
                                     capture_output=True, text=True, timeout=120)
                assert app.returncode == 0, app.stdout + app.stderr[-800:]
                out, _ = proc.communicate(timeout=120)
            finally:
                proc.kill()
            assert "Traceback" not in out and "4 connection(s) observed" in out, out
            run = next((reports / "reports" / "traffic").iterdir())
            runs[names] = Counter((f["requirement_id"], f["endpoint"]) for f in
                                  map(json.loads, (run / "findings.jsonl").read_text().splitlines()))
    finally:
        broker.stop()
    assert runs["default"] == runs["distinct"]
    assert set(runs["default"]) <= {("2.7.4/receiver-delivery-count", "client")}


def test_in_a_case_transcript_a_sender_and_a_receiver_sharing_a_name_are_two_links(tmp_path):
    """The scripted peer attaches a sender and a receiver named alike on one session to the reference broker,
    sends within the credit it got and takes what its own credit allows: the peer's bookkeeping keeps two
    links, and neither the model over the transcript nor `check` of the transcript file finds anything."""
    from conformance.peer import Peer
    broker = ReferenceBroker().start()
    try:
        peer = Peer.connect(broker.url)
        try:
            peer.handshake()
            peer.begin()
            peer.attach_sender("shared", "q")
            peer.expect(Attach, role=True)
            peer.expect(Flow, handle=0, link_credit=lambda v: v and v >= 3)
            peer.attach_receiver("shared", "q")
            peer.expect(Attach, role=False)
            for k in range(3):
                peer.transfer(0, 0, b"m", delivery_id=k, delivery_tag=bytes([k]), settled=True)
            peer.flow(0, handle=1, delivery_count=peer.state.link(0, 1).delivery_count, link_credit=3)
            for _ in range(3):
                peer.expect(Transfer, handle=lambda h: h is not None)
            s = peer.state.sessions[0]
            assert s.links[0] is not s.links[1]
            assert (s.links[0].is_receiver, s.links[0].messages) == (False, 3)
            assert (s.links[1].is_receiver, s.links[1].messages, s.links[1].link_credit) == (True, 3, 0)
        finally:
            peer.close()
        transcript = peer.transcript
    finally:
        broker.stop()
    assert transcript_violations(transcript.entries) == []
    (tmp_path / "transcripts").mkdir()
    path = tmp_path / "transcripts" / "shared-name__reference.json"
    path.write_text(json.dumps([transcript.to_json()]))
    result = judge_all([path])
    assert len(result.connections) == 1 and result.connections[0].frames > 10 and result.findings == []
