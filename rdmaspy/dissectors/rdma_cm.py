"""RDMA-CM over the InfiniBand CM: the RDMA IP CM Service (IBTA Annex A11).

librdmacm maps a TCP/UDP-style port onto the CM's 64-bit service ID,
0x0000000001 | port space (8) | port (16), and opens the private data of a REQ
with a 36-byte IP CM header naming the IP addresses and source port.  What the
consumer put in the private data goes on to ``cm.private_data``, keyed by the
port (20049: NFS/RDMA), then to its heuristics, so an upper layer registers
itself there.  The same table serves iWARP's MPA private data.

Once a connection is known, its RC payloads go first to ``rdmacm.port`` by the
connection's port (the first heuristic of ``ib.payload``).
"""
from __future__ import annotations

from ..conversation import Connection
from ..fields import F, Field, Header, declaring, protocol
from ..packet import Layer, Packet
from ..registry import Dissector, DissectorTable, table
from ..typenames import Any, Final

declaring(__name__)
protocol("rdmacm", "IP CM ServiceID")

SID_PREFIX: Final = 0x0000000001
PORT_SPACES: Final = {0x02: "IPoIB", 0x06: "TCP", 0x11: "UDP", 0x3F: "IB"}
# Ports whose service an RDMA user recognises on sight.
WELL_KNOWN: Final = {20049: "NFS/RDMA", 4420: "NVMe/RDMA", 3260: "iSER", 445: "SMB Direct",
                     2049: "NFS", 5201: "iperf", 18515: "perftest"}

SID_PREFIX_F: Final = Field("cm.req.serviceid.prefix", 40, "Prefix", "bytes")
SID_PROTOCOL: Final = Field("cm.req.serviceid.protocol", 8, "Protocol", "hex", PORT_SPACES)
SID_DPORT: Final = Field("cm.req.serviceid.dport", 16, "Destination Port", "hex")
RDMACM_PORT_SPACE: Final = Field("rdmacm.port_space", 8, "Port Space", "hex", PORT_SPACES)
RDMACM_PORT: Final = Field("rdmacm.port", 16, "Port")
RDMACM_SERVICE: Final = Field("rdmacm.service", 0, "Service", "str")

IP_CM: Final = Header("cm.req.ip_cm", "IP CM Private Data", [
    F("majv", 4, "IP CM Major Version", "hex"),
    F("minv", 4, "IP CM Minor Version", "hex"),
    F("ipv", 4, "IP CM IP Version", "hex"),
    F("reserved", 4, "IP CM Reserved", "hex"),
    F("sport", 16, "IP CM Source Port", "hex"),
])
IP_CM_SIZE: Final = 36
IP_CM_SIP4: Final = Field("cm.req.ip_cm.sip4", 32, "IP CM Source IP", "ipv4")
IP_CM_DIP4: Final = Field("cm.req.ip_cm.dip4", 32, "IP CM Destination IP", "ipv4")
IP_CM_SIP6: Final = Field("cm.req.ip_cm.sip6", 128, "IP CM Source IP", "ipv6")
IP_CM_DIP6: Final = Field("cm.req.ip_cm.dip6", 128, "IP CM Destination IP", "ipv6")
IP_CM_PRIVATE: Final = Field("cm.req.ip_cm.private", 0, "IP CM Consumer PrivateData", "bytes")

cm_private_data: Final[DissectorTable] = table("cm.private_data", "CM / MPA consumer private data, by RDMA-CM port")
rdmacm_port: Final[DissectorTable] = table("rdmacm.port", "RC payload of RDMA-CM connections, by port")


def split_service_id(sid: int) -> tuple[int, int, int] | None:
    """(prefix, port space, port) of an RDMA IP CM service ID, None for any other service ID."""
    if sid >> 24 != SID_PREFIX:
        return None
    return SID_PREFIX, (sid >> 16) & 0xFF, sid & 0xFFFF


def service_text(sid: int) -> str:
    rc = split_service_id(sid)
    if rc is None:
        return f"0x{sid:016x}"
    _p, ps, port = rc
    name = WELL_KNOWN.get(port) if ps == 0x06 else None
    if name is not None:
        return f"{name}({port})"
    space = PORT_SPACES.get(ps)
    return f"RDMA-CM {space if space is not None else f'0x{ps:02x}'}({port})"


def _fill_service_id(sub: Layer) -> None:
    """The parts of the service ID a sub-tree's eight bytes hold (its fill: the summary never reads them)."""
    buf, at = sub.buf, sub.off
    ps, port = buf[at + 5], buf[at + 6] << 8 | buf[at + 7]
    sub.add(SID_PREFIX_F, bytes(buf[at:at + 5]), at, 5)
    sub.add(SID_PROTOCOL, ps, at + 5, 1)
    sub.add(SID_DPORT, port, at + 6, 2)
    sub.add(RDMACM_PORT_SPACE, ps, at + 5, 1)
    sub.add(RDMACM_PORT, port, at + 6, 2)
    name = WELL_KNOWN.get(port) if ps == 0x06 else None
    if name is not None:
        sub.add(RDMACM_SERVICE, name, at + 6, 2)


def add_service_id(pkt: Packet, lay: Layer, buf: bytes, sid_off: int, rc: tuple[int, int, int]) -> None:
    """The service ID's parts, under the CM message that carries it (``rc``: what ``split_service_id``
    made of the eight bytes at ``sid_off``)."""
    lay.child("rdmacm", None, sid_off, 8, "IP CM ServiceID").lazy(_fill_service_id)


def _fill_ip_cm(ip: Layer) -> None:
    """The addresses and the consumer's private data of an IP CM header (its fill)."""
    buf, off = ip.buf, ip.off
    end = off + ip.length
    if buf[off + 1] >> 4 == 4:
        ip.add(IP_CM_SIP4, bytes(buf[off + 16:off + 20]), off + 16, 4)
        ip.add(IP_CM_DIP4, bytes(buf[off + 32:off + 36]), off + 32, 4)
    else:
        ip.add(IP_CM_SIP6, bytes(buf[off + 4:off + 20]), off + 4, 16)
        ip.add(IP_CM_DIP6, bytes(buf[off + 20:off + 36]), off + 20, 16)
    poff = off + IP_CM_SIZE
    ip.add(IP_CM_PRIVATE, bytes(buf[poff:end]), poff, end - poff)


def dissect_req_private(pkt: Packet, lay: Layer, buf: bytes, sid_off: int, off: int, end: int, ctx: Any,
                        rc: tuple[int, int, int]) -> int | None:
    """A REQ to an RDMA IP CM service ID: the IP CM header, then the consumer's private data.

    Returns the client's source port from the IP CM header (None when the header is short).
    """
    add_service_id(pkt, lay, buf, sid_off, rc)
    if end - off < IP_CM_SIZE:
        pkt.truncated("cm.req.ip_cm", end - off, IP_CM_SIZE)
        return None
    lay.child("cm.req.ip_cm", IP_CM, off, end - off).lazy(_fill_ip_cm)
    ipv = buf[off + 1] >> 4
    if ipv != 4 and ipv != 6:
        pkt.add_expert("warning", "protocol", f"IP CM header: IP version {ipv} is neither 4 nor 6",
                       "IBTA Annex A11.6.1")
    if buf[off] != 0:
        pkt.add_expert("note", "protocol", f"IP CM header version {buf[off] >> 4}.{buf[off] & 15} (Linux sends 0.0)",
                       "IBTA Annex A11.6.1")
    hand_private(pkt, buf, off + IP_CM_SIZE, end, ctx, rc[2])
    return (buf[off + 2] << 8) | buf[off + 3]


def hand_private(pkt: Packet, buf: bytes, off: int, end: int, ctx: Any, port: int | None) -> bool:
    """Offer consumer private data to the dissector of ``port``, then to the heuristics.

    The bytes are already shown as the message's private data field, so nothing is added
    when no dissector takes them.
    """
    if end <= off:
        return False
    if port is not None:
        fn = cm_private_data.by_key.get(port)
        if fn is not None:
            fn.dissect(pkt, buf, off, end, ctx)
            return True
    for _name, heur in cm_private_data.heuristics:
        if heur.dissect(pkt, buf, off, end, ctx):
            return True
    return False


def rdmacm_payload(pkt: Packet, buf: bytes, off: int, end: int, ctx: Any) -> bool:
    """First heuristic of ``ib.payload``: the upper layer bound to the connection's RDMA-CM port."""
    conv: Connection | None = pkt.conv      # typed (Packet.conv is Any): its attributes read directly
    if conv is None:
        return False
    port = conv.port
    if port is None:
        return False
    fn = rdmacm_port.by_key.get(port)
    if fn is None:
        return False
    fn.dissect(pkt, buf, off, end, ctx)
    return True


class _ByPort(Dissector):
    """The RC payload of an RDMA-CM connection, by its port, called directly (``registry.Dissector``)."""

    def dissect(self, pkt: Packet, buf: bytes, off: int, end: int, ctx: Any) -> bool:
        return rdmacm_payload(pkt, buf, off, end, ctx)


table("ib.payload").add_heuristic("rdmacm.port", _ByPort(rdmacm_payload), first=True)
