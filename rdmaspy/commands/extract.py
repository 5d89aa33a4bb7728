"""``rdmaspy extract FILE --connection ID | --xid X | --command CID | --file NAME | -Y EXPR -w out.pcap[ng]``: a
small capture of one connection, one transaction (an RPC call by XID, an NVMe command by CID), the NFS
operations on one file, or one display filter, that Wireshark opens.

The frames are chosen by the one pipeline (the connection table, the transactions of the analysis, the
display filter), or with ``--index DIR`` from the tables of an export of FILE without a decode; then
the file is read again and the chosen frames are written as they were captured (timestamps, lengths,
interfaces and comments in pcapng; pcap when every frame has one link type).
"""
from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from ..analysis.model import Record, Transaction
from ..analysis.nvme_facts import PROTOCOL as NVME
from ..analysis.nfs_facts import NfsFacts
from ..analysis.rpcrdma_facts import PROTOCOL as RPCRDMA
from ..analysis.rpcrdma_facts import nfs_of
from ..errors import RdmaspyError
from .common import EXIT_OK, open_source, pipeline_options, report_problems


class ChooseSink:
    """Notes the frame numbers to extract: the packets the filter shows whose connection is ``conn``
    (None: any), or with ``xid`` the frames of the transactions of upper layer ``protocol`` with that key."""

    def __init__(self, conn: int | None, xid: int | None, protocol: str = RPCRDMA) -> None:
        self.conn = conn
        self.xid = xid
        self.protocol = protocol
        self.frames: set[int] = set()
        if xid is not None:
            self.on_record = self._record

    def packet(self, pkt: Any) -> None:
        if self.xid is not None:
            return
        if self.conn is None or getattr(pkt.conv, "conn_id", None) == self.conn:
            self.frames.add(pkt.frame.num)

    def _record(self, rec: Record) -> None:
        if (isinstance(rec, Transaction) and rec.protocol == self.protocol and rec.key == self.xid
                and (self.conn is None or rec.conn == self.conn)):
            self.frames.update(rec.frames())

    def finish(self) -> None:
        pass


def _hash_of(name: str) -> int | None:
    """A file given as its handle's hash (``0x`` and eight hexadecimal digits, tshark's nfs.fh.hash)."""
    if len(name) == 10 and name[:2].lower() == "0x":
        try:
            return int(name, 16)
        except ValueError:
            return None
    return None


def names_file(f: NfsFacts, name: str) -> bool:
    """Whether an operation's facts name the file ``name``: its name, its full name or the end of it
    (``io.bin``, ``v4.1/io.bin``, ``/v4.1/io.bin``), or its handle's hash (``0x…``)."""
    if f.fh is None:
        return False
    if name == f.name or name == f.full_name or f.fh_hash == _hash_of(name):
        return True
    full = f.full_name
    return full is not None and full.endswith("/" + name.lstrip("/"))


class FileSink:
    """Notes the frames of the NFS operations on the file ``name`` (on connection ``conn``; None: any).
    Chosen by the file's handle: the operations made before the capture named the file count too."""

    def __init__(self, name: str, conn: int | None) -> None:
        self.name = name
        self.conn = conn
        self.by_handle: dict[str, set[int]] = {}
        self.named: set[str] = set()            # the handles of the file called ``name``
        self.on_record = self._record

    def packet(self, pkt: Any) -> None:
        pass

    def _record(self, rec: Record) -> None:
        if not isinstance(rec, Transaction) or rec.protocol != RPCRDMA:
            return
        if self.conn is not None and rec.conn != self.conn:
            return
        f = nfs_of(rec)
        if f is None or f.fh is None:
            return
        self.by_handle.setdefault(f.fh, set()).update(rec.frames())
        if names_file(f, self.name):
            self.named.add(f.fh)

    @property
    def frames(self) -> set[int]:
        chosen: set[int] = set()
        for fh in self.named:
            chosen |= self.by_handle[fh]
        return chosen

    def finish(self) -> None:
        pass


def _quoted(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _file_where(name: str, conn: int | None) -> str:
    """The transactions table's rows on the file ``name``, by its handles (as ``FileSink`` chooses them)."""
    tail = "/" + name.lstrip("/")
    named = f"nfs_name = {_quoted(name)} OR nfs_full_name = {_quoted(name)} OR " \
            f"suffix(nfs_full_name, {_quoted(tail)})"
    digest = _hash_of(name)
    if digest is not None:
        named += f" OR nfs_fh_hash = {digest}"
    on = "" if conn is None else f" AND connection = {conn}"
    return (f"protocol = '{RPCRDMA}'{on} AND nfs_fh IN (SELECT nfs_fh FROM transactions WHERE "
            f"protocol = '{RPCRDMA}'{on} AND nfs_fh IS NOT NULL AND ({named}))")


def frames_from_index(directory: str, path: str, conn: int | None, xid: int | None,
                      protocol: str = RPCRDMA, file: str | None = None) -> set[int]:
    """The frames to extract from the tables of ``rdmaspy export FILE -o DIR`` (FILE alone)."""
    import orjson

    from ..output.parquet import MANIFEST
    from .query import connect, run_sql
    try:
        with open(os.path.join(directory, MANIFEST), "rb") as fh:
            manifest = orjson.loads(fh.read())
    except (OSError, ValueError):
        raise RdmaspyError(f"{directory}: no export manifest ({MANIFEST}): make it with rdmaspy export") from None
    files = manifest.get("files")
    if not isinstance(files, list) or len(files) != 1 or os.path.abspath(files[0]) != os.path.abspath(path):
        raise RdmaspyError(f"{directory}: an export of {files}, not of {path} alone")
    con = connect(directory)
    if xid is not None or file is not None:
        if file is not None:
            where = _file_where(file, conn)
        else:
            where = f"key = {xid} AND protocol = '{protocol}'" + ("" if conn is None else f" AND connection = {conn}")
        sql = ("SELECT DISTINCT f FROM (SELECT unnest(call_frames) AS f FROM transactions WHERE {w} UNION ALL "
               "SELECT unnest(reply_frames) FROM transactions WHERE {w} UNION ALL "
               "SELECT done_frame FROM transactions WHERE {w} UNION ALL "
               "SELECT unnest(s.frames) FROM (SELECT unnest(steps) AS s FROM transactions WHERE {w}) UNION ALL "
               "SELECT unnest(s.response_frames) FROM (SELECT unnest(steps) AS s FROM transactions WHERE {w})) "
               "WHERE f IS NOT NULL").format(w=where)
    else:
        sql = f"SELECT frame FROM packets WHERE connection = {conn}"
    _names, rows = run_sql(con, sql)
    return {int(r[0]) for r in rows}


def write_frames(source: str, target: str, chosen: set[int]) -> int:
    """Copy the frames of ``source`` numbered in ``chosen`` to ``target`` (pcapng unless it ends in .pcap)."""
    from .. import __version__
    from ..writers import PcapngWriter, PcapWriter
    pcap = target.lower().endswith(".pcap")
    cap = open_source(source)
    last = max(chosen) if chosen else 0
    written = 0
    with cap:
        out: Any = None
        ifaces: dict[int, int] = {}
        try:
            for frame in cap:
                if frame.num > last:
                    break
                if frame.num not in chosen:
                    continue
                if pcap:
                    if out is None:
                        out = PcapWriter(target, frame.linktype)
                    elif frame.linktype != out.linktype:
                        raise RdmaspyError(f"{target}: the frames have several link types: write a .pcapng")
                    out.write_packet(frame.ts, frame.data, frame.wirelen)
                else:
                    if out is None:
                        out = PcapngWriter(target, application=f"rdmaspy {__version__} (extract)")
                    out.copy_frame(frame, cap.interfaces, ifaces)
                written += 1
        finally:
            if out is not None:
                out.close()
    return written


def _number(text: str) -> int:
    try:
        v = int(text, 0)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number (decimal or 0x...)") from None
    if not 0 <= v < (1 << 32):
        raise argparse.ArgumentTypeError(f"{text!r} is out of range (0 to 0xffffffff)")
    return v


def cmd_extract(args: argparse.Namespace) -> int:
    conn, xid, expr, file = args.connection, args.xid, args.Y, args.nfs_file
    protocol = RPCRDMA
    if sum(x is not None for x in (xid, args.command, file)) > 1:
        raise RdmaspyError("extract: one of --xid, --command and --file")
    if args.command is not None:
        xid, protocol = args.command, NVME
    if file is not None and not file:
        raise RdmaspyError("extract: --file needs a file name")
    if conn is None and xid is None and file is None and not expr:
        raise RdmaspyError("extract: say what to extract: --connection ID, --xid X, --command CID, --file NAME or "
                           "-Y FILTER")
    cap = None
    if args.index is not None:
        if expr:
            raise RdmaspyError("extract: --index finds connections and transactions; -Y needs the decode")
        from ..scale import need
        need("duckdb", "extract --index")
        open_source(args.file).close()
        chosen = frames_from_index(args.index, args.file, conn, xid, protocol, file)
    else:
        from ..pipeline import Pipeline
        options = pipeline_options(expr, analyze=xid is not None or file is not None)
        chooser: ChooseSink | FileSink = ChooseSink(conn, xid, protocol) if file is None else FileSink(file, conn)
        cap = open_source(args.file)
        with cap:
            Pipeline(cap, options, [chooser]).run()
        chosen = chooser.frames
    if not chosen:
        what = " and ".join(w for w in (f"connection {conn}" if conn is not None else "",
                                         (f"XID {xid:#010x}" if protocol == RPCRDMA else f"CID {xid:#06x}")
                                         if xid is not None else "",
                                         f"file {file!r}" if file is not None else "",
                                         f"filter {expr!r}" if expr else "") if w)
        raise RdmaspyError(f"{args.file}: no frame of {what}; nothing written")
    written = write_frames(args.file, args.output, chosen)
    print(f"rdmaspy: {written} frames written to {args.output}", file=sys.stderr)
    return report_problems(cap) if cap is not None else EXIT_OK


def register(sub: Any) -> None:
    p = sub.add_parser("extract", help="the frames of one connection, one transaction, one file's NFS operations or "
                                       "one filter as a small capture (pcapng, or pcap)")
    p.add_argument("file", help="pcap or pcapng file (optionally gzip-compressed)")
    p.add_argument("--connection", type=_number, metavar="ID", help="the frames of connection ID (conversations)")
    p.add_argument("--xid", type=_number, metavar="X", help="the frames of the transactions with XID X (0x... or "
                   "decimal): call, RDMA READs and WRITEs, reply, RDMA_DONE; with --connection, on that one")
    p.add_argument("--command", type=_number, metavar="CID", help="the frames of the NVMe/RDMA commands with CID "
                   "(0x... or decimal): command, RDMA READs and WRITEs, completion; with --connection (a queue), "
                   "on that one")
    p.add_argument("--file", dest="nfs_file", metavar="NAME", help="the frames of the NFS operations on the file "
                   "NAME (its name, full name or the end of it: io.bin, /export/io.bin; or its handle's hash 0x...): "
                   "found by its file handle, so those before the capture named it too")
    p.add_argument("-Y", metavar="FILTER", help="the frames a display filter shows (with --connection: of it)")
    p.add_argument("-w", dest="output", required=True, metavar="OUT", help="the capture to write: pcapng, or pcap "
                   "when OUT ends in .pcap")
    p.add_argument("--index", metavar="DIR", help="find the frames in the tables of 'rdmaspy export FILE -o DIR' "
                   "instead of decoding FILE")
    p.set_defaults(func=cmd_extract)
