"""Endace Extensible Record Format (LINKTYPE_ERF 197): what ibdump writes for InfiniBand ports.

An ERF record is a 16-byte header (a little-endian 32.32 fixed-point
timestamp, then big-endian type, flags, record length, loss counter or colour,
wire length), extension headers of 8 bytes each while the top bit of the type
(then of each extension's first byte) is set, a type-specific header (2 bytes
of offset and pad before Ethernet) and the packet.  Record types are handed on
through the ``erf.type`` table: 21 INFINIBAND starts at the LRH, 25
INFINIBAND_LINK is an InfiniBand link (flow control) packet, 2 and the colour
variants carry Ethernet, 22 and 23 IPv4 and IPv6.
"""
from __future__ import annotations

import struct

from ..fields import F, Field, Header, declaring, repeatable
from ..packet import Packet
from ..registry import dissect_with, table
from ..typenames import Any
from .ethernet import dissect_ethernet
from .infiniband import dissect_lrh
from .ip import dissect_ipv4, dissect_ipv6

declaring(__name__)
repeatable("erf")                 # the record and its header are both "erf"; extension headers repeat

RECORD_TYPES = {
    0: "LEGACY", 1: "HDLC_POS", 2: "ETH", 3: "ATM", 4: "AAL5", 5: "MC_HDLC", 6: "MC_RAW", 7: "MC_ATM",
    8: "MC_RAW_CHANNEL", 9: "MC_AAL5", 10: "COLOR_HDLC_POS", 11: "COLOR_ETH", 12: "MC_AAL2", 13: "IP_COUNTER",
    14: "TCP_FLOW_COUNTER", 15: "DSM_COLOR_HDLC_POS", 16: "DSM_COLOR_ETH", 17: "COLOR_MC_HDLC_POS", 18: "AAL2",
    19: "COLOR_HASH_POS", 20: "COLOR_HASH_ETH", 21: "INFINIBAND", 22: "IPV4", 23: "IPV6", 24: "RAW_LINK",
    25: "INFINIBAND_LINK", 27: "META", 28: "OPA_SNC", 29: "OPA_9B", 48: "PAD",
}
EXT_TYPES = {3: "Classification", 4: "InterceptID", 5: "Raw Link", 6: "BFS Filter/Hash", 12: "Channelisation",
             14: "Signature", 15: "Packet ID", 16: "Flow ID", 17: "Host ID", 18: "Anchor ID", 19: "Entropy"}
ETH_TYPES = (2, 11, 16, 20)        # Ethernet and its colour/hash variants: 2 bytes offset/pad first

# The header's fields after the little-endian timestamp (all big-endian).
ERF_TS = Field("erf.ts", 64, "Timestamp", "hex")
ERF_TIME = Field("erf.time", 0, "Timestamp since the epoch", "dec", unit="ns")
ERF = Header("erf", "Extensible Record Format", [
    F("types.ext_header", 1, "Extension header present", "bool"),
    F("types.type", 7, "Type", names=RECORD_TYPES),
    F("flags.res", 2, "Reserved", "hex"),
    F("flags.dse", 1, "DS error", "bool"),
    F("flags.rxe", 1, "RX error", "bool"),
    F("flags.trunc", 1, "Truncated", "bool"),
    F("flags.vlen", 1, "Varying record length", "bool"),
    F("flags.cap", 2, "Capture interface"),
    F("rlen", 16, "Record length", unit="bytes"),
    F("lctr", 16, "Loss counter / colour"),
    F("wlen", 16, "Wire length", unit="bytes"),
])
EHDR = Header("erf.ehdr", "Extension header", [
    F("more", 1, "More extension headers", "bool"),
    F("types", 7, "Extension Header", names=EXT_TYPES),
    F("data", 56, "Data", "hex"),
])
ETH_PAD = Header("erf.eth", "Ethernet pad", [
    F("off", 8, "Offset"),
    F("pad", 8, "Padding", "hex"),
])
IB_LINK = Header("infiniband_link", "InfiniBand Link", [
    F("op", 4, "Operand", names={0: "Flow Control Packet", 1: "Flow Control Init"}),
    F("fctbs", 12, "Flow Control Total Blocks Sent"),
    F("vl", 4, "Virtual Lane"),
    F("fccl", 12, "Flow Control Credit Limit"),
    F("lpcrc", 16, "Link Packet CRC", "hex"),
])

erf_type = table("erf.type", "ERF record type")
_ts = struct.Struct("<Q").unpack_from
_ERF_SIZE = 8 + ERF.size


def dissect_erf(pkt: Packet, buf: bytes, off: int, end: int, ctx: Any) -> None:
    pkt.proto = "ERF"
    if end - off < _ERF_SIZE:
        pkt.truncated("erf", end - off, _ERF_SIZE)
        return
    lay = pkt.add_layer("erf", None, buf, off, _ERF_SIZE, "Extensible Record Format")
    ts = _ts(buf, off)[0]
    lay.add(ERF_TS, ts, off, 8)
    # Wireshark shows the record's own clock as the frame's time (32.32 fixed point, rounded to ns).
    ns = ((ts >> 32) * 1_000_000_000) + (((ts & 0xFFFFFFFF) * 1_000_000_000 + 0x80000000) >> 32)
    lay.add(ERF_TIME, ns, off, 8)
    pkt.frame.ts = ns
    hdr = lay.child("erf", ERF, off + 8, ERF.size, "Record header")
    rtype = buf[off + 8]
    rlen = (buf[off + 10] << 8) | buf[off + 11]
    wlen = (buf[off + 14] << 8) | buf[off + 15]
    pos = off + _ERF_SIZE
    more = rtype & 0x80
    while more:            # extension headers: each says whether another follows
        if end - pos < 8:
            pkt.truncated("erf.ehdr", end - pos, 8)
            return
        hdr.child("erf.ehdr", EHDR, pos, 8, f"Extension header: {EXT_TYPES.get(buf[pos] & 0x7F, 'Unknown')}")
        more = buf[pos] & 0x80
        pos += 8
    # The record may be padded beyond the packet (rlen) or cut short by the capture (end).
    if rlen < pos - off:
        pkt.set_malformed(f"erf: record length {rlen} is shorter than its headers ({pos - off} bytes)")
    rend = min(end, off + rlen) if rlen >= pos - off else end
    kind = rtype & 0x7F
    name = RECORD_TYPES.get(kind, f"type {kind}")
    if kind in ETH_TYPES:
        if rend - pos < 2:
            pkt.truncated("erf.eth", rend - pos, 2)
            return
        hdr.child("erf.eth", ETH_PAD, pos, 2)
        pos += 2
    pend = min(rend, pos + wlen)
    pkt.set_info(f"ERF {name}")
    if not dissect_with(erf_type, kind, pkt, buf, pos, pend, ctx):
        pkt.set_info(f"ERF {name} record, {pend - pos} bytes")


def dissect_erf_ethernet(pkt: Packet, buf: bytes, off: int, end: int, ctx: Any) -> None:
    pkt.info = []
    dissect_ethernet(pkt, buf, off, end, ctx)


def dissect_erf_ib(pkt: Packet, buf: bytes, off: int, end: int, ctx: Any) -> None:
    pkt.info = []
    dissect_lrh(pkt, buf, off, end, ctx)


def dissect_erf_ipv4(pkt: Packet, buf: bytes, off: int, end: int, ctx: Any) -> None:
    pkt.info = []
    dissect_ipv4(pkt, buf, off, end, ctx)


def dissect_erf_ipv6(pkt: Packet, buf: bytes, off: int, end: int, ctx: Any) -> None:
    pkt.info = []
    dissect_ipv6(pkt, buf, off, end, ctx)


def dissect_ib_link(pkt: Packet, buf: bytes, off: int, end: int, ctx: Any) -> None:
    """An InfiniBand link packet (IBTA 7.9.4): flow control, 6 bytes."""
    pkt.proto = "IB Link"
    if end - off < IB_LINK.size:
        pkt.truncated("infiniband_link", end - off, IB_LINK.size)
        return
    pkt.add_layer("infiniband_link", IB_LINK, buf, off)
    op = buf[off] >> 4
    vl = buf[off + 2] >> 4
    fccl = ((buf[off + 2] & 15) << 8) | buf[off + 3]
    pkt.set_info(f"{'Flow Control Init' if op == 1 else 'Flow Control'} VL={vl} FCCL={fccl}")


for _kind in ETH_TYPES:
    erf_type.register(_kind, dissect_erf_ethernet)
erf_type.register(21, dissect_erf_ib)
erf_type.register(22, dissect_erf_ipv4)
erf_type.register(23, dissect_erf_ipv6)
erf_type.register(25, dissect_ib_link)
table("linktype").register(197, dissect_erf)
