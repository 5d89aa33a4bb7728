"""ICMP (RFC 792) and ICMPv6 (RFC 4443, with Neighbor Discovery's RFC 4861 messages).

RDMA traffic meets ICMP when a RoCEv2 or iWARP peer is gone: the host answers the UDP datagram
with Port Unreachable (its QP is still sending), or a router says the path MTU is too small.  An
error message quotes the start of the datagram it answers.  As tshark does, the quote is dissected
through the IP dissectors and the tables above them (a UDP datagram to port 4791 as RoCEv2, down to
its BTH and extended headers), and its layers are the ICMP layer's sub-tree, so that filters, JSON
and the tree see them.  The quote is a copy, not traffic: it is dissected into a packet of its own
with a session of its own, of which only the layers are kept.  Its connections, notes, InfiniBand
facts, Info text and expert items (a quote is cut short by design) never reach the packet, the
capture's session or the analysis (no PSN tracking, no transactions, no findings).
"""
from __future__ import annotations

from ..budget import Budget
from ..fields import F, Field, Header, declaring
from ..packet import Layer, Packet
from ..registry import Dissector, add_data, table
from ..session import Session
from ..typenames import Any, Final
from .ip import IP_PROTOS, fmt_ipv6, ip_proto, ipv4_text

declaring(__name__)

ICMP_TYPES: Final = {0: "Echo (ping) reply", 3: "Destination unreachable", 4: "Source quench", 5: "Redirect",
              8: "Echo (ping) request", 9: "Router advertisement", 10: "Router solicitation", 11: "Time-to-live exceeded",
              12: "Parameter problem", 13: "Timestamp request", 14: "Timestamp reply"}
ICMP_UNREACH: Final = {0: "Network unreachable", 1: "Host unreachable", 2: "Protocol unreachable", 3: "Port unreachable",
                4: "Fragmentation needed", 5: "Source route failed", 6: "Destination network unknown",
                7: "Destination host unknown", 9: "Network administratively prohibited",
                10: "Host administratively prohibited", 13: "Communication administratively filtered"}
ICMP_TIME: Final = {0: "Time to live exceeded in transit", 1: "Fragment reassembly time exceeded"}
ICMP_REDIRECT: Final = {0: "Redirect for network", 1: "Redirect for host", 2: "Redirect for TOS and network",
                 3: "Redirect for TOS and host"}
ICMPV6_TYPES: Final = {1: "Destination Unreachable", 2: "Packet Too Big", 3: "Time Exceeded", 4: "Parameter Problem",
                128: "Echo (ping) request", 129: "Echo (ping) reply", 133: "Router Solicitation",
                134: "Router Advertisement", 135: "Neighbor Solicitation", 136: "Neighbor Advertisement",
                137: "Redirect", 143: "Multicast Listener Report Message v2"}
ICMPV6_UNREACH: Final = {0: "no route to destination", 1: "communication with destination administratively prohibited",
                  2: "beyond scope of source address", 3: "address unreachable", 4: "port unreachable",
                  5: "source address failed ingress/egress policy", 6: "reject route to destination"}
ICMPV6_TIME: Final = {0: "hop limit exceeded in transit", 1: "fragment reassembly time exceeded"}
ICMPV6_PARAM: Final = {0: "erroneous header field encountered", 1: "unrecognized Next Header type encountered",
                2: "unrecognized IPv6 option encountered"}
_ICMP_CODES: Final = {3: ICMP_UNREACH, 11: ICMP_TIME, 5: ICMP_REDIRECT}
_ICMPV6_CODES: Final = {1: ICMPV6_UNREACH, 3: ICMPV6_TIME, 4: ICMPV6_PARAM}

ICMP: Final = Header("icmp", "Internet Control Message Protocol", [
    F("type", 8, "Type", names=ICMP_TYPES),
    F("code", 8, "Code"),
    F("checksum", 16, "Checksum", "hex"),
])
ICMPV6: Final = Header("icmpv6", "Internet Control Message Protocol v6", [
    F("type", 8, "Type", names=ICMPV6_TYPES),
    F("code", 8, "Code"),
    F("checksum", 16, "Checksum", "hex"),
])
# The second word, by message type (Wireshark's names).
ICMP_IDENT: Final = Field("icmp.ident", 16, "Identifier", "hex")
ICMP_SEQ: Final = Field("icmp.seq", 16, "Sequence Number")
ICMP_UNUSED: Final = Field("icmp.unused", 32, "Unused", "hex")
ICMP_MTU: Final = Field("icmp.mtu", 16, "MTU of next hop", unit="bytes")
ICMP_GATEWAY: Final = Field("icmp.redir_gw", 32, "Gateway Address", "ipv4")
ICMP_POINTER: Final = Field("icmp.pointer", 8, "Pointer")
ICMP_DATA: Final = Field("icmp.data", 0, "Data", "bytes")
ICMPV6_IDENT: Final = Field("icmpv6.echo.identifier", 16, "Identifier", "hex")
ICMPV6_SEQ: Final = Field("icmpv6.echo.sequence_number", 16, "Sequence")
ICMPV6_RESERVED: Final = Field("icmpv6.reserved", 32, "Reserved", "hex")
ICMPV6_MTU: Final = Field("icmpv6.mtu", 32, "MTU", unit="bytes")
ICMPV6_POINTER: Final = Field("icmpv6.pointer", 32, "Pointer")
ICMPV6_TARGET: Final = Field("icmpv6.nd.target_address", 128, "Target Address", "ipv6")
ICMPV6_DATA: Final = Field("icmpv6.data", 0, "Data", "bytes")

_ERRORS_V4: Final = frozenset({3, 4, 5, 11, 12})
_ERRORS_V6: Final = frozenset({1, 2, 3, 4})


def _code_text(codes: dict[int, dict[int, str]], itype: int, code: int) -> str:
    names = codes.get(itype)
    return f" ({names.get(code, f'code {code}')})" if names is not None else ""


def _quote_text(buf: bytes, off: int, end: int) -> str:
    """What the Info line says of the datagram an error message quotes: its protocol and addresses."""
    if end - off < 1:
        return ""
    version = buf[off] >> 4
    if version == 4 and end - off >= 20:
        ihl = (buf[off] & 15) * 4
        if ihl < 20 or end - off < ihl:
            return ""
        src, dst, proto = ipv4_text(buf, off + 12), ipv4_text(buf, off + 16), buf[off + 9]
        at = off + ihl
    elif version == 6 and end - off >= 40:
        src, dst, proto = fmt_ipv6(buf[off + 8:off + 24]), fmt_ipv6(buf[off + 24:off + 40]), buf[off + 6]
        at = off + 40
    else:
        return ""
    name = IP_PROTOS.get(proto, str(proto))
    if proto in (6, 17) and end - at >= 4:
        sport = (buf[at] << 8) | buf[at + 1]
        dport = (buf[at + 2] << 8) | buf[at + 3]
        if dport == 4791 and proto == 17:
            name = "RoCEv2"
        return f" for {name} {src}:{sport} → {dst}:{dport}"
    return f" for {name} {src} → {dst}"


# How deep in quotes a dissection is: the key of the quote's session state.  tshark follows an ICMP error
# quoted in an ICMP error as far as the bytes go; hosts send none (RFC 1122 3.2.2: no error about an ICMP
# error), so a quote of a quote is dissected once more and a deeper one is left as data, which bounds the
# recursion whatever the bytes.
_QUOTE_DEPTH: Final = "icmp.quote_depth"
_MAX_QUOTE_DEPTH: Final = 2
# The quote's own budget: what its dissectors keep lives no longer than the quote (at most a frame).
_QUOTE_BUDGET: Final = 1 << 20
_ethertype: Final = table("ethertype")


def quote_depth(ctx: object) -> int:
    """How many ICMP errors' quotes the dissection given ``ctx`` is inside (0: the packet itself)."""
    if isinstance(ctx, Session):
        depth = ctx.state.get(_QUOTE_DEPTH)
        if isinstance(depth, int):
            return depth
    return 0


def dissect_quote(pkt: Packet, lay: Layer, off: int, end: int, depth: int, where: str) -> Packet | None:
    """Dissect the datagram quoted at ``off``..``end`` (IPv4 or IPv6, by its version) into a packet of its
    own, with a fresh session, and add its layers to ``lay`` (the ICMP layer) as children labelled as
    being ``where``; returns that packet (None when the quote is no IP datagram)."""
    buf = lay.buf
    if end <= off:
        return None
    version = buf[off] >> 4
    fn = _ethertype.by_key.get(0x0800 if version == 4 else 0x86DD) if version in (4, 6) else None
    if fn is None:
        return None
    session = Session(budget=Budget(_QUOTE_BUDGET))
    session.facts = False
    session.names = False
    session.state[_QUOTE_DEPTH] = depth + 1
    quote = Packet(pkt.frame)
    fn.dissect(quote, buf, off, end, session)
    for q in quote.layers:
        q.label = f"{q.label} ({where})"
        lay.adopt(q)
    return quote


def _quoted(pkt: Packet, lay: Layer, off: int, end: int, ctx: object, where: str) -> str:
    """The datagram an error message answers, dissected under ``lay``; returns a short description."""
    depth = quote_depth(ctx)
    if depth < _MAX_QUOTE_DEPTH:
        dissect_quote(pkt, lay, off, end, depth, where)
    elif end > off:
        add_data(pkt, lay.buf, off, end)
    return _quote_text(lay.buf, off, end)


def _echo(lay: Layer, buf: bytes, off: int, end: int, fields: tuple[Field, Field, Field]) -> str:
    """Identifier, sequence number and data of an echo (or timestamp) message; its summary text."""
    ident_f, seq_f, data_f = fields
    ident, seq = (buf[off + 4] << 8) | buf[off + 5], (buf[off + 6] << 8) | buf[off + 7]
    lay.add(ident_f, ident, off + 4, 2)
    lay.add(seq_f, seq, off + 6, 2)
    if end > off + 8:
        lay.add(data_f, bytes(buf[off + 8:end]), off + 8, end - off - 8)
    return f" id=0x{ident:04x}, seq={seq}"


def dissect_icmp(pkt: Packet, buf: bytes, off: int, end: int, ctx: object) -> None:
    pkt.proto = "ICMP"
    if end - off < 8:
        pkt.truncated("icmp", end - off, 8)
        return
    lay = Layer("icmp", ICMP, buf, off, end - off)
    pkt.push(lay)
    itype, code = buf[off], buf[off + 1]
    w1, w2 = (buf[off + 4] << 8) | buf[off + 5], (buf[off + 6] << 8) | buf[off + 7]
    text = ICMP_TYPES.get(itype, f"Type {itype}") + _code_text(_ICMP_CODES, itype, code)
    if itype in (0, 8, 13, 14):
        text += _echo(lay, buf, off, end, (ICMP_IDENT, ICMP_SEQ, ICMP_DATA))
    elif itype == 5:
        lay.add(ICMP_GATEWAY, bytes(buf[off + 4:off + 8]), off + 4, 4)
    elif itype == 3 and code == 4:
        lay.add(ICMP_MTU, w2, off + 6, 2)
        text += f" (next-hop MTU {w2})"
    elif itype == 12:
        lay.add(ICMP_POINTER, buf[off + 4], off + 4, 1)
    elif itype in _ERRORS_V4:
        lay.add(ICMP_UNUSED, (w1 << 16) | w2, off + 4, 4)
    if itype in _ERRORS_V4:
        text += _quoted(pkt, lay, off + 8, end, ctx, "in the ICMP error")
    pkt.set_info(text)


def dissect_icmpv6(pkt: Packet, buf: bytes, off: int, end: int, ctx: object) -> None:
    pkt.proto = "ICMPv6"
    if end - off < 4:
        pkt.truncated("icmpv6", end - off, 4)
        return
    lay = Layer("icmpv6", ICMPV6, buf, off, end - off)
    pkt.push(lay)
    itype, code = buf[off], buf[off + 1]
    text = ICMPV6_TYPES.get(itype, f"Type {itype}") + _code_text(_ICMPV6_CODES, itype, code)
    need = 24 if itype in (135, 136, 137) else 8
    if end - off < need and (itype in _ERRORS_V6 or itype in (128, 129, 135, 136, 137)):
        pkt.truncated("icmpv6", end - off, need)
        pkt.set_info(text)
        return
    if itype in (128, 129):
        text += _echo(lay, buf, off, end, (ICMPV6_IDENT, ICMPV6_SEQ, ICMPV6_DATA))
    elif itype in _ERRORS_V6:
        word = int.from_bytes(buf[off + 4:off + 8], "big")
        field = {2: ICMPV6_MTU, 4: ICMPV6_POINTER}.get(itype, ICMPV6_RESERVED)
        lay.add(field, word, off + 4, 4)
        if itype == 2:
            text += f" (MTU {word})"
        text += _quoted(pkt, lay, off + 8, end, ctx, "in the ICMPv6 error")
    elif itype in (135, 136, 137):
        target = bytes(buf[off + 8:off + 24])
        lay.add(ICMPV6_TARGET, target, off + 8, 16)
        text += f" for {fmt_ipv6(target)}"
    pkt.set_info(text)


class _Icmp(Dissector):
    """ICMP, called directly (``registry.Dissector``)."""

    def dissect(self, pkt: Packet, buf: bytes, off: int, end: int, ctx: Any) -> bool:
        dissect_icmp(pkt, buf, off, end, ctx)
        return True


class _Icmpv6(Dissector):
    """ICMPv6, called directly (``registry.Dissector``)."""

    def dissect(self, pkt: Packet, buf: bytes, off: int, end: int, ctx: Any) -> bool:
        dissect_icmpv6(pkt, buf, off, end, ctx)
        return True


ip_proto.register(1, _Icmp(dissect_icmp))
ip_proto.register(58, _Icmpv6(dissect_icmpv6))
