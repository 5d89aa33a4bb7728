"""dpkt packet classes generated from rdmaspy's own header declarations (``pip install 'rdmaspy[dpkt]'``).

Every ``Header`` a dissector declares (InfiniBand LRH, GRH, BTH and the extended headers, the MADs and the
Communication Manager, the IP CM header, RFC 8797 private data, MPA, DDP and RDMAP, NVMe's command and
response capsules and the NVMe/RDMA CM records, little-endian) becomes a ``dpkt.Packet``
class whose ``__hdr__`` and ``__bit_fields__`` are made from the declared names and widths, with the value
names in ``__pprint_funcs__``; the RPC-over-RDMA transport headers (v1 and v2), declared as ``Field``s over
XDR, become classes whose chunk lists, error arms and properties are read and written by the dissectors' own
XDR parsers and encoders. Unpacking follows what follows what as rdmaspy's dissector tables do (the BTH's
opcode to its extended headers, as dpkt's IP follows its protocol field), and importing this module binds
UDP port 4791, Ethernet type 0x8915 and TCP ports 20049 and 4420 (NVMe/RDMA) in dpkt's own tables; what one
packet's bytes do not say of NVMe/RDMA is told (``bind_nvme_rdma``, ``nvme_capsule``, ``nvme_rdma_cm``):

    import dpkt, rdmaspy.dpkt
    for ts, buf in dpkt.pcap.Reader(open("captures/rxe-nfsv3-rdma.pcap", "rb")):
        bth = dpkt.ethernet.Ethernet(buf).ip.data.data      # a BTH, its extended headers and upper layers below

What a header is, and which one follows which, comes from the dissectors (``rdmaspy.stacking``); this module
only presents them in dpkt's terms (docs/dpkt.md).
"""
from __future__ import annotations

import contextlib
from typing import Any, Iterator

try:
    import dpkt
except ImportError:
    raise ImportError("rdmaspy.dpkt needs dpkt: pip install 'rdmaspy[dpkt]'") from None
import dpkt.ethernet
import dpkt.ip
import dpkt.tcp
import dpkt.udp

from .. import stacking
from ..dissectors import infiniband, rpcrdma
from .layers import (LAYER_OF, LAYERS, NVME_RDMA_PORTS, NVME_RDMA_QIDS, NVME_RDMA_QPS, DeclaredPacket,
                     PerfReserved, PrivateDataPrefix, carry, carry_capsule, chain, class_of, field_name, fpdus,
                     layer_of, make_class, nvme_capsule, nvme_rdma_cm, nvme_record, reading_nvme_rdma)
from .rpc_over_rdma import RPCRDMA, RPCRDMA2

globals().update(LAYERS)         # BTH, RETH, MAD, CM_REQ, ...: each generated class by its name

# --- binding into dpkt's own tables -------------------------------------------------------------------
UDP_PORTS: set[int] = {stacking.ROCEV2_PORT}         # UDP ports whose datagrams carry a BTH (RoCEv2)
IWARP_PORTS: set[int] = {rpcrdma.NFS_RDMA_PORT, stacking.NVME_RDMA_PORT}   # TCP ports whose segments start
                                                                            # with MPA frames

_UDP = dpkt.ip.IP.get_proto(dpkt.ip.IP_PROTO_UDP)
_TCP = dpkt.ip.IP.get_proto(dpkt.ip.IP_PROTO_TCP)


class UDP(dpkt.udp.UDP):
    """What IP's (and IPv6's) protocol table makes of a UDP datagram once this module is imported: dpkt's own
    ``dpkt.udp.UDP``, its payload a BTH (and what follows it) when a port is in ``UDP_PORTS``."""

    def __new__(cls, *args: Any, **kwargs: Any) -> Any:
        udp = _UDP(*args, **kwargs)
        if args and (udp.dport in UDP_PORTS or udp.sport in UDP_PORTS):
            udp.data = carry(udp, infiniband.BTH, udp.data)
        return udp


class TCP(dpkt.tcp.TCP):
    """What IP's protocol table makes of a TCP segment: dpkt's own ``dpkt.tcp.TCP``, its payload an MPA frame
    (a Request/Reply, or the segment's first whole FPDU) when a port is in ``IWARP_PORTS``."""

    def __new__(cls, *args: Any, **kwargs: Any) -> Any:
        tcp = _TCP(*args, **kwargs)
        if args and tcp.data and (tcp.dport in IWARP_PORTS or tcp.sport in IWARP_PORTS):
            with reading_nvme_rdma(tcp.dport in NVME_RDMA_PORTS or tcp.sport in NVME_RDMA_PORTS):
                tcp.data = carry(tcp, stacking.mpa_frame(tcp.data), tcp.data)
        return tcp


def bind_iwarp(port: int) -> None:
    """Read TCP ``port`` as iWARP: MPA Request/Reply frames, then FPDUs of DDP/RDMAP.

    iWARP has no port of its own (rdmaspy learns it from the MPA exchange); 20049, NFS/RDMA, is bound on
    import. Each TCP segment is read as starting with an MPA frame, as the Linux senders align them.
    """
    IWARP_PORTS.add(port)


def bind_nvme_rdma(port: int | None = None, qp: int | None = None, qid: int | None = None) -> None:
    """Read NVMe/RDMA where rdmaspy would (its Sends as capsules, the CM private data as its records).

    ``port``: an RDMA-CM port (a CM REQ to its service ID carries the NVMe/RDMA REQ record) that is also
    read as an iWARP TCP port whose Sends are capsules; 4420 is bound on import. ``qp``: a destination QP
    whose Sends (RoCE, InfiniBand) are capsules: the bytes of a Send do not say they are one, the CM
    exchange does (the REQ's and the REP's ``localqpn``), or the capture's user knows. ``qid``: the NVMe
    queue of the controller's QP ``qp`` (the CM REQ record's ``qid``), so its commands read as the admin
    queue's (0) or an I/O queue's rather than guessed.
    """
    if port is not None:
        NVME_RDMA_PORTS.add(port)
        IWARP_PORTS.add(port)
    if qp is not None:
        NVME_RDMA_QPS.add(qp)
        if qid is not None:
            NVME_RDMA_QIDS[qp] = qid


def _bind() -> None:
    dpkt.ip.IP.set_proto(dpkt.ip.IP_PROTO_UDP, UDP)       # IPv6 shares IP's table
    dpkt.ip.IP.set_proto(dpkt.ip.IP_PROTO_TCP, TCP)
    dpkt.ethernet.Ethernet.set_type(stacking.ROCEV1_ETHERTYPE, layer_of(infiniband.GRH))  # SLL shares it


_bind()


@contextlib.contextmanager
def unbound() -> Iterator[None]:
    """dpkt's tables as they were before this module bound them, within the block."""
    dpkt.ip.IP.set_proto(dpkt.ip.IP_PROTO_UDP, _UDP)
    dpkt.ip.IP.set_proto(dpkt.ip.IP_PROTO_TCP, _TCP)
    types = dpkt.ethernet.Ethernet._typesw
    grh = types.pop(stacking.ROCEV1_ETHERTYPE, None)
    try:
        yield
    finally:
        _bind()
        if grh is None:
            types.pop(stacking.ROCEV1_ETHERTYPE, None)


__all__ = ["LAYERS", "LAYER_OF", "UDP_PORTS", "IWARP_PORTS", "NVME_RDMA_PORTS", "NVME_RDMA_QPS", "NVME_RDMA_QIDS",
           "UDP", "TCP", "bind_iwarp", "bind_nvme_rdma", "nvme_capsule", "carry_capsule", "nvme_rdma_cm", "nvme_record",
           "reading_nvme_rdma", "chain", "unbound", "fpdus", "layer_of", "class_of", "carry", "field_name", "make_class", "DeclaredPacket", "RPCRDMA", "RPCRDMA2",
           "PerfReserved", "PrivateDataPrefix", *LAYERS]
