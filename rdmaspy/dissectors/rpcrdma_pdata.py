"""RPC-over-RDMA Version 1 CM Private Data (RFC 8797; first drafted as draft-cel-nfsv4-rpcrdma-cm-pvt-msg).

Eight bytes a client and a server put in the private data of the connection
handshake (IB CM REQ/REP, or MPA Request/Reply on iWARP): Format Identifier
0xf6ab0e18, Version, 7 reserved bits and R (remote invalidation), Send Size and
Receive Size, each encoded as n with size = (n + 1) * 1024.  RFC 8797 section 5.2:
the receiver searches the private data for the identifier at any offset, with no
alignment, then checks the version and that the content fits the buffer.

The dissector knows nothing of its carrier: it takes a buffer range, adds its
layer and records what it found as ``pkt.note(RPCRDMA_PDATA, RpcRdmaPdata)``
for the connection tracker.
"""
from __future__ import annotations

from ..fields import F, Field, Header, declaring, single
from ..packet import Note, Packet
from ..registry import Dissector, table
from ..typenames import Any, Final, mypyc_attr

declaring(__name__)
single("rpcrdma.pdata")           # in a CM or MPA exchange, once

FORMAT_ID: Final = 0xF6AB0E18
_MAGIC: Final = FORMAT_ID.to_bytes(4, "big")
DEFAULT_INLINE: Final = 1024

PDATA: Final = Header("rpcrdma.pdata", "RPC-over-RDMA CM Private Data", [
    F("format_id", 32, "Format Identifier", "hex"),
    F("version", 8, "Version"),
    F("reserved", 7, "Reserved", "hex"),
    F("remote_invalidate", 1, "R (Remote Invalidation)", "bool"),
    F("send_size_raw", 8, "Send Size (encoded)"),
    F("recv_size_raw", 8, "Receive Size (encoded)"),
])
PDATA_OFFSET: Final = Field("rpcrdma.pdata.offset", 0, "Offset in the private data", unit="bytes")
PDATA_SEND: Final = Field("rpcrdma.pdata.send_size", 0, "Send Size", unit="bytes")
PDATA_RECV: Final = Field("rpcrdma.pdata.recv_size", 0, "Receive Size", unit="bytes")
PDATA_VALID: Final = Field("rpcrdma.pdata.valid", 0, "Usable (version 1, within the buffer)", "bool")

RULE_SEARCH: Final = "RFC 8797 §5.2"
RULE_VERSION: Final = "RFC 8797 §4 (Version)"


@mypyc_attr(serializable=True, allow_interpreted_subclasses=True)
class RpcRdmaPdata:
    """What one peer advertised.  ``valid`` False: act as if absent (RFC 8797 §5.1)."""

    __slots__ = ("version", "remote_invalidate", "send_size", "recv_size", "offset", "valid", "problem")

    def __init__(self, version: int | None, remote_invalidate: bool, send_size: int, recv_size: int,
                 offset: int, valid: bool, problem: str | None = None) -> None:
        self.version = version
        self.remote_invalidate = remote_invalidate
        self.send_size = send_size
        self.recv_size = recv_size
        self.offset = offset
        self.valid = valid
        self.problem = problem

    def __repr__(self) -> str:
        return (f"RpcRdmaPdata(v={self.version} R={int(self.remote_invalidate)} send={self.send_size} "
                f"recv={self.recv_size} @{self.offset}{'' if self.valid else ' invalid: ' + str(self.problem)})")


RPCRDMA_PDATA: Final[Note[RpcRdmaPdata]] = Note("rpcrdma.pdata")    # what the CM or MPA private data advertised


def size_of(code: int) -> int:
    return (code + 1) * 1024


def find_pdata(pkt: Packet, buf: bytes, off: int, end: int, ctx: Any) -> bool:
    """Search ``buf[off:end]`` for the Format Identifier; decode and record what follows it."""
    at = buf.find(_MAGIC, off, end)
    if at < 0:
        return False
    rel = at - off
    if end - at < PDATA.size:
        lay = pkt.add_layer("rpcrdma.pdata", None, buf, at, end - at, "RPC-over-RDMA CM Private Data (truncated)")
        lay.add(PDATA_OFFSET, rel, at, 4)
        lay.add(PDATA_VALID, False, at, end - at)
        text = f"RPC-over-RDMA CM private data at offset {rel} overruns the buffer ({end - at} of 8 bytes)"
        pkt.add_expert("warning", "malformed", text, RULE_SEARCH)
        pkt.add_info("RPC-over-RDMA pdata truncated")
        pkt.note(RPCRDMA_PDATA, RpcRdmaPdata(None, False, DEFAULT_INLINE, DEFAULT_INLINE, rel, False,
                                               "overrun"))
        return True
    lay = pkt.add_layer("rpcrdma.pdata", PDATA, buf, at)
    _fid, version, _res, rbit, scode, rcode = lay.values
    send, recv = size_of(scode), size_of(rcode)
    lay.add(PDATA_OFFSET, rel, at, 4)
    lay.add(PDATA_SEND, send, at + 6, 1)
    lay.add(PDATA_RECV, recv, at + 7, 1)
    valid = version == 1
    lay.add(PDATA_VALID, valid, at + 4, 1)
    if not valid:
        pkt.add_expert("warning", "protocol",
                       f"RPC-over-RDMA CM private data version {version} is not 1: treated as absent",
                       RULE_VERSION)
        pkt.add_info(f"RPC-over-RDMA pdata v{version} (unknown version)")
        pkt.note(RPCRDMA_PDATA, RpcRdmaPdata(version, False, DEFAULT_INLINE, DEFAULT_INLINE, rel, False,
                                               f"version {version}"))
        return True
    pkt.add_info(f"RPC-over-RDMA pdata v1 send={send} recv={recv} R={rbit}")
    pkt.note(RPCRDMA_PDATA, RpcRdmaPdata(version, bool(rbit), send, recv, rel, True))
    return True


def dissect_pdata(pkt: Packet, buf: bytes, off: int, end: int, ctx: Any) -> None:
    """Bound to port 20049: absent data is normal (the peer then uses the defaults)."""
    find_pdata(pkt, buf, off, end, ctx)


class _Search(Dissector):
    """The search for the Format Identifier in any private data, called directly (``registry.Dissector``):
    every CM and MPA message with private data no port claims is offered to it."""

    def dissect(self, pkt: Packet, buf: bytes, off: int, end: int, ctx: Any) -> bool:
        return find_pdata(pkt, buf, off, end, ctx)


ON_PORT: Final = Dissector(dissect_pdata)
table("cm.private_data").register(20049, ON_PORT)
table("cm.private_data").add_heuristic("rpcrdma.pdata", _Search(find_pdata))
