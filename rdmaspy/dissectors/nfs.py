"""NFS and its side programs over ONC RPC.

NFSv2 and NFSv3 (RFC 1094, 1813) are decoded in full from their XDR declarations (``nfs2.py``,
``nfs3.py``, on the engine of ``xdrlang.py``): every procedure's arguments and results, named as tshark
names them; so are MOUNT, NLM and NFSACL (``nfs_side.py``), every NFSv4 COMPOUND operation (``nfs4.py``:
v4.0, RFC 7530; ``nfs41.py``: v4.1, v4.2 and the xattr operations, RFC 8881, 7862, 8276) and the NFSv4.1
backchannel's CB_COMPOUND (``nfs41.py``).  The declarations mark the DDP-eligible items of the
RPC-over-RDMA binding (RFC 8267): READ result data, WRITE argument data, READLINK result, SYMLINK /
CREATE(NF4LNK) argument.  Where such an item lies is recorded on the RPC facts (``RpcInfo.ddp``) so that
analysis can tie chunk data to it.

The summary path reads only what it needs (a v3 reply's status, the DDP items' places: ``_v3_write_call``,
``_v3_read_reply``); the full structure is decoded when the layer is filled (``-V``, JSON, a filter
naming nfs.* fields).
"""
from __future__ import annotations

from ..fields import Field, declaring, protocol, repeatable
from ..packet import Layer, Packet
from ..registry import Dissector
from ..session import Session, wants_facts
from ..typenames import Any, Callable, Final
from . import nfs2, nfs3, nfs4, nfs4_attrs, nfs41, nfs_names, nfs_side
from .nfs_names import Lookup, NameMap, names_of
from .onc_rpc import NULL, RPC, DdpItem, NfsOp, RpcInfo, current_rpc, register_program, rpc_program
from .rpcrdma import CHUNKS
from .xdr import Cursor, XdrError, u32
from .xdrlang import VOID, PlainWalk, XdrType, field

declaring(__name__)
protocol("nfs", "Network File System")
protocol("nfs.op", "NFS operation")
protocol("mount", "MOUNT")
protocol("nlm", "NLM")
protocol("nfsacl", "NFSACL")
repeatable("nfs", "mount", "nlm", "nfsacl")   # one per RPC message; an NFSv4 COMPOUND has many ops

NFS_PROG: Final = 100003
MOUNT_PROG: Final = 100005
NLM_PROG: Final = 100021
NFSACL_PROG: Final = 100227
NFS_CB_PROG: Final = 0x40000000      # the program number Linux clients give their NFSv4 callback service

NFS2_PROCS: Final = {0: "NULL", 1: "GETATTR", 2: "SETATTR", 3: "ROOT", 4: "LOOKUP", 5: "READLINK", 6: "READ",
              7: "WRITECACHE", 8: "WRITE", 9: "CREATE", 10: "REMOVE", 11: "RENAME", 12: "LINK", 13: "SYMLINK",
              14: "MKDIR", 15: "RMDIR", 16: "READDIR", 17: "STATFS"}
NFS3_PROCS: Final = {0: "NULL", 1: "GETATTR", 2: "SETATTR", 3: "LOOKUP", 4: "ACCESS", 5: "READLINK", 6: "READ",
              7: "WRITE", 8: "CREATE", 9: "MKDIR", 10: "SYMLINK", 11: "MKNOD", 12: "REMOVE", 13: "RMDIR",
              14: "RENAME", 15: "LINK", 16: "READDIR", 17: "READDIRPLUS", 18: "FSSTAT", 19: "FSINFO",
              20: "PATHCONF", 21: "COMMIT"}
NFS4_PROCS: Final = {0: "NULL", 1: "COMPOUND"}
NFS4_OPS: Final[dict[int, str]] = nfs4.OP_NAMES
# COMPOUND operations that only set the scene (the session slot, the current and saved filehandles):
# a COMPOUND is named by its first other operation.
NFS4_SCENE_OPS: Final = frozenset({"SEQUENCE", "PUTFH", "PUTROOTFH", "PUTPUBFH", "SAVEFH", "RESTOREFH", "GETFH"})
NFS_CB_PROCS: Final = {0: "CB_NULL", 1: "CB_COMPOUND"}
NFS_CB_OPS: Final[dict[int, str]] = nfs41.CB_OP_NAMES
MOUNT_PROCS: Final = {0: "NULL", 1: "MNT", 2: "DUMP", 3: "UMNT", 4: "UMNTALL", 5: "EXPORT"}
NLM_PROCS: Final = {0: "NULL", 1: "TEST", 2: "LOCK", 3: "CANCEL", 4: "UNLOCK", 5: "GRANTED", 6: "TEST_MSG",
             7: "LOCK_MSG", 8: "CANCEL_MSG", 9: "UNLOCK_MSG", 10: "GRANTED_MSG", 11: "TEST_RES", 12: "LOCK_RES",
             13: "CANCEL_RES", 14: "UNLOCK_RES", 15: "GRANTED_RES", 20: "SHARE", 21: "UNSHARE", 22: "NM_LOCK",
             23: "FREE_ALL"}
NFSACL2_PROCS: Final = {0: "NULL", 1: "GETACL", 2: "SETACL", 3: "GETATTR", 4: "ACCESS", 5: "GETXATTRDIR"}
NFSACL3_PROCS: Final = {0: "NULL", 1: "GETACL", 2: "SETACL", 3: "GETXATTRDIR"}

register_program(NFS_PROG, "NFS", {2: NFS2_PROCS, 3: NFS3_PROCS, 4: NFS4_PROCS})
register_program(MOUNT_PROG, "MOUNT", {1: MOUNT_PROCS, 2: MOUNT_PROCS, 3: MOUNT_PROCS})
register_program(NLM_PROG, "NLM", {v: NLM_PROCS for v in (1, 2, 3, 4)})
register_program(NFSACL_PROG, "NFSACL", {2: NFSACL2_PROCS, 3: NFSACL3_PROCS})
register_program(NFS_CB_PROG, "NFS CB", {1: NFS_CB_PROCS})

# The procedure, by version, as tshark names it
PROCS: Final = {2: field("nfs.procedure_v2", "V2 Procedure", names=NFS2_PROCS),
                3: field("nfs.procedure_v3", "V3 Procedure", names=NFS3_PROCS),
                4: field("nfs.procedure_v4", "V4 Procedure", names=NFS4_PROCS)}
CB_PROC: Final = field("nfs.cb_procedure", "CB Procedure", names=NFS_CB_PROCS)
STATUS: Final = nfs3.STATUS
TAG: Final = field("nfs.tag", "Tag", "str")
MINORVERSION: Final = field("nfs.minorversion", "minorversion")
OPS_COUNT: Final = field("nfs.ops.count", "Operations")
CB_OPS_COUNT: Final = field("nfs.cb.ops.count", "Operations")    # tshark shows a CB_COMPOUND's count as text
OPCODE: Final[Field] = nfs4.OPCODE
MALFORMED: Final = field("nfs.malformed", "Malformed: the walk stopped here", "str")
CB_OPCODE: Final = field("nfs.cb.operation", "Opcode", names=NFS_CB_OPS)
CB_IDENT: Final[Field] = nfs4.CB_IDENT
DDP_KIND: Final = Field("nfs.ddp.kind", 0, "DDP-eligible item", "str")
DDP_POS: Final = Field("nfs.ddp.position", 0, "Position in the RPC message", unit="bytes")
DDP_LEN: Final = Field("nfs.ddp.length", 0, "Length", unit="bytes")
DDP_INLINE: Final = Field("nfs.ddp.inline", 0, "Carried inline", "bool")
UNPARSED: Final = Field("nfs.unparsed_ops", 0, "Operations not walked", "str")


class _Walk:
    """Where the walk over one message stands: the RPC start and how reduced items are placed (an
    ``xdrlang.Walk`` for the declarations: ``call`` and ``ddp``)."""

    __slots__ = ("call", "base", "shift", "read_positions", "write_lengths", "write_at", "info", "lay", "reply",
                 "programs", "names", "name_map", "facts")

    def __init__(self, info: RpcInfo, lay: Any, base: int, chunks: tuple | None) -> None:
        self.call: object = info.call_facts       # what the reply's call left (RpcInfo.call_facts)
        self.base = base
        self.shift = 0
        self.info = info
        self.lay = lay
        self.reply = info.msgtype == 1
        # (positions of Read chunks in a call, the length of each Write chunk a reply returns) from the transport
        self.read_positions, self.write_lengths = chunks if chunks is not None else ((), ())
        self.write_at = 0                         # the Write chunk the reply's next DDP-eligible item takes
        self.programs: dict[int, Dissector] | None = None   # the capture's learnt RPC programs (callbacks)
        self.names: Lookup | None = None     # handles' names, for a fill to show (nfs3.FileHandle)
        self.name_map: NameMap | None = None  # the names a summary walk feeds (an NFSv4 COMPOUND's)
        self.facts = True                         # leave the binding's facts (RpcInfo.nfs): an analysis reads them

    def learn_program(self, prog: int) -> None:
        """The program number a client gives its callback service (SETCLIENTID, CREATE_SESSION,
        BACKCHANNEL_CTL): calls to it in the reverse direction are CB_COMPOUNDs (nfs4.CallbackProgram)."""
        programs = self.programs
        if programs is not None and prog not in programs and len(programs) < 64:
            programs[prog] = _NFS_CB

    def ddp(self, cur: Cursor, kind: str, lay: Any = None) -> tuple[int, int, bool]:
        """At a DDP-eligible opaque/string: read its length, find whether it was reduced, step over it;
        return where its bytes start, its length and whether they are inline."""
        n = cur.u32(kind)
        start = cur.pos
        pos = start - self.base + self.shift
        chunk = -1
        if self.reply:
            chunk, reduced = _write_chunk(self.write_lengths, self.write_at, n)
            if chunk >= 0:
                self.write_at = chunk + 1
        else:
            reduced = pos in self.read_positions
        padded = (n + 3) & ~3
        if reduced:
            self.shift += padded
        elif cur.left < n:
            # Missing bytes with no chunk for them: the message ends here.
            reduced = True
            cur.pos = cur.end
        else:
            cur.pos += min(padded, cur.left)
        item = DdpItem(kind, pos, n, not reduced, chunk)
        if self.info.ddp is None:
            self.info.ddp = []
        self.info.ddp.append(item)
        tree = self.lay if lay is None else lay
        if tree is NULL:
            return start, n, not reduced
        sub = tree.child("nfs.ddp", None, cur.pos, 0, f"DDP-eligible item: {kind}")
        sub.add(DDP_KIND, kind)
        sub.add(DDP_POS, pos)
        sub.add(DDP_LEN, n)
        sub.add(DDP_INLINE, not reduced)
        return start, n, not reduced


def _write_chunk(lengths: tuple[int, ...], at: int, n: int) -> tuple[int, bool]:
    """The Write chunk a reply's DDP-eligible item of ``n`` bytes takes (the next one; -1: none left) and
    whether the item was reduced into it: an empty or unused chunk (no bytes returned) leaves the item
    inline (RFC 8267 §4.3.1); an empty item counts as reduced into its chunk."""
    if at >= len(lengths):
        return -1, False
    return at, lengths[at] > 0 or n == 0


# --- NFSv2/v3 ---------------------------------------------------------------------------------------
def _nfs_declared(cur: Cursor, w: _Walk, proc: int | None, args: dict[int, XdrType],
                  results: dict[int, XdrType], v3: bool = False, keys: frozenset[str] | None = None) -> Any:
    """A v2 or v3 call's arguments or a reply's results, by their declarations (nfs2 / nfs3): their value
    (``keys``: only the members it names, the rest stepped over: the walk for the names)."""
    decl = (results if w.reply else args).get(proc) if proc is not None else None
    if decl is None or decl is VOID:    # NULL (and v2's ROOT, WRITECACHE): void results, no status
        return None
    if w.reply and cur.left >= 4:
        w.info.nfs_status = u32(cur.buf, cur.pos)     # the status, first, even if what follows is bad
    lay = w.lay
    if keys is not None:
        return decl.pick(cur, w, keys)
    value = decl.read(cur, w, None if lay is NULL else lay)
    if v3 and w.facts and proc is not None:
        _v3_facts(w.info, proc, w.reply, value)
    return value


def _v3_facts(info: RpcInfo, proc: int, reply: bool, value: Any) -> None:
    """The binding's facts of an NFSv3 READ, WRITE or READLINK from its decoded value (where the summary
    path's word reads, ``_v3_read_call`` and the others, gave way to the walk)."""
    if reply:
        if proc not in (5, 6, 7):
            return
        status, res = value
        f = NfsOp(proc, status)
        if status == 0:
            if proc == 6:
                f.count = res["count"]
                f.eof = res["eof"]
            elif proc == 7:
                f.count = res["count"]
                f.stable = res["committed"]
    elif proc == 6 or proc == 7:
        f = NfsOp(proc)
        f.offset = value["offset"]
        f.count = value["count"]
        if proc == 7:
            f.stable = value["stable"]
    else:
        return
    if proc != 7 or not reply:
        ddp = info.ddp
        f.ddp = ddp[-1] if ddp else None
    _add_op(info, f)


def _add_op(info: RpcInfo, f: NfsOp) -> None:
    ops = info.nfs
    if ops is None:
        info.nfs = [f]
    else:
        ops.append(f)


def _u64(buf: bytes, p: int) -> int:
    return u32(buf, p) << 32 | u32(buf, p + 4)


def _fact_op(op: int) -> bool:
    """The NFSv4 operations whose facts the binding's checks read: SEQUENCE, READ, WRITE, READLINK,
    READ_PLUS (compared one by one: a frozenset look-up boxes and hashes each operation of each COMPOUND)."""
    return op == 53 or op == 25 or op == 38 or op == 27 or op == 68


def _op_facts(info: RpcInfo, op: int, status: int | None, buf: bytes, body: int, had: int) -> None:
    """An NFSv4 operation's facts, read word by word from its arguments (``status`` None) or results at
    ``body``, which its walk has checked are there; its DDP-eligible item is the one the walk added
    (``info.ddp`` longer than ``had``)."""
    f = NfsOp(op, status)
    ddp = info.ddp
    if ddp is not None and len(ddp) > had:
        f.ddp = ddp[-1]
    if status is None:
        if op == 25 or op == 68:            # READ4args, READ_PLUS4args: stateid, offset, count
            f.offset = _u64(buf, body + 16)
            f.count = u32(buf, body + 24)
        elif op == 38:                      # WRITE4args: stateid, offset, stable, data
            f.offset = _u64(buf, body + 16)
            f.stable = u32(buf, body + 24)
    elif status == 0:
        if op == 25:                        # READ4resok: eof, data
            f.eof = u32(buf, body) != 0
        elif op == 38:                      # WRITE4resok: count, committed, verifier
            f.count = u32(buf, body)
            f.stable = u32(buf, body + 4)
    if op == 53 and (status is None or status == 0):
        # SEQUENCE4args / SEQUENCE4resok: sessionid, sequenceid, slotid, highest_slotid[, target_highest_slotid]
        f.session = buf[body:body + 16]
        f.sequence = u32(buf, body + 16)
        f.slot = u32(buf, body + 20)
        f.highest = u32(buf, body + 24)
        if status is not None:
            f.target = u32(buf, body + 28)
    _add_op(info, f)


def _scene_op(op: int) -> bool:
    """SEQUENCE, PUTFH, PUTPUBFH, PUTROOTFH, SAVEFH, RESTOREFH, GETFH: the operations that only set a COMPOUND's
    scene (NFS4_SCENE_OPS by number, compared one by one)."""
    return op == 53 or op == 22 or op == 24 or op == 23 or op == 32 or op == 31 or op == 10


def _fh_at(buf: bytes, p: int) -> bytes:
    """The handle whose length word is at ``p`` (an nfs_fh4 the walk has checked is there)."""
    return buf[p + 4:p + 4 + u32(buf, p)]


class _MainOp:
    """A COMPOUND's main operation (RpcInfo.main) found as its walk goes: the first that does more than set
    the scene, else the last; in a call the current handle it acts on (a PUTFH's, through SAVEFH and
    RESTOREFH), in a reply the handle the first GETFH after it returned."""

    __slots__ = ("main", "fh", "saved", "last_op", "last_status", "last_fact")

    def __init__(self) -> None:
        self.main: NfsOp | None = None
        self.fh: bytes | None = None        # the call's current handle (None: none, or the root's)
        self.saved: bytes | None = None
        self.last_op = -1                   # the last scene operation, the main one of a COMPOUND of them alone
        self.last_status: int | None = None
        self.last_fact: NfsOp | None = None

    def op(self, info: RpcInfo, op: int, status: int | None, buf: bytes, body: int, fact: bool) -> None:
        """Operation ``op`` walked, its body at ``body`` (its results when ``status`` is 0, nothing more when
        it failed); ``fact``: _op_facts has just added its facts."""
        main = self.main
        if main is not None:
            if op == 10 and status == 0 and main.fh is None and info.msgtype == 1:
                main.fh = _fh_at(buf, body)        # GETFH4resok: the handle the main operation made current
            return
        ops = info.nfs
        if _scene_op(op):
            if status is None:
                if op == 22:                        # PUTFH4args: the handle
                    self.fh = _fh_at(buf, body)
                elif op == 24 or op == 23:          # PUTROOTFH, PUTPUBFH
                    self.fh = None
                elif op == 32:                      # SAVEFH
                    self.saved = self.fh
                elif op == 31:                      # RESTOREFH
                    self.fh = self.saved
            self.last_op = op
            self.last_status = status
            self.last_fact = ops[-1] if fact and ops else None
            return
        f = ops[-1] if fact and ops else NfsOp(op, status)
        if status is None:
            f.fh = self.fh
            if op == 5:                             # COMMIT4args: offset, count
                f.offset = _u64(buf, body)
                f.count = u32(buf, body + 8)
        self.main = f

    def end(self, info: RpcInfo) -> None:
        main = self.main
        if main is None and self.last_op >= 0:
            main = self.last_fact if self.last_fact is not None else NfsOp(self.last_op, self.last_status)
            if main.status is None:
                main.fh = self.fh
        info.main = main


_V4_CALL_KEYS: Final = nfs_names.V4_CALL_KEYS
_NO_OPS: Final[frozenset[int]] = frozenset()
# The calls' operations whose names are read as they are stepped over (PUTFH, LINK, LOOKUP, OPEN, RENAME: what
# they pick fails where skip fails, with its words); CREATE's and READDIR's are read again, as they read alone
_V4_CALL_PICKED: Final = frozenset((22, 11, 15, 18, 29))
_V4_REPLY_KEYS: Final = nfs_names.V4_REPLY_KEYS
_V3_KEYS: Final = nfs_names.V3_KEYS
# the tables the walks read, as statics (compiled, another module's attribute is a look-up in its dict each time)
_V4_FAILED: Final[dict[int, dict[int, XdrType]]] = nfs4.FAILED
_CB_ARG_DECLS: Final[dict[int, XdrType]] = nfs41.CB_ARGS
_CB_RES_DECLS: Final[dict[int, XdrType]] = nfs41.CB_RES
_CB_FAILED: Final[dict[int, dict[int, XdrType]]] = nfs41.CB_FAILED


class _OpTable:
    """A COMPOUND's operation names and declarations (``names``, ``decls``: the dicts) in tuples by
    number up to the highest below 256: compiled, an index where a dict's look-up hashes and compares
    each operation's number twice; a number past them (ILLEGAL, a capture's own) is looked up."""

    __slots__ = ("names", "decls", "name_by_op", "decl_by_op")

    def __init__(self, names: dict[int, str], decls: dict[int, XdrType]) -> None:
        top = max([k for k in (*names, *decls) if 0 <= k < 256], default=-1) + 1
        self.names = names
        self.decls = decls
        self.name_by_op: tuple[str | None, ...] = tuple([names.get(k) for k in range(top)])
        self.decl_by_op: tuple[XdrType | None, ...] = tuple([decls.get(k) for k in range(top)])


_V4_CALL_OPS: Final = _OpTable(NFS4_OPS, nfs4.ARGS)
_V4_REPLY_OPS: Final = _OpTable(NFS4_OPS, nfs4.RES)
_CB_CALL_OPS: Final = _OpTable(NFS_CB_OPS, _CB_ARG_DECLS)
_CB_REPLY_OPS: Final = _OpTable(NFS_CB_OPS, _CB_RES_DECLS)


def _status4(lay: Any, cur: Cursor) -> int:
    """A COMPOUND's or an operation's nfsstat4, shown as tshark shows it (nfs.nfsstat4 and nfs.status)."""
    p = cur.pos
    status = cur.u32("status")
    if lay is not NULL:
        nfs4.STATUS4.show(lay, status, p)
    return status


def _failed(failed: dict[int, dict[int, XdrType]], op: int, status: int) -> XdrType | None:
    """What a failed operation carries beside its status (``failed``: nfs4.FAILED, nfs41.CB_FAILED), if
    anything: by that status, else by any error (nfs4.ANY_ERROR)."""
    by_status = failed.get(op)
    if by_status is None:
        return None
    decl = by_status.get(status)
    return decl if decl is not None else by_status.get(nfs4.ANY_ERROR)


def _compound(cur: Cursor, w: _Walk, table: _OpTable, op_field: Field, callback: bool,
              failed: dict[int, dict[int, XdrType]]) -> None:
    """A COMPOUND's operations, each read from its declaration (``table``: its names and nfs4.ARGS or
    nfs4.RES, nfs41.CB_ARGS or nfs41.CB_RES) when the layer is filled and skipped over by it on the summary path,
    as are the results some return with an error status (``failed``).  The walk stops at an operation
    number with no declaration (nothing tells where its arguments end)."""
    lay = w.lay
    info = w.info
    # typed: compiled, each operation's child, items and length are the Layer's own (``lay`` is Any); None
    # on the summary's walk, which shows nothing (NULL's add would be a generic call each time)
    tree: Layer | None = None if lay is NULL else lay
    if w.reply:
        info.nfs_status = _status4(lay, cur)
    p = cur.pos
    if tree is not None:
        tag = cur.string("tag")
        tree.add(TAG, tag, p, cur.pos - p)
    else:
        cur.skip_opaque("tag")      # the summary never shows it: not made into text
    if not w.reply:
        p = cur.pos
        minor = cur.u32("minorversion")
        if tree is not None:
            tree.add(MINORVERSION, minor, p, 4)
        if not callback:
            info.label = f"NFSv4.{minor}" if minor else "NFSv4"
        if callback:
            p = cur.pos
            ident = cur.u32("callback_ident")
            if tree is not None:
                tree.add(CB_IDENT, ident, p, 4)
    p = cur.pos
    nops = cur.count(4, "operations")
    if tree is not None:
        tree.add(CB_OPS_COUNT if callback else OPS_COUNT, nops, p, 4)
    ops: list[str] = []
    info.ops = ops
    # File names (nfs_names), fed by the summary walk: a call's current handle followed op by op, the
    # reply's GETFH and READDIR results read for the call's plan
    names = w.name_map if tree is None and not callback else None
    track: nfs_names.V4Call | None = None
    plan: tuple | None = None
    wanted: frozenset[int] = _NO_OPS
    results: dict[int, Any] | None = None     # made when the plan wants one
    ok = 0
    if names is not None:
        kept = info.call_facts
        if not w.reply:
            track = nfs_names.V4Call()
        elif isinstance(kept, tuple) and kept and kept[0] == "v4":
            plan = kept
            wanted = nfs_names.v4_wanted(kept)
            results = {}
    # The main operation and the handle it acts on (RpcInfo.main), for an analysis (w.facts)
    main = _MainOp() if w.facts and not callback else None
    name_by_op = table.name_by_op
    decl_by_op = table.decl_by_op
    known = len(name_by_op)
    for i in range(nops):
        p = cur.pos
        op = cur.u32("opcode")
        name: str | None
        decl: XdrType | None
        if op < known:
            name = name_by_op[op]
            decl = decl_by_op[op]
        else:
            name = table.names.get(op)
            decl = table.decls.get(op)
        if name is None:                    # the f-string as .get's default would be made for every op
            name = f"op{op}"
        ops.append(name)
        sub: Layer | None = None
        if tree is not None:
            sub = tree.child("nfs.op", None, p, 4, _op_label(i, name))
            sub._items = [(op_field, op, p, 4)]     # a new sub-tree: its first item, with no call
        fact = w.facts and not callback and _fact_op(op)
        st: int | None = None
        if w.reply:
            q = cur.pos
            st = cur.u32("status")
            if sub is not None:
                nfs4.STATUS4.show(sub, st, q)
            if st != 0:
                if fact:
                    _op_facts(info, op, st, cur.buf, cur.pos, len(info.ddp) if info.ddp is not None else 0)
                if main is not None:
                    main.op(info, op, st, cur.buf, cur.pos, fact)
                # A failed operation returns nothing but its status, except those of ``failed``
                carried = _failed(failed, op, st)
                if carried is not None:
                    if sub is None:
                        carried.skip(cur, w)
                    else:
                        carried.read(cur, w, sub)
                if sub is not None:
                    sub.length = cur.pos - p
                continue
            if ok == i:
                ok = i + 1          # done, as every operation before it
        if decl is None:
            rest = nops - i - 1
            if rest:
                lay.add(UNPARSED, f"{rest} more after {name}")
                ops.append("…")
            break
        body = cur.pos
        had = len(info.ddp) if fact and info.ddp is not None else 0
        if sub is not None:
            decl.read(cur, w, sub)
        elif results is not None and i in wanted:
            results[i] = decl.pick(cur, w, _V4_REPLY_KEYS)     # stepped over as skip does, the names read
        elif track is not None and op in _V4_CALL_PICKED:
            track.op(i, op, decl.pick(cur, w, _V4_CALL_KEYS))
        else:
            decl.skip(cur, w)
            if track is not None:
                track.op(i, op, _value(decl, cur.buf, p + 4, cur.pos, _V4_CALL_KEYS)
                         if op in nfs_names.V4_CALL_VALUES else None)
        if sub is not None:
            sub.length = cur.pos - p
        if fact:
            _op_facts(info, op, st, cur.buf, body, had)
        if main is not None:
            main.op(info, op, st, cur.buf, body, fact)
    if main is not None:
        main.end(info)
    if names is not None:
        if track is not None:
            info.call_facts = track.plan()
        elif plan is not None and results is not None:
            nfs_names.v4_bind(names, plan, results, ok, info.frame)


# "Operation 3: GETATTR", by operation name and place: made once, and the tree finds a label it has
# made safe by the same string (a new one each time would be hashed and compared in full)
_OP_LABELS: Final[dict[str, list[str]]] = {}


def _op_label(i: int, name: str) -> str:
    labels = _OP_LABELS.get(name)
    if labels is None:
        if len(_OP_LABELS) >= 512:          # the names are declared, but "op12345" is the capture's
            _OP_LABELS.clear()
        labels = _OP_LABELS[name] = []
    if i < len(labels):
        return labels[i]
    label = f"Operation {i}: {name}"
    if i == len(labels) and i < 64:
        labels.append(label)
    return label


def _value(decl: XdrType, buf: bytes, start: int, end: int, keys: frozenset[str]) -> Any:
    """An operation's arguments or results the summary walk stepped over (and checked), read again for
    the names (nfs_names): only the members named in ``keys``; None when they do not read alone (a
    DDP-eligible item reduced into a chunk)."""
    try:
        return decl.pick(Cursor(buf, start, end), PlainWalk(), keys)
    except XdrError:
        return None


def _chunks(pkt: Packet) -> tuple[frozenset[int], tuple[int, ...]] | None:
    return pkt.noted(CHUNKS)


def _scratch(info: RpcInfo) -> RpcInfo:
    s = RpcInfo(info.xid, info.msgtype)
    s.prog, s.vers, s.proc = info.prog, info.vers, info.proc
    s.call_facts = info.call_facts
    return s


def _walk_nfs(buf: bytes, off: int, end: int, info: RpcInfo, lay: Any, base: int, chunks: tuple | None,
              pkt: Packet | None, programs: dict[int, Dissector] | None = None,
              names: Lookup | None = None, name_map: NameMap | None = None, facts: bool = True,
              keys: frozenset[str] | None = None) -> Any:
    """The message's body walked (shown in ``lay`` unless NULL); a v2 or v3 body's value, None when
    it is void or malformed (``keys``: a v3 value's members the names read, the rest stepped over)."""
    if lay is not NULL:         # the summary's walk shows nothing (compiled, NULL's add is a generic call)
        proc_field = PROCS.get(info.vers) if info.vers is not None else None
        if info.proc is not None and proc_field is not None:
            lay.add(proc_field, info.proc)
    # as ints (-1: none): compiled, a comparison of an Optional[int] is a generic call
    vers = info.vers if info.vers is not None else -1
    proc = info.proc if info.proc is not None else -1
    cur = Cursor(buf, off, end)
    w = _Walk(info, lay, base, chunks)
    w.programs = programs
    w.names = names
    w.name_map = name_map
    w.facts = facts
    try:
        if vers == 3:
            return _nfs_declared(cur, w, info.proc, nfs3.ARGS, nfs3.RES, True, keys)
        elif vers == 2:
            return _nfs_declared(cur, w, info.proc, nfs2.ARGS, nfs2.RES)
        elif vers == 4 and proc == 1:
            _compound(cur, w, _V4_REPLY_OPS if w.reply else _V4_CALL_OPS, OPCODE, False, _V4_FAILED)
    except XdrError as e:
        if pkt is not None:
            pkt.add_expert("warning", "malformed", f"nfs: {e}")
        elif lay is not NULL:
            lay.add(MALFORMED, str(e), cur.pos, 0)
    return None


def _snoop(names: NameMap | None, info: RpcInfo, value: Any, calls: dict[int, Callable[[Any], tuple]],
           handle: Callable[[Any], bytes | None]) -> None:
    """A v2 or v3 message's part in naming handles (nfs_names): a call keeps what it names for its
    reply, a successful reply binds it."""
    if names is None or value is None or info.proc is None:
        return
    if info.msgtype == 0:
        keep = calls.get(info.proc)
        if keep is not None:
            info.call_facts = keep(value)
        return
    kept = info.call_facts
    if isinstance(kept, tuple) and value[0] == 0:
        nfs_names.bind_reply(names, kept, value, info.frame, handle=handle)


def _last_ddp(buf: bytes, p: int, end: int, info: RpcInfo, base: int, chunks: tuple | None,
              kind: str) -> DdpItem | None:
    """The one DDP-eligible item of an NFSv3 message, whose length word is at ``p`` (as _Walk.ddp does
    for a first item); None when the length word is not there."""
    if end - p < 4:
        return None
    n = u32(buf, p)
    p += 4
    pos = p - base
    chunk = -1
    if chunks is None:
        reduced = False
    elif info.msgtype == 1:
        chunk, reduced = _write_chunk(chunks[1], 0, n)
    else:
        reduced = pos in chunks[0]
    if not reduced and end - p < n:
        reduced = True          # missing bytes with no chunk for them: the message ends here
    item = DdpItem(kind, pos, n, not reduced, chunk)
    if info.ddp is None:
        info.ddp = [item]
    else:
        info.ddp.append(item)
    return item


def _v3_write_call(buf: bytes, off: int, end: int, info: RpcInfo, base: int, chunks: tuple | None,
                   facts: bool) -> bool:
    """WRITE3args (file, offset, count, stable, data) when well formed; False: the careful walk takes it."""
    if end - off < 4:
        return False
    fh_len = u32(buf, off)
    if fh_len > 64:                 # nfs_fh3 is opaque<64>: the walk says why it is not
        return False
    p = off + 4 + ((fh_len + 3) & ~3) + 16
    if p > end:
        return False
    item = _last_ddp(buf, p, end, info, base, chunks, "write_data")
    if item is None:
        return False
    if not facts:
        return True
    f = NfsOp(7)
    f.offset = _u64(buf, p - 16)
    f.count = u32(buf, p - 8)
    f.stable = u32(buf, p - 4)
    f.ddp = item
    _add_op(info, f)
    return True


def _v3_read_call(buf: bytes, off: int, end: int, info: RpcInfo) -> None:
    """READ3args (file, offset, count): what the READ asks for (a malformed one is left to the walk of
    the fill, which says why)."""
    if end - off < 4:
        return
    fh_len = u32(buf, off)
    p = off + 4 + ((fh_len + 3) & ~3)
    if fh_len > 64 or p + 12 > end:
        return
    f = NfsOp(6)
    f.offset = _u64(buf, p)
    f.count = u32(buf, p + 8)
    _add_op(info, f)


def _v3_write_reply(buf: bytes, off: int, end: int, info: RpcInfo) -> None:
    """WRITE3res (status, file_wcc, [count, committed, verifier]): what the WRITE says it wrote."""
    status = u32(buf, off)
    f = NfsOp(7, status)
    p = off + 4
    if status == 0:
        for attrs in (24, 84):           # wcc_data: pre_op_attr (wcc_attr), post_op_attr (fattr3)
            if p + 4 > end:
                return
            follows = u32(buf, p)
            if follows > 1:
                return
            p += 4 + attrs * follows
        if p + 8 > end:
            return
        f.count = u32(buf, p)
        f.stable = u32(buf, p + 4)
    _add_op(info, f)


def _v3_read_reply(buf: bytes, off: int, end: int, info: RpcInfo, base: int, chunks: tuple | None,
                   facts: bool) -> bool:
    """READ3res (status, file_attributes, count, eof, data) when well formed; False: the careful walk."""
    if end - off < 8:
        return False
    status = u32(buf, off)
    follows = u32(buf, off + 4)
    if follows > 1:                 # a boolean: the walk says why it is not
        return False
    p = off + 8
    if follows:
        p += 84
    if status:
        if p > end:
            return False
        info.nfs_status = status
        if facts:
            _add_op(info, NfsOp(6, status))
        return True
    p += 8
    if p > end or u32(buf, p - 4) > 1:     # count, eof (a boolean)
        return False
    info.nfs_status = status
    item = _last_ddp(buf, p, end, info, base, chunks, "read_data")
    if item is None:
        return False
    if not facts:
        return True
    f = NfsOp(6, 0)
    f.count = u32(buf, p - 8)
    f.eof = u32(buf, p - 4) == 1
    f.ddp = item
    _add_op(info, f)
    return True


def _v3_access_call(buf: bytes, off: int, end: int, info: RpcInfo) -> None:
    """ACCESS3args (object, access): the mask asked for, kept for the reply (which shows the rights
    granted of those asked, as tshark does)."""
    if end - off >= 4:
        p = off + 4 + ((u32(buf, off) + 3) & ~3)
        if p + 4 <= end:
            info.call_facts = u32(buf, p)


def _fill_nfs(lay: Layer) -> None:
    info, end, base, chunks, names = lay._vals
    _walk_nfs(lay.buf, lay.off, end, _scratch(info), lay, base, chunks, None, None,
              names.lookup(info.frame) if names is not None else None, None, False)


# Final: compiled, a C static (a function named as a value is otherwise a look-up in the module's dict)
_FILL_NFS: Final = _fill_nfs


def _fill_cb(lay: Layer) -> None:
    info, end, base, chunks, _names = lay._vals
    _walk_cb(lay.buf, lay.off, end, _scratch(info), lay, base, chunks, None)


_LABELS: Final = {2: "NFSv2", 3: "NFSv3", 4: "NFSv4"}


def dissect_nfs(pkt: Packet, buf: bytes, off: int, end: int, ctx: Any) -> None:
    info = pkt.noted(RPC)
    if info is None:
        return
    pkt.proto = "NFS"
    version = info.vers
    if info.label is None:
        info.label = (_LABELS.get(version) if version is not None else None) or f"NFSv{version}"
    vers = version if version is not None else -1       # an int: compared in C (see _walk_nfs)
    base = _rpc_start(pkt, off)
    chunks = pkt.noted(CHUNKS)
    names = names_of(ctx)
    lay = pkt.add_layer("nfs", None, buf, off, end - off, "Network File System")
    lay._vals = (info, end, base, chunks, names)     # what the fill needs to walk the body again
    lay._fill = _FILL_NFS
    facts = wants_facts(ctx)
    if facts:
        info.names = names
    if vers == 3:
        _dissect_v3(pkt, buf, off, end, info, base, chunks, names, facts)
        if facts:
            _v3_main(buf, off, end, info)
        return
    programs: dict[int, Dissector] | None = None
    if vers == 4:
        # a Session's get a direct call, compiled (``ctx`` is Any: a call by name)
        programs = ctx.get("rpc.programs", dict) if not isinstance(ctx, Session) else ctx.get("rpc.programs", dict)
    value = _walk_nfs(buf, off, end, info, NULL, base, chunks, pkt, programs, None, names, facts)
    if vers == 2:
        _snoop(names, info, value, nfs_names.V2_CALLS, nfs_names.v2_object)


def _dissect_v3(pkt: Packet, buf: bytes, off: int, end: int, info: RpcInfo, base: int, chunks: tuple | None,
                names: NameMap | None, facts: bool) -> None:
    # Most procedures carry no DDP-eligible item and name no file: a call needs no walk, a reply
    # only its status.
    proc = info.proc if info.proc is not None else -1
    names_only = False     # walked for the names alone: what is wrong there, the fill shows
    if info.msgtype == 0:
        if proc != 7 and proc not in nfs_names.V3_CALLS:
            if proc == 4:
                _v3_access_call(buf, off, end, info)
            elif proc == 6 and facts:
                _v3_read_call(buf, off, end, info)
            return
        if proc == 7 and _v3_write_call(buf, off, end, info, base, chunks, facts):
            return
        names_only = proc != 7 and proc != 10
        if names_only and names is None:
            return          # nothing learns the names: no walk
    elif end - off >= 4:
        if proc != 5 and proc != 6:
            status = u32(buf, off)
            info.nfs_status = status
            if proc == 7 and facts:
                _v3_write_reply(buf, off, end, info)
            if status != 0 or proc not in nfs_names.V3_CALLS or not isinstance(info.call_facts, tuple):
                return
            names_only = True
        elif proc == 6 and _v3_read_reply(buf, off, end, info, base, chunks, facts):
            return
    value = _walk_nfs(buf, off, end, info, NULL, base, chunks, None if names_only else pkt, None, None, None,
                      facts, _V3_KEYS if names_only else None)
    _snoop(names, info, value, nfs_names.V3_CALLS, nfs_names.v3_object)


def _v3_main(buf: bytes, off: int, end: int, info: RpcInfo) -> None:
    """An NFSv3 message's procedure as its main operation (RpcInfo.main): the binding's facts of it where it
    has them; in a call the handle it acts on (every procedure's arguments but NULL's begin with one) and a
    COMMIT's offset and count; in a reply its status."""
    proc = info.proc
    if proc is None or proc == 0:
        return
    main: NfsOp | None = None
    for f in info.nfs or ():
        if f.op == proc:
            main = f
            break
    reply = info.msgtype == 1
    if main is None:
        main = NfsOp(proc, info.nfs_status if reply else None)
    if not reply and end - off >= 4:
        n = u32(buf, off)
        p = off + 4 + ((n + 3) & ~3)
        if n <= 64 and p <= end:            # nfs_fh3 is opaque<64>
            main.fh = buf[off + 4:off + 4 + n]
            if proc == 21 and p + 12 <= end:      # COMMIT3args: file, offset, count
                main.offset = _u64(buf, p)
                main.count = u32(buf, p + 8)
    info.main = main


def _walk_cb(buf: bytes, off: int, end: int, info: RpcInfo, lay: Any, base: int, chunks: tuple | None,
             pkt: Packet | None) -> None:
    if info.proc is not None:
        lay.add(CB_PROC, info.proc)
    if info.proc != 1:
        return
    cur = Cursor(buf, off, end)
    w = _Walk(info, lay, base, chunks)
    try:
        _compound(cur, w, _CB_REPLY_OPS if w.reply else _CB_CALL_OPS, CB_OPCODE, True, _CB_FAILED)
    except XdrError as e:
        if pkt is not None:
            pkt.add_expert("warning", "malformed", f"nfs callback: {e}")
        elif lay is not NULL:
            lay.add(MALFORMED, str(e), cur.pos, 0)


def dissect_nfs_cb(pkt: Packet, buf: bytes, off: int, end: int, ctx: Any) -> None:
    info = current_rpc(pkt)
    if info is None:
        return
    pkt.proto = "NFS CB"
    info.label = "NFSv4.1 CB"
    base = _rpc_start(pkt, off)
    chunks = _chunks(pkt)
    lay = pkt.add_layer("nfs", None, buf, off, end - off, "Network File System callback")
    lay._vals = (info, end, base, chunks, None)
    lay._fill = _fill_cb
    _walk_cb(buf, off, end, info, NULL, base, chunks, pkt)


def _rpc_start(pkt: Packet, off: int) -> int:
    for lay in reversed(pkt.made_layers()):        # the RPC layer is made (only transport headers wait)
        if lay.proto == "rpc":
            return lay.off
    return off


# MOUNT, NLM and NFSACL: named on the summary path, decoded from their declarations (nfs_side) on fill
_SIDE_MALFORMED: Final = {p: field(f"{p}.malformed", "Malformed: the walk stopped here", "str")
                          for p in ("mount", "nlm", "nfsacl")}


class _SideWalk(PlainWalk):
    """A side program's walk: every item inline, and the handles' names (MOUNT's, NLM's, NFSACL's)."""

    __slots__ = ("names",)

    def __init__(self, call: object, names: Lookup | None) -> None:
        super().__init__(call)
        self.names = names


def _fill_side(lay: Layer) -> None:
    info, end, names = lay._vals
    proto = lay.proto
    vers = info.vers
    proc = info.proc
    if vers is None or proc is None:
        return
    lay.add(field(f"{proto}.procedure_v{vers}", f"V{vers} Procedure", names=PROC_TABLES.get((proto, vers))), proc)
    procs = nfs_side.PROGRAMS[_SIDE_PROGRAMS[proto]].get(vers)
    if procs is None:
        return
    decl = procs[info.msgtype].get(proc)
    if decl is None:
        return
    cur = Cursor(lay.buf, lay.off, end)
    try:
        decl.read(cur, _SideWalk(info.call_facts, names.lookup(info.frame) if names is not None else None), lay)
    except XdrError as e:
        lay.add(_SIDE_MALFORMED[proto], str(e), cur.pos, 0)


_FILL_SIDE: Final = _fill_side
_SIDE_PROGRAMS: Final = {"mount": MOUNT_PROG, "nlm": NLM_PROG, "nfsacl": NFSACL_PROG}
PROC_TABLES: Final = {**{("mount", v): MOUNT_PROCS for v in (1, 2, 3)}, **{("nlm", v): NLM_PROCS for v in (1, 2, 3, 4)},
                      ("nfsacl", 2): NFSACL2_PROCS, ("nfsacl", 3): NFSACL3_PROCS}
for (_proto, _vers), _names in PROC_TABLES.items():
    field(f"{_proto}.procedure_v{_vers}", f"V{_vers} Procedure", names=_names)


def _named(proto: str, label: str) -> Callable[[Packet, bytes, int, int, Any], None]:
    def dissect(pkt: Packet, buf: bytes, off: int, end: int, ctx: Any) -> None:
        info = current_rpc(pkt)
        pkt.proto = proto
        if info is not None:
            info.label = f"{label}v{info.vers}"
            names = names_of(ctx)
            lay = pkt.add_layer(proto.lower(), None, buf, off, end - off, label)
            lay._vals = (info, end, names)
            lay._fill = _FILL_SIDE
            if proto == "MOUNT" and info.proc == 1 and names is not None:
                _mount_root(pkt, buf, off, end, info, names)
    return dissect


def _mount_root(pkt: Packet, buf: bytes, off: int, end: int, info: RpcInfo, names: NameMap) -> None:
    """MNT: the call's export path kept (named ``server:path`` as Wireshark names it), the reply's
    handle bound to it as a root of full names."""
    procs = nfs_side.PROGRAMS[MOUNT_PROG].get(info.vers) if info.vers is not None else None
    if procs is None:
        return
    try:
        value = procs[info.msgtype][1].read(Cursor(buf, off, end), PlainWalk(), None)
    except XdrError:
        return          # the fill shows why (mount.malformed)
    if info.msgtype == 0:
        info.call_facts = ("root", f"{pkt.dst}:{value}")
    elif isinstance(info.call_facts, tuple) and value[0] == 0:
        nfs_names.mount_root(names, info.call_facts, value, info.frame)


class _Nfs(Dissector):
    """NFS, by its RPC program, called directly (``registry.Dissector``)."""

    def dissect(self, pkt: Packet, buf: bytes, off: int, end: int, ctx: Any) -> bool:
        dissect_nfs(pkt, buf, off, end, ctx)
        return True


rpc_program.register(NFS_PROG, _Nfs(dissect_nfs))
_NFS_CB: Final = Dissector(dissect_nfs_cb)      # under its own number and under each learnt one
rpc_program.register(NFS_CB_PROG, _NFS_CB)
rpc_program.register(MOUNT_PROG, _named("MOUNT", "MOUNT"))
rpc_program.register(NLM_PROG, _named("NLM", "NLM"))
rpc_program.register(NFSACL_PROG, _named("NFSACL", "NFSACL"))


# --- encoding (tests and the traffic generator): bodies that carry DDP-eligible items ----------------
def encode_v3_write_args(fh: bytes, offset: int, data: bytes, stable: int = 2, reduced: bool = False) -> bytes:
    """WRITE3args; with ``reduced`` the data stays out (it travels in a Read chunk), its length stays in."""
    from .xdr import p32, p64, popaque
    tail = p32(len(data)) if reduced else popaque(data)
    return popaque(fh) + p64(offset) + p32(len(data), stable) + tail


def encode_v3_read_res(data: bytes, eof: bool = True, reduced: bool = False) -> bytes:
    """READ3res (NFS3_OK, no attributes); with ``reduced`` the data went into a Write chunk."""
    from .xdr import p32, popaque
    tail = p32(len(data)) if reduced else popaque(data)
    return p32(0, 0, len(data), int(eof)) + tail


def encode_compound(ops: list[tuple[int, bytes]], minor: int = 2, tag: str = "",
                    status: int | None = None) -> bytes:
    """COMPOUND4args (``status`` None) or COMPOUND4res; each op is (opcode, encoded arguments or results,
    results starting with their status)."""
    from .xdr import p32, pstring
    head = pstring(tag) + p32(minor) if status is None else p32(status) + pstring(tag)
    return head + p32(len(ops)) + b"".join([p32(op) + body for op, body in ops])


# --- what an analysis reads of an NFS message's main operation (RpcInfo.main) by name ------------------
STABLE_HOW: Final = {0: "UNSTABLE", 1: "DATA_SYNC", 2: "FILE_SYNC"}    # stable_how (v3), stable_how4 (v4)
READ_OPS: Final = {3: 6, 4: 25}       # READ's procedure (NFSv3) or operation (NFSv4), by version
WRITE_OPS: Final = {3: 7, 4: 38}


def op_name(vers: int | None, op: int) -> str:
    """A main operation's name: an NFSv3 procedure's, an NFSv4 operation's ("READ", "OPEN")."""
    names = NFS3_PROCS if vers == 3 else NFS4_OPS if vers == 4 else NFS2_PROCS if vers == 2 else None
    name = names.get(op) if names is not None else None
    return name if name is not None else f"op{op}"


def status_name(vers: int | None, status: int) -> str:
    """An nfsstat3 or nfsstat4 by name ("NFS3ERR_NOENT", "NFS4ERR_STALE")."""
    names = nfs3.NFS3_STATUS if vers != 4 else nfs4_attrs.NFS4_STATUS
    name = names.get(status)
    return name if name is not None else str(status)


def moved(vers: int | None, reply: NfsOp) -> int | None:
    """The bytes a READ or WRITE says it moved: a READ's data (its DDP-eligible item, inline or not), a
    WRITE's count in its reply; None for another operation or one that failed."""
    if reply.status != 0:
        return None
    op = reply.op
    if op == READ_OPS.get(vers or 0):
        d = reply.ddp
        return d.length if d is not None else reply.count
    if op == WRITE_OPS.get(vers or 0):
        return reply.count
    return None


def asked(vers: int | None, call: NfsOp) -> int | None:
    """The bytes a READ asks for or a WRITE carries (its count; NFSv4's WRITE has none: its data's
    length), a COMMIT's count."""
    if call.count is not None:
        return call.count
    d = call.ddp
    if call.op == WRITE_OPS.get(vers or 0) and d is not None:
        return d.length
    return None
