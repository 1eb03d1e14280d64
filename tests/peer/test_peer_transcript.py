"""Transcript: JSON schema, ladder rendering (golden text), redaction of SASL credentials and passwords."""

from __future__ import annotations

import json
import logging

from conformance.peer import SCHEMA, Peer, Timeouts, Transcript, summarize
from conformance.wire import (
    AMQP_HEADER, Attach, Begin, Close, Detach, Error, Flow, Frame, FrameDecoder, ProtocolHeader, SaslInit,
    SaslResponse, Symbol, Transfer, encode_frame,
)
from conformance.wire.frames import SASL_FRAME

FAST = Timeouts(frame=2.0, quiet=0.3, connect=2.0)


def frame(body, channel=0, payload=b"", frame_type=0):
    return Frame(channel, body, payload, frame_type, raw=encode_frame(body, channel, payload, frame_type))


def synchronous_get() -> Transcript:
    """Figure 2.43 (Synchronous Get) as our peer would record it, with fixed times."""
    t = Transcript(label="broker")
    rows = [
        ("out", frame(Attach(name="get", handle=0, role=True))),
        ("in", frame(Attach(name="get", handle=1, role=False, initial_delivery_count=0xFFFFFFFB))),
        ("out", frame(Flow(next_incoming_id=0xFFFFFFFC, incoming_window=2048, next_outgoing_id=0,
                           outgoing_window=2048, handle=0, delivery_count=0xFFFFFFFB, link_credit=1))),
        ("in", frame(Transfer(handle=1, delivery_id=0, delivery_tag=b"\x00", settled=True), payload=b"msg")),
        ("out", Frame(0, None, raw=b"\x00\x00\x00\x08\x02\x00\x00\x00")),
        ("in", frame(Detach(handle=1, closed=True, error=Error(condition=Symbol("amqp:link:detach-forced"))))),
    ]
    for i, (direction, item) in enumerate(rows):
        entry = t.add(direction, item, item.raw, auto=item.body is None)
        entry.t = i * 0.0125
    return t


GOLDEN_PEER_RECEIVER = """\
   t (ms)  Receiver (peer)                           Sender (broker)
           ===================================================================
      0.0  attach(name=get, handle=0, role=receiver)
                                        ---------->
     12.5                               <----------  attach(name=get, handle=1, role=sender, initial-delivery-count=0xfffffffb)
     25.0  flow(handle=0, delivery-count=0xfffffffb, link-credit=1, next-incoming-id=0xfffffffc, incoming-window=2048, next-outgoing-id=0, outgoing-window=2048)
                                        ---------->
     37.5                               <----------  transfer(handle=1, delivery-id=0, settled=true)
     50.0  empty frame [auto]           ---------->
     62.5                               <----------  detach(handle=1, closed=true, error=amqp:link:detach-forced)
           -------------------------------------------------------------------"""


def test_ladder_golden_text_receiver_left():
    assert synchronous_get().ladder(width=78) == GOLDEN_PEER_RECEIVER


def test_ladder_with_the_broker_as_receiver_mirrors_the_arrows():
    lines = synchronous_get().ladder(receiver_side="broker", width=78).splitlines()
    assert lines[0].split() == ["t", "(ms)", "Receiver", "(broker)", "Sender", "(peer)"]
    # the broker's transfer now leaves the left column: text first, then a right-pointing arrow
    i = next(n for n, line in enumerate(lines) if "transfer(" in line)
    assert lines[i].lstrip().startswith("37.5  transfer(") and lines[i + 1].strip() == "---------->"
    flow = next(line for line in lines if "flow(" in line)
    assert flow.index("<----------") < flow.index("flow(")


def test_summaries_show_the_key_flow_fields():
    f = Flow(next_incoming_id=1, incoming_window=2, next_outgoing_id=3, outgoing_window=4, handle=5,
             delivery_count=6, link_credit=7, available=8, drain=True, echo=True)
    assert summarize(Frame(0, f)) == ("flow(handle=5, delivery-count=6, link-credit=7, available=8, drain=true, "
                                      "echo=true, next-incoming-id=1, incoming-window=2, next-outgoing-id=3, "
                                      "outgoing-window=4)")
    assert summarize(Frame(2, Close())) == "close()"
    assert summarize(Frame(2, Begin(next_outgoing_id=0, incoming_window=1, outgoing_window=1))).startswith("ch2 begin(")
    assert summarize(ProtocolHeader(3)) == "header(SASL 1.0.0)"
    assert summarize(b"\x01\x02") == "raw bytes(2: 0102)"


def test_json_has_a_stable_documented_shape():
    doc = synchronous_get().to_json()
    assert doc["schema"] == SCHEMA and doc["label"] == "broker"
    json.dumps(doc)   # serialisable as is
    flow = doc["entries"][2]
    assert set(flow) == {"index", "t", "direction", "name", "raw", "channel", "frame_type", "summary", "fields",
                         "payload_size"}
    assert flow["name"] == "flow" and flow["direction"] == "out" and flow["frame_type"] == "amqp"
    assert flow["fields"]["type"] == "flow" and flow["fields"]["link_credit"] == 1
    assert flow["fields"]["delivery_count"] == 0xFFFFFFFB
    # raw is the exact frame: it decodes back to the same performative
    decoded = FrameDecoder().feed(bytes.fromhex(flow["raw"]))[0]
    assert decoded.body.link_credit == 1
    transfer = doc["entries"][3]
    assert transfer["payload_size"] == 3 and transfer["fields"]["delivery_tag"] == {"binary": "00"}
    heartbeat = doc["entries"][4]
    assert heartbeat["name"] == "empty" and heartbeat["auto"] is True and heartbeat["fields"] is None
    assert [e["index"] for e in doc["entries"]] == list(range(6))
    assert doc["entries"][5]["fields"]["error"] == {"type": "error", "condition": "amqp:link:detach-forced"}


def test_protocol_headers_and_raw_bytes_are_recorded():
    t = Transcript()
    t.add("out", ProtocolHeader(0, raw=AMQP_HEADER), AMQP_HEADER)
    t.add("out", b"\xde\xad", b"\xde\xad", note="raw bytes")
    doc = t.to_json()["entries"]
    assert doc[0]["name"] == "header" and doc[0]["protocol_id"] == 0 and doc[0]["raw"] == AMQP_HEADER.hex()
    assert doc[1]["name"] == "raw" and doc[1]["raw"] == "dead"


PASSWORD = "s3cr3t-Pa55"


def test_sasl_plain_response_is_redacted_in_decoded_and_raw_form():
    t = Transcript()
    init = SaslInit(mechanism=Symbol("PLAIN"), initial_response=b"\x00guest\x00" + PASSWORD.encode())
    t.add("out", frame(init, frame_type=SASL_FRAME), encode_frame(init, 0, b"", SASL_FRAME))
    response = SaslResponse(response=PASSWORD.encode())
    t.add("in", frame(response, frame_type=SASL_FRAME), encode_frame(response, 0, b"", SASL_FRAME))
    entry = t.snapshot()[0]
    assert entry.item.body.initial_response == b"<redacted>"
    assert PASSWORD.encode() not in entry.raw and PASSWORD.encode() not in t.snapshot()[1].raw
    rendered = json.dumps(t.to_json()) + t.ladder() + repr(t.snapshot())
    assert PASSWORD not in rendered and PASSWORD.encode().hex() not in rendered


def test_registered_secrets_are_masked_in_raw_sends_and_notes():
    t = Transcript()
    t.add_secret(PASSWORD)
    t.add("out", b"xx" + PASSWORD.encode() + b"yy", b"xx" + PASSWORD.encode() + b"yy", note=f"sent {PASSWORD}")
    rendered = json.dumps(t.to_json()) + t.ladder()
    assert PASSWORD not in rendered and PASSWORD.encode().hex() not in rendered


def test_password_never_appears_anywhere_in_a_real_handshake(scripted_broker, caplog):
    caplog.set_level(logging.DEBUG)
    url, broker = scripted_broker(lambda peer: (peer.server_handshake(), peer.client_sasl_init)[1])
    port = url.rsplit(":", 1)[1]
    client = Peer.connect(f"amqp://guest:{PASSWORD}@127.0.0.1:{port}/vh", timeouts=FAST)
    try:
        client.handshake()
        client_init = broker.join()
        # the scripted broker got the real credentials: redaction only touches what is recorded
        assert client_init.initial_response == b"\x00guest\x00" + PASSWORD.encode()
        outputs = [json.dumps(client.transcript.to_json()), client.transcript.ladder(),
                   json.dumps(broker.peer.transcript.to_json()), broker.peer.transcript.ladder(),
                   repr(client.transcript.snapshot()), repr(client.address), str(client.address), caplog.text]
        for text in outputs:
            assert PASSWORD not in text and PASSWORD.encode().hex() not in text
        assert str(client.address) == f"amqp://guest:***@127.0.0.1:{port}/vh"
        sasl_init = client.transcript.frames("out", "sasl-init")[0]
        assert sasl_init.body.initial_response == b"<redacted>"
    finally:
        client.disconnect()
