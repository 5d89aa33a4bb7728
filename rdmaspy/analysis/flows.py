"""Per-connection flow records: setup, transactions, credits and findings (schema rdmaspy/schemas/flows-1.json).

A ``FlowBuilder`` is the analyzer's sink (``on_record`` / ``on_finding``).  Finished transactions,
pieces of the credit time series and findings arrive in capture order, each tagged with its
connection; they are spooled to one temporary file per connection and section, a few hundred
records at a time, so memory stays bounded by what is still open, not by the capture's length.
At the end ``write_document`` / ``write_lines`` assemble each connection's object by copying its
spool files into the output, with the connection's setup (CM, private data, thresholds) taken
from the connection table.  The records are plain data; nothing here formats text.
"""
from __future__ import annotations

import os
import tempfile
from typing import Any, BinaryIO, Iterable

import orjson

SCHEMA_ID = "https://rdmaspy.invalid/schemas/flows-1.json"
FORMAT = "rdmaspy-flows"
VERSION = 1
_BUFFER = 256            # records kept per spool before they go to disk ...
_BUFFER_BYTES = 1 << 18  # ... or bytes (a piece of credit series is tens of KiB)

_SETUP_KEYS = ("state", "setup_known", "service_id", "port_space", "port", "start_psn_c2s", "start_psn_s2c",
               "path_mtu", "t_start", "t_end", "t_requested", "t_established", "t_closed", "closed_by",
               "reject_reason", "inline_c2s", "inline_s2c", "remote_invalidate", "pdata_client", "pdata_server")
_TRAFFIC_KEYS = ("packets_c2s", "packets_s2c", "bytes_c2s", "bytes_s2c")


class _Spool:
    """Records of one section of one connection: JSON texts, buffered, then appended to a file."""

    __slots__ = ("path", "buf", "count", "size")

    def __init__(self, path: str) -> None:
        self.path = path
        self.buf: list[bytes] = []
        self.count = 0
        self.size = 0

    def add(self, data: bytes) -> None:
        self.buf.append(data)
        self.count += 1
        self.size += len(data)
        if len(self.buf) >= _BUFFER or self.size >= _BUFFER_BYTES:
            self.flush()

    def flush(self) -> None:
        if self.buf:
            with open(self.path, "ab") as f:
                f.writelines(b + b"\n" for b in self.buf)
            self.buf.clear()
            self.size = 0

    def items(self) -> Iterable[bytes]:
        """The spooled JSON texts, in order (the file is read line by line)."""
        self.flush()
        if not os.path.exists(self.path):
            return
        with open(self.path, "rb") as f:
            for line in f:
                line = line.rstrip(b"\n")
                if line:
                    yield line


class FlowBuilder:
    """Collects analysis output per connection and writes the flows document."""

    def __init__(self, directory: str | None = None) -> None:
        self._tmp = tempfile.TemporaryDirectory(prefix="rdmaspy-flows-", dir=directory)
        self._spools: dict[tuple[Any, str], _Spool] = {}
        self.summaries: dict[int, dict[str, Any]] = {}
        self.severities: dict[str, int] = {}
        self.transactions = 0

    def close(self) -> None:
        self._tmp.cleanup()

    def __enter__(self) -> "FlowBuilder":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def _spool(self, conn: Any, section: str) -> _Spool:
        key = (conn, section)
        sp = self._spools.get(key)
        if sp is None:
            name = f"{conn if conn is not None else 'none'}-{section}.jsonl"
            sp = self._spools[key] = _Spool(os.path.join(self._tmp.name, name))
        return sp

    # -- the analyzer's sinks --------------------------------------------------------------------
    def on_record(self, kind: str, rec: dict[str, Any]) -> None:
        if kind == "transaction":
            self.transactions += 1
            self._spool(rec.get("conn"), "transactions").add(orjson.dumps(rec))
        elif kind == "credits":
            self._spool(rec.get("conn"), "series-" + rec["direction"]).add(orjson.dumps(rec["points"]))
        elif kind == "rpcrdma.connection":
            self.summaries[rec["conn"]] = rec

    def on_finding(self, finding: Any) -> None:
        sev = finding.severity
        self.severities[sev] = self.severities.get(sev, 0) + 1
        self._spool(finding.conn, "findings").add(orjson.dumps(finding.record(), default=_plain))

    # -- assembly --------------------------------------------------------------------------------
    def _array(self, out: BinaryIO, conn: Any, section: str) -> None:
        out.write(b"[")
        first = True
        sp = self._spools.get((conn, section))
        if sp is not None:
            for item in sp.items():
                if not first:
                    out.write(b",")
                out.write(item)
                first = False
        out.write(b"]")

    def _series(self, out: BinaryIO, conn: Any, direction: str) -> None:
        """The credit time series: the spooled pieces are arrays of points, joined into one."""
        out.write(b"[")
        first = True
        sp = self._spools.get((conn, "series-" + direction))
        if sp is not None:
            for piece in sp.items():
                inner = piece[1:-1]
                if not inner:
                    continue
                if not first:
                    out.write(b",")
                out.write(inner)
                first = False
        out.write(b"]")

    def write_connection(self, out: BinaryIO, conn: Any) -> None:
        """One connection object (kind "connection"), streamed from the spools."""
        rec = conn.record()
        cid = conn.conn_id
        head = {"kind": "connection", "id": cid, "transport": rec["transport"], "client": rec["client"],
                "server": rec["server"], "setup": {k: rec[k] for k in _SETUP_KEYS},
                "traffic": {k: rec[k] for k in _TRAFFIC_KEYS}}
        summary = self.summaries.get(cid)
        credits = {}
        if summary is not None:
            for c in summary["credits"]:
                credits[c["direction"]] = c
        head["rpcrdma"] = None if summary is None else {
            k: summary[k] for k in ("messages", "transactions", "unanswered", "versions", "unadvertised_operations",
                                    "unadvertised_bytes")}
        text = orjson.dumps(head, default=_plain)
        out.write(text[:-1])
        out.write(b',"transactions":')
        self._array(out, cid, "transactions")
        out.write(b',"credits":{')
        for i, (direction, c) in enumerate(sorted(credits.items())):
            if i:
                out.write(b",")
            out.write(orjson.dumps(direction) + b":")
            body = orjson.dumps(c)
            out.write(body[:-1] + b',"series":')
            self._series(out, cid, direction)
            out.write(b"}")
        out.write(b'},"findings":')
        self._array(out, cid, "findings")
        out.write(b"}")

    def _capture(self, path: str, t0: int | None, frames: int, nconn: int) -> dict[str, Any]:
        return {"kind": "capture", "format": FORMAT, "version": VERSION, "file": path, "t0": t0, "frames": frames,
                "summary": {"connections": nconn, "transactions": self.transactions,
                            "findings": dict(sorted(self.severities.items()))}}

    def write_document(self, out: BinaryIO, connections: Iterable[Any], path: str, t0: int | None,
                       frames: int) -> None:
        """The whole flows document (one JSON object)."""
        conns = list(connections)
        head = self._capture(path, t0, frames, len(conns))
        head["$schema"] = SCHEMA_ID
        text = orjson.dumps(head)
        out.write(text[:-1] + b',"connections":[')
        for i, conn in enumerate(conns):
            if i:
                out.write(b",")
            self.write_connection(out, conn)
        out.write(b'],"findings":')
        self._array(out, None, "findings")
        out.write(b"}\n")

    def write_lines(self, out: BinaryIO, connections: Iterable[Any], path: str, t0: int | None,
                    frames: int) -> None:
        """JSON Lines: one connection object per line, then one capture object with the findings that
        belong to no connection."""
        conns = list(connections)
        for conn in conns:
            self.write_connection(out, conn)
            out.write(b"\n")
        head = self._capture(path, t0, frames, len(conns))
        text = orjson.dumps(head)
        out.write(text[:-1] + b',"findings":')
        self._array(out, None, "findings")
        out.write(b"}\n")


def _plain(v: Any) -> Any:
    """Values orjson does not know (sets, bytes) as JSON-friendly ones."""
    if isinstance(v, (set, frozenset, tuple)):
        return list(v)
    if isinstance(v, (bytes, bytearray)):
        return v.hex()
    return str(v)
