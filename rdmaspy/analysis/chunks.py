"""Chunk accounting: every advertised RDMA segment against the bytes RDMA READ and WRITE moved.

RPC-over-RDMA messages advertise segments (handle, offset, length) of the sender's memory: a
call's Read list, Write list and Reply chunk, and (seeds/001) a reply's Position Zero Read chunk.
The peer then reads or writes them with RDMA READ / RDMA WRITE, which name the memory by R_Key
(the handle) and virtual address (the offset).  A ``ChunkBook`` per connection maps (side,
handle) to the open segments; each READ or WRITE range is cut against them: bytes inside count as
used (a union of ranges, so a retransmitted packet is not counted twice), bytes outside are an
overrun (writes past a segment: seeds/001's connection-killing case) or a touch of memory nobody
advertised.  A segment (``model.Segment``) ends as full, partial, unused or overrun when its
transaction closes.

This module holds the accounting and declares its rules; the transactions module drives it.
"""
from __future__ import annotations

from typing import Final

from mypy_extensions import mypyc_attr

from .model import ChunkList, Segment, Side
from .rules import Rule, declare

WRITE_OVERRUN: Final = declare(
    "chunk.write_overrun", "error", "chunk",
    "RDMA WRITE of {length} bytes at 0x{offset:x} (R_Key 0x{handle:x}) runs {outside} bytes past the advertised "
    "Write chunk segment",
    "RFC 8166 §3.4.6 (a responder writes no more than the segment length)")
REPLY_OVERRUN: Final = declare(
    "chunk.reply_overrun", "error", "chunk",
    "RDMA WRITE of {length} bytes at 0x{offset:x} (R_Key 0x{handle:x}) runs {outside} bytes past the Reply chunk: "
    "a memory protection error that loses the connection",
    "seeds/001 (Reply chunk overrun); RFC 8166 §3.5.3")
READ_OVERRUN: Final = declare(
    "chunk.read_overrun", "error", "chunk",
    "RDMA READ of {length} bytes at 0x{offset:x} (R_Key 0x{handle:x}) reaches {outside} bytes past the advertised "
    "Read chunk segment",
    "RFC 8166 §3.4.5 (a Read chunk is read within its segments)")
UNADVERTISED: Final = declare(
    "chunk.unadvertised", "error", "chunk",
    "RDMA {op} of {length} bytes at 0x{offset:x} with R_Key 0x{handle:x}, which no open RPC-over-RDMA message "
    "advertised",
    "RFC 8166 §3.4.3 (RDMA segments are advertised before use); seeds/001 (memory protection error)")
WRITE_LENGTH: Final = declare(
    "chunk.write_length_mismatch", "error", "chunk",
    "the reply's Write list gives {reported} bytes for segment {segment} of Write chunk {chunk} (R_Key 0x{handle:x}), "
    "RDMA WRITE put {written} bytes there",
    "RFC 8166 §3.4.6 (the reply's Write list carries the lengths actually written)")
REPLY_LENGTH: Final = declare(
    "chunk.reply_length_mismatch", "error", "chunk",
    "the reply's Reply chunk gives {reported} bytes for segment {segment} (R_Key 0x{handle:x}), RDMA WRITE put "
    "{written} bytes there",
    "RFC 8166 §3.5.3 (the reply's Reply chunk carries the lengths actually written)")

# Which rule an overrun breaks, by the list the segment came from.
OVERRUN_RULES: dict[ChunkList, Rule] = {ChunkList.WRITE: WRITE_OVERRUN, ChunkList.REPLY: REPLY_OVERRUN,
                                        ChunkList.READ: READ_OVERRUN, ChunkList.RESPONDER_READ: READ_OVERRUN}


@mypyc_attr(serializable=True, allow_interpreted_subclasses=True)
class ChunkBook:
    """The open advertised segments of one connection, by (whose memory, handle)."""

    __slots__ = ("by_handle",)

    def __init__(self) -> None:
        self.by_handle: dict[tuple[Side, int], list[Segment]] = {}

    def advertise(self, seg: Segment) -> None:
        key: tuple = (seg.side, seg.handle)  # plain tuple: see docs/architecture.md
        lst = self.by_handle.get(key)
        if lst is None:
            self.by_handle[key] = [seg]
        else:
            lst.append(seg)

    def withdraw(self, seg: Segment) -> None:
        key: tuple = (seg.side, seg.handle)
        lst = self.by_handle.get(key)
        if lst is None:
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

    def cut(self, side: Side, handle: int, va: int, n: int) -> tuple[list[tuple[Segment, int, int]], int]:
        """Segments that [va, va + n) falls in, as (segment, start, end) relative to each, and the
        number of bytes that fall in none of them."""
        segs = self.by_handle.get((side, handle))
        if not segs or n <= 0:
            return [], max(n, 0)
        hits = []
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
                hits.append((s, lo, hi))
                inside += hi - lo
        return hits, n - inside

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
