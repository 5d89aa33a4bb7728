"""NFS's side programs declared in XDR: MOUNT (v1-v3), NLM (v1-v4) and NFSACL (v3), as tshark names them.

MOUNT (RFC 1094 appendix A, RFC 1813 appendix I): MNT with its file handle and auth flavors, DUMP's mount
list, UMNT, UMNTALL, EXPORT's export list.  NLM (RFC 1813 appendix II; the X/Open NLM): TEST, LOCK,
CANCEL, UNLOCK, GRANTED, their _MSG and _RES forms, SHARE, UNSHARE, NM_LOCK, FREE_ALL; v1-v3 locks with
32-bit offsets, v4 with 64-bit ones.  NFSACL (Linux's POSIX ACL side program of NFSv3): GETACL, SETACL,
GETXATTRDIR.  ``PROGRAMS`` maps each program and version to its procedures' argument and result
declarations, which the dissector (nfs.py) walks when the layer is filled.
"""
from __future__ import annotations

from ..fields import declaring
from ..typenames import Final
from .nfs3 import NFS_FH3, STATUS, FileHandle, fh3, fhandle, post_op_attr
from .xdrlang import (VOID, XdrType, array, boolean, chain, enum, int32, opaque, string, struct, tree, uint32,
                      uint64, union)

declaring(__name__)

# Program -> version -> (procedure -> arguments, procedure -> results)
Procs = dict[int, XdrType]
PROGRAMS: Final[dict[int, dict[int, tuple[Procs, Procs]]]] = {}

# --- MOUNT -----------------------------------------------------------------------------------------------
MOUNT_STATUS: Final = {0: "OK", 1: "ERR_PERM", 2: "ERR_NOENT", 5: "ERR_IO", 13: "ERR_ACCESS", 20: "ERR_NOTDIR",
                       22: "ERR_INVAL", 63: "ERR_NAMETOOLONG", 10004: "ERR_NOTSUPP", 10006: "ERR_SERVERFAULT"}
AUTH_FLAVORS: Final = {0: "AUTH_NULL", 1: "AUTH_UNIX", 2: "AUTH_SHORT", 3: "AUTH_DES", 6: "RPCSEC_GSS",
                       390003: "krb5", 390004: "krb5i", 390005: "krb5p"}
_DIRPATH: Final = string("mount.path", "Path", bound=1024)
_MOUNT_STATUS: Final = enum("mount.status", "Status", MOUNT_STATUS)
_MOUNTLIST: Final = chain(tree(struct("mountbody", ("hostname", string("mount.dump.hostname", "Hostname", 255)),
                                      ("directory", string("mount.dump.directory", "Directory", 1024))),
                               "mount.dump.entry", "Mount List Entry"))
_EXPORTS: Final = chain(tree(struct(
    "exportnode", ("dir", string("mount.export.directory", "Directory", 1024)),
    ("groups", tree(chain(string("mount.export.group", "Group", 255)), "mount.export.groups", "Groups"))),
    "mount.export.entry", "Export List Entry"))
_FHSTATUS2: Final = union("fhstatus", _MOUNT_STATUS, {0: tree(
    FileHandle(fixed=32), "nfs.fh", "fhandle")}, None)
_MOUNTRES3: Final = union("mountres3", _MOUNT_STATUS, {0: struct(
    "mountres3_ok", ("fhandle", fh3("fhandle")),
    ("auth_flavors", array(enum("mount.flavor", "Flavor", AUTH_FLAVORS), count="mount.flavors",
                           label="Flavors")))}, None)


def _mount(mnt_result: XdrType) -> tuple[Procs, Procs]:
    return ({0: VOID, 1: _DIRPATH, 2: VOID, 3: _DIRPATH, 4: VOID, 5: VOID},
            {0: VOID, 1: mnt_result, 2: _MOUNTLIST, 3: VOID, 4: VOID, 5: _EXPORTS})


PROGRAMS[100005] = {1: _mount(_FHSTATUS2), 2: _mount(_FHSTATUS2), 3: _mount(_MOUNTRES3)}

# --- NLM ---------------------------------------------------------------------------------------------------
NLM_STATS: Final = {0: "LCK_GRANTED", 1: "LCK_DENIED", 2: "LCK_DENIED_NOLOCKS", 3: "LCK_BLOCKED",
                    4: "LCK_DENIED_GRACE_PERIOD", 5: "LCK_DEADLCK", 6: "LCK_ROFS", 7: "LCK_STALE_FH",
                    8: "LCK_FBIG", 9: "LCK_FAILED"}
_COOKIE: Final = opaque("nlm.cookie", "cookie", bound=1024)
_OWNER: Final = opaque("nlm.lock.owner", "owner", bound=1024)
_CALLER: Final = string("nlm.lock.caller_name", "caller_name", bound=1024)
_NLM_FH: Final = tree(fhandle(1024), "nfs.fh", "fh")
_STAT: Final = enum("nlm.stat", "stat", NLM_STATS)
_EXCLUSIVE: Final = boolean("nlm.exclusive", "exclusive")


def _nlm(wide: bool, shares: bool) -> tuple[Procs, Procs]:
    """One version's procedures: v4 (``wide``) has 64-bit offsets and lengths, v1-v3 32-bit ones; v3 and
    v4 (``shares``) have SHARE, UNSHARE, NM_LOCK and FREE_ALL."""
    offset = uint64("nlm.lock.l_offset64", "l_offset") if wide else uint32("nlm.lock.l_offset", "l_offset")
    length = uint64("nlm.lock.l_len64", "l_len") if wide else uint32("nlm.lock.l_len", "l_len")
    lock = tree(struct("nlm4_lock" if wide else "nlm_lock", ("caller_name", _CALLER), ("fh", _NLM_FH),
                       ("oh", _OWNER), ("svid", uint32("nlm.lock.svid", "svid")), ("l_offset", offset),
                       ("l_len", length)), "nlm.lock", "lock")
    holder = tree(struct("nlm4_holder" if wide else "nlm_holder", ("exclusive", _EXCLUSIVE),
                         ("svid", uint32("nlm.lock.svid", "svid")), ("oh", _OWNER), ("l_offset", offset),
                         ("l_len", length)), "nlm.holder", "holder")
    testargs = struct("nlm_testargs", ("cookie", _COOKIE), ("exclusive", _EXCLUSIVE), ("alock", lock))
    lockargs = struct("nlm_lockargs", ("cookie", _COOKIE), ("block", boolean("nlm.block", "block")),
                      ("exclusive", _EXCLUSIVE), ("alock", lock), ("reclaim", boolean("nlm.reclaim", "reclaim")),
                      ("state", uint32("nlm.state", "state")))
    cancargs = struct("nlm_cancargs", ("cookie", _COOKIE), ("block", boolean("nlm.block", "block")),
                      ("exclusive", _EXCLUSIVE), ("alock", lock))
    unlockargs = struct("nlm_unlockargs", ("cookie", _COOKIE), ("alock", lock))
    testres = struct("nlm_testres", ("cookie", _COOKIE), ("test_stat", tree(
        union("nlm_testrply", enum("nlm.test_stat.stat", "stat", NLM_STATS), {1: holder}, None),
        "nlm.test_stat", "test_stat")))
    res = struct("nlm_res", ("cookie", _COOKIE), ("stat", _STAT))
    share = tree(struct("nlm_share", ("caller_name", _CALLER),
                        ("fh", _NLM_FH), ("oh", _OWNER), ("mode", uint32("nlm.share.mode", "mode")),
                        ("access", uint32("nlm.share.access", "access"))), "nlm.share", "share")
    shareargs = struct("nlm_shareargs", ("cookie", _COOKIE), ("share", share),
                       ("reclaim", boolean("nlm.reclaim", "reclaim")))
    shareres = struct("nlm_shareres", ("cookie", _COOKIE), ("stat", _STAT),
                      ("sequence", int32("nlm.sequence", "sequence")))
    notify = struct("nlm_notify", ("name", string("nlm.share.name", "name", bound=1024)),
                    ("state", uint32("nlm.state", "state")))
    args: Procs = {0: VOID, 1: testargs, 2: lockargs, 3: cancargs, 4: unlockargs, 5: testargs,
                   6: testargs, 7: lockargs, 8: cancargs, 9: unlockargs, 10: testargs,
                   11: testres, 12: res, 13: res, 14: res, 15: res}
    results: Procs = {0: VOID, 1: testres, 2: res, 3: res, 4: res, 5: res, **{p: VOID for p in range(6, 16)}}
    if shares:
        args.update({20: shareargs, 21: shareargs, 22: lockargs, 23: notify})
        results.update({20: shareres, 21: shareres, 22: res, 23: VOID})
    return args, results


PROGRAMS[100021] = {1: _nlm(False, False), 2: _nlm(False, False), 3: _nlm(False, True), 4: _nlm(True, True)}

# --- NFSACL ------------------------------------------------------------------------------------------------
_ACL_MASK: Final = uint32("nfsacl.mask", "Mask", "hex", flags=(
    ("nfsacl.mask.acl_entry", "ACL entry", 0x1), ("nfsacl.mask.acl_count", "ACL count", 0x2),
    ("nfsacl.mask.default_acl_entry", "Default ACL entry", 0x4),
    ("nfsacl.mask.default_acl_count", "Default ACL count", 0x8)))
_ACLENT: Final = tree(struct("nfsacl_aclent", ("type", uint32("nfsacl.aclent.type", "Type", "hex")),
                             ("id", uint32("nfsacl.aclent.uid", "UID")),
                             ("perm", uint32("nfsacl.aclent.perm", "Permissions", flags=(
                                 ("nfsacl.aclent.perm.read", "READ", 4), ("nfsacl.aclent.perm.write", "WRITE", 2),
                                 ("nfsacl.aclent.perm.exec", "EXEC", 1))))),
                      "nfsacl.aclent", "ACL Entry")
_ACLS: Final = struct("nfsacl_acls", ("aclcnt", uint32("nfsacl.aclcnt", "ACL count")),
                      ("entries", array(_ACLENT, bound=1024)),
                      ("dfaclcnt", uint32("nfsacl.dfaclcnt", "Default ACL count")),
                      ("dfentries", array(_ACLENT, bound=1024)))
_NFSACL_STATUS: Final = STATUS


def _acl_result(name: str, ok: XdrType, fail: XdrType | None) -> XdrType:
    return union(name, uint32(None, also=[_NFSACL_STATUS]), {0: ok}, fail)


PROGRAMS[100227] = {3: (
    {0: VOID,
     1: struct("GETACL3args", ("fh", tree(NFS_FH3, "nfs.fh", "fhandle")), ("mask", _ACL_MASK)),
     2: struct("SETACL3args", ("fh", tree(NFS_FH3, "nfs.fh", "fhandle")), ("mask", _ACL_MASK), ("acls", _ACLS)),
     3: struct("GETXATTRDIR3args", ("fh", tree(NFS_FH3, "nfs.fh", "fhandle")),
               ("create", boolean("nfsacl.create", "create")))},
    {0: VOID,
     1: _acl_result("GETACL3res", tree(struct("GETACL3resok", ("attr", post_op_attr("attr")), ("mask", _ACL_MASK),
                                               ("acls", _ACLS)), "nfsacl.acl", "ACL"), post_op_attr("attr")),
     2: _acl_result("SETACL3res", post_op_attr("attr"), post_op_attr("attr")),
     3: _acl_result("GETXATTRDIR3res", struct("GETXATTRDIR3resok", ("fh", tree(NFS_FH3, "nfs.fh", "fhandle")),
                                              ("attr", post_op_attr("attr"))), None)},
)}
