"""NFSv4.x operations declared in XDR (RFC 7530, 8881, 7862), as tshark names their fields.

``ARGS[op]`` and ``RES[op]`` declare an operation's arguments and its results when its status is NFS4_OK,
``FAILED[op]`` what the few operations that carry data when they fail carry, by status (LOCK's conflicting
lock...); the COMPOUND walk (nfs.py) reads them when the layer is filled and skips over them
(``XdrType.skip``) on the summary path.  This module declares NFSv4.0's operations; nfs41.py declares the
v4.1 and v4.2 ones and adds them to these tables.  ``PARTIAL`` names the declarations that do not yet show
everything tshark shows.  The attributes (``bitmap4``, ``fattr4``, ``nfsstat4``) and the types they share
with the operations (``nfsace4``, ``specdata4``, ``length4``) are declared in ``nfs4_attrs.py``.
"""
from __future__ import annotations

import zlib

from ..fields import Field, declaring
from ..packet import Layer
from ..typenames import Any, Final, Iterator
from .nfs3 import ACCESS_BITS, fhandle
# the attribute types the operations use (and their users find here too)
from .nfs4_attrs import (BITMAP4, FATTR4, FTYPE4, LENGTH4, NFS4_STATUS, NFSACE4, SPECDATA4, STATUS4,  # noqa: F401
                         Bitmap4, fattr4)
from .xdr import Cursor, u32
from .xdrlang import (DECLARED, VOID, Int, Out, Walk, XdrType, array, boolean, chain, ddp, enum, field, opaque,
                      string, struct, tree, uint32, uint64, union)

declaring(__name__)

# The operations' names (nfs_opnum4), as tshark shows them (nfs.opcode)
OP_NAMES: Final[dict[int, str]] = {
    3: "ACCESS", 4: "CLOSE", 5: "COMMIT", 6: "CREATE", 7: "DELEGPURGE", 8: "DELEGRETURN", 9: "GETATTR",
    10: "GETFH", 11: "LINK", 12: "LOCK", 13: "LOCKT", 14: "LOCKU", 15: "LOOKUP", 16: "LOOKUPP", 17: "NVERIFY",
    18: "OPEN", 19: "OPENATTR", 20: "OPEN_CONFIRM", 21: "OPEN_DOWNGRADE", 22: "PUTFH", 23: "PUTPUBFH",
    24: "PUTROOTFH", 25: "READ", 26: "READDIR", 27: "READLINK", 28: "REMOVE", 29: "RENAME", 30: "RENEW",
    31: "RESTOREFH", 32: "SAVEFH", 33: "SECINFO", 34: "SETATTR", 35: "SETCLIENTID", 36: "SETCLIENTID_CONFIRM",
    37: "VERIFY", 38: "WRITE", 39: "RELEASE_LOCKOWNER", 40: "BACKCHANNEL_CTL", 41: "BIND_CONN_TO_SESSION",
    42: "EXCHANGE_ID", 43: "CREATE_SESSION", 44: "DESTROY_SESSION", 45: "FREE_STATEID",
    46: "GET_DIR_DELEGATION", 47: "GETDEVICEINFO", 48: "GETDEVICELIST", 49: "LAYOUTCOMMIT", 50: "LAYOUTGET",
    51: "LAYOUTRETURN", 52: "SECINFO_NO_NAME", 53: "SEQUENCE", 54: "SET_SSV", 55: "TEST_STATEID",
    56: "WANT_DELEGATION", 57: "DESTROY_CLIENTID", 58: "RECLAIM_COMPLETE", 59: "ALLOCATE", 60: "COPY",
    61: "COPY_NOTIFY", 62: "DEALLOCATE", 63: "IO_ADVISE", 64: "LAYOUTERROR", 65: "LAYOUTSTATS",
    66: "OFFLOAD_CANCEL", 67: "OFFLOAD_STATUS", 68: "READ_PLUS", 69: "SEEK", 70: "WRITE_SAME", 71: "CLONE",
    72: "GETXATTR", 73: "SETXATTR", 74: "LISTXATTRS", 75: "REMOVEXATTR", 10044: "ILLEGAL"}
OPCODE: Final[Field] = field("nfs.opcode", "Opcode", names=OP_NAMES)
STABLE_HOW4: Final = {0: "UNSTABLE4", 1: "DATA_SYNC4", 2: "FILE_SYNC4"}
SEQUENCE_FLAGS: Final = (
    ("cb_path_down", 0x1), ("cb_gss_contexts_expiring", 0x2), ("cb_gss_contexts_expired", 0x4),
    ("expired_all_state_revoked", 0x8), ("expired_some_state_revoked", 0x10), ("admin_state_revoked", 0x20),
    ("recallable_state_revoked", 0x40), ("lease_moved", 0x80), ("restart_reclaim_needed", 0x100),
    ("cb_path_down_session", 0x200), ("backchannel_fault", 0x400), ("devid_changed", 0x800),
    ("devid_deleted", 0x1000))


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

# --- pieces the operations share (RFC 7530 §2, §3, §16) ---------------------------------------------
NFS4ERR_DENIED: Final = 10010
NFS4ERR_CLID_INUSE: Final = 10017
LOCK_TYPE4: Final = {1: "READ_LT", 2: "WRITE_LT", 3: "READW_LT", 4: "WRITEW_LT", 5: "RELEASE_STATE"}
OPEN_DELEGATION_TYPE4: Final = {0: "OPEN_DELEGATE_NONE", 1: "OPEN_DELEGATE_READ", 2: "OPEN_DELEGATE_WRITE",
                                3: "OPEN_DELEGATE_NONE_EXT"}
WHY_NO_DELEGATION4: Final = {0: "WND4_NOT_WANTED", 1: "WND4_CONTENTION", 2: "WND4_RESOURCE",
                             3: "WND4_NOT_SUPP_FTYPE", 4: "WND4_WRITE_DELEG_NOT_SUPP_FTYPE",
                             5: "WND4_NOT_SUPP_UPGRADE", 6: "WND4_NOT_SUPP_DOWNGRADE", 7: "WND4_CANCELLED",
                             8: "WND4_IS_DIR"}
OPEN_CLAIM_TYPE4: Final = {0: "CLAIM_NULL", 1: "CLAIM_PREVIOUS", 2: "CLAIM_DELEGATE_CUR", 3: "CLAIM_DELEGATE_PREV",
                           4: "CLAIM_FH", 5: "CLAIM_DELEG_CUR_FH", 6: "CLAIM_DELEG_PREV_FH"}
CREATEMODE4: Final = {0: "UNCHECKED4", 1: "GUARDED4", 2: "EXCLUSIVE4", 3: "EXCLUSIVE4_1"}
SHARE_ACCESS4: Final = {0: "OPEN4_SHARE_ACCESS_WANT_NO_PREFERENCE", 1: "OPEN4_SHARE_ACCESS_READ",
                        2: "OPEN4_SHARE_ACCESS_WRITE", 3: "OPEN4_SHARE_ACCESS_BOTH"}
SHARE_DENY4: Final = {0: "OPEN4_SHARE_DENY_NONE", 1: "OPEN4_SHARE_DENY_READ", 2: "OPEN4_SHARE_DENY_WRITE",
                      3: "OPEN4_SHARE_DENY_BOTH"}
SHARE_WANT4: Final = {0x100: "OPEN4_SHARE_ACCESS_WANT_READ_DELEG", 0x200: "OPEN4_SHARE_ACCESS_WANT_WRITE_DELEG",
                      0x300: "OPEN4_SHARE_ACCESS_WANT_ANY_DELEG", 0x400: "OPEN4_SHARE_ACCESS_WANT_NO_DELEG",
                      0x500: "OPEN4_SHARE_ACCESS_WANT_CANCEL"}
OPEN4_RESULT_FLAGS: Final = (("confirm", "confirm", 0x2), ("locktype_posix", "locktype posix", 0x4),
                             ("preserve_unlinked", "preserve unlinked", 0x8),
                             ("may_notify_lock", "may notify lock", 0x20))
SEC_FLAVORS: Final = {0: "AUTH_NULL", 1: "AUTH_UNIX", 2: "AUTH_SHORT", 3: "AUTH_DES", 6: "RPCSEC_GSS",
                      390003: "RPCSEC_GSS_KRB5", 390004: "RPCSEC_GSS_KRB5I", 390005: "RPCSEC_GSS_KRB5P"}
RPC_GSS_SVC: Final = {1: "rpc_gss_svc_none", 2: "rpc_gss_svc_integrity", 3: "rpc_gss_svc_privacy"}

CLIENTID4: Final = uint64("nfs.clientid", "clientid", "hex")
# the callback's identifier: SETCLIENTID's, then each CB_COMPOUND's (nfs.py)
CB_IDENT: Final[Field] = field("nfs.callback.ident", "callback_ident", "hex")
VERIFIER4: Final = uint64("nfs.verifier4", "verifier", "hex")
COMPONENT4: Final = string("nfs.pathname.component", "Name")
LOCKTYPE4: Final = enum("nfs.locktype4", "locktype", LOCK_TYPE4)
_CHANGE_INFO4: Final = struct("change_info4", ("atomic", boolean("nfs.change_info.atomic", "Atomic")),
                              ("before", uint64("nfs.changeid4.before", "changeid (before)")),
                              ("after", uint64("nfs.changeid4.after", "changeid (after)")))


def change_info4(label: str) -> XdrType:
    """A change_info4 under its role's name (change_info, source_cinfo, target_cinfo)."""
    return tree(_CHANGE_INFO4, "nfs.change_info4", label)


CHANGE_INFO4: Final = change_info4("change_info")
LOCK_OWNER4: Final = tree(struct("lock_owner4", ("clientid", CLIENTID4),
                                 ("owner", opaque("nfs.lock_owner4", "owner", bound=1024))), "nfs.lock_owner", "Owner")
OPEN_OWNER4: Final = struct("open_owner4", ("clientid", CLIENTID4),
                            ("owner", opaque("nfs.open_owner4", "owner", bound=1024)))
LOCK4DENIED: Final = struct("LOCK4denied", ("offset", OFFSET4), ("length", LENGTH4), ("locktype", LOCKTYPE4),
                            ("owner", LOCK_OWNER4))


class AccessMask4(Int):
    """An ACCESS4 mask in a call: the word (its last byte, as tshark's 8-bit field shows it) and each right
    asked for (RFC 7530 §16.1, RFC 8276's xattr rights: nfs3.ACCESS_BITS)."""

    __slots__ = ("rights",)

    def __init__(self) -> None:
        super().__init__(field("nfs.access_check", "Check access", "hex"))
        self.rights = tuple((field(n, lab, "bool"), m) for n, lab, m in ACCESS_BITS)

    def show(self, lay: Layer, v: int, p: int) -> None:
        assert self.field is not None
        lay.add(self.field, v & 0xFF, p, 4)
        for f, m in self.rights:
            if v & m:
                lay.add(f, True, p, 4)

    def fields(self) -> Iterator[Field]:
        yield from super().fields()
        for f, _m in self.rights:
            yield f


class Access4Result(XdrType):
    """ACCESS4resok (``supported``, ``access``), as tshark shows it: the rights the server could check
    (``nfs.access_supported``, each as ``nfs.access_supp_*``) and, for each of them, whether it is
    granted (``nfs.access_rights``, ``nfs.access_*``).  The value is a dict by member."""

    __slots__ = ("supported", "access", "supp_bits", "rights")

    def __init__(self) -> None:
        super().__init__(8, 8)
        self.supported = field("nfs.access_supported", "Supported types (of requested)", "hex")
        self.access = field("nfs.access_rights", "Access rights (of requested)", "hex")
        self.supp_bits = tuple((field(n.replace("nfs.access_", "nfs.access_supp_"), lab, "bool"), m)
                               for n, lab, m in ACCESS_BITS)
        self.rights = tuple((field(n, lab, "bool"), m) for n, lab, m in ACCESS_BITS)
        DECLARED.setdefault("ACCESS4resok", self)

    def read(self, cur: Cursor, w: Walk, lay: Layer | None) -> Any:
        p = cur.need(8, "ACCESS4resok")
        cur.pos = p + 8
        supported = u32(cur.buf, p)
        access = u32(cur.buf, p + 4)
        if lay is not None:
            lay.add(self.supported, supported & 0xFF, p, 4)
            for f, m in self.supp_bits:
                if supported & m:
                    lay.add(f, True, p, 4)
            lay.add(self.access, access & 0xFF, p + 4, 4)
            for f, m in self.rights:
                if supported & m:
                    lay.add(f, bool(access & m), p + 4, 4)
        return {"supported": supported, "access": access}

    def skip(self, cur: Cursor, w: Walk) -> None:
        cur.skip(8, "ACCESS4resok")

    def write(self, value: Any, out: Out) -> None:
        out.parts.append(value["supported"].to_bytes(4, "big") + value["access"].to_bytes(4, "big"))

    def fields(self) -> Iterator[Field]:
        yield self.supported
        for f, _m in self.supp_bits:
            yield f
        yield self.access
        for f, _m in self.rights:
            yield f


class ShareAccess4(Int):
    """OPEN's share_access word as tshark shows it: the access (its two low bits), the delegation wanted
    (``nfs.want``, NFSv4.1) and the notification flags (``nfs.want_notification``) when there are any."""

    __slots__ = ("want", "notify", "notify_flags")

    def __init__(self) -> None:
        super().__init__(field("nfs.open4.share_access", "share_access", names=SHARE_ACCESS4))
        self.want = field("nfs.want", "wants", "hex", SHARE_WANT4)
        self.notify = field("nfs.want_notification", "want notification", "hex")
        self.notify_flags = (
            (field("nfs.want_notification.when_resrc_avail", "want_signal_deleg_when_resrc_avail", "bool"), 0x10000),
            (field("nfs.want_push_deleg_when_uncontended", "want_push_deleg_when_uncontended", "bool"), 0x20000))

    def show(self, lay: Layer, v: int, p: int) -> None:
        assert self.field is not None
        lay.add(self.field, v & 0x3, p, 4)
        if v & 0xFF00:
            lay.add(self.want, v & 0xFF00, p, 4)
        notify = v & ~0xFF03
        if notify:
            lay.add(self.notify, notify, p, 4)
            for f, m in self.notify_flags:
                lay.add(f, bool(v & m), p, 4)

    def fields(self) -> Iterator[Field]:
        yield from super().fields()
        yield self.want
        yield self.notify
        for f, _m in self.notify_flags:
            yield f


class CallbackProgram(Int):
    """``cb_program``: the program number a client gives its callback service.  The walk learns it
    (``learn_program``, NFS's walk has it): calls to that program in the reverse direction are
    CB_COMPOUNDs.  Learnt on the summary path too, where the value is skipped over."""

    __slots__ = ()

    def __init__(self) -> None:
        super().__init__(field("nfs.cb_program", "cb_program", "hex"))
        self.size = -1          # never stepped over with a fixed-size structure around it: it must be read

    def read(self, cur: Cursor, w: Walk, lay: Layer | None) -> Any:
        p = cur.pos
        v = cur.u32("cb_program")
        if lay is not None:
            self.show(lay, v, p)
        _learn_program(w, v)
        return v

    def skip(self, cur: Cursor, w: Walk) -> None:
        _learn_program(w, cur.u32("cb_program"))


def _learn_program(w: Walk, prog: int) -> None:
    learn = getattr(w, "learn_program", None)
    if learn is not None:
        learn(prog)


CB_PROGRAM: Final = CallbackProgram()


def _universal_address(raw: bytes) -> tuple[str, bytes] | None:
    """clientaddr4's r_netid and r_addr as tshark reads them for "tcp": an IPv4 h1.h2.h3.h4.p1.p2, a port
    alone (p1.p2: address 0.0.0.0), an IPv6 of eight two-digit groups, else 0.0.0.0 (invalid)."""
    n = u32(raw, 0)
    netid = raw[4:4 + n]
    q = 4 + ((n + 3) & ~3)
    addr = raw[q + 4:q + 4 + u32(raw, q)].decode("ascii", "replace")
    if netid != b"tcp":
        return None
    parts = addr.split(".")
    nums = [int(x) if x.isdigit() else -1 for x in parts]
    if len(nums) >= 6 and min(nums[:6]) >= 0:
        b1, b2, b3, b4 = nums[:4]
        return "ipv4", (((b1 << 24) | (b2 << 16) | (b3 << 8) | b4) & 0xFFFFFFFF).to_bytes(4, "big")
    if len(nums) >= 2 and min(nums[:2]) >= 0:
        return "ipv4", bytes(4)
    groups = parts[0].split(":")
    if len(parts) >= 3 and len(groups) == 8 and all(1 <= len(g) <= 2 for g in groups):
        try:
            return "ipv6", bytes([int(g, 16) for g in groups]) + bytes(8)
        except ValueError:
            pass
    return "ipv4", bytes(4)


def _uaddr_ipv4(raw: bytes) -> bytes | None:
    got = _universal_address(raw)
    return got[1] if got is not None and got[0] == "ipv4" else None


def _uaddr_ipv6(raw: bytes) -> bytes | None:
    got = _universal_address(raw)
    return got[1] if got is not None and got[0] == "ipv6" else None


# clientaddr4 (RFC 7530 §2.2.10): the netid and the universal address, and the address tshark reads in it
CLIENTADDR4: Final = struct(
    "clientaddr4", ("r_netid", string("nfs.r_netid", "r_netid")), ("r_addr", string("nfs.r_addr", "r_addr")),
    derived=[(field("nfs.universal_address.ipv4", "universal_address", "ipv4"), _uaddr_ipv4),
             (field("nfs.universal_address.ipv6", "universal_address", "ipv6"), _uaddr_ipv6)])


def _entry_name(raw: bytes) -> str:
    """An entry4's name, from its bytes (cookie, then the name): tshark shows each entry as ``nfs.name``."""
    return raw[12:12 + u32(raw, 8)].decode("utf-8", "replace")


field("nfs.value_follows", "Value Follows", "bool")
_ENTRY4: Final = tree(struct("entry4", ("cookie", uint64("nfs.cookie4", "cookie")),
                             ("name", string("nfs.entry_name", "Name")), ("attrs", FATTR4),
                             derived=[(field("nfs.name", "Name", "str"), _entry_name)]), "nfs.entry4", "Entry")
_SPACE_LIMIT4: Final = union(
    "nfs_space_limit4", enum("nfs.open.limit_by", "Space Limit", {1: "NFS_LIMIT_SIZE", 2: "NFS_LIMIT_BLOCKS"}),
    {1: uint64("nfs.filesize", "filesize"),
     2: struct("nfs_modified_limit4", ("num_blocks", uint32("nfs.num_blocks", "num_blocks")),
               ("bytes_per_block", uint32("nfs.bytes_per_block", "bytes_per_block")))})
# NFSv4.1's OPEN_DELEGATE_NONE_EXT arm: why none, and whether the server will push or signal one later
# (the booleans tshark 4.0 does not read; they are not shown)
_NONE_DELEGATION4: Final = union(
    "open_none_delegation4", enum("nfs.open.why_no_delegation", "why no delegation", WHY_NO_DELEGATION4),
    {1: boolean(None), 2: boolean(None)}, None)
OPEN_DELEGATION4: Final = union(
    "open_delegation4", enum("nfs.open.delegation_type", "Delegation Type", OPEN_DELEGATION_TYPE4),
    {0: None,
     1: struct("open_read_delegation4", ("stateid", STATEID4), ("recall", boolean("nfs.recall4", "recall")),
               ("permissions", NFSACE4)),
     2: struct("open_write_delegation4", ("stateid", STATEID4), ("recall", boolean("nfs.recall", "Recall")),
               ("space_limit", _SPACE_LIMIT4), ("permissions", NFSACE4)),
     3: _NONE_DELEGATION4})
_CREATEHOW4: Final = union(
    "createhow4", enum("nfs.createmode4", "Create Mode", CREATEMODE4),
    {0: FATTR4, 1: FATTR4, 2: VERIFIER4,
     3: struct("creatverfattr", ("cva_verf", VERIFIER4), ("cva_attrs", FATTR4))})
_OPENFLAG4: Final = union("openflag4", enum("nfs.open.opentype", "Open Type", {0: "OPEN4_NOCREATE", 1: "OPEN4_CREATE"}),
                          {1: _CREATEHOW4}, None)
_OPEN_CLAIM4: Final = union(
    "open_claim4", enum("nfs.open.claim_type", "Claim Type", OPEN_CLAIM_TYPE4),
    {0: COMPONENT4, 1: enum("nfs.delegate_type", "delegate_type", OPEN_DELEGATION_TYPE4),
     2: struct("open_claim_delegate_cur4", ("delegate_stateid", STATEID4), ("file", COMPONENT4)),
     3: COMPONENT4, 4: None, 5: STATEID4, 6: None})
_SECINFO4: Final = union(
    "secinfo4", enum("nfs.secinfo.flavor", "flavor", SEC_FLAVORS),
    {6: tree(struct("rpcsec_gss_info",
                    ("oid", opaque("nfs.secinfo.flavor_info.rpcsec_gss_info.oid", "oid")),
                    ("qop", uint32("nfs.secinfo.flavor_info.rpcsec_gss_info.qop", "qop")),
                    ("service", enum("nfs.secinfo.rpcsec_gss_info.service", "service", RPC_GSS_SVC))),
             "nfs.rpcsec_gss_info", "flavor_info")}, None)
_CREATETYPE4: Final = union(
    "createtype4", enum("nfs.nfs_ftype4", "ftype4", FTYPE4),
    {5: ddp("symlink", "nfs.symlink.linktext", "Link Contents", text=True), 3: SPECDATA4, 4: SPECDATA4}, None)
_LOCK_SEQID4: Final = uint32("nfs.lock_seqid", "lock_seqid", "hex")
_LOCKER4: Final = union(
    "locker4", boolean("nfs.lock.locker.new_lock_owner", "new lock owner?"),
    {1: struct("open_to_lock_owner4", ("open_seqid", SEQID), ("open_stateid", STATEID4), ("lock_seqid", _LOCK_SEQID4),
               ("lock_owner", LOCK_OWNER4)),
     0: struct("exist_lock_owner4", ("lock_stateid", STATEID4), ("lock_seqid", _LOCK_SEQID4))})
_SHARE_DENY4: Final = enum("nfs.open4.share_deny", "share_deny", SHARE_DENY4)
# SECINFO4resok and SECINFO_NO_NAME4resok (nfs41.py)
SECINFO4RES: Final = tree(array(_SECINFO4), "nfs.flavors.info", "Flavors Info")

ARGS: Final[dict[int, XdrType]] = {
    3: struct("ACCESS4args", ("access", AccessMask4())),
    4: struct("CLOSE4args", ("seqid", SEQID), ("open_stateid", STATEID4)),
    5: struct("COMMIT4args", ("offset", OFFSET4), ("count", COUNT4)),
    6: struct("CREATE4args", ("objtype", _CREATETYPE4), ("objname", COMPONENT4), ("createattrs", FATTR4)),
    7: struct("DELEGPURGE4args", ("clientid", CLIENTID4)),
    8: struct("DELEGRETURN4args", ("deleg_stateid", STATEID4)),
    9: struct("GETATTR4args", ("attr_request", BITMAP4)),
    10: VOID,
    11: struct("LINK4args", ("newname", COMPONENT4)),
    12: struct("LOCK4args", ("locktype", LOCKTYPE4), ("reclaim", boolean("nfs.lock.reclaim", "reclaim?")),
               ("offset", OFFSET4), ("length", LENGTH4), ("locker", tree(_LOCKER4, "nfs.locker4", "locker"))),
    13: struct("LOCKT4args", ("locktype", LOCKTYPE4), ("offset", OFFSET4), ("length", LENGTH4),
               ("owner", LOCK_OWNER4)),
    14: struct("LOCKU4args", ("locktype", LOCKTYPE4), ("seqid", SEQID), ("lock_stateid", STATEID4),
               ("offset", OFFSET4), ("length", LENGTH4)),
    15: struct("LOOKUP4args", ("objname", COMPONENT4)),
    16: VOID,
    17: struct("NVERIFY4args", ("obj_attributes", FATTR4)),
    18: struct("OPEN4args", ("seqid", SEQID), ("share_access", ShareAccess4()), ("share_deny", _SHARE_DENY4),
               ("owner", OPEN_OWNER4), ("openhow", tree(_OPENFLAG4, "nfs.openflag4", "openhow")),
               ("claim", tree(_OPEN_CLAIM4, "nfs.open_claim4", "claim"))),
    19: struct("OPENATTR4args", ("createdir", boolean("nfs.openattr4.createdir", "attribute dir create"))),
    20: struct("OPEN_CONFIRM4args", ("open_stateid", STATEID4), ("seqid", SEQID)),
    21: struct("OPEN_DOWNGRADE4args", ("open_stateid", STATEID4), ("seqid", SEQID),
               ("share_access", ShareAccess4()), ("share_deny", _SHARE_DENY4)),
    22: struct("PUTFH4args", ("object", FH4)),
    23: VOID,
    24: VOID,
    25: struct("READ4args", ("stateid", STATEID4), ("offset", OFFSET4), ("count", COUNT4)),
    26: struct("READDIR4args", ("cookie", uint64("nfs.cookie4", "cookie")),
               ("cookieverf", uint64("nfs.cookie_verf4", "cookie_verf")),
               ("dircount", uint32("nfs.dircount", "dircount")), ("maxcount", uint32("nfs.maxcount", "maxcount")),
               ("attr_request", BITMAP4)),
    27: VOID,
    28: struct("REMOVE4args", ("target", COMPONENT4)),
    29: struct("RENAME4args", ("oldname", COMPONENT4), ("newname", COMPONENT4)),
    30: struct("RENEW4args", ("clientid", CLIENTID4)),
    31: VOID,
    32: VOID,
    33: struct("SECINFO4args", ("name", COMPONENT4)),
    34: struct("SETATTR4args", ("stateid", STATEID4), ("obj_attributes", FATTR4)),
    35: struct("SETCLIENTID4args",
               ("client", tree(struct("nfs_client_id4", ("verifier", VERIFIER4),
                                      ("id", opaque("nfs.nfs_client_id4.id", "id", bound=1024))),
                               "nfs.client_id4", "client")),
               ("callback", tree(struct("cb_client4", ("cb_program", CB_PROGRAM),
                                        ("cb_location", tree(CLIENTADDR4, "nfs.cb_location", "cb_location"))),
                                 "nfs.cb_client4", "callback")),
               ("callback_ident", Int(CB_IDENT))),
    36: struct("SETCLIENTID_CONFIRM4args", ("clientid", CLIENTID4), ("setclientid_confirm", VERIFIER4)),
    37: struct("VERIFY4args", ("obj_attributes", FATTR4)),
    38: struct("WRITE4args", ("stateid", STATEID4), ("offset", OFFSET4),
               ("stable", enum("nfs.stable_how4", "stable_how4", STABLE_HOW4)),
               ("data", ddp("write_data", "nfs.data", "Data", length="nfs.write.data_length"))),
    39: struct("RELEASE_LOCKOWNER4args", ("lock_owner", LOCK_OWNER4)),
    44: struct("DESTROY_SESSION4args", ("sessionid", SESSIONID4)),
    53: struct("SEQUENCE4args", ("sessionid", SESSIONID4), ("sequenceid", SEQID), ("slotid", SLOTID),
               ("highest_slotid", HIGH_SLOTID), ("cachethis", boolean("nfs.cachethis4", "cache this?"))),
    10044: VOID,
}
RES: Final[dict[int, XdrType]] = {
    3: Access4Result(),
    # tshark shows CLOSE's stateid as its bytes alone: deprecated in CLOSE replies (RFC 7530 §16.2.5,
    # RFC 8881 §18.2.4: a server returns the special invalid stateid)
    4: struct("CLOSE4resok", ("open_stateid", tree(opaque("nfs.stateid", "StateID", fixed=16), "nfs.stateid4",
                                                   "stateid"))),
    5: struct("COMMIT4resok", ("writeverf", VERIFIER4)),
    6: struct("CREATE4resok", ("cinfo", CHANGE_INFO4), ("attrset", BITMAP4)),
    7: VOID,
    8: VOID,
    9: struct("GETATTR4resok", ("obj_attributes", FATTR4)),
    10: struct("GETFH4resok", ("object", tree(fhandle(128), "nfs.fh", "Filehandle"))),
    11: struct("LINK4resok", ("cinfo", CHANGE_INFO4)),
    12: struct("LOCK4resok", ("lock_stateid", STATEID4)),
    13: VOID,
    14: struct("LOCKU4resok", ("lock_stateid", STATEID4)),
    15: VOID,
    16: VOID,
    17: VOID,
    18: struct("OPEN4resok", ("stateid", STATEID4), ("cinfo", CHANGE_INFO4),
               ("rflags", uint32("nfs.open_rflags", "result flags", "hex", flags=[
                   (f"nfs.open_rflags.{name}", label, mask) for name, label, mask in OPEN4_RESULT_FLAGS])),
               ("attrset", BITMAP4), ("delegation", tree(OPEN_DELEGATION4, "nfs.open_delegation4", "delegation"))),
    19: VOID,
    20: struct("OPEN_CONFIRM4resok", ("open_stateid", STATEID4)),
    21: struct("OPEN_DOWNGRADE4resok", ("open_stateid", STATEID4)),
    22: VOID,
    23: VOID,
    24: VOID,
    25: struct("READ4resok", ("eof", uint32("nfs.eof", "eof")),
               ("data", ddp("read_data", "nfs.data", "Data", length="nfs.read.data_length"))),
    26: struct("READDIR4resok", ("cookieverf", VERIFIER4),
               ("reply", tree(struct("dirlist4", ("entries", chain(_ENTRY4, "nfs.value_follows")),
                                     ("eof", boolean("nfs.dirlist4.eof", "EOF"))),
                              "nfs.dirlist4", "Directory Listing"))),
    27: struct("READLINK4resok", ("link", ddp("readlink", "nfs.symlink.linktext", "Link Contents", text=True))),
    28: struct("REMOVE4resok", ("cinfo", CHANGE_INFO4)),
    29: struct("RENAME4resok", ("source_cinfo", change_info4("source_cinfo")),
               ("target_cinfo", change_info4("target_cinfo"))),
    30: VOID,
    31: VOID,
    32: VOID,
    33: struct("SECINFO4resok", ("flavors", SECINFO4RES)),
    34: struct("SETATTR4res", ("attrsset", BITMAP4)),
    35: struct("SETCLIENTID4resok", ("clientid", CLIENTID4), ("setclientid_confirm", VERIFIER4)),
    36: VOID,
    37: VOID,
    38: struct("WRITE4resok", ("count", COUNT4), ("committed", enum("nfs.stable_how4", "stable_how4", STABLE_HOW4)),
               ("writeverf", VERIFIER4)),
    39: VOID,
    44: VOID,
    53: struct("SEQUENCE4resok", ("sessionid", SESSIONID4), ("sequenceid", SEQID), ("slotid", SLOTID),
               ("highest_slotid", HIGH_SLOTID),
               ("target_highest_slotid", uint32("nfs.target_high_slotid", "target high slot id")),
               ("status_flags", uint32("nfs.sequence.flags", "status flags", "hex", flags=[
                   (f"nfs.sequence.flags.{name}", f"SEQ4_STATUS_{name.upper()}", mask)
                   for name, mask in SEQUENCE_FLAGS]))),
    10044: VOID,
}
# Results a failed operation carries (RFC 7530 §16: LOCK and LOCKT the conflicting lock, SETATTR the
# attributes it set, SETCLIENTID the address of the client in the way): by status, ANY_ERROR for every one.
ANY_ERROR: Final = -1
FAILED: Final[dict[int, dict[int, XdrType]]] = {
    12: {NFS4ERR_DENIED: LOCK4DENIED},
    13: {NFS4ERR_DENIED: LOCK4DENIED},
    34: {ANY_ERROR: RES[34]},
    35: {NFS4ERR_CLID_INUSE: CLIENTADDR4},
}
# Results declared but not yet shown in full (tshark shows more): the operations' numbers
PARTIAL: Final[frozenset[int]] = frozenset()

# The NFSv4.1 and 4.2 operations (nfs41.py) join ARGS, RES and FAILED when that module loads.
