"""``rdmaspy stats FILE``: per connection and overall, what the capture did and how well.

- operations by NFS/RPC procedure: count, answered, latency percentiles (p50/p90/p99/max);
- bytes moved inline (RPC-over-RDMA messages sent) vs by RDMA READ vs by RDMA WRITE (from the
  transactions), and on the wire ("wire": the PSN analysis' count of SEND / RDMA WRITE / READ
  response payload bytes, retransmitted copies included, for any traffic, RPC or not);
- credit usage per direction of calls (requested, granted, peak outstanding, violations);
- PSN analysis counters (retransmissions, NAKs, RNR NAKs...), CNPs and ECN marks per flow, and
  findings by rule.

The numbers come from the typed analysis records (``Transaction``, ``UlpSummary``,
``PsnStats``, ``CongestionFlow``) and its findings; ``Stats`` gathers them (no text), the
functions below it present them as text or JSON.  Percentiles are nearest-rank: the value at rank
ceil(p/100 * n) of the n sorted latencies.
"""
from __future__ import annotations

import argparse
import math
import sys

from ..analysis import analyzer  # noqa: F401  (ulp, interpreted, imports it first thing: imported natively before it)
from ..analysis.model import CongestionFlow, Finding, PsnStats, Record, Transaction, UlpSummary
from ..analysis.ulp import Group, Service, UlpModel, model_of
from ..pipeline import Options
from ..typenames import Any, Callable, Final
from .common import add_capture_argument, add_host_trace_argument, host_join, print_text, report_problems, run_capture


def operation_name(t: Transaction) -> str:
    """What a transaction did, as its upper layer names it: "NFSv3 READ", "NFSv4.2 COMPOUND(OPEN)", ..."""
    return model_of(t.protocol).operation(t)


def percentile(sorted_values: list[float], p: float) -> float | None:
    if not sorted_values:
        return None
    k = max(1, math.ceil(p / 100 * len(sorted_values)))
    return sorted_values[k - 1]


class _Op:
    """The calls of one operation: how many, how many answered, their latencies (seconds)."""

    __slots__ = ("count", "answered", "latencies")

    def __init__(self) -> None:
        self.count = 0
        self.answered = 0
        self.latencies: list[float] = []

    def add(self, other: _Op) -> None:
        """Count ``other``'s calls too."""
        self.count += other.count
        self.answered += other.answered
        self.latencies.extend(other.latencies)


class _Group:
    """The transactions of one value of a dimension an upper layer declares (a namespace, a controller, a
    file); ``read`` and ``written`` (None: the dimension does not say) the bytes they read from and wrote to it."""

    __slots__ = ("count", "answered", "latencies", "first", "last", "bytes", "read", "written")

    def __init__(self, ts: int, moves: bool) -> None:
        self.count = 0
        self.answered = 0
        self.latencies: list[float] = []
        self.first = ts
        self.last = ts
        self.bytes = 0
        self.read: int | None = 0 if moves else None
        self.written: int | None = 0 if moves else None

    def add(self, other: _Group) -> None:
        """Count ``other``'s transactions too (a group of the same key in another block)."""
        self.count += other.count
        self.answered += other.answered
        self.latencies.extend(other.latencies)
        self.first = min(self.first, other.first)
        self.last = max(self.last, other.last)
        self.bytes += other.bytes
        # (compiled, += on an attribute typed int | None is a generic call: the sums added in typed locals)
        moved, theirs = self.read, other.read
        if moved is not None and theirs is not None:
            self.read = moved + theirs
        moved, theirs = self.written, other.written
        if moved is not None and theirs is not None:
            self.written = moved + theirs


def _group_record(dimension: str, value: object, g: _Group) -> dict[str, Any]:
    """A group's numbers; IOPS over the time from its first request to its last (None for one instant)."""
    lats = sorted(g.latencies)
    span = (g.last - g.first) / 1e9
    rec = {"dimension": dimension, "value": value, "count": g.count, "answered": g.answered,
           "iops": g.count / span if span > 0 else None, "bytes": g.bytes,
           "latency": {"p50": percentile(lats, 50), "p90": percentile(lats, 90), "p99": percentile(lats, 99),
                       "max": lats[-1] if lats else None}}
    if g.read is not None:
        rec["read"] = g.read
        rec["written"] = g.written
    return rec


class _Srt:
    """One row of a service response time table: the calls answered and their times (seconds)."""

    __slots__ = ("name", "calls", "min", "max", "sum")

    def __init__(self, name: str) -> None:
        self.name = name
        self.calls = 0
        self.min = math.inf
        self.max = 0.0
        self.sum = 0.0

    def add(self, srt: float) -> None:
        self.calls += 1
        self.min = min(self.min, srt)
        self.max = max(self.max, srt)
        self.sum += srt


def srt_records(rows: dict[tuple[str, int], _Srt]) -> list[dict[str, Any]]:
    """The service response time tables as plain data, by table and procedure number."""
    return [{"table": table, "index": index, "procedure": r.name, "calls": r.calls, "min": r.min, "max": r.max,
             "avg": r.sum / r.calls, "sum": r.sum}
            for (table, index), r in sorted(rows.items())]


class _Dimension:
    """An upper layer's dimension (``ulp.Group``) with its getters read once: the model is interpreted, and
    each of its attributes read compiled is a generic look-up."""

    __slots__ = ("name", "get", "read", "written", "moves")

    def __init__(self, group: Group) -> None:
        self.name = group.name
        self.get: Callable[[Transaction], object] = group.get
        self.read: Callable[[Transaction], int | None] | None = group.read
        self.written: Callable[[Transaction], int | None] | None = group.written
        self.moves = self.read is not None or self.written is not None

    def member(self, value: object, t: Transaction) -> _InGroup:
        """Transaction ``t``, of value ``value``: what it adds to its group (the bytes asked once, not
        once per block)."""
        read, written = self.read, self.written
        return _InGroup(self.name, value, self.moves, (read(t) or 0) if read is not None else 0,
                        (written(t) or 0) if written is not None else 0)


class _InGroup:
    """A transaction's place in one dimension: the group's key and the bytes it read from and wrote to it."""

    __slots__ = ("dimension", "value", "moves", "read", "written")

    def __init__(self, dimension: str, value: object, moves: bool, read: int, written: int) -> None:
        self.dimension = dimension
        self.value = value
        self.moves = moves
        self.read = read
        self.written = written


class _Ulp:
    """What ``Stats`` asks of an upper layer's model, read from it once."""

    __slots__ = ("operation", "dimensions", "service")

    def __init__(self, model: UlpModel) -> None:
        self.operation: Callable[[Transaction], str] = model.operation
        self.dimensions = [_Dimension(g) for g in model.groups]
        self.service: Callable[[Transaction], Service | None] | None = model.service


class _Block:
    """The numbers of one connection (or of the whole capture).  Counted in typed attributes, made
    into plain data by ``record`` (compiled, += on a dict's Any values is a generic call)."""

    __slots__ = ("ops", "inline", "rdma_read", "rdma_write", "wire", "credits", "findings", "transactions",
                 "unanswered", "groups")

    def __init__(self) -> None:
        self.ops: dict[str, _Op] = {}
        self.inline = 0
        self.rdma_read = 0
        self.rdma_write = 0
        self.wire = {"packets": 0, "retransmissions": 0, "duplicates": 0, "lost": 0, "out_of_order": 0,
                          "naks": 0, "rnr_naks": 0, "rnr_delay": 0.0, "acks": 0, "coalesced_acks": 0,
                          "send_bytes": 0, "write_bytes": 0, "read_bytes": 0}
        self.credits: list[dict[str, Any]] = []
        self.findings: dict[str, int] = {}
        self.transactions = 0
        self.unanswered = 0
        self.groups: dict[tuple[str, object], _Group] = {}   # by (dimension, value), as the upper layer declares

    def transaction(self, t: Transaction, name: str, lat: int | None, groups: list[_InGroup]) -> None:
        """Count a transaction whose operation is ``name``, its latency ``lat`` and its values of its upper
        layer's dimensions ``groups`` (all taken once by ``Stats``, which counts it in two blocks)."""
        self.transactions += 1
        op = self.ops.get(name)
        if op is None:
            op = self.ops[name] = _Op()
        op.count += 1
        if t.response is not None:
            op.answered += 1
        else:
            self.unanswered += 1
        if lat is not None:
            op.latencies.append(lat / 1e9)
        self.inline += t.bytes_inline
        self.rdma_read += t.bytes_read
        self.rdma_write += t.bytes_written
        for member in groups:
            self._group(member, t, lat)

    def _group(self, member: _InGroup, t: Transaction, lat: int | None) -> None:
        key = (member.dimension, member.value)
        ts = t.request.ts
        g = self.groups.get(key)
        if g is None:
            g = self.groups[key] = _Group(ts, member.moves)
        g.count += 1
        if lat is not None:
            g.answered += 1
            g.latencies.append(lat / 1e9)
        g.first = min(g.first, ts)
        g.last = max(g.last, ts)
        g.bytes += t.bytes_read + t.bytes_written + t.bytes_inline
        # (compiled, += on an attribute typed int | None is a generic call: the sums added in typed locals)
        moved = g.read
        if moved is not None:
            g.read = moved + member.read
        moved = g.written
        if moved is not None:
            g.written = moved + member.written

    def add_transactions(self, other: _Block) -> None:
        """Count the transactions ``other`` counted (its operations, groups and bytes) in this block too."""
        self.transactions += other.transactions
        self.unanswered += other.unanswered
        self.inline += other.inline
        self.rdma_read += other.rdma_read
        self.rdma_write += other.rdma_write
        ops = self.ops
        for name, op in other.ops.items():
            mine = ops.get(name)
            if mine is None:
                mine = ops[name] = _Op()
            mine.add(op)
        groups = self.groups
        for key, g in other.groups.items():
            into = groups.get(key)
            if into is None:
                into = groups[key] = _Group(g.first, g.read is not None)
            into.add(g)

    def stream(self, s: PsnStats) -> None:
        t = self.wire
        t["packets"] += s.packets
        t["retransmissions"] += s.retransmissions
        t["duplicates"] += s.duplicates
        t["lost"] += s.lost
        t["out_of_order"] += s.out_of_order
        t["rnr_naks"] += s.rnr_naks
        t["rnr_delay"] += s.rnr_delay_ns / 1e9
        t["acks"] += s.acks
        t["coalesced_acks"] += s.coalesced_acks
        t["naks"] += sum(s.naks.values())
        t["send_bytes"] += s.send_bytes
        t["write_bytes"] += s.write_bytes
        t["read_bytes"] += s.read_bytes

    def record(self) -> dict[str, Any]:
        ops = []
        for name, op in sorted(self.ops.items(), key=lambda kv: (-kv[1].count, kv[0])):
            lats = sorted(op.latencies)
            ops.append({"operation": name, "count": op.count, "answered": op.answered,
                        "latency": {"p50": percentile(lats, 50), "p90": percentile(lats, 90),
                                    "p99": percentile(lats, 99), "max": lats[-1] if lats else None,
                                    "mean": sum(lats) / len(lats) if lats else None}})
        rec = {"transactions": self.transactions, "unanswered": self.unanswered, "operations": ops,
               "bytes": {"inline": self.inline, "rdma_read": self.rdma_read, "rdma_write": self.rdma_write},
               "wire": dict(self.wire), "credits": self.credits,
               "findings": dict(sorted(self.findings.items(), key=lambda kv: (-kv[1], kv[0])))}
        if self.groups:     # only an upper layer that declares dimensions has them (not RPC-over-RDMA)
            rec["groups"] = [_group_record(dim, value, g) for (dim, value), g in
                             sorted(self.groups.items(), key=lambda kv: (kv[0][0], str(kv[0][1])))]
        return rec


class Stats:
    """Gathers the analysis records of one capture into per-connection and overall numbers."""

    reads_packets = False       # the analysis' records and findings are all it reads
    wants_psn_events = False    # the streams' totals (PsnStats) are enough
    wants_credit_series = False # and the credit ledgers' summaries (UlpSummary)
    keeps_transactions = False  # it counts them
    fills_layers = False        # nor any layer,
    wants_names = True          # but its files are named (Session.names): NFS learns file names

    def __init__(self) -> None:
        self.conns: dict[int, _Block] = {}
        self.overall = _Block()
        self.congestion: list[dict[str, Any]] = []     # per flow (source, destination, QP): CNPs, CE marks
        # the service response time tables (tshark's -z rpc,srt), by (table, procedure number)
        self.srt: dict[tuple[str, int], _Srt] = {}
        self.ulps: dict[str, _Ulp] = {}      # what is asked of each upper layer's model, by protocol

    def block(self, conn: int | None) -> _Block | None:
        if conn is None:
            return None
        b = self.conns.get(conn)
        if b is None:
            b = self.conns[conn] = _Block()
        return b

    def on_record(self, rec: Record) -> None:
        if isinstance(rec, Transaction):
            ulp = self._ulp(rec.protocol)
            name = ulp.operation(rec)
            lat = rec.latency_ns
            groups: list[_InGroup] = []
            for dim in ulp.dimensions:
                value = dim.get(rec)
                if value is not None:
                    groups.append(dim.member(value, rec))
            # (the overall block counts them at the end, from the connections': ``finish``)
            self._block(rec.conn).transaction(rec, name, lat, groups)
            if ulp.service is not None:
                self._service(rec, ulp.service)
        elif isinstance(rec, PsnStats):
            self.overall.stream(rec)
            self._block(rec.conn).stream(rec)
        elif isinstance(rec, CongestionFlow):
            self.congestion.append({"src": rec.src, "dst": rec.dst, "qp": rec.qp, "cnps": rec.cnps,
                                    "ce_marks": rec.ce_marks})
        elif isinstance(rec, UlpSummary):
            from ..output.credits import credit_summary_record
            for c in rec.credits:
                entry = {"conn": rec.conn, **credit_summary_record(c)}
                self._block(rec.conn).credits.append(entry)
                self.overall.credits.append(entry)

    def _ulp(self, protocol: str) -> _Ulp:
        ulp = self.ulps.get(protocol)
        if ulp is None:
            ulp = self.ulps[protocol] = _Ulp(model_of(protocol))
        return ulp

    def _service(self, t: Transaction, service: Callable[[Transaction], Service | None]) -> None:
        """An answered call's time in its service response time table, from the request whole at the responder
        to the response, as tshark's -z rpc,srt counts it."""
        rep = t.response
        if rep is None:
            return
        row = service(t)
        if row is None:
            return
        table, index, name, start = row
        key = (table, index)
        r = self.srt.get(key)
        if r is None:
            r = self.srt[key] = _Srt(name)
        r.add((rep.ts - start) / 1e9)

    def _block(self, conn: int) -> _Block:
        b = self.block(conn)
        assert b is not None
        return b

    # -- as a sink of the pipeline -----------------------------------------------------------------
    def packet(self, pkt: Any) -> None:
        pass

    def finish(self) -> None:
        """The capture's transactions in the overall block: the sums of the connections' (each transaction
        counted in one block as it closes, not two; the percentiles are of the values, in any order)."""
        overall = self.overall
        for b in self.conns.values():
            overall.add_transactions(b)

    def on_finding(self, f: Finding) -> None:
        rid = f.rule_def.id
        counts = self.overall.findings
        counts[rid] = counts.get(rid, 0) + 1
        if f.conn is not None:
            counts = self._block(f.conn).findings
            counts[rid] = counts.get(rid, 0) + 1


def gather(path: str, host: Any = None) -> tuple[Any, dict[str, Any]]:
    """Decode and analyse ``path``; returns (capture, the statistics as plain data).  ``host``: the join of
    host traces (``common.host_join``): the document gets a ``host`` section."""
    from ..conversation import connections

    stats = Stats()
    sinks: list[Any] = [stats]
    if host is not None:
        from ..output.hosttrace import HostStats
        host_stats = HostStats(host)
        sinks.append(host_stats)
    cap, pipe = run_capture(path, sinks, Options(packet_fields=False), progress="stats", host=host)   # records only
    conns = []
    for c in connections(pipe.session):
        b = stats.conns.get(c.conn_id) or _Block()
        conns.append({"id": c.conn_id, "transport": c.transport, "client": c.client_addr, "server": c.server_addr,
                      "client_qpn": c.client_qpn, "server_qpn": c.server_qpn, "state": c.state,
                      "t_start": c.t_start, "t_end": c.t_end, **b.record()})
    t0 = pipe.t0 if pipe.frames else None
    t1 = pipe.t_last if pipe.frames else None
    doc = {"file": path, "frames": pipe.frames, "t_first": t0, "t_last": t1,
           "duration": (t1 - t0) / 1e9 if t0 is not None and t1 is not None else 0.0,
           "connections": conns, "overall": stats.overall.record(), "congestion": stats.congestion,
           "srt": srt_records(stats.srt)}
    if host is not None:
        doc["host"] = host_stats.record()
    return cap, doc


# --- presentation -----------------------------------------------------------------------------------------
def _ms(v: float | None) -> str:
    return "-" if v is None else f"{v * 1e3:.3f}"


_PERCENTILES = ("p50", "p90", "p99", "max")


def _latency_head(width: int) -> str:
    """The latency columns' titles, each right-aligned in ``width``."""
    return "  ".join([(p + " ms").rjust(width) for p in _PERCENTILES])


def _latency_cells(lat: dict[str, Any], width: int) -> str:
    """A row's latency percentiles in milliseconds, under ``_latency_head(width)``."""
    return "  ".join([_ms(lat[p]).rjust(width) for p in _PERCENTILES])


def _block_lines(b: dict[str, Any]) -> list[str]:
    out: list[str] = []
    ops = b["operations"]
    if ops:
        width = max([len("Operation")] + [len(o["operation"]) for o in ops])
        out.append(f"  {'Operation':<{width}}  {'Count':>7}  {'Answered':>8}  {_latency_head(9)}")
        for o in ops:
            out.append(f"  {o['operation']:<{width}}  {o['count']:>7}  {o['answered']:>8}  "
                       f"{_latency_cells(o['latency'], 9)}")
    else:
        out.append("  no RPC transactions")
    groups = [g for g in b.get("groups") or () if "read" not in g]
    if groups:
        width = max(len(f"{g['dimension']} {g['value']}") for g in groups)
        out.append(f"  {'By':<{width}}  {'Count':>7}  {'IOPS':>9}  {'Bytes':>12}  {_latency_head(9)}")
        for g in groups:
            iops = "-" if g["iops"] is None else f"{g['iops']:.1f}"
            out.append(f"  {g['dimension'] + ' ' + str(g['value']):<{width}}  {g['count']:>7}  {iops:>9}  "
                       f"{g['bytes']:>12,}  {_latency_cells(g['latency'], 9)}")
    out += _moving_groups([g for g in b.get("groups") or () if "read" in g])
    by = b["bytes"]
    out.append(f"  Bytes by transactions: inline {by['inline']:,}  RDMA READ {by['rdma_read']:,}  "
               f"RDMA WRITE {by['rdma_write']:,}")
    t = b["wire"]
    if t["packets"] or t["acks"]:
        out.append(f"  Payload on the wire: SEND {t['send_bytes']:,}  RDMA WRITE {t['write_bytes']:,}  "
                   f"READ responses {t['read_bytes']:,}")
        out.append(f"  PSNs: {t['packets']:,} request packets, {t['retransmissions']} retransmitted, "
                   f"{t['duplicates']} duplicate, {t['lost']} not captured, {t['out_of_order']} out of order; "
                   f"{t['acks']:,} ACKs ({t['coalesced_acks']:,} covering several PSNs), {t['naks']} NAKs, "
                   f"{t['rnr_naks']} RNR NAKs ({t['rnr_delay'] * 1e3:.3f} ms waited)")
    for c in b["credits"]:
        requested = "-" if c["requested"] is None else c["requested"]    # none asked (RPC-over-RDMA v2, NVMe)
        out.append(f"  Credits {c['direction']} (conn {c['conn']}): requested {requested}, granted "
                   f"{c['granted_min']}..{c['granted_max']}, peak outstanding {c['peak_outstanding']}, "
                   f"{c['calls']} calls, {c['exceeded']} over the grant, {c['zero_grants']} zero grants")
    if b["findings"]:
        out.append("  Findings: " + ", ".join(f"{rule} {n}" for rule, n in b["findings"].items()))
    return out


def _moving_groups(groups: list[dict[str, Any]]) -> list[str]:
    """The groups of a dimension that says what its transactions read and wrote (a file): one table each."""
    out: list[str] = []
    for dim in sorted({g["dimension"] for g in groups}):
        rows = [g for g in groups if g["dimension"] == dim]
        width = max([len(dim)] + [len(str(g["value"])) for g in rows])
        out.append(f"  {dim.capitalize():<{width}}  {'Ops':>6}  {'Read':>11}  {'Written':>11}  {_latency_head(8)}")
        for g in rows:
            out.append(f"  {str(g['value']):<{width}}  {g['count']:>6}  {g['read']:>11,}  {g['written']:>11,}  "
                       f"{_latency_cells(g['latency'], 8)}")
    return out


def srt_lines(rows: list[dict[str, Any]]) -> list[str]:
    """The service response time tables as tshark's -z rpc,srt prints them (seconds)."""
    out: list[str] = []
    for table in sorted({r["table"] for r in rows}):
        out.append("")
        out.append(f"Service response time: {table} (as tshark -z rpc,srt)")
        mine = [r for r in rows if r["table"] == table]
        width = max([len("Procedure")] + [len(r["procedure"]) for r in mine])
        out.append(f"  {'Index':>5}  {'Procedure':<{width}}  {'Calls':>7}  {'Min SRT':>9}  {'Max SRT':>9}  "
                   f"{'Avg SRT':>9}  {'Sum SRT':>10}")
        for r in mine:
            out.append(f"  {r['index']:>5}  {r['procedure']:<{width}}  {r['calls']:>7}  {r['min']:>9.6f}  "
                       f"{r['max']:>9.6f}  {r['avg']:>9.6f}  {r['sum']:>10.6f}")
    return out


def text_lines(doc: dict[str, Any]) -> list[str]:
    lines = [f"Statistics: {doc['file']} ({doc['frames']:,} frames, {doc['duration']:.6f} s)"]
    for c in doc["connections"]:
        ends = f"{c['client']} -> {c['server']}"
        if c["client_qpn"] is not None or c["server_qpn"] is not None:
            q = lambda v: "?" if v is None else f"0x{v:06x}"   # noqa: E731
            ends = f"{c['client']} QP {q(c['client_qpn'])} -> {c['server']} QP {q(c['server_qpn'])}"
        lines.append("")
        lines.append(f"Connection {c['id']} ({c['transport']}, {c['state']}): {ends}")
        lines += _block_lines(c)
    lines.append("")
    lines.append(f"Overall ({len(doc['connections'])} connections)")
    lines += _block_lines(doc["overall"])
    lines += srt_lines(doc.get("srt") or [])
    for c in doc.get("congestion") or ():
        lines.append(f"  Congestion {c['src']} -> {c['dst']} QP 0x{c['qp']:06x}: {c['cnps']} CNPs, "
                     f"{c['ce_marks']} ECN CE / FECN marks")
    if "host" in doc:
        from ..output.hosttrace import host_stats_lines
        lines.append("")
        lines += host_stats_lines(doc["host"])
    return lines


def folded(lines: list[str], width: int) -> list[str]:
    """Lines longer than ``width`` folded at spaces, the continuation indented under the line's text
    (a list of findings by rule runs to hundreds of characters): what ``textwrap.wrap`` makes of them
    without breaking words or at hyphens, without its import and regular expressions (some 13 M
    instructions for `stats` of the mix's 20,000 frames)."""
    out: list[str] = []
    for line in lines:
        if len(line) <= width:
            out.append(line)
            continue
        indent = " " * (len(line) - len(line.lstrip(" ")))
        out += _wrapped(line, width, indent + "    ") or [line]
    return out


# What textwrap counts as whitespace: each such character becomes a space before a line is folded.
_WRAP_SPACES: Final = str.maketrans({c: " " for c in "\t\n\x0b\x0c\r"})


def _wrapped(line: str, width: int, indent: str) -> list[str]:
    """``textwrap.wrap(line, width, subsequent_indent=indent, break_long_words=False,
    break_on_hyphens=False)``, its algorithm (``TextWrapper._wrap_chunks``) step by step."""
    # a printable line holds no tab nor other whitespace to replace (a check in C, not a translation)
    chunks = _wrap_chunks(line if line.isprintable() else line.expandtabs().translate(_WRAP_SPACES))
    chunks.reverse()
    lines: list[str] = []
    while chunks:
        cur: list[str] = []
        cur_len = 0
        pre = ""
        if lines:
            pre = indent
            if chunks[-1].strip() == "":
                del chunks[-1]
        room = width - len(pre)
        while chunks:
            n = len(chunks[-1])
            if cur_len + n > room:
                break
            cur.append(chunks.pop())
            cur_len += n
        if chunks and len(chunks[-1]) > room and not cur:
            cur.append(chunks.pop())        # a word longer than the line, on its own
        if cur and cur[-1].strip() == "":
            del cur[-1]
        if cur:
            lines.append(pre + "".join(cur))
    return lines


def _wrap_chunks(text: str) -> list[str]:
    """The text cut into its runs of spaces and the words between them, in order."""
    chunks: list[str] = []
    start = 0
    end = len(text)
    while start < end:
        if text[start] == " ":
            stop = start + 1
            while stop < end and text[stop] == " ":
                stop += 1
        else:
            stop = text.find(" ", start)
            if stop < 0:
                stop = end
        chunks.append(text[start:stop])
        start = stop
    return chunks


def text_width() -> int:
    """The width text reports fold at: the terminal's, or 100 columns for a file or a pipe (shutil imported
    only for a terminal: its import, some 8 M instructions, where nothing else imports it)."""
    if sys.stdout.isatty():
        import shutil
        return max(40, shutil.get_terminal_size().columns)
    return 100


def cmd_stats(args: argparse.Namespace) -> int:
    cap, doc = gather(args.file, host_join(args))
    if args.T == "json":
        import orjson      # here, not at import: every command module is imported to build the parser
        sys.stdout.buffer.write(orjson.dumps(doc, option=orjson.OPT_INDENT_2) + b"\n")
        sys.stdout.buffer.flush()
    else:
        print_text(folded(text_lines(doc), text_width()))
    return report_problems(cap)


def register(sub: Any) -> None:
    p = sub.add_parser("stats", help="per connection and overall: operations with latency percentiles, bytes "
                                     "inline / RDMA READ / RDMA WRITE, credits, PSN counters, findings by rule")
    add_capture_argument(p)
    p.add_argument("-T", choices=("text", "json"), default="text", help="text (default) or json")
    add_host_trace_argument(p)
    p.set_defaults(func=cmd_stats)
