"""What the analysis views read, kept on disk with a small index in memory: the TUI's analysis sink.

The analysis of a big capture emits a transaction every few frames and a finding every other
frame; kept as objects they took most of the memory of a million-frame capture.  So, like the
packet list's rows, they are spooled (``RecordSpool``) as they come and read back when a view shows
them, and the numbers the views count and sort by are in ``SpooledArray``s (their last block in
memory, the rest on disk), so that memory does not grow with the capture:

- transactions: the offset of each, its connection and latency; a row is unpickled when drawn (a
  few hundred are cached).  Segments are rows of their transaction (its number and the place).
- findings (the analysis' and the dissectors'): the offset, frame and group of each, in the order
  they were reported; a group is a severity, rule and connection, and the expert view's counts
  are the groups' sizes, kept in memory.  Credit findings are indexed a second time, for the
  credits view.
- credit samples: the offsets of the pieces of each series, and per series its count, time span,
  range of grants and peak outstanding; the chart reads its series back when shown.
- connections and the per-connection summaries, which are few, as objects.

PSN events are not kept: the analysis also reports each as a finding, which the expert view shows.
Written by the background pass's thread, read by the UI's: an index entry is appended only after
its record is in the spool, and the UI reads the arrays' lengths before their items.
"""
from __future__ import annotations

import threading
from array import array
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Callable, Generic, Iterator, NamedTuple, TypeVar

from ..analysis.model import (CallDirection, Connection, CreditSeries, Finding, Record, RpcRdmaSummary, Segment,
                              Transaction)
from ..packet import Packet
from .spool import RecordSpool, SpooledArray, SpoolDir

NO_LATENCY = -(1 << 63)         # a transaction without a reply
NO_CONNECTION = -1
_CACHED = 512                   # unpickled transactions kept for the rows on screen
T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Entry:
    """One finding as the views list it (the analysis' or a dissector's)."""
    severity: str
    rule: str           # the rule's id (dissector items without one: their group)
    group: str
    frame: int
    conn: int | None
    text: str
    ts: int


class Point(NamedTuple):
    """One credit sample as the chart draws it."""
    ts: int
    granted: int | None
    outstanding: int


@dataclass(slots=True)
class FindingGroup:
    """The findings of one severity, rule and connection: how many, and their number in the store."""
    severity: str
    rule: str
    conn: int | None
    group: str
    number: int
    count: int = 0


@dataclass(slots=True)
class CreditTrack:
    """One direction of calls on one connection: where its samples are, and what they add up to."""
    pieces: array = field(default_factory=lambda: array("Q"))
    count: int = 0
    first_ts: int = 0
    last_ts: int = 0
    granted_min: int | None = None
    granted_max: int | None = None
    peak: int = 0


class AnalysisStore:
    """The analysis views' model: a pipeline sink (``on_record``, ``on_finding``, ``packet``)."""

    wants_psn_events = False    # the views show transactions, credits, connections, findings

    def __init__(self, directory: SpoolDir) -> None:
        self.spool = RecordSpool(directory, "rdmaspy-records-")
        self.connections: dict[int, Connection] = {}
        self.rpcrdma: dict[int, RpcRdmaSummary] = {}
        self.transactions = TransactionIndex(self.spool, directory)
        self.findings: dict[tuple[str, str, int], FindingGroup] = {}
        self.finding_offsets = SpooledArray(directory, "Q")     # finding i: where it is on the spool,
        self.finding_frames = SpooledArray(directory, "I")      # its first frame,
        self.finding_groups = SpooledArray(directory, "I")      # its group's number
        self.credit_offsets = SpooledArray(directory, "Q")      # the credit findings again: where,
        self.credit_conns = SpooledArray(directory, "i")        # and their connection
        self.finding_count = 0
        self.credits: dict[tuple[int, CallDirection], CreditTrack] = {}
        # --host-trace: per connection, the credits the client took from the replies (xprtrdma_reply): low, high,
        # and the calls that waited for the client's congestion window
        self.host_credits: dict[int, tuple[int, int]] = {}
        self.credit_waits: dict[int, int] = {}
        self._lock = threading.Lock()      # the dicts grow on the writer thread; views copy them under it

    # -- the sink (the background pass's thread) ----------------------------------------------------
    def on_record(self, rec: Record) -> None:
        if isinstance(rec, Transaction):
            self.transactions.add(rec)
            host = rec.host
            if host is not None and host.credit_waits:
                self.credit_waits[rec.conn] = self.credit_waits.get(rec.conn, 0) + 1
            if host is not None and host.credits_host is not None:
                low, high = self.host_credits.get(rec.conn, (host.credits_host, host.credits_host))
                self.host_credits[rec.conn] = (min(low, host.credits_host), max(high, host.credits_host))
        elif isinstance(rec, CreditSeries):
            self._credits(rec)
        elif isinstance(rec, Connection):
            with self._lock:
                self.connections[rec.id] = rec
        elif isinstance(rec, RpcRdmaSummary):
            with self._lock:
                self.rpcrdma[rec.conn] = rec

    def on_finding(self, f: Finding) -> None:
        self._entry(Entry(f.severity, f.rule_def.id, f.group, f.frames[0] if f.frames else 0, f.conn, f.text, f.ts))

    def packet(self, pkt: Packet) -> None:
        """The dissectors' expert items of a packet (the analysis' come through ``on_finding``)."""
        items = pkt.expert
        if not items:
            return
        conn = getattr(pkt.conv, "conn_id", None)
        for item in items:
            if isinstance(item, Finding):
                continue
            rule = item.rule or item.source or item.group
            self._entry(Entry(item.severity, rule, item.group, pkt.frame.num, conn, item.text, pkt.frame.ts))

    def finish(self) -> None:
        self.spool.flush()

    def _entry(self, e: Entry) -> None:
        conn = NO_CONNECTION if e.conn is None else e.conn
        key = (e.severity, e.rule, conn)
        group = self.findings.get(key)
        if group is None:
            with self._lock:
                group = self.findings[key] = FindingGroup(e.severity, e.rule, e.conn, e.group, len(self.findings))
        offset = self.spool.add(e)
        if e.group == "credits":
            self.credit_offsets.append(offset)
            self.credit_conns.append(conn)
        self.finding_frames.append(e.frame)
        self.finding_groups.append(group.number)
        self.finding_offsets.append(offset)
        group.count += 1
        self.finding_count += 1

    def _credits(self, rec: CreditSeries) -> None:
        samples = rec.samples
        if not samples:
            return
        key = (rec.conn, rec.direction)
        track = self.credits.get(key)
        if track is None:
            track = CreditTrack(first_ts=samples[0].ts)
        offset = self.spool.add([(s.ts, s.granted, s.outstanding) for s in samples])
        grants = [s.granted for s in samples if s.granted is not None]
        if grants:
            low, high = min(grants), max(grants)
            track.granted_min = low if track.granted_min is None else min(track.granted_min, low)
            track.granted_max = high if track.granted_max is None else max(track.granted_max, high)
        track.peak = max(track.peak, max(s.outstanding for s in samples))
        track.last_ts = samples[-1].ts
        track.pieces.append(offset)
        track.count += len(samples)
        if key not in self.credits:
            with self._lock:
                self.credits[key] = track

    # -- the views (the UI's thread) ----------------------------------------------------------------
    def connection_list(self) -> list[Connection]:
        with self._lock:
            return [self.connections[k] for k in sorted(self.connections)]

    def summaries(self) -> list[tuple[int, RpcRdmaSummary]]:
        with self._lock:
            return list(self.rpcrdma.items())

    def groups(self) -> list[FindingGroup]:
        with self._lock:
            return list(self.findings.values())

    def findings_of(self, numbers: set[int], start: int = 0) -> Iterator[tuple[int, int]]:
        """(position, spool offset) of each finding of the groups ``numbers``, in the order they were
        reported, from position ``start`` on."""
        offsets, groups = self.finding_offsets, self.finding_groups
        n = len(offsets)
        for i in range(start, n):
            if groups[i] in numbers:
                yield i, offsets[i]

    def credit_findings(self, admits: Callable[[int | None], bool]) -> array:
        """The spool offsets of the credit findings of the connections ``admits`` lets through."""
        offsets, conns = self.credit_offsets, self.credit_conns
        n = len(offsets)
        out = array("Q")
        for i in range(n):
            c = conns[i]
            if admits(None if c == NO_CONNECTION else c):
                out.append(offsets[i])
        return out

    def credit_tracks(self) -> list[tuple[tuple[int, CallDirection], CreditTrack]]:
        with self._lock:
            return list(self.credits.items())

    def entry(self, offset: int) -> Entry:
        e = self.spool.get(offset)
        assert isinstance(e, Entry)
        return e

    def samples(self, track: CreditTrack) -> Iterator[Point]:
        """The samples of a credit series, in time order, read back from the spool."""
        for i in range(len(track.pieces)):
            piece = self.spool.get(track.pieces[i])
            assert isinstance(piece, list)
            for ts, granted, outstanding in piece:
                yield Point(ts, granted, outstanding)

    def close(self) -> None:
        self.spool.close()
        self.transactions.close()
        for a in (self.finding_offsets, self.finding_frames, self.finding_groups, self.credit_offsets,
                  self.credit_conns):
            a.close()


class TransactionIndex:
    """Every transaction, in the order the analysis closed them: on the spool, indexed in memory."""

    def __init__(self, spool: RecordSpool, directory: SpoolDir) -> None:
        self.spool = spool
        self.offsets = SpooledArray(directory, "Q")
        self.conns = SpooledArray(directory, "i")
        self.latencies = SpooledArray(directory, "q")
        self.seg_txn = SpooledArray(directory, "I")      # segment i: its transaction's number ...
        self.seg_pos = SpooledArray(directory, "I")      # ... and its place among the transaction's segments
        self.seg_states: dict[int, dict[str, int]] = {}   # connection -> segment state -> count
        self._cache: OrderedDict[int, Transaction] = OrderedDict()
        self._cache_lock = threading.Lock()

    def __len__(self) -> int:
        return len(self.offsets)

    @property
    def segments(self) -> int:
        return len(self.seg_txn)

    def add(self, t: Transaction) -> None:
        n = len(self.offsets)
        offset = self.spool.add(t)
        for pos, s in enumerate(t.segments):
            states = self.seg_states.get(t.conn)
            if states is None:
                states = self.seg_states[t.conn] = {}
            states[s.state.value] = states.get(s.state.value, 0) + 1
            self.seg_txn.append(n)
            self.seg_pos.append(pos)
        self.conns.append(t.conn)
        lat = t.latency_ns
        self.latencies.append(NO_LATENCY if lat is None else lat)
        self.offsets.append(offset)          # last: the transaction is readable once it is counted

    def get(self, i: int) -> Transaction:
        with self._cache_lock:
            hit = self._cache.get(i)
            if hit is not None:
                self._cache.move_to_end(i)
                return hit
        t = self.spool.get(self.offsets[i])
        assert isinstance(t, Transaction)
        with self._cache_lock:
            self._cache[i] = t
            while len(self._cache) > _CACHED:
                self._cache.popitem(last=False)
        return t

    def segment(self, i: int) -> Segment:
        return self.get(self.seg_txn[i]).segments[self.seg_pos[i]]

    def close(self) -> None:
        for a in (self.offsets, self.conns, self.latencies, self.seg_txn, self.seg_pos):
            a.close()


class Rows(Generic[T]):
    """A view's rows: numbers into a store's index (all of them, or those of one connection), each
    read back as its record when asked for; a sequence, as the views and tests use a list."""

    def __init__(self, numbers: array | range | SpooledArray, read: Callable[[int], T]) -> None:
        self.numbers = numbers
        self._read = read

    def __len__(self) -> int:
        return len(self.numbers)

    def __getitem__(self, i: int) -> T:
        return self._read(self.numbers[i])

    def __iter__(self) -> Iterator[T]:
        for n in self.numbers:
            yield self._read(n)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, list):
            return list(self) == other
        return NotImplemented

    __hash__ = None      # type: ignore[assignment]

