"""The NFS binding to RPC-over-RDMA checked (RFC 8267, RFC 8166 §3.4): only DDP-eligible items move by
RDMA, each where and as long as its operation says, and NFSv4.1 session slots are taken in order.

The transactions module tells this one of each call and reply (``TransactionObserver``).  The NFS facts
come from the dissector, read word by word on the summary path: ``RpcInfo.ddp`` (each DDP-eligible item,
its place and length, inline or reduced, and in a reply the Write chunk it took) and ``RpcInfo.nfs``
(each READ, WRITE, READLINK, READ_PLUS and SEQUENCE with the numbers the checks need).  What RDMA
moved is in the transaction's segments.

A call: each Read chunk but a Position Zero one stands at a DDP-eligible item's position and is exactly
as long as the item; an NFSv3 WRITE's count is its data's length; a READ's Write chunk offers at least
the count; an NFSv4 COMPOUND keeps within RFC 8267's chunk list complexity and gives READ_PLUS no Write
chunk; a SEQUENCE takes its slot in order.  A reply: each DDP-eligible result takes its Write chunk (the
n-th the n-th), which returns and receives exactly the item's bytes (no XDR padding: Linux's 4-byte
write-pad segment is no fault while nothing is written into it); a result comes inline only where its
chunk was empty; no Write chunk carries bytes no result takes; the server's RDMA READs took each Read
chunk whole; a READ returns no more than asked (a short one without eof is a note), a WRITE commits at
least as asked.  At the end, each session's slots are reported beside the connection's credits (RFC
8267 §4.5: they need not match).
"""
from __future__ import annotations

from ..dissectors.onc_rpc import DdpItem, NfsOp, RpcInfo
from ..dissectors.rpcrdma import RDMA_MSG, RDMA_MSGP, RDMA_NOMSG
from ..dissectors.rpcrdma_message import Segment as WireSegment
from ..packet import Packet
from ..typenames import Final, mypyc_attr
from .analyzer import Analyzer, Module, register
from .model import Direction, Rule, Transaction, TransactionState
from .rpcrdma_facts import ChunkList
from .rpcrdma_state import ConnState, OpenTransaction, Reporter, TransactionObserver
from .rules import declare
from .transactions import Transactions   # registered before this module: it tells this one of each message

NFS_PROG: Final = 100003

_DDP: Final = "RFC 8267 §3, §4.1 (the DDP-eligible items of NFS); RFC 8166 §3.4.2 (no other item is reduced)"
READ_CHUNK_NOT_DDP: Final = declare(
    "nfs.read_chunk_not_ddp", "error", "binding",
    "a Read chunk at position {position} ({length} bytes) holds no DDP-eligible item of the {proc} call", _DDP)
WRITE_CHUNK_NOT_DDP: Final = declare(
    "nfs.write_chunk_not_ddp", "error", "binding",
    "the {proc} reply puts {length} bytes in Write chunk {chunk}, which no DDP-eligible result takes", _DDP)
READ_CHUNK_POSITION: Final = declare(
    "nfs.read_chunk_position", "error", "binding",
    "a Read chunk at position {position}, the {item} of the {proc} call is at position {expected} (its length word "
    "stays inline)",
    "RFC 8166 §3.4.5 (a Read chunk's position is where its item's bytes stand in the XDR stream)")
READ_CHUNK_LENGTH: Final = declare(
    "nfs.read_chunk_length", "error", "binding",
    "the Read chunk at position {position} holds {chunk} bytes, the {item} of the {proc} call is {length} bytes",
    "RFC 8166 §3.4.5 (a Read chunk is as long as its item, without XDR padding)")
READ_CHUNK_MOVED: Final = declare(
    "nfs.read_chunk_moved", "error", "binding",
    "the server's RDMA READs took {moved} of the {length} bytes of the Read chunk at position {position} ({item}), "
    "and the {proc} reply says it succeeded",
    "RFC 8166 §3.4.5 (the responder pulls each Read chunk into the XDR stream)")
WRITE_CHUNK_SHORT: Final = declare(
    "nfs.write_chunk_short", "error", "binding",
    "Write chunk {chunk} offers {offered} bytes for a READ of {count}",
    "RFC 8166 §3.4.6 (a Write chunk can hold the largest result that can come back in it)")
WRITE_CHUNK_LENGTH: Final = declare(
    "nfs.write_chunk_length", "error", "binding",
    "the {proc} reply's Write chunk {chunk} gives {returned} bytes, its {item} is {length} bytes",
    "RFC 8166 §3.4.6 (a returned Write chunk is as long as its item)")
WRITE_CHUNK_MOVED: Final = declare(
    "nfs.write_chunk_moved", "error", "binding",
    "RDMA WRITEs put {moved} bytes in Write chunk {chunk}, the {item} of the {proc} reply is {length} bytes",
    "RFC 8166 §3.4.6 (the responder writes its item into the chunk, nothing more)")
WRITE_CHUNK_ROUNDUP: Final = declare(
    "nfs.write_chunk_roundup", "error", "binding",
    "{placed} bytes in Write chunk {chunk} ({how}) for a {length}-byte {item}: the XDR padding was written",
    "RFC 8166 §3.4.6 (a responder writes no XDR roundup padding into a Write chunk)")
INLINE_DESPITE_CHUNK: Final = declare(
    "nfs.inline_despite_write_chunk", "error", "binding",
    "the {item} of the {proc} reply ({length} bytes) came inline, though Write chunk {chunk} offered {offered} "
    "bytes for it",
    "RFC 8267 §4.3.1 (a READ with a non-empty Write chunk returns its data in it)")
READ_PLUS_CHUNK: Final = declare(
    "nfs.read_plus_write_chunk", "warning", "binding",
    "a COMPOUND with READ_PLUS provides {chunks} Write chunk(s) for {reads} READ or READLINK: no part of a "
    "READ_PLUS result is DDP-eligible",
    "RFC 8267 §4.1 (READ_PLUS is not among the DDP-eligible items)")
COMPLEXITY: Final = declare(
    "nfs.chunk_list_complexity", "warning", "binding",
    "an NFSv4 call with {reads} Read chunk(s) besides a Position Zero one and {writes} Write chunk(s): beyond "
    "one of each",
    "RFC 8267 §4.3.2 (chunk list complexity)")
WRITE_COUNT: Final = declare(
    "nfs.write_count", "error", "nfs",
    "WRITE count {count}, its data {length} bytes",
    "RFC 1813 §3.3.7 (count is the number of bytes of data)")
READ_COUNT: Final = declare(
    "nfs.read_count", "error", "nfs",
    "READ of {asked} bytes: the reply's count is {count}, its data {length} bytes",
    "RFC 1813 §3.3.6; RFC 8881 §18.22.3 (a READ returns its count of bytes, at most those asked for)")
SHORT_READ: Final = declare(
    "nfs.short_read", "note", "nfs",
    "READ of {asked} bytes at offset {offset} returned {length} without eof",
    "RFC 1813 §3.3.6; RFC 8881 §18.22.3 (fewer bytes than asked without end of file: the client reads again)")
WRITE_COMMITTED: Final = declare(
    "nfs.write_committed", "error", "nfs",
    "WRITE asked for {stable}, the reply says {committed}",
    "RFC 1813 §3.3.7; RFC 8881 §18.32.3 (the server commits at least as asked)")
SLOT_SEQUENCE: Final = declare(
    "nfs.slot_sequence", "error", "session",
    "slot {slot} of session {session}: sequence id {sequence} after {last} (a new request takes {expected}, a retry "
    "{last})",
    "RFC 8881 §2.10.6.1 (the slot's sequence id goes up by one for each new request)")
SLOT_REUSED: Final = declare(
    "nfs.slot_reused", "error", "session",
    "slot {slot} of session {session} taken by XID 0x{rxid:08x} (sequence id {sequence}) while XID 0x{busy:08x} "
    "(sequence id {last}) on it has no reply",
    "RFC 8881 §2.10.6.1 (a slot takes a new request only once the previous one is answered)")
SLOT_BEYOND: Final = declare(
    "nfs.slot_beyond_highest", "error", "session",
    "slot {slot} of session {session} is above the highest slot {highest} the server gave",
    "RFC 8881 §18.46.3 (slots above sr_highest_slotid are refused: NFS4ERR_BADSLOT)")
SESSION_SLOTS: Final = declare(
    "nfs.session_slots", "note", "session",
    "session {session}: the client used slots 0 to {used} (its highest_slotid up to {claimed}); the server's "
    "highest slot {highest}, its target {target}; {credits} RPC-over-RDMA credits granted",
    "RFC 8267 §4.5 (slots need not match credits); RFC 8881 §18.46.3")

STABLE_NAMES: Final = {0: "UNSTABLE", 1: "DATA_SYNC", 2: "FILE_SYNC"}
ITEM_NAMES: Final = {"write_data": "WRITE data", "symlink": "symlink target", "read_data": "READ data",
                     "readlink": "READLINK target"}
_CALL_ITEMS: Final = frozenset({"write_data", "symlink"})
_SEQ_MASK: Final = 0xFFFFFFFF
SESSIONS_KEPT: Final = 64             # sessions followed at once (a hostile capture can name any number)
SLOTS_KEPT: Final = 1024              # slots followed per session
SESSION_COST: Final = 512             # a session's state, charged to the memory budget
SLOT_COST: Final = 160                # a slot's


def _total(segs: list[WireSegment]) -> int:
    n = 0
    for s in segs:
        n += s.length
    return n


def _read_like(rpc: RpcInfo, op: int) -> bool:
    """An operation whose result is DDP-eligible: READ and READLINK (NFSv3 procedures 6 and 5, NFSv4 25, 27)."""
    if rpc.vers == 4:
        return op == 25 or op == 27
    return op == 6 or op == 5


def _what(rpc: RpcInfo) -> str:
    return f"{rpc.label or 'NFS'} {rpc.proc_name or rpc.proc}"


def _at(items: list[DdpItem], position: int) -> DdpItem | None:
    for d in items:
        if d.position == position:
            return d
    return None


def _positions(o: OpenTransaction) -> int:
    """The call's Read chunks other than a Position Zero one."""
    return len({pos for pos, _ in o.call_msg.read_chunks if pos})


def _item(d: DdpItem) -> str:
    name = ITEM_NAMES.get(d.kind)
    return name if name is not None else d.kind


@mypyc_attr(serializable=True, allow_interpreted_subclasses=True)
class SlotState:
    """The last request seen on a session slot."""

    __slots__ = ("sequence", "txn", "confirmed")

    def __init__(self, sequence: int, txn: Transaction) -> None:
        self.sequence = sequence
        self.txn = txn
        self.confirmed = False        # its SEQUENCE was answered NFS4_OK: the server took this sequence id


@mypyc_attr(serializable=True, allow_interpreted_subclasses=True)
class SessionState:
    """An NFSv4.1 session as its SEQUENCEs show it."""

    __slots__ = ("session", "slots", "used", "claimed", "highest", "target", "credits", "first", "last", "ts",
                 "conn")

    def __init__(self, session: str, frame: int, ts: int, conn: int) -> None:
        self.session = session        # the session id, in hexadecimal
        self.slots: dict[int, SlotState] = {}
        self.used = 0                 # the highest slot a request took
        self.claimed = 0              # the highest sa_highest_slotid
        self.highest: int | None = None     # the server's last sr_highest_slotid
        self.target: int | None = None      # and sr_target_highest_slotid
        self.credits: int | None = None     # the credits granted on the connection of its last reply
        self.first = frame
        self.last = frame
        self.ts = ts
        self.conn = conn


@mypyc_attr(serializable=True, allow_interpreted_subclasses=True)
class NfsBinding(Module):
    """The analysis module: NFS over each RPC-over-RDMA transaction, against RFC 8267 and RFC 8166 §3.4."""

    name = "NFSv4.1 sessions"

    def __init__(self, analyzer: Analyzer) -> None:
        self.an = analyzer
        self.held = 0
        self.budget = analyzer.budget
        self.budget.join(self)
        self.sessions: dict[bytes, SessionState] = {}
        tx = analyzer.modules.get("rpcrdma.transactions")
        if isinstance(tx, Transactions):
            tx.observers.append(_Hook(self))

    def shed(self, need: int) -> int:
        """Memory budget: forget the oldest sessions."""
        given = 0
        freed = 0
        while self.sessions and freed < need:
            key = next(iter(self.sessions))
            freed += self._forget(key)
            given += 1
        return given

    def _forget(self, key: bytes) -> int:
        ses = self.sessions.pop(key)
        cost = SESSION_COST + SLOT_COST * len(ses.slots)
        self.budget.release(self, cost)
        return cost

    # -- a call ------------------------------------------------------------------------------------------
    def called(self, rep: Reporter, st: ConnState, pkt: Packet, o: OpenTransaction) -> None:
        cm = o.call_msg
        rpc = cm.rpc if cm.rpc is not None else o.call_rpc
        if rpc is None or rpc.prog != NFS_PROG or rpc.msgtype != 0:
            return
        if cm.read_chunks:
            self._read_chunks(rep, st, pkt, o, rpc)
        ops = rpc.nfs
        writes = cm.writes
        if rpc.vers == 4 and (len(writes) > 1 or (cm.read_chunks and _positions(o) > 1)):
            rep.report(COMPLEXITY, pkt.frame.num, pkt.frame.ts, conn=st.conn_id, xid=o.txn.key, pkt=pkt,
                       reads=_positions(o), writes=len(writes))
        if ops is None:
            return
        reads = 0                         # READ and READLINK operations: each takes the next Write chunk
        read_plus = False
        for f in ops:
            op = f.op
            if _read_like(rpc, op):
                count = f.count
                if count is not None and reads < len(writes):
                    offered = _total(writes[reads])
                    if 0 < offered < count:       # (an empty chunk asks for the result inline)
                        rep.report(WRITE_CHUNK_SHORT, pkt.frame.num, pkt.frame.ts, conn=st.conn_id, xid=o.txn.key,
                                   pkt=pkt, chunk=reads, offered=offered, count=count)
                reads += 1
            elif op == 53:
                self._sequence(rep, st, pkt, o, f)
            elif op == 68 and rpc.vers == 4:
                read_plus = True
            elif op == 7 and rpc.vers == 3:
                d = f.ddp
                if d is not None and f.count is not None and f.count != d.length:
                    rep.report(WRITE_COUNT, pkt.frame.num, pkt.frame.ts, conn=st.conn_id, xid=o.txn.key, pkt=pkt,
                               count=f.count, length=d.length)
        if read_plus and len(writes) > reads:
            rep.report(READ_PLUS_CHUNK, pkt.frame.num, pkt.frame.ts, conn=st.conn_id, xid=o.txn.key, pkt=pkt,
                       chunks=len(writes), reads=reads)

    def _read_chunks(self, rep: Reporter, st: ConnState, pkt: Packet, o: OpenTransaction, rpc: RpcInfo) -> None:
        """Each Read chunk (but a Position Zero one, which holds the call itself) holds one DDP-eligible
        argument, at its position and as long."""
        cm = o.call_msg
        frame, ts, cid, xid = pkt.frame.num, pkt.frame.ts, st.conn_id, o.txn.key
        items = [d for d in rpc.ddp or () if d.kind in _CALL_ITEMS]
        stray: list[tuple[int, int]] = []
        positions: list[int] = []
        for pos, segs in cm.read_chunks:
            if not pos:
                continue
            positions.append(pos)
            total = _total(segs)
            d = _at(items, pos)
            if d is None:
                stray.append((pos, total))
            elif total != d.length:
                rep.report(READ_CHUNK_LENGTH, frame, ts, conn=cid, xid=xid, pkt=pkt, position=pos, chunk=total,
                           item=_item(d), proc=_what(rpc), length=d.length)
        if stray:
            # A chunk beside the item it should hold: the client counted the position otherwise.
            missing = [d for d in items if not d.inline and d.position not in positions]
            for i, (pos, total) in enumerate(stray):
                if i < len(missing):
                    d = missing[i]
                    rep.report(READ_CHUNK_POSITION, frame, ts, conn=cid, xid=xid, pkt=pkt, position=pos,
                               expected=d.position, item=_item(d), proc=_what(rpc))
                else:
                    rep.report(READ_CHUNK_NOT_DDP, frame, ts, conn=cid, xid=xid, pkt=pkt, position=pos, length=total,
                               proc=_what(rpc))

    def _sequence(self, rep: Reporter, st: ConnState, pkt: Packet, o: OpenTransaction, f: NfsOp) -> None:
        """A SEQUENCE: its slot's sequence id against the last request's, the slot against the server's highest."""
        raw = f.session
        if raw is None:
            return
        frame, ts, cid = pkt.frame.num, pkt.frame.ts, st.conn_id
        txn = o.txn
        ses = self.sessions.get(raw)
        if ses is None:
            if len(self.sessions) >= SESSIONS_KEPT:
                self._forget(next(iter(self.sessions)))
            ses = self.sessions[raw] = SessionState(raw.hex(), frame, ts, cid)
            self.budget.charge(self, SESSION_COST)
        ses.last = frame
        ses.conn = cid
        slot = f.slot
        seq = f.sequence
        if slot > ses.used:
            ses.used = slot
        if f.highest > ses.claimed:
            ses.claimed = f.highest
        highest = ses.highest
        if highest is not None and slot > highest:
            rep.report(SLOT_BEYOND, frame, ts, conn=cid, xid=txn.key, pkt=pkt, slot=slot, session=ses.session,
                       highest=highest)
        state = ses.slots.get(slot)
        if state is None:
            if len(ses.slots) < SLOTS_KEPT:
                ses.slots[slot] = SlotState(seq, txn)
                self.budget.charge(self, SLOT_COST)
            return
        last = state.sequence
        if seq == last:
            state.txn = txn               # the same request again (a retry, on this or another connection)
            return
        if seq == (last + 1) & _SEQ_MASK:
            busy = state.txn
            if busy.state is TransactionState.OPEN:
                rep.report(SLOT_REUSED, (frame, busy.request_frame), ts, conn=cid, xid=txn.key, pkt=pkt, slot=slot,
                           session=ses.session, rxid=txn.key, sequence=seq, busy=busy.key, last=last)
        elif state.confirmed:
            # (after a request the server did not take, or whose reply is not seen, any next id is believed)
            rep.report(SLOT_SEQUENCE, frame, ts, conn=cid, xid=txn.key, pkt=pkt, slot=slot, session=ses.session,
                       sequence=seq, last=last, expected=(last + 1) & _SEQ_MASK)
        state.sequence = seq
        state.txn = txn
        state.confirmed = False

    # -- a reply -----------------------------------------------------------------------------------------
    def answered(self, rep: Reporter, st: ConnState, pkt: Packet, o: OpenTransaction) -> None:
        rm = o.reply_msg
        cm = o.call_msg
        crpc = cm.rpc if cm.rpc is not None else o.call_rpc
        if rm is None or crpc is None or crpc.prog != NFS_PROG:
            return
        rrpc = None
        if rm.proc == RDMA_MSG or rm.proc == RDMA_NOMSG or rm.proc == RDMA_MSGP:
            # a reply through the Reply chunk is the one rebuilt from it, in this same packet
            rrpc = rm.rpc if rm.rpc is not None else rm.rebuilt_rpc
        if rrpc is not None and rrpc.accept_stat != 0:
            rrpc = None
        for f in crpc.nfs or ():
            if f.op == 53:
                self._sequence_answered(st, f, rrpc)
                break
        if rrpc is None:
            return
        frames = (pkt.frame.num, o.txn.request_frame)
        if rm.writes:
            self._write_chunks(rep, st, pkt, o, crpc, rrpc, frames)
        if cm.read_chunks and rrpc.nfs_status == 0:
            self._read_chunks_moved(rep, st, pkt, o, crpc, frames)
        if crpc.nfs is not None and rrpc.nfs is not None:
            self._results(rep, st, pkt, crpc, rrpc, frames)

    def _write_chunks(self, rep: Reporter, st: ConnState, pkt: Packet, o: OpenTransaction, crpc: RpcInfo,
                      rrpc: RpcInfo, frames: tuple[int, int]) -> None:
        """Each DDP-eligible result in its Write chunk, exactly; no bytes in a chunk no result takes."""
        cm = o.call_msg
        rm = o.reply_msg
        assert rm is not None
        txn = o.txn
        ts, cid, xid = pkt.frame.ts, st.conn_id, txn.key
        what = _what(crpc)
        writes = rm.writes
        taken: set[int] = set()
        for d in rrpc.ddp or ():
            ci = d.chunk
            if ci < 0 or ci >= len(writes):
                continue                  # no Write chunk for it: inline (more READs than chunks)
            taken.add(ci)
            n = d.length
            if d.inline:
                offered = _total(cm.writes[ci]) if ci < len(cm.writes) else 0
                if n > 0 and offered > 0:
                    rep.report(INLINE_DESPITE_CHUNK, frames, ts, conn=cid, xid=xid, pkt=pkt, item=_item(d),
                               proc=what, length=n, chunk=ci, offered=offered)
                continue
            returned = _total(writes[ci])
            if returned != n:
                self._placed(rep, pkt, frames, cid, xid, WRITE_CHUNK_LENGTH, "as the Write list says", returned, n,
                             ci, d, what)
                continue
            moved = _moved(txn, ci)
            if moved != n and not (_compared(txn, ci) and not _roundup(n, moved)):
                # (each segment's Write list length against what RDMA WRITE put is the transport's
                # chunk.write_length_mismatch: said once, there, unless it is this item's XDR padding)
                self._placed(rep, pkt, frames, cid, xid, WRITE_CHUNK_MOVED, "as RDMA WRITE put them", moved, n, ci,
                             d, what)
        for ci, c in enumerate(writes):
            if ci not in taken:
                returned = _total(c)
                if returned > 0:
                    rep.report(WRITE_CHUNK_NOT_DDP, frames, ts, conn=cid, xid=xid, pkt=pkt, proc=what, length=returned,
                               chunk=ci)

    def _placed(self, rep: Reporter, pkt: Packet, frames: tuple[int, int], cid: int, xid: int, rule: Rule,
                how: str, placed: int, n: int, ci: int, d: DdpItem, what: str) -> None:
        """Bytes in a Write chunk other than its item's: its XDR padding, or simply another length."""
        ts = pkt.frame.ts
        if _roundup(n, placed):
            rep.report(WRITE_CHUNK_ROUNDUP, frames, ts, conn=cid, xid=xid, pkt=pkt, placed=placed, chunk=ci, how=how,
                       length=n, item=_item(d))
        elif rule is WRITE_CHUNK_LENGTH:
            rep.report(WRITE_CHUNK_LENGTH, frames, ts, conn=cid, xid=xid, pkt=pkt, proc=what, chunk=ci,
                       returned=placed, item=_item(d), length=n)
        else:
            rep.report(WRITE_CHUNK_MOVED, frames, ts, conn=cid, xid=xid, pkt=pkt, moved=placed, chunk=ci,
                       item=_item(d), proc=what, length=n)

    def _read_chunks_moved(self, rep: Reporter, st: ConnState, pkt: Packet, o: OpenTransaction, crpc: RpcInfo,
                           frames: tuple[int, int]) -> None:
        """The reply says the call succeeded: the server took each argument's Read chunk whole."""
        items = [d for d in crpc.ddp or () if d.kind in _CALL_ITEMS and not d.inline]
        if not items:
            return
        txn = o.txn
        for pos, segs in o.call_msg.read_chunks:
            d = _at(items, pos) if pos else None
            if d is None:
                continue
            total = _total(segs)
            moved = 0
            for s in txn.segments:
                if s.kind is ChunkList.READ and s.chunk == pos:
                    moved += s.used
            if moved != total:
                rep.report(READ_CHUNK_MOVED, frames, pkt.frame.ts, conn=st.conn_id, xid=txn.key, pkt=pkt, moved=moved,
                           length=total, position=pos, item=_item(d), proc=_what(crpc))

    def _results(self, rep: Reporter, st: ConnState, pkt: Packet, crpc: RpcInfo, rrpc: RpcInfo,
                 frames: tuple[int, int]) -> None:
        """READs and WRITEs against what their calls asked for, the i-th of the reply against the i-th of the call."""
        asked_reads: list[NfsOp] = []
        asked_writes: list[NfsOp] = []
        v3 = crpc.vers == 3
        read_op = 6 if v3 else 25
        write_op = 7 if v3 else 38
        for f in crpc.nfs or ():
            if f.op == read_op:
                asked_reads.append(f)
            elif f.op == write_op:
                asked_writes.append(f)
        if not asked_reads and not asked_writes:
            return
        ts, cid, xid = pkt.frame.ts, st.conn_id, rrpc.xid
        ri = 0
        wi = 0
        for f in rrpc.nfs or ():
            if f.op == read_op:
                asked = asked_reads[ri] if ri < len(asked_reads) else None
                ri += 1
                d = f.ddp
                if asked is None or asked.count is None or f.status != 0 or d is None:
                    continue
                n = d.length
                count = f.count if v3 and f.count is not None else n
                if count != n or n > asked.count:
                    rep.report(READ_COUNT, frames, ts, conn=cid, xid=xid, pkt=pkt, asked=asked.count, count=count,
                               length=n)
                elif n < asked.count and not f.eof:
                    rep.report(SHORT_READ, frames, ts, conn=cid, xid=xid, pkt=pkt, asked=asked.count,
                               offset=asked.offset, length=n)
            elif f.op == write_op:
                asked = asked_writes[wi] if wi < len(asked_writes) else None
                wi += 1
                if asked is None or asked.stable is None or f.status != 0 or f.stable is None:
                    continue
                if f.stable < asked.stable:
                    rep.report(WRITE_COMMITTED, frames, ts, conn=cid, xid=xid, pkt=pkt,
                               stable=STABLE_NAMES.get(asked.stable, str(asked.stable)),
                               committed=STABLE_NAMES.get(f.stable, str(f.stable)))

    def _sequence_answered(self, st: ConnState, f: NfsOp, rrpc: RpcInfo | None) -> None:
        """The reply to a SEQUENCE: whether the server took the slot's sequence id, its highest and target slots."""
        raw = f.session
        ses = self.sessions.get(raw) if raw is not None else None
        if ses is None:
            return
        led = st.ledgers.get(Direction.C2S)
        if led is not None and led.granted is not None:
            ses.credits = led.granted
        if rrpc is None:
            return
        for r in rrpc.nfs or ():
            if r.op != 53:
                continue
            if r.status == 0:
                state = ses.slots.get(f.slot)
                if state is not None and state.sequence == f.sequence:
                    state.confirmed = True
                ses.highest = r.highest
                ses.target = r.target
            return

    def finish(self) -> None:
        """Each session's slots beside the credits its connection granted."""
        for ses in self.sessions.values():
            frames = (ses.first,) if ses.first == ses.last else (ses.first, ses.last)
            self.an.report(SESSION_SLOTS, frames, ses.ts, ses.conn, None, None,
                           session=ses.session, used=ses.used, claimed=ses.claimed,
                           highest="?" if ses.highest is None else ses.highest,
                           target="?" if ses.target is None else ses.target,
                           credits="?" if ses.credits is None else ses.credits)


def _roundup(n: int, placed: int) -> bool:
    """``placed`` is the ``n``-byte item with its XDR padding."""
    return n % 4 != 0 and placed == (n + 3) & ~3


def _compared(txn: Transaction, chunk: int) -> bool:
    """The transport compared every segment of Write chunk ``chunk`` with the reply's Write list."""
    seen = False
    for s in txn.segments:
        if s.kind is ChunkList.WRITE and s.chunk == chunk:
            if s.reported is None:
                return False
            seen = True
    return seen


def _moved(txn: Transaction, chunk: int) -> int:
    """The bytes RDMA WRITE put in Write chunk ``chunk`` (past its end too)."""
    n = 0
    for s in txn.segments:
        if s.kind is ChunkList.WRITE and s.chunk == chunk:
            n += s.used + s.overrun
    return n


@mypyc_attr(serializable=True, allow_interpreted_subclasses=True)
class _Hook(TransactionObserver):
    """What the transactions module calls: the binding module's checks."""

    def __init__(self, binding: NfsBinding) -> None:
        self.binding = binding

    def called(self, rep: Reporter, st: ConnState, pkt: Packet, o: OpenTransaction) -> None:
        self.binding.called(rep, st, pkt, o)

    def answered(self, rep: Reporter, st: ConnState, pkt: Packet, o: OpenTransaction) -> None:
        self.binding.answered(rep, st, pkt, o)


register("nfs.binding", NfsBinding)
