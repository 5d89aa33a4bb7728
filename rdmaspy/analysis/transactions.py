"""RPC-over-RDMA transactions: each call with its reply and everything in between.

Per connection, a call is matched to its reply by XID and by direction: a call from the client is
forward, a call from the server is backchannel, and its reply travels the other way.  Between them
stand the RDMA operations that moved the chunks: RDMA READs the responder issued against the call's
Read chunks, RDMA WRITEs into its Write chunks and Reply chunk, and, for a reply sent through a
responder-provided Read chunk (seeds/001), the requester's RDMA READs and its RDMA_DONE.  An RDMA
operation is tied to its transaction by the R_Key and address of the segment it touches
(chunks.ChunkBook).  Credits are followed per direction (credits.CreditLedger) and every message
is checked against the rules of rpcrdma_rules.

A transaction is open from its call until its reply (or, with a responder-provided Read chunk,
until the RDMA_DONE); then its record goes to the analyzer's sink as kind ``"transaction"`` and is
forgotten, so memory is bounded by the transactions in flight.  Packets that belong to a
transaction carry it as ``pkt.extra["rpcrdma.transaction"]`` (a ``Transaction``: ``latency_ns``,
``xid``, ``direction``, ``call_frame``, ``reply_frame``, ``steps``...).  At the end, calls without
a reply are reported and every connection's summary goes out as kind ``"rpcrdma.connection"``.
"""
from __future__ import annotations

from typing import Any

from ..packet import Packet
from . import chunks as ck
from . import credits as cr
from . import rpcrdma_rules as rr
from .analyzer import Analyzer, register
from .rules import declare

RETRANSMITTED = declare(
    "transaction.retransmitted_call", "note", "transaction",
    "call XID 0x{rxid:08x} sent again (first sent in frame {first})",
    "RFC 5531 §8 (a retransmitted call keeps its XID)")
REPLY_WITHOUT_CALL = declare(
    "transaction.reply_without_call", "warning", "transaction",
    "reply XID 0x{rxid:08x} matches no outstanding call",
    "RFC 5531 §8 (a reply carries the XID of its call)")
NO_REPLY = declare(
    "transaction.no_reply", "warning", "transaction",
    "call XID 0x{rxid:08x} has no reply in the capture",
    "RFC 5531 §8")

_MASK = 0xFFFFFF
_PENDING_LIMIT = 4096          # RDMA READ requests waiting for their responses, per connection
_OPEN_LIMIT = 65536            # open transactions per connection; beyond, the oldest is given up as unanswered
_V1_PROCS = {0: "RDMA_MSG", 1: "RDMA_NOMSG", 2: "RDMA_MSGP", 3: "RDMA_DONE", 4: "RDMA_ERROR"}
_V2_PROCS = {0: "RDMA2_MSG", 1: "RDMA2_NOMSG", 4: "RDMA2_ERROR", 5: "RDMA2_CONNPROP"}


def _other(d: str) -> str:
    return "s2c" if d == "c2s" else "c2s"


def _sender(d: str) -> str:
    return "client" if d == "c2s" else "server"


def _receiver(d: str) -> str:
    return "server" if d == "c2s" else "client"


def proc_name(msg: Any) -> str:
    names = _V2_PROCS if msg.version == 2 else _V1_PROCS
    return names.get(msg.proc, f"proc {msg.proc}")


class Op:
    """An RDMA READ or WRITE in progress."""

    __slots__ = ("txn", "seg", "side", "handle", "cursor", "step", "next_psn", "overrun", "sink_to", "kind")

    def __init__(self, txn: Any, seg: Any, side: str, handle: int, va: int, step: dict | None, kind: str) -> None:
        self.txn = txn
        self.seg = seg
        self.side = side
        self.handle = handle
        self.cursor = va
        self.step = step
        self.next_psn = 0
        self.overrun = False
        self.sink_to = 0
        self.kind = kind


class Transaction:
    """One RPC call and its reply on one connection."""

    __slots__ = ("conn_id", "xid", "call_dir", "call_msg", "reply_msg", "t_call", "t_reply", "call_frames",
                 "reply_frames", "steps", "segs", "retransmits", "rpc", "reply_rpc", "invalidated", "pulling",
                 "done_frame", "findings", "bytes_read", "bytes_written", "call_size", "reply_size")

    def __init__(self, conn_id: int, xid: int, call_dir: str, msg: Any, ts: int, frames: list[int]) -> None:
        self.conn_id = conn_id
        self.xid = xid
        self.call_dir = call_dir
        self.call_msg = msg
        self.reply_msg: Any = None
        self.t_call = ts
        self.t_reply: int | None = None
        self.call_frames = frames
        self.reply_frames: list[int] | None = None
        self.steps: list[dict[str, Any]] = []
        self.segs: list[ck.Seg] = []
        self.retransmits: list[list[int]] = []
        self.rpc = msg.rpc
        self.reply_rpc: Any = None
        self.invalidated: int | None = None
        self.pulling = False
        self.done_frame: int | None = None
        self.findings: list[Any] = []
        self.bytes_read = 0
        self.bytes_written = 0
        self.call_size = rr.message_size(msg)
        self.reply_size: int | None = None

    @property
    def direction(self) -> str:
        return "forward" if self.call_dir == "c2s" else "backchannel"

    @property
    def latency_ns(self) -> int | None:
        return None if self.t_reply is None else self.t_reply - self.t_call

    @property
    def call_frame(self) -> int:
        return self.call_frames[-1]

    @property
    def reply_frame(self) -> int | None:
        return self.reply_frames[-1] if self.reply_frames else None

    def seg_at(self, lst: str, chunk: int, index: int) -> ck.Seg | None:
        for s in self.segs:
            if s.list == lst and s.chunk == chunk and s.index == index:
                return s
        return None

    def record(self, state: str) -> dict[str, Any]:
        call = self.call_msg
        rpc = self.rpc
        lat = self.latency_ns
        rec: dict[str, Any] = {
            "xid": self.xid, "direction": self.direction, "version": call.version, "state": state,
            "call": {"frame": self.call_frame, "frames": list(self.call_frames), "ts": self.t_call,
                     "proc": proc_name(call), "shape": call.shape or None, "size": self.call_size,
                     "credits": _credit_value(call), "retransmissions": self.retransmits},
            "reply": None,
            "latency_ns": lat, "latency": None if lat is None else lat / 1e9,
            "rpc": _rpc_record(rpc, self.reply_rpc),
            "steps": self.steps,
            "chunks": [s.record() for s in self.segs],
            "bytes": {"call_inline": self.call_size, "reply_inline": self.reply_size,
                      "rdma_read": self.bytes_read, "rdma_write": self.bytes_written},
            "findings": [{"rule": f.rule_def.id, "severity": f.rule_def.severity, "frames": list(f.frames)}
                         for f in self.findings],
        }
        rep = self.reply_msg
        if rep is not None:
            rec["reply"] = {"frame": self.reply_frame, "frames": list(self.reply_frames or ()), "ts": self.t_reply,
                            "proc": proc_name(rep), "shape": rep.shape or None, "size": self.reply_size,
                            "credits": _credit_value(rep), "invalidated": self.invalidated,
                            "error": rep.errcode if rep.proc == 4 else None, "done_frame": self.done_frame}
        return rec


def _credit_value(msg: Any) -> int:
    return msg.granted if msg.version == 2 and msg.granted is not None else msg.credits


def _rpc_record(call: Any, reply: Any) -> dict[str, Any] | None:
    if call is None and reply is None:
        return None
    c = call if call is not None else reply
    r: dict[str, Any] = {"program": c.prog, "version": c.vers, "procedure": c.proc,
                         "name": c.proc_name, "label": c.label, "ops": c.ops}
    if reply is not None:
        r.update({"program": r["program"] if r["program"] is not None else reply.prog,
                  "name": r["name"] or reply.proc_name, "label": r["label"] or reply.label,
                  "reply_stat": reply.reply_stat, "accept_stat": reply.accept_stat, "nfs_status": reply.nfs_status,
                  "reply_ops": reply.ops})
    return r


class ConnState:
    """Everything followed on one connection."""

    __slots__ = ("conn", "conn_id", "open", "book", "ledgers", "reads_pending", "read_active", "write_active",
                 "iw_reads", "iw_writes", "version", "err_vers", "bad_htypes", "sent_htypes", "connprop_done",
                 "continuing", "v2_first_seen", "v2_recv", "rpcrdma", "orphan_ops", "orphan_bytes", "closed",
                 "unanswered", "emit", "messages", "discard", "broken", "connprops")

    def __init__(self, conn: Any, emit: Any) -> None:
        self.conn = conn
        self.conn_id = conn.conn_id
        self.open: dict[tuple[str, int], Transaction] = {}
        self.book = ck.ChunkBook()
        self.ledgers: dict[str, cr.CreditLedger] = {}
        self.reads_pending: dict[tuple[str, int], Op] = {}
        self.read_active: dict[str, Op] = {}
        self.write_active: dict[str, Op] = {}
        self.iw_reads: dict[tuple[str, int], Op] = {}
        self.iw_writes: dict[tuple[str, int], Op] = {}
        self.version: dict[str, int] = {}
        self.err_vers: tuple[int, int] | None = None
        self.bad_htypes: dict[str, set[int]] = {}
        self.sent_htypes: dict[tuple[str, int], int] = {}
        self.connprop_done: dict[str, bool] = {}
        self.continuing: dict[str, tuple[int, int]] = {}
        self.discard: dict[str, int] = {}       # direction -> XID of a broken continuation still to drop
        self.broken: set[int] = set()           # XIDs of broken continuations (their INVAL_CONT is expected)
        # (direction, XID) of RDMA2_CONNPROP messages not answered yet: a version 1 peer answers one
        # with RDMA_ERROR ERR_VERS (the v2 client then falls back), which is no reply to an RPC call.
        self.connprops: dict[tuple[str, int], int] = {}
        self.v2_first_seen = False
        self.v2_recv: dict[str, int] = {}
        self.rpcrdma = False
        self.orphan_ops = 0
        self.orphan_bytes = 0
        self.closed = 0
        self.unanswered = 0
        self.emit = emit
        self.messages = 0

    def ledger(self, d: str, version: int) -> cr.CreditLedger:
        """The credits of calls sent in direction ``d``."""
        led = self.ledgers.get(d)
        if led is None:
            # RFC 8166 §3.3.3 / draft-01 §4.2.3: one call until the server's first grant, where the start is seen.
            initial = 1 if d == "c2s" and self.conn.setup_known else None
            led = self.ledgers[d] = cr.CreditLedger(self.conn_id, "forward" if d == "c2s" else "backchannel",
                                                    self.emit, initial)
        return led

    def threshold(self, d: str, version: int) -> int | None:
        """The inline threshold of direction ``d``; None where it is not known (setup not captured)."""
        conn = self.conn
        if version == 2:
            recv = self.v2_recv.get(_other(d))
            return recv if recv else 4096          # draft-01 §4.2.2
        if version != 1 or not conn.setup_known:
            return None
        return conn.inline_c2s if d == "c2s" else conn.inline_s2c


class Transactions:
    """The analysis module: follows every RPC-over-RDMA connection of the capture."""

    def __init__(self, analyzer: Analyzer) -> None:
        self.an = analyzer
        self.conns: dict[int, ConnState] = {}
        self.cur: Transaction | None = None      # findings reported now also belong to this transaction
        self.transactions = 0

    # -- reporting -----------------------------------------------------------------------------------
    def report(self, rule: Any, frames: Any, ts: int, conn: int | None = None, xid: int | None = None,
               pkt: Packet | None = None, **args: Any) -> Any:
        f = self.an.report(rule, frames, ts, conn=conn, xid=xid, pkt=pkt, **args)
        if self.cur is not None:
            self.cur.findings.append(f)
        return f

    # -- per packet ----------------------------------------------------------------------------------
    def packet(self, pkt: Packet) -> None:
        conv = pkt.conv
        if conv is None:
            return
        ib = pkt.ib
        extra = pkt.extra
        if ib is not None:
            kind = ib.plan.kind
            if kind == "ack" or (kind not in ("send", "write", "read_request", "read_response") and not extra):
                return
        elif not extra:
            return
        st = self.conns.get(conv.conn_id)
        if st is None:
            st = self.conns[conv.conn_id] = ConnState(conv, self.an.emit)
        d = conv.direction(pkt)
        inv = None
        self.cur = None
        if ib is not None:
            if kind == "send":
                inv = ib.ieth
            elif st.rpcrdma:
                if kind == "write":
                    self._ib_write(st, pkt, ib, d)
                elif kind == "read_request":
                    self._ib_read_request(st, pkt, ib, d)
                elif kind == "read_response":
                    self._ib_read_response(st, pkt, ib, d)
        elif extra:
            iws = extra.get("iwarp")
            if iws:
                # In stream order: a segment may carry RDMA Writes and several Sends, each Send its
                # own RPC-over-RDMA message (and its own invalidated STag).
                carried = False
                for iw in iws:
                    if iw.rpcrdma is not None:
                        carried = True
                        self._message(st, pkt, iw.rpcrdma, d, iw.inv_stag)
                    elif iw.inv_stag is not None:
                        inv = iw.inv_stag
                    elif st.rpcrdma:
                        self._iwarp_op(st, pkt, iw, d)
                if carried:
                    extra = {k: v for k, v in extra.items() if k != "rpcrdma"}
        if not extra:
            return
        msg = extra.get("rpcrdma")
        if msg is not None:
            self._message(st, pkt, msg, d, inv)
        rb = extra.get("rpcrdma.rebuilt")
        if rb is not None:
            txn = st.open.get((d, rb.xid)) if not rb.is_reply else st.open.get((_other(d), rb.xid))
            self.cur = txn
            rr.check_rebuilt(self, st, pkt, rb)
            if txn is not None:
                if rb.is_reply:
                    txn.reply_rpc = rb.rebuilt_rpc
                else:
                    txn.rpc = rb.rebuilt_rpc
                pkt.note("rpcrdma.transaction", txn)
        self.cur = None

    # -- messages ------------------------------------------------------------------------------------
    def _message(self, st: ConnState, pkt: Packet, msg: Any, d: str, inv: int | None) -> None:
        st.rpcrdma = True
        st.messages += 1
        v = msg.version
        proc = msg.proc
        flags = msg.flags or 0
        if v == 2:
            if proc == 4:
                kind = "reply"
            elif proc == 5:
                kind = "connprop"
            elif proc == 1 and not msg.has_chunks:
                kind = "refresh"
            elif flags & rr.F_MORE and proc == 0:
                kind = "part"
            elif msg.rpc is not None and msg.rpc.msgtype in (0, 1):
                kind = "reply" if msg.rpc.msgtype == 1 else "call"      # the RPC message says; the flag may lie
            else:
                kind = "reply" if flags & rr.F_RESPONSE else "call"
            dropped = st.discard.get(d)
            if dropped == msg.xid and kind != "part":
                # draft-01 §7.1.3: the rest of a broken continuation is discarded by its receiver.
                del st.discard[d]
                rr.note_versions(st, msg, d)
                return
        elif v == 1 and proc == 3:
            kind = "done"
        elif proc == 4 and v == 1:
            kind = "reply"
        else:
            isr = msg.is_reply
            if isr is None:
                isr = d == "s2c"
            kind = "reply" if isr else "call"
        ts = pkt.frame.ts
        frame = pkt.frame.num
        if v == 2 and msg.granted is not None:
            # Every version 2 message grants its peer credits for the messages the peer sends.
            led = st.ledger(_other(d), 2)
            if led.grant(ts, frame, msg.granted, msg.max_credits):
                self.report(cr.ZERO_GRANT, frame, ts, conn=st.conn_id, xid=msg.xid, pkt=pkt)
            if kind == "refresh":
                led.refreshes += 1
                self.report(cr.REFRESH, frame, ts, conn=st.conn_id, xid=msg.xid, pkt=pkt, granted=msg.granted,
                            max_outstanding=msg.max_credits)
        if kind == "connprop" and len(st.connprops) < 64:
            st.connprops[(d, msg.xid)] = frame
        if kind == "call":
            self._call(st, pkt, msg, d)
        elif kind == "reply":
            self._reply(st, pkt, msg, d, inv)
        elif kind == "done":
            self._done(st, pkt, msg, d)
        else:
            rr.check_message(self, st, pkt, msg, d, kind == "part" and bool(flags & rr.F_RESPONSE))

    def _call(self, st: ConnState, pkt: Packet, msg: Any, d: str) -> None:
        ts = pkt.frame.ts
        frame = pkt.frame.num
        xid = msg.xid
        frames = list(msg.continuation or msg.frames or [frame])
        key = (d, xid)
        old = st.open.get(key)
        if old is not None and old.reply_msg is None:
            old.retransmits.append(frames)
            self.cur = old
            self.report(RETRANSMITTED, frame, ts, conn=st.conn_id, xid=xid, pkt=pkt, rxid=xid, first=old.call_frame)
            pkt.note("rpcrdma.transaction", old)
            rr.check_message(self, st, pkt, msg, d, False)
            return
        if old is not None:
            # A new call with the XID of a reply still being pulled: its RDMA_DONE never came.
            self.cur = old
            self.report(rr.DONE_MISSING, old.reply_frame or old.call_frame, old.t_reply or old.t_call,
                        conn=st.conn_id, xid=xid, rxid=xid)
            self._close(st, old, "pull_incomplete")
        txn = Transaction(st.conn_id, xid, d, msg, ts, frames)
        st.open[key] = txn
        if len(st.open) > _OPEN_LIMIT:
            self._give_up(st, next(iter(st.open.values())))
            self.cur = txn
        self.transactions += 1
        self.cur = txn
        pkt.note("rpcrdma.transaction", txn)
        side = _sender(d)
        for pos, segs in msg.read_chunks:
            for i, s in enumerate(segs):
                self._advertise(st, txn, "read", pos, i, pos, s, side)
        for ci, chunk in enumerate(msg.writes):
            for i, s in enumerate(chunk):
                self._advertise(st, txn, "write", ci, i, None, s, side)
        if msg.reply is not None:
            for i, s in enumerate(msg.reply):
                self._advertise(st, txn, "reply", 0, i, None, s, side)
        txn.steps.append({"op": "send", "role": "call", "frames": frames, "ts": ts, "bytes": txn.call_size})
        led = st.ledger(d, msg.version)
        if led.call(ts, msg.credits if msg.version == 1 else None):
            if led.granted is None:
                self.report(cr.INITIAL_SINGLE, frame, ts, conn=st.conn_id, xid=xid, pkt=pkt,
                            outstanding=led.outstanding)
            else:
                self.report(cr.EXCEEDED, frame, ts, conn=st.conn_id, xid=xid, pkt=pkt, outstanding=led.outstanding,
                            granted=led.granted, direction=led.direction)
        rr.check_message(self, st, pkt, msg, d, False)

    def _advertise(self, st: ConnState, txn: Transaction, lst: str, chunk: int, index: int, position: int | None,
                   s: Any, side: str) -> None:
        seg = ck.Seg(txn, lst, chunk, index, position, s.handle, s.offset, s.length, side)
        txn.segs.append(seg)
        st.book.advertise(seg)

    def _reply(self, st: ConnState, pkt: Packet, msg: Any, d: str, inv: int | None) -> None:
        ts = pkt.frame.ts
        frame = pkt.frame.num
        xid = msg.xid
        cd = _other(d)
        if msg.version == 1:
            led = st.ledger(cd, 1)
            if led.grant(ts, frame, msg.credits):
                self.report(cr.ZERO_GRANT, frame, ts, conn=st.conn_id, xid=xid, pkt=pkt)
        txn = st.open.get((cd, xid))
        if txn is None and msg.version == 2 and msg.proc == 4 and msg.errcode == 5 and xid in st.broken:
            # RDMA2_ERR_INVAL_CONT answering a continuation its receiver dropped: no call to match.
            st.broken.discard(xid)
            rr.check_message(self, st, pkt, msg, d, True)
            return
        if txn is None and msg.proc == 4 and st.connprops.pop((cd, xid), None) is not None:
            # An error answering an RDMA2_CONNPROP: ERR_VERS from a version 1 peer, or an RDMA2_ERROR.
            self.cur = None
            rr.check_message(self, st, pkt, msg, d, True)
            return
        if txn is None or txn.reply_msg is not None:
            self.cur = None
            self.report(REPLY_WITHOUT_CALL, frame, ts, conn=st.conn_id, xid=xid, pkt=pkt, rxid=xid)
            rr.check_message(self, st, pkt, msg, d, True)
            return
        self.cur = txn
        pkt.note("rpcrdma.transaction", txn)
        frames = list(msg.continuation or msg.frames or [frame])
        txn.reply_msg = msg
        txn.t_reply = ts
        txn.reply_frames = frames
        txn.reply_size = rr.message_size(msg)
        if msg.rpc is not None:
            txn.reply_rpc = msg.rpc
        st.ledger(cd, msg.version).answered(ts)
        step: dict[str, Any] = {"op": "send", "role": "reply", "frames": frames, "ts": ts, "bytes": txn.reply_size}
        if inv is not None:
            step["invalidate"] = inv
            txn.invalidated = inv
        txn.steps.append(step)
        rr.check_message(self, st, pkt, msg, d, True)
        rr.check_reply(self, st, pkt, msg, txn)
        if inv is not None:
            rr.check_invalidate(self, st, pkt, msg, txn, inv)
        self._reported_lengths(st, pkt, msg, txn)
        if msg.proc in (1,) and any(pos == 0 for pos, _ in msg.read_chunks):
            # seeds/001: the requester pulls the reply by RDMA READ and then sends RDMA_DONE.
            side = _sender(d)
            for pos, segs in msg.read_chunks:
                for i, s in enumerate(segs):
                    self._advertise(st, txn, "responder_read", pos, i, pos, s, side)
            txn.pulling = True
            return
        self._close(st, txn, "complete")

    def _reported_lengths(self, st: ConnState, pkt: Packet, msg: Any, txn: Transaction) -> None:
        """The reply's Write list and Reply chunk lengths against the bytes RDMA WRITE put there."""
        if msg.proc not in (0, 1, 2):
            return
        frame, ts = pkt.frame.num, pkt.frame.ts
        for ci, chunk in enumerate(msg.writes):
            for si, s in enumerate(chunk):
                seg = txn.seg_at("write", ci, si)
                if seg is None or seg.handle != s.handle:
                    continue
                seg.reported = s.length
                used = seg.used + seg.overrun
                if used != s.length:
                    self.report(ck.WRITE_LENGTH, frame, ts, conn=st.conn_id, xid=msg.xid, pkt=pkt, chunk=ci,
                                segment=si, handle=s.handle, reported=s.length, written=used)
        if msg.reply:
            for si, s in enumerate(msg.reply):
                seg = txn.seg_at("reply", 0, si)
                if seg is None or seg.handle != s.handle:
                    continue
                seg.reported = s.length
                used = seg.used + seg.overrun
                if used != s.length:
                    self.report(ck.REPLY_LENGTH, frame, ts, conn=st.conn_id, xid=msg.xid, pkt=pkt, segment=si,
                                handle=s.handle, reported=s.length, written=used)

    def _done(self, st: ConnState, pkt: Packet, msg: Any, d: str) -> None:
        ts = pkt.frame.ts
        frame = pkt.frame.num
        txn = st.open.get((d, msg.xid))
        if txn is not None and txn.pulling:
            self.cur = txn
            pkt.note("rpcrdma.transaction", txn)
            txn.done_frame = frame
            txn.steps.append({"op": "done", "frames": [frame], "ts": ts})
            rr.check_message(self, st, pkt, msg, d, False)
            self._close(st, txn, "complete")
            return
        self.cur = None
        self.report(rr.DONE_UNEXPECTED, frame, ts, conn=st.conn_id, xid=msg.xid, pkt=pkt, rxid=msg.xid)
        rr.check_message(self, st, pkt, msg, d, False)

    def _close(self, st: ConnState, txn: Transaction, state: str) -> None:
        st.open.pop((txn.call_dir, txn.xid), None)
        for seg in txn.segs:
            st.book.withdraw(seg)
        st.closed += 1
        self.an.emit("transaction", {"conn": st.conn_id, **txn.record(state)})

    # -- RDMA operations -----------------------------------------------------------------------------
    def _start(self, st: ConnState, pkt: Packet, d: str, kind: str, handle: int, va: int, length: int) -> Op:
        """An RDMA operation from direction ``d`` on the receiver's memory (handle, va)."""
        side = _receiver(d)
        seg = st.book.owner(side, handle, va)
        frame = pkt.frame.num
        if seg is None:
            st.orphan_ops += 1
            self.cur = None
            self.report(ck.UNADVERTISED, frame, pkt.frame.ts, conn=st.conn_id, pkt=pkt,
                        op="READ" if kind == "read" else "WRITE", length=length, offset=va, handle=handle)
            return Op(None, None, side, handle, va, None, kind)
        txn = seg.txn
        step = {"op": kind, "frames": [frame], "ts": pkt.frame.ts, "handle": handle, "offset": va, "length": length,
                "bytes": 0, "chunk": {"list": seg.list, "chunk": seg.chunk, "segment": seg.index}}
        txn.steps.append(step)
        pkt.note("rpcrdma.transaction", txn)
        op = Op(txn, seg, side, handle, va, step, kind)
        hits, outside = st.book.cut(side, handle, va, length)
        for s, _a, _b in hits:
            s.ops += 1
        if kind == "read":
            # A READ is judged by the range it asks for; a WRITE by the bytes it moves (in _move).
            step["response_frames"] = []
            if outside:
                op.overrun = True
                seg.overrun += outside
                self.cur = txn
                self.report(ck.OVERRUN_RULES[seg.list], frame, pkt.frame.ts, conn=st.conn_id, xid=txn.xid, pkt=pkt,
                            length=length, offset=va, handle=handle, outside=outside)
        return op

    def _move(self, st: ConnState, pkt: Packet, op: Op, n: int, at: int | None = None) -> None:
        """``n`` bytes moved at the operation's cursor (or at ``at``)."""
        start = op.cursor if at is None else at
        op.cursor = start + n
        txn = op.txn
        if txn is None:
            st.orphan_bytes += n
            return
        step: dict[str, Any] = op.step    # type: ignore[assignment]  # set whenever txn is
        step["bytes"] += n
        if op.kind == "read":
            txn.bytes_read += n
        else:
            txn.bytes_written += n
        hits, outside = st.book.cut(op.side, op.handle, start, n)
        for s, a, b in hits:
            s.add(a, b)
        if outside and op.kind == "write":
            op.seg.overrun += outside
            if not op.overrun:
                op.overrun = True
                self.cur = txn
                self.report(ck.OVERRUN_RULES[op.seg.list], pkt.frame.num, pkt.frame.ts, conn=st.conn_id,
                            xid=txn.xid, pkt=pkt, length=step["length"], offset=step["offset"], handle=op.handle,
                            outside=outside)

    @staticmethod
    def _in_sequence(active: dict[str, Op], d: str, pos: str, psn: int, started: Op | None) -> Op | None:
        """The operation a First/Middle/Last/Only packet belongs to: ``started`` for a First or Only
        (a First stays active for what follows), else the active one if the PSN is its next."""
        if pos == "first" or pos == "only":
            if started is not None and pos == "first":
                started.next_psn = (psn + 1) & _MASK
                active[d] = started
            return started
        op = active.get(d)
        if op is None or psn != op.next_psn:
            return None
        op.next_psn = (psn + 1) & _MASK
        if pos == "last":
            del active[d]
        return op

    def _ib_write(self, st: ConnState, pkt: Packet, ib: Any, d: str) -> None:
        pos = ib.plan.pos
        started = None
        if pos == "first" or pos == "only":
            if ib.reth is None:
                return
            va, rkey, dlen = ib.reth
            started = self._start(st, pkt, d, "write", rkey, va, dlen)
        op = self._in_sequence(st.write_active, d, pos, ib.psn, started)
        if op is None:
            return
        if started is None and op.step is not None:
            op.step["frames"].append(pkt.frame.num)
            pkt.note("rpcrdma.transaction", op.txn)
        self._move(st, pkt, op, ib.payload_end - ib.payload_off)

    def _ib_read_request(self, st: ConnState, pkt: Packet, ib: Any, d: str) -> None:
        if ib.reth is None:
            return
        va, rkey, dlen = ib.reth
        op = self._start(st, pkt, d, "read", rkey, va, dlen)
        pending = st.reads_pending
        pending[(d, ib.psn)] = op
        if len(pending) > _PENDING_LIMIT:
            del pending[next(iter(pending))]

    def _ib_read_response(self, st: ConnState, pkt: Packet, ib: Any, d: str) -> None:
        pos = ib.plan.pos
        started = st.reads_pending.pop((_other(d), ib.psn), None) if pos == "first" or pos == "only" else None
        op = self._in_sequence(st.read_active, d, pos, ib.psn, started)
        if op is None:
            return
        if op.step is not None:
            op.step["response_frames"].append(pkt.frame.num)
            pkt.note("rpcrdma.transaction", op.txn)
        self._move(st, pkt, op, ib.payload_end - ib.payload_off)

    def _iwarp_op(self, st: ConnState, pkt: Packet, iw: Any, d: str) -> None:
        op_code = iw.opcode
        n = iw.payload_end - iw.payload_off
        if op_code == 0 and iw.stag is not None:          # RDMA Write: every DDP segment names its STag and TO
            key = (d, iw.stag)
            op = st.iw_writes.get(key)
            if op is None or op.cursor != iw.to:
                op = self._start(st, pkt, d, "write", iw.stag, iw.to, n)
                st.iw_writes[key] = op
                if len(st.iw_writes) > _PENDING_LIMIT:      # writes whose last segment never came
                    del st.iw_writes[next(iter(st.iw_writes))]
            elif op.step is not None:
                op.step["frames"].append(pkt.frame.num)
                op.step["length"] += n
                pkt.note("rpcrdma.transaction", op.txn)
            self._move(st, pkt, op, n, iw.to)
            if iw.last:
                st.iw_writes.pop(key, None)
        elif op_code == 1 and iw.read_request is not None:
            sink_stag, sink_to, size, src_stag, src_to = iw.read_request
            op = self._start(st, pkt, d, "read", src_stag, src_to, size)
            op.sink_to = sink_to
            st.iw_reads[(_other(d), sink_stag)] = op
            if len(st.iw_reads) > _PENDING_LIMIT:
                del st.iw_reads[next(iter(st.iw_reads))]
        elif op_code == 2 and iw.stag is not None:        # Read Response, tagged with the sink STag
            key = (d, iw.stag)
            op = st.iw_reads.get(key)
            if op is None:
                return
            if op.step is not None:
                op.step["response_frames"].append(pkt.frame.num)
                pkt.note("rpcrdma.transaction", op.txn)
            start = op.cursor if op.txn is None or op.step is None else op.step["offset"] + (iw.to - op.sink_to)
            self._move(st, pkt, op, n, start)
            if iw.last:
                del st.iw_reads[key]

    # -- end of capture ------------------------------------------------------------------------------
    def _give_up(self, st: ConnState, txn: Transaction) -> None:
        """Close a transaction still open: no reply (or no RDMA_DONE) came."""
        self.cur = txn
        last = txn.call_frame
        if txn.reply_msg is None:
            st.unanswered += 1
            self.report(NO_REPLY, last, txn.t_call, conn=st.conn_id, xid=txn.xid, rxid=txn.xid)
            self._close(st, txn, "unanswered")
        else:
            self.report(rr.DONE_MISSING, txn.reply_frame or last, txn.t_reply or txn.t_call,
                        conn=st.conn_id, xid=txn.xid, rxid=txn.xid)
            self._close(st, txn, "pull_incomplete")
        self.cur = None

    def finish(self) -> None:
        for st in self.conns.values():
            for txn in list(st.open.values()):
                self._give_up(st, txn)
            for led in st.ledgers.values():
                led.flush()
            if st.rpcrdma or st.messages:
                self.an.emit("rpcrdma.connection", {
                    "conn": st.conn_id, "messages": st.messages, "transactions": st.closed,
                    "unanswered": st.unanswered, "versions": sorted(set(st.version.values())),
                    "credits": [led.record() for _d, led in sorted(st.ledgers.items())],
                    "unadvertised_operations": st.orphan_ops, "unadvertised_bytes": st.orphan_bytes})


register("rpcrdma.transactions", Transactions)
