"""NFSv4.x operations declared in XDR (RFC 7530, 8881, 7862), as tshark names their fields.

``ARGS[op]`` and ``RES[op]`` declare an operation's arguments and its results when its status is NFS4_OK;
the COMPOUND walk (nfs.py) reads them when the layer is filled and skips over them (``XdrType.skip``) on the
summary path.  Operations not declared here are walked by nfs.py's hand-written walkers until they are.
``PARTIAL`` names the declarations that do not yet show everything tshark shows (fattr4's values).
"""
from __future__ import annotations

import zlib
from typing import Any, Final, Iterator

from ..fields import declaring
from .nfs3 import STATUS, fhandle
from ..fields import Field
from ..packet import Layer
from .xdr import Cursor
from .xdrlang import VOID, Out, Walk, XdrType, boolean, ddp, enum, field, opaque, struct, tree, uint32, uint64

declaring(__name__)

NFS4_STATUS: Final = {
    0: "NFS4_OK", 1: "NFS4ERR_PERM", 2: "NFS4ERR_NOENT", 5: "NFS4ERR_IO", 6: "NFS4ERR_NXIO", 13: "NFS4ERR_ACCESS",
    17: "NFS4ERR_EXIST", 18: "NFS4ERR_XDEV", 20: "NFS4ERR_NOTDIR", 21: "NFS4ERR_ISDIR", 22: "NFS4ERR_INVAL",
    27: "NFS4ERR_FBIG", 28: "NFS4ERR_NOSPC", 30: "NFS4ERR_ROFS", 31: "NFS4ERR_MLINK", 63: "NFS4ERR_NAMETOOLONG",
    66: "NFS4ERR_NOTEMPTY", 69: "NFS4ERR_DQUOT", 70: "NFS4ERR_STALE", 10001: "NFS4ERR_BADHANDLE",
    10003: "NFS4ERR_BAD_COOKIE", 10004: "NFS4ERR_NOTSUPP", 10005: "NFS4ERR_TOOSMALL",
    10006: "NFS4ERR_SERVERFAULT", 10007: "NFS4ERR_BADTYPE", 10008: "NFS4ERR_DELAY", 10009: "NFS4ERR_SAME",
    10010: "NFS4ERR_DENIED", 10011: "NFS4ERR_EXPIRED", 10012: "NFS4ERR_LOCKED", 10013: "NFS4ERR_GRACE",
    10014: "NFS4ERR_FHEXPIRED", 10015: "NFS4ERR_SHARE_DENIED", 10016: "NFS4ERR_WRONGSEC",
    10017: "NFS4ERR_CLID_INUSE", 10018: "NFS4ERR_RESOURCE", 10019: "NFS4ERR_MOVED", 10020: "NFS4ERR_NOFILEHANDLE",
    10021: "NFS4ERR_MINOR_VERS_MISMATCH", 10022: "NFS4ERR_STALE_CLIENTID", 10023: "NFS4ERR_STALE_STATEID",
    10024: "NFS4ERR_OLD_STATEID", 10025: "NFS4ERR_BAD_STATEID", 10026: "NFS4ERR_BAD_SEQID",
    10027: "NFS4ERR_NOT_SAME", 10028: "NFS4ERR_LOCK_RANGE", 10029: "NFS4ERR_SYMLINK", 10030: "NFS4ERR_RESTOREFH",
    10031: "NFS4ERR_LEASE_MOVED", 10032: "NFS4ERR_ATTRNOTSUPP", 10033: "NFS4ERR_NO_GRACE",
    10034: "NFS4ERR_RECLAIM_BAD", 10035: "NFS4ERR_RECLAIM_CONFLICT", 10036: "NFS4ERR_BADXDR",
    10037: "NFS4ERR_LOCKS_HELD", 10038: "NFS4ERR_OPENMODE", 10039: "NFS4ERR_BADOWNER", 10040: "NFS4ERR_BADCHAR",
    10041: "NFS4ERR_BADNAME", 10042: "NFS4ERR_BAD_RANGE", 10043: "NFS4ERR_LOCK_NOTSUPP", 10044: "NFS4ERR_OP_ILLEGAL",
    10045: "NFS4ERR_DEADLOCK", 10046: "NFS4ERR_FILE_OPEN", 10047: "NFS4ERR_ADMIN_REVOKED",
    10048: "NFS4ERR_CB_PATH_DOWN", 10049: "NFS4ERR_BADIOMODE", 10050: "NFS4ERR_BADLAYOUT",
    10051: "NFS4ERR_BAD_SESSION_DIGEST", 10052: "NFS4ERR_BADSESSION", 10053: "NFS4ERR_BADSLOT",
    10054: "NFS4ERR_COMPLETE_ALREADY", 10055: "NFS4ERR_CONN_NOT_BOUND_TO_SESSION", 10056: "NFS4ERR_DELEG_ALREADY_WANTED",
    10057: "NFS4ERR_BACK_CHAN_BUSY", 10058: "NFS4ERR_LAYOUTTRYLATER", 10059: "NFS4ERR_LAYOUTUNAVAILABLE",
    10060: "NFS4ERR_NOMATCHING_LAYOUT", 10061: "NFS4ERR_RECALLCONFLICT", 10062: "NFS4ERR_UNKNOWN_LAYOUTTYPE",
    10063: "NFS4ERR_SEQ_MISORDERED", 10064: "NFS4ERR_SEQUENCE_POS", 10065: "NFS4ERR_REQ_TOO_BIG",
    10066: "NFS4ERR_REP_TOO_BIG", 10067: "NFS4ERR_REP_TOO_BIG_TO_CACHE", 10068: "NFS4ERR_RETRY_UNCACHED_REP",
    10069: "NFS4ERR_UNSAFE_COMPOUND", 10070: "NFS4ERR_TOO_MANY_OPS", 10071: "NFS4ERR_OP_NOT_IN_SESSION",
    10072: "NFS4ERR_HASH_ALG_UNSUPP", 10074: "NFS4ERR_CLIENTID_BUSY", 10075: "NFS4ERR_PNFS_IO_HOLE",
    10076: "NFS4ERR_SEQ_FALSE_RETRY", 10077: "NFS4ERR_BAD_HIGH_SLOT", 10078: "NFS4ERR_DEADSESSION",
    10079: "NFS4ERR_ENCR_ALG_UNSUPP", 10080: "NFS4ERR_PNFS_NO_LAYOUT", 10081: "NFS4ERR_NOT_ONLY_OP",
    10082: "NFS4ERR_WRONG_CRED", 10083: "NFS4ERR_WRONG_TYPE", 10084: "NFS4ERR_DIRDELEG_UNAVAIL",
    10085: "NFS4ERR_REJECT_DELEG", 10086: "NFS4ERR_RETURNCONFLICT", 10087: "NFS4ERR_DELEG_REVOKED",
    10088: "NFS4ERR_PARTNER_NOTSUPP", 10089: "NFS4ERR_PARTNER_NO_AUTH", 10090: "NFS4ERR_UNION_NOTSUPP",
    10091: "NFS4ERR_OFFLOAD_DENIED", 10092: "NFS4ERR_WRONG_LFS", 10093: "NFS4ERR_BADLABEL",
    10094: "NFS4ERR_OFFLOAD_NO_REQS", 10095: "NFS4ERR_NOXATTR", 10096: "NFS4ERR_XATTR2BIG"}
STABLE_HOW4: Final = {0: "UNSTABLE4", 1: "DATA_SYNC4", 2: "FILE_SYNC4"}
SEQUENCE_FLAGS: Final = (
    ("cb_path_down", 0x1), ("cb_gss_contexts_expiring", 0x2), ("cb_gss_contexts_expired", 0x4),
    ("expired_all_state_revoked", 0x8), ("expired_some_state_revoked", 0x10), ("admin_state_revoked", 0x20),
    ("recallable_state_revoked", 0x40), ("lease_moved", 0x80), ("restart_reclaim_needed", 0x100),
    ("cb_path_down_session", 0x200), ("backchannel_fault", 0x400), ("devid_changed", 0x800),
    ("devid_deleted", 0x1000))

# A COMPOUND's status and each operation's, as tshark shows them: nfs.nfsstat4 and nfs.status.
STATUS4: Final = enum("nfs.nfsstat4", "Status", NFS4_STATUS, also=[STATUS])


def crc16_x25(data: bytes) -> int:
    """tshark's ``nfs.stateid.hash``: CRC-16/X-25 (reflected 0x1021, init and xorout 0xFFFF)."""
    crc = 0xFFFF
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ 0x8408 if crc & 1 else crc >> 1
    return crc ^ 0xFFFF


FH4: Final = tree(fhandle(128), "nfs.fh", "FileHandle")
STATEID4: Final = tree(struct(
    "stateid4", ("seqid", uint32("nfs.stateid.seqid", "StateID seqid")),
    ("other", opaque("nfs.stateid.other", "StateID Other", fixed=12,
                     derived=[(field("nfs.stateid.other_hash", "StateID Other hash", "hex"), zlib.crc32)])),
    derived=[(field("nfs.stateid", "StateID", "bytes"), bytes),
             (field("nfs.stateid.hash", "StateID Hash", "hex"), crc16_x25)]), "nfs.stateid4", "stateid")
OFFSET4: Final = uint64("nfs.offset4", "offset")
COUNT4: Final = uint32("nfs.count4", "count")
SESSIONID4: Final = opaque("nfs.session_id4", "sessionid", fixed=16)
SEQID: Final = uint32("nfs.seqid", "seqid", "hex")
SLOTID: Final = uint32("nfs.slotid", "slot id")
HIGH_SLOTID: Final = uint32("nfs.high_slotid", "high slot id")


class Bitmap4(XdrType):
    """``bitmap4`` (``uint32 words<>``), as tshark shows one: each non-zero word as ``nfs.attr_mask`` with the
    number of attributes it asks for (``nfs.attr_count``) and each attribute's number (``nfs.attr``).
    The value is the list of words."""

    __slots__ = ("mask", "count", "attr")

    def __init__(self) -> None:
        super().__init__(-1, 4)
        self.mask = field("nfs.attr_mask", "Attr mask", "hex")
        self.count = field("nfs.attr_count", "Attr count")
        self.attr = field("nfs.attr", "reqd_attr")

    def read(self, cur: Cursor, w: Walk, lay: Layer | None) -> Any:
        n = cur.count(4, "bitmap4")
        words: list[int] = []
        for i in range(n):
            p = cur.pos
            word = cur.u32("bitmap4")
            words.append(word)
            if lay is not None and word:         # a word asking for nothing is not shown (as tshark does)
                lay.add(self.mask, word, p, 4)
                lay.add(self.count, bin(word).count("1"), p, 4)
                for bit in range(32):
                    if word >> bit & 1:
                        lay.add(self.attr, 32 * i + bit, -1, 0)
        return words

    def skip(self, cur: Cursor, w: Walk) -> None:
        cur.skip_u32s("bitmap4")

    def write(self, value: Any, out: Out) -> None:
        out.parts.append(len(value).to_bytes(4, "big") + b"".join(v.to_bytes(4, "big") for v in value))

    def fields(self) -> Iterator[Field]:
        return iter((self.mask, self.count, self.attr))


BITMAP4: Final = Bitmap4()
# fattr4 as far as declared: its mask, its values as one opaque (attribute by attribute is the next step)
FATTR4: Final = tree(struct("fattr4", ("attrmask", BITMAP4), ("attr_vals", opaque(None))), "nfs.fattr4",
                     "obj_attributes")

ARGS: Final[dict[int, XdrType]] = {
    5: struct("COMMIT4args", ("offset", OFFSET4), ("count", COUNT4)),
    9: struct("GETATTR4args", ("attr_request", BITMAP4)),
    10: VOID,
    22: struct("PUTFH4args", ("object", FH4)),
    23: VOID,
    24: VOID,
    25: struct("READ4args", ("stateid", STATEID4), ("offset", OFFSET4), ("count", COUNT4)),
    31: VOID,
    32: VOID,
    38: struct("WRITE4args", ("stateid", STATEID4), ("offset", OFFSET4),
               ("stable", enum("nfs.stable_how4", "stable_how4", STABLE_HOW4)),
               ("data", ddp("write_data", "nfs.data", "Data", length="nfs.write.data_length"))),
    44: struct("DESTROY_SESSION4args", ("sessionid", SESSIONID4)),
    53: struct("SEQUENCE4args", ("sessionid", SESSIONID4), ("sequenceid", SEQID), ("slotid", SLOTID),
               ("highest_slotid", HIGH_SLOTID), ("cachethis", boolean("nfs.cachethis4", "cache this?"))),
}
RES: Final[dict[int, XdrType]] = {
    5: struct("COMMIT4resok", ("writeverf", uint64("nfs.verifier4", "verifier", "hex"))),
    9: struct("GETATTR4resok", ("obj_attributes", FATTR4)),
    10: struct("GETFH4resok", ("object", tree(fhandle(128), "nfs.fh", "Filehandle"))),
    22: VOID,
    23: VOID,
    24: VOID,
    25: struct("READ4resok", ("eof", uint32("nfs.eof", "eof")),
               ("data", ddp("read_data", "nfs.data", "Data", length="nfs.read.data_length"))),
    31: VOID,
    32: VOID,
    38: struct("WRITE4resok", ("count", COUNT4), ("committed", enum("nfs.stable_how4", "stable_how4", STABLE_HOW4)),
               ("writeverf", uint64("nfs.verifier4", "verifier", "hex"))),
    44: VOID,
    53: struct("SEQUENCE4resok", ("sessionid", SESSIONID4), ("sequenceid", SEQID), ("slotid", SLOTID),
               ("highest_slotid", HIGH_SLOTID),
               ("target_highest_slotid", uint32("nfs.target_high_slotid", "target high slot id")),
               ("status_flags", uint32("nfs.sequence.flags", "status flags", "hex", flags=[
                   (f"nfs.sequence.flags.{name}", f"SEQ4_STATUS_{name.upper()}", mask)
                   for name, mask in SEQUENCE_FLAGS]))),
}
# Results declared but not yet shown in full (tshark shows more): the operations' numbers
PARTIAL: Final = frozenset({9})
