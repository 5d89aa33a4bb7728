"""UDP and the TCP header, with their port tables.

TCP payload is handed to ``tcp.port`` dissectors; iWARP's MPA reassembles its
stream itself, keyed on the connection.
"""
from __future__ import annotations

from ..fields import F, Field, Header, declaring, repeatable
from ..packet import Layer, Packet
from ..registry import Dissector, dissect_with, table, try_heuristics
from ..session import wants_info
from ..typenames import Any, Final, i64, mypyc_attr
from .ethernet import eth_fast
from .ip import eth_ipv4_layers, ipv4_text
from .xdr import u32

declaring(__name__)
repeatable("udp", "tcp")          # the headers an ICMP error quotes, besides the packet's own

UDP: Final = Header("udp", "User Datagram Protocol", [
    F("srcport", 16, "Source Port"),
    F("dstport", 16, "Destination Port"),
    F("length", 16, "Length", unit="bytes"),
    F("checksum", 16, "Checksum", "hex"),
])

TCP: Final = Header("tcp", "Transmission Control Protocol", [
    F("srcport", 16, "Source Port"),
    F("dstport", 16, "Destination Port"),
    F("seq_raw", 32, "Sequence Number (raw)"),
    F("ack_raw", 32, "Acknowledgment Number (raw)"),
    F("hdr_len", 4, "Header Length", unit="words"),
    F("flags.res", 3, "Reserved"),
    F("flags.ae", 1, "Accurate ECN", "bool"),
    F("flags.cwr", 1, "CWR", "bool"),
    F("flags.ece", 1, "ECE", "bool"),
    F("flags.urg", 1, "URG", "bool"),
    F("flags.ack", 1, "ACK", "bool"),
    F("flags.push", 1, "PSH", "bool"),
    F("flags.reset", 1, "RST", "bool"),
    F("flags.syn", 1, "SYN", "bool"),
    F("flags.fin", 1, "FIN", "bool"),
    F("window_size_value", 16, "Window"),
    F("checksum", 16, "Checksum", "hex"),
    F("urgent_pointer", 16, "Urgent Pointer"),
])
# What a TCP header cut short shows, by its whole words (1: the ports, 2: and the sequence number, ...),
# as tshark shows the 8 bytes of a TCP header that an ICMP error quotes.
_TCP_CUT: Final[tuple[Header, ...]] = tuple(TCP.prefix(n) for n in (4, 8, 12, 16))
TCP_OPTIONS: Final = Field("tcp.options", 0, "Options", "bytes")
TCP_LEN: Final = Field("tcp.len", 0, "TCP Segment Len", unit="bytes")

udp_port: Final = table("udp.port", "UDP port")
_udp_ports: Final = udp_port.by_key
tcp_port: Final = table("tcp.port", "TCP port")
# Told of each FIN or RST (pkt, buf, the TCP header's offset, end, ctx), so that a protocol that keeps
# state per TCP connection can let it go; the first that knows the connection takes it.
tcp_end: Final = table("tcp.end", "TCP connection ends (FIN, RST)")
_TCP_FLAGS: Final = ((0x01, "FIN"), (0x02, "SYN"), (0x04, "RST"), (0x08, "PSH"), (0x10, "ACK"), (0x20, "URG"),
              (0x40, "ECE"), (0x80, "CWR"))


def _flag_names() -> list[str]:
    """The flag names of each value of the flags byte: "ACK", "PSH, ACK", ...  Made by doubling, as the
    bits ascend: the values below a bit are those without it, each value plus the bit the same with it
    (256 lists of names, not 2,048 tests of a bit)."""
    names: list[list[str]] = [[]]
    for _bit, name in _TCP_FLAGS:
        names += [have + [name] for have in names]
    return [", ".join(have) for have in names]


_TCP_FLAG_NAMES: Final[list[str]] = _flag_names()


def dissect_udp(pkt: Packet, buf: bytes, off: int, end: int, ctx: object) -> None:
    if end - off < 8:
        pkt.proto = "UDP"
        pkt.truncated("udp", end - off, 8)
        return
    pkt.push(Layer("udp", UDP, buf, off, 8))
    sport = (buf[off] << 8) | buf[off + 1]
    dport = (buf[off + 2] << 8) | buf[off + 3]
    ulen = (buf[off + 4] << 8) | buf[off + 5]
    if 8 <= ulen <= end - off:
        end = off + ulen
    elif ulen < 8:
        pkt.set_malformed(f"udp: length {ulen} is less than 8")
        return
    pkt.proto = "UDP"
    fn = _udp_ports.get(dport) or _udp_ports.get(sport)
    if fn is not None:
        fn.dissect(pkt, buf, off + 8, end, ctx)
        return
    pkt.set_info(f"{sport} → {dport} Len={end - off - 8}")
    dissect_with(udp_port, None, pkt, buf, off + 8, end, ctx)


@mypyc_attr(serializable=True, allow_interpreted_subclasses=True)
class TcpLayer(Layer):
    """The TCP header's layer keeps the segment's length, from which its items are filled on demand, and
    the ports and sequence number, which a protocol that reassembles the stream reads (iWARP's MPA)."""

    __slots__ = ("seglen", "sport", "dport", "seq", "line_pending")
    seglen: int
    sport: int
    dport: int
    seq: int
    # TCP's own Info line is made after the protocol above has had the segment, and only if it has not
    # written the Info column itself (take_line): iWARP writes its own for nearly every segment.
    line_pending: bool


def _fill_tcp(lay: Layer) -> None:
    assert isinstance(lay, TcpLayer)
    off = lay.off
    hlen = lay.length
    if hlen > 20:
        lay.add(TCP_OPTIONS, bytes(lay.buf[off + 20:off + hlen]), off + 20, hlen - 20)
    lay.add(TCP_LEN, lay.seglen)


# Final: compiled, a C static (a function named as a value is otherwise a look-up in the module's dict)
_FILL_TCP: Final = _fill_tcp
# "46371 → 20049 [ACK] Seq=" by ports and flags: a connection's segments repeat a few of them
_tcp_head: Final[dict[int, str]] = {}


class _LastHead:
    """The head of the last TCP line made, by its key: the lines TCP writes itself (acknowledgements,
    mostly) come in runs of one direction, found here before the dict (whose key is an int object)."""

    __slots__ = ("key", "head")

    def __init__(self) -> None:
        self.key = -1
        self.head = ""


_LAST_HEAD: Final = _LastHead()


def _tcp_line(sport: int, dport: int, flags: int, seq: int, seglen: int) -> str:
    """TCP's Info line: ``4791 → 52000 [ACK] Seq=1 Len=0``."""
    key = (sport << 24) | (dport << 8) | flags
    last = _LAST_HEAD
    if last.key == key:
        head = last.head
    else:
        found = _tcp_head.get(key)
        if found is None:
            if len(_tcp_head) >= 4096:
                _tcp_head.clear()
            found = _tcp_head[key] = f"{sport} → {dport} [{_TCP_FLAG_NAMES[flags]}] Seq="
        head = last.head = found
        last.key = key
    if seglen == 0:
        return f"{head}{seq} Len=0"         # a bare acknowledgement: one number to write
    return f"{head}{seq} Len={seglen}"


def take_line(tcp: TcpLayer) -> None:
    """The protocol above writes the Info column of this segment: TCP's own line is not made."""
    tcp.line_pending = False


def dissect_tcp(pkt: Packet, buf: bytes, off: int, end: int, ctx: object) -> None:
    have = end - off
    if have < 20:
        pkt.proto = "TCP"
        if have >= 4:
            pkt.push(Layer("tcp", _TCP_CUT[have // 4 - 1], buf, off))
        pkt.truncated("tcp", have, 20)
        return
    hlen = (buf[off + 12] >> 4) * 4
    lay = TcpLayer("tcp", TCP, buf, off, hlen)
    pkt.push(lay)
    pkt.proto = "TCP"
    if hlen < 20:
        pkt.set_malformed(f"tcp: header length {hlen} is less than 20")
        return
    if end - off < hlen:
        pkt.truncated("tcp", end - off, hlen)
        return
    seglen = end - off - hlen
    lay.seglen = seglen
    lay._fill = _FILL_TCP
    lay.sport = sport = (buf[off] << 8) | buf[off + 1]
    lay.dport = dport = (buf[off + 2] << 8) | buf[off + 3]
    lay.seq = seq = u32(buf, off + 4)     # compiled, one load of a machine word (the shifts were four calls)
    flags = buf[off + 13]
    texts = wants_info(ctx)
    lay.line_pending = False
    if seglen > 0:
        if texts:
            pkt.clear_info()
            lay.line_pending = True
        by_port = tcp_port.by_key
        fn = (by_port.get(dport) or by_port.get(sport)) if by_port else None   # no port bound: no look-up
        try:
            if fn is not None:
                fn.dissect(pkt, buf, off + hlen, end, ctx)
            else:
                dissect_with(tcp_port, None, pkt, buf, off + hlen, end, ctx)
        finally:        # a dissector's error above marks the packet malformed: its line stays TCP's
            if lay.line_pending:
                # nobody above wrote the Info column: TCP's line comes first, before what they added to it
                lay.line_pending = False
                pkt.info = [_tcp_line(sport, dport, flags, seq, seglen), *pkt.info]
    elif texts:
        pkt.info = [_tcp_line(sport, dport, flags, seq, seglen)]
    if flags & 0x05 and tcp_end.heuristics:           # FIN or RST, after the bytes it carries
        try_heuristics(tcp_end, pkt, buf, off, end, ctx)


ip_proto: Final = table("ip.proto")


class _Udp(Dissector):
    """UDP, called directly (``registry.Dissector``)."""

    def dissect(self, pkt: Packet, buf: bytes, off: int, end: int, ctx: Any) -> bool:
        dissect_udp(pkt, buf, off, end, ctx)
        return True


class _Tcp(Dissector):
    """TCP, called directly (``registry.Dissector``)."""

    def dissect(self, pkt: Packet, buf: bytes, off: int, end: int, ctx: Any) -> bool:
        dissect_tcp(pkt, buf, off, end, ctx)
        return True


ip_proto.register(17, _Udp(dissect_udp))
ip_proto.register(6, _Tcp(dissect_tcp))


def fast_tcp_ipv4(pkt: Packet, buf: bytes, off: int, end: int, ctx: Any) -> bool:
    """Ethernet II and IPv4 without options, whole and unfragmented, then TCP: in one step (iWARP and its
    acknowledgements).  The same layers, columns and result as ethernet -> ip -> tcp, the Ethernet and
    IPv4 layers made when somebody reads them; anything else returns False untouched."""
    o: i64 = off
    n: i64 = end - off
    if n < 54 or buf[o + 14] != 0x45 or buf[o + 12] != 8 or buf[o + 13] or buf[o + 23] != 6 \
            or buf[o + 20] & 0x3F or buf[o + 21]:
        return False
    total: i64 = i64(buf[o + 16]) << 8 | i64(buf[o + 17])
    if total > n - 14 or total < 40:
        return False
    ip = off + 14
    pkt.src = ipv4_text(buf, ip + 12)
    pkt.dst = ipv4_text(buf, ip + 16)
    pkt.proto = "IPv4"
    pkt.defer(_MAKE_ETH_IP)
    dissect_tcp(pkt, buf, ip + 20, ip + total, ctx)
    return True


def _make_eth_ip(pkt: Packet) -> None:
    """The Ethernet and IPv4 layers fast_tcp_ipv4 left unmade, before the TCP layer (the first made)."""
    layers = pkt.made_layers()
    tcp = layers[0]
    layers[0:0] = eth_ipv4_layers(tcp.buf, tcp.off - 34)


_MAKE_ETH_IP: Final = _make_eth_ip


class _FastTcp(Dissector):
    """The TCP/IPv4 fast path of Ethernet frames, called directly (``registry.Dissector``)."""

    def dissect(self, pkt: Packet, buf: bytes, off: int, end: int, ctx: Any) -> bool:
        return fast_tcp_ipv4(pkt, buf, off, end, ctx)


eth_fast.add_heuristic("tcp_ipv4", _FastTcp(fast_tcp_ipv4))
