"""RPC-over-RDMA versions 1 and 2 as dpkt classes: the declared words of each transport header as
``__hdr__``, the parts whose shape depends on what came before read by the dissectors' XDR parsers and
written by their encoders."""
from __future__ import annotations

from typing import Sequence

import dpkt

from ..dissectors import rpcrdma, rpcrdma2
from ..dissectors.xdr import p32, popaque
from ..fields import Field
from .layout import Layout, shown

Chunks = tuple[Sequence[tuple[int, int, int, int]], Sequence[Sequence[tuple[int, int, int]]],
               Sequence[tuple[int, int, int]] | None]


def _declared_words(*declared: tuple[Field, str]) -> Layout:
    return Layout([(name, field, False) for field, name in declared])


def _chunks_of(msg: rpcrdma.RpcRdmaMessage) -> Chunks:
    return ([(s.position or 0, s.handle, s.length, s.offset) for s in msg.reads],
            [[(s.handle, s.length, s.offset) for s in chunk] for chunk in msg.writes],
            None if msg.reply is None else [(s.handle, s.length, s.offset) for s in msg.reply])


_V1 = _declared_words((rpcrdma.XID, "xid"), (rpcrdma.VERSION, "version"), (rpcrdma.CREDITS, "credits"),
                      (rpcrdma.PROC, "proc"))


class RPCRDMA(dpkt.Packet):
    """RPC-over-RDMA version 1 (RFC 8166): the declared words, then by ``proc`` ``align`` and ``thresh``
    (RDMA_MSGP), ``chunks`` (RDMA_MSG, RDMA_NOMSG, RDMA_MSGP) or ``errcode``, ``vers_low`` and ``vers_high``
    (RDMA_ERROR), read by the dissector's parser and written by its encoder; the RPC message is the data.

    ``chunks`` is ``(read list, write list, reply chunk)``: ``[(position, handle, length, offset), ...]``,
    ``[[(handle, length, offset), ...], ...]`` and ``[(handle, length, offset), ...]`` or None.
    """

    __hdr__ = _V1.hdr
    __pprint_funcs__ = {"xid": hex, "proc": shown(rpcrdma.PROC)}
    align = 0
    thresh = 0
    chunks: Chunks = ((), (), None)
    errcode = rpcrdma.ERR_VERS
    vers_low = 1
    vers_high = 1

    def unpack(self, buf: bytes) -> None:
        dpkt.Packet.unpack(self, buf)
        msg, err = rpcrdma.parse_v1(buf, 0, len(buf))
        if msg is None or err is not None:
            raise dpkt.UnpackError(f"RPC-over-RDMA: {err}")
        if self.proc == rpcrdma.RDMA_MSGP:
            self.align, self.thresh = msg.align or 0, msg.thresh or 0
        if self.proc in (rpcrdma.RDMA_MSG, rpcrdma.RDMA_NOMSG, rpcrdma.RDMA_MSGP):
            self.chunks = _chunks_of(msg)
        elif self.proc == rpcrdma.RDMA_ERROR:
            self.errcode = msg.errcode or 0
            if msg.errcode == rpcrdma.ERR_VERS:
                self.vers_low, self.vers_high = msg.vers_low or 0, msg.vers_high or 0
        self.data = buf[msg.header_len:]

    def _head(self) -> bytes:
        reads, writes, reply = self.chunks
        return rpcrdma.encode_v1(self.xid, self.proc, self.credits, reads=reads, writes=writes, reply=reply,
                                 align=self.align, thresh=self.thresh, errcode=self.errcode,
                                 vers_low=self.vers_low, vers_high=self.vers_high, version=self.version)

    def __len__(self) -> int:
        return len(self._head()) + len(self.data)

    def __bytes__(self) -> bytes:
        return self._head() + bytes(self.data)


_V2 = _declared_words((rpcrdma2.XID, "xid"), (rpcrdma2.VERSION, "version"), (rpcrdma2.MAX_CREDITS, "max_credits"),
                      (rpcrdma2.GRANTED, "granted"), (rpcrdma2.HTYPE, "htype"), (rpcrdma2.FLAGS, "flags"))


class RPCRDMA2(dpkt.Packet):
    """RPC-over-RDMA version 2 (draft-ietf-nfsv4-rpcrdma-version-two-01): the declared words (the credit
    word's two halves as bit fields), then by ``htype`` ``inv_handle`` and ``chunks`` (RDMA2_MSG,
    RDMA2_NOMSG), ``errcode`` and ``error_args`` (RDMA2_ERROR: the arm's words by name) or ``props``
    (RDMA2_CONNPROP: ``[(property id, data bytes), ...]``), read by the dissector's parser."""

    __hdr__ = _V2.hdr
    __bit_fields__ = _V2.bit_fields
    __pprint_funcs__ = {"xid": hex, "htype": shown(rpcrdma2.HTYPE), "flags": hex}
    inv_handle = 0
    chunks: Chunks = ((), (), None)
    errcode = 1
    error_args: dict[str, int] | None = None
    props: Sequence[tuple[int, bytes]] = ()

    def unpack(self, buf: bytes) -> None:
        dpkt.Packet.unpack(self, buf)
        msg, err = rpcrdma2.parse_v2(buf, 0, len(buf))
        if msg is None or err is not None:
            raise dpkt.UnpackError(f"RPC-over-RDMA version 2: {err}")
        if self.htype in (0, 1):
            self.inv_handle, self.chunks = msg.inv_handle or 0, _chunks_of(msg)
        elif self.htype == 4:
            self.errcode, self.error_args = msg.errcode or 0, dict(msg.error_args or {})
        elif self.htype == 5:
            self.props = [(which, bytes(buf[dp:dp + dl])) for which, (_at, dp, dl) in msg.props or ()]
        self.data = buf[msg.header_len:]

    def _head(self) -> bytes:
        if self.htype == 5:         # the data of each property as given (rpcrdma2.encode takes values)
            props = b"".join(p32(which) + popaque(bytes(data)) for which, data in self.props)
            return self.pack_hdr() + p32(len(self.props)) + props
        reads, writes, reply = self.chunks
        return rpcrdma2.encode(self.xid, self.htype, max_credits=self.max_credits, granted=self.granted,
                               flags=self.flags, inv_handle=self.inv_handle, reads=reads, writes=writes,
                               reply=reply, errcode=self.errcode, error_args=self.error_args, version=self.version)

    def __len__(self) -> int:
        return len(self._head()) + len(self.data)

    def __bytes__(self) -> bytes:
        return self._head() + bytes(self.data)
