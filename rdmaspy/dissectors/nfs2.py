"""NFS version 2 (RFC 1094) declared in XDR: every procedure's arguments and results, as tshark names them.

``ARGS[proc]`` and ``RES[proc]`` as for NFSv3 (nfs3.py); NULL, ROOT and WRITECACHE take and return nothing.
"""
from __future__ import annotations

from ..fields import declaring
from ..typenames import Final
from .nfs3 import STATUS, FileHandle
from .xdrlang import VOID, XdrType, chain, ddp, enum, string, struct, tree, uint32, union

declaring(__name__)

NFS2_STATUS: Final = {
    0: "NFS_OK", 1: "NFSERR_PERM", 2: "NFSERR_NOENT", 5: "NFSERR_IO", 6: "NFSERR_NXIO", 13: "NFSERR_ACCES",
    17: "NFSERR_EXIST", 19: "NFSERR_NODEV", 20: "NFSERR_NOTDIR", 21: "NFSERR_ISDIR", 27: "NFSERR_FBIG",
    28: "NFSERR_NOSPC", 30: "NFSERR_ROFS", 63: "NFSERR_NAMETOOLONG", 66: "NFSERR_NOTEMPTY", 69: "NFSERR_DQUOT",
    70: "NFSERR_STALE", 99: "NFSERR_WFLUSH"}
FTYPE2: Final = {0: "Non-File", 1: "Regular File", 2: "Directory", 3: "Block Special Device",
                 4: "Character Special Device", 5: "Symbolic Link"}
MODE_BITS: Final = (
    ("nfs.mode.set_user_id", "Set user id on exec", 0o4000), ("nfs.mode.set_group_id", "Set group id on exec", 0o2000),
    ("nfs.mode.save_swap_text", "Save swapped text even after use", 0o1000),
    ("nfs.mode.read_owner", "Read permission for owner", 0o400),
    ("nfs.mode.write_owner", "Write permission for owner", 0o200),
    ("nfs.mode.exec_owner", "Execute permission for owner", 0o100),
    ("nfs.mode.read_group", "Read permission for group", 0o40),
    ("nfs.mode.write_group", "Write permission for group", 0o20),
    ("nfs.mode.exec_group", "Execute permission for group", 0o10),
    ("nfs.mode.read_other", "Read permission for others", 0o4),
    ("nfs.mode.write_other", "Write permission for others", 0o2),
    ("nfs.mode.exec_other", "Execute permission for others", 0o1))

FHANDLE: Final = FileHandle(fixed=32)


def fhandle(label: str) -> XdrType:
    return tree(FHANDLE, "nfs.fh", label)


def timeval(name: str) -> XdrType:
    return tree(struct("timeval", ("seconds", uint32(f"{name}.sec", "seconds")),
                       ("useconds", uint32(f"{name}.usec", "micro seconds"))), name, name.rsplit(".", 1)[-1])


MODE: Final = uint32("nfs.mode", "mode", flags=[("nfs.mode.name", "Name", 0o160000, "dec"), *MODE_BITS])
FATTR: Final = tree(struct(
    "fattr", ("type", enum("nfs.ftype", "type", FTYPE2)), ("mode", MODE),
    *[(k, uint32(f"nfs.fattr.{k}", k)) for k in ("nlink", "uid", "gid", "size", "blocksize", "rdev", "blocks")],
    ("fsid", uint32("nfs.fattr.fsid", "fsid", "hex")), ("fileid", uint32("nfs.fattr.fileid", "fileid")),
    ("atime", timeval("nfs.atime")), ("mtime", timeval("nfs.mtime")), ("ctime", timeval("nfs.ctime"))),
    "nfs.fattr", "attributes")
SATTR: Final = tree(struct(
    "sattr", ("mode", MODE), *[(k, uint32(f"nfs.fattr.{k}", k)) for k in ("uid", "gid", "size")],
    ("atime", timeval("nfs.atime")), ("mtime", timeval("nfs.mtime"))), "nfs.sattr", "attributes")
FILENAME: Final = string("nfs.name", "Name", bound=255)
DIROPARGS: Final = tree(struct("diropargs", ("dir", fhandle("dir")), ("name", FILENAME)), "nfs.diropargs", "where")
STATUS2: Final = enum("nfs.status2", "Status", NFS2_STATUS, also=[STATUS])


def result(name: str, ok: XdrType) -> XdrType:
    return union(name, STATUS2, {0: ok}, None)


ATTRSTAT: Final = result("attrstat", FATTR)
DIROPRES: Final = result("diropres", struct("diropokres", ("file", fhandle("file")), ("attributes", FATTR)))
STAT: Final = result("stat", VOID)
_ENTRY: Final = tree(struct("entry", ("fileid", uint32("nfs.readdir.entry.fileid", "File ID")),
                            ("name", string("nfs.readdir.entry.name", "Name", bound=255)),
                            ("cookie", uint32("nfs.readdir.entry.cookie", "Cookie"))), "nfs.readdir.entry", "Entry")

ARGS: Final[dict[int, XdrType]] = {
    0: VOID, 1: fhandle("object"), 2: struct("sattrargs", ("file", fhandle("file")), ("attributes", SATTR)),
    3: VOID, 4: DIROPARGS, 5: fhandle("object"),
    6: struct("readargs", ("file", fhandle("file")), ("offset", uint32("nfs.read.offset", "Offset")),
              ("count", uint32("nfs.read.count", "Count")), ("totalcount", uint32("nfs.read.totalcount", "Total Count"))),
    7: VOID,
    8: struct("writeargs", ("file", fhandle("file")), ("beginoffset", uint32("nfs.write.beginoffset", "Begin Offset")),
              ("offset", uint32("nfs.write.offset", "Offset")),
              ("totalcount", uint32("nfs.write.totalcount", "Total Count")),
              ("data", ddp("write_data", "nfs.data", "Data", bound=8192))),
    9: struct("createargs", ("where", DIROPARGS), ("attributes", SATTR)),
    10: DIROPARGS,
    11: struct("renameargs", ("from", DIROPARGS), ("to", DIROPARGS)),
    12: struct("linkargs", ("from", fhandle("from")), ("to", DIROPARGS)),
    13: struct("symlinkargs", ("from", DIROPARGS), ("to", ddp("symlink", "nfs.symlink.to", "To", text=True, bound=1024)),
               ("attributes", SATTR)),
    14: struct("createargs", ("where", DIROPARGS), ("attributes", SATTR)),
    15: DIROPARGS,
    16: struct("readdirargs", ("dir", fhandle("dir")), ("cookie", uint32("nfs.readdir.cookie", "Cookie")),
               ("count", uint32("nfs.readdir.count", "Count"))),
    17: fhandle("object"),
}
RES: Final[dict[int, XdrType]] = {
    0: VOID, 1: ATTRSTAT, 2: ATTRSTAT, 3: VOID, 4: DIROPRES,
    5: result("readlinkres", ddp("readlink", "nfs.readlink.data", "Data", text=True, bound=1024)),
    6: result("readres", struct("readokres", ("attributes", FATTR),
                                ("data", ddp("read_data", "nfs.data", "Data", bound=8192)))),
    7: VOID, 8: ATTRSTAT, 9: DIROPRES, 10: STAT, 11: STAT, 12: STAT, 13: STAT, 14: DIROPRES, 15: STAT,
    16: result("readdirres", struct("readdirok", ("entries", chain(_ENTRY)),
                                    ("eof", uint32("nfs.readdir.eof", "EOF")))),
    17: result("statfsres", struct("statfsokres", *[(k, uint32(f"nfs.statfs.{k}", k))
                                                    for k in ("tsize", "bsize", "blocks", "bfree", "bavail")])),
}
