"""The RPC-over-RDMA transaction of a packet as fields: ``rpcrdma.analysis.*``.

The transactions module says which transaction the packet being analysed belongs to
(``Transactions.current``); this module turns that into fields on the packet, as
Wireshark's RPC dissector shows ``rpc.time`` / ``rpc.repframe`` / ``rpc.reqframe``, so that display
filters, JSON and the tree reach them: ``rpcrdma.analysis.latency > 0.001``,
``rpcrdma.analysis.role == "rdma_write"``, ``rpcrdma.analysis.call_frame == 345``.
It runs after the transactions module on each packet (it imports it, which registers it first).
The role and step come from the typed record (``Transaction.role_of``).
"""
from __future__ import annotations

from ..fields import Field, declaring, protocol
from ..packet import Layer, Packet
from ..typenames import Final, mypyc_attr
from .analyzer import Analyzer, Module, register
from .model import PacketRole
from .transactions import Transactions   # registered before this module: it sees each packet first

declaring(__name__)
protocol("rpcrdma.analysis", "RPC-over-RDMA transaction", repeats=False)   # one transaction a packet

XID: Final = Field("rpcrdma.analysis.xid", 32, "Transaction XID", "hex")
ROLE: Final = Field("rpcrdma.analysis.role", 0, "Part of the transaction", "str")
DIRECTION: Final = Field("rpcrdma.analysis.direction", 0, "Direction of the call", "str")
CALL_FRAME: Final = Field("rpcrdma.analysis.call_frame", 0, "Call in frame")
REPLY_FRAME: Final = Field("rpcrdma.analysis.reply_frame", 0, "Reply in frame")
LATENCY: Final = Field("rpcrdma.analysis.latency", 0, "Time from call to reply", "float", unit="seconds")
CHUNK_LIST: Final = Field("rpcrdma.analysis.chunk_list", 0, "Chunk list", "str")
CHUNK_INDEX: Final = Field("rpcrdma.analysis.chunk", 0, "Chunk")
SEGMENT_INDEX: Final = Field("rpcrdma.analysis.segment", 0, "Segment")


def _parent(pkt: Packet) -> Layer:
    for name in ("rpcrdma", "bth"):
        for lay in pkt.layers:
            if lay.proto == name:
                return lay.child("rpcrdma.analysis", None, 0, 0, label="RPC-over-RDMA transaction")
    lay = Layer("rpcrdma.analysis", None, pkt.frame.data, 0, 0)
    lay.label = "RPC-over-RDMA transaction"
    pkt.layers.append(lay)
    return lay


@mypyc_attr(serializable=True, allow_interpreted_subclasses=True)
class TransactionFields(Module):
    def __init__(self, analyzer: Analyzer) -> None:
        self.an = analyzer
        mod = analyzer.modules.get("rpcrdma.transactions")
        assert isinstance(mod, Transactions), "the transactions module registers before this one"
        self.transactions = mod

    def packet(self, pkt: Packet) -> None:
        txn = self.transactions.current
        if txn is None or not pkt.fields_wanted:
            return
        role, step = txn.role_of(pkt.frame.num)
        lay = _parent(pkt)
        # str() of a StrEnum member is its value; .value runs enum's descriptor, in Python, per packet
        lay.add(XID, txn.key)
        lay.add(ROLE, str(role))
        lay.add(DIRECTION, str(txn.direction))
        if role is not PacketRole.REQUEST:
            lay.add(CALL_FRAME, txn.request_frame)
        if role is PacketRole.RESPONSE:
            lat = txn.latency_ns
            if lat is not None:
                lay.add(LATENCY, lat / 1e9)
        elif role is not PacketRole.REQUEST and txn.response_frame is not None:
            lay.add(REPLY_FRAME, txn.response_frame)
        if step is not None and step.segment is not None:
            seg = step.segment
            lay.add(CHUNK_LIST, str(seg.kind))
            lay.add(CHUNK_INDEX, seg.chunk)
            lay.add(SEGMENT_INDEX, seg.index)

    def finish(self) -> None:
        """Nothing waits for the end: a packet's fields are final when it is seen."""


register("rpcrdma.fields", TransactionFields, fields_only=True)
