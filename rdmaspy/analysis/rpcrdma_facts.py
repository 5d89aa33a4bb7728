"""RPC-over-RDMA's own facts about a transaction, and its declaration as an upper layer (analysis.ulp).

A transaction of RPC-over-RDMA is an RPC call and its reply, paired by XID (the transaction's key) in
one direction of calls.  Beside what every upper layer's transaction holds (model.Transaction), it
keeps the RPC-over-RDMA version, the message type, shape and credit value of the call and of the
reply, the reply's RDMA_ERROR code and the RDMA_DONE that ended a responder-provided Read chunk's pull
(seeds/001), and the RPC message it carried (``RpcSummary``: program, procedure, the reply's status).
Its segments are the chunks of RFC 8166 §3.4, named by the list they came from (``ChunkList``).
"""
from __future__ import annotations

from enum import StrEnum

from ..dissectors.nfs import NFS4_SCENE_OPS
from ..dissectors.onc_rpc import PROGRAM_NAMES, RpcInfo
from ..records import record_eq, record_repr
from ..typenames import Callable, ClassVar, Final, mypyc_attr
from .model import Facts, FactsRecord, Transaction, declare_facts_maker, declare_segment_kinds
from .nfs_facts import NfsFacts, NfsFactsValues, nfs_facts_from, nfs_summary
from .nfs_facts import declared as nfs_declared
from .ulp import Fact, Group, Service, UlpModel, declare

PROTOCOL: Final = "rpcrdma"


class ChunkList(StrEnum):
    """The list an advertised segment came from."""
    READ = "read"                       # a call's Read list
    WRITE = "write"                     # a call's Write list
    REPLY = "reply"                     # a call's Reply chunk
    RESPONDER_READ = "responder_read"   # a reply's Position Zero Read chunk (seeds/001)


@mypyc_attr(serializable=True, allow_interpreted_subclasses=True)
class RpcSummary:
    """The RPC message a transaction carried: program, procedure, and from the reply its status."""

    _FIELDS: ClassVar[tuple[str, ...]] = ("program", "version", "procedure", "name", "label", "ops", "replied",
                                          "reply_stat", "accept_stat", "nfs_status", "reply_ops")
    __slots__ = _FIELDS

    def __init__(self, program: int | None, version: int | None, procedure: int | None, name: str | None,
                 label: str | None, ops: list[str] | None, replied: bool = False, reply_stat: int | None = None,
                 accept_stat: int | None = None, nfs_status: int | None = None,
                 reply_ops: list[str] | None = None) -> None:
        self.program = program
        self.version = version
        self.procedure = procedure
        self.name = name                        # procedure name, e.g. "READ", "COMPOUND"
        self.label = label                      # program label, e.g. "NFSv3", "NFSv4.1"
        self.ops = ops                          # NFSv4 COMPOUND operation names
        self.replied = replied                  # the fields below come from a reply
        self.reply_stat = reply_stat
        self.accept_stat = accept_stat
        self.nfs_status = nfs_status
        self.reply_ops = reply_ops

    def __repr__(self) -> str:
        return record_repr(self, self._FIELDS)

    def __reduce__(self) -> tuple[Callable[[RpcSummaryValues], RpcSummary], tuple[RpcSummaryValues]]:
        """Pickled as its fields' values (the TUI's spool of transactions, checkpoints): pickle's C code
        takes a tuple alone, where an object goes through a dict of its attributes."""
        return rpc_summary_from, (self.values(),)

    def values(self) -> RpcSummaryValues:
        """Its fields' values, in order (``rpc_summary_from`` makes it again of them)."""
        return (self.program, self.version, self.procedure, self.name, self.label, self.ops, self.replied,
                self.reply_stat, self.accept_stat, self.nfs_status, self.reply_ops)

    def __eq__(self, other: object) -> bool:
        return record_eq(self, other, self._FIELDS)


@mypyc_attr(serializable=True, allow_interpreted_subclasses=True)
class RpcRdmaFacts(Facts):
    """An RPC-over-RDMA transaction's own facts: its messages' types, shapes and credits, and its RPC."""

    _FIELDS: ClassVar[tuple[str, ...]] = ("version", "call_proc", "call_shape", "call_credits", "reply_proc",
                                          "reply_shape", "reply_credits", "reply_error", "done_frame", "rpc", "nfs",
                                          "call_whole")
    __slots__ = _FIELDS

    def __init__(self, version: int, call_proc: str, call_shape: str | None, call_credits: int,
                 rpc: RpcSummary | None = None) -> None:
        self.version = version                  # RPC-over-RDMA version of the call
        self.call_proc = call_proc              # the call's message type (RDMA_MSG, RDMA2_MSG, ...)
        self.call_shape = call_shape            # its shape (seeds/002), e.g. "Long Call"
        self.call_credits = call_credits        # the credit value it carried (v2: the grant)
        self.reply_proc: str | None = None      # the reply's, once it came
        self.reply_shape: str | None = None
        self.reply_credits: int | None = None
        self.reply_error: int | None = None     # RDMA_ERROR code
        self.done_frame: int | None = None      # the RDMA_DONE that ended its pull (seeds/001)
        self.rpc = rpc
        self.nfs: NfsFacts | None = None        # the RPC is NFS: its main operation (nfs_facts), once it closed
        # when the call was rebuilt whole from its Read chunks (ns), where it had any: the server had it then
        self.call_whole: int | None = None

    def __repr__(self) -> str:
        return record_repr(self, self._FIELDS)

    def __reduce__(self) -> tuple[Callable[[RpcRdmaFactsValues], RpcRdmaFacts], tuple[RpcRdmaFactsValues]]:
        """Pickled as its fields' values (the TUI's spool of transactions, checkpoints): pickle's C code
        takes a tuple alone, where an object goes through a dict of its attributes."""
        return rpcrdma_facts_from, ((self.version, self.call_proc, self.call_shape, self.call_credits,
                                     self.reply_proc, self.reply_shape, self.reply_credits, self.reply_error,
                                     self.done_frame, self.rpc, self.nfs, self.call_whole),)

    def record(self) -> FactsRecord:
        """Its values, the RPC's summary and the NFS facts as theirs (made again by ``rpcrdma_facts_of_record``)."""
        rpc = self.rpc
        nfs = self.nfs
        return PROTOCOL, (self.version, self.call_proc, self.call_shape, self.call_credits, self.reply_proc,
                          self.reply_shape, self.reply_credits, self.reply_error, self.done_frame,
                          None if rpc is None else rpc.values(), None if nfs is None else nfs.values(),
                          self.call_whole)

    def __eq__(self, other: object) -> bool:
        return record_eq(self, other, self._FIELDS)


RpcSummaryValues = tuple[int | None, int | None, int | None, str | None, str | None, list[str] | None, bool,
                         int | None, int | None, int | None, list[str] | None]
# ... as ``RpcRdmaFacts.record`` makes them: the summary and the NFS facts as their values
RpcRdmaFactsRecordValues = tuple[int, str, str | None, int, str | None, str | None, int | None, int | None,
                                 int | None, RpcSummaryValues | None, NfsFactsValues | None, int | None]
RpcRdmaFactsValues = tuple[int, str, str | None, int, str | None, str | None, int | None, int | None, int | None,
                           RpcSummary | None, NfsFacts | None, int | None]


def rpc_summary_from(v: RpcSummaryValues) -> RpcSummary:
    """The summary ``RpcSummary.__reduce__`` pickled as ``v``."""
    return RpcSummary(v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7], v[8], v[9], v[10])


def rpcrdma_facts_from(v: RpcRdmaFactsValues) -> RpcRdmaFacts:
    """The facts ``RpcRdmaFacts.__reduce__`` pickled as ``v``."""
    f = RpcRdmaFacts(v[0], v[1], v[2], v[3], v[9])
    f.reply_proc = v[4]
    f.reply_shape = v[5]
    f.reply_credits = v[6]
    f.reply_error = v[7]
    f.done_frame = v[8]
    f.nfs = v[10]
    f.call_whole = v[11]
    return f


def rpcrdma_facts_of_record(v: RpcRdmaFactsRecordValues) -> RpcRdmaFacts:
    """The facts ``RpcRdmaFacts.record`` made ``v`` of."""
    rpc = v[9]
    nfs = v[10]
    f = RpcRdmaFacts(v[0], v[1], v[2], v[3], None if rpc is None else rpc_summary_from(rpc))
    f.reply_proc = v[4]
    f.reply_shape = v[5]
    f.reply_credits = v[6]
    f.reply_error = v[7]
    f.done_frame = v[8]
    f.nfs = None if nfs is None else nfs_facts_from(nfs)
    f.call_whole = v[11]
    return f


def rpc_summary(call: RpcInfo | None, reply: RpcInfo | None) -> RpcSummary | None:
    """The RPC message of a transaction: the call's program and procedure, the reply's status."""
    if call is None and reply is None:
        return None
    c = call if call is not None else reply
    assert c is not None
    r = RpcSummary(c.prog, c.vers, c.proc, c.proc_name, c.label, c.ops)
    if reply is not None:
        r.replied = True
        if r.program is None:
            r.program = reply.prog
        r.name = r.name or reply.proc_name
        r.label = r.label or reply.label
        r.reply_stat = reply.reply_stat
        r.accept_stat = reply.accept_stat
        r.nfs_status = reply.nfs_status
        r.reply_ops = reply.ops
    return r


def summarise(facts: RpcRdmaFacts, call: RpcInfo | None, reply: RpcInfo | None) -> None:
    """Sum up a closing transaction's RPC call and reply in its facts: the RPC message and, where the RPC
    is NFS, its main operation (the correlator names neither program)."""
    facts.rpc = rpc_summary(call, reply)
    facts.nfs = nfs_summary(call, reply)


declare_facts_maker(PROTOCOL, rpcrdma_facts_of_record)
declare_segment_kinds(list(ChunkList))


def facts_of(t: Transaction) -> RpcRdmaFacts:
    f = t.facts
    assert isinstance(f, RpcRdmaFacts)
    return f


def rpc_of(t: Transaction) -> RpcSummary | None:
    return facts_of(t).rpc


def operation_name(t: Transaction) -> str:
    """The procedure a transaction stands for: "NFSv3 READ", "NFSv4.2 COMPOUND(OPEN)", ..."""
    rpc = rpc_of(t)
    if rpc is None:
        return f"RPC-over-RDMA {facts_of(t).call_proc}"
    label = rpc.label or (f"program {rpc.program} v{rpc.version}" if rpc.program is not None else "RPC")
    name = rpc.name or (f"proc {rpc.procedure}" if rpc.procedure is not None else "?")
    ops = rpc.ops
    if name == "COMPOUND" and ops:
        main = next((o for o in ops if o not in NFS4_SCENE_OPS), ops[-1])
        name = f"COMPOUND({main})"
    return f"{label} {name}"


def nfs_of(t: Transaction) -> NfsFacts | None:
    return facts_of(t).nfs


def file_of(t: Transaction) -> str | None:
    """The file an NFS transaction's operation acted on, by its full name, its name, or (unnamed) its
    handle's hash as tshark shows it; None when it names none."""
    n = nfs_of(t)
    if n is None:
        return None
    if n.full_name is not None:
        return n.full_name
    if n.name is not None:
        return n.name
    return None if n.fh_hash is None else f"fh 0x{n.fh_hash:08x}"


def _moved_by(op: str):  # type: ignore[no-untyped-def]
    """The bytes a transaction's NFS operation ``op`` (READ, WRITE) says it moved; None for another."""
    def get(t: Transaction) -> int | None:
        n = nfs_of(t)
        return n.moved if n is not None and n.op == op else None
    return get


def service(t: Transaction) -> Service | None:
    """Its row of the service response time table of its RPC program and version (tshark's -z rpc,srt); None
    unless an RPC reply answered it (not an RDMA_ERROR)."""
    rpc = rpc_of(t)
    if rpc is None or not rpc.replied or rpc.program is None or rpc.version is None or rpc.procedure is None:
        return None
    key = (rpc.program, rpc.version)
    table = _TABLES.get(key)
    if table is None:
        program = PROGRAM_NAMES.get(rpc.program)
        table = f"{program if program is not None else f'program {rpc.program}'} v{rpc.version}"
        if len(_TABLES) < _TABLES_KEPT:       # (a hostile capture can name any number of programs)
            _TABLES[key] = table
    name = rpc.name if rpc.name is not None else f"proc {rpc.procedure}"
    whole = facts_of(t).call_whole
    return (table, rpc.procedure, name, whole if whole is not None else t.request.ts)


_TABLES: dict[tuple[int, int], str] = {}      # the SRT tables' names, by (program, version)
_TABLES_KEPT: Final = 256


def _replied(t: Transaction) -> bool:
    rpc = rpc_of(t)
    return rpc is not None and rpc.replied


def _rpc(name: str):  # type: ignore[no-untyped-def]
    """The getter of an RPC summary's attribute (None without one)."""
    def get(t: Transaction) -> object:
        rpc = rpc_of(t)
        return None if rpc is None else getattr(rpc, name)
    return get


MODEL: Final = declare(UlpModel(
    protocol=PROTOCOL, rank=0, label="RPC-over-RDMA", key="XID", key_digits=8, request="call", response="reply",
    lists={ChunkList.READ: "Read chunk", ChunkList.WRITE: "Write chunk", ChunkList.REPLY: "Reply chunk",
           ChunkList.RESPONDER_READ: "responder_read"},
    done="RDMA_DONE",
    facts=(
        Fact("xid", "u32", "XID", lambda t: t.key, "xid"),
        Fact("version", "u8", "RPC-over-RDMA version", lambda t: facts_of(t).version, "version"),
        Fact("call_proc", "str", "Call message type", lambda t: facts_of(t).call_proc, "call.proc"),
        Fact("call_shape", "str", "Call shape", lambda t: facts_of(t).call_shape, "call.shape"),
        Fact("call_credits", "u32", "Call credit value", lambda t: facts_of(t).call_credits, "call.credits"),
        Fact("reply_proc", "str", "Reply message type", lambda t: facts_of(t).reply_proc, "reply.proc"),
        Fact("reply_shape", "str", "Reply shape", lambda t: facts_of(t).reply_shape, "reply.shape"),
        Fact("reply_credits", "u32", "Reply credit value", lambda t: facts_of(t).reply_credits, "reply.credits"),
        Fact("reply_error", "u32", "RDMA_ERROR code", lambda t: facts_of(t).reply_error, "reply.error",
             tell="RDMA_ERROR"),
        Fact("done_frame", "u64", "RDMA_DONE in frame", lambda t: facts_of(t).done_frame, "reply.done_frame"),
        Fact("rpc_program", "u32", "RPC program", _rpc("program"), "rpc.program"),
        Fact("rpc_version", "u32", "RPC program version", _rpc("version"), "rpc.version"),
        Fact("rpc_procedure", "u32", "RPC procedure", _rpc("procedure"), "rpc.procedure"),
        Fact("rpc_name", "str", "Procedure", _rpc("name"), "rpc.name"),
        Fact("rpc_label", "str", "Program", _rpc("label"), "rpc.label"),
        Fact("nfs_ops", "strs", "NFSv4 operations", _rpc("ops"), "rpc.ops"),
        Fact("reply_stat", "u32", "RPC reply status", _rpc("reply_stat"), "rpc.reply_stat", _replied),
        Fact("accept_stat", "u32", "RPC accept status", _rpc("accept_stat"), "rpc.accept_stat", _replied),
        Fact("nfs_status", "u32", "NFS status", _rpc("nfs_status"), "rpc.nfs_status", _replied),
        Fact("nfs_reply_ops", "strs", "NFSv4 operations replied", _rpc("reply_ops"), "rpc.reply_ops", _replied),
    ) + nfs_declared(nfs_of),
    operation=operation_name, operation_label="Procedure",
    objects={"rpc": lambda t: rpc_of(t) is not None, "nfs": lambda t: nfs_of(t) is not None},
    groups=(Group("file", file_of, _moved_by("READ"), _moved_by("WRITE")),),
    service=service,
    # the header names the operation already: the file and the range lead
    lead=("nfs_full_name", "nfs_offset", "nfs_count", "nfs_moved", "nfs_status_name"),
))
