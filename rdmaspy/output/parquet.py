"""Parquet tables of a capture (schema export-1, docs/export.md), written from the typed model.

``ExportSink`` is a pipeline sink: every packet gives a row of ``packets`` (its summary columns and
the main header fields, read from the layers the dissectors made), every record of the analysis a
row of ``transactions`` (with its steps), ``segments`` or ``credits``, every finding a row of
``findings``; ``connections`` is written at the end from the connection table.  Rows are buffered
per table and written as one Parquet row group every ``BATCH`` rows, so memory stays flat in the
capture's size.  Nothing here parses bytes: values come from the packets' layers and the model.
"""
from __future__ import annotations

import os
from typing import Any, Callable, Final

import orjson
import pyarrow as pa
import pyarrow.parquet as pq

from ..analysis.model import Connection, CreditSeries, Finding, Record, Segment, Step, Transaction
from ..analysis.rpcrdma_facts import PROTOCOL as RPCRDMA
from ..analysis.ulp import Fact, model_of, models
from ..packet import Expert, Packet
from ..hosttrace.events import EVENTS
from .flows import json_default

SCHEMA_NAME = "rdmaspy-export"
SCHEMA_VERSION = 1
BATCH = 16_384          # rows a table holds before they go to disk as one row group ...
# ... fewer for the tables whose rows are big (a transaction with its steps is some 2 KiB of Python values):
# what the export holds is bounded by these, whatever the capture's size.
ROW_GROUPS_PER_FILE = 64  # a file holds at most this many row groups; the table goes on in the next file
BATCHES = {"transactions": 2048, "segments": 4096, "credits": 8192, "findings": 4096, "connections": 4096}
MANIFEST = "rdmaspy-export.json"

TS = pa.timestamp("ns", tz="UTC")
U8, U16, U32, U64, I64 = pa.uint8(), pa.uint16(), pa.uint32(), pa.uint64(), pa.int64()
STR, BOOL = pa.string(), pa.bool_()

STEP = pa.struct([("kind", STR), ("frames", pa.list_(U64)), ("time", TS), ("bytes", U64), ("handle", U32),
                  ("offset", U64), ("length", U32), ("segment_list", STR), ("segment_chunk", U32),
                  ("segment_index", U32), ("response_frames", pa.list_(U64)), ("invalidated", U32)])

SCHEMAS: dict[str, pa.Schema] = {
    "packets": pa.schema([
        ("frame", U64), ("time", TS), ("file", STR), ("length", U32), ("wire_length", U32),
        ("source", STR), ("destination", STR), ("protocol", STR), ("info", STR), ("malformed", STR),
        ("connection", U32), ("eth_src", STR), ("eth_dst", STR), ("ip_src", STR), ("ip_dst", STR),
        ("udp_srcport", U16), ("udp_dstport", U16), ("tcp_srcport", U16), ("tcp_dstport", U16),
        ("bth_opcode", U8), ("bth_destqp", U32), ("bth_psn", U32), ("bth_pkey", U16),
        ("reth_va", U64), ("reth_rkey", U32), ("reth_dma_length", U32), ("aeth_syndrome", U8),
        ("aeth_msn", U32), ("deth_srcqp", U32), ("immediate", U32), ("ieth_rkey", U32), ("icrc_ok", BOOL),
        ("rpcrdma_xid", U32), ("rpcrdma_version", U32), ("rpcrdma_credits", U32), ("rpcrdma_proc", STR),
        ("expert", U16)]),
    "transactions": pa.schema([]),          # the generic columns and every upper layer's facts: below
    "segments": pa.schema([
        ("connection", U32), ("xid", U32), ("call_frame", U64), ("list", STR), ("chunk", U32), ("segment", U32),
        ("position", U32), ("handle", U32), ("offset", U64), ("length", U32), ("memory_of", STR),
        ("used", U64), ("overrun", U64), ("reported", U32), ("operations", U32), ("state", STR),
        ("frames", pa.list_(U64)), ("protocol", STR), ("key", U64), ("access", STR), ("invalidate", BOOL)]),
    "credits": pa.schema([
        ("connection", U32), ("direction", STR), ("frame", U64), ("time", TS), ("granted", U32),
        ("requested", U32), ("outstanding", U32)]),
    "connections": pa.schema([
        ("connection", U32), ("transport", STR), ("state", STR), ("setup_known", BOOL), ("first_frame", U64),
        ("client_address", STR), ("client_gid", STR), ("client_qpn", U32), ("client_tcp_port", U16),
        ("server_address", STR), ("server_gid", STR), ("server_qpn", U32), ("server_tcp_port", U16),
        ("service_id", U64), ("port", U16), ("service_type", U8), ("path_mtu", U32),
        ("start_time", TS), ("end_time", TS), ("requested_time", TS), ("established_time", TS),
        ("closed_time", TS), ("closed_by", STR), ("reject_reason", U32), ("inline_c2s", U32),
        ("inline_s2c", U32), ("remote_invalidate", BOOL), ("packets_c2s", U64), ("packets_s2c", U64),
        ("bytes_c2s", U64), ("bytes_s2c", U64)]),
    "findings": pa.schema([
        ("frame", U64), ("time", TS), ("origin", STR), ("rule", STR), ("severity", STR), ("group", STR),
        ("source", STR), ("message", STR), ("frames", pa.list_(U64)), ("connection", U32), ("xid", U32),
        ("args", STR)]),
}
# With --host-trace only: each transaction's kernel events (docs/hosttrace.md), a row an event.
HOST_EVENTS = "host_events"
HOST_SCHEMA: Final = pa.schema([
    ("connection", U32), ("xid", U32), ("call_frame", U64), ("trace", U16), ("event", STR), ("side", STR),
    ("stage", STR), ("time", TS), ("host_time", I64), ("fields", STR)])
# What every upper layer's transaction has (the request and response named "call" and "reply", as the table
# had them when RPC-over-RDMA was the only one); then each upper layer's facts (analysis.ulp), typed as declared.
_TRANSACTION_COLUMNS: list[tuple[str, pa.DataType]] = [
    ("connection", U32), ("protocol", STR), ("key", U64), ("direction", STR), ("state", STR), ("first_frame", U64),
    ("call_frame", U64), ("call_frames", pa.list_(U64)), ("call_time", TS), ("call_size", U32),
    ("retransmissions", U32), ("reply_frame", U64), ("reply_frames", pa.list_(U64)), ("reply_time", TS),
    ("reply_size", U32), ("invalidated", U32), ("latency_ns", I64), ("first_data_time", TS),
    ("last_data_time", TS), ("bytes_read", U64), ("bytes_written", U64), ("bytes_inline", U64),
    ("bytes_expected", U64), ("findings", pa.list_(STR)), ("steps", pa.list_(STEP))]
_FACT_TYPES: dict[str, pa.DataType] = {"u8": U8, "u16": U16, "u32": U32, "u64": U64, "i64": I64, "f64": pa.float64(),
                                       "str": STR, "bool": BOOL, "strs": pa.list_(STR), "ts": TS}


def _facts() -> list[Fact]:
    return [f for m in models() for f in m.facts]


SCHEMAS["transactions"] = pa.schema(_TRANSACTION_COLUMNS + [(f.name, _FACT_TYPES[f.kind]) for f in _facts()])
TABLES = tuple(SCHEMAS)
EVERY_TABLE = TABLES + (HOST_EVENTS,)       # what a directory of tables may hold (query's views, export's cleanup)


def part_path(path: str, n: int) -> str:
    """The ``n``-th file of a table whose first file is ``path`` (``packets.parquet`` -> ``packets.1.parquet``)."""
    stem, ext = os.path.splitext(path)
    return f"{stem}.{n}{ext}"


def files_of(writers: dict[str, "TableWriter"]) -> dict[str, list[str]]:
    """Each table's files (their names, in order)."""
    return {name: [os.path.basename(p) for p in w.paths] for name, w in writers.items()}


class TableWriter:
    """One table: rows buffered as columns, written as a row group every ``batch`` rows.

    A Parquet writer keeps every row group's metadata until it closes its file (some 800 bytes a column
    chunk: 64 MiB more at 10M frames), so a file takes at most ``ROW_GROUPS_PER_FILE`` row groups and the
    table goes on in ``<name>.1.parquet``, ``<name>.2.parquet``...: what the writer holds stays bounded."""

    def __init__(self, path: str, schema: pa.Schema, batch: int = BATCH) -> None:
        self.path = path
        self.schema = schema.with_metadata({b"rdmaspy.schema": f"{SCHEMA_NAME}-{SCHEMA_VERSION}".encode()})
        self.names = schema.names
        self.columns: list[list[Any]] = [[] for _ in self.names]
        self.batch = batch
        self.rows = 0
        self.paths = [path]                 # the files of the table, in order
        self._groups = 0                    # row groups in the current file
        self._writer = pq.ParquetWriter(path, self.schema, compression="zstd")

    def add(self, row: tuple[Any, ...]) -> None:
        for col, v in zip(self.columns, row):
            col.append(v)
        if len(self.columns[0]) >= self.batch:
            self.flush()

    def flush(self) -> None:
        if not self.columns[0]:
            return
        if self._groups == ROW_GROUPS_PER_FILE:
            self._writer.close()
            self.paths.append(part_path(self.path, len(self.paths)))
            self._writer = pq.ParquetWriter(self.paths[-1], self.schema, compression="zstd")
            self._groups = 0
        arrays = [pa.array(col, type=f.type) for col, f in zip(self.columns, self.schema)]
        self._writer.write_batch(pa.RecordBatch.from_arrays(arrays, schema=self.schema))
        self._groups += 1
        self.rows += len(self.columns[0])
        self.columns = [[] for _ in self.names]

    def close(self) -> None:
        self.flush()
        self._writer.close()


def _layer_values(pkt: Packet) -> dict[str, Any]:
    """The main header fields of a packet by field name, from the layers the dissectors made."""
    out: dict[str, Any] = {}
    for lay in pkt.layers:
        proto = lay.proto
        if proto in _WANTED:
            hdr = lay.header
            if hdr is not None:
                for f, v in zip(hdr.fields, lay.values):
                    out[f.name] = v
            elif proto in _ITEMS:
                for f, v, _o, _l in lay.items or ():
                    if f.name in _ITEM_FIELDS and f.name not in out:
                        out[f.name] = v
    return out


_WANTED = frozenset({"eth", "ip", "ipv6", "udp", "tcp", "rpcrdma", "rpcrdma2"})
_ITEMS = frozenset({"rpcrdma", "rpcrdma2"})
_ITEM_FIELDS = frozenset({"rpcrdma.xid", "rpcrdma.version", "rpcrdma.credits", "rpcrdma.proc", "rpcrdma2.xid",
                          "rpcrdma2.version", "rpcrdma2.credits", "rpcrdma2.proc", "rpcrdma2.type"})


_ADDRESS_TEXT: dict[bytes, str] = {}       # a capture has few addresses and many packets (bounded)


def _address(v: Any) -> str | None:
    """An address value of a header (bytes) as its usual text."""
    if v is None:
        return None
    if v.__class__ is not bytes:
        return str(v)
    text = _ADDRESS_TEXT.get(v)
    if text is None:
        if len(_ADDRESS_TEXT) >= 65536:
            _ADDRESS_TEXT.clear()
        if len(v) == 4:
            text = f"{v[0]}.{v[1]}.{v[2]}.{v[3]}"
        elif len(v) == 6:
            text = ":".join(f"{x:02x}" for x in v)
        elif len(v) == 16:
            import ipaddress
            text = str(ipaddress.IPv6Address(v))
        else:
            text = v.hex()
        _ADDRESS_TEXT[v] = text
    return text


def _u32(v: Any) -> int | None:
    return v if isinstance(v, int) and 0 <= v < (1 << 32) else None


def packet_row(pkt: Packet, file: str) -> tuple[Any, ...]:
    f = pkt.frame
    v = _layer_values(pkt)
    ib = pkt.ib
    conv = pkt.conv
    reth = ib.reth if ib is not None else None
    aeth = ib.aeth if ib is not None else None
    proc = v.get("rpcrdma.proc", v.get("rpcrdma2.type"))
    xid = v.get("rpcrdma.xid", v.get("rpcrdma2.xid"))
    return (
        f.num, f.ts, file, len(f.data), f.wirelen, pkt.src, pkt.dst, pkt.proto, pkt.info_text, pkt.malformed,
        getattr(conv, "conn_id", None), _address(v.get("eth.src")), _address(v.get("eth.dst")),
        _address(v.get("ip.src", v.get("ipv6.src"))), _address(v.get("ip.dst", v.get("ipv6.dst"))),
        v.get("udp.srcport"), v.get("udp.dstport"), v.get("tcp.srcport"), v.get("tcp.dstport"),
        ib.opcode if ib is not None else None, ib.destqp if ib is not None else None,
        ib.psn if ib is not None else None, ib.pkey if ib is not None else None,
        reth[0] if reth else None, reth[1] if reth else None, reth[2] if reth else None,
        aeth[0] if aeth else None, aeth[1] if aeth else None,
        ib.deth_srcqp if ib is not None else None, _u32(ib.imm) if ib is not None else None,
        _u32(ib.ieth) if ib is not None else None, ib.icrc_ok if ib is not None else None,
        _u32(xid), _u32(v.get("rpcrdma.version", v.get("rpcrdma2.version"))),
        _u32(v.get("rpcrdma.credits", v.get("rpcrdma2.credits"))),
        None if proc is None else _proc_name(proc),
        len(pkt.expert) if pkt.expert else 0,
    )


_PROC_NAMES: dict[int, str] = {}


def _proc_name(proc: Any) -> str:
    if isinstance(proc, int):
        name = _PROC_NAMES.get(proc)
        if name is None:
            from ..dissectors.rpcrdma import PROC
            names = PROC.names or {}
            name = _PROC_NAMES[proc] = str(names.get(proc, proc))
        return name
    return str(proc)


def step_row(st: Step) -> dict[str, Any]:
    seg = st.segment
    return {"kind": str(st.kind), "frames": list(st.frames), "time": st.ts, "bytes": st.bytes,
            "handle": st.handle, "offset": st.offset, "length": st.length,
            "segment_list": str(seg.kind) if seg is not None else None,
            "segment_chunk": seg.chunk if seg is not None else None,
            "segment_index": seg.index if seg is not None else None,
            "response_frames": st.response_frames, "invalidated": st.invalidated}


def transaction_row(t: Transaction) -> tuple[Any, ...]:
    call, rep = t.request, t.response
    first = min(call.frames) if call.frames else None
    generic = (
        t.conn, t.protocol, t.key, str(t.direction), str(t.state), first, t.request_frame, list(call.frames), call.ts,
        call.size, len(call.retransmissions), t.response_frame, list(rep.frames) if rep is not None else None,
        rep.ts if rep is not None else None, rep.size if rep is not None else None,
        rep.invalidated if rep is not None else None, t.latency_ns, t.data_first, t.data_last, t.bytes_read,
        t.bytes_written, t.bytes_inline, t.expected, [f.rule_def.id for f in t.findings],
        [step_row(s) for s in t.steps])
    own = _OWN.get(t.protocol)
    if own is None:
        own = _OWN[t.protocol] = frozenset(f.name for f in model_of(t.protocol).facts)
    return generic + tuple(f.get(t) if f.name in own else None for f in _FACT_LIST)


_FACT_LIST = _facts()
_OWN: dict[str, frozenset[str]] = {}       # an upper layer's fact columns


def segment_row(t: Transaction, s: Segment) -> tuple[Any, ...]:
    xid = t.key if t.protocol == RPCRDMA else None
    return (t.conn, xid, t.request_frame, str(s.kind), s.chunk, s.index, s.position, s.handle, s.offset, s.length,
            str(s.side), s.used, s.overrun, s.reported, s.ops, str(s.state), list(s.frames), t.protocol, t.key,
            None if s.access is None else str(s.access), s.invalidate)


def connection_row(c: Connection, first_frame: int | None) -> tuple[Any, ...]:
    cl, sv = c.client, c.server
    return (c.id, c.transport, c.state.value, c.setup_known, first_frame, cl.address, cl.gid, cl.qpn, cl.tcp_port,
            sv.address, sv.gid, sv.qpn, sv.tcp_port, c.service_id, c.port, c.service_type, c.path_mtu,
            c.t_start, c.t_end, c.t_requested, c.t_established, c.t_closed,
            None if c.closed_by is None else c.closed_by.value, c.reject_reason, c.inline_c2s, c.inline_s2c,
            c.remote_invalidate, c.packets_c2s, c.packets_s2c, c.bytes_c2s, c.bytes_s2c)


def host_event_row(t: Transaction, ev: Any) -> tuple[Any, ...]:
    """A kernel event of a transaction (``analysis.hostmodel``): its fields as one JSON text."""
    decl = EVENTS[ev.name]
    return (t.conn, t.key, t.request_frame, ev.trace, ev.name, decl.side.value, decl.stage.value, ev.ts, ev.host_ts,
            orjson.dumps(ev.fields).decode())


def finding_row(f: Finding) -> tuple[Any, ...]:
    return (f.frames[0] if f.frames else None, f.ts, "analysis", f.rule_def.id, f.severity, f.group,
            f.rule_def.source, f.text, list(f.frames), f.conn, _u32(f.xid), orjson.dumps(f.args, default=json_default).decode())


def dissector_item_row(pkt: Packet, item: Expert) -> tuple[Any, ...]:
    """An expert item a dissector attached to a packet (a malformed field, a bad checksum); its rule id
    when it stands for a declared rule (rdmaspy/rules.py)."""
    num = pkt.frame.num
    return (num, pkt.frame.ts, "dissector", item.rule or None, item.severity, item.group, item.source or None,
            item.text, [num],
            getattr(pkt.conv, "conn_id", None), None, None)




# Keeps a transaction or not (a time slice of a parallel run reports those its first frame falls in).
TransactionFilter = Callable[[Transaction], bool]


def write_packet(pkt: Packet, file: str, packets: Callable[[tuple[Any, ...]], None],
                 findings: Callable[[tuple[Any, ...]], None]) -> None:
    """The packet's row, and a row of ``findings`` for each of its dissectors' expert items."""
    packets(packet_row(pkt, file))
    if pkt.expert:
        for item in pkt.expert:
            if isinstance(item, Expert):
                findings(dissector_item_row(pkt, item))


class PacketSink:
    """The sink of a time slice of a parallel export: the ``packets`` table and the dissectors' rows of
    ``findings`` (the slice decodes from the state its shard's task kept; that task writes the rest)."""

    def __init__(self, directory: str, suffix: str, file_of: Callable[[int], str]) -> None:
        self.writers = {name: TableWriter(os.path.join(directory, f"{name}{suffix}.parquet"), SCHEMAS[name],
                                          BATCHES.get(name, BATCH)) for name in ("packets", "findings")}
        self.file_of = file_of
        self._packets = self.writers["packets"].add
        self._findings = self.writers["findings"].add

    def packet(self, pkt: Packet) -> None:
        write_packet(pkt, self.file_of(pkt.frame.num), self._packets, self._findings)

    def finish(self) -> None:
        for w in self.writers.values():
            w.close()

    @property
    def rows(self) -> dict[str, int]:
        return {name: w.rows for name, w in self.writers.items()}

    @property
    def files(self) -> dict[str, list[str]]:
        return files_of(self.writers)


class ExportSink:
    """The pipeline's sink that writes the six tables into ``directory`` (files ``<table><suffix>.parquet``)."""

    wants_psn_events = False    # its tables hold no PSN events

    def __init__(self, directory: str, suffix: str = "", file_of: Callable[[int], str] | None = None,
                 batch: int = BATCH, host_events: bool = False) -> None:
        """``host_events``: write the host_events table too (``--host-trace``)."""
        os.makedirs(directory, exist_ok=True)
        self.directory = directory
        schemas = dict(SCHEMAS)
        if host_events:
            schemas[HOST_EVENTS] = HOST_SCHEMA
        self.writers = {name: TableWriter(os.path.join(directory, f"{name}{suffix}.parquet"), schema,
                                          min(batch, BATCHES.get(name, batch)))
                        for name, schema in schemas.items()}
        self._packets = self.writers["packets"].add
        self.file_of = file_of if file_of is not None else (lambda _n: "")
        # connection id -> the frame that made the connection known (ids follow these frames: a parallel
        # run numbers the connections of its shards by them)
        self.created: dict[int, int] = {}
        self._pipe: Any = None
        self._table: Any = None
        # False while a time slice of a parallel export writes the packets (rdmaspy.scale.parallel): this
        # sink then keeps how many expert items the analysis gave each packet (the slice has no analysis)
        self.packet_rows = True
        # packets up to this frame are a time slice's even once this sink writes rows (packets the pipeline
        # held for a finding past the cut where the slices stopped being handed their state)
        self.rows_after = 0
        self.analysis_items: dict[int, int] = {}

    def attach(self, pipe: Any) -> None:
        from ..conversation import connections
        self._pipe = pipe
        self._table = connections(pipe.session)

    def packet(self, pkt: Packet) -> None:
        table = self._table
        if table is not None and len(table.conns) > len(self.created):
            for c in table.conns[len(self.created):]:
                self.created[c.conn_id] = pkt.frame.num
        if self.packet_rows and pkt.frame.num > self.rows_after:
            write_packet(pkt, self.file_of(pkt.frame.num), self._packets, self.writers["findings"].add)
        elif pkt.expert:
            n = sum(1 for item in pkt.expert if not isinstance(item, Expert))
            if n:
                self.analysis_items[pkt.frame.num] = n

    def on_record(self, rec: Record) -> None:
        if isinstance(rec, Transaction):
            self.writers["transactions"].add(transaction_row(rec))
            seg_add = self.writers["segments"].add
            for s in rec.segments:
                seg_add(segment_row(rec, s))
            host = self.writers.get(HOST_EVENTS)
            if host is not None and rec.host is not None:
                for ev in rec.host.events:
                    host.add(host_event_row(rec, ev))
        elif isinstance(rec, CreditSeries):
            add = self.writers["credits"].add
            for p in rec.samples:
                add((p.conn, p.direction.value, p.frame, p.ts, _u32(p.granted), _u32(p.requested), p.outstanding))

    def on_finding(self, f: Finding) -> None:
        self.writers["findings"].add(finding_row(f))

    def finish(self) -> None:
        from ..conversation import connections
        pipe = self._pipe
        if pipe is not None:
            add = self.writers["connections"].add
            for live in connections(pipe.session):
                add(connection_row(Connection.of(live), self.created.get(live.conn_id)))
        self.close()

    def close(self) -> None:
        for w in self.writers.values():
            w.close()

    @property
    def rows(self) -> dict[str, int]:
        return {name: w.rows for name, w in self.writers.items()}

    @property
    def files(self) -> dict[str, list[str]]:
        return files_of(self.writers)

