"""Capture files to TCP byte streams (sans-IO apart from reading the file it is given).

This module owns reading pcap (microsecond and nanosecond, either byte order) and pcapng (section, interface
and enhanced / simple / obsolete packet blocks) files, the link layers loopback and Ethernet captures use
(Ethernet, Linux cooked v1 and v2, BSD null/loopback, raw IPv4/IPv6), IPv4 / IPv6 to TCP, and TCP
reassembly per connection and direction: retransmitted bytes are dropped, out-of-order segments held until
the bytes before them came, a connection whose SYN was not captured is marked mid-stream (its streams start
where the capture does). What it yields is `Segment(key, side, data, t)` in capture order, where data is
the next in-order bytes of that side; a gap the capture never filled ends the connection's stream (`Gap`);
the first packet of each side, payload or not, yields an empty Segment first: that side was captured (a
capture of one direction only has none of the other's, not even an ACK).

A file that is no capture raises `NotACapture`, one cut short `CaptureTruncated` (conformance/errors.py):
one line each, never a traceback.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator, NamedTuple, Sequence

from ..errors import CaptureTruncated, NotACapture

PCAP_MAGICS = {b"\xd4\xc3\xb2\xa1": ("<", 1e-6), b"\xa1\xb2\xc3\xd4": (">", 1e-6),
               b"\x4d\x3c\xb2\xa1": ("<", 1e-9), b"\xa1\xb2\x3c\x4d": (">", 1e-9)}
PCAPNG_SHB = b"\x0a\x0d\x0d\x0a"

LINK_NULL, LINK_ETHERNET, LINK_RAW, LINK_LOOP, LINK_SLL, LINK_IPV4, LINK_IPV6, LINK_SLL2 = 0, 1, 101, 108, 113, 228, 229, 276
LINKS = {LINK_NULL, LINK_ETHERNET, LINK_RAW, LINK_LOOP, LINK_SLL, LINK_IPV4, LINK_IPV6, LINK_SLL2, 12, 14}

SYN, FIN, RST = 0x02, 0x01, 0x04
_MAX_HELD = 4 << 20            # out-of-order bytes held per direction before the missing ones count as lost


class Packet(NamedTuple):
    t: float
    link: int
    data: bytes


def read_packets(path: Path) -> Iterator[Packet]:
    """Every packet of a pcap or pcapng file, in file order."""
    path = Path(path)
    try:
        f = open(path, "rb")
    except OSError as exc:
        raise NotACapture(f"cannot read {path}: {exc.strerror}; give a pcap/pcapng file or a transcript .json")
    with f:
        try:
            head = f.read(4)
            if head in PCAP_MAGICS:
                yield from _pcap(f, path, head)
            elif head == PCAPNG_SHB:
                yield from _pcapng(f, path, head)
            else:
                raise NotACapture(f"{path} is not a capture (neither pcap nor pcapng); record one with "
                                  "`tshark -i lo -w FILE` or `tcpdump -i lo -w FILE`, or give a transcript .json")
        except struct.error:            # a field the checks below did not foresee is short: damaged all the same
            raise NotACapture(f"{path}: a block or record is shorter than its fields; the file is damaged, not a "
                              "capture") from None
        except OSError as exc:
            raise NotACapture(f"cannot read {path}: {exc.strerror or exc}; give a pcap/pcapng file") from None


def _truncated(path: Path, what: str) -> CaptureTruncated:
    return CaptureTruncated(f"{path} is cut short ({what}); stop the capture cleanly (Ctrl-C on tshark/tcpdump) "
                            "or cut it at a packet boundary with `editcap`")


def _pcap(f, path: Path, magic: bytes) -> Iterator[Packet]:
    order, unit = PCAP_MAGICS[magic]
    rest = f.read(20)
    if len(rest) < 20:
        raise _truncated(path, "in the file header")
    _major, _minor, _zone, _sig, _snap, link = struct.unpack(order + "HHiIII", rest)
    link &= 0x0FFFFFFF
    record = struct.Struct(order + "IIII")
    while True:
        head = f.read(16)
        if not head:
            return
        if len(head) < 16:
            raise _truncated(path, "in a packet header")
        sec, frac, incl, _orig = record.unpack(head)
        if incl > 1 << 28:
            raise NotACapture(f"{path}: a packet record claims {incl} bytes; the file is damaged, not a capture")
        data = f.read(incl)
        if len(data) < incl:
            raise _truncated(path, f"a packet of {incl} bytes has {len(data)}")
        yield Packet(sec + frac * unit, link, data)


def _pcapng(f, path: Path, first: bytes) -> Iterator[Packet]:
    order = "<"
    links: list[tuple[int, float]] = []
    block_type = first
    while True:
        head = block_type + f.read(4) if block_type else f.read(8)
        block_type = b""
        if not head:
            return
        if len(head) < 8:
            raise _truncated(path, "in a block header")
        if head[:4] == PCAPNG_SHB:
            bom = f.read(4)
            if len(bom) < 4:
                raise _truncated(path, "in a section header")
            order = "<" if bom == b"\x4d\x3c\x2b\x1a" else ">" if bom == b"\x1a\x2b\x3c\x4d" else None
            if order is None:
                raise NotACapture(f"{path}: pcapng section header with a bad byte-order magic; not a capture")
            length = struct.unpack(order + "I", head[4:])[0]
            if length < 28 or length % 4:
                raise NotACapture(f"{path}: a pcapng section header of length {length}; the file is damaged")
            if len(f.read(length - 12)) < length - 12:
                raise _truncated(path, "in a section header")
            links = []
            continue
        btype, length = struct.unpack(order + "II", head)
        if length < 12 or length % 4:
            raise NotACapture(f"{path}: a pcapng block of length {length}; the file is damaged")
        body = f.read(length - 8)
        if len(body) < length - 8:
            raise _truncated(path, f"a block of {length} bytes ends early")
        body = body[:-4]
        least = {1: 8, 6: 20, 2: 20, 3: 4}.get(btype, 0)
        if len(body) < least:
            raise NotACapture(f"{path}: a pcapng block of type {btype} has {len(body)} bytes, fewer than its "
                              f"{least} bytes of fields; the file is damaged")
        if btype == 1:                                      # interface description
            link = struct.unpack(order + "H", body[:2])[0]
            links.append((link, _tsresol(body[8:], order)))
        elif btype in (6, 2):                               # enhanced / obsolete packet block
            iface, hi, lo, incl = struct.unpack(order + "IIII", body[:16])
            if btype == 2:
                iface &= 0xFFFF
            if iface >= len(links):
                raise NotACapture(f"{path}: a packet names interface {iface}, which the file never describes")
            link, unit = links[iface]
            yield Packet(((hi << 32) | lo) * unit, link, body[20:20 + incl])
        elif btype == 3:                                    # simple packet block
            if not links:
                raise NotACapture(f"{path}: a packet before any interface description")
            yield Packet(0.0, links[0][0], body[4:])


def _tsresol(options: bytes, order: str) -> float:
    pos = 0
    while pos + 4 <= len(options):
        code, length = struct.unpack(order + "HH", options[pos:pos + 4])
        if code == 0:
            break
        if code == 9 and length >= 1:
            v = options[pos + 4]
            return 2.0 ** -(v & 0x7F) if v & 0x80 else 10.0 ** -v
        pos += 4 + ((length + 3) & ~3)
    return 1e-6


# -- link layer, IP, TCP -----------------------------------------------------------------------------------

class TcpSegment(NamedTuple):
    src: tuple
    dst: tuple
    seq: int
    flags: int
    data: bytes
    t: float


def _ip_payload(link: int, data: bytes) -> tuple[int, bytes] | None:
    """(ethertype-like version, IP packet) for the link layer, None when it carries no IP."""
    if link == LINK_ETHERNET:
        if len(data) < 14:
            return None
        etype, pos = struct.unpack(">H", data[12:14])[0], 14
        while etype in (0x8100, 0x88A8) and len(data) >= pos + 4:   # VLAN tags
            etype, pos = struct.unpack(">H", data[pos + 2:pos + 4])[0], pos + 4
        return etype, data[pos:]
    if link == LINK_SLL:
        return (struct.unpack(">H", data[14:16])[0], data[16:]) if len(data) >= 16 else None
    if link == LINK_SLL2:
        return (struct.unpack(">H", data[0:2])[0], data[20:]) if len(data) >= 20 else None
    if link in (LINK_NULL, LINK_LOOP):
        if len(data) < 4:
            return None
        family = struct.unpack("<I", data[:4])[0]
        if family > 0xFFFF:
            family = struct.unpack(">I", data[:4])[0]
        return (0x0800 if family == 2 else 0x86DD), data[4:]
    if link in (LINK_RAW, LINK_IPV4, LINK_IPV6, 12, 14):
        if not data:
            return None
        return (0x0800 if data[0] >> 4 == 4 else 0x86DD), data
    return None


def tcp_segment(packet: Packet) -> TcpSegment | None:
    """The TCP segment a packet carries, None for anything else (ARP, UDP, fragments...)."""
    return tcp_of(packet.link, packet.data, packet.t)


_TCP_HEAD = struct.Struct(">HHIIBB")


def tcp_of(link: int, data: bytes, t: float) -> TcpSegment | None:
    """`tcp_segment` of a packet given as its link type, bytes and time."""
    # the common case (Ethernet without VLAN tag, as Linux loopback captures are; IPv4; TCP; no fragment)
    # without the general path below; anything else goes that way
    if link == LINK_ETHERNET and len(data) >= 54 and data[12] == 8 and data[13] == 0 and data[14] >> 4 == 4 \
            and data[23] == 6 and not (data[20] & 0x3F or data[21]):
        ihl = (data[14] & 0x0F) * 4
        total = (data[16] << 8) | data[17]
        tcp = data[14 + ihl:14 + total] if total >= ihl else data[14 + ihl:]
        if len(tcp) < 20:
            return None
        sport, dport, seq, _ack, off, flags = _TCP_HEAD.unpack_from(tcp)
        return TcpSegment((_v4(data[26:30]), sport), (_v4(data[30:34]), dport), seq, flags,
                          tcp[(off >> 4) * 4:], t)
    carried = _ip_payload(link, data)
    if carried is None:
        return None
    etype, ip = carried
    if etype == 0x0800 and len(ip) >= 20 and ip[0] >> 4 == 4:
        ihl = (ip[0] & 0x0F) * 4
        total = struct.unpack(">H", ip[2:4])[0]
        if ip[9] != 6 or struct.unpack(">H", ip[6:8])[0] & 0x3FFF:     # not TCP, or a fragment
            return None
        src, dst = ip[12:16], ip[16:20]
        tcp = ip[ihl:total] if total >= ihl else ip[ihl:]
        family = 4
    elif etype == 0x86DD and len(ip) >= 40 and ip[0] >> 4 == 6:
        if ip[6] != 6:                                                  # extension headers: not followed
            return None
        length = struct.unpack(">H", ip[4:6])[0]
        src, dst = ip[8:24], ip[24:40]
        tcp = ip[40:40 + length]
        family = 6
    else:
        return None
    if len(tcp) < 20:
        return None
    sport, dport, seq, _ack, off, flags = _TCP_HEAD.unpack_from(tcp)
    return TcpSegment((_addr(family, src), sport), (_addr(family, dst), dport), seq, flags,
                      bytes(tcp[(off >> 4) * 4:]), t)


_V4: dict = {}


def _v4(raw: bytes) -> str:
    addr = _V4.get(raw)
    if addr is None:
        addr = _V4[raw] = ".".join(str(b) for b in raw)
    return addr


def _addr(family: int, raw: bytes) -> str:
    if family == 4:
        return _v4(bytes(raw))
    import ipaddress
    return str(ipaddress.IPv6Address(bytes(raw)))


# -- reassembly ----------------------------------------------------------------------------------------

@dataclass
class _Direction:
    next_seq: int | None = None
    held: dict = field(default_factory=dict)     # seq -> bytes, out of order
    held_bytes: int = 0
    fin: bool = False
    lost: bool = False
    seen: bool = False                            # a packet of this direction was fed (its Segment marker out)


@dataclass
class TcpConnection:
    key: tuple                         # (client (addr, port), server (addr, port)) as far as known
    from_start: bool                   # the SYN was captured
    first_t: float
    dirs: dict = field(default_factory=dict)   # (addr, port) of the sender -> _Direction
    retransmitted: int = 0
    reordered: int = 0
    gaps: int = 0

    @property
    def name(self) -> str:
        (ca, cp), (sa, sp) = self.key
        return f"{ca}:{cp}->{sa}:{sp}"


class Segment(NamedTuple):
    """The next in-order bytes one side of a connection sent; data=b"" with gap=True: bytes were lost;
    data=b"" without gap: the first packet of that side (it was captured), whatever it carried."""

    connection: TcpConnection
    side: str                          # "client" | "server"
    data: bytes
    t: float
    gap: bool = False


AMQP_PORTS = (5672, 5671)


def _guess_key(seg: TcpSegment) -> tuple:
    """(client, server) of a connection whose SYN was not captured: the AMQP port is the server's, else the
    lower port."""
    if seg.dst[1] in AMQP_PORTS and seg.src[1] not in AMQP_PORTS:
        return seg.src, seg.dst
    if seg.src[1] in AMQP_PORTS and seg.dst[1] not in AMQP_PORTS:
        return seg.dst, seg.src
    return (seg.src, seg.dst) if seg.src[1] > seg.dst[1] else (seg.dst, seg.src)


class Reassembler:
    """TCP segments in capture order -> in-order bytes per connection and direction (`Segment`s)."""

    def __init__(self):
        self.connections: dict[frozenset, TcpConnection] = {}
        self.order: list[TcpConnection] = []
        self._known: dict[tuple, tuple] = {}      # (src, dst) -> (its connection, _Direction, side), as of now

    def feed(self, seg: TcpSegment) -> list[Segment]:
        known = None if seg.flags & SYN else self._known.get((seg.src, seg.dst))
        if known is not None:                                 # a later segment of a direction seen before
            conn, d, side = known
            first = None
        else:
            conn, d, side = self._direction(seg)
            first = None if d.seen else Segment(conn, side, b"", seg.t)     # this side was captured
            d.seen = True
        if seg.flags & SYN:
            d.next_seq = (seg.seq + 1) & 0xFFFFFFFF
            return [first] if first else []
        data = seg.data
        if d.lost or not data:
            if seg.flags & FIN:
                d.fin = True
            return [first] if first else []
        if seg.flags & FIN:
            d.fin = True
        if d.next_seq is None:
            d.next_seq = seg.seq                              # mid-stream: the stream starts here
        out = self._accept(conn, d, side, seg.seq, data, seg.t)
        return [first, *out] if first else out


    def _direction(self, seg: TcpSegment) -> tuple:
        """The connection the segment belongs to (a SYN may open a new one), its direction and side."""
        pair = frozenset((seg.src, seg.dst))
        conn = self.connections.get(pair)
        if seg.flags & SYN and not seg.flags & 0x10:          # a SYN without ACK opens a connection
            if conn is None or conn.dirs.get(seg.src, _Direction()).next_seq not in (None, (seg.seq + 1) & 0xFFFFFFFF):
                conn = TcpConnection((seg.src, seg.dst), True, seg.t)
                self._replace(pair, seg, conn)
        if conn is None:
            conn = TcpConnection(_guess_key(seg), bool(seg.flags & SYN), seg.t)
            if seg.flags & SYN:                               # SYN-ACK: the sender is the server
                conn.key = (seg.dst, seg.src)
            self._replace(pair, seg, conn)
        d = conn.dirs.get(seg.src)
        if d is None:
            d = conn.dirs[seg.src] = _Direction()
        side = "client" if seg.src == conn.key[0] else "server"
        self._known[(seg.src, seg.dst)] = conn, d, side
        return conn, d, side

    def _replace(self, pair: frozenset, seg: TcpSegment, conn: TcpConnection) -> None:
        self.connections[pair] = conn
        self.order.append(conn)
        self._known.pop((seg.src, seg.dst), None)
        self._known.pop((seg.dst, seg.src), None)

    def _accept(self, conn: TcpConnection, d: _Direction, side: str, seq: int, data: bytes, t: float) -> list:
        out: list[Segment] = []
        ahead = (seq - d.next_seq) & 0xFFFFFFFF
        if ahead >= 1 << 31:                                 # starts before what we have: retransmission
            behind = (1 << 32) - ahead
            if behind >= len(data):
                conn.retransmitted += 1
                return out
            data, seq = data[behind:], d.next_seq
            ahead = 0
        if ahead:
            conn.reordered += 1
            if seq not in d.held or len(d.held[seq]) < len(data):
                d.held_bytes += len(data) - len(d.held.get(seq, b""))
                d.held[seq] = data
            if d.held_bytes > _MAX_HELD:
                d.lost = True
                conn.gaps += 1
                out.append(Segment(conn, side, b"", t, gap=True))
            return out
        out.append(Segment(conn, side, data, t))
        d.next_seq = (d.next_seq + len(data)) & 0xFFFFFFFF
        while d.held:                                        # what was held may follow now
            moved = False
            for hseq in list(d.held):
                hdata = d.held[hseq]
                off = (d.next_seq - hseq) & 0xFFFFFFFF
                if off >= 1 << 31:
                    continue                                 # still ahead
                del d.held[hseq]
                d.held_bytes -= len(hdata)
                moved = True
                if off < len(hdata):
                    out.append(Segment(conn, side, hdata[off:], t))
                    d.next_seq = (d.next_seq + len(hdata) - off) & 0xFFFFFFFF
            if not moved:
                break
        return out

    def finish(self) -> list[Segment]:
        """At the end of the capture: bytes still held behind a hole were lost."""
        out = []
        for conn in self.order:
            for addr, d in conn.dirs.items():
                if d.held and not d.lost:
                    d.lost = True
                    conn.gaps += 1
                    out.append(Segment(conn, "client" if addr == conn.key[0] else "server", b"", 0.0, gap=True))
        return out


def streams(path: Path | Sequence[Path]) -> Iterator[Segment]:
    """The in-order bytes of every TCP connection of a capture file, in capture order. Several files (a
    ring buffer's, in order) are one capture: a connection goes on from one file into the next."""
    r = Reassembler()
    feed, known = r.feed, r._known
    for one in ([path] if isinstance(path, (str, Path)) else path):
        for packet in read_packets(one):
            seg = tcp_of(packet.link, packet.data, packet.t)
            # a bare ACK / FIN carries nothing to judge, but the first packet of a direction says it was captured
            if seg is not None and (seg.data or seg.flags & SYN or (seg.src, seg.dst) not in known):
                yield from feed(seg)
    yield from r.finish()
