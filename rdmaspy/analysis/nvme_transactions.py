"""NVMe/RDMA's transactions: each command and its completion, paired by CID on its queue, and its data in the ledger.

The dissectors leave the command capsules (``nvme.commands``) and response capsules (``nvme.completions``) on the
packets; one RDMA connection is one NVMe queue.  A command opens a transaction (keyed by its CID) and advertises
its keyed SGL data blocks (R_Key, address, length) in the connection's data ledger: the controller's RDMA READs
(a write's data) and WRITEs (a read's) are cut against them by address range (analysis.correlation), so an SGL
split into several operations, a packet sent again or an iWARP tagged offset is accounted once and in place.
The completion closes the transaction.  What breaks the rules of the NVMe base and fabrics specifications and
of the RDMA transport binding is reported with the transaction: a command without completion (but the
Asynchronous Event Request, which stays outstanding by design), a completion for no outstanding command, a CID
used again while its command is outstanding (the dissector says it: the older command is closed unanswered
here), data moved other than the SGL describes, an error status, a Send
with Invalidate of a key the command did not advertise, an RDMA operation on memory no command advertised, a
completion before its data (an RDMA operation on the SGL of a command completed short of it), more commands
outstanding than the queue's size (Connect's SQSIZE + 1, or the CM's HSQSIZE + 1), the SQ head going backwards
(modulo that size), a Keep Alive later than the KATO of the admin queue's Connect.  The commands outstanding
against the queue's size are its credit series (credits.CreditLedger), as RPC-over-RDMA's credits are.
"""
from __future__ import annotations

from ..conversation import ENDED
from ..conversation import Connection as LiveConnection
from ..dissectors.infiniband import IBInfo
from ..dissectors.iwarp_ddp import IWARP, IWarpInfo
from ..dissectors.nvme import NVME_COMMANDS, NVME_COMPLETIONS, NvmeCommand, NvmeCompletion, command_name, status_text
from ..dissectors.nvme_rdma import NvmeRdmaCm
from ..packet import Packet
from ..typenames import Callable, Final, mypyc_attr
from .analyzer import Analyzer, register
from .correlation import Correlator, add_step
from .credits import CreditLedger
from .ledger import DataLedger, LedgerRules
from .model import (DIRECTION_OF, CallDirection, Direction, Message, Record, Segment, Step, StepKind, Transaction,
                    TransactionState, UlpSummary)
from .nvme_facts import PROTOCOL, SGL, SGL_LIST, NvmeFacts, nvme_of
from .rules import declare

EARLY_KEPT: Final = 64            # keys of commands completed before their data, per connection
TXN_COST: Final = 1024             # bytes charged to the memory budget per open command
CONN_COST: Final = 2048
ASYNC_EVENT_REQUEST: Final = 0x0C  # admin opcode: outstanding until an event, by design
CAPSULE: Final = 64                # bytes of a command capsule's SQE; a response capsule's CQE
CQE: Final = 16
BLOCK_COMMANDS: Final = frozenset((0x01, 0x02, 0x05))   # Write, Read, Compare: NLB blocks of data move
LBA_SIZES_KEPT: Final = 4096       # namespaces whose LBA size is known, across the capture
KEEP_ALIVE: Final = 0x18           # admin opcode
SQ_FLOW_DISABLED: Final = 0x04     # Connect's CATTR: the controller reports no SQ head

NO_COMPLETION: Final = declare(
    "nvme.no_completion", "warning", "transaction",
    "NVMe {command} CID 0x{cid:04x} on queue {qid} has no completion in the capture",
    "NVMe Base Specification 2.0 §3.3.1 (every command is completed by a completion queue entry)")
UNMATCHED: Final = declare(
    "nvme.completion_unmatched", "warning", "transaction",
    "NVMe completion for CID 0x{cid:04x} on queue {qid}, which no outstanding command has",
    "NVMe Base Specification 2.0 §4.6 (the CID names a command outstanding on the submission queue)")
DATA_LENGTH: Final = declare(
    "nvme.data_length", "error", "chunk",
    "NVMe {command} CID 0x{cid:04x}: RDMA {op} moved {moved} bytes, its SGL describes {described}",
    "NVMe over Fabrics 1.1 §7.3.2 (the controller transfers the data the keyed SGL data blocks describe)")
BLOCKS_LENGTH: Final = declare(
    "nvme.blocks_length", "error", "chunk",
    "NVMe {command} CID 0x{cid:04x}: {blocks} blocks of {lba_size} bytes are {expected} bytes, its {where} {length}",
    "NVM Command Set Specification 1.0 §3.2.3, §3.2.6 (NLB logical blocks of the namespace's formatted LBA size)")
ERROR_STATUS: Final = declare(
    "nvme.error_status", "warning", "transaction",
    "NVMe {command} CID 0x{cid:04x} completed with {status}",
    "NVMe Base Specification 2.0 §4.6.1.2 (status field)")
INVALIDATE_OTHER: Final = declare(
    "nvme.invalidate_other_key", "error", "chunk",
    "NVMe completion of CID 0x{cid:04x} invalidates R_Key 0x{handle:x}, which its command did not advertise for it",
    "NVMe over Fabrics 1.1 §7.3.3 (RDMA transport binding: Send with Invalidate of the command's keyed SGL)")
UNADVERTISED: Final = declare(
    "nvme.unadvertised", "error", "chunk",
    "RDMA {op} of {length} bytes at 0x{offset:x} with R_Key 0x{handle:x}, which no outstanding NVMe command "
    "advertised",
    "NVMe over Fabrics 1.1 §7.3.2 (the controller moves data only to and from the command's keyed SGL)")
AFTER_INVALIDATE: Final = declare(
    "nvme.after_invalidate", "error", "chunk",
    "RDMA {op} of {length} bytes at 0x{offset:x} with R_Key 0x{handle:x}, which frame {invalidated} invalidated",
    "NVMe over Fabrics 1.1 §7.3.3 (a key invalidated by the completion is no longer valid)")
OVERRUN: Final = declare(
    "nvme.sgl_overrun", "error", "chunk",
    "RDMA operation of {length} bytes at 0x{offset:x} (R_Key 0x{handle:x}) runs {outside} bytes past the keyed SGL "
    "data block",
    "NVMe over Fabrics 1.1 §7.3.2 (a keyed SGL data block bounds the transfer)")

QUEUE_OVERFLOW: Final = declare(
    "nvme.queue_overflow", "error", "credits",
    "NVMe {command} CID 0x{cid:04x} makes {outstanding} commands outstanding on queue {qid}, whose size is {size}",
    "NVMe over Fabrics 1.1 §3.3 (Connect: SQSIZE, the submission queue's size), §7.3 (RDMA transport binding: the "
    "CM REQ's HSQSIZE); NVMe Base Specification 2.0 "
    "§3.3.1 (a submission queue holds no more entries than its size)")
SQHD_BACKWARDS: Final = declare(
    "nvme.sqhd_backwards", "error", "transaction",
    "NVMe completion of CID 0x{cid:04x} on queue {qid}: SQ head {sqhd} after {previous}, {back} back on a queue of "
    "{size}",
    "NVMe Base Specification 2.0 §4.6 (SQ Head Pointer: the controller consumes entries in order, the head "
    "advancing modulo the queue's size)")
KEEP_ALIVE_LATE: Final = declare(
    "nvme.keep_alive_late", "warning", "session",
    "NVMe Keep Alive on queue 0 {gap} ms after the {since}, beyond the Keep Alive Timeout of {kato} ms",
    "NVMe Base Specification 2.0 §3.9 (the host sends Keep Alive within the KATO the Connect set); NVMe over "
    "Fabrics 1.1 §3.3 (Connect: KATO)")
COMPLETION_EARLY: Final = declare(
    "nvme.completion_before_data", "error", "chunk",
    "RDMA {op} of {length} bytes at 0x{offset:x} with R_Key 0x{handle:x} after frame {completed} completed its "
    "NVMe command (CID 0x{cid:04x}) with {missing} bytes of its SGL still to move",
    "NVMe over Fabrics 1.1 §7.3.2 (RDMA transport binding: the controller transfers the data before it sends the "
    "response capsule)")

LEDGER_RULES: Final = LedgerRules(UNADVERTISED, {SGL: OVERRUN, SGL_LIST: OVERRUN}, AFTER_INVALIDATE)


@mypyc_attr(serializable=True, allow_interpreted_subclasses=True)
class NvmeConnState(DataLedger):
    """One NVMe/RDMA connection (one queue): its data ledger and its commands outstanding by CID."""

    __slots__ = ("open", "messages", "closed", "unanswered", "cntlid", "early", "size", "over", "sqhd", "fetchable",
                 "kato_ns", "alive_ts", "alive_frame", "alive_kind", "depth")

    def __init__(self, conn_id: int, emit: Callable[[Record], None] | None) -> None:
        super().__init__(conn_id, LEDGER_RULES)
        # the queue's depth as a credit series: commands outstanding against the size the Connect set (its grant)
        self.depth = CreditLedger(conn_id, CallDirection.FORWARD, emit)
        self.open: dict[int, Transaction] = {}
        self.messages = 0
        self.closed = 0
        self.unanswered = 0
        self.cntlid: int | None = None      # the controller, once a Connect's completion named it
        # the keys of commands completed while their SGL still waited for data: by key: CID, completion's frame,
        # the bytes missing, reported yet
        self.early: dict[int, tuple[int, int, int, bool]] = {}
        self.size: int | None = None        # the queue's size (Connect's SQSIZE + 1, before it the CM's HSQSIZE + 1)
        self.over = False                   # more commands outstanding than the size (reported on the way up)
        self.sqhd: int | None = None        # the SQ head last reported (None: SQ flow control off, or not known)
        self.fetchable = 0                  # the most entries the controller can have consumed since
        self.kato_ns = 0                    # the admin queue's Keep Alive Timeout (0: none)
        self.alive_ts = 0                   # the Connect or the Keep Alive the next one is due after
        self.alive_frame = 0
        self.alive_kind = ""


def _access(cmd: NvmeCommand) -> StepKind | None:
    """The RDMA operation the controller moves the command's data with: bits 1:0 of the opcode (of the Fabrics
    type for a Fabrics command) say the transfer's direction."""
    code = cmd.fctype if cmd.fctype is not None else cmd.opcode
    way = code & 3
    if way == 1:
        return StepKind.RDMA_READ     # host to controller: the controller reads the host's memory
    if way == 2:
        return StepKind.RDMA_WRITE    # controller to host
    return None


@mypyc_attr(serializable=True, allow_interpreted_subclasses=True)
class NvmeTransactions(Correlator):
    """The analysis module: follows the commands of every NVMe/RDMA connection."""

    name = "open NVMe commands"

    def __init__(self, analyzer: Analyzer) -> None:
        super().__init__(analyzer)
        self.conns: dict[int, NvmeConnState] = {}
        # The last packet's connection and what conns holds for it (None: nothing), kept while conns keeps
        # its entries: most packets are on the connection of the one before (a look-up by the boxed id was
        # some 125 instructions a packet).  Forgotten when an entry goes (``_end``).
        self.last_id = -1
        self.last_st: NvmeConnState | None = None
        # the LBA size of each namespace an Identify Namespace showed, by (controller's address, controller, NSID)
        self.lba_sizes: dict[tuple, int] = {}
        self.budget.join(self)

    def shed(self, need: int) -> int:
        """Memory budget: give up the oldest outstanding commands as if the capture ended for them, then the
        connections with none (their summary given out as at the end)."""
        want = -(-need // TXN_COST)
        given = 0
        for st in self.conns.values():
            while st.open and given < want:
                self._unanswered(st, st.open[next(iter(st.open))])
                given += 1
        for conn_id in [c for c, st in self.conns.items() if not st.open]:
            if given >= want:
                break
            self._end(conn_id)
            given += 1
        return given

    def _end(self, conn_id: int) -> None:
        """A connection ended (or is given up): what is outstanding on it is unanswered, its summary goes out and
        its state goes (a capture of many short connections keeps only the live ones)."""
        st = self.conns.pop(conn_id, None)
        if st is None:
            return
        self.last_id = -1
        self.last_st = None
        for txn in list(st.open.values()):
            self._unanswered(st, txn)
        self._summarise(st)
        self.budget.release(self, CONN_COST)

    def _summarise(self, st: NvmeConnState) -> None:
        st.depth.flush()
        self.an.emit(UlpSummary(PROTOCOL, st.conn_id, st.messages, st.closed, st.unanswered, [], [st.depth.summary()],
                                st.orphan_ops, st.orphan_bytes))

    # -- per packet ----------------------------------------------------------------------------------
    def packet(self, pkt: Packet) -> None:
        self._packet(pkt)
        # a packet without notes (most) has no ended connections: no call for it
        ended = pkt.noted(ENDED) if pkt.extra is not None else None
        if ended:
            for conn in ended:
                self._end(conn.conn_id)

    def _packet(self, pkt: Packet) -> None:
        self.current = None
        conv: LiveConnection | None = pkt.conv
        if conv is None:
            return
        cmds = pkt.noted(NVME_COMMANDS)
        cqes = pkt.noted(NVME_COMPLETIONS)
        conn_id = conv.conn_id
        if conn_id == self.last_id:
            st = self.last_st
        else:
            st = self.last_st = self.conns.get(conn_id)
            self.last_id = conn_id
        if st is None:
            if not cmds and not cqes:
                return
            st = self.last_st = self.conns[conn_id] = NvmeConnState(conn_id, self.series_sink())
            self.budget.charge(self, CONN_COST)
        ib: IBInfo | None = pkt.ib
        tp = self.psn
        d = tp.pkt_direction if tp is not None and tp.pkt_direction_known else \
            DIRECTION_OF[conv.ib_direction(pkt, ib.destqp) if ib is not None else conv.direction(pkt)]
        self.cur = None
        if ib is not None:
            kind = ib.plan.kind
            if kind == "write" or kind == "read_request" or kind == "read_response":
                psn = self.psn
                again = psn is not None and psn.again
                reth = ib.reth
                if st.early and reth is not None and not again and self._late(st, pkt, reth[1], reth[0], reth[2],
                                                                              kind):
                    return
                self._ib_op(st, pkt, ib, kind, d, again)
        else:
            iws = pkt.noted(IWARP)
            if iws:
                for iw in iws:
                    if iw.opcode <= 2:
                        if st.early and self._iwarp_late(st, pkt, iw):
                            continue
                        self._iwarp_op(st, pkt, iw, d)
        if cmds:
            for cmd in cmds:
                if cmd.retransmission_of is None:
                    self._command(st, pkt, cmd, d)
        if cqes:
            for cqe in cqes:
                if cqe.retransmission_of is None:
                    self._completion(st, pkt, cqe, d)

    def _late(self, st: NvmeConnState, pkt: Packet, handle: int, va: int, n: int, kind: str) -> bool:
        """An RDMA operation on the memory of a command already completed before all its data moved: the
        completion came first (reported once per key; the operation and the rest of it are not the ledger's)."""
        got = st.early.get(handle)
        if got is None:
            return False
        cid, frame, missing, reported = got
        if not reported:
            st.early[handle] = (cid, frame, missing, True)
            self.report(COMPLETION_EARLY, pkt.frame.num, pkt.frame.ts, conn=st.conn_id, pkt=pkt,
                        op="WRITE" if kind == "write" else "READ", length=n, offset=va, handle=handle,
                        completed=frame, cid=cid, missing=missing)
        return True

    def _queue(self, st: NvmeConnState, pkt: Packet, cmd: NvmeCommand, txn: Transaction) -> None:
        """The queue's rules on a new command: its size (set by the Connect), the SQ head's room, keep-alive."""
        ts = pkt.frame.ts
        frame = pkt.frame.num
        conv: LiveConnection | None = pkt.conv
        if st.size is None and conv is not None:
            req = conv.ulp_client        # the CM REQ's private data: the host's send queue size, until a Connect
            if isinstance(req, NvmeRdmaCm) and req.hsqsize is not None:
                st.size = req.hsqsize + 1
                st.depth.grant(ts, frame, st.size)
        con = cmd.connect
        if con is not None:
            asked = con.sqsize + 1
            if asked != st.size:
                st.size = asked
                st.depth.grant(ts, frame, asked)
            st.sqhd = None if con.cattr & SQ_FLOW_DISABLED else 0     # a new queue's head is its first entry
            st.fetchable = 0
            if con.qid == 0 and con.kato:
                st.kato_ns = con.kato * 1_000_000
                st.alive_ts, st.alive_frame, st.alive_kind = ts, frame, "Connect"
        st.fetchable += 1
        st.depth.call(ts, frame, None)
        size = st.size
        if size is not None:
            n = len(st.open)
            if n > size and not st.over:
                self.report(QUEUE_OVERFLOW, frame, ts, conn=st.conn_id, pkt=pkt, command=command_name(cmd),
                            cid=cmd.cid, outstanding=n, qid=_qid(cmd.qid), size=size)
            st.over = n > size
        if st.kato_ns and cmd.opcode == KEEP_ALIVE and cmd.fctype is None:
            gap = ts - st.alive_ts
            if gap > st.kato_ns:
                self.report(KEEP_ALIVE_LATE, (st.alive_frame, frame), ts, conn=st.conn_id, pkt=pkt,
                            gap=gap // 1_000_000, since=st.alive_kind + (" (frame %d)" % st.alive_frame),
                            kato=st.kato_ns // 1_000_000)
            st.alive_ts, st.alive_frame, st.alive_kind = ts, frame, "previous Keep Alive"

    def _head(self, st: NvmeConnState, pkt: Packet, cqe: NvmeCompletion) -> None:
        """The completion's SQ head: it moves forward (modulo the queue's size) by no more entries than the
        host submitted that the controller had not yet consumed."""
        size = st.size
        last = st.sqhd
        if size is None or last is None or cqe.sqhd >= size:
            return
        ahead = (cqe.sqhd - last) % size
        if ahead > st.fetchable:
            self.report(SQHD_BACKWARDS, pkt.frame.num, pkt.frame.ts, conn=st.conn_id, pkt=pkt, cid=cqe.cid,
                        qid=_qid(cqe.qid), sqhd=cqe.sqhd, previous=last, back=(last - cqe.sqhd) % size, size=size)
            return             # the head stays where it was known: one step back is reported once
        st.sqhd = cqe.sqhd
        st.fetchable -= ahead

    def _iwarp_late(self, st: NvmeConnState, pkt: Packet, iw: IWarpInfo) -> bool:
        if iw.opcode == 0 and iw.stag is not None:                     # RDMA Write: each segment names its STag
            return self._late(st, pkt, iw.stag, iw.to or 0, iw.payload_end - iw.payload_off, "write")
        rr = iw.read_request
        if iw.opcode == 1 and rr is not None:                          # Read Request: the source STag
            return self._late(st, pkt, rr[3], rr[4], rr[2], "read_request")
        return False

    def _command(self, st: NvmeConnState, pkt: Packet, cmd: NvmeCommand, d: Direction) -> None:
        st.messages += 1
        ts = pkt.frame.ts
        old = st.open.get(cmd.cid)
        if old is not None:
            # the dissector reports the CID used again (nvme-rdma.cid_reused); the older command is given up
            self._close(st, old, TransactionState.UNANSWERED, pkt)
        sgl_bytes = 0
        for sgl in cmd.sgls:
            if sgl.keyed:
                sgl_bytes += sgl.length
        nlb = cmd.nlb + 1 if cmd.nlb is not None else None
        facts = NvmeFacts(cmd.qid, None, cmd.opcode, cmd.fctype, command_name(cmd), cmd.nsid, cmd.slba, nlb,
                          sgl_bytes, cmd.icd)
        frames = list(cmd.frames)
        txn = Transaction(PROTOCOL, st.conn_id, cmd.cid, d, Message(frames, ts, CAPSULE + cmd.icd), facts)
        txn.expected = sgl_bytes if sgl_bytes else None
        if nlb is not None and cmd.fctype is None and cmd.opcode in BLOCK_COMMANDS and cmd.qid:
            ns: tuple = (pkt.dst, st.cntlid, cmd.nsid)   # plain tuple: see docs/architecture.md
            lba = self.lba_sizes.get(ns)
            if lba is not None:
                facts.lba_size = lba
                txn.expected = nlb * lba
        self.budget.charge(self, TXN_COST)
        st.open[cmd.cid] = txn
        self._queue(st, pkt, cmd, txn)
        access = _access(cmd)
        listed = len(cmd.sgls) > 1
        index = 0
        for sgl in cmd.sgls:
            key = sgl.key
            if key is None or not sgl.keyed:
                continue
            if st.early:
                st.early.pop(key, None)      # the key is this command's now
            seg = Segment(SGL_LIST if listed else SGL, 0, index, None, key, sgl.address, sgl.length, d.sender, txn,
                          access=access, invalidate=sgl.invalidate)
            index += 1
            txn.segments.append(seg)
            st.book.advertise(seg)
        add_step(txn, Step(StepKind.REQUEST, frames, ts, CAPSULE + cmd.icd))
        self._belongs(txn)

    def _completion(self, st: NvmeConnState, pkt: Packet, cqe: NvmeCompletion, d: Direction) -> None:
        st.messages += 1
        ts = pkt.frame.ts
        frame = pkt.frame.num
        txn = st.open.get(cqe.cid)
        if txn is None:
            self.cur = None
            self.report(UNMATCHED, frame, ts, conn=st.conn_id, pkt=pkt, cid=cqe.cid, qid=_qid(cqe.qid))
            return
        self.cur = txn
        self._belongs(txn)
        self._head(st, pkt, cqe)
        facts = nvme_of(txn)
        status = (cqe.status >> 1) & 0x7FFF
        facts.status = status
        facts.sct = cqe.sct
        facts.sc = cqe.sc
        facts.dnr = cqe.dnr
        cmd = cqe.command
        if cmd is not None:
            facts.qid = cmd.qid if cmd.qid is not None else cqe.qid
            if cmd.lba_size is not None and cmd.nsid and status == 0:
                sizes = self.lba_sizes
                if len(sizes) >= LBA_SIZES_KEPT:
                    del sizes[next(iter(sizes))]
                sizes[(pkt.src, st.cntlid, cmd.nsid)] = cmd.lba_size
            if cmd.connect is not None and status == 0:
                st.cntlid = cqe.dw0 & 0xFFFF        # a Connect's completion names the controller
        facts.cntlid = st.cntlid
        txn.response = Message([frame], ts, CQE, invalidated=cqe.invalidated)
        add_step(txn, Step(StepKind.RESPONSE, [frame], ts, CQE, invalidated=cqe.invalidated))
        if cqe.sc != 0 or cqe.sct != 0:
            name = status_text(cqe)
            facts.status_name = name
            self.report(ERROR_STATUS, frame, ts, conn=st.conn_id, pkt=pkt, command=facts.name, cid=cqe.cid,
                        status=name)
        inv = cqe.invalidated
        if inv is not None:
            side = d.receiver
            if not any(s.handle == inv for s in txn.segments):
                self.report(INVALIDATE_OTHER, frame, ts, conn=st.conn_id, pkt=pkt, cid=cqe.cid, handle=inv)
            st.book.invalidate(side, inv, frame)
        if facts.lba_size is not None and txn.expected is not None and cqe.sc == 0 and cqe.sct == 0:
            held, where = (facts.sgl_bytes, "SGL describes") if facts.sgl_bytes else (facts.in_capsule,
                                                                                   "capsule holds")
            if held != txn.expected and (facts.opcode != 0x02 or facts.sgl_bytes):
                self.report(BLOCKS_LENGTH, frame, ts, conn=st.conn_id, pkt=pkt, command=facts.name, cid=cqe.cid,
                            blocks=facts.nlb, lba_size=facts.lba_size, expected=txn.expected, where=where,
                            length=held)
        if facts.sgl_bytes and cqe.sc == 0 and cqe.sct == 0:
            moved = txn.bytes_read + txn.bytes_written
            if moved != facts.sgl_bytes:
                op = "READ" if any(s.access is StepKind.RDMA_READ for s in txn.segments) else "WRITE"
                self.report(DATA_LENGTH, frame, ts, conn=st.conn_id, pkt=pkt, command=facts.name, cid=cqe.cid,
                            op=op, moved=moved, described=facts.sgl_bytes)
            if moved < facts.sgl_bytes:
                self._completed_early(st, txn, frame)
        self._close(st, txn, TransactionState.COMPLETE, pkt)

    @staticmethod
    def _completed_early(st: NvmeConnState, txn: Transaction, frame: int) -> None:
        """The completion came while the ledger still expected bytes of the command: its keys are remembered
        so that the data coming after it is found as such."""
        early = st.early
        for seg in txn.segments:
            if seg.used < seg.length:
                early[seg.handle] = (txn.key, frame, seg.length - seg.used, False)
                if len(early) > EARLY_KEPT:
                    del early[next(iter(early))]

    def _close(self, st: NvmeConnState, txn: Transaction, state: TransactionState, at: Packet | None = None) -> None:
        cid = txn.key
        if st.open.get(cid) is txn:
            del st.open[cid]
            self.budget.release(self, TXN_COST)
            if at is not None:          # given up at the end (or for memory) it stays outstanding in the series
                st.depth.answered(at.frame.ts, at.frame.num)
        for seg in txn.segments:
            st.book.withdraw(seg)
        if state is TransactionState.COMPLETE:
            st.closed += 1
        else:
            st.unanswered += 1
        txn.state = state
        self.hand_on(txn)

    def _unanswered(self, st: NvmeConnState, txn: Transaction) -> None:
        facts = nvme_of(txn)
        self.cur = txn
        if not (facts.opcode == ASYNC_EVENT_REQUEST and facts.qid == 0 and facts.fctype is None):
            self.report(NO_COMPLETION, txn.request_frame, txn.request.ts, conn=st.conn_id, command=facts.name,
                        cid=txn.key, qid=_qid(facts.qid))
        self._close(st, txn, TransactionState.UNANSWERED)
        self.cur = None

    # -- end of capture ------------------------------------------------------------------------------
    def finish(self) -> None:
        self.current = None
        for st in self.conns.values():
            for txn in list(st.open.values()):
                self._unanswered(st, txn)
            self._summarise(st)


def _qid(qid: int | None) -> str:
    return "?" if qid is None else str(qid)


register("nvme.transactions", NvmeTransactions)
