"""Builders of NVMe/RDMA traffic for the tests, from the dissectors' own declarations: capsules (SQE, SGL
descriptors, CQE), the CM private data, and a RoCEv2 conversation of them (``Conversation``: a CM
exchange on port 4420 or none, SENDs, RDMA WRITEs and READ responses with their PSNs)."""
from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from cm_build import cm_mad, ip_cm_header, rep, req, sid  # noqa: E402
from rdmaspy import craft  # noqa: E402
from rdmaspy.dissectors import ib_cm, nvme, nvme_rdma  # noqa: E402
from rdmaspy.engine import Engine  # noqa: E402
from rdmaspy.packet import Frame, Packet  # noqa: E402

HOST, CTRL = "192.0.2.1", "192.0.2.2"
HOST_QP, CTRL_QP = 0x000111, 0x000222
SEND_ONLY, SEND_FIRST, SEND_MIDDLE, SEND_LAST, SEND_ONLY_INV = 0x04, 0x00, 0x01, 0x02, 0x17
WRITE_FIRST, WRITE_MIDDLE, WRITE_LAST, WRITE_ONLY = 0x06, 0x07, 0x08, 0x0A
READ_REQUEST, READ_RESPONSE_ONLY = 0x0C, 0x10


def keyed_sgl(address: int, length: int, key: int, invalidate: bool = True) -> bytes:
    return nvme.SGL_KEYED.encode({"sgl1.addr": address, "sgl1.len": length, "sgl1.key": key,
                                  "sgl.type": nvme.SGL_KEYED_TYPE, "sgl.subtype": 0xF if invalidate else 0})


def offset_sgl(offset: int, length: int, kind: int = nvme.SGL_DATA_TYPE) -> bytes:
    return nvme.SGL_UNKEYED.encode({"sgl1.addr": offset, "sgl1.len": length, "sgl.type": kind,
                                    "sgl.subtype": nvme.SUBTYPE_OFFSET})


def sqe(opcode: int, cid: int, nsid: int = 0, sgl: bytes = b"", dwords: tuple[int, ...] = (),
        psdt: int = 1) -> bytes:
    """A 64-byte SQE: opcode, CID, NSID, SGL1 and dwords 10.. as given (the rest zero)."""
    head = nvme.ADMIN_SQE.encode(opc=opcode, psdt=psdt, cid=cid, nsid=nsid)
    words = b"".join(w.to_bytes(4, "little") for w in dwords).ljust(24, b"\0")
    return head + (sgl or keyed_sgl(0, 0, 0, False)) + words


def fabrics(fctype: int, cid: int, sgl: bytes = b"", tail: bytes = b"") -> bytes:
    head = nvme.FABRICS_SQE.encode(opc=0x7F, rsvd=0x40, cid=cid, fctype=fctype) + bytes(19)
    return head + (sgl or keyed_sgl(0, 0, 0, False)) + tail.ljust(24, b"\0")


def connect(cid: int, qid: int, sqsize: int, sgl: bytes, kato: int = 0) -> bytes:
    return fabrics(nvme.FCTYPE_CONNECT, cid, sgl, nvme.CONNECT.encode(qid=qid, sqsize=sqsize, kato=kato))


def connect_data(subnqn: str, hostnqn: str, cntlid: int = 0xFFFF) -> bytes:
    from rdmaspy.dissectors import nvme_data
    return nvme_data.CONNECT_DATA.encode(hostid=bytes(range(16)), cntrlid=cntlid, subnqn=subnqn.encode(),
                                         hostnqn=hostnqn.encode())


def cqe(cid: int, sqid: int = 0, sqhd: int = 1, status: int = 0, dw0: int = 0, dw1: int = 0) -> bytes:
    return nvme.CQE.encode(dword0=dw0, dword1=dw1, sqhd=sqhd, sqid=sqid, cid=cid, status=status)


def status(sc: int, sct: int = 0, dnr: bool = False, more: bool = False) -> int:
    return sc << 1 | sct << 9 | int(more) << 14 | int(dnr) << 15


def cm_req_pdata(qid: int, hsqsize: int, hrqsize: int, cntlid: int = 0) -> bytes:
    return nvme_rdma.CM_REQ.encode(recfmt=0, qid=qid, hrqsize=hrqsize, hsqsize=hsqsize, cntlid=cntlid)


class Conversation:
    """One queue pair's traffic between the host and the controller, as frames and as dissected packets (one
    engine: the state across them is the capture's)."""

    def __init__(self, engine: Engine | None = None, host_qp: int = HOST_QP, ctrl_qp: int = CTRL_QP) -> None:
        self.engine = engine or Engine(strict=True)
        self.host_qp, self.ctrl_qp = host_qp, ctrl_qp
        self.host_psn, self.ctrl_psn = 1000, 5000
        self.frames: list[bytes] = []
        self.num = 0

    def _put(self, frame: bytes) -> Packet:
        self.frames.append(frame)
        self.num += 1
        return self.engine.dissect(Frame(self.num, 1_700_000_000_000_000_000 + self.num * 1000, 1, frame,
                                         len(frame)))

    def setup(self, port: int = 4420, qid: int = 0, hsqsize: int = 31, hrqsize: int = 32, crqsize: int = 32,
              reject: int | None = None, req_pdata: bytes | None = None) -> list[Packet]:
        """REQ/REP/RTU (or REQ/REJ) of an RDMA-CM connection to ``port`` with NVMe/RDMA private data."""
        mads = [cm_mad(0x10, req(0x1001, sid(port), self.host_qp, self.ctrl_psn, ip_cm_header(HOST, CTRL, 0x4242)
                                 + (req_pdata if req_pdata is not None else cm_req_pdata(qid, hsqsize, hrqsize)),
                                 src=HOST, dst=CTRL), 1)]
        if reject is not None:
            rej = ib_cm.REJ.encode(localcommid=0x2002, remotecommid=0x1001, msgrej=0, reason=28)
            mads.append(cm_mad(0x12, rej + nvme_rdma.CM_REJ.encode(recfmt=0, status=reject), 1))
        else:
            mads.append(cm_mad(0x13, rep(0x2002, 0x1001, self.ctrl_qp, self.host_psn,
                                         nvme_rdma.CM_REP.encode(recfmt=0, crqsize=crqsize)), 1))
            mads.append(cm_mad(0x14, ib_cm.RTU.encode(localcommid=0x1001, remotecommid=0x2002), 1))
        out = []
        for i, m in enumerate(mads):
            src, dst = (HOST, CTRL) if i != 1 else (CTRL, HOST)
            out.append(self._put(craft.rocev2_mad(m, src=src, dst=dst)))
        return out

    def host_send(self, payload: bytes, mtu: int = 4096) -> list[Packet]:
        """A command capsule from the host: SEND Only, or First..Last above ``mtu``."""
        return self._send(payload, HOST, CTRL, self.ctrl_qp, "host", mtu)

    def ctrl_send(self, payload: bytes, invalidate: int | None = None) -> Packet:
        """A response capsule from the controller, by Send with Invalidate when ``invalidate`` is a key."""
        if invalidate is None:
            return self._send(payload, CTRL, HOST, self.host_qp, "ctrl", 4096)[0]
        psn = self.ctrl_psn
        self.ctrl_psn += 1
        return self._put(craft.rocev2(SEND_ONLY_INV, self.host_qp, psn, payload, src=CTRL, dst=HOST,
                                      r_key=invalidate))

    def _send(self, payload: bytes, src: str, dst: str, qp: int, who: str, mtu: int) -> list[Packet]:
        pieces = [payload[i:i + mtu] for i in range(0, len(payload), mtu)] or [b""]
        out = []
        for i, piece in enumerate(pieces):
            op = SEND_ONLY if len(pieces) == 1 else SEND_FIRST if i == 0 else \
                SEND_LAST if i == len(pieces) - 1 else SEND_MIDDLE
            psn = self.host_psn if who == "host" else self.ctrl_psn
            out.append(self._put(craft.rocev2(op, qp, psn, piece, src=src, dst=dst, ackreq=1)))
            if who == "host":
                self.host_psn += 1
            else:
                self.ctrl_psn += 1
        return out

    def ctrl_write(self, address: int, key: int, data: bytes, mtu: int = 1024) -> list[Packet]:
        """The controller's RDMA WRITE of ``data`` into the host's buffer: First/Middle/Last or Only."""
        pieces = [data[i:i + mtu] for i in range(0, len(data), mtu)]
        out = []
        for i, piece in enumerate(pieces):
            if len(pieces) == 1:
                op, ext = WRITE_ONLY, {"va": address, "r_key": key, "dma_length": len(data)}
            elif i == 0:
                op, ext = WRITE_FIRST, {"va": address, "r_key": key, "dma_length": len(data)}
            else:
                op, ext = (WRITE_LAST if i == len(pieces) - 1 else WRITE_MIDDLE), {}
            out.append(self._put(craft.rocev2(op, self.host_qp, self.ctrl_psn, piece, src=CTRL, dst=HOST, **ext)))
            self.ctrl_psn += 1
        return out

    def ctrl_read(self, address: int, key: int, data: bytes) -> list[Packet]:
        """The controller's RDMA READ of the host's buffer and its one response (``data``, at most an MTU)."""
        psn = self.ctrl_psn
        self.ctrl_psn += 1
        out = [self._put(craft.rocev2(READ_REQUEST, self.host_qp, psn, b"", src=CTRL, dst=HOST, va=address,
                                      r_key=key, dma_length=len(data)))]
        out.append(self._put(craft.rocev2(READ_RESPONSE_ONLY, self.ctrl_qp, psn, data, src=HOST, dst=CTRL,
                                          syndrome=0x1F, msn=1)))
        return out
