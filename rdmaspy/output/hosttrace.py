"""Host traces beside a capture (``--host-trace``): making the join, and presenting what it gives.

``prepare`` opens the traces (a one-line error for one that cannot be read), measures each one's clock
against the beginning of the capture (a first, short pass of the pipeline over the capture's first
transactions: ``analysis.hostjoin.measure_clock``) and gives the ``HostJoin`` sink to put first among a
command's sinks.  ``HostLines`` prints the host's events between the packets of ``decode`` (``-V`` or
summary lines), on the capture's clock.  The ``*_record`` functions give the JSON objects of the flows
document and the rows of the export.
"""
from __future__ import annotations

import heapq
from typing import Any, Final

from ..analysis.hostjoin import HORIZON_NS, HostJoin, NfsArgs, _Cursor, measure_clock
from ..analysis.hostmodel import HostClock
from ..analysis.model import CallDirection, Record, Transaction
from ..analysis.rpcrdma_facts import PROTOCOL as RPCRDMA_ULP
from ..dissectors.rpcrdma import RPCRDMA
from ..errors import RdmaspyError
from ..filter import make_extractor
from ..hosttrace.events import EVENTS
from ..hosttrace.parse import HostEvent
from ..hosttrace.source import TraceFile
from ..packet import Packet
from ..pipeline import Options, PacketSink, Pipeline
from ..readers import open_capture
from .hostrecords import host_clock_record
from .lines import LineWriter

JSON = dict[str, object]
PREFIX_FRAMES: Final = 200_000      # frames of the capture's beginning the clocks are measured over, at most
PREFIX_TRANSACTIONS: Final = 512    # ... or this many forward transactions
SHOWN_XIDS: Final = 4096


class _Samples:
    """The first pass's sink: the call and reply times of the first forward transactions."""

    reads_packets = False
    wants_psn_events = False

    def __init__(self) -> None:
        self.wire: dict[int, tuple[int, int | None]] = {}
        self.again: set[int] = set()        # XIDs of several transactions: which host event is whose is unsure

    def on_record(self, rec: Record) -> None:
        if not isinstance(rec, Transaction) or rec.protocol != RPCRDMA_ULP or rec.direction is not CallDirection.FORWARD:
            return
        if rec.key in self.wire or rec.request.retransmissions:
            self.again.add(rec.key)
        self.wire[rec.key] = (rec.request.ts, rec.response.ts if rec.response is not None else None)

    def packet(self, pkt: Packet) -> None:
        pass

    def finish(self) -> None:
        pass


def wire_samples(capture: str) -> dict[int, tuple[int, int | None]]:
    """XID -> (call time, reply time) of the capture's first forward transactions."""
    samples = _Samples()
    cap = open_capture(capture)
    with cap:
        pipe = Pipeline(None, Options(analyze=True, packet_fields=False), [samples])
        for frame in cap:
            pipe.feed(frame)
            if pipe.frames >= PREFIX_FRAMES or len(samples.wire) >= PREFIX_TRANSACTIONS:
                break
        else:
            if pipe.analyzer is not None:
                pipe.analyzer.finish()
    return {x: w for x, w in samples.wire.items() if x not in samples.again}


def open_traces(paths: list[str]) -> list[TraceFile]:
    """The traces given, checked (TraceError, one line, for the first that cannot be read)."""
    return [TraceFile(p, i) for i, p in enumerate(paths)]


def measure(capture: str, traces: list[TraceFile]) -> list[HostClock]:
    if capture == "-":
        raise RdmaspyError("--host-trace: the capture is read twice (its beginning first, to align the clocks): "
                           "give a capture file, not standard input")
    wire = wire_samples(capture)
    return [measure_clock(t, wire) for t in traces]


def prepare(capture: str, paths: list[str], budget_limit: int = 256 << 20) -> HostJoin:
    """The join of the traces at ``paths`` with the capture at ``capture``, its clocks measured; the NFS
    calls' file handle hashes read from the packets (``nfs.fh.hash``, the offsets and counts)."""
    traces = open_traces(paths)
    clocks = measure(capture, traces)
    return HostJoin(traces, clocks, budget_limit, nfs_arguments())


NFS_ARGS: Final = ("nfs.fh.hash", "nfs.offset3", "nfs.count3", "nfs.offset4", "nfs.count4")


def nfs_arguments() -> NfsArgs:
    """A packet's NFS file handle hashes, offsets and counts, read through the field catalog."""
    extract = make_extractor(NFS_ARGS)

    def args(pkt: Packet) -> tuple[list[int], list[int], list[int]]:
        v = extract(pkt, 0)
        ints = lambda names: [x for n in names for x in v.get(n, ()) if isinstance(x, int)]   # noqa: E731
        return ints(("nfs.fh.hash",)), ints(("nfs.offset3", "nfs.offset4")), ints(("nfs.count3", "nfs.count4"))
    return args


def event_text(ev: HostEvent) -> str:
    """An event's fields as a line shows them: XIDs, R_Keys and addresses in hex."""
    parts = []
    if ev.xid is not None and "xid" not in ev.fields:
        parts.append(f"(xid 0x{ev.xid:08x})")
    segment = "handle" in ev.fields           # an offset beside a handle is an address, else a file's offset
    for k, v in ev.fields.items():
        if isinstance(v, int) and v >= 0 and (k in ("xid", "handle", "inv_rkey", "fh_hash", "fhandle")
                                              or k == "offset" and segment):
            parts.append(f"{k}=0x{v:x}" if k != "xid" else f"xid=0x{v:08x}")
        else:
            parts.append(f"{k}={v}")
    return " ".join(parts)


def clock_lines(clocks: list[HostClock]) -> list[str]:
    """The host traces read, for a text report (stats)."""
    out = []
    for c in clocks:
        if c.offset_ns is None:
            out.append(f"  {c.path}: no XID in common with the capture: not joined ({c.lines} lines)")
            continue
        out.append(f"  {c.path} ({c.form}): offset {c.offset_ns / 1e3:.1f} us (range {_us(c.low_ns)}..{_us(c.high_ns)}"
                   f" us, spread {_us(c.spread_ns)} us, over {c.matched} XIDs)")
        out.append(f"    {c.lines} lines, {c.events} events, {c.kept} joined kinds, {c.unknown} of other kinds, "
                   f"{c.skipped + c.too_long} lines skipped, {c.lost} lost by the tracer")
        out.append(f"    {c.joined} transactions joined, {c.host_only} traced by the host only, {c.wire_only} on the "
                   f"wire only within the trace's span")
    return out


def _us(ns: int | None) -> str:
    return "?" if ns is None else f"{ns / 1e3:.1f}"


# --- the events between the packets (decode) -----------------------------------------------------------
class HostLines(PacketSink):
    """Prints, before each packet ``decode`` shows, the host events up to its time, on the capture's clock;
    with a display filter, only the events of the XIDs of the packets shown.  Put before the packets' sink."""

    def __init__(self, out: LineWriter, traces: list[TraceFile], clocks: list[HostClock], filtered: bool) -> None:
        super().__init__()
        self.out = out
        self.cursors = [_Cursor(t, c) for t, c in zip(traces, clocks) if c.offset_ns is not None]
        self.filtered = filtered
        self.shown: dict[int, None] = {}
        self._heap: list[tuple[int, int, HostEvent]] = []
        self._seq = 0
        for i, cur in enumerate(self.cursors):
            self._push(i)
        self._pipe: Any = None
        self.last = 0

    def attach(self, pipe: Any) -> None:
        self._pipe = pipe

    def _push(self, i: int) -> None:
        cur = self.cursors[i]
        if cur.next is not None:
            ev = cur.take()
            self._seq += 1
            heapq.heappush(self._heap, (ev.ts, i, ev))

    def packet(self, pkt: Packet) -> None:
        xid = None
        msg = pkt.noted(RPCRDMA)
        if msg is not None:
            xid = msg.xid
            self.shown[xid] = None
            if len(self.shown) > SHOWN_XIDS:
                del self.shown[next(iter(self.shown))]
        self.last = pkt.frame.ts
        self._until(pkt.frame.ts)

    def _until(self, ts: int) -> None:
        heap = self._heap
        lines: list[str] = []
        t0 = self._pipe.t0 if self._pipe is not None and self._pipe.t0 >= 0 else 0
        while heap and heap[0][0] <= ts:
            _t, i, ev = heapq.heappop(heap)
            self._push(i)
            if self.filtered and (ev.xid is None or ev.xid not in self.shown):
                continue
            side = EVENTS[ev.name].side.value
            lines.append(f"host {(ev.ts - t0) / 1e9:12.9f} {side:6} {ev.name}: {event_text(ev)}")
        if lines:
            self.out.block(lines)

    def finish(self) -> None:
        if self.last:
            self._until(self.last + HORIZON_NS)


# --- stats ----------------------------------------------------------------------------------------------
SHARE_SAMPLES: Final = 100_000      # transactions whose latency shares the percentiles are taken over, at most
_SHARES: Final = ("client_send", "server", "wire", "client_reply", "total")


class HostStats:
    """``stats``' sink of the joined transactions: how many, and the percentiles of each share of latency."""

    reads_packets = False
    wants_psn_events = False
    fills_layers = False

    def __init__(self, join: HostJoin) -> None:
        self.join = join
        self.joined = 0
        self.samples: dict[str, list[int]] = {k: [] for k in _SHARES}
        self.host_share: list[float] = []

    def on_record(self, rec: Record) -> None:
        if not isinstance(rec, Transaction) or rec.host is None:
            return
        self.joined += 1
        lat = rec.host.latency
        for k in _SHARES:
            v = lat.get(k)
            if v is not None and len(self.samples[k]) < SHARE_SAMPLES:
                self.samples[k].append(v)
        share = rec.host.host_share
        if share is not None and len(self.host_share) < SHARE_SAMPLES:
            self.host_share.append(share)

    def packet(self, pkt: Packet) -> None:
        pass

    def finish(self) -> None:
        pass

    def record(self) -> JSON:
        def pct(values: list[int]) -> JSON:
            v = sorted(values)
            if not v:
                return {"count": 0, "p50": None, "p90": None, "max": None}
            return {"count": len(v), "p50": v[len(v) // 2], "p90": v[min(len(v) - 1, len(v) * 9 // 10)],
                    "max": v[-1]}
        shares = sorted(self.host_share)
        return {"traces": [host_clock_record(c) for c in self.join.clocks], "transactions": self.joined,
                "latency_ns": {k: pct(self.samples[k]) for k in _SHARES},
                "host_share_p50": shares[len(shares) // 2] if shares else None}


def host_stats_lines(doc: JSON) -> list[str]:
    """``stats``' text of the host traces: each one's clock and reading, the joined transactions' latency shares."""
    clocks = doc["traces"]
    assert isinstance(clocks, list)
    lines = [f"Host traces ({len(clocks)}): {doc['transactions']} transactions joined"]
    for c in clocks:
        assert isinstance(c, dict)
        if c["offset_ns"] is None:
            lines.append(f"  {c['file']}: no XID in common with the capture: not joined ({c['lines']} lines)")
            continue
        lines.append(f"  {c['file']} ({c['form']}): clock offset {_us(c['offset_ns'])} us (range {_us(c['low_ns'])}.."
                     f"{_us(c['high_ns'])} us, spread {_us(c['spread_ns'])} us, over {c['matched']} XIDs)")
        lines.append(f"    {c['lines']:,} lines, {c['events']:,} events, {c['kept']:,} of the kinds joined, "
                     f"{c['unknown']:,} of other kinds, {c['skipped']} lines skipped, {c['lost']} lost by the tracer")
        lines.append(f"    {c['joined']} transactions joined, {c['host_only']} traced by the host only, "
                     f"{c['wire_only']} on the wire only within the trace's span")
    lat = doc["latency_ns"]
    assert isinstance(lat, dict)
    lines.append(f"  {'Latency share':<14}  {'Count':>6}  {'p50 ms':>9}  {'p90 ms':>9}  {'max ms':>9}")
    for k in _SHARES:
        p = lat[k]
        ms = lambda v: "-" if v is None else f"{v / 1e6:.3f}"   # noqa: E731
        lines.append(f"  {k:<14}  {p['count']:>6}  {ms(p['p50']):>9}  {ms(p['p90']):>9}  {ms(p['max']):>9}")
    share = doc["host_share_p50"]
    if isinstance(share, float):
        lines.append(f"  the hosts' share of a transaction's time (median): {float(share) * 100:.0f} %")
    return lines
