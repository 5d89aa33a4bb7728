"""Linux cooked captures: SLL (LINKTYPE_LINUX_SLL 113) and SLL2 (LINKTYPE_LINUX_SLL2 276).

What ``tcpdump -i any`` writes: no link-layer header of the wire, but the
kernel's view of the packet (direction, ARPHRD type, source link address) and
the protocol, an ethertype for most packets, handed to the ``ethertype`` table.
"""
from __future__ import annotations

from ..fields import F, Field, Header, declaring
from ..packet import Packet
from ..registry import dissect_with, table
from ..typenames import Any
from .ethernet import ETHERTYPES, fmt_mac

declaring(__name__)

PACKET_TYPES = {0: "Unicast to us", 1: "Broadcast", 2: "Multicast", 3: "Unicast to another host",
                4: "Sent by us", 5: "Unicast looped back", 6: "Fast route"}
ARPHRD = {1: "Ethernet", 24: "IEEE 1394", 32: "InfiniBand", 280: "CAN", 512: "PPP", 768: "IPIP tunnel",
          769: "IPv6-in-IPv6 tunnel", 772: "Loopback", 776: "IPv6-in-IPv4 tunnel", 778: "GRE over IP",
          801: "IEEE 802.11", 803: "IEEE 802.11 + radiotap", 805: "IEEE 802.15.4", 824: "Netlink",
          65534: "None", 65535: "Void"}
# Protocol values below 1536 are the kernel's own (linux/if_ether.h ETH_P_*), not ethertypes.
LINUX_PROTOCOLS = {0x0001: "Novell 802.3", 0x0002: "AX.25", 0x0003: "All", 0x0004: "802.2 LLC", 0x0005: "SNAP",
                   0x000C: "CAN", 0x000D: "CAN FD", 0x000E: "PPP over serial", 0x0010: "Mobitex",
                   0x0016: "CAIF", 0x0019: "IEEE 802.15.4", 0x00F5: "ISO 11898 frames"}
NETLINK_FAMILIES = {0: "route", 4: "sock_diag", 9: "audit", 12: "netfilter", 16: "generic"}
ARPHRD_NETLINK = 824

SLL = Header("sll", "Linux cooked capture v1", [
    F("pkttype", 16, "Packet type", names=PACKET_TYPES),
    F("hatype", 16, "Link-layer address type", names=ARPHRD),
    F("halen", 16, "Link-layer address length"),
    F("src", 64, "Link-layer address", "bytes"),
    F("etype", 16, "Protocol", "hex", ETHERTYPES),
])
SLL2 = Header("sll", "Linux cooked capture v2", [
    F("etype", 16, "Protocol", "hex", ETHERTYPES),
    F("reserved", 16, "Reserved", "hex"),
    F("ifindex", 32, "Interface index"),
    F("hatype", 16, "Link-layer address type", names=ARPHRD),
    F("pkttype", 8, "Packet type", names=PACKET_TYPES),
    F("halen", 8, "Link-layer address length"),
    F("src", 64, "Link-layer address", "bytes"),
])
SRC_ETH = Field("sll.src.eth", 48, "Source", "mac")
LTYPE = Field("sll.ltype", 16, "Linux protocol type", "hex", LINUX_PROTOCOLS)
NETLINK = Field("sll.netlink_family", 16, "Netlink family", "dec", NETLINK_FAMILIES)

ethertype = table("ethertype")
_SLL_SIZE = SLL.size
_SLL2_SIZE = SLL2.size


def dissect_sll(pkt: Packet, buf: bytes, off: int, end: int, ctx: Any) -> None:
    if end - off < _SLL_SIZE:
        pkt.proto = "SLL"
        pkt.truncated("sll", end - off, _SLL_SIZE)
        return
    lay = pkt.add_layer("sll", SLL, buf, off)
    hatype = (buf[off + 2] << 8) | buf[off + 3]
    halen = (buf[off + 4] << 8) | buf[off + 5]
    proto = (buf[off + 14] << 8) | buf[off + 15]
    _payload(pkt, lay, buf, off + 6, off + 14, hatype, halen, proto, off + _SLL_SIZE, end, ctx)


def dissect_sll2(pkt: Packet, buf: bytes, off: int, end: int, ctx: Any) -> None:
    if end - off < _SLL2_SIZE:
        pkt.proto = "SLL"
        pkt.truncated("sll", end - off, _SLL2_SIZE)
        return
    lay = pkt.add_layer("sll", SLL2, buf, off)
    proto = (buf[off] << 8) | buf[off + 1]
    hatype = (buf[off + 8] << 8) | buf[off + 9]
    halen = buf[off + 11]
    _payload(pkt, lay, buf, off + 12, off + 20, hatype, halen, proto, off + _SLL2_SIZE, end, ctx)


def _payload(pkt: Packet, lay: Any, buf: bytes, addr: int, addr_end: int, hatype: int, halen: int, proto: int,
             off: int, end: int, ctx: Any) -> None:
    if halen == 6:
        lay.add(SRC_ETH, bytes(buf[addr:addr + 6]), addr, 6)
    if hatype == ARPHRD_NETLINK:
        # The protocol word is the netlink family; the payload is a netlink message, shown as data.
        lay.add(NETLINK, proto, addr_end, 2)
        pkt.proto = "Netlink"
        pkt.set_info(f"Netlink {NETLINK_FAMILIES.get(proto, f'family {proto}')} message")
        dissect_with(_no_table, proto, pkt, buf, off, end, ctx)
    elif proto < 1536:
        lay.add(LTYPE, proto, addr_end, 2)
        pkt.proto = "SLL"
        pkt.set_info(f"Linux cooked capture, {LINUX_PROTOCOLS.get(proto, f'protocol 0x{proto:04x}')}")
        dissect_with(_no_table, proto, pkt, buf, off, end, ctx)
    else:
        pkt.proto = ETHERTYPES.get(proto, "SLL")
        if not dissect_with(ethertype, proto, pkt, buf, off, end, ctx):
            pkt.set_info(f"Linux cooked capture, ethertype 0x{proto:04x}")
    if not pkt.src and halen:
        # Nothing above named the source: the link address is what there is.
        n = min(halen, 8)
        pkt.src = fmt_mac(buf[addr:addr + n])


# Linux-specific protocols and netlink have no dissector here: their payload is data.
_no_table = table("sll.ltype", "Linux cooked capture protocol")

table("linktype").register(113, dissect_sll)
table("linktype").register(276, dissect_sll2)
