"""IPv4 (with options) and IPv6 (with extension headers), and the IP protocol table."""
from __future__ import annotations

from ..fields import F, Field, Header, declaring, repeatable
from ..packet import Layer, Packet
from ..registry import Dissector, dissect_with, table
from ..typenames import Any, Final
from .ethernet import ETH
from .xdr import u32

declaring(__name__)
repeatable("ip", "ipv6")          # the headers an ICMP error quotes, besides the packet's own

IP_PROTOS: Final = {0: "HOPOPT", 1: "ICMP", 2: "IGMP", 6: "TCP", 17: "UDP", 41: "IPv6", 43: "IPv6-Route",
             44: "IPv6-Frag", 47: "GRE", 50: "ESP", 51: "AH", 58: "ICMPv6", 59: "IPv6-NoNxt", 60: "IPv6-Opts",
             132: "SCTP", 135: "Mobility", 139: "HIP", 140: "Shim6", 253: "Experimental", 254: "Experimental"}
ECN_NAMES: Final = {0: "Not-ECT", 1: "ECT(1)", 2: "ECT(0)", 3: "CE"}

IPV4: Final = Header("ip", "Internet Protocol Version 4", [
    F("version", 4, "Version"),
    F("hdr_len", 4, "Header Length", unit="words"),
    F("dsfield.dscp", 6, "Differentiated Services Codepoint"),
    F("dsfield.ecn", 2, "Explicit Congestion Notification", names=ECN_NAMES),
    F("len", 16, "Total Length", unit="bytes"),
    F("id", 16, "Identification", "hex"),
    F("flags.rb", 1, "Reserved bit", "bool"),
    F("flags.df", 1, "Don't fragment", "bool"),
    F("flags.mf", 1, "More fragments", "bool"),
    F("frag_offset", 13, "Fragment Offset", unit="x8 bytes"),
    F("ttl", 8, "Time to Live"),
    F("proto", 8, "Protocol", names=IP_PROTOS),
    F("checksum", 16, "Header Checksum", "hex"),
    F("src", 32, "Source Address", "ipv4"),
    F("dst", 32, "Destination Address", "ipv4"),
])
IPV4_OPTION_NAMES: Final = {0: "End of Options List", 1: "No-Operation", 7: "Record Route", 68: "Time Stamp",
                     130: "Security", 131: "Loose Source Route", 137: "Strict Source Route", 136: "Stream ID",
                     148: "Router Alert", 149: "Selective Directed Broadcast", 82: "Traceroute"}
OPT_TYPE: Final = Field("ip.opt.type", 8, "Option Type", "dec", IPV4_OPTION_NAMES)
OPT_LEN: Final = Field("ip.opt.len", 8, "Option Length", unit="bytes")
OPT_DATA: Final = Field("ip.opt.data", 0, "Option Data", "bytes")

IPV6: Final = Header("ipv6", "Internet Protocol Version 6", [
    F("version", 4, "Version"),
    F("tclass.dscp", 6, "Differentiated Services Codepoint"),
    F("tclass.ecn", 2, "Explicit Congestion Notification", names=ECN_NAMES),
    F("flow", 20, "Flow Label", "hex"),
    F("plen", 16, "Payload Length", unit="bytes"),
    F("nxt", 8, "Next Header", names=IP_PROTOS),
    F("hlim", 8, "Hop Limit"),
    F("src", 128, "Source Address", "ipv6"),
    F("dst", 128, "Destination Address", "ipv6"),
])
EXT_NXT: Final = Field("ipv6.ext.nxt", 8, "Next Header", "dec", IP_PROTOS)
EXT_LEN: Final = Field("ipv6.ext.len", 8, "Header Extension Length", unit="bytes")
EXT_DATA: Final = Field("ipv6.ext.data", 0, "Extension Data", "bytes")
FRAG_OFFSET: Final = Field("ipv6.fragment.offset", 13, "Fragment Offset", unit="x8 bytes")
FRAG_MORE: Final = Field("ipv6.fragment.more", 1, "More Fragments", "bool")
FRAG_ID: Final = Field("ipv6.fragment.id", 32, "Identification", "hex")
_IPV6_EXT: Final = {0: "Hop-by-Hop Options", 43: "Routing", 44: "Fragment", 60: "Destination Options", 51: "Authentication",
             135: "Mobility", 139: "HIP", 140: "Shim6"}

ip_proto: Final = table("ip.proto", "IP protocol")
_by_proto: Final = ip_proto.by_key
_addr_text: Final[dict[int, str]] = {}


def fmt_ipv4(b: bytes) -> str:
    return f"{b[0]}.{b[1]}.{b[2]}.{b[3]}"


class _Recent:
    """The last two addresses looked up and their text: a packet's source and destination are mostly
    the last packet's two.  Compiled, comparing machine integers in an object's slots costs a few
    instructions, where a dict look-up costs hundreds (the key boxed, hashed and compared)."""

    __slots__ = ("a0", "t0", "a1", "t1")

    def __init__(self) -> None:
        self.a0 = -1
        self.t0 = ""
        self.a1 = -1
        self.t1 = ""


_RECENT: Final = _Recent()


def ipv4_text(buf: bytes, off: int) -> str:
    """Dotted text of the 4-byte address at ``buf[off]``, cached: a capture has few addresses and many
    packets."""
    a = u32(buf, off)
    r = _RECENT
    if a == r.a0:
        return r.t0
    if a == r.a1:
        return r.t1
    text = _addr_text.get(a)
    if text is None:
        if len(_addr_text) >= 65536:   # bounded: a scan of the whole address space must not grow memory
            _addr_text.clear()
        text = _addr_text[a] = fmt_ipv4(buf[off:off + 4])
    r.a1 = r.a0
    r.t1 = r.t0
    r.a0 = a
    r.t0 = text
    return text


_addr6_text: Final[dict[bytes, str]] = {}


def fmt_ipv6(b: bytes) -> str:
    """RFC 5952 text of a 16-byte address, cached as ``ipv4_text`` is: a capture has few addresses."""
    key = bytes(b)
    text = _addr6_text.get(key)
    if text is None:
        if len(_addr6_text) >= 4096:   # bounded: a scan of many addresses must not grow memory
            _addr6_text.clear()
        text = _addr6_text[key] = ipv6_text(key)
    return text


def ipv6_text(b: bytes) -> str:
    """``str(ipaddress.IPv6Address(b))`` of 16 bytes (this Python's: an IPv4-mapped address in hex words
    too), without the module: importing it and its first address cost a process some 16 M instructions.
    RFC 5952: hex words without leading zeros, the longest run of two or more zero words (the first of
    equal runs) as ``::``."""
    words = [b[i] << 8 | b[i + 1] for i in range(0, 16, 2)]
    best_at = 0
    best_len = 0
    run = 0
    for i in range(8):
        if words[i]:
            run = 0
            continue
        run += 1
        if run > best_len:
            best_len = run
            best_at = i + 1 - run
    texts = ["%x" % w for w in words]
    if best_len < 2:
        return ":".join(texts)
    return ":".join(texts[:best_at]) + "::" + ":".join(texts[best_at + best_len:])


def eth_ipv4_layers(buf: bytes, eth: int) -> list[Layer]:
    """The Ethernet II and IPv4 (without options) layers of a frame a fused fast path took in one step,
    made when somebody reads them: the Ethernet header at ``eth``."""
    return [Layer("eth", ETH, buf, eth, 14), Layer("ip", IPV4, buf, eth + 14, 20)]


def dissect_ipv4(pkt: Packet, buf: bytes, off: int, end: int, ctx: object) -> None:
    avail = end - off
    if avail < 20:
        pkt.proto = "IPv4"
        pkt.truncated("ip", avail, 20)
        return
    vihl = buf[off]
    ihl = (vihl & 15) * 4
    lay = Layer("ip", IPV4, buf, off, ihl or 20)
    pkt.push(lay)
    if vihl >> 4 != 4:
        pkt.set_malformed(f"ip: version {vihl >> 4} in an IPv4 header")
        return
    if ihl < 20:
        pkt.set_malformed(f"ip: header length {ihl} bytes is less than 20")
        return
    if avail < ihl:
        pkt.truncated("ip", avail, ihl)
        return
    total = (buf[off + 2] << 8) | buf[off + 3]
    # Address text is cached: a capture has few addresses and many packets.
    src = ipv4_text(buf, off + 12)
    dst = ipv4_text(buf, off + 16)
    pkt.src = src
    pkt.dst = dst
    pkt.proto = "IPv4"
    if ihl > 20:
        _ipv4_options(pkt, lay, buf, off + 20, off + ihl)
    if total < ihl:
        pkt.set_malformed(f"ip: total length {total} is less than the header length {ihl}")
        return
    if total > avail:
        # Snapped or truncated: decode what was captured (TSO captures report 0 too).
        if total != 0 and len(buf) == end:
            pkt.add_expert("warning", "malformed", f"ip: total length {total} exceeds the {avail} bytes captured")
    else:
        end = off + total
    flags_frag = (buf[off + 6] << 8) | buf[off + 7]
    proto = buf[off + 9]
    if flags_frag & 0x3FFF:
        pkt.set_info(f"Fragmented IP protocol (proto={IP_PROTOS.get(proto, proto)}, off={(flags_frag & 0x1FFF) * 8})")
        from ..registry import add_data
        add_data(pkt, buf, off + ihl, end)
        return
    fn = _by_proto.get(proto)
    if fn is not None:
        fn.dissect(pkt, buf, off + ihl, end, ctx)
    else:
        dissect_with(ip_proto, proto, pkt, buf, off + ihl, end, ctx)


def _ipv4_options(pkt: Packet, lay, buf: bytes, off: int, end: int) -> None:
    while off < end:
        kind = buf[off]
        if kind in (0, 1):
            opt = lay.child("ip.opt", None, off, 1, f"IP Option - {IPV4_OPTION_NAMES[kind]}")
            opt.add(OPT_TYPE, kind, off, 1)
            off += 1
            if kind == 0:
                break
            continue
        if off + 1 >= end:
            pkt.set_malformed("ip: option length missing")
            return
        olen = buf[off + 1]
        if olen < 2 or off + olen > end:
            pkt.set_malformed(f"ip: option {kind} has bad length {olen}")
            return
        opt = lay.child("ip.opt", None, off, olen, f"IP Option - {IPV4_OPTION_NAMES.get(kind, f'Unknown ({kind})')}")
        opt.add(OPT_TYPE, kind, off, 1)
        opt.add(OPT_LEN, olen, off + 1, 1)
        if olen > 2:
            opt.add(OPT_DATA, bytes(buf[off + 2:off + olen]), off + 2, olen - 2)
        off += olen


def dissect_ipv6(pkt: Packet, buf: bytes, off: int, end: int, ctx: object) -> None:
    avail = end - off
    if avail < 40:
        pkt.proto = "IPv6"
        pkt.truncated("ipv6", avail, 40)
        return
    lay = pkt.add_layer("ipv6", IPV6, buf, off)
    if buf[off] >> 4 != 6:
        pkt.set_malformed(f"ipv6: version {buf[off] >> 4} in an IPv6 header")
        return
    plen = (buf[off + 4] << 8) | buf[off + 5]
    nxt = buf[off + 6]
    pkt.src = fmt_ipv6(buf[off + 8:off + 24])
    pkt.dst = fmt_ipv6(buf[off + 24:off + 40])
    pkt.proto = "IPv6"
    if 0 < plen <= avail - 40:
        end = off + 40 + plen
    off += 40
    while nxt in _IPV6_EXT:
        if end - off < 8:
            pkt.truncated(f"ipv6 {_IPV6_EXT[nxt]} header", end - off, 8)
            return
        this = nxt
        nxt = buf[off]
        if this == 44:
            hlen = 8
        elif this == 51:
            hlen = (buf[off + 1] + 2) * 4
        else:
            hlen = (buf[off + 1] + 1) * 8
        if end - off < hlen:
            pkt.truncated(f"ipv6 {_IPV6_EXT[this]} header", end - off, hlen)
            return
        ext = lay.child("ipv6.ext", None, off, hlen, f"IPv6 {_IPV6_EXT[this]} Header")
        ext.add(EXT_NXT, nxt, off, 1)
        if this == 44:
            fo = (buf[off + 2] << 8) | buf[off + 3]
            ext.add(FRAG_OFFSET, fo >> 3, off + 2, 2)
            ext.add(FRAG_MORE, fo & 1, off + 3, 1)
            ext.add(FRAG_ID, int.from_bytes(buf[off + 4:off + 8], "big"), off + 4, 4)
            if fo & 0xFFF9:
                off += hlen
                pkt.set_info(f"IPv6 fragment (next={IP_PROTOS.get(nxt, nxt)}, off={(fo >> 3) * 8})")
                from ..registry import add_data
                add_data(pkt, buf, off, end)
                return
        else:
            ext.add(EXT_LEN, hlen, off + 1, 1)
            ext.add(EXT_DATA, bytes(buf[off + 2:off + hlen]), off + 2, hlen - 2)
        off += hlen
    dissect_with(ip_proto, nxt, pkt, buf, off, end, ctx)


ethertype: Final = table("ethertype")


class _IPv4(Dissector):
    """IPv4, called directly (``registry.Dissector``)."""

    def dissect(self, pkt: Packet, buf: bytes, off: int, end: int, ctx: Any) -> bool:
        dissect_ipv4(pkt, buf, off, end, ctx)
        return True


ethertype.register(0x0800, _IPv4(dissect_ipv4))
ethertype.register(0x86DD, dissect_ipv6)

# Raw IP link types: 101 (LINKTYPE_RAW), 228 (IPv4), 229 (IPv6); 12 and 14 are the old BSD numbers for raw IP.


def dissect_raw_ip(pkt: Packet, buf: bytes, off: int, end: int, ctx: object) -> None:
    if off >= end:
        pkt.truncated("raw ip", 0, 1)
        return
    version = buf[off] >> 4
    if version == 4:
        dissect_ipv4(pkt, buf, off, end, ctx)
    elif version == 6:
        dissect_ipv6(pkt, buf, off, end, ctx)
    else:
        pkt.proto = "IP"
        pkt.set_malformed(f"raw ip: version {version} is neither 4 nor 6")


linktype: Final = table("linktype")
linktype.register(101, dissect_raw_ip)
linktype.register(12, dissect_raw_ip)
linktype.register(14, dissect_raw_ip)
linktype.register(228, dissect_ipv4)
linktype.register(229, dissect_ipv6)
