"""The flows document: per connection its setup, transactions, credits and findings (schema
rdmaspy/schemas/flows-1.json, revision 4), written from the typed records of the analysis
(``analysis.model``): the transactions of every upper layer in one shape, each with its own facts where
its declaration (``analysis.ulp``) puts them.

A ``FlowBuilder`` is the analyzer's sink (``on_record`` / ``on_finding``).  Finished transactions,
pieces of the credit time series and findings arrive in capture order, each tagged with its
connection; they are serialised at once and spooled to one temporary file per connection and
section, a few hundred records at a time, so memory stays bounded by what is still open, not by
the capture's length.  At the end ``write_document`` / ``write_lines`` assemble each connection's
object by copying its spool files into the output, with the connection's setup (CM, private data,
thresholds) from its ``model.Connection``.  The functions ``*_record`` give each record's JSON
object (the schema's), for the flows document and for other presentations.
"""
from __future__ import annotations

import os
import tempfile
from types import TracebackType
from typing import Any, BinaryIO, Callable, Final, Iterable

from ..analysis.hostmodel import HostClock
from ..analysis.model import (Connection, CreditSeries, Endpoint, Finding, Record, Segment, Step,
                              StepKind, Transaction, UlpSummary)
from ..analysis.rpcrdma_facts import PROTOCOL as RPCRDMA
from ..analysis.ulp import UlpModel, model_of
from ..dissectors.rpcrdma_pdata import RpcRdmaPdata
from .credits import credit_summary_record
from .hostrecords import host_clock_record, host_event_record, host_view_record
from .jsonout import dumps
from .ulp import ulp_record

JSON = dict[str, object]

SCHEMA_ID = "https://rdmaspy.invalid/schemas/flows-1.json"
FORMAT = "rdmaspy-flows"
VERSION = 1
_BUFFER = 256            # records kept per spool before they go to disk ...
_BUFFER_BYTES = 1 << 18  # ... or bytes (a piece of credit series is tens of KiB)
_HELD_BYTES = 8 << 20    # what all spools together hold at most (a capture of many connections)

_SUMMARY_KEYS = ("messages", "transactions", "unanswered", "versions", "unadvertised_operations",
                 "unadvertised_bytes")


# --- the records as JSON objects -------------------------------------------------------------------------
def finding_record(f: Finding) -> JSON:
    """A finding with its rule, source and rendered message."""
    return {"rule": f.rule_def.id, "severity": f.severity, "group": f.group, "source": f.rule_def.source,
            "message": f.text, "frames": list(f.frames), "conn": f.conn, "xid": f.xid, "args": f.args}


def segment_record(s: Segment) -> JSON:
    r: JSON = {"list": str(s.kind), "chunk": s.chunk, "segment": s.index, "handle": s.handle, "offset": s.offset,
               "length": s.length, "used": s.used, "status": str(s.state), "overrun": s.overrun,
               "operations": s.ops, "memory_of": str(s.side)}
    if s.position is not None:
        r["position"] = s.position
    if s.reported is not None:
        r["reported"] = s.reported
    r["access"] = None if s.access is None else str(s.access)
    r["invalidate"] = s.invalidate
    return r


def step_record(st: Step) -> JSON:
    kind = st.kind
    if kind is StepKind.REQUEST or kind is StepKind.RESPONSE:
        r: JSON = {"op": "send", "role": str(kind), "frames": st.frames, "ts": st.ts, "bytes": st.bytes}
        if st.invalidated is not None:
            r["invalidate"] = st.invalidated
        return r
    if kind is StepKind.DONE:
        return {"op": "done", "frames": st.frames, "ts": st.ts}
    r = {"op": str(kind), "frames": st.frames, "ts": st.ts, "handle": st.handle, "offset": st.offset,
         "length": st.length, "bytes": st.bytes}
    seg = st.segment
    if seg is not None:
        r["chunk"] = {"list": str(seg.kind), "chunk": seg.chunk, "segment": seg.index}
    if st.response_frames is not None:
        r["response_frames"] = st.response_frames
    return r


_MISSING = object()
# Per upper layer, its facts that stand in the transaction's object: (object or key, key in the object or "",
# getter, condition), their dotted paths split once.
_PLANS: dict[str, list[tuple[str, str, Callable[[Any], object], Callable[[Any], bool] | None]]] = {}


def _plan(ulp: UlpModel) -> list[tuple[str, str, Callable[[Any], object], Callable[[Any], bool] | None]]:
    plan = _PLANS.get(ulp.protocol)
    if plan is None:
        plan = _PLANS[ulp.protocol] = []
        for f in ulp.facts:
            if f.path is not None:
                head, _, rest = f.path.partition(".")
                plan.append((head, rest, f.get, f.when))
    return plan


def place_facts(record: JSON, t: Transaction, ulp: UlpModel) -> None:
    """The upper layer's facts of ``t`` where its declaration puts them in the transaction's object: at the
    top (``"xid"``), or in an object (``"call.proc"``: the request's; ``"rpc.name"``: an object of the upper
    layer's own, null unless its declaration says it stands)."""
    for head, rest, get, when in _plan(ulp):
        if when is not None and not when(t):
            continue
        if not rest:
            record[head] = get(t)
            continue
        obj = record.get(head, _MISSING)
        if obj is _MISSING:
            live = ulp.objects.get(head)
            obj = record[head] = {} if live is None or live(t) else None
        if isinstance(obj, dict):
            obj[rest] = get(t)


def timing_record(t: Transaction) -> JSON:
    """When its data moved: the first and last packet's time, and the request's latency split at them
    (request to first data, first to last data, last data to response)."""
    first, last, rep = t.data_first, t.data_last, t.response
    return {"first_data": first, "last_data": last,
            "to_first_data_ns": None if first is None else first - t.request.ts,
            "data_ns": None if first is None or last is None else last - first,
            "after_data_ns": None if last is None or rep is None else rep.ts - last}


# The order revision 1 wrote a transaction's keys in, and its messages' (call, reply): a document of an
# RPC-over-RDMA capture reads as it did; what later revisions added follows (``_ordered``).
_TRANSACTION_ORDER: Final = ("conn", "xid", "direction", "version", "state", "call", "reply", "latency_ns", "latency",
                             "rpc", "steps", "chunks", "bytes", "findings")
_MESSAGE_ORDER: Final = ("frame", "frames", "ts", "proc", "shape", "size", "credits", "retransmissions", "invalidated",
                         "error", "done_frame")


def _ordered(record: JSON, order: tuple[str, ...]) -> JSON:
    """``record`` with the keys of ``order`` first, in that order, then the others as they came."""
    out: JSON = {k: record[k] for k in order if k in record}
    for k, v in record.items():
        if k not in out:
            out[k] = v
    return out


def transaction_record(t: Transaction) -> JSON:
    """A closed transaction: its request and response, steps, segments, bytes and findings, and its upper
    layer's own facts (RPC-over-RDMA: the XID, version, message types, RPC; NVMe/RDMA: the command)."""
    ulp = model_of(t.protocol)
    call = t.request
    lat = t.latency_ns
    rep = t.response
    reply: JSON | None = None
    if rep is not None:
        reply = {"frame": rep.frame, "frames": list(rep.frames), "ts": rep.ts, "size": rep.size,
                 "invalidated": rep.invalidated}
    record: JSON = {
        "conn": t.conn, "direction": str(t.direction), "state": str(t.state),
        "call": {"frame": call.frame, "frames": list(call.frames), "ts": call.ts, "size": call.size,
                 "retransmissions": call.retransmissions},
        "reply": reply,
        "latency_ns": lat, "latency": None if lat is None else lat / 1e9,
        "steps": [step_record(s) for s in t.steps],
        "chunks": [segment_record(s) for s in t.segments],
        "bytes": {"call_inline": call.size, "reply_inline": rep.size if rep is not None else None,
                  "rdma_read": t.bytes_read, "rdma_write": t.bytes_written, "expected": t.expected},
        "findings": [{"rule": f.rule_def.id, "severity": f.severity, "frames": list(f.frames)} for f in t.findings],
        "protocol": t.protocol, "key": t.key, "timing": timing_record(t),
    }
    place_facts(record, t, ulp)
    record["call"] = _ordered(record["call"], _MESSAGE_ORDER)  # type: ignore[arg-type]
    if reply is not None:
        record["reply"] = _ordered(reply, _MESSAGE_ORDER)
    record = _ordered(record, _TRANSACTION_ORDER)
    if t.dropped:
        record["dropped"] = t.dropped
    host = t.host
    if host is not None:
        record["host_events"] = [host_event_record(e) for e in host.events]
        record["host"] = host_view_record(host)
    return record


def summary_record(s: UlpSummary) -> JSON:
    """A connection's summary of its upper layer's traffic, its credits (or queue depth) by direction."""
    return {"protocol": s.protocol, "conn": s.conn, "messages": s.messages, "transactions": s.transactions,
            "unanswered": s.unanswered, "versions": s.versions, "credits": [credit_summary_record(c) for c in s.credits],
            "unadvertised_operations": s.unadvertised_operations, "unadvertised_bytes": s.unadvertised_bytes}


def series_points(piece: CreditSeries) -> list[list[int | None]]:
    """A piece of a credit time series as points [t ns, outstanding, granted]."""
    return [[p.ts, p.outstanding, p.granted] for p in piece.samples]


def pdata_record(p: RpcRdmaPdata | None) -> JSON | None:
    if p is None:
        return None
    return {"version": p.version, "remote_invalidate": p.remote_invalidate, "send_size": p.send_size,
            "recv_size": p.recv_size, "offset": p.offset, "valid": p.valid, "problem": p.problem}


def endpoint_record(p: Endpoint) -> JSON:
    return {"address": p.address, "gid": p.gid, "qpn": p.qpn, "tcp_port": p.tcp_port, "comm_id": p.comm_id}


def connection_record(c: Connection) -> JSON:
    """A connection as plain values (``conversations -T json``)."""
    return _with_ulp(c, {
        "id": c.id, "transport": c.transport, "state": c.state.value, "setup_known": c.setup_known,
        "service_id": c.service_id, "port_space": c.port_space, "port": c.port,
        "client": endpoint_record(c.client), "server": endpoint_record(c.server),
        "start_psn_c2s": c.start_psn_c2s, "start_psn_s2c": c.start_psn_s2c, "path_mtu": c.path_mtu,
        "t_start": c.t_start, "t_end": c.t_end, "t_requested": c.t_requested, "t_established": c.t_established,
        "t_closed": c.t_closed, "closed_by": None if c.closed_by is None else c.closed_by.value,
        "reject_reason": c.reject_reason, "packets_c2s": c.packets_c2s, "packets_s2c": c.packets_s2c,
        "bytes_c2s": c.bytes_c2s, "bytes_s2c": c.bytes_s2c, "inline_c2s": c.inline_c2s, "inline_s2c": c.inline_s2c,
        "remote_invalidate": c.remote_invalidate,
        "pdata_client": pdata_record(c.pdata_client), "pdata_server": pdata_record(c.pdata_server),
    })


def _with_ulp(c: Connection, record: JSON) -> JSON:
    """A connection carrying another upper layer than RPC-over-RDMA (NVMe/RDMA): its setup, and no inline
    thresholds (RPC-over-RDMA's); the others' records as they were."""
    ulp = ulp_record(c)
    if ulp is None:
        return record
    for key in ("inline_c2s", "inline_s2c", "remote_invalidate"):
        record[key] = None
    record["ulp"] = ulp
    return record


def connection_head(c: Connection) -> JSON:
    """A connection's object in the flows document, before its transactions, credits and findings."""
    setup: JSON = {
        "state": c.state.value, "setup_known": c.setup_known, "service_id": c.service_id,
        "port_space": c.port_space, "port": c.port, "start_psn_c2s": c.start_psn_c2s,
        "start_psn_s2c": c.start_psn_s2c, "path_mtu": c.path_mtu, "t_start": c.t_start, "t_end": c.t_end,
        "t_requested": c.t_requested, "t_established": c.t_established, "t_closed": c.t_closed,
        "closed_by": None if c.closed_by is None else c.closed_by.value, "reject_reason": c.reject_reason,
        "inline_c2s": c.inline_c2s, "inline_s2c": c.inline_s2c, "remote_invalidate": c.remote_invalidate,
        "pdata_client": pdata_record(c.pdata_client), "pdata_server": pdata_record(c.pdata_server)}
    setup = _with_ulp(c, setup)
    traffic: JSON = {"packets_c2s": c.packets_c2s, "packets_s2c": c.packets_s2c, "bytes_c2s": c.bytes_c2s,
                     "bytes_s2c": c.bytes_s2c}
    return {"kind": "connection", "id": c.id, "transport": c.transport, "client": endpoint_record(c.client),
            "server": endpoint_record(c.server), "setup": setup, "traffic": traffic}


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
        # named for the program and process that own it, should a hard kill leave it behind
        self._tmp = tempfile.TemporaryDirectory(prefix=f"rdmaspy-flows-{os.getpid()}-", dir=directory)
        self._spools: dict[tuple[int | None, str], _Spool] = {}
        self.summaries: dict[int, UlpSummary] = {}
        self.severities: dict[str, int] = {}
        self.transactions = 0
        self._by_conn: dict[int | None, list[_Spool]] = {}
        self._held = 0                  # bytes the spools hold in memory
        self.host_clocks: list[HostClock] | None = None   # the host traces joined (--host-trace)

    def close(self) -> None:
        self._tmp.cleanup()

    def __enter__(self) -> "FlowBuilder":
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    def _spool(self, conn: int | None, section: str) -> _Spool:
        key = (conn, section)
        sp = self._spools.get(key)
        if sp is None:
            name = f"{conn if conn is not None else 'none'}-{section}.jsonl"
            sp = self._spools[key] = _Spool(os.path.join(self._tmp.name, name))
            self._by_conn.setdefault(conn, []).append(sp)
        return sp

    def _add(self, conn: int | None, section: str, data: bytes) -> None:
        sp = self._spool(conn, section)
        before = sp.size
        sp.add(data)                    # to disk by itself past its own bound
        self._held += sp.size - before
        if self._held > _HELD_BYTES:
            for each in self._spools.values():
                each.flush()
            self._held = 0

    def _flush_connection(self, conn: int) -> None:
        for sp in self._by_conn.get(conn, ()):
            self._held -= sp.size
            sp.flush()

    # -- the analyzer's sinks --------------------------------------------------------------------
    def on_record(self, rec: Record) -> None:
        if isinstance(rec, Transaction):
            self.transactions += 1
            self._add(rec.conn, "transactions", dumps(transaction_record(rec)))
        elif isinstance(rec, CreditSeries):
            self._add(rec.conn, "series-" + rec.direction.value, dumps(series_points(rec)))
        elif isinstance(rec, UlpSummary):
            self.summaries[rec.conn] = rec
            # a connection's summary comes when it ends (or the capture does): what it spooled goes to disk
            self._flush_connection(rec.conn)

    def on_finding(self, finding: Finding) -> None:
        sev = finding.severity
        self.severities[sev] = self.severities.get(sev, 0) + 1
        self._add(finding.conn, "findings", dumps(finding_record(finding), default=json_default))

    # -- assembly --------------------------------------------------------------------------------
    def _array(self, out: BinaryIO, conn: int | None, section: str) -> None:
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

    def _series(self, out: BinaryIO, conn: int, direction: str) -> None:
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

    def _head(self, conn: Connection) -> tuple[JSON, dict[str, JSON]]:
        """A connection's own fields with its upper layer's summary (and as it was named before other upper
        layers, RPC-over-RDMA's), and its credit ledgers by direction."""
        head = connection_head(conn)
        summary = self.summaries.get(conn.id)
        credits: dict[str, JSON] = {}
        head["rpcrdma"] = None
        head["upper_layer"] = None
        if summary is not None:
            srec = summary_record(summary)
            for c in summary.credits:
                credits[str(c.direction)] = credit_summary_record(c)
            keys = {k: srec[k] for k in _SUMMARY_KEYS}
            head["upper_layer"] = {"protocol": summary.protocol, **keys}
            if summary.protocol == RPCRDMA:
                head["rpcrdma"] = keys
        return head, credits

    def write_connection(self, out: BinaryIO, conn: Connection) -> None:
        """One connection object (kind "connection"), streamed from the spools."""
        cid = conn.id
        head, credits = self._head(conn)
        text = dumps(head, default=json_default)
        out.write(text[:-1])
        out.write(b',"transactions":')
        self._array(out, cid, "transactions")
        out.write(b',"credits":{')
        for i, (direction, led) in enumerate(sorted(credits.items())):
            if i:
                out.write(b",")
            out.write(dumps(direction) + b":")
            body = dumps(led)
            out.write(body[:-1] + b',"series":')
            self._series(out, cid, direction)
            out.write(b"}")
        out.write(b'},"findings":')
        self._array(out, cid, "findings")
        out.write(b"}")

    def _capture(self, path: str, t0: int | None, frames: int, nconn: int) -> JSON:
        head: JSON = {"kind": "capture", "format": FORMAT, "version": VERSION, "file": path, "t0": t0,
                      "frames": frames, "summary": {"connections": nconn, "transactions": self.transactions,
                                                    "findings": dict(sorted(self.severities.items()))}}
        if self.host_clocks is not None:
            head["host_clock"] = [host_clock_record(c) for c in self.host_clocks]
        return head

    def write_document(self, out: BinaryIO, connections: Iterable[Connection], path: str, t0: int | None,
                       frames: int) -> None:
        """The whole flows document (one JSON object)."""
        conns = list(connections)
        head = self._capture(path, t0, frames, len(conns))
        head["$schema"] = SCHEMA_ID
        text = dumps(head)
        out.write(text[:-1] + b',"connections":[')
        for i, conn in enumerate(conns):
            if i:
                out.write(b",")
            self.write_connection(out, conn)
        out.write(b'],"findings":')
        self._array(out, None, "findings")
        out.write(b"}\n")

    def write_lines(self, out: BinaryIO, connections: Iterable[Connection], path: str, t0: int | None,
                    frames: int) -> None:
        """JSON Lines, every line small enough for a line reader (DuckDB's ``read_json_auto``): per
        connection a line of its own (setup, traffic, credit summaries), then one line per transaction,
        per piece of its credit series and per finding, each with the connection's id; then the findings
        that belong to no connection, and last the capture object."""
        conns = list(connections)
        for conn in conns:
            self._connection_lines(out, conn)
        self._tagged(out, None, "findings", b'{"kind":"finding",')
        head = self._capture(path, t0, frames, len(conns))
        head["findings"] = []
        out.write(dumps(head) + b"\n")

    def _connection_lines(self, out: BinaryIO, conn: Connection) -> None:
        cid = conn.id
        head, credits = self._head(conn)
        head["credits"] = dict(sorted(credits.items()))
        out.write(dumps(head, default=json_default) + b"\n")
        self._tagged(out, cid, "transactions", b'{"kind":"transaction",')
        for direction in sorted(credits):
            sp = self._spools.get((cid, "series-" + direction))
            if sp is None:
                continue
            prefix = b'{"kind":"credits","conn":%d,"direction":%s,"series":' % (cid, dumps(direction))
            for piece in sp.items():
                out.write(prefix + piece + b"}\n")
        self._tagged(out, cid, "findings", b'{"kind":"finding",')

    def _tagged(self, out: BinaryIO, conn: int | None, section: str, prefix: bytes) -> None:
        """The spooled objects of a section, one a line, each opened with its ``kind``."""
        sp = self._spools.get((conn, section))
        if sp is None:
            return
        for item in sp.items():
            out.write(prefix + item[1:] + b"\n")

def json_default(v: object) -> object:
    """Values orjson does not know (sets, bytes) as JSON-friendly ones."""
    if isinstance(v, (set, frozenset, tuple)):
        return list(v)
    if isinstance(v, (bytes, bytearray)):
        return v.hex()
    return str(v)
