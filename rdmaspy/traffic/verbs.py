"""The generator's control path through pyverbs, and the link the sessions run on.

pyverbs sets up everything slow: RDMA-CM (with RFC 8797 private data in the REQ and
the REP), the protection domain, one registered region, the RC queue pair and its
completion queues. The native module ``_hotpath`` then posts and polls on that QP.
Supports Debian's rdma-core 44 and rdma-core 59+ (whose enum modules were renamed).
"""
from __future__ import annotations

import ctypes
import importlib
import os
import struct
import time
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Iterator, Protocol, Sequence

from ..errors import RdmaspyError
from .protocol import PrivateData, ProtocolError, Segment
from .session import REGION_SLACK, Region

LAB_HINT = "run it in rdmaspy's lab (lab/run test), which boots a guest with SoftRoCE and soft-iWARP"

WC_STATUS = {0: "success", 1: "local length error", 2: "local QP operation error", 4: "local protection error",
             5: "work request flushed", 9: "remote invalid request", 10: "remote access error",
             11: "remote operation error", 12: "transport retry counter exceeded",
             13: "RNR retry counter exceeded"}


class NoRdma(RdmaspyError):
    """This machine cannot run the generator (no RDMA device, pyverbs or native path)."""


def _import_first(*names: str):
    for n in names:
        try:
            return importlib.import_module(n)
        except ImportError:
            continue
    raise ImportError(names[0])


def native_module():
    try:
        from . import _hotpath
    except ImportError:
        return None
    return _hotpath


def native_available() -> bool:
    return native_module() is not None


def rdma_devices() -> list[str]:
    try:
        return sorted(os.listdir("/sys/class/infiniband"))
    except OSError:
        return []


def require_rdma() -> None:
    """One line saying what is missing, or nothing."""
    if not rdma_devices():
        raise NoRdma(f"no RDMA device on this machine (/sys/class/infiniband is empty); {LAB_HINT}")
    if not native_available():
        raise NoRdma("rdmaspy was built without its native RDMA path (no libibverbs/librdmacm headers "
                     f"at install time); {LAB_HINT}")
    try:
        _pyverbs()
    except ImportError:
        raise NoRdma(f"pyverbs is not importable here (Debian: python3-pyverbs); {LAB_HINT}") from None


class _PV:
    """The pyverbs names the generator uses, from whichever rdma-core is installed."""

    def __init__(self) -> None:
        self.cmid = importlib.import_module("pyverbs.cmid")
        self.qp = importlib.import_module("pyverbs.qp")
        self.mr = importlib.import_module("pyverbs.mr")
        self.e = _import_first("pyverbs.libibverbs_enums", "pyverbs.enums")
        self.ce = _import_first("pyverbs.librdmacm_enums", "pyverbs.cm_enums")


_pv: _PV | None = None


def _pyverbs() -> _PV:
    global _pv
    if _pv is None:
        _pv = _PV()
    return _pv


@dataclass(frozen=True, slots=True)
class Layout:
    """How the one registered region is carved up."""
    recv_slots: int
    send_slots: int
    msg_size: int
    staging: int
    chunks: int

    @property
    def total(self) -> int:
        return (self.recv_slots + self.send_slots) * self.msg_size + self.staging + self.chunks


class VerbsLink:
    """A connected RC QP: Sends, Receives, RDMA Reads and Writes through the native module."""

    def __init__(self, cmid, pd, layout: Layout) -> None:
        pv = _pyverbs()
        hp = native_module()
        self.hp = hp
        self.cmid = cmid
        self.layout = layout
        access = (pv.e.IBV_ACCESS_LOCAL_WRITE | pv.e.IBV_ACCESS_REMOTE_READ | pv.e.IBV_ACCESS_REMOTE_WRITE)
        self.mr = pv.mr.MR(pd, layout.total, access)
        self.base = self.mr.buf
        self.lkey = self.mr.lkey
        self.rkey = self.mr.rkey
        self.view = memoryview((ctypes.c_char * layout.total).from_address(self.base)).cast("B")
        self.ep = hp.Endpoint(cmid, cmid.qpn)
        ms = layout.msg_size
        self.recv_base = self.base
        self.send_base = self.base + layout.recv_slots * ms
        self.stage_base = self.send_base + layout.send_slots * ms
        self.chunk_base = self.stage_base + layout.staging
        self._send_free = list(range(layout.send_slots))
        self._wr = 0
        self._regions: dict[int, Region] = {}
        self._chunk_used = 0
        self.posted = False
        self.counters = {"send": 0, "recv": 0, "write": 0, "read": 0}

    # -- receives

    def post_receives(self) -> None:
        ms = self.layout.msg_size
        for i in range(self.layout.recv_slots):
            self.ep.post_recv(i, self.recv_base + i * ms, ms, self.lkey)
        self.posted = True

    def recv(self, timeout: float = 0.0) -> bytes | None:
        """The next received message (its receive buffer is posted again), or None."""
        deadline = time.monotonic() + timeout
        while True:
            wcs = self.ep.poll_recv(1, 50 if timeout else 0)
            if wcs:
                break
            self._reap_sends()
            if time.monotonic() >= deadline:
                return None
        slot, status, _op, n = wcs[0]
        self._check(status, "receive")
        ms = self.layout.msg_size
        off = slot * ms
        data = bytes(self.view[off:off + n])
        self.ep.post_recv(slot, self.recv_base + off, ms, self.lkey)
        self.counters["recv"] += 1
        return data

    # -- sends and RDMA

    def _stage(self, data: bytes) -> tuple[int, int]:
        """Copy a message into a free send buffer (waiting for one); returns (slot, address)."""
        if len(data) > self.layout.msg_size:
            raise ProtocolError(f"a {len(data)}-byte Send exceeds the {self.layout.msg_size}-byte buffers")
        while not self._send_free:
            self._reap_sends(spin_ms=50)
        slot = self._send_free.pop()
        off = self.send_base - self.base + slot * self.layout.msg_size
        self.view[off:off + len(data)] = data
        return slot, self.base + off

    def send(self, data: bytes, invalidate: int = 0) -> None:
        slot, addr = self._stage(data)
        op = self.hp.OP_SEND_INV if invalidate else self.hp.OP_SEND
        self.ep.post(slot, op, addr, len(data), self.lkey, 0, 0, invalidate, True)
        self.counters["send"] += 1

    def send_many(self, msgs: Sequence[bytes]) -> None:
        """Several Sends in one chain: they leave back to back."""
        wrs = []
        for data in msgs:
            slot, addr = self._stage(data)
            wrs.append((slot, addr, len(data), self.lkey))
        self.ep.post_sends(wrs)
        self.counters["send"] += len(wrs)

    def write(self, segs: Sequence[Segment], data: bytes) -> None:
        if len(data) > self.layout.staging:
            raise ProtocolError(f"{len(data)} bytes exceed the {self.layout.staging}-byte staging area")
        so = self.stage_base - self.base
        self.view[so:so + len(data)] = data
        o = 0
        for i, s in enumerate(segs):
            last = i == len(segs) - 1
            self.ep.post(self._tag(), self.hp.OP_WRITE, self.stage_base + o, s.length, self.lkey,
                         s.offset, s.handle, 0, last)
            o += s.length
        # Wait for the last Write: the staging area is reused by the next operation.
        self._wait_tagged()
        self.counters["write"] += len(segs)

    def read(self, segs: Sequence[Segment]) -> bytes:
        total = sum(s.length for s in segs)
        if total > self.layout.staging:
            raise ProtocolError(f"{total} bytes exceed the {self.layout.staging}-byte staging area")
        o = 0
        for i, s in enumerate(segs):
            self.ep.post(self._tag(), self.hp.OP_READ, self.stage_base + o, s.length, self.lkey,
                         s.offset, s.handle, 0, i == len(segs) - 1)
            o += s.length
        self._wait_tagged()
        self.counters["read"] += len(segs)
        so = self.stage_base - self.base
        return bytes(self.view[so:so + total])

    def region(self, slot: int, size: int) -> Region:
        r = self._regions.get(slot)
        if r is not None and r.size >= size:
            return r
        need = size + REGION_SLACK
        if self._chunk_used + need > self.layout.chunks:
            raise ProtocolError("the registered chunk area is exhausted")
        off = self.chunk_base - self.base + self._chunk_used
        self._chunk_used += need
        r = Region(self.rkey, self.base + off, size, self.view[off:off + need])
        self._regions[slot] = r
        return r

    # -- completions

    _TAG = 1 << 40

    def _tag(self) -> int:
        self._wr += 1
        return self._TAG | self._wr

    def _wait_tagged(self) -> None:
        want = self._TAG | self._wr
        deadline = time.monotonic() + 30
        while True:
            for wr_id, status, _op, _n in self.ep.poll_send(16, 50):
                self._check(status, "RDMA operation" if wr_id & self._TAG else "send")
                if wr_id & self._TAG:
                    if wr_id == want:
                        return
                else:
                    self._send_free.append(wr_id)
            if time.monotonic() > deadline:
                raise ConnectionError("an RDMA operation did not complete in 30 s")

    def _reap_sends(self, spin_ms: int = 0) -> None:
        for wr_id, status, _op, _n in self.ep.poll_send(16, spin_ms):
            self._check(status, "send")
            if not wr_id & self._TAG:
                self._send_free.append(wr_id)

    def drain(self, timeout: float = 5.0) -> None:
        """Wait until every Send has completed (before disconnecting)."""
        deadline = time.monotonic() + timeout
        while len(self._send_free) < self.layout.send_slots and time.monotonic() < deadline:
            self._reap_sends(spin_ms=20)

    @staticmethod
    def _check(status: int, what: str) -> None:
        if status:
            raise ConnectionError(f"{what} completed with error: {WC_STATUS.get(status, status)}")


# ---------------------------------------------------------------- connections

class _Closable(Protocol):
    """What closing a connection needs of a pyverbs CMID (a listener's or a connection's)."""

    def disconnect(self) -> None: ...
    def close(self) -> None: ...


@dataclass(slots=True)
class Connection:
    cmid: _Closable
    link: VerbsLink
    local_pdata: PrivateData | None
    peer_pdata: PrivateData | None
    raw_peer_pdata: bytes
    listener: _Closable | None = None

    def close(self) -> None:
        try:
            self.link.drain()
            self.cmid.disconnect()
        except Exception:            # the peer may have gone first; closing is best effort
            pass
        self.cmid.close()
        if self.listener is not None:
            self.listener.close()


def _init_attr(layout: Layout):
    pv = _pyverbs()
    cap = pv.qp.QPCap(max_send_wr=layout.send_slots + 64, max_recv_wr=layout.recv_slots,
                      max_send_sge=1, max_recv_sge=1)
    return pv.qp.QPInitAttr(qp_type=pv.e.IBV_QPT_RC, cap=cap, sq_sig_all=0)


def _conn_param(pdata: bytes, data_len: int):
    pv = _pyverbs()
    # ConnParam drops private data unless it is built with data_len.
    param = pv.cmid.ConnParam(resources=8, depth=8, retry=7, rnr_retry=7, data_len=max(data_len, len(pdata)))
    if pdata:
        param.set_private_data(pdata)
    return param


def _post_early(link: VerbsLink) -> None:
    # Receives go up before the peer can send; on providers that refuse posting to a
    # QP not yet ready, they go up right after the connection is established.
    try:
        link.post_receives()
    except OSError:
        link.posted = False


def accept(addr: str, port: int, layout: Layout, pdata: PrivateData | None, on_listen=None) -> Connection:
    """Listen on addr:port and accept one RDMA-CM connection, answering with pdata in the REP."""
    pv = _pyverbs()
    ai = pv.cmid.AddrInfo(src=addr, src_service=str(port), port_space=pv.ce.RDMA_PS_TCP,
                          flags=pv.ce.RAI_PASSIVE)
    listener = pv.cmid.CMID(creator=ai, qp_init_attr=_init_attr(layout))
    listener.listen()
    if on_listen is not None:
        on_listen()
    conn = listener.get_request()
    pd = conn.pd if conn.pd is not None else listener.pd
    link = VerbsLink(conn, pd, layout)
    raw = link.ep.event_private_data()
    peer = PrivateData.find(raw)
    _post_early(link)
    conn.accept(_conn_param(pdata.encode() if pdata else b"", 0))
    if not link.posted:
        link.post_receives()
    return Connection(conn, link, pdata, peer, raw, listener)


def connect(src: str, dst: str, port: int, layout: Layout, pdata: PrivateData | None,
            retries: int = 8) -> Connection:
    """Connect from src to dst:port with pdata in the REQ; the REP's private data is kept."""
    pv = _pyverbs()
    last: Exception | None = None
    for attempt in range(retries):
        ai = pv.cmid.AddrInfo(src=src, dst=dst, dst_service=str(port), port_space=pv.ce.RDMA_PS_TCP)
        cmid = pv.cmid.CMID(creator=ai, qp_init_attr=_init_attr(layout))
        link = VerbsLink(cmid, cmid.pd, layout)
        _post_early(link)
        try:
            # RDMA_PS_TCP: 56 bytes of consumer private data in the REQ.
            cmid.connect(_conn_param(pdata.encode() if pdata else b"", 56 if pdata else 0))
        except Exception as exc:     # the server may not listen yet (CM REJ): try again
            last = exc
            link.mr.close()
            cmid.close()
            time.sleep(0.5 * (attempt + 1))
            continue
        if not link.posted:
            link.post_receives()
        raw = link.ep.event_private_data()
        return Connection(cmid, link, pdata, PrivateData.find(raw), raw)
    raise ConnectionError(f"could not connect to {dst}:{port}: {last}")


# ---------------------------------------------------------------- benchmark loops

# The one-sided operations of the benchmark, by name: the native module's opcodes.
BENCH_OPS = {"write": 2, "read": 3}


class PyverbsPair:
    """The benchmark's connection: a CQ and an RC QP made by pyverbs, connected through
    RDMA-CM's external-QP flow. ``run`` drives it with a Python loop of post_send/post_recv/
    CQ.poll (pure pyverbs); ``run_native`` runs the same loop on the same QP natively."""

    def __init__(self, cmid, ctx, pd, size: int, depth: int = 16) -> None:
        pv = _pyverbs()
        cq_mod = importlib.import_module("pyverbs.cq")
        wr = importlib.import_module("pyverbs.wr")
        self.pv, self.wr, self.cmid, self.size = pv, wr, cmid, size
        self.cq = cq_mod.CQ(ctx, 2 * depth + 2)
        cap = pv.qp.QPCap(max_send_wr=depth, max_recv_wr=depth, max_send_sge=1, max_recv_sge=1)
        self.qp = pv.qp.QP(pd, pv.qp.QPInitAttr(qp_type=pv.e.IBV_QPT_RC, scq=self.cq, rcq=self.cq, cap=cap,
                                                sq_sig_all=1))
        # The receive buffer is also the target of the peer's RDMA WRITEs and READs.
        self.smr = pv.mr.MR(pd, size, pv.e.IBV_ACCESS_LOCAL_WRITE)
        self.rmr = pv.mr.MR(pd, size, pv.e.IBV_ACCESS_LOCAL_WRITE | pv.e.IBV_ACCESS_REMOTE_WRITE
                            | pv.e.IBV_ACCESS_REMOTE_READ)
        self.smr.write(b"p" * size, size)
        self.recv_wr = wr.RecvWR(0, 1, [wr.SGE(self.rmr.buf, size, self.rmr.lkey)])
        self.send_wr = wr.SendWR(2, pv.e.IBV_WR_SEND, 1, sg=[wr.SGE(self.smr.buf, size, self.smr.lkey)])

    def to(self, state) -> None:
        attr, mask = self.cmid.init_qp_attr(state)
        self.qp.modify(attr, mask)

    def param(self):
        return self.pv.cmid.ConnParam(resources=1, depth=1, retry=7, rnr_retry=7, qp_num=self.qp.qp_num)

    def _wait(self) -> None:
        poll = self.cq.poll
        while True:
            n, wcs = poll()
            if n:
                if wcs[0].status:
                    raise ConnectionError(f"completion error {WC_STATUS.get(wcs[0].status, wcs[0].status)}")
                return

    def run_native(self, iters: int, initiator: bool, op: str = "send", depth: int = 1) -> tuple[float, int]:
        """The same loop on the same QP and CQ, in the native module."""
        ep = native_module().Endpoint(self.qp, self.qp.qp_num)
        if op != "send":
            return self._one_sided(iters, initiator, lambda raddr, rkey: ep.rdma_loop(
                iters, BENCH_OPS[op], self.smr.buf, self.size, self.smr.lkey, raddr, rkey, depth, 30.0,
                (os.cpu_count() or 1) < 2))
        with counted_by_callgrind():
            return ep.pingpong(iters, initiator, self.smr.buf, self.size, self.smr.lkey, self.rmr.buf,
                               self.size, self.rmr.lkey, 30.0, (os.cpu_count() or 1) < 2)

    # -- one-sided benchmarks: the requester learns the responder's buffer in a Send, drives
    #    its WRITEs or READs, and ends with a Send; the responder only waits for that end.

    _HELLO = struct.Struct("<QI")

    def _send_now(self, data: bytes) -> None:
        self.smr.write(data, len(data))
        swr = self.wr.SendWR(3, self.pv.e.IBV_WR_SEND, 1, sg=[self.wr.SGE(self.smr.buf, len(data), self.smr.lkey)])
        self.qp.post_send(swr)

    def _wait_quietly(self, timeout: float) -> None:
        """One completion, polled 100 times a second: the responder's wait costs no work per operation."""
        deadline = time.monotonic() + timeout
        while True:
            n, wcs = self.cq.poll()
            if n:
                if wcs[0].status:
                    raise ConnectionError(f"completion error {WC_STATUS.get(wcs[0].status, wcs[0].status)}")
                return
            if time.monotonic() > deadline:
                raise ConnectionError(f"no completion in {timeout:g} s")
            time.sleep(0.01)

    def _one_sided(self, iters: int, initiator: bool, loop) -> tuple[float, int]:
        if not initiator:
            self._wait_quietly(30)                  # the requester's hello
            self.qp.post_recv(self.recv_wr)
            self._send_now(self._HELLO.pack(self.rmr.buf, self.rmr.rkey))
            self._wait_quietly(30)                  # that Send
            t0 = time.perf_counter()
            with counted_by_callgrind():
                self._wait_quietly(600)             # the requester's end
            return time.perf_counter() - t0, iters
        self._send_now(b"hello")
        self._wait(); self._wait()                  # the hello, and the responder's buffer
        raddr, rkey = self._HELLO.unpack(self.rmr.read(self._HELLO.size, 0))
        self.qp.post_recv(self.recv_wr)
        with counted_by_callgrind():
            result = loop(raddr, rkey)
        self._send_now(b"end")
        self._wait()
        return result

    def run_rdma(self, iters: int, initiator: bool, op: str, depth: int = 1) -> tuple[float, int]:
        """The one-sided loop in pure pyverbs: a batch of depth WRITEs or READs, then its completions."""
        def loop(raddr: int, rkey: int) -> tuple[float, int]:
            wr, qp, poll = self.wr, self.qp, self.cq.poll
            opcode = self.pv.e.IBV_WR_RDMA_WRITE if op == "write" else self.pv.e.IBV_WR_RDMA_READ
            swr = wr.SendWR(4, opcode, 1, sg=[wr.SGE(self.smr.buf, self.size, self.smr.lkey)])
            swr.set_wr_rdma(rkey, raddr)
            t0 = time.perf_counter()
            done = 0
            while done < iters:
                batch = min(depth, iters - done)
                for _ in range(batch):
                    qp.post_send(swr)
                got = 0
                while got < batch:
                    n, wcs = poll(batch - got)
                    for wc in wcs:
                        if wc.status:
                            raise ConnectionError(f"completion error {WC_STATUS.get(wc.status, wc.status)}")
                    got += n
                done += batch
            return time.perf_counter() - t0, done
        return self._one_sided(iters, initiator, loop)

    def run(self, iters: int, initiator: bool) -> tuple[float, int]:
        qp, rwr, swr, wait = self.qp, self.recv_wr, self.send_wr, self._wait
        t0 = time.perf_counter()
        for _ in range(iters):
            if initiator:
                qp.post_send(swr)
                wait()                  # the Send
                wait()                  # the peer's Send
                qp.post_recv(rwr)
            else:
                wait()
                qp.post_recv(rwr)
                qp.post_send(swr)
                wait()
        return time.perf_counter() - t0, iters


@contextmanager
def counted_by_callgrind() -> Iterator[None]:
    """Under `valgrind --tool=callgrind --instr-atstart=no`, count the instructions of this block only
    (start-up and teardown excluded); elsewhere nothing happens."""
    hp = native_module()
    if hp is not None:
        hp.callgrind_loop(True)
    try:
        yield
    finally:
        if hp is not None:
            hp.callgrind_loop(False)


def run_bench(pair: PyverbsPair, mode: str, iters: int, initiator: bool, op: str = "send",
              depth: int = 1) -> tuple[float, int]:
    """The benchmark loop of mode (native or pyverbs) for op (send, write or read) on pair."""
    if mode == "native":
        return pair.run_native(iters, initiator, op, depth)
    if op == "send":
        with counted_by_callgrind():
            return pair.run(iters, initiator)
    return pair.run_rdma(iters, initiator, op, depth)


def pyverbs_bench_accept(addr: str, port: int, size: int, on_listen=None):
    pv = _pyverbs()
    ai = pv.cmid.AddrInfo(src=addr, src_service=str(port), port_space=pv.ce.RDMA_PS_TCP,
                          flags=pv.ce.RAI_PASSIVE)
    listener = pv.cmid.CMID(creator=ai)
    listener.listen()
    if on_listen is not None:
        on_listen()
    conn = listener.get_request()
    pair = PyverbsPair(conn, listener.context, listener.pd, size)
    for st in (pv.e.IBV_QPS_INIT, pv.e.IBV_QPS_RTR):
        pair.to(st)
    pair.qp.post_recv(pair.recv_wr)
    pair.to(pv.e.IBV_QPS_RTS)
    conn.accept(pair.param())
    return pair, listener


def pyverbs_bench_connect(src: str, dst: str, port: int, size: int, retries: int = 8):
    pv = _pyverbs()
    for attempt in range(retries):
        ai = pv.cmid.AddrInfo(src=src, dst=dst, dst_service=str(port), port_space=pv.ce.RDMA_PS_TCP)
        cmid = pv.cmid.CMID(creator=ai)
        pair = PyverbsPair(cmid, cmid.context, cmid.pd, size)
        pair.to(pv.e.IBV_QPS_INIT)
        pair.qp.post_recv(pair.recv_wr)
        try:
            cmid.connect(pair.param())
        except Exception:           # CM REJ: the server is not listening yet
            cmid.close()
            time.sleep(0.5 * (attempt + 1))
            continue
        pair.to(pv.e.IBV_QPS_RTR)
        pair.to(pv.e.IBV_QPS_RTS)
        cmid.establish()
        return pair
    raise ConnectionError(f"could not connect to {dst}:{port}")


def native_pingpong(link: VerbsLink, iters: int, size: int, initiator: bool) -> tuple[float, int]:
    ms = link.layout.msg_size
    link.view[link.send_base - link.base:link.send_base - link.base + size] = b"n" * size
    # On one CPU both ends share it: yield between polls rather than spin out the peer
    # (with more CPUs, yielding measured slower in the lab).
    return link.ep.pingpong(iters, initiator, link.send_base, size, link.lkey, link.recv_base, ms, link.lkey,
                            30.0, (os.cpu_count() or 1) < 2)
