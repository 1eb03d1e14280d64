"""Writing small pcap / pcapng captures for the tests: TCP over IPv4 over Ethernet, segments chosen by the
test (retransmitted, out of order, cut mid-stream). The real-capture tests use tshark instead."""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

from conformance.wire import AMQP_HEADER, Attach, Begin, Flow, Open, Source, Symbol, Target, Transfer, encode_frame

CLIENT = ("10.0.0.1", 40000)
SERVER = ("10.0.0.2", 5672)


def _ip(a: str) -> bytes:
    return bytes(int(x) for x in a.split("."))


def tcp_packet(src, dst, seq: int, data: bytes = b"", flags: int = 0x18) -> bytes:
    tcp = struct.pack(">HHIIBBHHH", src[1], dst[1], seq & 0xFFFFFFFF, 0, 5 << 4, flags, 65535, 0, 0) + data
    ip = struct.pack(">BBHHHBBH4s4s", 0x45, 0, 20 + len(tcp), 0, 0x4000, 64, 6, 0, _ip(src[0]), _ip(dst[0])) + tcp
    return b"\x00" * 12 + b"\x08\x00" + ip


@dataclass
class Conversation:
    """Bytes each side sends, in order: (side, bytes); sides "c" and "s"."""

    chunks: list = field(default_factory=list)

    def c(self, data: bytes):
        self.chunks.append(("c", data))
        return self

    def s(self, data: bytes):
        self.chunks.append(("s", data))
        return self

    def packets(self, client=CLIENT, server=SERVER, syn=True, isn=(1000, 5000)) -> list[bytes]:
        seq = {"c": isn[0] + 1, "s": isn[1] + 1}
        out = []
        if syn:
            out.append(tcp_packet(client, server, isn[0], flags=0x02))
            out.append(tcp_packet(server, client, isn[1], flags=0x12))
        for side, data in self.chunks:
            src, dst = (client, server) if side == "c" else (server, client)
            out.append(tcp_packet(src, dst, seq[side], data))
            seq[side] += len(data)
        return out


def write_pcap(path, packets: list[bytes], *, nano: bool = False) -> None:
    with open(path, "wb") as fh:
        fh.write(struct.pack("<IHHiIII", 0xA1B23C4D if nano else 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1))
        for k, p in enumerate(packets):
            fh.write(struct.pack("<IIII", 1700000000, k, len(p), len(p)) + p)


def write_pcapng(path, packets: list[bytes]) -> None:
    def block(btype: int, body: bytes) -> bytes:
        body += b"\x00" * (-len(body) % 4)
        n = len(body) + 12
        return struct.pack("<II", btype, n) + body + struct.pack("<I", n)
    with open(path, "wb") as fh:
        fh.write(block(0x0A0D0D0A, struct.pack("<IHHq", 0x1A2B3C4D, 1, 0, -1)))
        fh.write(block(1, struct.pack("<HHI", 1, 0, 65535)))
        for k, p in enumerate(packets):
            fh.write(block(6, struct.pack("<IIIII", 0, 0, k, len(p), len(p)) + p))


def publisher(omit_delivery_count: bool = True, transfers: int = 3, *, product="TestBroker", version="9.9") -> Conversation:
    """A client publishing on one link; the broker's flows to it lack delivery-count when told so."""
    conv = Conversation()
    conv.c(AMQP_HEADER).s(AMQP_HEADER)
    conv.c(encode_frame(Open(container_id="app-1", properties={Symbol("product"): "testclient",
                                                                Symbol("version"): "1.2"})))
    conv.s(encode_frame(Open(container_id="broker-1", properties={Symbol("product"): product,
                                                                   Symbol("version"): version})))
    conv.c(encode_frame(Begin(next_outgoing_id=0, incoming_window=100, outgoing_window=100)))
    conv.s(encode_frame(Begin(remote_channel=0, next_outgoing_id=0, incoming_window=100, outgoing_window=100)))
    conv.c(encode_frame(Attach(name="pub", handle=0, role=False, source=Source(), target=Target(address="q"),
                               initial_delivery_count=0)))
    conv.s(encode_frame(Attach(name="pub", handle=0, role=True, source=Source(), target=Target(address="q"))))
    dc = None if omit_delivery_count else 0
    conv.s(encode_frame(Flow(next_incoming_id=0, incoming_window=100, next_outgoing_id=0, outgoing_window=100,
                             handle=0, delivery_count=dc, link_credit=10)))
    for k in range(transfers):
        conv.c(encode_frame(Transfer(handle=0, delivery_id=k, delivery_tag=bytes([k]), settled=True),
                            payload=b"\x00\x53\x77\xa1\x05hello"))
    return conv
