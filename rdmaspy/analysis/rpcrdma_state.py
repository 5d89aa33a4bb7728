"""What the RPC-over-RDMA analysis keeps per connection while it follows its transactions.

The transactions module (which drives) and the rules module (which checks) share these: a
connection's open transactions, its data ledger and the RDMA operations in progress (analysis.ledger),
its credit ledgers, the versions and the version 2 state each direction is in.  The records that leave the
analysis are those of ``model``; these classes stay inside it.
"""
from __future__ import annotations

from ..dissectors.rpcrdma2 import PROP_DEFAULTS, PROP_RBSIZ_ID
from ..typenames import TYPE_CHECKING, Callable, Protocol, mypyc_attr
from . import chunks as ck
from . import credits as cr
from .ledger import DataLedger
from .model import Direction, Finding, Record, Rule, Transaction

if TYPE_CHECKING:
    from ..conversation import Connection as LiveConnection
    from ..dissectors.onc_rpc import RpcInfo
    from ..dissectors.rpcrdma import RpcRdmaMessage
    from ..packet import Packet


class Reporter(Protocol):
    """Where the rules report (the transactions module: a finding also joins the open transaction)."""

    def report(self, rule: Rule, frames: tuple[int, ...] | int, ts: int, conn: int | None = None,
               xid: int | None = None, pkt: Packet | None = None, **args: object) -> Finding: ...

    def report_args(self, rule: Rule, frames: tuple[int, ...] | int, ts: int, conn: int | None,
                    xid: int | None, pkt: Packet | None, args: dict[str, object]) -> Finding: ...


@mypyc_attr(serializable=True, allow_interpreted_subclasses=True)
class TransactionObserver:
    """An upper layer's rules riding on the transactions module (``Transactions.observers``): told of each
    call once its RPC message is known (inline, or rebuilt from a Position Zero Read chunk) and of each
    reply before its transaction closes, with the transaction's messages, chunks and what RDMA moved.
    It reports through ``rep``, so that a finding also joins the transaction."""

    def called(self, rep: Reporter, st: ConnState, pkt: Packet, o: OpenTransaction) -> None:
        """A new call (not a retransmission), its RPC message in ``o.call_msg`` (``rpc`` or ``rebuilt_rpc``)."""

    def answered(self, rep: Reporter, st: ConnState, pkt: Packet, o: OpenTransaction) -> None:
        """The reply ``o.reply_msg`` of an open transaction, before the transaction closes."""


@mypyc_attr(serializable=True, allow_interpreted_subclasses=True)
class OpenTransaction:
    """A transaction being followed: its record and the messages the rules still compare."""

    __slots__ = ("txn", "call_msg", "reply_msg", "call_rpc", "reply_rpc", "pulling", "seq", "earlier", "earlier_st",
                 "calls_key")

    def __init__(self, txn: Transaction, call_msg: RpcRdmaMessage, seq: int) -> None:
        self.txn = txn
        self.seq = seq                # the number of calls opened on its connection before it
        self.call_msg = call_msg
        self.reply_msg: RpcRdmaMessage | None = None
        self.call_rpc: RpcInfo | None = call_msg.rpc        # the call's RPC message (rebuilt when it was cut)
        self.reply_rpc: RpcInfo | None = None
        self.pulling = False          # the reply waits to be pulled through a responder-provided Read chunk
        # The same call (its XID) left unanswered on an earlier connection between the same hosts, and that
        # connection's state: a call the requester sent again after it reconnected.
        self.earlier: OpenTransaction | None = None
        self.earlier_st: ConnState | None = None
        # Its key among the calls not answered yet (``Transactions.unanswered``), kept to take it out at its close
        self.calls_key: tuple | None = None


@mypyc_attr(serializable=True, allow_interpreted_subclasses=True)
class ConnState(DataLedger):
    """Everything followed on one connection: its data ledger and RDMA operations (``DataLedger``), its
    calls and credits, and the RPC-over-RDMA versions' state."""

    __slots__ = ("conn", "open", "ledgers", "version", "err_vers", "bad_htypes", "sent_htypes", "connprop_done",
                 "continuing", "v2_first_seen", "v2_recv", "rpcrdma", "closed", "unanswered", "emit", "messages",
                 "discard", "broken", "connprops", "calls", "began")

    def __init__(self, conn: LiveConnection, emit: Callable[[Record], None] | None) -> None:
        super().__init__(conn.conn_id, ck.LEDGER_RULES)
        self.conn = conn
        self.open: dict[tuple[Direction, int], OpenTransaction] = {}
        self.calls = 0                # calls opened on it: how old an open transaction is
        self.began = 0                # the frame its state was made at: calls opened before are earlier ones
        self.ledgers: dict[Direction, cr.CreditLedger] = {}
        self.version: dict[Direction, int] = {}
        self.err_vers: tuple[int, int] | None = None
        self.bad_htypes: dict[Direction, set[int]] = {}
        self.sent_htypes: dict[tuple[Direction, int], int] = {}
        self.connprop_done: dict[Direction, bool] = {}
        self.continuing: dict[Direction, tuple[int, int]] = {}
        self.discard: dict[Direction, int] = {}  # direction -> XID of a broken continuation still to drop
        self.broken: set[int] = set()           # XIDs of broken continuations (their INVAL_CONT is expected)
        # (direction, XID) of RDMA2_CONNPROP messages not answered yet: a version 1 peer answers one
        # with RDMA_ERROR ERR_VERS (the v2 client then falls back), which is no reply to an RPC call.
        self.connprops: dict[tuple[Direction, int], int] = {}
        self.v2_first_seen = False
        self.v2_recv: dict[Direction, int] = {}
        self.rpcrdma = False
        self.closed = 0
        self.unanswered = 0
        self.emit = emit              # where its credit series go (None: nowhere, ``Correlator.series_sink``)
        self.messages = 0

    def ledger(self, d: Direction) -> cr.CreditLedger:
        """The credits of calls sent in direction ``d``."""
        led = self.ledgers.get(d)
        if led is None:
            # RFC 8166 §3.3.3 / draft-01 §4.2.3: one call until the server's first grant, where the start is seen.
            initial = 1 if d is Direction.C2S and self.conn.setup_known else None
            led = self.ledgers[d] = cr.CreditLedger(self.conn_id, d.calls, self.emit, initial)
        return led

    def threshold(self, d: Direction, version: int) -> int | None:
        """The inline threshold of direction ``d``; None where it is not known (setup not captured)."""
        conn = self.conn
        if version == 2:
            recv = self.v2_recv.get(d.other)
            return recv if recv else PROP_DEFAULTS[PROP_RBSIZ_ID]      # draft-01 §4.2.2
        if version != 1 or not conn.setup_known:
            return None
        return conn.inline_c2s if d is Direction.C2S else conn.inline_s2c
