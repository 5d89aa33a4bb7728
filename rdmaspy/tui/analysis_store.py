"""What the analysis views read, kept on disk with a small index in memory: the TUI's analysis sink.

The analysis of a big capture emits a transaction every few frames and a finding every other
frame; kept as objects they took most of the memory of a million-frame capture.  So, like the
packet list's rows, they are spooled (``RecordSpool``) as they come and read back when a view shows
them, and the numbers the views count and sort by are in ``SpooledArray``s (their last block in
memory, the rest on disk), so that memory does not grow with the capture:

- transactions: the offset of each, its connection and latency; a row is read back when drawn (a
  few hundred are cached).  Segments are rows of their transaction (its number and the place).
- findings (the analysis' and the dissectors'): the offset and group of each, in the order they
  were reported (marshalled by blocks, as transactions are: a block's offset and a place in it),
  with its frame, by which a rule's are listed; a group is a severity, rule and connection, and the expert view's counts
  are the groups' sizes, kept in memory.  Credit findings are indexed a second time, for the
  credits view.
- credit samples: the offsets of the pieces of each series, and per series its count, time span,
  range of grants and peak outstanding; the chart reads its series back when shown.
- connections and the per-connection summaries, which are few, as objects;
- the colour severity of every frame (a byte each), which the packet list's rows take on (index.py).

PSN events are not kept: the analysis also reports each as a finding, which the expert view shows.
Written by the background pass's thread, read by the UI's: an index entry is appended only after
its record is in the spool, and the UI reads the arrays' lengths before their items.
"""
from __future__ import annotations

import threading
import time
from array import array
from collections import Counter, OrderedDict
from dataclasses import dataclass, field
from heapq import heappush, heapreplace
from typing import Callable, Generic, Iterator, NamedTuple, TypeVar, cast

from ..analysis.model import (CallDirection, Connection, CreditSeries, Finding, Record, UlpSummary, Segment,
                              Transaction, transaction_from_record, transaction_record)
from ..output.sinks import NO_CONNECTION, FindingRow, FindingRows, SeveritySink
from ..packet import Packet
from ..rules import rule_declared
from .spool import RecordSpool, SpooledArray, SpoolDir

NO_LATENCY = -(1 << 63)         # a transaction without a reply
_CACHED = 512                   # transactions read back, kept for the rows on screen
_ENTRY_BLOCK = 256              # findings marshalled together (one record each costs some twice the time)
_PLACE_BITS = 12                # a finding's offset: its block's spool offset << 12 | its place in it
_PLACE_MASK = (1 << _PLACE_BITS) - 1
_BLOCKS_CACHED = 8              # blocks of findings read back, kept for the rows on screen
_PENDING_SECONDS = 0.25         # findings and transactions wait at most this long to be counted
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


# a finding as spooled: Entry's fields in order, the text as it is made: a dissector's item's text, or the
# values an analysis rule's message is made from (rendered when the finding is read back, as ``Finding.text``)
EntryRow = FindingRow


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
    reads_packets = False       # its per-packet part is ``sink()``, compiled

    def __init__(self, directory: SpoolDir) -> None:
        self.spool = RecordSpool(directory, "rdmaspy-records-")
        self.connections: dict[int, Connection] = {}
        self.summary_of: dict[int, UlpSummary] = {}
        self.transactions = TransactionIndex(self.spool, directory)
        self.findings: dict[tuple[str, str, int], FindingGroup] = {}
        self.finding_offsets = SpooledArray(directory, "Q")     # finding i: where it is on the spool,
        self.finding_groups = SpooledArray(directory, "I")      # and its group's number
        self.finding_frames = SpooledArray(directory, "I")      # and its frame (a rule's are listed by it)
        self.credit_offsets = SpooledArray(directory, "Q")      # the credit findings again: where,
        self.credit_conns = SpooledArray(directory, "i")        # and their connection
        self.finding_count = 0
        self._groups: list[FindingGroup] = []                   # by number
        # the findings as rows (compiled), a block at a time onto the spool (one pickle each costs some twice)
        self._rows = FindingRows(self._spool_findings, self._new_group, _ENTRY_BLOCK, _PENDING_SECONDS)
        self._blocks: OrderedDict[int, list[EntryRow]] = OrderedDict()   # entry blocks read back
        self._blocks_lock = threading.Lock()
        self.credits: dict[tuple[int, CallDirection], CreditTrack] = {}
        # --host-trace: per connection, the credits the client took from the replies (xprtrdma_reply): low, high,
        # and the calls that waited for the client's congestion window
        self.host_credits: dict[int, tuple[int, int]] = {}
        self.credit_waits: dict[int, int] = {}
        self.severities = SpooledArray(directory, "B", 65536)   # each frame's colour severity (sink())
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
        elif isinstance(rec, UlpSummary):
            with self._lock:
                self.summary_of[rec.conn] = rec

    @property
    def on_finding(self) -> Callable[[Finding], None]:
        """The analysis' findings go straight to the compiled rows (a call through Python cost thousands of
        instructions a finding)."""
        return self._rows.on_finding

    def sink(self) -> SeveritySink:
        """The pipeline's per-packet sink of the store: each packet's colour severity into ``severities``
        (the packet list's rows come from a pass without the analysis, whose findings colour them), and
        the dissectors' expert items (the analysis' come through ``on_finding``)."""
        return SeveritySink(self.severities.extend_bytes, self.dissector_items)

    def dissector_items(self, pkt: Packet) -> None:
        items = pkt.expert
        if not items:
            return
        conn = getattr(pkt.conv, "conn_id", None)
        for item in items:
            if isinstance(item, Finding):
                continue
            rule = item.rule or item.source or item.group
            self._rows.add(item.severity, rule, item.group, pkt.frame.num, conn, item.text, pkt.frame.ts)

    def flush(self) -> None:
        """The pipeline waits for input (live mode): what is pending becomes readable."""
        self.transactions.flush()
        self._rows.flush()
        self.spool.flush()

    def finish(self) -> None:
        self.flush()
        self.transactions.let_go()

    def _new_group(self, severity: str, rule: str, conn: int | None, group_name: str) -> int:
        with self._lock:
            number = len(self._groups)
            group = FindingGroup(severity, rule, conn, group_name, number)
            self._groups.append(group)
            self.findings[(severity, rule, NO_CONNECTION if conn is None else conn)] = group
        return number

    def _spool_findings(self, rows: list[EntryRow], numbers: list[int], credit_places: list[int],
                        credit_conns: list[int]) -> None:
        """Put a block of findings on the spool and count them (``FindingRows``' ``emit``)."""
        offset = self.spool.add_plain(rows) << _PLACE_BITS
        groups = self._groups
        for number, count in Counter(numbers).items():
            groups[number].count += count
        # the numbers a reader looks up before the offsets it counts by (it reads their length first)
        if credit_places:
            self.credit_conns.extend_bytes(array("i", credit_conns).tobytes())
            self.credit_offsets.extend_bytes(array("Q", [offset | p for p in credit_places]).tobytes())
        self.finding_frames.extend_bytes(array("I", [row[3] for row in rows]).tobytes())
        self.finding_groups.extend_bytes(array("I", numbers).tobytes())
        self.finding_offsets.extend_bytes(array("Q", range(offset, offset + len(rows))).tobytes())
        self.finding_count += len(rows)

    def _credits(self, rec: CreditSeries) -> None:
        samples = rec.samples
        if not samples:
            return
        key = (rec.conn, rec.direction)
        track = self.credits.get(key)
        if track is None:
            track = CreditTrack(first_ts=samples[0].ts)
        offset = self.spool.add_plain([(s.ts, s.granted, s.outstanding) for s in samples])
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

    def summaries(self) -> list[tuple[int, UlpSummary]]:
        with self._lock:
            return list(self.summary_of.items())

    def groups(self) -> list[FindingGroup]:
        with self._lock:
            return list(self.findings.values())

    def findings_of(self, numbers: set[int]) -> Iterator[tuple[int, int]]:
        """(position, spool offset) of each finding of the groups ``numbers``, in the order they were
        reported."""
        offsets, groups = self.finding_offsets, self.finding_groups
        for i, number, offset in zip(range(len(offsets)), groups, offsets):
            if number in numbers:
                yield i, offset

    def findings_by_frame(self, numbers: set[int], after: tuple[int, int] = (-1, -1),
                          most: int = 500) -> list[tuple[int, int, int]]:
        """The first ``most`` findings of the groups ``numbers`` after ``after`` (a frame and a position), by
        frame and then in the order they were reported: (frame, position, spool offset) of each.

        The analysis reports some findings late (a PSN is known lost only once the packets after it came, a
        call unanswered only at the end), so the reported order is not the frames'.  One pass over the
        findings keeps the smallest ``most`` in a heap: what a page costs to find, and no more memory than a
        page, however many findings a rule has."""
        frames, groups, offsets = self.finding_frames, self.finding_groups, self.finding_offsets
        n = min(len(frames), len(groups), len(offsets))
        after_frame, after_pos = after
        heap: list[tuple[int, int]] = []        # (-frame, -position): the last of those kept on top
        # the arrays read a block at a time (an item at a time, each a look-up of its block: 3 times slower)
        for i, number, frame in zip(range(n), groups, frames):
            if number not in numbers:
                continue
            if frame < after_frame or (frame == after_frame and i <= after_pos):
                continue
            if len(heap) < most:
                heappush(heap, (-frame, -i))
            elif (-frame, -i) > heap[0]:
                heapreplace(heap, (-frame, -i))
        kept = sorted((-f, -p) for f, p in heap)
        return [(f, p, offsets[p]) for f, p in kept]

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
        """The finding at ``offset`` (as ``finding_offsets`` and ``credit_findings`` give it)."""
        at = offset >> _PLACE_BITS
        with self._blocks_lock:
            block = self._blocks.get(at)
            if block is not None:
                self._blocks.move_to_end(at)
        if block is None:
            read = self.spool.get(at)
            assert isinstance(read, list)
            block = cast("list[EntryRow]", read)
            with self._blocks_lock:
                self._blocks[at] = block
                while len(self._blocks) > _BLOCKS_CACHED:
                    self._blocks.popitem(last=False)
        severity, rule, group, frame, conn, text, ts = block[offset & _PLACE_MASK]
        if not isinstance(text, str):
            text = rule_declared(rule).text(text)
        return Entry(severity, rule, group, frame, conn, text, ts)

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
        for a in (self.finding_offsets, self.finding_groups, self.finding_frames, self.credit_offsets,
                  self.credit_conns, self.severities):
            a.close()


class TransactionIndex:
    """Every transaction, in the order the analysis closed them: on the spool, indexed in memory.

    They are spooled a block at a time (``BLOCK`` of them, or fewer at ``flush``), each as its record
    (``transaction_record``: plain values), which marshal writes (pickle where a record holds an object:
    a segment of another transaction, host views), and made again when its block is read back.  A
    transaction is counted (readable) once its block is on the spool."""

    BLOCK = 32

    def __init__(self, spool: RecordSpool, directory: SpoolDir) -> None:
        self.spool = spool
        self.offsets = SpooledArray(directory, "Q")      # transaction i: its block's offset << 6 | its place
        self.conns = SpooledArray(directory, "i")
        self.latencies = SpooledArray(directory, "q")
        self.seg_txn = SpooledArray(directory, "I")      # segment i: its transaction's number ...
        self.seg_pos = SpooledArray(directory, "I")      # ... and its place among the transaction's segments
        self.seg_states: dict[int, dict[str, int]] = {}   # connection -> segment state -> count
        self.protocols: dict[int, set[str]] = {}           # connection -> the upper layers of its transactions
        self._pending: list[Transaction] = []
        self._owned: list[Segment] = []      # the segments of the last block put on the spool (``let_go``)
        self._pending_at = time.monotonic()
        self._cache: OrderedDict[int, Transaction] = OrderedDict()
        self._cache_lock = threading.Lock()

    def __len__(self) -> int:
        return len(self.offsets)

    @property
    def segments(self) -> int:
        return len(self.seg_txn)

    def protocols_of(self, conn: int | None) -> set[str]:
        """The upper layers of connection ``conn``'s transactions (None: of every connection's)."""
        if conn is not None:
            return set(self.protocols.get(conn, ()))
        return {p for ps in list(self.protocols.values()) for p in list(ps)}

    def add(self, t: Transaction) -> None:
        self._pending.append(t)
        if len(self._pending) >= self.BLOCK or time.monotonic() - self._pending_at >= _PENDING_SECONDS:
            self.flush()

    def flush(self) -> None:
        """Put the transactions still pending on the spool and count them."""
        self._pending_at = time.monotonic()
        block = self._pending
        if not block:
            return
        self._pending = []
        offset = self.spool.add_plain([transaction_record(t) for t in block])
        first = len(self.offsets)
        self.let_go()
        owned = self._owned
        seg_txn, seg_pos = array("I"), array("I")
        conns, latencies = array("i"), array("q")
        for n, t in enumerate(block, first):
            conn = t.conn
            states = self.seg_states.get(conn)
            if states is None:
                states = self.seg_states[conn] = {}
                self.protocols[conn] = set()
            self.protocols[conn].add(t.protocol)
            for pos, seg in enumerate(t.segments):
                state = str(seg.state)
                states[state] = states.get(state, 0) + 1
                seg_txn.append(n)
                seg_pos.append(pos)
                if seg.transaction is t:
                    owned.append(seg)
            conns.append(conn)
            lat = t.latency_ns
            latencies.append(NO_LATENCY if lat is None else lat)
        # a reader goes by the counts (offsets, seg_txn) and then reads the rest: what a count lets it read
        # is there before the count grows
        self.conns.extend_bytes(conns.tobytes())
        self.latencies.extend_bytes(latencies.tobytes())
        self.offsets.extend_bytes(array("Q", range(offset << 6, (offset << 6) + len(block))).tobytes())
        if seg_txn:
            self.seg_pos.extend_bytes(seg_pos.tobytes())
            self.seg_txn.extend_bytes(seg_txn.tobytes())

    def let_go(self) -> None:
        """Break the cycles of the last block put on the spool (every sink has had its transactions since):
        a view reads a transaction made again from its record, and a segment pointing back at its
        transaction kept it alive until the collector walked it, as garbage (decode and stats break them
        when the analysis hands a transaction on: ``Correlator.hand_on``).  The segments pointing back at
        their transaction were listed as the block was indexed (``flush``)."""
        for seg in self._owned:
            seg.transaction = None
        self._owned = []

    def get(self, i: int) -> Transaction:
        with self._cache_lock:
            hit = self._cache.get(i)
            if hit is not None:
                self._cache.move_to_end(i)
                return hit
        where = self.offsets[i]
        records = self.spool.get(where >> 6)
        assert isinstance(records, list)
        block = [transaction_from_record(r) for r in records]
        first = i - (where & 0x3F)
        with self._cache_lock:
            for place, t in enumerate(block):
                self._cache[first + place] = t
                self._cache.move_to_end(first + place)
            while len(self._cache) > _CACHED:
                self._cache.popitem(last=False)
        t = block[where & 0x3F]
        assert isinstance(t, Transaction)
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

