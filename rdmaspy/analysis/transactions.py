"""RPC-over-RDMA transactions: each call with its reply and everything in between.

Per connection, a call is matched to its reply by XID and by direction: a call from the client is
forward, a call from the server is backchannel, and its reply travels the other way.  Between them
stand the RDMA operations that moved the chunks: RDMA READs the responder issued against the call's
Read chunks, RDMA WRITEs into its Write chunks and Reply chunk, and, for a reply sent through a
responder-provided Read chunk (seeds/001), the requester's RDMA READs and its RDMA_DONE.  An RDMA
operation is tied to its transaction by the R_Key and address of the segment it touches (the data
ledger, analysis.ledger, followed by analysis.correlation, which this module derives from).  Credits are
followed per direction (credits.CreditLedger) and every message is checked against the rules of
rpcrdma_rules (and of chunks for the segments).

A transaction is open from its call until its reply (or, with a responder-provided Read chunk,
until the RDMA_DONE); then its record goes to the analyzer's sink as kind ``"transaction"`` and is
forgotten, so memory is bounded by the transactions in flight.  The records are those of
``model``: a ``Transaction`` with its ``Step``s and ``Segment``s, its own facts an ``RpcRdmaFacts``.
``Transactions.current`` is the transaction the packet being analysed belongs to (the rpcrdma_fields
module turns it into fields).
At the end, calls without a reply are reported and every connection's ``UlpSummary`` goes out.
"""
from __future__ import annotations

from itertools import islice

from ..conversation import ENDED
from ..conversation import Connection as LiveConnection
from ..dissectors.infiniband import IBInfo
from ..dissectors.iwarp_ddp import IWARP
from ..dissectors.rpcrdma import PROCS as V1_PROCS
from ..dissectors.rpcrdma import (REBUILT, RPCRDMA, RDMA_DONE, RDMA_ERROR, RDMA_MSG, RDMA_MSGP, RDMA_NOMSG,
                                  RpcRdmaMessage)
from ..dissectors.rpcrdma2 import F_MORE, F_RESPONSE, HTYPE_CONNPROP
from ..dissectors.rpcrdma2 import HTYPES as V2_HTYPES
from ..packet import Packet
from ..typenames import Final, mypyc_attr
from . import chunks as ck
from . import credits as cr_rules
from . import rpcrdma_rules as rr
from .analyzer import Analyzer, register
from .correlation import FINDINGS_KEPT, Correlator, add_step
from .ledger import DataLedger
from .model import (DIRECTION_OF, Direction, Message, Segment, Side, Step, StepKind, Transaction, TransactionState,
                    UlpSummary)
from .rpcrdma_facts import PROTOCOL, ChunkList, RpcRdmaFacts, facts_of, rpc_summary, summarise
from .rpcrdma_state import ConnState, OpenTransaction, TransactionObserver
from .rules import declare
from .transport import Transport

RETRANSMITTED: Final = declare(
    "transaction.retransmitted_call", "note", "transaction",
    "call XID 0x{rxid:08x} sent again (first sent in frame {first})",
    "RFC 5531 §8 (a retransmitted call keeps its XID)")
REPLY_WITHOUT_CALL: Final = declare(
    "transaction.reply_without_call", "warning", "transaction",
    "reply XID 0x{rxid:08x} matches no outstanding call",
    "RFC 5531 §8 (a reply carries the XID of its call)")
NO_REPLY: Final = declare(
    "transaction.no_reply", "warning", "transaction",
    "call XID 0x{rxid:08x} has no reply in the capture",
    "RFC 5531 §8")
ANSWERED_AFTER_RECONNECT: Final = declare(
    "transaction.answered_after_reconnect", "note", "transaction",
    "call XID 0x{rxid:08x} was left unanswered on connection {conn1}: sent again on connection {conn2} "
    "(frame {call}) and answered there (frame {reply})",
    "RFC 5531 §8 (a call sent again keeps its XID, on whichever connection it goes)")
REPLY_OVERDUE: Final = declare(
    "transaction.reply_overdue", "warning", "transaction",
    "call XID 0x{rxid:08x} has no reply after {window} later calls on its connection: closed as unanswered",
    "RFC 8166 §3.3.1 (a requester has at most its credit grant of calls outstanding)")

_OPEN_LIMIT = 65536            # open transactions per connection; beyond, the oldest eighth is given up as unanswered
# A call still unanswered after this many later calls on its connection (many times any credit grant:
# their slots were long reused) is closed as unanswered, so that a long capture keeps no call for ever.
CALL_WINDOW: Final = 4096
_SWEEP_EVERY: Final = 64              # calls between two looks for overdue ones (the oldest are first in ``open``)
# What an open transaction keeps at most of its call's resendings (as many as findings: each resending is one);
# past that they are counted in ``dropped``.
RESENDINGS_KEPT: Final = FINDINGS_KEPT
_ERR_INVAL_CONT: Final = 5            # RDMA2_ERR_INVAL_CONT (draft-01 §7.1.3)
_APPLIED_LIMIT: Final = 4096          # frames remembered whose message was taken (as many as the PSN ring holds)
# messages held beyond a PSN the responder had not taken; beyond, the oldest is taken
_PROVISIONAL_LIMIT: Final = 64
# calls left unanswered on connections that ended, held until one is sent again on a new connection between
# the same hosts and answered there (or the end); beyond, the oldest is said unanswered
_LEFT_LIMIT: Final = 4096
# What an open transaction costs (the Transaction, its call message and dictionaries), charged to the
# memory budget while it is open: measured with tracemalloc over open NFS calls, rounded up.
TXN_COST: Final = 2048
HELD_COST: Final = 8192               # a packet held with its message until the responder shows whether it took it
CONN_COST: Final = 2048               # a connection's state (ledgers, chunk book, dictionaries), measured the same way


def _hosts(conv: LiveConnection) -> tuple[str, str]:
    """The two hosts of a connection, in order: the same pair whichever of them is taken for its client."""
    a, b = conv.client_addr, conv.server_addr
    return (a, b) if a <= b else (b, a)


def _caller(conv: LiveConnection, d: Direction) -> str:
    """The address of the host that sends calls the way ``d`` on a connection."""
    return conv.client_addr if d is Direction.C2S else conv.server_addr


def _left_key(conv: LiveConnection, d: Direction, xid: int) -> tuple:
    """(the lower host, the higher, the caller's address, XID): a plain tuple, the one object wherever it is
    looked up (compiled, a tuple of a fixed shape is made again, its XID boxed, at each use as a key)."""
    low, high = _hosts(conv)
    return (low, high, _caller(conv, d), xid)


def proc_name(msg: RpcRdmaMessage) -> str:
    names = V2_HTYPES if msg.version == 2 else V1_PROCS
    name = names.get(msg.proc)            # not .get(proc, f"..."): the default would be made at every call
    return name if name is not None else f"proc {msg.proc}"


def _credit_value(msg: RpcRdmaMessage) -> int:
    return msg.granted if msg.version == 2 and msg.granted is not None else msg.credits


@mypyc_attr(serializable=True, allow_interpreted_subclasses=True)
class RecentFrames:
    """The last ``limit`` frames added, first-added order: a set answers ``in``, a ring of them says which
    goes next.  A dict used as an ordered set, its first key deleted at each add once full, cost some 10,000
    instructions an add: ``next(iter())`` walks every hole the earlier deletions left at its start until
    the dict is rebuilt."""

    __slots__ = ("members", "ring", "at", "limit")

    def __init__(self, limit: int) -> None:
        self.members: set[int] = set()
        self.ring: list[int] = []     # in the order added; once full, ``at`` is the oldest
        self.at = 0
        self.limit = limit

    def add(self, frame: int) -> None:
        members = self.members
        if frame in members:
            return                    # kept where it was first added, as a dict keeps a key set again
        members.add(frame)
        ring = self.ring
        if len(ring) < self.limit:
            ring.append(frame)
            return
        at = self.at
        members.discard(ring[at])
        ring[at] = frame
        self.at = at + 1 if at + 1 < self.limit else 0

    def __contains__(self, frame: int) -> bool:
        return frame in self.members

    def __len__(self) -> int:
        return len(self.members)


@mypyc_attr(serializable=True, allow_interpreted_subclasses=True)
class Transactions(Correlator):
    """The analysis module: follows every RPC-over-RDMA connection of the capture."""

    name = "open RPC transactions (or idle RPC-over-RDMA connections)"

    def __init__(self, analyzer: Analyzer) -> None:
        super().__init__(analyzer)
        self.conns: dict[int, ConnState] = {}
        # The last packet's connection and its state, kept while conns keeps it: most packets are on the
        # connection of the one before (a look-up by the boxed id was some 110 instructions a packet).
        # Forgotten when an entry goes (``_end``, ``shed``).
        self.last_id = -1
        self.last_st: ConnState | None = None
        self.transactions = 0
        self.budget.join(self)
        # Frames whose RPC-over-RDMA message (or rebuilt message) was taken, and the copies of them
        # that were left alone: a later copy of one of these carries a message already accounted.
        self.applied = RecentFrames(_APPLIED_LIMIT)
        # Messages of request packets the responder dropped unless the capture missed what it took (beyond
        # the PSN it takes next), by (connection, requester, PSN): taken when it is seen to take that PSN
        # (or at the end), replaced by the copy sent again in sequence.
        self.provisional: dict[tuple[int, Direction, int], tuple[Packet, RpcRdmaMessage | None,
                                                                RpcRdmaMessage | None, int | None]] = {}
        # The calls not answered yet, open or left on connections that ended, by (hosts, the caller's address,
        # XID): a requester that lost its connection sends them again on a new one, where they are looked up
        # (one look-up per call, however many connections the hosts have).  By address, not by client and
        # server: a connection under way when the capture began has its roles guessed, and may have them
        # the other way round.  The entries are the open calls' own (charged where they are open or held).
        self.unanswered: dict[tuple, tuple[ConnState, OpenTransaction]] = {}
        # The calls left unanswered on connections that ended, by the same key, oldest first
        self.left: dict[tuple, tuple[ConnState, OpenTransaction]] = {}
        # Upper layers' rules told of each call and reply (analysis/nfs_binding.py adds itself)
        self.observers: list[TransactionObserver] = []

    def shed(self, need: int) -> int:
        """Memory budget: give up the oldest open transactions (of the busiest connections first)
        as if the capture ended for them."""
        want = -(-need // TXN_COST)
        given = 0
        while given < want and self.left:        # first the calls held since their connection ended
            self._left_unanswered(next(iter(self.left)))
            given += 1
        for st in sorted(self.conns.values(), key=lambda c: len(c.open), reverse=True):
            if given >= want:
                break
            oldest = list(islice(st.open.values(), want - given))
            for o in oldest:
                self._give_up(st, o)
            given += len(oldest)
        if given < want:
            # then connections without an open transaction, their summary given out as at the end
            for conn_id, st in list(self.conns.items()):
                if given >= want:
                    break
                if not st.open:
                    self._summarise(st)
                    del self.conns[conn_id]
                    self.last_id = -1
                    self.last_st = None
                    self.budget.release(self, CONN_COST)
                    given += 1
        return given

    def xid_of(self, txn: Transaction) -> int | None:
        return txn.key

    # -- per packet ----------------------------------------------------------------------------------
    def packet(self, pkt: Packet) -> None:
        self._packet(pkt)
        # a packet without notes (most) has no ended connections: no call for it
        ended = pkt.noted(ENDED) if pkt.extra is not None else None
        if ended:
            for conn in ended:
                self._end(conn.conn_id)

    def _end(self, conn_id: int) -> None:
        """A connection ended (its TCP connection closed): no packet can belong to it any more, so what
        is still open on it is given up as at the end of the capture, its summary goes out and its state
        goes (a capture of many short connections keeps only the live ones).  A call left unanswered is
        held until the requester sends it again on a new connection (or the end)."""
        for key in [k for k in self.provisional if k[0] == conn_id]:
            self._take_held(key)
        st = self.conns.pop(conn_id, None)
        if st is None:
            return
        self.last_id = -1
        self.last_st = None
        keep = self.cur
        for o in list(st.open.values()):
            if o.reply_msg is None and st.rpcrdma:
                self._leave(st, o)
            else:
                self._give_up(st, o)
        self.cur = keep
        self._summarise(st)
        self.budget.release(self, CONN_COST)

    def _leave(self, st: ConnState, o: OpenTransaction) -> None:
        """Hold a call left unanswered on a connection that ended (still charged to the budget)."""
        txn = o.txn
        del st.open[(txn.request_direction, txn.key)]
        st.unanswered += 1                  # unanswered there, whatever happens to it on another connection
        left = self.left
        left[_left_key(st.conn, txn.request_direction, txn.key)] = (st, o)
        if len(left) > _LEFT_LIMIT:
            self._left_unanswered(next(iter(left)))

    def _left_unanswered(self, key: tuple) -> None:
        """A call held since its connection ended, never answered elsewhere: unanswered."""
        st, o = self.left.pop(key)
        self.budget.release(self, TXN_COST)
        txn = o.txn
        keep = self.cur
        self.cur = txn
        self.report(NO_REPLY, txn.request_frame, txn.request.ts, conn=st.conn_id, xid=txn.key, rxid=txn.key)
        self._close(st, o, TransactionState.UNANSWERED)
        self.cur = keep

    def _sent_again(self, st: ConnState, o: OpenTransaction, key: tuple) -> None:
        """Note a new call among the unanswered ones of its hosts; if it is one left unanswered on a connection
        that was there before this one began, it is that call sent again after a reconnect."""
        unanswered = self.unanswered
        held = unanswered.get(key)
        if held is not None:
            there, earlier = held
            if there is not st and earlier.reply_msg is None and earlier.txn.request_frame < st.began:
                o.earlier = earlier
                o.earlier_st = there
        unanswered[key] = (st, o)
        o.calls_key = key

    def _answered_after_reconnect(self, st: ConnState, o: OpenTransaction, reply: int) -> None:
        """The call sent again after a reconnect is answered: the one left on the earlier connection closes,
        unanswered there, said once as a note (no ``transaction.no_reply``)."""
        earlier, there = o.earlier, o.earlier_st
        o.earlier = o.earlier_st = None
        if earlier is None or there is None:
            return
        txn = earlier.txn
        key: tuple = (txn.request_direction, txn.key)
        left_key = _left_key(there.conn, txn.request_direction, txn.key)
        if there.open.get(key) is earlier:
            there.unanswered += 1
        elif self.left.get(left_key, (None, None))[1] is earlier:
            del self.left[left_key]
            self.budget.release(self, TXN_COST)
        else:
            return
        keep = self.cur
        self.cur = txn
        self.report(ANSWERED_AFTER_RECONNECT, (txn.request_frame, o.txn.request_frame, reply), txn.request.ts,
                    conn=there.conn_id, xid=txn.key, rxid=txn.key, conn1=there.conn_id, conn2=st.conn_id,
                    call=o.txn.request_frame, reply=reply)
        self._close(there, earlier, TransactionState.UNANSWERED)
        self.cur = keep

    def _packet(self, pkt: Packet) -> None:
        self.current = None
        # typed (Packet.ib and .conv are Any): compiled, their attributes and methods are reached directly
        conv: LiveConnection | None = pkt.conv
        if conv is None:
            return
        if self.provisional and self.psn is not None:
            self._settle(self.psn, pkt)
        ib: IBInfo | None = pkt.ib
        extra = pkt.extra
        kind = ""
        if ib is not None:
            kind = ib.plan.kind
            if kind == "ack" or (kind not in ("send", "write", "read_request", "read_response") and not extra):
                return
        elif not extra:
            return
        conn_id = conv.conn_id
        st = self.last_st
        if st is None or conn_id != self.last_id:
            st = self.conns.get(conn_id)
            if st is None:
                st = self.conns[conn_id] = ConnState(conv, self.series_sink())
                self.budget.charge(self, CONN_COST)
                st.began = pkt.frame.num
            self.last_id = conn_id
            self.last_st = st
        tp = self.psn
        d = tp.pkt_direction if tp is not None and tp.pkt_direction_known else \
            DIRECTION_OF[conv.ib_direction(pkt, ib.destqp) if ib is not None else conv.direction(pkt)]
        inv = None
        self.cur = None
        msg = pkt.noted(RPCRDMA)
        rb = pkt.noted(REBUILT)
        again = False
        if ib is not None:
            psn = self.psn
            if psn is not None and psn.again:
                # The InfiniBand layer sent this packet again (same PSN, same bytes) or it is a copy
                # of a READ response already received: it opens, closes and accounts nothing (the
                # transport analysis says it, once).  Only a message its earlier copy did not deliver
                # (that copy's Send was incomplete) is taken from it.
                again = True
                if self._seen_again(psn.again_of, pkt.frame.num):
                    msg = None
                    rb = None
            if kind == "send":
                inv = ib.ieth
            elif st.rpcrdma:
                if kind == "write":
                    self._ib_write(st, pkt, ib, d, again)
                elif kind == "read_request":
                    if not again:
                        self._ib_read_request(st, pkt, ib, d)
                elif kind == "read_response":
                    self._ib_read_response(st, pkt, ib, d)
        else:
            iws = pkt.noted(IWARP)
            if iws:
                # In stream order: a segment may carry RDMA Writes and several Sends, each Send its
                # own RPC-over-RDMA message (and its own invalidated STag).
                for iw in iws:
                    if iw.rpcrdma is not None:
                        msg = None          # the packet's message is one of these: taken here
                        self._message(st, pkt, iw.rpcrdma, d, iw.inv_stag)
                    elif iw.inv_stag is not None:
                        inv = iw.inv_stag
                    elif st.rpcrdma:
                        self._iwarp_op(st, pkt, iw, d)
        if ib is not None and self.provisional:
            # sent again: this copy stands for the one held (taken, or held in its place)
            self._release(self.provisional.pop((st.conn_id, d, ib.psn), None))
        if (msg is not None or rb is not None) and self.psn is not None and self.psn.provisional:
            self._hold(st, pkt, msg, rb, d, inv)
            return
        self._take(st, pkt, msg, rb, d, inv)

    def _take(self, st: ConnState, pkt: Packet, msg: RpcRdmaMessage | None, rb: RpcRdmaMessage | None,
              d: Direction, inv: int | None) -> None:
        if msg is not None:
            self._message(st, pkt, msg, d, inv)
            self._applied(pkt.frame.num)
        if rb is not None:
            self._applied(pkt.frame.num)
            o = st.open.get((d, rb.xid)) if not rb.is_reply else st.open.get((d.other, rb.xid))
            self.cur = o.txn if o is not None else None
            rr.check_rebuilt(self, st, pkt, rb)
            if o is not None:
                if rb.is_reply:
                    o.reply_rpc = rb.rebuilt_rpc
                else:
                    o.call_rpc = rb.rebuilt_rpc
                    facts = facts_of(o.txn)
                    facts.rpc = rpc_summary(o.call_rpc, None)
                    facts.call_whole = pkt.frame.ts
                    if o.call_msg.rpc is None:      # the call itself came in a Position Zero Read chunk
                        self._called(st, pkt, o)
                self._belongs(o.txn)
        self.cur = None

    def _hold(self, st: ConnState, pkt: Packet, msg: RpcRdmaMessage | None, rb: RpcRdmaMessage | None,
              d: Direction, inv: int | None) -> None:
        held = self.provisional
        held[(st.conn_id, d, pkt.ib.psn)] = (pkt, msg, rb, inv)
        self.budget.charge(self, HELD_COST)
        if len(held) > _PROVISIONAL_LIMIT:
            self._take_held(next(iter(held)))

    def _release(self, entry: object) -> None:
        if entry is not None:
            self.budget.release(self, HELD_COST)

    def _settle(self, transport: Transport, pkt: Packet) -> None:
        """Take the held messages whose PSN the responder is now seen to have taken (the capture missed
        the packets before them), but the one this packet sends again."""
        ib: IBInfo | None = pkt.ib
        conv: LiveConnection | None = pkt.conv
        here = None
        if ib is not None and conv is not None:
            here = (conv.conn_id, DIRECTION_OF[conv.direction(pkt)], ib.psn)
        for key in [k for k in self.provisional if k != here and transport.taken(*k)]:
            self._take_held(key)

    def _take_held(self, key: tuple[int, Direction, int]) -> None:
        pkt, msg, rb, inv = self.provisional.pop(key)
        self.budget.release(self, HELD_COST)
        st = self.conns.get(key[0])
        if st is None:
            return
        current = self.current
        self._take(st, pkt, msg, rb, key[1], inv)
        self.current = current

    def _applied(self, frame: int) -> None:
        self.applied.add(frame)

    def _seen_again(self, earlier: int, frame: int) -> bool:
        """True when the earlier copy (frame ``earlier``; 0: a READ response already received) of the
        packet ``frame`` delivered its message; the copy is then remembered as delivering it too."""
        if earlier and earlier not in self.applied:
            return False
        self._applied(frame)
        return True

    # -- messages ------------------------------------------------------------------------------------
    def _message(self, st: ConnState, pkt: Packet, msg: RpcRdmaMessage, d: Direction, inv: int | None) -> None:
        st.rpcrdma = True
        st.messages += 1
        v = msg.version
        proc = msg.proc
        flags = msg.flags or 0
        if v == 2:
            if proc == RDMA_ERROR:
                kind = "reply"
            elif proc == HTYPE_CONNPROP:
                kind = "connprop"
            elif proc == RDMA_NOMSG and not msg.has_chunks:
                kind = "refresh"
            elif flags & F_MORE and proc == RDMA_MSG:
                kind = "part"
            elif msg.rpc is not None and msg.rpc.msgtype in (0, 1):
                kind = "reply" if msg.rpc.msgtype == 1 else "call"      # the RPC message says; the flag may lie
            else:
                kind = "reply" if flags & F_RESPONSE else "call"
            dropped = st.discard.get(d)
            if dropped == msg.xid and kind != "part":
                # draft-01 §7.1.3: the rest of a broken continuation is discarded by its receiver.
                del st.discard[d]
                rr.note_versions(st, msg, d)
                return
        elif v == 1 and proc == RDMA_DONE:
            kind = "done"
        elif proc == RDMA_ERROR and v == 1:
            kind = "reply"
        else:
            isr = msg.is_reply
            if isr is None:
                isr = d is Direction.S2C
            kind = "reply" if isr else "call"
        ts = pkt.frame.ts
        frame = pkt.frame.num
        if v == 2 and msg.granted is not None:
            # Every version 2 message grants its peer credits for the messages the peer sends.
            led = st.ledger(d.other)
            if led.grant(ts, frame, msg.granted, msg.max_credits):
                self.report(cr_rules.ZERO_GRANT, frame, ts, conn=st.conn_id, xid=msg.xid, pkt=pkt)
            if kind == "refresh":
                led.refreshes += 1
                self.report(cr_rules.REFRESH, frame, ts, conn=st.conn_id, xid=msg.xid, pkt=pkt, granted=msg.granted,
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
            rr.check_message(self, st, pkt, msg, d, kind == "part" and bool(flags & F_RESPONSE))

    def _call(self, st: ConnState, pkt: Packet, msg: RpcRdmaMessage, d: Direction) -> None:
        ts = pkt.frame.ts
        frame = pkt.frame.num
        xid = msg.xid
        frames = list(msg.continuation or msg.frames or [frame])
        key: tuple = (d, xid)  # plain tuple: see docs/architecture.md
        old = st.open.get(key)
        if old is not None and old.reply_msg is None:
            resent = old.txn.request.retransmissions
            if len(resent) < RESENDINGS_KEPT:
                resent.append(frames)
            else:
                old.txn.dropped += 1
            self.cur = old.txn
            self.report(RETRANSMITTED, frame, ts, conn=st.conn_id, xid=xid, pkt=pkt, rxid=xid,
                        first=old.txn.request_frame)
            self._belongs(old.txn)
            rr.check_message(self, st, pkt, msg, d, False)
            return
        if old is not None:
            # A new call with the XID of a reply still being pulled: its RDMA_DONE never came.
            self.cur = old.txn
            self._done_missing(st, old)
            self._close(st, old, TransactionState.PULL_INCOMPLETE)
        size = rr.message_size(msg)
        facts = RpcRdmaFacts(msg.version, proc_name(msg), msg.shape or None, _credit_value(msg),
                             rpc_summary(msg.rpc, None))
        txn = Transaction(PROTOCOL, st.conn_id, xid, d, Message(frames, ts, size), facts)
        o = OpenTransaction(txn, msg, st.calls)
        st.calls += 1
        self.budget.charge(self, TXN_COST)      # before it is open, so that a shed leaves it alone
        st.open[key] = o
        self._sent_again(st, o, _left_key(st.conn, d, xid))
        if st.calls % _SWEEP_EVERY == 0:
            self._overdue(st)
        if len(st.open) > _OPEN_LIMIT:
            # An eighth at once: giving up the first one at a time makes each next look-up of the
            # first walk the holes the earlier deletions left (quadratic over millions of calls).
            for stale in list(islice(st.open.values(), max(1, _OPEN_LIMIT // 8))):
                if stale is not o:
                    self._give_up(st, stale)
        self.transactions += 1
        self.cur = txn
        self._belongs(txn)
        side = d.sender
        for pos, segs in msg.read_chunks:
            for i, s in enumerate(segs):
                self._advertise(st, txn, ChunkList.READ, pos or 0, i, pos, s.handle, s.offset, s.length, side)
        for ci, chunk in enumerate(msg.writes):
            for i, s in enumerate(chunk):
                self._advertise(st, txn, ChunkList.WRITE, ci, i, None, s.handle, s.offset, s.length, side)
        if msg.reply is not None:
            for i, s in enumerate(msg.reply):
                self._advertise(st, txn, ChunkList.REPLY, 0, i, None, s.handle, s.offset, s.length, side)
        add_step(txn, Step(StepKind.REQUEST, frames, ts, size))
        led = st.ledger(d)
        if led.call(ts, frame, msg.credits if msg.version == 1 else None):
            if led.granted is None:
                self.report(cr_rules.INITIAL_SINGLE, frame, ts, conn=st.conn_id, xid=xid, pkt=pkt,
                            outstanding=led.outstanding)
            else:
                self.report(cr_rules.EXCEEDED, frame, ts, conn=st.conn_id, xid=xid, pkt=pkt,
                            outstanding=led.outstanding, granted=led.granted, direction=led.direction.value)
        rr.check_message(self, st, pkt, msg, d, False)
        if msg.rpc is not None:
            self._called(st, pkt, o)

    def _called(self, st: ConnState, pkt: Packet, o: OpenTransaction) -> None:
        for ob in self.observers:
            ob.called(self, st, pkt, o)

    @staticmethod
    def _advertise(st: ConnState, txn: Transaction, lst: ChunkList, chunk: int, index: int, position: int | None,
                   handle: int, offset: int, length: int, side: Side) -> None:
        reading = lst is ChunkList.READ or lst is ChunkList.RESPONDER_READ
        access = StepKind.RDMA_READ if reading else StepKind.RDMA_WRITE
        seg = Segment(lst, chunk, index, position, handle, offset, length, side, txn, access=access)
        txn.segments.append(seg)
        st.book.advertise(seg)

    def _reply(self, st: ConnState, pkt: Packet, msg: RpcRdmaMessage, d: Direction, inv: int | None) -> None:
        ts = pkt.frame.ts
        frame = pkt.frame.num
        xid = msg.xid
        cd = d.other
        if msg.version == 1:
            led = st.ledger(cd)
            if led.grant(ts, frame, msg.credits):
                self.report(cr_rules.ZERO_GRANT, frame, ts, conn=st.conn_id, xid=xid, pkt=pkt)
        o = st.open.get((cd, xid))
        if (o is None and msg.version == 2 and msg.proc == RDMA_ERROR and msg.errcode == _ERR_INVAL_CONT
                and xid in st.broken):
            # RDMA2_ERR_INVAL_CONT answering a continuation its receiver dropped: no call to match.
            st.broken.discard(xid)
            rr.check_message(self, st, pkt, msg, d, True)
            return
        if o is None and msg.proc == RDMA_ERROR and st.connprops.pop((cd, xid), None) is not None:
            # An error answering an RDMA2_CONNPROP: ERR_VERS from a version 1 peer, or an RDMA2_ERROR.
            self.cur = None
            rr.check_message(self, st, pkt, msg, d, True)
            return
        if o is None or o.reply_msg is not None:
            self.cur = None
            self.report(REPLY_WITHOUT_CALL, frame, ts, conn=st.conn_id, xid=xid, pkt=pkt, rxid=xid)
            rr.check_message(self, st, pkt, msg, d, True)
            return
        txn = o.txn
        if o.earlier is not None:
            self._answered_after_reconnect(st, o, frame)
        self.cur = txn
        self._belongs(txn)
        frames = list(msg.continuation or msg.frames or [frame])
        o.reply_msg = msg
        size = rr.message_size(msg)
        txn.response = Message(frames, ts, size, invalidated=inv)
        facts = facts_of(txn)
        facts.reply_proc = proc_name(msg)
        facts.reply_shape = msg.shape or None
        facts.reply_credits = _credit_value(msg)
        facts.reply_error = msg.errcode if msg.proc == RDMA_ERROR else None
        if msg.rpc is not None:
            o.reply_rpc = msg.rpc
        elif msg.rebuilt_rpc is not None:
            o.reply_rpc = msg.rebuilt_rpc       # a reply through the Reply chunk, rebuilt in this same packet
        st.ledger(cd).answered(ts, frame)
        add_step(txn, Step(StepKind.RESPONSE, frames, ts, size, invalidated=inv))
        rr.check_message(self, st, pkt, msg, d, True)
        rr.check_reply(self, st, pkt, msg, o)
        if inv is not None:
            rr.check_invalidate(self, st, pkt, msg, o, inv)
        self._reported_lengths(st, pkt, msg, txn)
        for ob in self.observers:
            ob.answered(self, st, pkt, o)
        if msg.proc == RDMA_NOMSG and any(pos == 0 for pos, _ in msg.read_chunks):
            # seeds/001: the requester pulls the reply by RDMA READ and then sends RDMA_DONE.
            side = d.sender
            for pos, segs in msg.read_chunks:
                for i, s in enumerate(segs):
                    self._advertise(st, txn, ChunkList.RESPONDER_READ, pos or 0, i, pos, s.handle, s.offset,
                                    s.length, side)
            o.pulling = True
            return
        self._close(st, o, TransactionState.COMPLETE)

    def _reported_lengths(self, st: ConnState, pkt: Packet, msg: RpcRdmaMessage, txn: Transaction) -> None:
        """The reply's Write list and Reply chunk lengths against the bytes RDMA WRITE put there."""
        if msg.proc not in (RDMA_MSG, RDMA_NOMSG, RDMA_MSGP):
            return
        frame, ts = pkt.frame.num, pkt.frame.ts
        for ci, chunk in enumerate(msg.writes):
            for si, s in enumerate(chunk):
                seg = txn.segment_at(ChunkList.WRITE, ci, si)
                if seg is None or seg.handle != s.handle:
                    continue
                seg.reported = s.length
                used = seg.used + seg.overrun
                if used != s.length:
                    self.report(ck.WRITE_LENGTH, frame, ts, conn=st.conn_id, xid=msg.xid, pkt=pkt, chunk=ci,
                                segment=si, handle=s.handle, reported=s.length, written=used)
        if msg.reply:
            for si, s in enumerate(msg.reply):
                seg = txn.segment_at(ChunkList.REPLY, 0, si)
                if seg is None or seg.handle != s.handle:
                    continue
                seg.reported = s.length
                used = seg.used + seg.overrun
                if used != s.length:
                    self.report(ck.REPLY_LENGTH, frame, ts, conn=st.conn_id, xid=msg.xid, pkt=pkt, segment=si,
                                handle=s.handle, reported=s.length, written=used)

    def _done(self, st: ConnState, pkt: Packet, msg: RpcRdmaMessage, d: Direction) -> None:
        ts = pkt.frame.ts
        frame = pkt.frame.num
        o = st.open.get((d, msg.xid))
        if o is not None and o.pulling:
            txn = o.txn
            self.cur = txn
            self._belongs(txn)
            if txn.response is not None:
                facts_of(txn).done_frame = frame
            add_step(txn, Step(StepKind.DONE, [frame], ts))
            rr.check_message(self, st, pkt, msg, d, False)
            self._close(st, o, TransactionState.COMPLETE)
            return
        self.cur = None
        self.report(rr.DONE_UNEXPECTED, frame, ts, conn=st.conn_id, xid=msg.xid, pkt=pkt, rxid=msg.xid)
        rr.check_message(self, st, pkt, msg, d, False)

    def _done_missing(self, st: ConnState, o: OpenTransaction) -> None:
        txn = o.txn
        rep = txn.response
        self.report(rr.DONE_MISSING, rep.frame if rep is not None else txn.request_frame,
                    rep.ts if rep is not None else txn.request.ts, conn=st.conn_id, xid=txn.key, rxid=txn.key)

    def _close(self, st: ConnState, o: OpenTransaction, state: TransactionState) -> None:
        txn = o.txn
        key: tuple = (txn.request_direction, txn.key)
        # One look-up, as it mostly is open (not ``in`` then ``del``: two; not pop(key, None): compiled, a method
        # call is generic); it is not there once left on a connection that ended (``_leave``).
        try:
            del st.open[key]
        except KeyError:
            pass
        else:
            self.budget.release(self, TXN_COST)
        calls_key = o.calls_key     # the key it went in with: not made and compared again
        if calls_key is not None:
            unanswered = self.unanswered
            held = unanswered.get(calls_key)
            if held is not None and held[1] is o:
                del unanswered[calls_key]
        for seg in txn.segments:
            st.book.withdraw(seg)
        st.closed += 1
        txn.state = state
        if self.an.on_record is not None:
            # The summaries are the record's alone (nothing in the analysis reads them): without a sink of
            # records (``expert``) the transaction goes without them (the NFS facts some 5,000 instructions).
            summarise(facts_of(txn), o.call_rpc, o.reply_rpc)
        self.hand_on(txn)

    # -- end of capture ------------------------------------------------------------------------------
    def _overdue(self, st: ConnState) -> None:
        """Close the open transactions older than the window of calls (the first ones of ``open``)."""
        oldest = st.calls - CALL_WINDOW
        stale = []
        for o in st.open.values():
            if o.seq >= oldest:
                break
            stale.append(o)
        for o in stale:
            self._give_up(st, o, overdue=True)

    def _give_up(self, st: ConnState, o: OpenTransaction, overdue: bool = False) -> None:
        """Close a transaction still open: no reply (or no RDMA_DONE) came (``overdue``: nor will)."""
        txn = o.txn
        keep = self.cur
        self.cur = txn
        if o.reply_msg is None:
            st.unanswered += 1
            if overdue:
                self.report(REPLY_OVERDUE, txn.request_frame, txn.request.ts, conn=st.conn_id, xid=txn.key, rxid=txn.key,
                            window=CALL_WINDOW)
            else:
                self.report(NO_REPLY, txn.request_frame, txn.request.ts, conn=st.conn_id, xid=txn.key, rxid=txn.key)
            self._close(st, o, TransactionState.UNANSWERED)
        else:
            self._done_missing(st, o)
            self._close(st, o, TransactionState.PULL_INCOMPLETE)
        self.cur = keep

    def finish(self) -> None:
        self.current = None
        while self.provisional:
            self._take_held(next(iter(self.provisional)))
        while self.left:
            self._left_unanswered(next(iter(self.left)))
        for st in self.conns.values():
            for o in list(st.open.values()):
                self._give_up(st, o)
            self.cur = None
            self._summarise(st)

    def _summarise(self, st: ConnState) -> None:
        for led in st.ledgers.values():
            led.flush()
        if st.rpcrdma or st.messages:
            self.an.emit(UlpSummary(
                PROTOCOL, st.conn_id, st.messages, st.closed, st.unanswered, sorted(set(st.version.values())),
                [led.summary() for _d, led in sorted(st.ledgers.items())], st.orphan_ops, st.orphan_bytes))



register("rpcrdma.transactions", Transactions)
