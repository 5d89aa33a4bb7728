"""Ethernet II, 802.1Q / 802.1ad VLAN tags, and the ethertype table."""
from __future__ import annotations

from ..fields import F, Header, declaring, repeatable
from ..packet import Layer, Packet
from ..registry import Dissector, dissect_with, table
from ..typenames import Any, Final

declaring(__name__)
repeatable("vlan")                # QinQ stacks

ETHERTYPES: Final = {
    0x0800: "IPv4", 0x86DD: "IPv6", 0x0806: "ARP", 0x8100: "802.1Q", 0x88A8: "802.1ad", 0x9100: "QinQ",
    0x8915: "RoCE", 0x88CC: "LLDP", 0x8808: "Ethernet flow control", 0x8906: "FCoE",
}

ETH: Final = Header("eth", "Ethernet II", [
    F("dst", 48, "Destination", "mac"),
    F("src", 48, "Source", "mac"),
    F("type", 16, "Type", "hex", ETHERTYPES),
])

VLAN: Final = Header("vlan", "802.1Q Virtual LAN", [
    F("priority", 3, "Priority"),
    F("dei", 1, "DEI", "bool"),
    F("id", 12, "ID"),
    F("etype", 16, "Type", "hex", ETHERTYPES),
])

ethertype: Final = table("ethertype", "Ethernet type")
_by_type: Final = ethertype.by_key
_ETH_SIZE: Final = ETH.size
_VLAN_TYPES: Final = (0x8100, 0x88A8, 0x9100)


def dissect_ethernet(pkt: Packet, buf: bytes, off: int, end: int, ctx: object) -> None:
    if end - off < _ETH_SIZE:
        pkt.proto = "ETH"
        pkt.truncated("eth", end - off, _ETH_SIZE)
        return
    pkt.push(Layer("eth", ETH, buf, off, _ETH_SIZE))
    start = off
    etype = (buf[off + 12] << 8) | buf[off + 13]
    off += _ETH_SIZE
    while etype in _VLAN_TYPES:     # 802.1Q, and QinQ stacks of them
        if end - off < 4:
            pkt.truncated("vlan", end - off, 4)
            return
        pkt.add_layer("vlan", VLAN, buf, off)
        etype = (buf[off + 2] << 8) | buf[off + 3]
        off += 4
    pkt.proto = ETHERTYPES.get(etype, "ETH")
    fn = _by_type.get(etype)
    if fn is not None:
        fn.dissect(pkt, buf, off, end, ctx)
    elif not dissect_with(ethertype, etype, pkt, buf, off, end, ctx):
        # Nothing above: the addresses are the MACs.
        if not pkt.src:
            pkt.src = fmt_mac(buf[start + 6:start + 12])
            pkt.dst = fmt_mac(buf[start:start + 6])
        pkt.set_info(_etype_line(etype))


# The texts of the frames no dissector takes (ARP, LLDP: a capture's every other frame while a peer is gone),
# kept: a format spec is parsed at each call (some 3,000 instructions), bytes.hex(":") a generic call.
_ETYPE_LINES: Final[dict[int, str]] = {}
_MAC_TEXT: Final[dict[bytes, str]] = {}


def _etype_line(etype: int) -> str:
    line = _ETYPE_LINES.get(etype)
    if line is None:
        line = _ETYPE_LINES[etype] = f"Ethertype 0x{etype:04x}"      # at most 65,536 of them
    return line


def fmt_mac(b: bytes) -> str:
    text = _MAC_TEXT.get(b)
    if text is None:
        if len(_MAC_TEXT) >= 4096:    # bounded: a scan of many addresses must not grow memory
            _MAC_TEXT.clear()
        text = _MAC_TEXT[bytes(b)] = b.hex(":")
    return text


class _Ethernet(Dissector):
    """Ethernet II, called directly (``registry.Dissector``)."""

    def dissect(self, pkt: Packet, buf: bytes, off: int, end: int, ctx: Any) -> bool:
        dissect_ethernet(pkt, buf, off, end, ctx)
        return True


table("linktype").register(1, _Ethernet(dissect_ethernet))


# Fused fast paths of Ethernet II frames (an IPv4 transport in one step, its lower layers made only when
# somebody reads them), tried in order: the first that takes the frame wins; one that does not leaves
# the packet untouched for the dissector chain (tests/test_engine_fast_path.py holds both equal).
eth_fast: Final = table("eth.fast", "Fused fast paths of Ethernet II frames")


def fast_paths(pkt: Packet, buf: bytes, off: int, end: int, ctx: Any) -> bool:
    for _name, path in eth_fast.heuristics:
        if path.dissect(pkt, buf, off, end, ctx):
            return True
    return False


class _FastPaths(Dissector):
    """Ethernet's fast paths, called directly (``registry.Dissector``)."""

    def dissect(self, pkt: Packet, buf: bytes, off: int, end: int, ctx: Any) -> bool:
        return fast_paths(pkt, buf, off, end, ctx)


table("linktype.fast", "Fused fast paths by link type").register(1, _FastPaths(fast_paths))
