"""The NFS facts of an RPC-over-RDMA transaction whose RPC is NFS, and their declaration.

What the NFS dissector leaves an analysis of a message's main operation (``RpcInfo.main``: an NFSv3
procedure, an NFSv4 COMPOUND's first operation that does more than set the scene) is summed up, once the
transaction closes, in an ``NfsFacts``: the operation, the file handle it acted on (or, in a reply, the
one a GETFH after it returned: an OPEN's file) with tshark's CRC-32 of it (``nfs.fh.hash``), the file's
name and full name as the capture named it (nfs_names), the offset and count asked for, the bytes the
operation says it moved (a READ's data, a WRITE's count), its status by number and name, a READ's eof, a
WRITE's stable_how and what the reply committed, and an NFSv4.1 SEQUENCE's session, slot and sequence
id.  The values are plain (hexadecimal text for the handle and the session), so the record crosses
processes and files as every record does.

``FACTS`` declares them for the RPC-over-RDMA model (``rpcrdma_facts.MODEL``): in a transaction's JSON
object they stand in ``nfs``, null unless the RPC is NFS; the export has a column for each.
"""
from __future__ import annotations

from ..dissectors.nfs import NFS_PROG, STABLE_HOW, asked, moved, op_name, status_name
from ..dissectors.nfs3 import fh_hash
from ..dissectors.onc_rpc import NfsOp, RpcInfo
from ..records import record_eq, record_repr
from ..typenames import Callable, ClassVar, Final, mypyc_attr
from . import analyzer  # noqa: F401  (ulp, interpreted, imports it first thing: imported natively before it)
from .model import Transaction
from .ulp import Fact

_SEQUENCE: Final = 53


@mypyc_attr(serializable=True, allow_interpreted_subclasses=True)
class NfsFacts:
    """An NFS transaction's main operation: what it acted on, asked for, moved and answered."""

    _FIELDS: ClassVar[tuple[str, ...]] = ("op", "fh", "fh_hash", "name", "full_name", "offset", "count", "moved",
                                          "status", "status_name", "eof", "stable", "committed", "session", "slot",
                                          "sequence")
    __slots__ = _FIELDS

    def __init__(self, op: str) -> None:
        self.op = op                            # "READ", "OPEN", "COMMIT"
        self.fh: str | None = None              # the file handle, in hexadecimal
        self.fh_hash: int | None = None         # its CRC-32, as tshark's nfs.fh.hash
        self.name: str | None = None            # its name and full name, where the capture named it
        self.full_name: str | None = None
        self.offset: int | None = None          # READ, WRITE, COMMIT: where
        self.count: int | None = None           # how many bytes asked for (a WRITE: its data)
        self.moved: int | None = None           # the bytes the reply says moved (READ's data, WRITE's count)
        self.status: int | None = None          # nfsstat3 / nfsstat4 of the operation (of the COMPOUND when it
        self.status_name: str | None = None     # stopped before it), by name
        self.eof: bool | None = None            # READ
        self.stable: str | None = None          # WRITE: stable_how asked for, and what the reply committed
        self.committed: str | None = None
        self.session: str | None = None         # NFSv4.1 SEQUENCE: session id (hexadecimal), slot, sequence id
        self.slot: int | None = None
        self.sequence: int | None = None

    def __repr__(self) -> str:
        return record_repr(self, self._FIELDS)

    def __reduce__(self) -> tuple[Callable[[NfsFactsValues], NfsFacts], tuple[NfsFactsValues]]:
        """Pickled as its fields' values (the TUI's spool of transactions, checkpoints): pickle's C code
        takes a tuple alone, where an object goes through a dict of its attributes."""
        return nfs_facts_from, (self.values(),)

    def values(self) -> NfsFactsValues:
        """Its fields' values, in order (``nfs_facts_from`` makes it again of them)."""
        return (self.op, self.fh, self.fh_hash, self.name, self.full_name, self.offset, self.count, self.moved,
                self.status, self.status_name, self.eof, self.stable, self.committed, self.session, self.slot,
                self.sequence)

    def __eq__(self, other: object) -> bool:
        return record_eq(self, other, self._FIELDS)


NfsFactsValues = tuple[str, str | None, int | None, str | None, str | None, int | None, int | None, int | None,
                       int | None, str | None, bool | None, str | None, str | None, str | None, int | None, int | None]


def nfs_facts_from(v: NfsFactsValues) -> NfsFacts:
    """The facts ``NfsFacts.__reduce__`` pickled as ``v``."""
    f = NfsFacts(v[0])
    (_op, f.fh, f.fh_hash, f.name, f.full_name, f.offset, f.count, f.moved, f.status, f.status_name, f.eof,
     f.stable, f.committed, f.session, f.slot, f.sequence) = v
    return f


def _sequence(rpc: RpcInfo) -> NfsOp | None:
    for f in rpc.nfs or ():
        if f.op == _SEQUENCE and f.session is not None:
            return f
    return None


def nfs_summary(call: RpcInfo | None, reply: RpcInfo | None) -> NfsFacts | None:
    """The NFS facts of a call and its reply (None: not NFS, or the dissector left no main operation)."""
    first = call if call is not None else reply
    if first is None or first.prog != NFS_PROG:
        return None
    cm = call.main if call is not None else None
    rm = reply.main if reply is not None and reply.accept_stat == 0 else None
    if cm is None and rm is None:
        return None
    vers = first.vers
    op = cm.op if cm is not None else rm.op if rm is not None else 0
    f = NfsFacts(op_name(vers, op))
    fh = rm.fh if rm is not None and rm.fh is not None else cm.fh if cm is not None else None
    if fh is not None:
        f.fh = fh.hex()
        f.fh_hash = fh_hash(fh)
        at = reply if reply is not None and reply.names is not None else call
        names = at.names if at is not None else None
        if names is not None and at is not None:
            f.name, f.full_name = names.of(fh, at.frame)
    if cm is not None:
        f.offset = cm.offset
        f.count = asked(vers, cm)
        if cm.stable is not None:
            f.stable = STABLE_HOW.get(cm.stable, str(cm.stable))
    if call is not None:
        seq = _sequence(call)
        if seq is not None and seq.session is not None:
            f.session = seq.session.hex()
            f.slot = seq.slot
            f.sequence = seq.sequence
    if rm is not None:
        status = rm.status if rm.status is not None else reply.nfs_status if reply is not None else None
        if status is not None:
            f.status = status
            f.status_name = status_name(vers, status)
        if rm.op == op:
            f.eof = rm.eof
            f.moved = moved(vers, rm)
            if rm.stable is not None and rm.status == 0:
                f.committed = STABLE_HOW.get(rm.stable, str(rm.stable))
    elif reply is not None and reply.accept_stat == 0 and reply.nfs_status is not None:
        f.status = reply.nfs_status
        f.status_name = status_name(vers, reply.nfs_status)
    return f


def declared(nfs_of: Callable[[Transaction], NfsFacts | None]) -> tuple[Fact, ...]:
    """The NFS facts of a transaction whose facts ``nfs_of`` gives, each where a transaction's JSON object
    has it (in ``nfs``) and as an export column."""
    def of(get: Callable[[NfsFacts], object]) -> Callable[[Transaction], object]:
        def value(t: Transaction) -> object:
            f = nfs_of(t)
            return None if f is None else get(f)
        return value

    return (
        Fact("nfs_op", "str", "NFS operation", of(lambda f: f.op), "nfs.op"),
        Fact("nfs_fh", "str", "File handle", of(lambda f: f.fh), "nfs.fh"),
        Fact("nfs_fh_hash", "u32", "File handle hash (CRC-32)", of(lambda f: f.fh_hash), "nfs.fh_hash"),
        Fact("nfs_name", "str", "File name", of(lambda f: f.name), "nfs.name"),
        Fact("nfs_full_name", "str", "Full name", of(lambda f: f.full_name), "nfs.full_name"),
        Fact("nfs_offset", "u64", "Offset", of(lambda f: f.offset), "nfs.offset"),
        Fact("nfs_count", "u32", "Count", of(lambda f: f.count), "nfs.count"),
        Fact("nfs_moved", "u64", "Bytes moved", of(lambda f: f.moved), "nfs.moved"),
        Fact("nfs_op_status", "u32", "Operation status", of(lambda f: f.status), "nfs.status"),
        Fact("nfs_status_name", "str", "Operation status name", of(lambda f: f.status_name), "nfs.status_name"),
        Fact("nfs_eof", "bool", "EOF", of(lambda f: f.eof), "nfs.eof"),
        Fact("nfs_stable", "str", "Stable how", of(lambda f: f.stable), "nfs.stable"),
        Fact("nfs_committed", "str", "Committed", of(lambda f: f.committed), "nfs.committed"),
        Fact("nfs_session", "str", "Session ID", of(lambda f: f.session), "nfs.session"),
        Fact("nfs_slot", "u32", "Slot ID", of(lambda f: f.slot), "nfs.slot"),
        Fact("nfs_sequence", "u32", "Sequence ID", of(lambda f: f.sequence), "nfs.sequence"),
    )
