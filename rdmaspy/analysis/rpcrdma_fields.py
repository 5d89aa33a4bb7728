"""The RPC-over-RDMA transaction of a packet as fields: ``rpcrdma.analysis.*``.

The transactions module notes on each packet the transaction it belongs to
(``pkt.extra["rpcrdma.transaction"]``); this module turns that note into fields on the packet, as
Wireshark's RPC dissector shows ``rpc.time`` / ``rpc.repframe`` / ``rpc.reqframe``, so that display
filters, JSON and the tree reach them: ``rpcrdma.analysis.latency > 0.001``,
``rpcrdma.analysis.role == "rdma_write"``, ``rpcrdma.analysis.call_frame == 345``.
It runs after the transactions module on each packet (it imports it, which registers it first).
"""
from __future__ import annotations

from typing import Any

from ..fields import Field
from ..packet import Layer, Packet
from . import transactions  # noqa: F401   (registered before this module: its notes come first)
from .analyzer import Analyzer, register

PROTOCOLS = {"rpcrdma.analysis": "RPC-over-RDMA transaction"}

XID = Field("rpcrdma.analysis.xid", 32, "Transaction XID", "hex")
ROLE = Field("rpcrdma.analysis.role", 0, "Part of the transaction", "str")
DIRECTION = Field("rpcrdma.analysis.direction", 0, "Direction of the call", "str")
CALL_FRAME = Field("rpcrdma.analysis.call_frame", 0, "Call in frame")
REPLY_FRAME = Field("rpcrdma.analysis.reply_frame", 0, "Reply in frame")
LATENCY = Field("rpcrdma.analysis.latency", 0, "Time from call to reply", "float", unit="seconds")
CHUNK_LIST = Field("rpcrdma.analysis.chunk_list", 0, "Chunk list", "str")
CHUNK_INDEX = Field("rpcrdma.analysis.chunk", 0, "Chunk")
SEGMENT_INDEX = Field("rpcrdma.analysis.segment", 0, "Segment")


def _role(txn: Any, num: int) -> tuple[str, dict | None]:
    if num in txn.call_frames:
        return "call", None
    if txn.reply_frames and num in txn.reply_frames:
        return "reply", None
    if txn.done_frame == num:
        return "done", None
    for step in reversed(txn.steps):
        op = step.get("op")
        if op == "read" and num in (step.get("response_frames") or ()):
            return "rdma_read_response", step
        if num in step.get("frames", ()):
            if op == "read":
                return "rdma_read", step
            if op == "write":
                return "rdma_write", step
    return "related", None


def _parent(pkt: Packet) -> Layer:
    for name in ("rpcrdma", "bth"):
        for lay in pkt.layers:
            if lay.proto == name:
                return lay.child("rpcrdma.analysis", None, 0, 0, label="RPC-over-RDMA transaction")
    lay = Layer("rpcrdma.analysis", None, pkt.frame.data, 0, 0)
    lay.label = "RPC-over-RDMA transaction"
    pkt.layers.append(lay)
    return lay


class TransactionFields:
    def __init__(self, analyzer: Analyzer) -> None:
        self.an = analyzer

    def packet(self, pkt: Packet) -> None:
        extra = pkt.extra
        if not extra:
            return
        txn = extra.get("rpcrdma.transaction")
        if txn is None:
            return
        num = pkt.frame.num
        role, step = _role(txn, num)
        lay = _parent(pkt)
        lay.add(XID, txn.xid)
        lay.add(ROLE, role)
        lay.add(DIRECTION, txn.direction)
        if role != "call":
            lay.add(CALL_FRAME, txn.call_frame)
        if role == "reply":
            lat = txn.latency_ns
            if lat is not None:
                lay.add(LATENCY, lat / 1e9)
        elif role != "call" and txn.reply_frame is not None:
            lay.add(REPLY_FRAME, txn.reply_frame)
        if step is not None:
            ch = step.get("chunk")
            if ch:
                lay.add(CHUNK_LIST, ch.get("list"))
                lay.add(CHUNK_INDEX, ch.get("chunk"))
                lay.add(SEGMENT_INDEX, ch.get("segment"))

    def finish(self) -> None:
        """Nothing waits for the end: a packet's fields are final when it is seen."""


register("rpcrdma.fields", TransactionFields)
