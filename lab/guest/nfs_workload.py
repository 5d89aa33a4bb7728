"""The NFS workload of `lab/run nfs-full`: one version's mount, every kind of operation, unmount.

Runs inside the guest, which is both the NFS client and the server: the client works under the
mount point, the server's side of a step (files made in place, a lock or an open that conflicts
with the client's) works on the exported directory itself. Every step goes into a JSON log beside
the capture: what was done (files, offsets, sizes), whether it succeeded, and the RPC operations it
must have put on the wire ("PROGRAM:OP", the names tshark gives them: NFS3:WRITE, NFS4:OPEN,
NFSCB:CB_RECALL, MOUNT:MNT, NLM:LOCK, NFSACL:SETACL) and, for reads and writes, each (offset, count).

    python3 nfs_workload.py --version 4.2 --server 192.0.2.2 --client 192.0.2.1 \
        --export /export --log OUT.json
"""
from __future__ import annotations

import argparse
import ctypes
import errno
import fcntl
import json
import os
import shutil
import struct
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable

MNT = Path("/mnt/nfs")
MNT2 = Path("/mnt/nfs2")          # a second mount (v3 without READDIRPLUS)
PORT = 20049
BIGDIR_ENTRIES = 300              # a listing that needs a Reply chunk (> 4 KiB inline)
LONG_LINK = 3900                  # a symlink target longer than the inline threshold: SYMLINK by Read chunk
XATTR_BIG = 6000                  # a GETXATTR reply by Reply chunk (on XFS: ext4 keeps values under a block)
COPY_BIG = 4 << 20                # a server-side copy large enough to run asynchronously (CB_OFFLOAD)
HOLD_SECONDS = 2                  # how long the server's own lock holder keeps its lock

# (offset, size) of the direct writes and reads of one file: inline (< 4 KiB with the headers),
# by Read chunk (writes) and Write chunk (reads), lengths that are not a multiple of 4 (Linux adds
# a 4-byte write-pad segment to such a READ's Write chunk), one read at the end of file, one past it.
WRITES = [(0, 1), (1, 1000), (1001, 3000), (4096, 4096), (10000, 6000), (20000, 17), (32768, 32768),
          (70001, 9999)]
READS = [(0, 1000), (1001, 3000), (3, 5001), (4096, 4096), (20000, 13), (32768, 32768), (60000, 20000),
         (79000, 4096), (200000, 100)]
FILE_END = 80000


@dataclass
class Step:
    action: str
    args: dict
    ok: bool = True
    error: str | None = None
    expect: list[str] = field(default_factory=list)
    allowed_error: str | None = None                 # the errno name this step may end with, by design
    io: list[dict] = field(default_factory=list)     # {"op": "WRITE", "offset": o, "count": n}
    result: dict = field(default_factory=dict)


class Workload:
    def __init__(self, version: str, server: str, client: str, export: Path) -> None:
        self.version = version
        self.v4 = version != "3"
        self.minor = int(version.split(".")[1]) if self.v4 else -1
        self.server, self.client = server, client
        self.export = export
        self.sub = f"v{version}"                       # this version's own directory under the export
        self.here = MNT / self.sub                      # ... as the client sees it
        self.there = export / self.sub                  # ... as the server sees it
        self.xfs_here = MNT / "xfs" / self.sub
        self.xfs_there = export / "xfs" / self.sub
        self.steps: list[Step] = []
        self.libc = ctypes.CDLL(None, use_errno=True)

    # -- the log ------------------------------------------------------------------------------
    def nfs(self, *ops: str) -> list[str]:
        prog = "NFS4" if self.v4 else "NFS3"
        return [f"{prog}:{op}" for op in ops]

    def step(self, action: str, fn: Callable[[], object], expect: list[str] | None = None, allowed_error: str | None = None,
             **args) -> Step:
        s = Step(action, args, allowed_error=allowed_error)
        t0 = time.monotonic()
        try:
            res = fn()
            if isinstance(res, dict):
                s.result = res
        except OSError as exc:
            s.ok, s.error = False, f"{errno.errorcode.get(exc.errno or 0, 'OSError')}: {exc}"
        except (subprocess.SubprocessError, ValueError) as exc:
            s.ok, s.error = False, f"{type(exc).__name__}: {exc}"
        s.result["seconds"] = round(time.monotonic() - t0, 3)
        if s.ok and expect:
            s.expect = expect
        self.steps.append(s)
        print(f"nfs-full v{self.version}: {action} {args or ''} -> {'ok' if s.ok else s.error}", flush=True)
        return s

    def io(self, s: Step, op: str, offset: int, count: int) -> None:
        if s.ok:
            s.io.append({"op": op, "offset": offset, "count": count})

    # -- helpers --------------------------------------------------------------------------------
    @staticmethod
    def run(*argv: str, check: bool = True) -> dict:
        res = subprocess.run(argv, capture_output=True, text=True, timeout=120)
        if check and res.returncode != 0:
            raise subprocess.CalledProcessError(res.returncode, argv, res.stdout, res.stderr)
        return {"rc": res.returncode, "stdout": res.stdout[-2000:], "stderr": res.stderr[-2000:]}

    @staticmethod
    def drop_caches() -> None:
        """Forget cached pages, dentries and attributes, so that the next step goes to the server."""
        os.sync()
        Path("/proc/sys/vm/drop_caches").write_text("3\n")

    def mount(self, where: Path, *extra: str) -> dict:
        where.mkdir(parents=True, exist_ok=True)
        path = "/" if self.v4 else str(self.export)      # NFSv4's pseudo-root is the fsid=0 export
        opts = f"proto=rdma,port={PORT},vers={self.version},clientaddr={self.client}"
        return self.run("mount", "-t", "nfs", "-o", ",".join([opts, *extra]), f"{self.server}:{path}", str(where))

    def fallocate(self, fd: int, mode: int, offset: int, length: int) -> None:
        if self.libc.fallocate(fd, mode, ctypes.c_long(offset), ctypes.c_long(length)) != 0:
            e = ctypes.get_errno()
            raise OSError(e, os.strerror(e))

    # -- the server's side: what exists before the client looks --------------------------------
    def prepare(self) -> None:
        for d in (self.there, self.xfs_there):
            shutil.rmtree(d, ignore_errors=True)
            d.mkdir(parents=True)
        big = self.there / "bigdir"
        big.mkdir()
        for i in range(BIGDIR_ENTRIES):
            (big / f"entry-{i:03d}-{'x' * 24}").write_bytes(b"")
        (self.there / "deleg.txt").write_bytes(b"read me under a delegation\n" * 8)
        (self.there / "locks.bin").write_bytes(bytes(4096))
        (self.there / "opens.txt").write_bytes(b"opened twice\n")
        with open(self.there / "sparse.bin", "wb") as f:
            f.write(b"d" * 4096)
            f.seek(1 << 20)
            f.write(b"d" * 4096)
            f.truncate(2 << 20)
        with open(self.there / "copy-src-big.bin", "wb") as f:
            f.write(os.urandom(1 << 16) * (COPY_BIG >> 16))
        for p in self.there.rglob("*"):
            os.chown(p, 0, 0)
        os.sync()
        self.steps.append(Step("prepare-on-server", {
            "bigdir_entries": BIGDIR_ENTRIES, "sparse": "sparse.bin: data 0-4095 and 1 MiB-+4095, size 2 MiB",
            "copy_source": f"copy-src-big.bin {COPY_BIG} bytes"}))

    # -- the workload ---------------------------------------------------------------------------
    def go(self) -> None:
        self.prepare()
        mnt = self.step("mount", lambda: self.mount(MNT), self.mount_expect(), options=f"vers={self.version}")
        if not mnt.ok:
            return
        self.step("statfs", lambda: {"f_bavail": os.statvfs(self.here).f_bavail},
                  self.nfs("FSSTAT") if not self.v4 else self.nfs("GETATTR"))
        self.direct_io()
        self.buffered_io()
        self.listing()
        self.namespace()
        self.attributes()
        self.acls()
        self.locks()
        if self.v4:
            self.open_downgrade()
            self.delegation()
        if self.minor >= 2:
            self.v42()
        self.xattrs()
        self.step("umount", lambda: self.run("umount", str(MNT)), self.umount_expect())

    def mount_expect(self) -> list[str]:
        if not self.v4:
            return ["MOUNT:MNT", *self.nfs("FSINFO", "PATHCONF", "GETATTR")]
        if self.minor == 0:
            # and the server's probe of the client's callback service (over TCP: v4.0 has no backchannel)
            return [*self.nfs("SETCLIENTID", "SETCLIENTID_CONFIRM", "PUTROOTFH", "GETATTR"), "NFSCB:CB_NULL"]
        return self.nfs("EXCHANGE_ID", "CREATE_SESSION", "RECLAIM_COMPLETE", "SEQUENCE", "PUTROOTFH")

    def umount_expect(self) -> list[str]:
        if not self.v4:
            return ["MOUNT:UMNT"]
        return [] if self.minor == 0 else self.nfs("DESTROY_SESSION")

    def direct_io(self) -> None:
        path = self.here / "io.bin"
        fd_box: list[int] = []

        def open_direct() -> None:
            fd_box.append(os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_DIRECT, 0o644))
        self.step("open-direct", open_direct, self.nfs("OPEN") if self.v4 else self.nfs("CREATE"), file="io.bin")
        if not fd_box:
            return
        fd = fd_box[0]
        pattern = os.urandom(FILE_END)
        image = bytearray(FILE_END)          # what the file holds: the written ranges, zeros between them
        for off, size in WRITES:
            s = self.step("pwrite", lambda o=off, n=size: {"written": os.pwrite(fd, pattern[o:o + n], o)},
                          self.nfs("WRITE"), file="io.bin", offset=off, size=size, direct=True)
            self.io(s, "WRITE", off, size)
            image[off:off + size] = pattern[off:off + size]
        for off, size in READS:
            def read(o=off, n=size) -> dict:
                got = os.pread(fd, n, o)
                if got != image[o:o + n]:
                    raise ValueError(f"read back {len(got)} bytes at {o} that differ from those written")
                return {"read": len(got)}
            s = self.step("pread", read, self.nfs("READ"), file="io.bin", offset=off, size=size, direct=True)
            self.io(s, "READ", off, size)
        self.step("close", lambda: os.close(fd), self.nfs("CLOSE") if self.v4 else [], file="io.bin")

    def buffered_io(self) -> None:
        """Two ranges written through the page cache and pushed out by background writeback (UNSTABLE
        WRITEs; fsync's own writeback would make each a FILE_SYNC WRITE), then fsync: COMMIT. Read
        back after the cache is dropped."""
        path = self.here / "buffered.bin"
        data = os.urandom(10000)

        def write_sync() -> None:
            with open(path, "wb") as f:
                f.write(data[:5000])
                f.seek(65536)
                f.write(data[5000:])
                f.flush()
                write_only = 2       # SYNC_FILE_RANGE_WRITE: start writeback, WB_SYNC_NONE
                if self.libc.sync_file_range(f.fileno(), ctypes.c_long(0), ctypes.c_long(0), write_only) != 0:
                    raise OSError(ctypes.get_errno(), "sync_file_range")
                os.fsync(f.fileno())
        self.step("write-fsync", write_sync, self.nfs("WRITE", "WRITE", "COMMIT"), file="buffered.bin",
                  ranges=[[0, 5000], [65536, 5000]])
        self.drop_caches()

        def read_back() -> dict:
            got = path.read_bytes()
            if got[:5000] != data[:5000] or got[65536:] != data[5000:] or len(got) != 70536:
                raise ValueError("buffered.bin read back differs")
            return {"read": len(got)}
        self.step("read-buffered", read_back, self.nfs("READ"), file="buffered.bin", size=70536)

    def listing(self) -> None:
        self.drop_caches()
        big = self.here / "bigdir"
        # The first listing of a directory asks for the attributes too (v3 READDIRPLUS; v4 READDIR always does).
        self.step("list", lambda: {"entries": len(os.listdir(big))},
                  self.nfs("READDIR") if self.v4 else self.nfs("READDIRPLUS"), dir="bigdir", entries=BIGDIR_ENTRIES)
        if not self.v4:
            # A second mount that lists without attributes: plain READDIR.
            m = self.step("mount-nordirplus", lambda: self.mount(MNT2, "nordirplus"), ["MOUNT:MNT"],
                          options="nordirplus")
            if m.ok:
                self.step("list-names", lambda: {"entries": len(os.listdir(MNT2 / self.sub / "bigdir"))},
                          self.nfs("READDIR"), dir="bigdir", entries=BIGDIR_ENTRIES, mount=str(MNT2))
                self.step("umount-nordirplus", lambda: self.run("umount", str(MNT2)), ["MOUNT:UMNT"])

    def namespace(self) -> None:
        h = self.here
        mk = "CREATE" if self.v4 else "MKDIR"
        self.step("mkdir", lambda: os.mkdir(h / "d"), self.nfs(mk), dir="d")
        self.step("mkdir", lambda: os.mkdir(h / "d" / "sub"), self.nfs(mk), dir="d/sub")
        self.step("rename", lambda: os.rename(h / "d" / "sub", h / "d" / "sub2"), self.nfs("RENAME"),
                  old="d/sub", new="d/sub2")
        self.step("rmdir", lambda: os.rmdir(h / "d" / "sub2"), self.nfs("REMOVE" if self.v4 else "RMDIR"),
                  dir="d/sub2")
        self.step("create", lambda: (h / "f").write_bytes(b"a file\n"),
                  self.nfs("OPEN") if self.v4 else self.nfs("CREATE"), file="f")
        self.step("link", lambda: os.link(h / "f", h / "f.link"), self.nfs("LINK"), file="f", link="f.link")
        short, long_ = "f", "/".join(["long-symlink-target-component"] * (LONG_LINK // 30))
        sym = "CREATE" if self.v4 else "SYMLINK"
        self.step("symlink", lambda: os.symlink(short, h / "s.short"), self.nfs(sym), link="s.short",
                  target_len=len(short))
        self.step("symlink", lambda: os.symlink(long_, h / "s.long"), self.nfs(sym), link="s.long",
                  target_len=len(long_))
        self.step("mkfifo", lambda: os.mkfifo(h / "fifo"), self.nfs("CREATE" if self.v4 else "MKNOD"),
                  file="fifo")
        self.drop_caches()      # nfs_symlink() leaves the target in the page cache: make readlink ask
        for name, target in (("s.short", short), ("s.long", long_)):
            def readlink(n=name, t=target) -> dict:
                got = os.readlink(h / n)
                if got != t:
                    raise ValueError(f"{n} reads back {len(got)} bytes, not the {len(t)} written")
                return {"target_len": len(got)}
            self.step("readlink", readlink, self.nfs("READLINK"), link=name, target_len=len(target))
        self.step("rename", lambda: os.rename(h / "f.link", h / "f.renamed"), self.nfs("RENAME"),
                  old="f.link", new="f.renamed")
        self.step("unlink", lambda: os.unlink(h / "f.renamed"), self.nfs("REMOVE"), file="f.renamed")
        self.step("unlink", lambda: os.unlink(h / "fifo"), self.nfs("REMOVE"), file="fifo")

    def attributes(self) -> None:
        f = self.here / "f"
        self.step("chmod", lambda: os.chmod(f, 0o640), self.nfs("SETATTR"), file="f", mode="0640")
        self.step("chown", lambda: os.chown(f, 1000, 1000), self.nfs("SETATTR"), file="f", uid=1000, gid=1000)
        self.step("utime", lambda: os.utime(f, (1_000_000_000, 1_000_000_000)), self.nfs("SETATTR"), file="f",
                  atime=1_000_000_000, mtime=1_000_000_000)
        self.step("truncate", lambda: os.truncate(f, 3), self.nfs("SETATTR"), file="f", size=3)
        self.drop_caches()
        self.step("stat", lambda: {"mode": oct(os.stat(f).st_mode)}, self.nfs("LOOKUP"), file="f")

    def acls(self) -> None:
        f, d = self.here / "f", self.here / "d"
        if not self.v4:
            # NFSv3 carries POSIX ACLs in its side program NFSACL, over the same transport.
            self.step("setfacl", lambda: self.run("setfacl", "-m", "u:1000:rw,g:1000:r", str(f)),
                      ["NFSACL:SETACL"], file="f", acl="u:1000:rw,g:1000:r")
            self.step("setfacl-default", lambda: self.run("setfacl", "-d", "-m", "u:1000:rwx", str(d)),
                      ["NFSACL:SETACL"], dir="d", acl="default u:1000:rwx")
            self.drop_caches()
            self.step("getfacl", lambda: self.run("getfacl", "-n", str(f)), ["NFSACL:GETACL"], file="f")
            self.step("getfacl", lambda: self.run("getfacl", "-n", str(d)), ["NFSACL:GETACL"], dir="d")
        else:
            # NFSv4 ACLs are the fattr4 "acl" attribute, set and read by SETATTR and GETATTR.
            self.step("nfs4_setfacl", lambda: self.run("nfs4_setfacl", "-a", "A::1000:rw", str(f)),
                      self.nfs("SETATTR"), file="f", ace="A::1000:rw")
            self.step("nfs4_setfacl", lambda: self.run("nfs4_setfacl", "-a", "A:fd:1000:rwx", str(d)),
                      self.nfs("SETATTR"), dir="d", ace="A:fd:1000:rwx")
            self.drop_caches()
            self.step("nfs4_getfacl", lambda: self.run("nfs4_getfacl", str(f)), self.nfs("GETATTR"), file="f")
            self.step("nfs4_getfacl", lambda: self.run("nfs4_getfacl", str(d)), self.nfs("GETATTR"), dir="d")

    def locks(self) -> None:
        """Byte-range and whole-file locks (NLM on v3, LOCK/LOCKT/LOCKU on v4), conflicts from another
        process on the client and from the server's own side, and a waiting lock granted later."""
        path = self.here / "locks.bin"
        lock, lockt, locku = ("NLM:LOCK", "NLM:TEST", "NLM:UNLOCK") if not self.v4 else \
            tuple(self.nfs("LOCK", "LOCKT", "LOCKU"))
        # Closing a file this open-owner locked: CLOSE, and on v4.0 RELEASE_LOCKOWNER for its lock-owner.
        close = [] if not self.v4 else self.nfs("CLOSE", *(["RELEASE_LOCKOWNER"] if self.minor == 0 else []))
        # How a waiting lock learns that the range is free: NLM's GRANTED callback, NFSv4.1's
        # CB_NOTIFY_LOCK; v4.0 has neither and polls with LOCK.
        granted = ["NLM:GRANTED_MSG"] if not self.v4 else [lock] if self.minor == 0 else ["NFSCB:CB_NOTIFY_LOCK"]
        fd = os.open(path, os.O_RDWR)
        try:
            self.step("fcntl-setlk", lambda: fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 100, 200),
                      [lock], file="locks.bin", type="write", start=200, len=100)
            self.step("fcntl-setlk", lambda: fcntl.lockf(fd, fcntl.LOCK_SH | fcntl.LOCK_NB, 100, 400),
                      [lock], file="locks.bin", type="read", start=400, len=100)
            # Another process of the client asks for the range this one holds: the client itself says no,
            # without asking the server (it tries every lock on its own lock table first).
            child = ("import fcntl,os,sys\nfd=os.open(sys.argv[1],os.O_RDWR)\n"
                     "try:\n fcntl.lockf(fd,fcntl.LOCK_EX|fcntl.LOCK_NB,100,200)\nexcept OSError as e:\n"
                     " print('denied',e.errno)\nelse:\n print('granted')\n")
            s = self.step("fcntl-setlk-conflict", lambda: self.run(sys.executable, "-c", child, str(path)),
                          [], file="locks.bin", type="write", start=200, len=100, by="second process")
            s.result["answer"] = s.result.get("stdout", "").strip()
            self.step("fcntl-unlock", lambda: fcntl.lockf(fd, fcntl.LOCK_UN, 100, 200), [locku],
                      file="locks.bin", start=200, len=100)
            self.step("fcntl-unlock", lambda: fcntl.lockf(fd, fcntl.LOCK_UN, 100, 400), [locku],
                      file="locks.bin", start=400, len=100)
        finally:
            self.step("close", lambda: os.close(fd), close, file="locks.bin")
        # flock(2) over NFS is a whole-file byte-range lock.
        def flock() -> None:
            with open(path, "r+b") as f:
                fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
                fcntl.flock(f, fcntl.LOCK_UN)
        self.step("flock", flock, [lock, locku, *close], file="locks.bin", type="exclusive, whole file",
                  then="close")
        # The server's own process holds [0, 100): the client's test sees it, its try is refused and
        # its waiting lock is granted when the holder lets go (NLM GRANTED / CB_NOTIFY_LOCK or a retry).
        holder = subprocess.Popen(
            [sys.executable, "-c", "import fcntl,os,sys,time\nfd=os.open(sys.argv[1],os.O_RDWR)\n"
             "fcntl.lockf(fd,fcntl.LOCK_EX,100,0)\nprint('held',flush=True)\ntime.sleep(float(sys.argv[2]))\n",
             str(self.there / "locks.bin"), str(HOLD_SECONDS)], stdout=subprocess.PIPE, text=True)
        assert holder.stdout is not None
        holder.stdout.readline()
        fd = os.open(path, os.O_RDWR)
        try:
            def getlk() -> dict:
                probe = fcntl.fcntl(fd, fcntl.F_GETLK, _flock(fcntl.F_WRLCK, 0, 100))
                return {"l_type": _flock_type(probe)}
            self.step("fcntl-getlk", getlk, [lockt], file="locks.bin", start=0, len=100,
                      held_by="a process on the server")
            self.step("fcntl-setlk-denied", lambda: _expect_denied(fd), [lock], file="locks.bin", start=0, len=100,
                      held_by="a process on the server")
            self.step("fcntl-setlkw", lambda: fcntl.lockf(fd, fcntl.LOCK_EX, 100, 0), [lock, *granted],
                      file="locks.bin", start=0, len=100, waits_for=f"the server's holder ({HOLD_SECONDS} s)")
            self.step("fcntl-unlock", lambda: fcntl.lockf(fd, fcntl.LOCK_UN, 100, 0), [locku], file="locks.bin",
                      start=0, len=100)
        finally:
            self.step("close", lambda: os.close(fd), close, file="locks.bin")
            holder.wait(timeout=60)

    def open_downgrade(self) -> None:
        """The same open-owner opens a file for read, then for read-write (an upgrade), then closes the
        read-write open: the server's open state goes back to read only."""
        path = self.here / "opens.txt"
        fds: list[int] = []
        self.step("open-ro", lambda: fds.append(os.open(path, os.O_RDONLY)), self.nfs("OPEN"), file="opens.txt")
        self.step("open-rw", lambda: fds.append(os.open(path, os.O_RDWR)), self.nfs("OPEN"), file="opens.txt")
        if len(fds) == 2:
            self.step("close-rw", lambda: os.close(fds[1]), self.nfs("OPEN_DOWNGRADE"), file="opens.txt")
            self.step("close-ro", lambda: os.close(fds[0]), self.nfs("CLOSE"), file="opens.txt")

    def delegation(self) -> None:
        """A read open gets a read delegation; a second read open is then granted locally; an open for
        write by a process on the server breaks the delegation's lease: CB_RECALL, then DELEGRETURN."""
        path = self.here / "deleg.txt"
        fds: list[int] = []
        self.step("open-read", lambda: fds.append(os.open(path, os.O_RDONLY)), self.nfs("OPEN"), file="deleg.txt")
        if not fds:
            return
        self.step("read", lambda: {"read": len(os.read(fds[0], 4096))}, [], file="deleg.txt")
        self.step("open-read-again", lambda: fds.append(os.open(path, os.O_RDONLY)), [], file="deleg.txt",
                  note="under the delegation: no OPEN on the wire")

        def conflict() -> dict:
            t0 = time.monotonic()
            with open(self.there / "deleg.txt", "ab") as f:      # waits until the delegation is returned
                f.write(b"written on the server\n")
            return {"waited": round(time.monotonic() - t0, 3)}
        self.step("server-open-write", conflict, ["NFSCB:CB_RECALL", *self.nfs("DELEGRETURN")], file="deleg.txt",
                  by="a process on the server")
        for fd in fds:
            os.close(fd)

    def v42(self) -> None:
        h = self.here
        # SEEK over a sparse file made on the server.
        fd = os.open(h / "sparse.bin", os.O_RDONLY)
        try:
            self.step("seek-hole", lambda: {"at": os.lseek(fd, 0, os.SEEK_HOLE)}, self.nfs("SEEK"),
                      file="sparse.bin", offset=0, whence="SEEK_HOLE")
            self.step("seek-data", lambda: {"at": os.lseek(fd, 8192, os.SEEK_DATA)}, self.nfs("SEEK"),
                      file="sparse.bin", offset=8192, whence="SEEK_DATA")
        finally:
            os.close(fd)
        # ALLOCATE and DEALLOCATE (fallocate and its hole punching).
        fd = os.open(h / "alloc.bin", os.O_RDWR | os.O_CREAT, 0o644)
        try:
            self.step("fallocate", lambda: self.fallocate(fd, 0, 0, 65536), self.nfs("ALLOCATE"), file="alloc.bin",
                      offset=0, length=65536)
            keep, punch = 0x01, 0x02          # FALLOC_FL_KEEP_SIZE | FALLOC_FL_PUNCH_HOLE
            self.step("fallocate-punch", lambda: self.fallocate(fd, keep | punch, 8192, 16384),
                      self.nfs("DEALLOCATE"), file="alloc.bin", offset=8192, length=16384)
        finally:
            os.close(fd)
        # COPY: a small copy and a large one (the large one may run asynchronously: CB_OFFLOAD).
        src = os.open(h / "io.bin", os.O_RDONLY)
        dst = os.open(h / "copy-small.bin", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            self.step("copy_file_range", lambda: {"copied": os.copy_file_range(src, dst, 32768, 0, 0)},
                      self.nfs("COPY"), src="io.bin", dst="copy-small.bin", offset=0, count=32768)
        finally:
            os.close(src), os.close(dst)

        def copy_big() -> dict:
            s = os.open(h / "copy-src-big.bin", os.O_RDONLY)
            d = os.open(h / "copy-big.bin", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            try:
                done = 0
                while done < COPY_BIG:
                    n = os.copy_file_range(s, d, COPY_BIG - done, done, done)
                    if n == 0:
                        break
                    done += n
                return {"copied": done}
            finally:
                os.close(s), os.close(d)
        self.step("copy_file_range", copy_big, self.nfs("COPY"), src="copy-src-big.bin", dst="copy-big.bin",
                  offset=0, count=COPY_BIG)
        # CLONE needs a file system that shares blocks: the XFS export under xfs/.
        x = self.xfs_here
        def clone_source() -> None:
            (x / "clone-src.bin").write_bytes(os.urandom(16384))
            os.sync()
        self.step("write", clone_source, self.nfs("WRITE"), file="xfs/clone-src.bin", size=16384)
        self.step("cp-reflink", lambda: self.run("cp", "--reflink=always", str(x / "clone-src.bin"),
                                                 str(x / "clone-dst.bin")),
                  self.nfs("CLONE"), src="xfs/clone-src.bin", dst="xfs/clone-dst.bin")

    def xattrs(self) -> None:
        """User extended attributes: NFSv4.2 GETXATTR/SETXATTR/LISTXATTRS/REMOVEXATTR (RFC 8276); the
        other versions have none, and the step logs the refusal."""
        f = self.here / "f"
        xs = lambda *ops: self.nfs(*ops) if self.minor >= 2 else []    # noqa: E731
        refused = None if self.minor >= 2 else "ENOTSUP"
        self.step("setxattr", lambda: os.setxattr(f, "user.rdmaspy", b"small value"), xs("SETXATTR"), refused,
                  file="f", name="user.rdmaspy", size=11)
        self.drop_caches()
        self.step("getxattr", lambda: {"size": len(os.getxattr(f, "user.rdmaspy"))}, xs("GETXATTR"), refused,
                  file="f", name="user.rdmaspy")
        self.step("listxattr", lambda: {"names": os.listxattr(f)}, xs("LISTXATTRS"), file="f")
        self.step("removexattr", lambda: os.removexattr(f, "user.rdmaspy"), xs("REMOVEXATTR"), refused, file="f",
                  name="user.rdmaspy")
        if self.minor >= 2:
            g = self.xfs_here / "clone-src.bin"
            self.step("setxattr", lambda: os.setxattr(g, "user.big", b"v" * XATTR_BIG), xs("SETXATTR"),
                      file="xfs/clone-src.bin", name="user.big", size=XATTR_BIG)
            self.drop_caches()
            # Python asks with a 128-byte buffer first. Over TCP the server's answer is too long and the
            # client says ERANGE (Python then asks again with 64 KiB); over RDMA the client provisions a
            # Reply chunk for the buffer it was given (one page), the 6000-byte reply does not fit it,
            # the server answers RDMA_ERROR (ERR_CHUNK) and the call fails with EIO.
            s = self.step("getxattr-small-buffer", lambda: {"size": len(os.getxattr(g, "user.big"))},
                          xs("GETXATTR"), "EIO", file="xfs/clone-src.bin", name="user.big", size=XATTR_BIG,
                          first_buffer=128)
            if s.error and s.error.startswith("EIO"):
                s.expect = [*xs("GETXATTR"), "RPCRDMA:RDMA_ERROR"]
            self.step("getxattr", lambda: {"size": self.getxattr(g, "user.big", 65536)}, xs("GETXATTR"),
                      file="xfs/clone-src.bin", name="user.big", size=XATTR_BIG, buffer=65536)

    def getxattr(self, path: Path, name: str, size: int) -> int:
        """getxattr(2) with a buffer of the given size (os.getxattr starts with 128 bytes)."""
        buf = ctypes.create_string_buffer(size)
        n = self.libc.getxattr(os.fsencode(path), name.encode(), buf, ctypes.c_size_t(size))
        if n < 0:
            e = ctypes.get_errno()
            raise OSError(e, os.strerror(e), str(path))
        return int(n)

    def log(self) -> dict:
        return {"version": self.version, "server": self.server, "client": self.client,
                "kernel": os.uname().release, "export": str(self.export),
                "steps": [asdict(s) for s in self.steps]}


def _flock(kind: int, start: int, length: int) -> bytes:
    """struct flock for x86-64: short l_type, short l_whence, off_t l_start, off_t l_len, pid_t l_pid."""
    return struct.pack("hhqqi4x", kind, os.SEEK_SET, start, length, 0)


def _flock_type(raw: bytes) -> str:
    kind = struct.unpack("hhqqi4x", raw)[0]
    return {fcntl.F_RDLCK: "read", fcntl.F_WRLCK: "write", fcntl.F_UNLCK: "none"}.get(kind, str(kind))


def _expect_denied(fd: int) -> dict:
    try:
        fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 100, 0)
    except OSError as exc:
        if exc.errno in (errno.EAGAIN, errno.EACCES):
            return {"denied": True}
        raise
    raise ValueError("the lock held on the server was granted to the client too")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--version", required=True, choices=["3", "4.0", "4.1", "4.2"])
    ap.add_argument("--server", required=True)
    ap.add_argument("--client", required=True)
    ap.add_argument("--export", type=Path, default=Path("/export"))
    ap.add_argument("--log", type=Path, required=True)
    a = ap.parse_args()
    w = Workload(a.version, a.server, a.client, a.export)
    try:
        w.go()
    finally:
        a.log.write_text(json.dumps(w.log(), indent=1) + "\n")
        for m in (MNT2, MNT):      # whatever broke, the next version starts unmounted
            if os.path.ismount(m):
                subprocess.run(["umount", "-f", "-l", str(m)], check=False)
    broken = [s.action for s in w.steps if not s.ok and s.action in ("mount", "umount")]
    return 1 if broken or not any(s.action == "umount" for s in w.steps) else 0


if __name__ == "__main__":
    sys.exit(main())
