"""Host traces joined to the wire: each transaction gets the events its client and server traced.

``measure_clock`` aligns a trace's clock with the capture's by measurement: over XIDs both saw, the
lower envelope of (wire time - host time) for the events a host traces before the wire carries the
message (the client's ``xprtrdma_post_send`` before the call, the server's ``svcrdma_post_send`` before
the reply) is the offset; the events traced after the wire carried it (``svcrdma_decode_rqst``,
``xprtrdma_reply``) bound it from below.  Each trace file gets its own offset.

``HostJoin`` is a sink of the analysis' records that stands first among the pipeline's sinks: when a
transaction closes, it reads each trace on (in its order, a little past the transaction's end on the
capture's clock), takes the events of the transaction's XID (named by ``hosttrace.resolve``) within its
time, and hangs them on the transaction (``Transaction.host``, a ``HostView``) before the other sinks see
it; it declares and reports the findings only the two sides together show.  The events read are kept in a
window bounded in time and in number (by the memory budget), whatever the trace's size.
"""
from __future__ import annotations

import heapq
from collections import deque
from typing import TYPE_CHECKING, Any, Callable, Final, Iterator

from ..dissectors.rpcrdma import REBUILT, RPCRDMA

from ..hosttrace.events import EVENTS, Side, Stage
from ..hosttrace.parse import HostEvent
from ..hosttrace.resolve import Resolver
from .hostmodel import HostClock, HostView, Registration
from ..packet import Packet
from .model import Connection, Direction, Finding, Record, Step, StepKind, Transaction
from .rpcrdma_facts import PROTOCOL, facts_of
from .rules import declare

if TYPE_CHECKING:
    from ..hosttrace.source import TraceFile      # its readers (gzip, lzma, subprocess): only --host-trace's
    from .analyzer import Analyzer

SOURCE_TRACE: Final = "Linux include/trace/events/rpcrdma.h, sunrpc.h; docs/hosttrace.md"
REGISTRATION_UNUSED: Final = declare(
    "host.registration_unused", "note", "host",
    "the client registered R_Key 0x{handle:08x} ({length} bytes, {chunk} chunk) for XID 0x{rxid:08x} and the "
    "wire never read or wrote it",
    SOURCE_TRACE + " (xprtrdma_mr_fastreg against the wire's RDMA operations)")
ACCESS_AFTER_INVALIDATION: Final = declare(
    "host.access_after_invalidation", "error", "host",
    "RDMA {op} on R_Key 0x{handle:08x} {after_us} us after the client's {how} invalidation of it",
    "RFC 8166 §3.6 (a segment is invalidated when its transaction ends); " + SOURCE_TRACE)
CREDITS_DISAGREE: Final = declare(
    "host.credits_disagree", "warning", "credits",
    "the {side} took {host} credits from XID 0x{rxid:08x} where the wire carried {wire}",
    "RFC 8166 §3.3.1; Linux rpc_rdma.c (the client clamps a grant to 1..max_requests)")
HOST_RETRANSMISSION: Final = declare(
    "host.retransmission", "warning", "host",
    "the client sent call XID 0x{rxid:08x} again (transmission {ntrans}); on the wire before it: {wire}",
    "Linux sunrpc xprt_retransmit; RFC 8166 §3.3.1 (a call is retransmitted after a reconnect)")
HOST_RECONNECT: Final = declare(
    "host.reconnect", "warning", "host",
    "the client connected to {peer} again{qp}; on the wire before it: {wire}",
    "Linux xprtrdma_op_connect / cm_qp_create; RFC 8166 §3.3.1")
COMPLETION_ERROR: Final = declare(
    "host.completion_error", "warning", "host",
    "{count} {event} completion(s) with status {status}; on the wire before them: {wire}",
    "IBTA Vol. 1 §10.8 (work completion status); Linux xprtrdma/svcrdma completion events")
HOST_ONLY: Final = declare(
    "host.not_captured", "warning", "host",
    "the {side} traced XID 0x{rxid:08x} ({event}) and the capture has no such transaction",
    "capture coverage: a host trace against the capture of the same time")
COVERAGE: Final = declare(
    "host.coverage", "note", "host",
    "{trace}: {joined} transactions joined, {host_only} traced by the host only, {wire_only} on the wire only "
    "within the trace's span; clock offset {offset_us} us (range {low_us}..{high_us} us, spread {spread_us} us, "
    "{matched} XIDs)",
    "rdmaspy host trace join (docs/hosttrace.md)")
NO_MATCH: Final = declare(
    "host.no_match", "warning", "host",
    "{trace}: no XID of the trace is in the capture: its events are not joined",
    "rdmaspy host trace join (docs/hosttrace.md)")

HORIZON_NS: Final = 1_000_000_000       # events this long before a transaction's first packet are its ...
AFTER_NS: Final = 5_000_000_000         # ... and this long after its last (a reply lost and sent again comes late)
KEEP_NS: Final = 10_000_000_000         # events older than this behind the wire are let go
EVENTS_KEPT: Final = 256                # events hung on one transaction
EVENT_COST: Final = 1024                # bytes an event kept in the window costs, measured roughly
INCIDENT_WINDOW_NS: Final = 10_000_000  # completion errors this close together are one finding
DISRUPTIONS_KEPT: Final = 4096          # the wire's events kept to explain a host's, the latest
PARKED_XIDS: Final = 4096               # RPCs whose events wait for a transaction past the window
PARKED_EVENTS: Final = 64               # events kept of each
_CALLS: Final = frozenset(("xprtrdma_marshal", "svcrdma_decode_rqst"))   # an RPC over RDMA, by its host
INCIDENTS_KEPT: Final = 4096            # host incidents waiting for the end to be explained
CONNECTIONS_KEPT: Final = 4096
FINDINGS_OF_A_KIND: Final = 64          # host-only XIDs, unused registrations ... reported by finding at most
NFS_CALLS_KEPT: Final = 4096            # the latest calls' NFS arguments (file handle hash, offset, count)
FH_BEFORE_NS: Final = 100_000_000       # a client's nfs_initiate_* this long before the call at most
REORDER_NS: Final = 100_000_000        # how late the resolver gives out an event, at most as a rule
REORDER_HELD: Final = 65536             # events held to put them back in order, at most
CALIBRATION_EVENTS: Final = 2_000_000   # events read at most to measure a clock

_BEFORE_CALL: Final = frozenset(("xprtrdma_post_send", "xprtrdma_marshal"))
_AFTER_CALL: Final = frozenset(("svcrdma_wc_recv", "svcrdma_decode_rqst"))
_BEFORE_REPLY: Final = frozenset(("svcrdma_post_send",))
_AFTER_REPLY: Final = frozenset(("xprtrdma_wc_receive", "xprtrdma_reply"))
# The wire's findings that may explain what a host traced (a retransmission, a reconnect, a failed completion).
_DISRUPTING: Final = frozenset(("sequence", "transaction", "chunk", "checksum", "credits"))
_CHUNK_OF: Final = {"xprtrdma_chunk_read": "read", "xprtrdma_chunk_write": "write",
                    "xprtrdma_chunk_reply": "reply", "xprtrdma_chunk_wp": "wp"}


def resolved(trace: TraceFile) -> Iterator[HostEvent]:
    """The declared events of a trace with their XIDs named, in the order the resolver gives them out."""
    r = Resolver()
    for ev in trace.events():
        yield from r.feed(ev)
    yield from r.flush()


# --- the clock ------------------------------------------------------------------------------------------
def measure_clock(trace: TraceFile, wire: dict[int, tuple[int, int | None]]) -> HostClock:
    """The offset of ``trace``'s clock from the capture's, from ``wire``: XID -> (call time, reply time) of
    transactions of the capture's beginning.  The trace is read until each of them is met (or far enough)."""
    clock = HostClock(trace.path, trace.number, trace.form)
    pairs: dict[int, list[tuple[bool, int]]] = {}   # XID -> (before the wire?, wire - host) of each event
    seen: set[tuple[int, str]] = set()
    twice: set[int] = set()             # an event kind seen twice for an XID: a call sent again, which is unsure
    read = 0
    wanted = len(wire)
    for ev in resolved(trace):
        read += 1
        if read > CALIBRATION_EVENTS:
            break
        x = ev.xid
        if x is None or x not in wire:
            continue
        name = ev.name
        if (x, name) in seen or name == "xprt_retransmit":
            twice.add(x)
            continue
        call, reply = wire[x]
        if name in _BEFORE_CALL:
            pair = (True, call - ev.host_ts)
        elif name in _AFTER_CALL:
            pair = (False, call - ev.host_ts)
        elif reply is not None and name in _BEFORE_REPLY:
            pair = (True, reply - ev.host_ts)
        elif reply is not None and name in _AFTER_REPLY:
            pair = (False, reply - ev.host_ts)
        else:
            continue
        seen.add((x, name))
        pairs.setdefault(x, []).append(pair)
        if len(pairs) >= wanted and len(seen) >= 4 * wanted:
            break
    upper: list[int] = []               # wire - host for events before the wire: offset <= each
    lower: list[int] = []               # wire - host for events after it: offset >= each
    matched = [x for x in pairs if x not in twice]
    for x in matched:
        for before, d in pairs[x]:
            (upper if before else lower).append(d)
    clock.matched = len(matched)
    if upper:
        clock.offset_ns = min(upper)
        clock.high_ns = clock.offset_ns
        ups = sorted(upper)
        clock.spread_ns = ups[len(ups) // 2] - clock.offset_ns
    if lower:
        clock.low_ns = max(lower)
        if clock.offset_ns is None:
            clock.offset_ns = clock.low_ns
            downs = sorted(lower)
            clock.spread_ns = clock.low_ns - downs[len(downs) // 2]
    return clock


# --- the join -------------------------------------------------------------------------------------------
class _Cursor:
    """One trace read on, its events put on the capture's clock and back in time order (the resolver gives
    out an event it held back once a later one names its XID: REORDER_NS later at most, as a rule)."""

    def __init__(self, trace: TraceFile, clock: HostClock) -> None:
        self.trace = trace
        self.clock = clock
        self.offset = clock.offset_ns or 0
        self._events = resolved(trace)
        self._held: list[tuple[int, int, HostEvent]] = []
        self._seq = 0
        self._newest = -1
        self._ended = False
        self.next: HostEvent | None = None
        self._pull()

    def _pull(self) -> None:
        held = self._held
        while not self._ended and len(held) < REORDER_HELD and (not held or held[0][0] > self._newest - REORDER_NS):
            ev = next(self._events, None)
            if ev is None:
                self._ended = True
                break
            self._seq += 1
            heapq.heappush(held, (ev.host_ts, self._seq, ev))
            if ev.host_ts > self._newest:
                self._newest = ev.host_ts
        if not held:
            self.next = None
            return
        ev = heapq.heappop(held)[2]
        ev.ts = ev.host_ts + self.offset
        self.next = ev

    def take(self) -> HostEvent:
        ev = self.next
        assert ev is not None
        self._pull()
        return ev


class _Incident:
    """Something a host traced that the wire should explain (judged at the end, against what the wire showed)."""
    __slots__ = ("rule", "ts", "args", "xid", "count", "key", "qpn")

    def __init__(self, rule: Any, ts: int, args: dict[str, object], xid: int | None, key: str) -> None:
        self.qpn: object = None
        self.rule = rule
        self.ts = ts
        self.args = args
        self.xid = xid
        self.count = 1
        self.key = key


# The NFS arguments of a packet: its file handles' hashes (nfs.fh.hash), offsets and counts.
NfsArgs = Callable[[Packet], tuple[list[int], list[int], list[int]]]


class HostJoin:
    """The analysis' record sink that joins host traces to the transactions (see the module's text).  With
    ``nfs_args`` it reads the packets too: the file handle hash, offset and count of each call, which tie the
    client's ``nfs_initiate_read/write`` (and ``nfs4_read/write``), events without an XID, to it."""

    wants_psn_events = False

    def __init__(self, traces: list[TraceFile], clocks: list[HostClock], budget_limit: int = 256 << 20,
                 nfs_args: NfsArgs | None = None) -> None:
        self.nfs_args = nfs_args
        self.reads_packets = nfs_args is not None
        self.nfs_calls: dict[int, tuple[list[int], list[int], list[int]]] = {}   # XID -> its NFS arguments
        self.by_fh: dict[int, list[HostEvent]] = {}       # events with a file handle hash and no XID
        self.clocks = clocks
        self.cursors = [_Cursor(t, c) for t, c in zip(traces, clocks) if c.offset_ns is not None]
        self.max_events = max(4096, budget_limit // (8 * EVENT_COST))
        self.window: deque[HostEvent] = deque()          # the events read, in the order read
        self.by_xid: dict[int, list[HostEvent]] = {}
        self.by_handle: dict[int, list[HostEvent]] = {}  # registrations and invalidations
        # The events of RPCs no transaction took yet, let go from the window: an unanswered call's transaction
        # closes only at the end (or when its connection does; one left on a connection that ended, when the
        # call sent again on another is answered, or at the end); by XID, the oldest first, PARKED_XIDS at most.
        self.parked: dict[int, list[HostEvent]] = {}
        self.parked_events = 0
        self.wire_now = 0
        self.let_go = 0                                  # events let go before their time (the bound)
        self.incidents: deque[_Incident] = deque()
        self.disruptions: deque[tuple[int, int | None, str]] = deque(maxlen=DISRUPTIONS_KEPT)
        self.connections: dict[int, Connection] = {}     # the snapshots, updated in place by the analysis
        self.reported: dict[str, int] = {}
        self.host_only: dict[int, None] = {}             # XIDs found traced by a host only, lately
        self.connects: dict[int, int] = {}               # trace -> connects seen (the first is no reconnect)
        self.analyzer: Analyzer | None = None
        self._pipe: Any = None

    def attach(self, pipe: Any) -> None:
        self._pipe = pipe
        self.analyzer = pipe.analyzer

    def packet(self, pkt: Packet) -> None:
        """A call's NFS arguments (with ``nfs_args`` only: else no packet is read)."""
        args = self.nfs_args
        if args is None:
            return
        msg = pkt.noted(RPCRDMA) or pkt.noted(REBUILT)
        if msg is None or msg.xid in self.nfs_calls:
            return
        fhs, offsets, counts = args(pkt)
        if fhs:
            self.nfs_calls[msg.xid] = (fhs, offsets, counts)
            if len(self.nfs_calls) > NFS_CALLS_KEPT:
                del self.nfs_calls[next(iter(self.nfs_calls))]

    # -- the analysis' records -------------------------------------------------------------------
    def on_record(self, rec: Record) -> None:
        if isinstance(rec, Transaction) and rec.protocol == PROTOCOL:   # the kernel events are RPC's
            end = _end_of(rec)
            self.wire_now = max(self.wire_now, end)
            self._read(end + AFTER_NS)
            self._join(rec, end)
            self._evict(self.wire_now - KEEP_NS)
        elif isinstance(rec, Connection) and (rec.id in self.connections or len(self.connections) < CONNECTIONS_KEPT):
            self.connections[rec.id] = rec

    def on_finding(self, f: Finding) -> None:
        if f.group not in _DISRUPTING or f.rule_def.id.startswith("host."):
            return
        self._disruption(f.ts, f.frames[0] if f.frames else None, f"{f.rule_def.id} (frame "
                         f"{f.frames[0] if f.frames else '?'})")

    def finish(self) -> None:
        self._read(None)
        self._judge(None)
        self._evict(None)
        for evs in self.parked.values():
            self._unclaimed(evs)
        self.parked.clear()
        self.parked_events = 0
        for c in self.clocks:
            if c.offset_ns is None:
                self._report(NO_MATCH, (), c.first_ts or 0, None, trace=c.path)
                continue
            self._report(COVERAGE, (), c.first_ts or 0, None, trace=c.path, joined=c.joined, host_only=c.host_only,
                         wire_only=c.wire_only, offset_us=_us(c.offset_ns), low_us=_us(c.low_ns),
                         high_us=_us(c.high_ns), spread_us=_us(c.spread_ns), matched=c.matched)

    # -- reading the traces on -------------------------------------------------------------------
    def _read(self, until: int | None) -> None:
        """Read every trace up to ``until`` on the capture's clock (None: to its end)."""
        for cur in self.cursors:
            stats = cur.trace.stats
            while cur.next is not None and (until is None or cur.next.ts <= until):
                ev = cur.take()
                self._keep(ev)
            c = cur.clock
            c.lines, c.events, c.kept, c.skipped, c.lost = (stats.lines, stats.events, stats.kept, stats.skipped,
                                                            stats.lost)
            c.too_long = stats.too_long
            c.unknown = sum(stats.unknown.values())
            if stats.first_ts is not None:
                c.first_ts = stats.first_ts + cur.offset
                c.last_ts = (stats.last_ts or stats.first_ts) + cur.offset

    def _keep(self, ev: HostEvent) -> None:
        self.window.append(ev)
        if ev.xid is not None:
            self.by_xid.setdefault(ev.xid, []).append(ev)
        h = ev.fields.get("handle")
        if isinstance(h, int) and EVENTS[ev.name].stage in (Stage.REGISTER, Stage.INVALIDATE) \
                and ev.name.startswith("xprtrdma_mr_"):
            self.by_handle.setdefault(h, []).append(ev)
        fh = ev.fields.get("fhandle")
        if isinstance(fh, int) and ev.xid is None and self.nfs_args is not None:
            self.by_fh.setdefault(fh, []).append(ev)
        self._notice(ev)
        if len(self.window) > self.max_events:
            self.let_go += 1
            self._drop(self.window.popleft())

    def _evict(self, before: int | None) -> None:
        w = self.window
        while w and (before is None or w[0].ts < before):
            self._drop(w.popleft())

    def _drop(self, ev: HostEvent) -> None:
        x = ev.xid
        if x is not None:
            evs = self.by_xid.get(x)
            if evs is not None:
                if evs and evs[0] is ev:
                    evs.pop(0)
                elif ev in evs:
                    evs.remove(ev)
                if not evs:
                    del self.by_xid[x]
            if not ev.joined and (x in self.parked or ev.name in _CALLS):
                self._park(x, ev)
        h = ev.fields.get("handle")
        if isinstance(h, int):
            hs = self.by_handle.get(h)
            if hs is not None and ev in hs:
                hs.remove(ev)
                if not hs:
                    del self.by_handle[h]
        fh = ev.fields.get("fhandle")
        if isinstance(fh, int) and x is None:
            fs = self.by_fh.get(fh)
            if fs is not None and ev in fs:
                fs.remove(ev)
                if not fs:
                    del self.by_fh[fh]

    def _park(self, x: int, ev: HostEvent) -> None:
        evs = self.parked.get(x)
        if evs is None:
            evs = self.parked[x] = []
        if len(evs) < PARKED_EVENTS:
            evs.append(ev)
            self.parked_events += 1
        # bounded as the window is: in RPCs, and in events (a quarter of the window's)
        while len(self.parked) > PARKED_XIDS or self.parked_events > self.max_events // 4:
            oldest = self.parked.pop(next(iter(self.parked)))
            self.parked_events -= len(oldest)
            self._unclaimed(oldest)

    def _unclaimed(self, evs: list[HostEvent]) -> None:
        """Events of an RPC no transaction took: the capture lost it, if it covers its time."""
        call = next((e for e in evs if e.name in _CALLS and not e.joined), None)
        if call is not None:
            self._host_only(call)

    def _host_only(self, ev: HostEvent) -> None:
        """An RPC the host traced and no transaction took: lost by the capture, if the capture covers its time."""
        pipe = self._pipe
        t0 = pipe.t0 if pipe is not None and pipe.frames else None
        t_last = pipe.t_last if pipe is not None and pipe.frames else None
        if t0 is None or t_last is None or not (t0 <= ev.ts <= t_last):
            return
        assert ev.xid is not None
        if ev.xid in self.host_only:        # the client's marshal and the server's decode: one RPC
            return
        self.host_only[ev.xid] = None
        if len(self.host_only) > DISRUPTIONS_KEPT:
            del self.host_only[next(iter(self.host_only))]
        clock = self.clocks[ev.trace]
        clock.host_only += 1
        side = EVENTS[ev.name].side.value
        assert ev.xid is not None
        self._report(HOST_ONLY, (), ev.ts, ev.xid, kind="host_only", side=side, rxid=ev.xid, event=ev.name)

    # -- incidents: what the host traced that the wire should explain ------------------------------
    def _notice(self, ev: HostEvent) -> None:
        if len(self.incidents) >= INCIDENTS_KEPT:
            return
        name = ev.name
        f = ev.fields
        if name == "xprt_retransmit" and ev.xid is not None:
            self.incidents.append(_Incident(HOST_RETRANSMISSION, ev.ts, {"rxid": ev.xid, "ntrans": f.get("ntrans", "?")},
                                            ev.xid, name))
        elif name == "xprtrdma_op_connect":
            n = self.connects.get(ev.trace, 0)
            self.connects[ev.trace] = n + 1
            if n:
                self.incidents.append(_Incident(HOST_RECONNECT, ev.ts, {"peer": f.get("peer", "?"), "qp": ""},
                                                None, name))
        elif name == "cm_qp_create" and self.incidents and self.incidents[-1].rule is HOST_RECONNECT \
                and not self.incidents[-1].args["qp"] and f.get("dst") == self.incidents[-1].args["peer"]:
            self.incidents[-1].args["qp"] = f" (new QP {f.get('qp_num')})"
            self.incidents[-1].qpn = f.get("qp_num")
        else:
            status = f.get("status")
            if isinstance(status, str) and status != "SUCCESS" and "vendor_err" in EVENTS[name].fields \
                    or name.endswith(("_flush", "_err")) and EVENTS[name].stage in (Stage.RECEIVE, Stage.COMPLETE,
                                                                                    Stage.ERROR) \
                    and "cq_id" in EVENTS[name].fields:
                st = status if isinstance(status, str) else "error"
                last = self.incidents[-1] if self.incidents else None
                key = f"{name}:{st}"
                if last is not None and last.key == key and ev.ts - last.ts <= INCIDENT_WINDOW_NS * last.count:
                    last.count += 1
                    last.args["count"] = last.count
                else:
                    self.incidents.append(_Incident(COMPLETION_ERROR, ev.ts, {"count": 1, "event": name,
                                                                              "status": st}, ev.xid, key))

    def _uncertainty(self) -> int:
        """How far apart two instants may seem on the two clocks: the widest range an offset is known within."""
        width = 0
        for c in self.clocks:
            if c.high_ns is not None and c.low_ns is not None:
                width = max(width, c.high_ns - c.low_ns)
        return width

    def _disruption(self, ts: int, frame: int | None, what: str) -> None:
        self.disruptions.append((ts, frame, what))

    def _judge(self, until: int | None) -> None:
        """The incidents, each with what the wire showed before it (judged at the end: a connection's close
        is known for sure only then)."""
        inc = self.incidents
        slack = self._uncertainty()
        wire_events = sorted(list(self.disruptions) + self._connection_events())
        while inc and (until is None or inc[0].ts <= until):
            i = inc.popleft()
            before = [d for d in wire_events if d[0] <= i.ts + slack and i.ts - d[0] <= 60 * HORIZON_NS]
            wire = "nothing the capture shows"
            frames: tuple[int, ...] = ()
            if before:
                cited = before[-2:]          # the last two: a connection's close, and what came before it
                wire = "; ".join(d[2] for d in cited)
                frames = tuple(d[1] for d in cited if d[1] is not None)
            if i.qpn is not None:
                new = next((c for c in self.connections.values() if c.client.qpn == i.qpn
                            and c.t_start >= i.ts - slack), None)
                if new is not None:
                    i.args["qp"] = f"{i.args['qp']}, connection {new.id} on the wire ({new.state.value})"
            i.args["wire"] = wire
            self._report_args(i.rule, frames, i.ts, i.xid, i.rule.id, None, i.args)

    def _connection_events(self) -> list[tuple[int, int | None, str]]:
        out: list[tuple[int, int | None, str]] = []
        for c in self.connections.values():
            if c.t_closed is not None:
                by = f" by the {c.closed_by.value}" if c.closed_by is not None else ""
                out.append((c.t_closed, None, f"connection {c.id} closed{by}"))
            elif c.state.value == "rejected":
                out.append((c.t_end, None, f"connection {c.id} rejected"))
        return out

    # -- one transaction ---------------------------------------------------------------------------
    def _join(self, t: Transaction, end: int) -> None:
        evs = self.by_xid.get(t.key, [])
        parked = self.parked.get(t.key)
        if parked is not None:
            evs = parked + evs
        if t.response is not None and facts_of(t).reply_error is not None:
            self._disruption(t.response.ts, t.response.frame, f"RDMA_ERROR reply to XID 0x{t.key:08x} (frame "
                             f"{t.response.frame})")
        start, stop = _attempt(t, evs, self._uncertainty())
        mine = [e for e in evs if start <= e.ts < stop and not e.joined and e.ts <= end + AFTER_NS]
        if mine:
            mine += self._by_file(t)
        covered = [c for c in self.clocks if c.first_ts is not None and c.last_ts is not None
                   and c.first_ts <= t.request.ts <= c.last_ts]
        if not mine:
            for c in covered:
                c.wire_only += 1
            return
        for e in mine:
            e.joined = True
        if parked is not None and all(e.joined for e in parked):
            del self.parked[t.key]
            self.parked_events -= len(parked)
        mine.sort(key=lambda e: e.ts)
        view = HostView()
        if len(mine) > EVENTS_KEPT:
            view.dropped = len(mine) - EVENTS_KEPT
        view.events = mine[:EVENTS_KEPT]
        for n in {e.trace for e in mine}:
            self.clocks[n].joined += 1
        self._registrations(t, view, mine)
        self._latency(t, view, mine)
        self._credits(t, view, mine)
        t.host = view

    def _by_file(self, t: Transaction) -> list[HostEvent]:
        """The client's NFS events of the call's file (its handle's hash), offset and count, taken by no other
        call: nfs_initiate_read/write, traced just before the call, and nfs4_read/write, just after the reply,
        carry no XID."""
        args = self.nfs_calls.pop(t.key, None)
        if args is None:
            return []
        fhs, offsets, counts = args
        out: list[HostEvent] = []
        slack = self._uncertainty()
        rep = t.response
        for fh in set(fhs):
            for e in self.by_fh.get(fh, ()):
                if e.name.startswith("nfs_initiate_"):
                    near = t.request.ts - FH_BEFORE_NS <= e.ts <= t.request.ts + slack
                else:
                    near = rep is not None and rep.ts - slack <= e.ts <= rep.ts + FH_BEFORE_NS
                if e.joined or not near:
                    continue
                off, cnt = e.fields.get("offset"), e.fields.get("count")
                if isinstance(off, int) and offsets and off not in offsets:
                    continue
                if isinstance(cnt, int) and counts and cnt not in counts:
                    continue
                out.append(e)
        return out

    def _registrations(self, t: Transaction, view: HostView, evs: list[HostEvent]) -> None:
        regs: dict[int, Registration] = {}
        for e in evs:
            f = e.fields
            h = f.get("handle")
            if not isinstance(h, int) or EVENTS[e.name].side is not Side.CLIENT:
                continue
            chunk = _CHUNK_OF.get(e.name)
            r = regs.get(h)
            if r is None:
                if chunk is None and not e.name.startswith("xprtrdma_mr_"):
                    continue
                r = regs[h] = Registration(h, _int(f.get("offset")), _int(f.get("length")), chunk or "")
            if chunk is not None:
                r.chunk = chunk
            mr = f.get("mr_id")
            if isinstance(mr, int):
                r.mr_id = mr
            if e.name == "xprtrdma_mr_fastreg":
                r.registered_ts = e.ts
            elif e.name == "xprtrdma_mr_localinv" and r.invalidated_ts is None:
                r.invalidated_ts, r.invalidation = e.ts, "local"
            elif e.name == "xprtrdma_mr_reminv" and r.invalidated_ts is None:
                r.invalidated_ts, r.invalidation = e.ts, "remote"
            elif e.name == "xprtrdma_mr_unmap":
                r.unmapped_ts = e.ts
        advertised = {s.handle for s in t.segments}
        for step in t.steps:
            if step.handle is None:
                continue
            r = regs.get(step.handle)
            if r is None:
                continue
            r.operations += 1
            r.bytes += step.bytes or 0
            if step.frames:
                r.frames.append(step.frames[0])
            self._check_access(t, step)
        for r in regs.values():
            r.advertised = r.handle in advertised
            # a segment of 4 bytes or less is Linux's XDR pad: it is there to be left unused
            if r.operations == 0 and r.chunk in ("read", "write", "reply") and r.length > 4:
                frames = (t.request_frame,)
                self._report(REGISTRATION_UNUSED, frames, t.request.ts, t.key, kind="unused", conn=t.conn,
                             handle=r.handle, length=r.length, chunk=r.chunk, rxid=t.key)
        view.registrations = sorted(regs.values(), key=lambda r: (r.registered_ts or 0, r.handle))

    def _check_access(self, t: Transaction, step: Step) -> None:
        """A wire RDMA operation against the client's invalidations of its R_Key traced before it."""
        assert step.handle is not None
        history = self.by_handle.get(step.handle)
        if not history:
            return
        tol = self._uncertainty()
        state: HostEvent | None = None
        for e in history:
            if e.ts < step.ts - tol:
                state = e
        if state is None or state.name not in ("xprtrdma_mr_localinv", "xprtrdma_mr_reminv", "xprtrdma_mr_unmap"):
            return
        how = "remote" if state.name == "xprtrdma_mr_reminv" else "local"
        op = "READ" if step.kind is StepKind.RDMA_READ else "WRITE"
        self._report(ACCESS_AFTER_INVALIDATION, tuple(step.frames[:1]), step.ts, t.key, kind="access",
                     conn=t.conn, op=op, handle=step.handle, how=how, after_us=_us(step.ts - state.ts))

    def _latency(self, t: Transaction, view: HostView, evs: list[HostEvent]) -> None:
        """Where the time went: the client before the wire, the server between call and reply, the client
        after the reply; the rest is the wire's."""
        if t.request_direction is not Direction.C2S or t.response is None:
            return
        call, reply = t.request.ts, t.response.ts
        first: dict[str, int] = {}
        for e in evs:
            first.setdefault(e.name, e.ts)
        lat = view.latency
        marshal = first.get("xprtrdma_marshal")
        if marshal is not None and marshal <= call:
            lat["client_send"] = call - marshal
        srv_in = first.get("svcrdma_wc_recv", first.get("svcrdma_decode_rqst"))
        srv_out = _last(evs, "svcrdma_post_send")
        if srv_in is not None and srv_out is not None and call <= srv_in <= srv_out <= reply:
            lat["server"] = srv_out - srv_in
        handled = first.get("xprtrdma_reply")
        if handled is not None and handled >= reply:
            lat["client_reply"] = handled - reply
        lat["wire"] = reply - call - lat.get("server", 0)
        lat["total"] = lat.get("client_send", 0) + (reply - call) + lat.get("client_reply", 0)

    def _credits(self, t: Transaction, view: HostView, evs: list[HostEvent]) -> None:
        for e in evs:
            if e.name == "xprt_get_cong":
                cwnd = e.fields.get("cwnd")
                if isinstance(cwnd, int) and view.cwnd is None:
                    view.cwnd = cwnd >> 8           # RPC_CWNDSHIFT: a credit is 256 units of the window
                if e.fields.get("wait") == 1:
                    view.credit_waits += 1
            c = e.fields.get("credits")
            if not isinstance(c, int):
                continue
            if e.name == "xprtrdma_reply" and view.credits_host is None:
                view.credits_host = c
            elif e.name == "svcrdma_decode_rqst" and view.credits_server is None:
                view.credits_server = c
        if t.request_direction is not Direction.C2S or facts_of(t).version != 1:
            return                      # a backchannel's credits are another ledger
        rep = t.response
        facts = facts_of(t)
        wire = facts.reply_credits
        if rep is not None and view.credits_host is not None and facts.reply_error is None and wire is not None:
            expected = min(max(wire, 1), max(facts.call_credits, 1))
            if view.credits_host != expected:
                self._report(CREDITS_DISAGREE, (rep.frame,), rep.ts, t.key, kind="credits", conn=t.conn,
                             side="client", host=view.credits_host, wire=wire, rxid=t.key)
        if view.credits_server is not None and view.credits_server != facts.call_credits:
            self._report(CREDITS_DISAGREE, (t.request_frame,), t.request.ts, t.key, kind="credits", conn=t.conn,
                         side="server", host=view.credits_server, wire=facts.call_credits, rxid=t.key)

    # -- reporting -------------------------------------------------------------------------------
    def _report(self, rule: Any, frames: tuple[int, ...], ts: int, xid: int | None, kind: str = "",
                conn: int | None = None, **args: object) -> None:
        self._report_args(rule, frames, ts, xid, kind, conn, args)

    def _report_args(self, rule: Any, frames: tuple[int, ...], ts: int, xid: int | None, kind: str,
                     conn: int | None, args: dict[str, object]) -> None:
        an = self.analyzer
        if an is None:
            return
        key = kind or rule.id
        n = self.reported.get(key, 0)
        self.reported[key] = n + 1
        if n >= FINDINGS_OF_A_KIND and rule is not COVERAGE and rule is not NO_MATCH:
            return
        an.report_args(rule, frames, ts, conn, xid, None, dict(args))


def _attempt(t: Transaction, evs: list[HostEvent], slack: int) -> tuple[int, int]:
    """The time of a transaction's own sending of its XID.  A call sent again (``xprt_retransmit``, or the
    client's marshal of it again: a retry after an RDMA_ERROR, a new connection) starts another attempt,
    from its first event (the registrations before the marshal); another transaction of the same XID on
    the wire is the other attempt's."""
    start, stop = t.request.ts - HORIZON_NS, 1 << 63
    if t.request.retransmissions:
        return start, stop              # the wire's resendings are this transaction's: so are the host's
    for b in _boundaries(evs):
        if b <= t.request.ts + slack:
            start = max(start, b)
        else:
            stop = min(stop, b)
    return start, stop


def _boundaries(evs: list[HostEvent]) -> list[int]:
    """Where the client's attempts at sending one XID begin, but the first."""
    client = sorted((e for e in evs if EVENTS[e.name].side is Side.CLIENT), key=lambda e: e.ts)
    out: list[int] = []
    marshals = 0
    for i, e in enumerate(client):
        if e.name != "xprtrdma_marshal":
            continue
        marshals += 1
        if marshals == 1:
            continue
        j = i
        while j > 0 and EVENTS[client[j - 1].name].stage in (Stage.REGISTER, Stage.RETRANSMIT, Stage.CREDITS) \
                and client[j - 1].name != "xprtrdma_mr_fastreg":
            j -= 1
        out.append(client[j].ts)
    return out


def _end_of(t: Transaction) -> int:
    end = t.response.ts if t.response is not None else t.request.ts
    for s in t.steps:
        if s.ts > end:
            end = s.ts
    return end


def _last(evs: list[HostEvent], name: str) -> int | None:
    for e in reversed(evs):
        if e.name == name:
            return e.ts
    return None


def _int(v: object) -> int:
    return v if isinstance(v, int) else 0


def _us(ns: int | None) -> str:
    return "?" if ns is None else f"{ns / 1000:.1f}"

