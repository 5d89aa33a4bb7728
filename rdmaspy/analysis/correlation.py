"""Correlation: what every upper layer's transaction analysis shares.

An upper layer over RDMA pairs a request with its response by a key of its own (RPC-over-RDMA's XID,
NVMe's CID on its queue), and between them the responder moves the request's data with RDMA READ and
WRITE on memory the request advertised.  The modules that follow an upper layer's transactions
(analysis.transactions for RPC-over-RDMA, analysis.nvme_transactions for NVMe/RDMA) derive from
``Correlator``, which holds what does not depend on the upper layer:

- the findings reported while a transaction is at hand join it (``report``, ``cur``), and the
  transaction of the packet being analysed is known (``current``, for fields on the packet);
- the RDMA operations of a connection followed packet by packet (InfiniBand/RoCE READ requests and
  responses, WRITE First..Last, iWARP's tagged Writes, Read Requests and Responses), each tied to the
  transaction whose advertised segment it touches, cut against the data ledger by address range
  (analysis.ledger), its steps and bytes added to the transaction, the times of its first and last
  data kept; a packet the transport sent again is accounted once.

Each upper layer says how its messages open and close transactions, and by which rules (its
``LedgerRules``) the ledger's breaches are reported.
"""
from __future__ import annotations

from ..dissectors.infiniband import IBInfo
from ..dissectors.iwarp_ddp import IWarpInfo
from ..packet import Packet
from ..typenames import Callable, Final, mypyc_attr
from .analyzer import Analyzer, Module
from .ledger import DataLedger, Op
from .model import OTHER, Direction, Finding, Record, Rule, Step, StepKind, Transaction, TransactionState
from .transport import Transport   # registered before the modules that derive from this: its verdict comes first

_MASK: Final = 0xFFFFFF
_PENDING_LIMIT: Final = 4096          # RDMA READ requests waiting for their responses, per connection
_STALLED_LIMIT: Final = 64            # READs and WRITEs cut short by a lost packet, per connection
# What a transaction keeps at most of each list; past that they are counted in ``dropped``.
STEPS_KEPT: Final = 1024
FINDINGS_KEPT: Final = 16              # as many as resendings: each resending is one finding


def add_step(txn: Transaction, step: Step) -> None:
    if len(txn.steps) < STEPS_KEPT:
        txn.steps.append(step)
    else:
        txn.dropped += 1


@mypyc_attr(serializable=True, allow_interpreted_subclasses=True)
class Correlator(Module):
    """The base of an upper layer's transaction analysis (see the module's text)."""

    def __init__(self, analyzer: Analyzer) -> None:
        self.an = analyzer
        self.cur: Transaction | None = None      # findings reported now also belong to this transaction
        self.current: Transaction | None = None  # the transaction of the packet being analysed
        self.held = 0                            # bytes charged to the memory budget
        self.budget = analyzer.budget
        psn = analyzer.modules.get("ib.transport")
        self.psn: Transport | None = psn if isinstance(psn, Transport) else None

    # -- reporting -----------------------------------------------------------------------------------
    def report(self, rule: Rule, frames: tuple[int, ...] | int, ts: int, conn: int | None = None,
               xid: int | None = None, pkt: Packet | None = None, **args: object) -> Finding:
        return self.report_args(rule, frames, ts, conn, xid, pkt, args)

    def report_args(self, rule: Rule, frames: tuple[int, ...] | int, ts: int, conn: int | None,
                    xid: int | None, pkt: Packet | None, args: dict[str, object]) -> Finding:
        """``report`` with the rule's arguments as one dict: the rules call it through ``Reporter``, a generic
        call compiled, where keyword arguments cost a dict made by the call's parsing (some 5,000 instructions)."""
        f = self.an.report_args(rule, frames, ts, conn, xid, pkt, args)
        cur = self.cur
        if cur is not None:
            if len(cur.findings) < FINDINGS_KEPT:
                cur.findings.append(f)
            else:
                cur.dropped += 1
        return f

    def hand_on(self, txn: Transaction) -> None:
        """Hand a closed transaction to the sinks.  When none keeps it, its segments stop pointing back at it:
        that cycle kept it (its steps, messages, facts: some 13 objects) alive until the young collection,
        which walked it as garbage (half the objects it walked in ``stats``); its reference counts free it now."""
        self.an.emit(txn)
        if not self.an.transactions_kept:
            for seg in txn.segments:
                seg.transaction = None

    def series_sink(self) -> Callable[[Record], None] | None:
        """Where a connection's credit series go: the analyzer's records, or nowhere (None) when no sink reads
        them (``wants_credit_series = False``: ``stats`` reads the ledgers' summaries; ``expert`` no record)."""
        an = self.an
        return an.emit if an.credit_series else None

    def _belongs(self, txn: Transaction | None) -> None:
        """The packet being analysed is part of ``txn``."""
        if txn is not None:
            self.current = txn

    # -- RDMA operations -----------------------------------------------------------------------------
    def _start(self, st: DataLedger, pkt: Packet, d: Direction, kind: StepKind, handle: int, va: int,
               length: int) -> Op:
        """An RDMA operation from direction ``d`` on the receiver's memory (handle, va)."""
        side = d.receiver
        book = st.book
        seg = book.owner(side, handle, va)
        frame = pkt.frame.num
        if seg is None or seg.transaction is None:
            st.orphan_ops += 1
            self.cur = None
            rules = st.rules
            op_name = "READ" if kind is StepKind.RDMA_READ else "WRITE"
            gone = book.invalidated_in(side, handle) if rules.after_invalidate is not None else None
            if gone is not None and rules.after_invalidate is not None:
                self.report(rules.after_invalidate, (frame, gone), pkt.frame.ts, conn=st.conn_id, pkt=pkt,
                            op=op_name, length=length, offset=va, handle=handle, invalidated=gone)
            else:
                self.report(rules.unadvertised, frame, pkt.frame.ts, conn=st.conn_id, pkt=pkt, op=op_name,
                            length=length, offset=va, handle=handle)
            return Op(None, None, None, kind, handle, va, side)
        txn = seg.transaction
        reading = kind is StepKind.RDMA_READ
        step = Step(kind, [frame], pkt.frame.ts, 0, handle, va, length, seg, [] if reading else None)
        add_step(txn, step)
        self._belongs(txn)
        op = Op(txn, seg, step, kind, handle, va, side)
        outside = book.touched(side, handle, va, length)
        if reading and outside:
            # A READ is judged by the range it asks for; a WRITE by the bytes it moves (in _move).
            op.overrun = True
            seg.overrun += outside
            self.cur = txn
            self.report(st.rules.overrun[seg.kind], frame, pkt.frame.ts, conn=st.conn_id, xid=self.xid_of(txn),
                        pkt=pkt, length=length, offset=va, handle=handle, outside=outside)
        return op

    def xid_of(self, txn: Transaction) -> int | None:
        """The XID a finding about ``txn`` carries (an upper layer other than RPC's has none)."""
        return None

    def _move(self, st: DataLedger, pkt: Packet, op: Op, n: int, at: int | None = None) -> None:
        """``n`` bytes moved at the operation's cursor (or at ``at``)."""
        start = op.cursor if at is None else at
        op.cursor = start + n
        txn = op.txn
        step = op.step
        seg = op.seg
        if txn is None or step is None or seg is None:
            st.orphan_bytes += n
            return
        step.bytes = (step.bytes or 0) + n
        if op.kind is StepKind.RDMA_READ:
            txn.bytes_read += n
        else:
            txn.bytes_written += n
        ts = pkt.frame.ts
        if txn.data_first is None:
            txn.data_first = ts
        txn.data_last = ts
        frame = pkt.frame.num
        outside = st.book.moved(op.side, op.handle, start, n, frame)
        if outside and op.kind is StepKind.RDMA_WRITE:
            seg.overrun += outside
            if not op.overrun:
                op.overrun = True
                self.cur = txn
                self.report(st.rules.overrun[seg.kind], frame, ts, conn=st.conn_id, xid=self.xid_of(txn), pkt=pkt,
                            length=step.length, offset=step.offset, handle=op.handle, outside=outside)

    @staticmethod
    def _in_sequence(st: DataLedger, active: dict[Direction, Op], d: Direction, pos: str, psn: int,
                     started: Op | None) -> Op | None:
        """The operation a First/Middle/Last/Only packet belongs to: ``started`` for a First or Only
        (a First stays active for what follows), else the active one if the PSN is its next, else
        one that a lost packet cut short and that waits for this PSN (sent again, go-back-N)."""
        if pos == "first" or pos == "only":
            if started is None:
                return None       # a copy, or an operation nobody follows: the active one goes on
            cut = active.get(d)
            if cut is not None:
                del active[d]
                # the active operation's Last was not seen: it waits for its packets to be sent again
                Correlator._stall(st, d, cut)
            if pos == "first":
                started.next_psn = (psn + 1) & _MASK
                active[d] = started
            return started
        op = active.get(d)
        if op is not None and psn == op.next_psn:
            op.next_psn = (psn + 1) & _MASK
            if pos == "last":
                del active[d]
        else:
            stalled = st.stalled          # mostly empty: then no key made, no generic call of pop (compiled)
            op = stalled.pop((d, StepKind.RDMA_WRITE if active is st.write_active else StepKind.RDMA_READ, psn),
                             None) if stalled else None
            if op is None:
                return None
            op.next_psn = (psn + 1) & _MASK
            if pos != "last":
                Correlator._stall(st, d, op)
        txn = op.txn
        if txn is not None and txn.state is not TransactionState.OPEN:
            return None           # sent again after its transaction closed: no part of it any more
        return op

    @staticmethod
    def _stall(st: DataLedger, d: Direction, op: Op) -> None:
        stalled = st.stalled
        stalled[(d, op.kind, op.next_psn)] = op
        if len(stalled) > _STALLED_LIMIT:
            del stalled[next(iter(stalled))]

    def _ib_write(self, st: DataLedger, pkt: Packet, ib: IBInfo, d: Direction, again: bool) -> None:
        """A WRITE packet; one sent ``again`` starts nothing (its Middle and Last fall out of sequence
        unless their first sending is missing)."""
        pos = ib.plan.pos
        started = None
        if pos == "first" or pos == "only":
            if ib.reth is None or again:
                return
            va, rkey, dlen = ib.reth
            started = self._start(st, pkt, d, StepKind.RDMA_WRITE, rkey, va, dlen)
        op = self._in_sequence(st, st.write_active, d, pos, ib.psn, started)
        if op is None:
            return
        if started is None and op.step is not None:
            op.step.frames.append(pkt.frame.num)
            self._belongs(op.txn)
        self._move(st, pkt, op, ib.payload_end - ib.payload_off)

    def _ib_read_request(self, st: DataLedger, pkt: Packet, ib: IBInfo, d: Direction) -> None:
        if ib.reth is None:
            return
        va, rkey, dlen = ib.reth
        op = self._start(st, pkt, d, StepKind.RDMA_READ, rkey, va, dlen)
        pending = st.reads_pending
        pending[(d, ib.psn)] = op
        if len(pending) > _PENDING_LIMIT:
            del pending[next(iter(pending))]

    def _ib_read_response(self, st: DataLedger, pkt: Packet, ib: IBInfo, d: Direction) -> None:
        pos = ib.plan.pos
        started = None
        if pos == "first" or pos == "only":
            key: tuple = (OTHER[d], ib.psn)
            started = st.reads_pending.get(key)
            if started is not None:
                del st.reads_pending[key]
        op = self._in_sequence(st, st.read_active, d, pos, ib.psn, started)
        if op is None:
            return
        step = op.step
        if step is not None and step.response_frames is not None:
            step.response_frames.append(pkt.frame.num)
            self._belongs(op.txn)
        self._move(st, pkt, op, ib.payload_end - ib.payload_off)

    def _ib_op(self, st: DataLedger, pkt: Packet, ib: IBInfo, kind: str, d: Direction, again: bool) -> None:
        """An InfiniBand/RoCE packet of an RDMA operation (``kind`` its plan's: write, read request or
        response); a READ request sent ``again`` starts nothing."""
        if kind == "write":
            self._ib_write(st, pkt, ib, d, again)
        elif kind == "read_request":
            if not again:
                self._ib_read_request(st, pkt, ib, d)
        elif kind == "read_response":
            self._ib_read_response(st, pkt, ib, d)

    def _iwarp_op(self, st: DataLedger, pkt: Packet, iw: IWarpInfo, d: Direction) -> None:
        op_code = iw.opcode
        n = iw.payload_end - iw.payload_off
        if op_code == 0 and iw.stag is not None and iw.to is not None:   # RDMA Write: each DDP segment names STag, TO
            key: tuple = (d, iw.stag)
            op = st.iw_writes.get(key)
            if op is None or op.cursor != iw.to:
                op = self._start(st, pkt, d, StepKind.RDMA_WRITE, iw.stag, iw.to, n)
                st.iw_writes[key] = op
                if len(st.iw_writes) > _PENDING_LIMIT:      # writes whose last segment never came
                    del st.iw_writes[next(iter(st.iw_writes))]
            elif op.step is not None:
                op.step.frames.append(pkt.frame.num)
                op.step.length = (op.step.length or 0) + n
                self._belongs(op.txn)
            self._move(st, pkt, op, n, iw.to)
            if iw.last:
                st.iw_writes.pop(key, None)
        elif op_code == 1 and iw.read_request is not None:
            sink_stag, sink_to, size, src_stag, src_to = iw.read_request
            op = self._start(st, pkt, d, StepKind.RDMA_READ, src_stag, src_to, size)
            op.sink_to = sink_to
            st.iw_reads[(d.other, sink_stag)] = op
            if len(st.iw_reads) > _PENDING_LIMIT:
                del st.iw_reads[next(iter(st.iw_reads))]
        elif op_code == 2 and iw.stag is not None and iw.to is not None:   # Read Response, tagged with the sink STag
            key = (d, iw.stag)
            op = st.iw_reads.get(key)
            if op is None:
                return
            step = op.step
            if step is not None and step.response_frames is not None:
                step.response_frames.append(pkt.frame.num)
                self._belongs(op.txn)
            start = op.cursor if op.txn is None or step is None else (step.offset or 0) + (iw.to - op.sink_to)
            self._move(st, pkt, op, n, start)
            if iw.last:
                del st.iw_reads[key]
