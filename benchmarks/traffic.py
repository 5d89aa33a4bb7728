"""A realistic RoCEv2 capture for benchmarks: NFSv3 over RPC-over-RDMA v1, built with the encoders.

One RC connection between a client (192.0.2.2, QP 0x21) and a server (192.0.2.1, QP 0x11), path MTU
1024, as SoftRoCE makes it:
- small calls inline (GETATTR, LOOKUP, ACCESS): SEND Only call, ACK, SEND Only reply, ACK;
- READs: the call carries a Write chunk, the server RDMA WRITEs the data (First/Middle/Last) and
  replies with SEND Only with Invalidate, with the Write list giving the length written;
- WRITEs: the call carries a Read chunk, the server RDMA READs the data (Request, then Response
  First/Middle/Last from the client), then replies inline.
PSNs follow each side's send queue (READ responses use the server's request PSNs); every frame has a
correct ICRC.  Frames are generated lazily so a million-frame file is written in constant memory.
"""
from __future__ import annotations

import random
from typing import Iterator

from rdmaspy.craft import rocev2, write_pcap
from rdmaspy.dissectors import nfs, onc_rpc, rpcrdma

MTU = 1024
CLIENT, SERVER = "192.0.2.2", "192.0.2.1"
CMAC, SMAC = "52:54:00:00:00:02", "52:54:00:00:00:01"
CQP, SQP = 0x21, 0x11
NFS_PROG, NFS_V3 = 100003, 3
GETATTR, LOOKUP, ACCESS, READ, WRITE = 1, 3, 4, 6, 7
SEND_ONLY, SEND_ONLY_INV, ACK = 0x04, 0x17, 0x11
WRITE_FIRST, WRITE_MIDDLE, WRITE_LAST, WRITE_ONLY = 0x06, 0x07, 0x08, 0x0A
READ_REQ, RESP_FIRST, RESP_MIDDLE, RESP_LAST, RESP_ONLY = 0x0C, 0x0D, 0x0E, 0x0F, 0x10
FH = bytes(range(32))


class _Conn:
    def __init__(self, client: str = CLIENT, server: str = SERVER, server_qp: int = SQP) -> None:
        self.client = client
        self.server = server
        self.server_qp = server_qp
        self.c_psn = 1000        # client's send queue
        self.s_psn = 500000      # server's send queue
        self.c_msn = 0
        self.s_msn = 0
        self.ts = 1_700_000_000_000_000_000
        self.sport = 49777

    def tick(self, us: float) -> int:
        self.ts += int(us * 1000)
        return self.ts

    def c2s(self, opcode: int, payload: bytes = b"", psn: int | None = None, **kw) -> tuple[int, bytes]:
        if psn is None:
            psn = self.c_psn
            self.c_psn = (self.c_psn + 1) & 0xFFFFFF
        return self.tick(2), rocev2(opcode, self.server_qp, psn, payload, src=self.client, dst=self.server, smac=CMAC,
                                    dmac=SMAC, sport=self.sport, **kw)

    def s2c(self, opcode: int, payload: bytes = b"", psn: int | None = None, **kw) -> tuple[int, bytes]:
        if psn is None:
            psn = self.s_psn
            self.s_psn = (self.s_psn + 1) & 0xFFFFFF
        return self.tick(2), rocev2(opcode, CQP, psn, payload, src=self.server, dst=self.client, smac=SMAC,
                                    dmac=CMAC, sport=self.sport, **kw)


def _segments(data_len: int) -> list[int]:
    n = max(1, -(-data_len // MTU))
    return [min(MTU, data_len - i * MTU) for i in range(n)]


def _multi(send, first: int, middle: int, last: int, only: int, data_len: int, **first_kw) -> Iterator:
    sizes = _segments(data_len)
    if len(sizes) == 1:
        yield send(only, b"\x5a" * sizes[0], **first_kw)
        return
    for i, n in enumerate(sizes):
        op = first if i == 0 else last if i == len(sizes) - 1 else middle
        yield send(op, b"\x5a" * n, **(first_kw if i == 0 else {}))


def transactions(seed: int = 1, client: str = CLIENT, server: str = SERVER,
                 server_qp: int = SQP) -> Iterator[tuple[int, bytes]]:
    """An endless stream of (timestamp ns, frame) for the NFSv3 workload (one connection, ``client`` to
    ``server``'s QP ``server_qp``)."""
    rnd = random.Random(seed)
    c = _Conn(client, server, server_qp)
    xid = 0x10000000
    cred = onc_rpc.encode_auth_sys(machine="client", uid=0, gid=0)
    while True:
        xid = (xid + 1) & 0xFFFFFFFF
        kind = rnd.random()
        handle = 0x1000 + (xid & 0xFFF)
        offset = (xid << 32) | 0x9000
        if kind < 0.5:      # small inline call
            proc = rnd.choice((GETATTR, LOOKUP, ACCESS))
            call = onc_rpc.encode_call(xid, NFS_PROG, NFS_V3, proc, nfs.encode_v3_write_args(FH, 0, b"", 0)[:40],
                                       cred)
            yield c.c2s(SEND_ONLY, rpcrdma.encode_v1(xid, 0, 128, reply=None, payload=call), ackreq=1)
            yield c.s2c(ACK, psn=(c.c_psn - 1) & 0xFFFFFF, syndrome=0x1F, msn=c.c_msn)
            c.tick(rnd.uniform(20, 80))
            reply = onc_rpc.encode_reply(xid, b"\0" * rnd.choice((88, 104, 116)))
            yield c.s2c(SEND_ONLY, rpcrdma.encode_v1(xid, 0, 128, payload=reply), ackreq=1)
            yield c.c2s(ACK, psn=(c.s_psn - 1) & 0xFFFFFF, syndrome=0x1F, msn=c.s_msn)
        elif kind < 0.75:   # READ: data by RDMA WRITE into the client's Write chunk
            size = rnd.choice((4096, 8192, 16384))
            args = nfs.encode_v3_write_args(FH, xid * 4096, b"", 0)[:44]
            call = onc_rpc.encode_call(xid, NFS_PROG, NFS_V3, READ, args, cred)
            yield c.c2s(SEND_ONLY, rpcrdma.encode_v1(xid, 0, 128, writes=[[(handle, size, offset)]], payload=call),
                        ackreq=1)
            yield c.s2c(ACK, psn=(c.c_psn - 1) & 0xFFFFFF, syndrome=0x1F, msn=c.c_msn)
            c.tick(rnd.uniform(20, 60))
            yield from _multi(c.s2c, WRITE_FIRST, WRITE_MIDDLE, WRITE_LAST, WRITE_ONLY, size,
                              va=offset, r_key=handle, dma_length=size)
            res = onc_rpc.encode_reply(xid, nfs.encode_v3_read_res(b"\0" * size, reduced=True))
            yield c.s2c(SEND_ONLY_INV, rpcrdma.encode_v1(xid, 0, 128, writes=[[(handle, size, offset)]],
                                                         payload=res), ackreq=1, r_key=handle)
            yield c.c2s(ACK, psn=(c.s_psn - 1) & 0xFFFFFF, syndrome=0x1F, msn=c.s_msn)
        else:               # WRITE: data by RDMA READ from the client's Read chunk
            size = rnd.choice((4096, 8192, 16384))
            args = nfs.encode_v3_write_args(FH, xid * 4096, b"\0" * size, 2, reduced=True)
            call = onc_rpc.encode_call(xid, NFS_PROG, NFS_V3, WRITE, args, cred)
            pos = len(call)
            yield c.c2s(SEND_ONLY, rpcrdma.encode_v1(xid, 0, 128, reads=[(pos, handle, size, offset)],
                                                     payload=call), ackreq=1)
            yield c.s2c(ACK, psn=(c.c_psn - 1) & 0xFFFFFF, syndrome=0x1F, msn=c.c_msn)
            req_psn = c.s_psn
            n = len(_segments(size))
            yield c.s2c(READ_REQ, va=offset, r_key=handle, dma_length=size)
            c.s_psn = (req_psn + n) & 0xFFFFFF
            for i, seg in enumerate(_segments(size)):
                op = RESP_ONLY if n == 1 else RESP_FIRST if i == 0 else RESP_LAST if i == n - 1 else RESP_MIDDLE
                kw = {"syndrome": 0x1F, "msn": c.c_msn} if op in (RESP_FIRST, RESP_LAST, RESP_ONLY) else {}
                yield c.c2s(op, b"\x5a" * seg, psn=(req_psn + i) & 0xFFFFFF, **kw)
            c.tick(rnd.uniform(20, 60))
            res = onc_rpc.encode_reply(xid, b"\0" * 24 + bytes(8) + bytes.fromhex("0000100000000002") + bytes(8))
            yield c.s2c(SEND_ONLY, rpcrdma.encode_v1(xid, 0, 128, payload=res), ackreq=1)
            yield c.c2s(ACK, psn=(c.s_psn - 1) & 0xFFFFFF, syndrome=0x1F, msn=c.s_msn)


def build(path: str, frames: int, seed: int = 1) -> int:
    """Write ``frames`` frames of the workload to a pcap; returns the count written."""
    def take() -> Iterator[tuple[int, bytes]]:
        for i, item in enumerate(transactions(seed)):
            if i >= frames:
                return
            yield item

    write_pcap(path, take())
    return frames
