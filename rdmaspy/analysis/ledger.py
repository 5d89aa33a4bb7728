"""The data ledger: every advertised piece of memory against the bytes RDMA READ and WRITE moved.

An upper layer's request advertises memory of its sender for the peer's RDMA operations: RPC-over-RDMA
chunk segments (handle, offset, length), NVMe keyed SGL data blocks (key, address, length), iSER's STags
and addresses, SMB Direct's buffer descriptors.  The peer then reads or writes them with RDMA READ /
RDMA WRITE, which name the memory by R_Key or STag (the handle) and address (on iWARP, the tagged
offset).  A ``SegmentLedger`` per connection maps (whose memory, handle) to the open segments; each
READ or WRITE range is cut against them by address range, never by an exact (address, length) match, as
a responder splits one segment into several operations (Linux's ``rdma_rw``): bytes inside count as
used (a union of ranges, so a packet sent again is not counted twice), bytes outside are an overrun or
a touch of memory nobody advertised.  It also remembers the handles a Send with Invalidate invalidated,
until they are advertised again.

A ``DataLedger`` is one connection's: the segment ledger, the RDMA operations in progress (READ requests
waiting for their responses, multi-packet WRITEs and READ responses, iWARP's tagged messages) and what
moved on memory nobody advertised.  The analysis of each upper layer (analysis.correlation) drives it
and reports the breaches by its own rules (``LedgerRules``), with its own sources.
"""
from __future__ import annotations

from ..typenames import Final, mypyc_attr
from .model import Direction, Segment, Side, Step, StepKind, Transaction
from .rules import Rule

_OP_START: Final = -1                  # _mark's frame for an operation's start, not bytes moved
INVALIDATED_KEPT: Final = 4096         # invalidated handles remembered per connection (the oldest goes first)


@mypyc_attr(serializable=True, allow_interpreted_subclasses=True)
class SegmentLedger:
    """The open advertised segments of one connection, by (whose memory, handle), and the handles
    invalidated since they were last advertised."""

    __slots__ = ("by_handle", "invalidated")

    def __init__(self) -> None:
        self.by_handle: dict[tuple[Side, int], list[Segment]] = {}
        self.invalidated: dict[tuple[Side, int], int] = {}     # -> the frame that invalidated it

    def advertise(self, seg: Segment) -> None:
        key: tuple = (seg.side, seg.handle)  # plain tuple: see docs/architecture.md
        lst = self.by_handle.get(key)
        if lst is None:
            self.by_handle[key] = [seg]
        else:
            lst.append(seg)
        if self.invalidated and key in self.invalidated:
            del self.invalidated[key]

    def withdraw(self, seg: Segment) -> None:
        key: tuple = (seg.side, seg.handle)
        by_handle = self.by_handle
        lst = by_handle.get(key)
        if lst is None:
            return
        if len(lst) == 1:
            # The handle's one segment (the most of them): its list goes whole, not emptied first (compiled,
            # ``del`` of a list's item is a generic call through the list's slice assignment)
            if lst[0] is seg:
                del by_handle[key]
            return
        for i, s in enumerate(lst):
            if s is seg:
                del lst[i]
                break
        else:
            return
        if not lst:
            del self.by_handle[key]

    def known(self, side: Side, handle: int) -> bool:
        return (side, handle) in self.by_handle

    def invalidate(self, side: Side, handle: int, frame: int) -> None:
        """A Send with Invalidate invalidated ``handle`` of ``side``'s memory in ``frame``."""
        key: tuple = (side, handle)
        inv = self.invalidated
        if key in inv:
            del inv[key]
        elif len(inv) >= INVALIDATED_KEPT:
            del inv[next(iter(inv))]
        inv[key] = frame

    def invalidated_in(self, side: Side, handle: int) -> int | None:
        """The frame that invalidated ``handle`` (not advertised since), or None."""
        if not self.invalidated:
            return None
        return self.invalidated.get((side, handle))

    def touched(self, side: Side, handle: int, va: int, n: int) -> int:
        """An RDMA operation's start on [va, va + n): each segment it falls in counts one more operation.
        Returns the number of bytes that fall in none of them."""
        return self._mark(side, handle, va, n, _OP_START)

    def moved(self, side: Side, handle: int, va: int, n: int, frame: int) -> int:
        """[va, va + n) counted as moved by ``frame`` in each segment it falls in (``Segment.add``, relative to
        the segment). Returns the number of bytes that fall in none of them."""
        return self._mark(side, handle, va, n, frame)

    def _mark(self, side: Side, handle: int, va: int, n: int, frame: int) -> int:
        # Each segment's overlap with the range marked in place: a list of (segment, start, end) hits made
        # and walked by the caller cost some 1,000 instructions a packet.
        segs = self.by_handle.get((side, handle))
        if not segs or n <= 0:
            return max(n, 0)
        inside = 0
        for s in segs:
            # Relative to the segment: one subtraction of two addresses.  Kernel addresses (0xffff8...)
            # are beyond machine integers compiled, so each operation on them is a Python long's.
            rel = va - s.offset
            lo = rel if rel > 0 else 0
            hi = rel + n
            if hi > s.length:
                hi = s.length
            if lo < hi:
                if frame == _OP_START:
                    s.ops += 1
                else:
                    s.add(lo, hi, frame)
                inside += hi - lo
        return n - inside

    def owner(self, side: Side, handle: int, va: int) -> Segment | None:
        """The segment holding address ``va``; else the handle's most recent segment (an operation
        that starts outside every segment still belongs to the transaction that offered the handle)."""
        segs = self.by_handle.get((side, handle))
        if not segs:
            return None
        for s in segs:
            if s.offset <= va < s.end or (s.length == 0 and va == s.offset):
                return s
        return segs[-1]


@mypyc_attr(serializable=True, allow_interpreted_subclasses=True)
class LedgerRules:
    """The rules an upper layer reports the ledger's breaches by: an operation on memory no open request
    advertised, bytes past an advertised segment (by the segment's kind), an operation on a handle
    invalidated since (None: that upper layer says it as unadvertised)."""

    __slots__ = ("unadvertised", "overrun", "after_invalidate")

    def __init__(self, unadvertised: Rule, overrun: dict[str, Rule], after_invalidate: Rule | None = None) -> None:
        self.unadvertised = unadvertised
        self.overrun = overrun
        self.after_invalidate = after_invalidate


@mypyc_attr(serializable=True, allow_interpreted_subclasses=True)
class Op:
    """An RDMA READ or WRITE in progress."""

    __slots__ = ("txn", "seg", "side", "handle", "cursor", "step", "next_psn", "overrun", "sink_to", "kind")

    def __init__(self, txn: Transaction | None, seg: Segment | None, step: Step | None, kind: StepKind,
                 handle: int, va: int, side: Side) -> None:
        self.txn = txn                # None: no open request advertised the memory it touches
        self.seg = seg
        self.side = side
        self.handle = handle
        self.cursor = va
        self.step = step              # set whenever txn is
        self.next_psn = 0
        self.overrun = False
        self.sink_to = 0
        self.kind = kind              # RDMA_READ or RDMA_WRITE


@mypyc_attr(serializable=True, allow_interpreted_subclasses=True)
class DataLedger:
    """One connection's data ledger and RDMA operations in progress."""

    __slots__ = ("conn_id", "rules", "book", "reads_pending", "read_active", "write_active", "stalled", "iw_reads",
                 "iw_writes", "orphan_ops", "orphan_bytes")

    def __init__(self, conn_id: int, rules: LedgerRules) -> None:
        self.conn_id = conn_id
        self.rules = rules
        self.book = SegmentLedger()
        self.reads_pending: dict[tuple[Direction, int], Op] = {}   # READs waiting for responses, by requester, PSN
        self.read_active: dict[Direction, Op] = {}    # the READ whose responses go on, by responder's direction
        self.write_active: dict[Direction, Op] = {}   # the WRITE whose packets go on, by direction
        # READ responses / WRITEs cut short by a lost packet, by (direction, kind, the PSN they wait for):
        # the packets sent again (go-back-N) continue them, after the operations that started since.
        self.stalled: dict[tuple[Direction, StepKind, int], Op] = {}
        self.iw_reads: dict[tuple[Direction, int], Op] = {}
        self.iw_writes: dict[tuple[Direction, int], Op] = {}
        self.orphan_ops = 0           # RDMA operations on memory no open request advertised, and their bytes
        self.orphan_bytes = 0
