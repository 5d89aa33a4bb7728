"""NFS version 3 (RFC 1813) declared in XDR: every procedure's arguments and results.

``ARGS[proc]`` and ``RES[proc]`` are the declarations of each procedure's call body and reply body; the
NFS dissector walks them when a packet's NFS layer is filled (``-V``, JSON, a filter naming nfs.*
fields), and its summary path reads only the few words it needs.  Field names are tshark's
(``tshark -G fields``), so that a Wireshark filter works unchanged: ``nfs.fhandle``, ``nfs.fh.hash`` (the
handle's CRC-32, as zlib computes it), ``nfs.offset3``, ``nfs.count3``, ``nfs.status3`` (also shown as
``nfs.status``), ``nfs.fattr3.*``, ``nfs.name``...  Shared types (handles, attributes, names) are used
by MOUNT, NLM and NFSACL too.
"""
from __future__ import annotations

import zlib

from ..fields import Field, declaring
from ..packet import Layer
from ..typenames import Any, Final, Iterator
from .xdr import Cursor, XdrInvalid, bytes_at
from .xdrlang import (VOID, Int, Opaque, Walk, XdrType, boolean, chain, ddp, enum, field, opaque, optional, string,
                      struct, tree, uint32, uint64, union)

declaring(__name__)

NFS3_STATUS: Final = {
    0: "NFS3_OK", 1: "NFS3ERR_PERM", 2: "NFS3ERR_NOENT", 5: "NFS3ERR_IO", 6: "NFS3ERR_NXIO", 13: "NFS3ERR_ACCES",
    17: "NFS3ERR_EXIST", 18: "NFS3ERR_XDEV", 19: "NFS3ERR_NODEV", 20: "NFS3ERR_NOTDIR", 21: "NFS3ERR_ISDIR",
    22: "NFS3ERR_INVAL", 27: "NFS3ERR_FBIG", 28: "NFS3ERR_NOSPC", 30: "NFS3ERR_ROFS", 31: "NFS3ERR_MLINK",
    63: "NFS3ERR_NAMETOOLONG", 66: "NFS3ERR_NOTEMPTY", 69: "NFS3ERR_DQUOT", 70: "NFS3ERR_STALE",
    71: "NFS3ERR_REMOTE", 10001: "NFS3ERR_BADHANDLE", 10002: "NFS3ERR_NOT_SYNC", 10003: "NFS3ERR_BAD_COOKIE",
    10004: "NFS3ERR_NOTSUPP", 10005: "NFS3ERR_TOOSMALL", 10006: "NFS3ERR_SERVERFAULT", 10007: "NFS3ERR_BADTYPE",
    10008: "NFS3ERR_JUKEBOX"}
FTYPE3: Final = {1: "Regular File", 2: "Directory", 3: "Block Special Device", 4: "Character Special Device",
                 5: "Symbolic Link", 6: "Socket", 7: "Named Pipe"}
STABLE_HOW: Final = {0: "UNSTABLE", 1: "DATA_SYNC", 2: "FILE_SYNC"}
CREATE_MODE: Final = {0: "UNCHECKED", 1: "GUARDED", 2: "EXCLUSIVE"}
TIME_HOW: Final = {0: "don't change", 1: "set to server time", 2: "set to client time"}
ACCESS_BITS: Final = (("nfs.access_read", "READ", 0x01), ("nfs.access_lookup", "LOOKUP", 0x02),
                      ("nfs.access_modify", "MODIFY", 0x04), ("nfs.access_extend", "EXTEND", 0x08),
                      ("nfs.access_delete", "DELETE", 0x10), ("nfs.access_execute", "EXECUTE", 0x20),
                      # RFC 8276's extended attribute rights (NFSv4.2), which tshark shows for every version
                      ("nfs.access_xattr_read", "XATTR READ", 0x40), ("nfs.access_xattr_write", "XATTR WRITE", 0x80),
                      ("nfs.access_xattr_list", "XATTR LIST", 0x100))
MODE_BITS: Final = (("nfs.mode3.suid", "S_ISUID", 0o4000), ("nfs.mode3.sgid", "S_ISGID", 0o2000),
                    ("nfs.mode3.sticky", "S_ISVTX", 0o1000), ("nfs.mode3.rusr", "S_IRUSR", 0o400),
                    ("nfs.mode3.wusr", "S_IWUSR", 0o200), ("nfs.mode3.xusr", "S_IXUSR", 0o100),
                    ("nfs.mode3.rgrp", "S_IRGRP", 0o40), ("nfs.mode3.wgrp", "S_IWGRP", 0o20),
                    ("nfs.mode3.xgrp", "S_IXGRP", 0o10), ("nfs.mode3.roth", "S_IROTH", 0o4),
                    ("nfs.mode3.woth", "S_IWOTH", 0o2), ("nfs.mode3.xoth", "S_IXOTH", 0o1))


def fh_hash(handle: bytes) -> int:
    """tshark's ``nfs.fh.hash``: the CRC-32 of the handle's bytes (Linux's ``nfs_fhandle_hash`` too)."""
    return zlib.crc32(handle)


FH_HASH: Final = field("nfs.fh.hash", "hash (CRC-32)", "hex")
FH_LENGTH: Final = "nfs.fh.length"
FH_NAME: Final = field("nfs.name", "Name", "str")
FH_FULL_NAME: Final = field("nfs.full_name", "Full Name", "str",
                            doc="the handle's directories' names up to a root (a MOUNT's export, NFSv4's /)")


class FileHandle(Opaque):
    """A file handle, shown as tshark shows one: its length, its hash, the name and full name the
    capture gave it (``nfs.name``, ``nfs.full_name``: snooped by nfs_names, when the walk has a
    ``names`` look-up and the handle is known), its bytes."""

    __slots__ = ()

    def __init__(self, fixed: int | None = None, bound: int | None = None) -> None:
        super().__init__(field("nfs.fhandle", "FileHandle", "bytes"), fixed, bound,
                         None if fixed is not None else field(FH_LENGTH, "length"), False, [(FH_HASH, fh_hash)])

    def read(self, cur: Cursor, w: Walk, lay: Layer | None) -> Any:
        if lay is None:
            return super().read(cur, w, None)
        n = self.fixed
        if n is None:
            q = cur.pos
            n = cur.u32(self.what)
            if self.bound is not None and n > self.bound:
                raise XdrInvalid(f"{self.what}: length {n} over its bound {self.bound}")
            if self.length is not None:
                lay.add(self.length, n, q, 4)
        p = cur.need((n + 3) & ~3, self.what)
        cur.pos = p + ((n + 3) & ~3)
        raw = bytes_at(cur.buf, p, p + n)
        lay.add(FH_HASH, fh_hash(raw), p, n)
        lookup = getattr(w, "names", None)
        if lookup is not None:
            name, full = lookup(raw)
            if name is not None:
                lay.add(FH_NAME, name, p, n)
            if full is not None:
                lay.add(FH_FULL_NAME, full, p, n)
        assert self.field is not None
        lay.add(self.field, raw, p, n)
        return raw

    def fields(self) -> Iterator[Field]:
        yield from super().fields()
        yield FH_NAME
        yield FH_FULL_NAME


def fhandle(bound: int) -> XdrType:
    """An ``opaque<bound>`` file handle: its length, its hash, its names and its bytes."""
    return FileHandle(bound=bound)


NFS_FH3: Final = fhandle(64)


def fh3(label: str) -> XdrType:
    """An ``nfs_fh3`` shown as a sub-tree named by its role (object, file, dir)."""
    return tree(NFS_FH3, "nfs.fh", label)


# --- attributes --------------------------------------------------------------------------------------
def nfstime3(name: str) -> XdrType:
    return tree(struct("nfstime3", ("seconds", uint32(f"{name}.sec", "seconds")),
                       ("nseconds", uint32(f"{name}.nsec", "nano seconds"))), name, name.rsplit(".", 1)[-1])


MODE3: Final = uint32("nfs.mode3", "Mode", flags=MODE_BITS)
FATTR3: Final = tree(struct(
    "fattr3",
    ("type", enum("nfs.fattr3.type", "Type", FTYPE3)),
    ("mode", MODE3),
    ("nlink", uint32("nfs.fattr3.nlink", "nlink")),
    ("uid", uint32("nfs.fattr3.uid", "uid")),
    ("gid", uint32("nfs.fattr3.gid", "gid")),
    ("size", uint64("nfs.fattr3.size", "size")),
    ("used", uint64("nfs.fattr3.used", "used")),
    ("rdev", tree(struct("specdata3", ("specdata1", uint32("nfs.specdata1", "specdata1")),
                         ("specdata2", uint32("nfs.specdata2", "specdata2"))), "nfs.rdev", "rdev")),
    ("fsid", uint64("nfs.fattr3.fsid", "fsid", "hex")),
    ("fileid", uint64("nfs.fattr3.fileid", "fileid")),
    ("atime", nfstime3("nfs.atime")),
    ("mtime", nfstime3("nfs.mtime")),
    ("ctime", nfstime3("nfs.ctime")),
), "nfs.fattr3", "attributes")
_FATTR3_BODY: Final = FATTR3.item


def post_op_attr(label: str) -> XdrType:
    return tree(optional(FATTR3, "nfs.attributes_follow", "attributes_follow"), "nfs.post_op_attr", label)


def fattr3(label: str) -> XdrType:
    """fattr3 standing alone (GETATTR's result), under its role's name."""
    return tree(_FATTR3_BODY, "nfs.fattr3", label)


WCC_ATTR: Final = tree(struct("wcc_attr", ("size", uint64("nfs.wcc_attr.size", "size")),
                              ("mtime", nfstime3("nfs.mtime")), ("ctime", nfstime3("nfs.ctime"))),
                       "nfs.wcc_attr", "attributes")
PRE_OP_ATTR: Final = tree(optional(WCC_ATTR, "nfs.attributes_follow"), "nfs.pre_op_attr", "before")
_WCC_DATA: Final = struct("wcc_data", ("before", PRE_OP_ATTR), ("after", post_op_attr("after")))


def wcc_data(label: str) -> XdrType:
    return tree(_WCC_DATA, "nfs.wcc_data", label)


def post_op_fh3(label: str) -> XdrType:
    return tree(optional(fh3("handle"), "nfs.handle_follow", "handle_follow"), "nfs.post_op_fh3", label)


FILENAME3: Final = string("nfs.name", "Name")
DIROPARGS3: Final = struct("diropargs3", ("dir", fh3("dir")), ("name", FILENAME3))


def diropargs3(label: str) -> XdrType:
    return tree(DIROPARGS3, "nfs.diropargs3", label)


SET_IT: Final = "nfs.set_it"


def _set(name: str, item: XdrType) -> XdrType:
    return union(name, uint32(SET_IT, "set_it"), {0: None, 1: item})


def _set_time(name: str, time_name: str) -> XdrType:
    return union(name, enum(SET_IT, "set_it", TIME_HOW), {0: None, 1: None, 2: nfstime3(time_name)})


SATTR3: Final = struct(
    "sattr3",
    ("mode", _set("set_mode3", MODE3)),
    ("uid", _set("set_uid3", uint32("nfs.uid3", "uid"))),
    ("gid", _set("set_gid3", uint32("nfs.gid3", "gid"))),
    ("size", _set("set_size3", uint64("nfs.set_size", "size"))),
    ("atime", _set_time("set_atime", "nfs.atime")),
    ("mtime", _set_time("set_mtime", "nfs.mtime")),
)


def sattr3(label: str) -> XdrType:
    return tree(SATTR3, "nfs.sattr3", label)


VERF3: Final = opaque("nfs.verifier", "Verifier", fixed=8)
STATUS: Final = field("nfs.status", "Status")     # every NFS status, whatever its version (tshark's)
STATUS3: Final = enum("nfs.status3", "Status", NFS3_STATUS, also=[STATUS])


def result(name: str, ok: XdrType, fail: XdrType) -> XdrType:
    """A procedure's result: ``union switch (nfsstat3 status) { case NFS3_OK: ok; default: fail; }``."""
    return union(name, STATUS3, {0: ok}, fail)


class AccessMask(Int):
    """An ACCESS3 mask.  In a call, the bits asked for; in a reply, the bits granted, shown (as tshark
    does) for the bits the call asked for: the walk's ``call`` holds the call's mask.  Every defined bit
    is in the word's last byte, which is what tshark shows (an 8-bit field there)."""

    __slots__ = ("rights",)

    def __init__(self, name: str, label: str) -> None:
        super().__init__(field(name, label, "hex"))
        self.rights = tuple([(field(n, lab, "bool"), m) for n, lab, m in ACCESS_BITS])

    def read(self, cur: Cursor, w: Walk, lay: Layer | None) -> Any:
        p = cur.pos
        v = cur.u32(self.what)
        if lay is not None:
            assert self.field is not None
            lay.add(self.field, v & 0xFF, p + 3, 1)
            asked = w.call if isinstance(w.call, int) else v if self.field.name == "nfs.access_check" else 0x3F
            for f, m in self.rights:
                if asked & m:
                    lay.add(f, bool(v & m), p + 3, 1)
        return v

    def fields(self) -> Any:
        yield from super().fields()
        for f, _m in self.rights:
            yield f


ACCESS_CHECK: Final = AccessMask("nfs.access_check", "Check access")
ACCESS_RIGHTS: Final = AccessMask("nfs.access_rights", "Access rights")

# --- procedures ----------------------------------------------------------------------------------------
COUNT3: Final = uint32("nfs.count3", "count")
OFFSET3: Final = uint64("nfs.offset3", "offset")
COOKIE3: Final = uint64("nfs.cookie3", "cookie")
_DIROPRES3: Final = result("diropres3", struct("diropres3ok", ("obj", post_op_fh3("obj")),
                                               ("obj_attributes", post_op_attr("obj_attributes")),
                                               ("dir_wcc", wcc_data("dir_wcc"))), wcc_data("dir_wcc"))
_DIR_WCC_RES: Final = result("wccstat3", wcc_data("dir_wcc"), wcc_data("dir_wcc"))
_FILE: Final = fh3("file")
_OBJECT: Final = fh3("object")
_OBJ_ATTRS: Final = post_op_attr("obj_attributes")
_DEVICEDATA3: Final = struct("devicedata3", ("dev_attributes", sattr3("dev_attributes")),
                             ("spec", tree(struct("specdata3", ("specdata1", uint32("nfs.specdata1")),
                                                  ("specdata2", uint32("nfs.specdata2"))), "nfs.rdev", "spec")))
_MKNODDATA3: Final = union("mknoddata3", enum("nfs.type", "Type", FTYPE3),
                           {3: _DEVICEDATA3, 4: _DEVICEDATA3, 6: sattr3("pipe_attributes"),
                            7: sattr3("pipe_attributes")}, None)
_ENTRY3: Final = tree(struct("entry3", ("fileid", uint64("nfs.readdir.entry3.fileid", "File ID")),
                             ("name", string("nfs.readdir.entry3.name", "Name")),
                             ("cookie", uint64("nfs.readdir.entry3.cookie", "Cookie"))),
                      "nfs.readdir.entry", "Entry")
_ENTRYPLUS3: Final = tree(struct("entryplus3", ("fileid", uint64("nfs.readdirplus.entry.fileid", "File ID")),
                                 ("name", string("nfs.readdirplus.entry.name", "Name")),
                                 ("cookie", uint64("nfs.readdirplus.entry.cookie", "Cookie")),
                                 ("name_attributes", post_op_attr("name_attributes")),
                                 ("name_handle", post_op_fh3("name_handle"))),
                          "nfs.readdir.entry", "Entry")
_READDIR_EOF: Final = uint32("nfs.readdir.eof", "EOF")
_DIR_ATTRS: Final = post_op_attr("dir_attributes")

ARGS: Final[dict[int, XdrType]] = {
    0: VOID,
    1: struct("GETATTR3args", ("object", _OBJECT)),
    2: struct("SETATTR3args", ("object", _OBJECT), ("new_attributes", sattr3("new_attributes")),
              ("guard", tree(union("sattrguard3", boolean("nfs.sattrguard3", "check"), {0: None, 1: nfstime3("nfs.ctime")}),
                             "nfs.guard", "guard"))),
    3: struct("LOOKUP3args", ("what", diropargs3("what"))),
    4: struct("ACCESS3args", ("object", _OBJECT), ("access", ACCESS_CHECK)),
    5: struct("READLINK3args", ("symlink", fh3("symlink"))),
    6: struct("READ3args", ("file", _FILE), ("offset", OFFSET3), ("count", COUNT3)),
    7: struct("WRITE3args", ("file", _FILE), ("offset", OFFSET3), ("count", COUNT3),
              ("stable", enum("nfs.write.stable", "Stable", STABLE_HOW)),
              ("data", ddp("write_data", "nfs.data", "Data"))),
    8: struct("CREATE3args", ("where", diropargs3("where")),
              ("how", union("createhow3", enum("nfs.createmode", "Create Mode", CREATE_MODE),
                            {0: sattr3("obj_attributes"), 1: sattr3("obj_attributes"), 2: VERF3}))),
    9: struct("MKDIR3args", ("where", diropargs3("where")), ("attributes", sattr3("attributes"))),
    10: struct("SYMLINK3args", ("where", diropargs3("where")),
               ("symlink", struct("symlinkdata3", ("symlink_attributes", sattr3("symlink_attributes")),
                                  ("symlink_data", ddp("symlink", "nfs.symlink.to", "To", text=True))))),
    11: struct("MKNOD3args", ("where", diropargs3("where")), ("what", _MKNODDATA3)),
    12: struct("REMOVE3args", ("object", diropargs3("object"))),
    13: struct("RMDIR3args", ("object", diropargs3("object"))),
    14: struct("RENAME3args", ("from", diropargs3("from")), ("to", diropargs3("to"))),
    15: struct("LINK3args", ("file", _FILE), ("link", diropargs3("link"))),
    16: struct("READDIR3args", ("dir", fh3("dir")), ("cookie", COOKIE3), ("cookieverf", VERF3),
               ("count", COUNT3)),
    17: struct("READDIRPLUS3args", ("dir", fh3("dir")), ("cookie", COOKIE3), ("cookieverf", VERF3),
               ("dircount", uint32("nfs.count3_dircount", "dircount")),
               ("maxcount", uint32("nfs.count3_maxcount", "maxcount"))),
    18: struct("FSSTAT3args", ("fsroot", _OBJECT)),
    19: struct("FSINFO3args", ("fsroot", _OBJECT)),
    20: struct("PATHCONF3args", ("object", _OBJECT)),
    21: struct("COMMIT3args", ("file", _FILE), ("offset", OFFSET3), ("count", COUNT3)),
}

RES: Final[dict[int, XdrType]] = {
    0: VOID,
    1: result("GETATTR3res", fattr3("obj_attributes"), VOID),
    2: result("SETATTR3res", wcc_data("obj_wcc"), wcc_data("obj_wcc")),
    3: result("LOOKUP3res", struct("LOOKUP3resok", ("object", fh3("object")), ("obj_attributes", _OBJ_ATTRS),
                                   ("dir_attributes", _DIR_ATTRS)), _DIR_ATTRS),
    4: result("ACCESS3res", struct("ACCESS3resok", ("obj_attributes", _OBJ_ATTRS), ("access", ACCESS_RIGHTS)),
              _OBJ_ATTRS),
    5: result("READLINK3res", struct("READLINK3resok", ("symlink_attributes", post_op_attr("symlink_attributes")),
                                     ("data", ddp("readlink", "nfs.readlink.data", "Data", text=True))),
              post_op_attr("symlink_attributes")),
    6: result("READ3res", struct("READ3resok", ("file_attributes", post_op_attr("file_attributes")),
                                 ("count", COUNT3), ("eof", boolean("nfs.read.eof", "EOF")),
                                 ("data", ddp("read_data", "nfs.data", "Data"))),
              post_op_attr("file_attributes")),
    7: result("WRITE3res", struct("WRITE3resok", ("file_wcc", wcc_data("file_wcc")), ("count", COUNT3),
                                  ("committed", enum("nfs.write.committed", "Committed", STABLE_HOW)),
                                  ("verf", VERF3)), wcc_data("file_wcc")),
    8: _DIROPRES3,
    9: _DIROPRES3,
    10: _DIROPRES3,
    11: _DIROPRES3,
    12: _DIR_WCC_RES,
    13: _DIR_WCC_RES,
    14: result("RENAME3res", struct("RENAME3wcc", ("fromdir_wcc", wcc_data("fromdir_wcc")),
                                    ("todir_wcc", wcc_data("todir_wcc"))),
               struct("RENAME3wcc", ("fromdir_wcc", wcc_data("fromdir_wcc")), ("todir_wcc", wcc_data("todir_wcc")))),
    15: result("LINK3res", struct("LINK3wcc", ("file_attributes", post_op_attr("file_attributes")),
                                  ("linkdir_wcc", wcc_data("linkdir_wcc"))),
               struct("LINK3wcc", ("file_attributes", post_op_attr("file_attributes")),
                      ("linkdir_wcc", wcc_data("linkdir_wcc")))),
    16: result("READDIR3res", struct("READDIR3resok", ("dir_attributes", _DIR_ATTRS), ("cookieverf", VERF3),
                                     ("entries", chain(_ENTRY3)), ("eof", _READDIR_EOF)), _DIR_ATTRS),
    17: result("READDIRPLUS3res", struct("READDIRPLUS3resok", ("dir_attributes", _DIR_ATTRS), ("cookieverf", VERF3),
                                         ("entries", chain(_ENTRYPLUS3)), ("eof", _READDIR_EOF)), _DIR_ATTRS),
    18: result("FSSTAT3res", struct(
        "FSSTAT3resok", ("obj_attributes", _OBJ_ATTRS),
        ("tbytes", uint64("nfs.fsstat3_resok.tbytes", "Total bytes")),
        ("fbytes", uint64("nfs.fsstat3_resok.fbytes", "Free bytes")),
        ("abytes", uint64("nfs.fsstat3_resok.abytes", "Available free bytes")),
        ("tfiles", uint64("nfs.fsstat3_resok.tfiles", "Total file slots")),
        ("ffiles", uint64("nfs.fsstat3_resok.ffiles", "Free file slots")),
        ("afiles", uint64("nfs.fsstat3_resok.afiles", "Available free file slots")),
        ("invarsec", uint32("nfs.fsstat.invarsec", "invarsec"))), _OBJ_ATTRS),
    19: result("FSINFO3res", struct(
        "FSINFO3resok", ("obj_attributes", _OBJ_ATTRS),
        *[(k, uint32(f"nfs.fsinfo.{k}", k)) for k in ("rtmax", "rtpref", "rtmult", "wtmax", "wtpref", "wtmult",
                                                       "dtpref")],
        ("maxfilesize", uint64("nfs.fsinfo.maxfilesize", "maxfilesize")),
        ("time_delta", nfstime3("nfs.dtime")),
        ("properties", uint32("nfs.fsinfo.properties", "Properties", "hex", flags=(
            ("nfs.fsinfo.properties.setattr", "SETATTR can set time on server", 0x10),
            ("nfs.fsinfo.properties.pathconf", "PATHCONF", 0x08),
            ("nfs.fsinfo.properties.symlinks", "File System supports symbolic links", 0x02),
            ("nfs.fsinfo.properties.hardlinks", "File System supports hard links", 0x01))))), _OBJ_ATTRS),
    20: result("PATHCONF3res", struct(
        "PATHCONF3resok", ("obj_attributes", _OBJ_ATTRS),
        ("linkmax", uint32("nfs.pathconf.linkmax", "linkmax")),
        ("name_max", uint32("nfs.pathconf.name_max", "name_max")),
        *[(k, boolean(f"nfs.pathconf.{k}", k)) for k in ("no_trunc", "chown_restricted", "case_insensitive",
                                                          "case_preserving")]), _OBJ_ATTRS),
    21: result("COMMIT3res", struct("COMMIT3resok", ("file_wcc", wcc_data("file_wcc")), ("verf", VERF3)),
               wcc_data("file_wcc")),
}
