"""The two hosts a frame travels between, without a dissection: what a parallel run shards by.

Every queue pair between two hosts and the CM MADs that set them up travel between the same two network
addresses (IPv4 or IPv6 for RoCEv2 and iWARP, the GRH's GIDs for RoCEv1, the LRH's LIDs for native
InfiniBand), so a shard that gets every frame of a host pair, in capture order, sees everything the
analysis of those connections needs.  The key is the two addresses in a fixed order (either way of
the traffic gives the same key); frames that name no host pair (ARP, LLDP, link types without
addresses) give None.
"""
from __future__ import annotations

_VLAN_TYPES = (0x8100, 0x88A8, 0x9100)
LINKTYPE_ETHERNET = 1
LINKTYPE_INFINIBAND = 247


def host_pair(linktype: int, data: bytes) -> bytes | None:
    """The frame's two hosts as one key (the lower address first), or None."""
    if linktype == LINKTYPE_ETHERNET:
        return _ethernet(data)
    if linktype == LINKTYPE_INFINIBAND:
        if len(data) < 8:
            return None
        return _pair(data[2:4], data[6:8])          # LRH: destination LID, source LID
    return None


def _ethernet(data: bytes) -> bytes | None:
    n = len(data)
    if n < 14:
        return None
    off = 14
    etype = (data[12] << 8) | data[13]
    while etype in _VLAN_TYPES:
        if n < off + 4:
            return None
        etype = (data[off + 2] << 8) | data[off + 3]
        off += 4
    if etype == 0x0800:                              # IPv4: source and destination at 12 and 16
        if n < off + 20:
            return None
        return _pair(data[off + 12:off + 16], data[off + 16:off + 20])
    if etype == 0x86DD or etype == 0x8915:           # IPv6, and RoCEv1's GRH (the same layout)
        if n < off + 40:
            return None
        return _pair(data[off + 8:off + 24], data[off + 24:off + 40])
    return None


def _pair(a: bytes, b: bytes) -> bytes:
    return a + b if a <= b else b + a
