"""TCP payload reassembly, one direction of one connection at a time.

Record protocols carried in TCP (iWARP's MPA) need the byte stream, not the
segments: a record may span segments and a segment may hold several records.
``HalfStream.feed`` takes each segment as the capture shows it and returns a
``StreamView``: the bytes now available in stream order, starting with what an
earlier segment left unconsumed.  Retransmitted bytes are dropped, a segment
ahead of the expected sequence number is held until the hole is filled (or,
when too much piles up behind a hole the capture never fills, the hole is
recorded as a gap and skipped).  The consumer parses the view and hands back
what it could not use yet with ``keep``.

When nothing is pending and the segment is new, the view is the frame buffer
itself, with the frame's offsets: the common case copies nothing.  Otherwise
the view is a fresh ``bytes`` object and ``spans`` says which frame each byte
came from.
"""
from __future__ import annotations


from ..typenames import Final, mypyc_attr
SEQ_MOD: Final = 1 << 32
# A hole the capture never fills: give up on it once this much is held behind it.
HOLD_MAX_SEGMENTS = 32
HOLD_MAX_BYTES: Final = 256 * 1024
# What a segment was, seen from the stream.
NEW: Final = "new"                  # the next bytes, in order
OVERLAP: Final = "overlap"          # partly seen already: the seen part is dropped
RETRANSMISSION: Final = "retransmission"   # every byte seen already
HELD: Final = "held"                # ahead of a hole: kept until the hole is filled
AFTER_GAP: Final = "after-gap"      # ahead of a hole given up on


def seq_delta(a: int, b: int) -> int:
    """a - b in 32-bit sequence space, as a signed number."""
    d = (a - b) & 0xFFFFFFFF
    return d - SEQ_MOD if d >= 0x80000000 else d


class StreamView:
    """The bytes a segment made available, in stream order.

    ``buf[off:end]`` are the bytes; ``stream_off`` is the stream position of ``off`` (bytes
    since the first payload byte seen in this direction).  ``spans`` lists
    ``(start, end, frame number)`` in ``buf`` offsets.  ``gap`` is the number of bytes skipped
    just before the bytes of this segment (0: none).
    """

    __slots__ = ("buf", "off", "end", "stream_off", "spans", "status", "gap", "gap_at", "in_frame",
                 "dropped", "abandoned")

    def __init__(self, buf: bytes, off: int, end: int, stream_off: int, spans: list[tuple[int, int, int]],
                 status: str, in_frame: bool) -> None:
        self.buf = buf
        self.off = off
        self.end = end
        self.stream_off = stream_off
        self.spans = spans
        self.status = status
        self.in_frame = in_frame   # buf is the frame's own buffer
        self.gap = 0
        self.gap_at = -1           # buf offset where the bytes after the gap begin
        self.dropped = 0           # bytes of this segment dropped as already seen
        self.abandoned = 0         # unconsumed bytes before a gap, given up with it

    def frames(self, lo: int, hi: int) -> list[int]:
        """Frame numbers that contributed bytes to ``buf[lo:hi]``, in order, without repeats."""
        out: list[int] = []
        for s, e, num in self.spans:
            if s < hi and e > lo and (not out or out[-1] != num):
                out.append(num)
        return out

    def stream_pos(self, o: int) -> int:
        return self.stream_off + (o - self.off)


@mypyc_attr(serializable=True, allow_interpreted_subclasses=True)
class HalfStream:
    """One direction of a TCP connection."""

    __slots__ = ("next_seq", "next_off", "pending", "pending_spans", "held", "held_bytes", "gaps",
                 "segments", "retransmissions")

    def __init__(self) -> None:
        # sequence number of the next in-order byte, -1 before the first segment (an int, not an optional
        # one: compiled, a machine integer read and written in place, where an optional one was boxed)
        self.next_seq = -1
        self.next_off = 0                    # its stream position
        self.pending = b""                   # delivered but not consumed, ending at next_off
        self.pending_spans: list[tuple[int, int, int]] = []   # (start, end, frame) within pending
        self.held: dict[int, tuple[bytes, int]] = {}          # seq -> (bytes, frame), ahead of a hole
        self.held_bytes = 0
        self.gaps: list[tuple[int, int]] = []                 # (stream position, bytes missing)
        self.segments = 0
        self.retransmissions = 0

    # -- input ------------------------------------------------------------------------------------
    def feed(self, seq: int, buf: bytes, off: int, end: int, frame: int) -> StreamView:
        """Add one segment's payload ``buf[off:end]``; returns what is now readable."""
        n = end - off
        self.segments += 1
        if self.next_seq < 0:
            self.next_seq = seq & 0xFFFFFFFF
        d = seq_delta(seq, self.next_seq)
        if d + n <= 0:
            self.retransmissions += 1
            return self._empty(buf, off, RETRANSMISSION, n)
        if d > 0:
            if self.held_bytes + n <= HOLD_MAX_BYTES and len(self.held) < HOLD_MAX_SEGMENTS:
                old = self.held.get(seq & 0xFFFFFFFF)
                if old is None or len(old[0]) < n:
                    self.held_bytes += n - (len(old[0]) if old else 0)
                    self.held[seq & 0xFFFFFFFF] = (buf[off:end], frame)
                return self._empty(buf, off, HELD, 0)
            return self._skip_hole(seq, buf, off, end, frame)
        status = NEW
        skip = -d
        if skip:
            status = OVERLAP
            self.retransmissions += 1
        start = off + skip
        self.next_seq = (self.next_seq + (n - skip)) & 0xFFFFFFFF
        base_off = self.next_off - len(self.pending)
        self.next_off += n - skip
        if not self.pending and not self.held:
            view = StreamView(buf, start, end, base_off, [(start, end, frame)], status, True)
            view.dropped = skip
            return view
        parts = [self.pending, buf[start:end]]
        spans = list(self.pending_spans)
        p = len(self.pending)
        spans.append((p, p + n - skip, frame))
        total = p + n - skip
        total = self._drain(parts, spans, total)
        joined = b"".join(parts)
        self.pending = b""
        self.pending_spans = []
        view = StreamView(joined, 0, len(joined), base_off, spans, status, False)
        view.dropped = skip
        return view

    def _empty(self, buf: bytes, off: int, status: str, dropped: int) -> StreamView:
        view = StreamView(buf, off, off, self.next_off, [], status, True)
        view.dropped = dropped
        return view

    def _drain(self, parts: list[bytes], spans: list[tuple[int, int, int]], total: int) -> int:
        """Append held segments that the in-order bytes have now reached."""
        held = self.held
        while held:
            progressed = False
            for hseq in list(held):
                data, frame = held[hseq]
                d = seq_delta(hseq, self.next_seq)
                if d > 0:
                    continue
                del held[hseq]
                self.held_bytes -= len(data)
                progressed = True
                if d + len(data) <= 0:
                    self.retransmissions += 1
                    continue
                piece = data[-d:] if d else data
                parts.append(piece)
                spans.append((total, total + len(piece), frame))
                total += len(piece)
                self.next_seq = (self.next_seq + len(piece)) & 0xFFFFFFFF
                self.next_off += len(piece)
            if not progressed:
                break
        return total

    def _skip_hole(self, seq: int, buf: bytes, off: int, end: int, frame: int) -> StreamView:
        """Too much waits behind a hole: record the gap and carry on from the earliest byte held."""
        cands = list(self.held) + [seq & 0xFFFFFFFF]
        first = min(cands, key=lambda s: seq_delta(s, self.next_seq))
        missing = seq_delta(first, self.next_seq)
        self.gaps.append((self.next_off, missing))
        # Bytes left before the hole can never complete a record: they are given up with it.
        lost_pending = len(self.pending)
        self.pending = b""
        self.pending_spans = []
        self.next_seq = first
        self.next_off += missing
        base_off = self.next_off
        self.held[seq & 0xFFFFFFFF] = (buf[off:end], frame)
        self.held_bytes += end - off
        parts: list[bytes] = []
        spans: list[tuple[int, int, int]] = []
        total = self._drain(parts, spans, 0)
        joined = b"".join(parts)
        view = StreamView(joined, 0, len(joined), base_off, spans, AFTER_GAP, False)
        view.gap = missing
        view.abandoned = lost_pending
        view.gap_at = 0
        return view

    # -- output -------------------------------------------------------------------------------------
    def keep(self, view: StreamView, upto: int) -> None:
        """The consumer used ``view.buf[view.off:upto]``; keep the rest for the next segment.

        Views of retransmitted or held segments carry no bytes: what was pending stays pending.
        """
        if view.status in (RETRANSMISSION, HELD):
            return
        if upto >= view.end:
            self.pending = b""
            self.pending_spans = []
            return
        self.pending = view.buf[upto:view.end]
        self.pending_spans = [(max(s, upto) - upto, e - upto, num) for s, e, num in view.spans if e > upto]

    def drop_pending(self) -> int:
        """Forget unconsumed bytes (the consumer lost the record boundaries); returns how many."""
        n = len(self.pending)
        self.pending = b""
        self.pending_spans = []
        return n
