"""ONC RPC messages (RFC 5531): call and reply headers, credentials, reply status.

Not bound to a port: a framing layer (RPC-over-RDMA here) hands over one whole
RPC message with ``dissect_rpc``.  Calls are remembered per flow and XID so
that a reply, which carries neither program nor procedure, is named after its
call.  The body goes to ``table("rpc.program")`` keyed by program number;
program dissectors find the header facts with ``current_rpc(pkt)``.  Programs whose number is
learnt from the capture (an NFSv4 client's callback program) are in the per-capture dict
``ctx.get("rpc.programs", dict)``, consulted after the table.

Every packet needs the facts (``RpcInfo``) and the info text; the tree only when asked.  A
well-formed header is read with a few struct unpacks (``_call_facts``, ``_reply_facts``); a short
or out-of-range one goes to the careful XDR walk, which names what is wrong.  The same walk,
given the layer, spells out the items when somebody asks for them.
"""
from __future__ import annotations

from collections import OrderedDict
from itertools import islice

from ..budget import Budget, Holder
from ..conversation import Connection
from ..fields import Field, declaring, protocol, repeatable
from ..packet import Layer, Note, Packet
from ..registry import table
from ..session import Session, wants_info
from ..typenames import Any, Final, mypyc_attr
from .nfs_names import NameMap
from .xdr import Cursor, XdrError, u32

declaring(__name__)
protocol("rpc", "Remote Procedure Call")
repeatable("rpc")                 # several messages in a TCP segment, a rebuilt message beside a Send

MSG_TYPES: Final = {0: "Call", 1: "Reply"}
REPLY_STATS: Final = {0: "accepted", 1: "denied"}
ACCEPT_STATS: Final = {0: "RPC executed successfully", 1: "remote can't support program", 2: "remote can't support version",
                3: "program can't support procedure", 4: "procedure can't decode params", 5: "remote system error"}
ACCEPT_SHORT: Final = {0: "SUCCESS", 1: "PROG_UNAVAIL", 2: "PROG_MISMATCH", 3: "PROC_UNAVAIL", 4: "GARBAGE_ARGS",
                5: "SYSTEM_ERR"}
REJECT_STATS: Final = {0: "RPC_MISMATCH", 1: "AUTH_ERROR"}
AUTH_STATS: Final = {0: "AUTH_OK", 1: "bad credential (seal broken)", 2: "client must begin new session",
              3: "bad verifier (seal broken)", 4: "verifier expired or replayed", 5: "rejected for security reasons",
              6: "bogus response verifier", 7: "reason unknown", 13: "RPCSEC_GSS credential problem",
              14: "RPCSEC_GSS context problem"}
AUTH_FLAVORS: Final = {0: "AUTH_NULL", 1: "AUTH_UNIX", 2: "AUTH_SHORT", 3: "AUTH_DES", 6: "RPCSEC_GSS", 7: "AUTH_TLS",
                390003: "RPCSEC_GSS_KRB5", 390004: "RPCSEC_GSS_KRB5I", 390005: "RPCSEC_GSS_KRB5P"}
GSS_PROCS: Final = {0: "RPCSEC_GSS_DATA", 1: "RPCSEC_GSS_INIT", 2: "RPCSEC_GSS_CONTINUE_INIT", 3: "RPCSEC_GSS_DESTROY"}
GSS_SERVICES: Final = {1: "rpc_gss_svc_none", 2: "rpc_gss_svc_integrity", 3: "rpc_gss_svc_privacy"}

# Program numbers and procedure names: filled in by the program dissectors (nfs.py) at import.
PROGRAM_NAMES: Final[dict[int, str]] = {100000: "Portmap", 100024: "STAT"}
PROC_NAMES: Final[dict[tuple[int, int], dict[int, str]]] = {}

XID: Final = Field("rpc.xid", 32, "XID", "hex")
MSGTYP: Final = Field("rpc.msgtyp", 32, "Message Type", names=MSG_TYPES)
VERSION: Final = Field("rpc.version", 32, "RPC Version")
PROGRAM: Final = Field("rpc.program", 32, "Program", names=PROGRAM_NAMES)
PROGVERS: Final = Field("rpc.programversion", 32, "Program Version")
PROCEDURE: Final = Field("rpc.procedure", 32, "Procedure")
PROC_NAME: Final = Field("rpc.procedure_name", 0, "Procedure name", "str")
AUTH_FLAVOR: Final = Field("rpc.auth.flavor", 32, "Flavor", names=AUTH_FLAVORS)
AUTH_LENGTH: Final = Field("rpc.auth.length", 32, "Length", unit="bytes")
AUTH_STAMP: Final = Field("rpc.auth.stamp", 32, "Stamp", "hex")
AUTH_MACHINE: Final = Field("rpc.auth.machinename", 0, "Machine Name", "str")
AUTH_UID: Final = Field("rpc.auth.uid", 32, "UID")
AUTH_GID: Final = Field("rpc.auth.gid", 32, "GID")
AUTH_NGIDS: Final = Field("rpc.auth.aux_gids", 32, "Auxiliary GIDs")
AUTH_BODY: Final = Field("rpc.auth.body", 0, "Body", "bytes")
GSS_VERSION: Final = Field("rpc.authgss.version", 32, "GSS Version")
GSS_PROC: Final = Field("rpc.authgss.procedure", 32, "GSS Procedure", names=GSS_PROCS)
GSS_SEQ: Final = Field("rpc.authgss.seqnum", 32, "GSS Sequence Number")
GSS_SERVICE: Final = Field("rpc.authgss.service", 32, "GSS Service", names=GSS_SERVICES)
GSS_CONTEXT: Final = Field("rpc.authgss.context", 0, "GSS Context", "bytes")
REPLYSTAT: Final = Field("rpc.replystat", 32, "Reply State", names=REPLY_STATS)
ACCEPTSTAT: Final = Field("rpc.state_accept", 32, "Accept State", names=ACCEPT_STATS)
REJECTSTAT: Final = Field("rpc.state_reject", 32, "Reject State", names=REJECT_STATS)
AUTHSTAT: Final = Field("rpc.state_auth", 32, "Auth State", names=AUTH_STATS)
VERS_MIN: Final = Field("rpc.version.min", 32, "RPC Version (Minimum)")
VERS_MAX: Final = Field("rpc.version.max", 32, "RPC Version (Maximum)")
PVERS_MIN: Final = Field("rpc.programversion.min", 32, "Program Version (Minimum)")
PVERS_MAX: Final = Field("rpc.programversion.max", 32, "Program Version (Maximum)")
REQFRAME: Final = Field("rpc.reqframe", 0, "Reply to the call in frame")
TIME: Final = Field("rpc.time", 0, "Time from call", "float", unit="seconds")
BODY_LEN: Final = Field("rpc.body_length", 0, "Body length", unit="bytes")

rpc_program: Final = table("rpc.program", "ONC RPC program number")


@mypyc_attr(serializable=True, allow_interpreted_subclasses=True)
class DdpItem:
    """A DDP-eligible data item of an NFS message (RFC 8267), located in the RPC message.

    ``position`` is the offset, from the start of the RPC message (its XID), where the item's
    bytes stand in the unreduced stream (after the item's length word); ``length`` is the
    length the message declares; ``inline`` tells whether the bytes are in this message or
    were removed from it (reduced: they travel in a chunk).  ``chunk``, for an item of a reply, is the
    Write chunk it was paired with (the n-th DDP-eligible result takes the n-th Write chunk), -1 for none.
    """

    __slots__ = ("kind", "position", "length", "inline", "chunk")

    def __init__(self, kind: str, position: int, length: int, inline: bool, chunk: int = -1) -> None:
        self.kind = kind          # "read_data" | "write_data" | "readlink" | "symlink"
        self.position = position
        self.length = length
        self.inline = inline
        self.chunk = chunk

    def __repr__(self) -> str:
        return f"<DdpItem {self.kind} pos={self.position} len={self.length} inline={self.inline} chunk={self.chunk}>"


@mypyc_attr(serializable=True, allow_interpreted_subclasses=True)
class NfsOp:
    """The facts of one NFS operation that the RPC-over-RDMA binding is checked against (an NFSv3 READ,
    WRITE, READLINK or SYMLINK; an NFSv4 READ, WRITE, READLINK, READ_PLUS or SEQUENCE), read word by word
    by the NFS dissector on the summary path.  ``op`` is the NFSv3 procedure or the NFSv4 operation;
    in a call ``count`` is what a READ asks for (NFSv3 WRITE: its count) and ``stable`` a WRITE's
    stable_how; in a reply ``count`` is what a READ or WRITE says it moved, ``stable`` a WRITE's committed
    level, ``status`` the operation's (an NFSv3 reply's) status.  ``ddp`` is the operation's DDP-eligible
    item.  SEQUENCE: the session, slot, sequence id, highest slot and (reply) the target highest slot.
    ``fh``, on a message's main operation (``RpcInfo.main``): in a call the handle it acts on, in a reply
    the handle a GETFH after it returned (an OPEN's, a LOOKUP's file)."""

    __slots__ = ("op", "status", "offset", "count", "eof", "stable", "ddp", "session", "slot", "sequence",
                 "highest", "target", "fh")

    def __init__(self, op: int, status: int | None = None) -> None:
        self.op = op
        self.status = status
        self.offset: int | None = None
        self.count: int | None = None
        self.eof: bool | None = None
        self.stable: int | None = None
        self.ddp: DdpItem | None = None
        self.session: bytes | None = None
        self.slot = 0
        self.sequence = 0
        self.highest = 0
        self.target = 0
        self.fh: bytes | None = None

    def __repr__(self) -> str:
        return f"<NfsOp {self.op} status={self.status} offset={self.offset} count={self.count} eof={self.eof}>"


@mypyc_attr(serializable=True, allow_interpreted_subclasses=True)
class RpcInfo:
    """The facts of one RPC message, for upper dissectors and analysis (no text formatting)."""

    __slots__ = ("xid", "msgtype", "rpcvers", "prog", "vers", "proc", "prog_name", "proc_name",
                 "cred_flavor", "uid", "gid", "machinename", "gss_proc", "gss_service", "gss_seq",
                 "reply_stat", "accept_stat", "reject_stat", "call_frame", "frame", "length",
                 "ops", "nfs_status", "ddp", "nfs", "label", "delay", "call_facts", "main", "names")

    def __init__(self, xid: int, msgtype: int) -> None:
        self.xid = xid
        self.msgtype = msgtype     # 0 call, 1 reply
        self.rpcvers: int | None = None
        self.prog: int | None = None
        self.vers: int | None = None
        self.proc: int | None = None
        self.prog_name: str | None = None
        self.proc_name: str | None = None
        self.cred_flavor: int | None = None
        self.uid: int | None = None
        self.gid: int | None = None
        self.machinename: str | None = None
        self.gss_proc: int | None = None
        self.gss_service: int | None = None
        self.gss_seq: int | None = None
        self.reply_stat: int | None = None
        self.accept_stat: int | None = None
        self.reject_stat: int | None = None
        self.call_frame: int | None = None   # for a reply: the frame of its call, when seen
        self.delay: float | None = None      # for a reply: seconds since its call
        self.frame = 0
        self.length = 0
        self.ops: list[str] | None = None    # NFSv4 COMPOUND / CB_COMPOUND operation names
        self.nfs_status: int | None = None
        self.ddp: list[DdpItem] | None = None
        self.nfs: list[NfsOp] | None = None   # the NFS operations the binding's checks read (NfsOp)
        # The NFS message's main operation (an NFSv3 procedure; an NFSv4 COMPOUND's first operation that does
        # more than set the scene: READ in SEQUENCE PUTFH READ), for the transaction's facts; and the capture's
        # file names (nfs_names) to name its handle from.  Both left only where an analysis reads them.
        self.main: NfsOp | None = None
        self.names: NameMap | None = None
        self.label: str | None = None        # "NFSv3", "NFSv4.1", "MOUNTv3", ...
        # What the program dissector kept of a call to decode its reply (NFSv3 ACCESS: the mask asked
        # for), carried from the call to its reply as tshark's RPC layer carries its call data.
        self.call_facts: object = None

    @property
    def is_call(self) -> bool:
        return self.msgtype == 0

    def __repr__(self) -> str:
        return f"<RpcInfo xid=0x{self.xid:08x} {MSG_TYPES.get(self.msgtype, self.msgtype)} " \
               f"{self.prog}/{self.vers}/{self.proc}>"


_CALL_COST: Final = 512     # an outstanding call's entry (key, list, strings), charged to the memory budget


@mypyc_attr(serializable=True, allow_interpreted_subclasses=True)
class _Calls(Holder):
    """Calls per flow and XID (``call_key``): the outstanding ones, and the most recently answered.

    Outstanding calls are bounded (``limit``) so that unanswered calls cannot grow without limit; the
    oldest goes first.  A reply moves its call to the answered ones, themselves bounded (``answered``),
    so that a reply seen again (retransmitted, or rebuilt from its Reply chunk) still finds its call
    while memory follows the calls in flight, not the length of the capture.  With a memory budget, each
    outstanding call is charged to it and the oldest are given up past it.

    The outstanding calls are a plain dict (compiled, its operations are direct; it keeps insertion
    order, and its oldest goes only past the limit, rarely); the answered ones, which lose their oldest
    at every reply once full, an ordered dict, which finds its first entry in constant time.
    """

    __slots__ = ("by_key", "answered", "limit", "answered_limit", "budget")

    def __init__(self, limit: int = 65536, answered: int = 4096, budget: Budget | None = None) -> None:
        # [prog, vers, proc, call frame, call time, label, program name, procedure name, call facts]
        self.by_key: dict[Any, Any] = {}
        self.answered: OrderedDict[Any, Any] = OrderedDict()
        self.limit = limit
        self.answered_limit = answered
        self.name = "outstanding RPC calls"
        self.held = 0
        self.budget = budget
        if budget is not None:
            budget.join(self)

    def add(self, key: Any, value: Any) -> None:
        d = self.by_key
        if key in d:
            del d[key]             # a call made again goes to the end
        elif self.budget is not None:
            self.budget.charge(self, _CALL_COST)
        d[key] = value
        if len(d) > self.limit:
            del d[next(iter(d))]
            self._released(1)
        a = self.answered
        if key in a:               # not pop(key, None): compiled, a method call is generic
            del a[key]

    def _released(self, n: int) -> None:
        if self.budget is not None:
            self.budget.release(self, n * _CALL_COST)

    def shed(self, need: int) -> int:
        """Memory budget: forget the oldest outstanding calls (their replies show no procedure)."""
        d = self.by_key
        n = min(len(d), -(-need // _CALL_COST))
        for key in list(islice(d, n)):     # listed once: the first key again and again is quadratic
            del d[key]
        self._released(n)
        return n

    def reply(self, key: Any) -> Any:
        """The call a reply answers, or None; the call moves to the answered ones."""
        d = self.by_key
        value = d.get(key)
        if value is None:
            return self.answered.get(key)
        del d[key]
        self._released(1)
        a = self.answered
        a[key] = value
        if len(a) > self.answered_limit:
            del a[next(iter(a))]           # the oldest, found in constant time by the ordered dict
        return value


def calls_of(ctx: Session) -> _Calls:
    """The session's table of RPC calls, charged to its memory budget."""
    calls: _Calls | None = ctx.state.get("rpc.calls")
    if calls is None:
        calls = ctx.state["rpc.calls"] = _Calls(budget=ctx.budget)
    return calls


RPC: Final[Note[RpcInfo]] = Note("rpc")     # the RPC message of the packet


def call_key(flow: tuple | None, xid: int) -> tuple:
    """A call's key in ``_Calls``: its flow's two parts and its XID, one flat tuple (a nested one is
    hashed and compared a level deeper at each of the four to six look-ups of a call and its reply)."""
    if flow is None:
        return (None, None, xid)
    return (flow[0], flow[1], xid)


def rpc_flow(pkt: Packet) -> tuple:
    """Both directions of one connection: where a call and its reply meet."""
    conv: Connection | None = pkt.conv
    if conv is not None:
        return ("conn", conv.conn_id)
    a, b = pkt.src, pkt.dst
    return (a, b) if a <= b else (b, a)


def current_rpc(pkt: Packet) -> RpcInfo | None:
    return pkt.noted(RPC)


def register_program(prog: int, name: str, procs: dict[int, dict[int, str]]) -> None:
    PROGRAM_NAMES[prog] = name
    for vers, names in procs.items():
        PROC_NAMES[(prog, vers)] = names


def proc_name(prog: int | None, vers: int | None, proc: int | None) -> str | None:
    names = PROC_NAMES.get((prog, vers))  # type: ignore[arg-type]
    if names is None:
        return None
    return names.get(proc)  # type: ignore[arg-type]


def _auth(cur: Cursor, lay: Any, label: str, info: RpcInfo | None) -> int:   # a Layer or a NullLayer
    sub = lay.child("rpc.auth", None, cur.pos, 8, label)
    start = cur.pos
    flavor = cur.u32("auth flavor")
    sub.add(AUTH_FLAVOR, flavor, start, 4)
    body, n = cur.opaque_span("auth body")
    sub.add(AUTH_LENGTH, n, start + 4, 4)
    sub.length = cur.pos - start
    if n > 400:
        raise XdrError("auth body (RFC 5531: at most 400 bytes)", n, 400)
    if info is None:          # a verifier: its body is opaque here
        if n and lay is not NULL:
            sub.add(AUTH_BODY, bytes(cur.buf[body:body + n]), body, n)
        return flavor
    info.cred_flavor = flavor
    b = Cursor(cur.buf, body, body + n)
    if flavor == 1:       # AUTH_SYS: stamp, machine name, uid, gid, gids<16>
        p = b.pos
        sub.add(AUTH_STAMP, b.u32("stamp"), p, 4)
        p = b.pos
        info.machinename = b.string("machine name")
        sub.add(AUTH_MACHINE, info.machinename, p, b.pos - p)
        p = b.pos
        info.uid = b.u32("uid")
        sub.add(AUTH_UID, info.uid, p, 4)
        p = b.pos
        info.gid = b.u32("gid")
        sub.add(AUTH_GID, info.gid, p, 4)
        p = b.pos
        ngids = b.count(4, "aux gids")
        sub.add(AUTH_NGIDS, ngids, p, 4)
        for _ in range(ngids):
            p = b.pos
            sub.add(AUTH_GID, b.u32("gid"), p, 4)
    elif flavor == 6:     # RPCSEC_GSS (RFC 2203): version, procedure, sequence, service, context handle
        p = b.pos
        sub.add(GSS_VERSION, b.u32("gss version"), p, 4)
        p = b.pos
        info.gss_proc = b.u32("gss procedure")
        sub.add(GSS_PROC, info.gss_proc, p, 4)
        p = b.pos
        info.gss_seq = b.u32("gss sequence")
        sub.add(GSS_SEQ, info.gss_seq, p, 4)
        p = b.pos
        info.gss_service = b.u32("gss service")
        sub.add(GSS_SERVICE, info.gss_service, p, 4)
        p = b.pos
        ctxh = b.opaque("gss context")
        sub.add(GSS_CONTEXT, ctxh, p, b.pos - p)
    elif n:
        sub.add(AUTH_BODY, bytes(cur.buf[body:body + n]), body, n)
    return flavor


class NullLayer:
    """Stands in for a layer while a walk only gathers facts; the tree is built on demand by a second walk."""

    __slots__ = ("length",)

    def __init__(self) -> None:
        self.length = 0

    def add(self, field: Field, value: Any, off: int = -1, length: int = 0) -> None:
        return None

    def child(self, *args: Any, **kw: Any) -> "NullLayer":
        return self


NULL: Final = NullLayer()


def _walk_header(buf: bytes, off: int, end: int, info: RpcInfo, lay: Any) -> int:
    """The call or reply header; returns where the body starts.  ``info`` is filled, ``lay`` gets the items."""
    cur = Cursor(buf, off + 8, end)
    lay.add(XID, info.xid, off, 4)
    lay.add(MSGTYP, info.msgtype, off + 4, 4)
    if info.msgtype == 0:
        p = cur.pos
        info.rpcvers, info.prog, info.vers, info.proc = (cur.u32("rpcvers"), cur.u32("prog"), cur.u32("vers"),
                                                         cur.u32("proc"))
        lay.add(VERSION, info.rpcvers, p, 4)
        lay.add(PROGRAM, info.prog, p + 4, 4)
        lay.add(PROGVERS, info.vers, p + 8, 4)
        lay.add(PROCEDURE, info.proc, p + 12, 4)
        info.prog_name = PROGRAM_NAMES.get(info.prog)
        info.proc_name = proc_name(info.prog, info.vers, info.proc)
        if info.proc_name:
            lay.add(PROC_NAME, info.proc_name, p + 12, 4)
        _auth(cur, lay, "Credentials", info)
        _auth(cur, lay, "Verifier", None)
        return cur.pos
    if info.call_frame is not None:
        lay.add(PROGRAM, info.prog)
        lay.add(PROGVERS, info.vers)
        lay.add(PROCEDURE, info.proc)
        if info.proc_name:
            lay.add(PROC_NAME, info.proc_name)
        lay.add(REQFRAME, info.call_frame)
        lay.add(TIME, info.delay)
    p = cur.pos
    info.reply_stat = stat = cur.u32("reply_stat")
    lay.add(REPLYSTAT, stat, p, 4)
    if stat == 0:
        _auth(cur, lay, "Verifier", None)
        p = cur.pos
        info.accept_stat = acc = cur.u32("accept_stat")
        lay.add(ACCEPTSTAT, acc, p, 4)
        if acc == 2:
            p = cur.pos
            lay.add(PVERS_MIN, cur.u32("low"), p, 4)
            lay.add(PVERS_MAX, cur.u32("high"), p + 4, 4)
    elif stat == 1:
        p = cur.pos
        info.reject_stat = rej = cur.u32("reject_stat")
        lay.add(REJECTSTAT, rej, p, 4)
        if rej == 0:
            p = cur.pos
            lay.add(VERS_MIN, cur.u32("low"), p, 4)
            lay.add(VERS_MAX, cur.u32("high"), p + 4, 4)
        elif rej == 1:
            p = cur.pos
            lay.add(AUTHSTAT, cur.u32("auth_stat"), p, 4)
    return cur.pos


def _fill(lay: Any, buf: bytes, off: int, end: int, info: RpcInfo) -> None:    # a Layer or a NullLayer
    scratch = RpcInfo(info.xid, info.msgtype)
    for name in ("prog", "vers", "proc", "proc_name", "call_frame", "delay"):
        setattr(scratch, name, getattr(info, name))
    try:
        body = _walk_header(buf, off, end, scratch, lay)
    except XdrError:
        return
    lay.add(BODY_LEN, end - body, body, end - body)


# A call's header words: xid, type, rpcvers (8), prog (12), vers (16), proc (20), cred flavor (24), cred
# length (28); a reply's: xid, type, reply_stat (8), verifier flavor (12), verifier length (16).


def _call_facts(buf: bytes, off: int, end: int, info: RpcInfo) -> int:
    """The facts of a well-formed call header, read word by word (``xdr.u32``: compiled, machine integers,
    where an unpack is a generic call making a tuple and an int object a word); returns where the body
    starts, or -1 when anything is short or out of range (the careful walk then says what)."""
    if end - off < 40:
        return -1
    clen = u32(buf, off + 28)
    if clen > 400:
        return -1
    cfl = u32(buf, off + 24)
    cb = off + 32
    ce = cb + clen
    vp = cb + ((clen + 3) & ~3)
    if vp + 8 > end:
        return -1
    vlen = u32(buf, vp + 4)
    body = vp + 8 + ((vlen + 3) & ~3)
    if vlen > 400 or body > end:
        return -1
    if cfl == 1:            # AUTH_SYS: stamp, machine name, uid, gid, gids
        if ce - cb < 8:
            return -1
        nlen = u32(buf, cb + 4)
        q = cb + 8 + ((nlen + 3) & ~3)
        if nlen > ce - cb - 8 or q + 12 > ce:
            return -1
        if u32(buf, q + 8) * 4 > ce - q - 12:
            return -1
        info.machinename = buf[cb + 8:cb + 8 + nlen].decode("utf-8", "replace")
        info.uid = u32(buf, q)
        info.gid = u32(buf, q + 4)
    elif cfl == 6:          # RPCSEC_GSS: version, procedure, sequence, service, context handle
        if ce - cb < 20:
            return -1
        if ((u32(buf, cb + 16) + 3) & ~3) > ce - cb - 20:
            return -1
        info.gss_proc = u32(buf, cb + 4)
        info.gss_seq = u32(buf, cb + 8)
        info.gss_service = u32(buf, cb + 12)
    prog = u32(buf, off + 12)
    vers = u32(buf, off + 16)
    proc = u32(buf, off + 20)
    info.rpcvers = u32(buf, off + 8)
    info.prog = prog
    info.vers = vers
    info.proc = proc
    info.prog_name = PROGRAM_NAMES.get(prog)
    names = PROC_NAMES.get((prog, vers))
    info.proc_name = names.get(proc) if names is not None else None
    info.cred_flavor = cfl
    return body


def _reply_facts(buf: bytes, off: int, end: int, info: RpcInfo) -> int:
    """The facts of an accepted reply header (the common case), or -1 (the careful walk takes it)."""
    if end - off < 24:
        return -1
    vlen = u32(buf, off + 16)
    if u32(buf, off + 8) != 0 or vlen > 400:
        return -1
    p = off + 20 + ((vlen + 3) & ~3)
    if p + 4 > end:
        return -1
    acc = u32(buf, p)
    p += 4
    if acc == 2:
        if p + 8 > end:
            return -1
        p += 8
    info.reply_stat = 0
    info.accept_stat = acc
    return p


def _fill_layer(lay: Layer) -> None:
    info, end = lay._vals
    _fill(lay, lay.buf, lay.off, end, info)


# Final: compiled, a C static (a function named as a value is otherwise a look-up in the module's dict)
_FILL_LAYER: Final = _fill_layer


def dissect_rpc(pkt: Packet, buf: bytes, off: int, end: int, ctx: Any, flow: Any = None,
                quiet: bool = False) -> RpcInfo | None:
    """One whole (or reduced) RPC message in ``buf[off:end]``.  Returns its facts, or None if unreadable.

    ``quiet``: the info column already names this message (a second view of it in the same packet)."""
    if end - off < 8:
        pkt.truncated("rpc", end - off, 8)
        return None
    # read one by one: compiled, machine integers (an unpack gives a tuple of Any, each comparison generic)
    xid = u32(buf, off)
    mtype = u32(buf, off + 4)
    info = RpcInfo(xid, mtype)
    frame = pkt.frame
    info.frame = frame.num
    info.length = end - off
    lay = pkt.add_layer("rpc", None, buf, off, end - off, "Remote Procedure Call")
    lay._vals = (info, end)     # what the fill needs: the tree is made only when somebody asks for it
    lay._fill = _FILL_LAYER
    if mtype > 1:
        pkt.set_malformed(f"rpc: message type {mtype} is neither call (0) nor reply (1)")
        return info
    calls = calls_of(ctx)
    key = call_key(flow, xid)  # plain tuple: see docs/architecture.md
    if mtype == 0:
        body = _call_facts(buf, off, end, info)
    else:
        call = calls.reply(key)
        if call is not None:
            info.prog, info.vers, info.proc, info.call_frame, ts, info.label, info.prog_name, info.proc_name, \
                info.call_facts = call
            info.delay = (frame.ts - ts) / 1e9
        body = _reply_facts(buf, off, end, info)
    if body < 0:
        try:
            body = _walk_header(buf, off, end, info, NULL)
        except XdrError as e:
            pkt.set_malformed(f"rpc: {e}")
            _set_info(pkt, info)
            return info
    lay.length = body - off
    if mtype == 0:
        if info.rpcvers != 2:
            pkt.add_expert("warning", "protocol", f"RPC version {info.rpcvers}, not 2", "RFC 5531: rpcvers")
        # a list: the program dissector's label is filled in below without a new entry
        entry: list[object] = [info.prog, info.vers, info.proc, frame.num, frame.ts, None, info.prog_name,
                               info.proc_name, None]
        calls.add(key, entry)
        body_ok = True
    else:
        reply_stat = info.reply_stat
        reject_stat = info.reject_stat
        if reply_stat is None or (reply_stat != 0 and reply_stat != 1):
            pkt.set_malformed(f"rpc: reply status {reply_stat} is not defined")
        elif reject_stat is not None and reject_stat != 0 and reject_stat != 1:
            pkt.set_malformed(f"rpc: reject status {reject_stat} is not defined")
        body_ok = info.reply_stat == 0 and info.accept_stat == 0
    pkt.note(RPC, info)
    prog = info.prog
    fn = rpc_program.by_key.get(prog) if prog is not None else None
    if fn is None and prog is not None:
        # programs learnt from the capture itself (an NFSv4 client's callback program)
        learnt = ctx.state.get("rpc.programs") if hasattr(ctx, "state") else None
        fn = learnt.get(prog) if learnt else None
    gss_proc = info.gss_proc
    gss_service = info.gss_service
    # RPCSEC_GSS data with integrity or privacy (services 2, 3): the body is wrapped, not shown
    wrapped = (gss_proc is not None and gss_proc == 0 and gss_service is not None
               and (gss_service == 2 or gss_service == 3))
    if fn is not None and body_ok and not wrapped:
        fn.dissect(pkt, buf, body, end, ctx)
        if mtype == 0:
            entry[5] = info.label     # the reply is named as its call was (NFSv4.2 COMPOUND ...)
            entry[8] = info.call_facts
    if not quiet and wants_info(ctx):
        _set_info(pkt, info)
    return info


_RDMA_PROTOS: Final = frozenset(("", "RoCEv2", "RoCE", "InfiniBand", "RPCoRDMA", "RPC-over-RDMA"))


def _set_info(pkt: Packet, info: RpcInfo) -> None:
    mtype = info.msgtype
    what = "Call" if mtype == 0 else "Reply" if mtype == 1 else f"type {mtype}"
    label = info.label
    procedure = info.proc_name
    ops = info.ops
    if label is not None and procedure:
        # the common lines made in one step (an NFSv4 COMPOUND's with its operations' names)
        text = f"| {label} {procedure} {' '.join(ops)} {what}" if ops else f"| {label} {procedure} {what}"
    else:
        if label is not None:
            name = f"{label} {procedure or f'proc-{info.proc}'}"
            if info.ops:
                name += " " + " ".join(info.ops)
        elif info.prog is not None:
            pname = info.prog_name or f"program {info.prog}"
            name = f"{pname} V{info.vers} {procedure or f'proc-{info.proc}'}"
        else:
            name = "RPC"
        text = f"| {name} {what}"
    if mtype == 1:
        acc = info.accept_stat
        if acc is not None and acc != 0:
            text += f" {ACCEPT_SHORT.get(acc, acc)}"
    if info.reject_stat is not None:
        text += f" denied {REJECT_STATS.get(info.reject_stat, info.reject_stat)}"
    if pkt.proto in _RDMA_PROTOS:
        pkt.proto = "RPC"
    pkt.add_info(text)


# --- encoding (tests and the traffic generator) -------------------------------------------------------
def encode_auth_sys(stamp: int = 0, machine: str = "client", uid: int = 0, gid: int = 0,
                    gids: tuple[int, ...] = ()) -> tuple[int, bytes]:
    from .xdr import p32, pstring
    return 1, p32(stamp) + pstring(machine) + p32(uid, gid, len(gids), *gids)


def encode_call(xid: int, prog: int, vers: int, proc: int, body: bytes = b"",
                cred: tuple[int, bytes] = (0, b""), verf: tuple[int, bytes] = (0, b"")) -> bytes:
    """An RPC call message (RFC 5531 §9): header, credential, verifier, then ``body``."""
    from .xdr import p32, popaque
    return p32(xid, 0, 2, prog, vers, proc) + p32(cred[0]) + popaque(cred[1]) + p32(verf[0]) + \
        popaque(verf[1]) + body


def encode_reply(xid: int, body: bytes = b"", accept_stat: int = 0, verf: tuple[int, bytes] = (0, b""),
                 denied: int | None = None) -> bytes:
    """An accepted reply with ``accept_stat`` then ``body``, or (``denied`` 0/1) a rejected one."""
    from .xdr import p32, popaque
    if denied is not None:
        return p32(xid, 1, 1, denied) + (p32(2, 2) if denied == 0 else p32(1)) + body
    return p32(xid, 1, 0) + p32(verf[0]) + popaque(verf[1]) + p32(accept_stat) + body
