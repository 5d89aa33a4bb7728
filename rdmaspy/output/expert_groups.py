"""The findings of a capture grouped as ``rdmaspy expert`` shows them (Wireshark's Expert Information):
by severity and rule, each group counting its findings, marking their first frames and keeping a few
of them to show.  The dissectors' own expert items stand beside the analysis' findings: by their rule where
they declare one (``tcp.retransmission``), else by their text (malformed packets, bad checksums).

A sink of the pipeline and of the analysis' findings, compiled with it (setup.py): a long capture
makes a finding every few frames, and each is counted here.  No text is made here but the findings'
messages of the items shown (rdmaspy.commands.expert presents the groups).
"""
from __future__ import annotations

import heapq

from ..analysis.rules import RULES, Finding
from ..packet import Packet
from ..pipeline import PacketSink
from ..typenames import Any, Final, Iterator

Item = tuple[tuple[int, ...], str, int | None, int | None]     # frames, text, conn, xid
# As a group keeps it: the text, or the finding whose text it is, made only if the item is shown (most
# findings of a long capture are counted, not kept: their message is never formatted).
Kept = tuple[tuple[int, ...], "str | Finding", int | None, int | None]
# A group's key: (severity, "rule" or "dissector", group, the rule id or the item's source or text).
Key = tuple[str, str, str, str]


# The set bits of each byte value, lowest first (Final: compiled, read without a look-up in the module's dict).
_BITS: Final[tuple[tuple[int, ...], ...]] = tuple(tuple(b for b in range(8) if v >> b & 1) for v in range(256))


class Group:
    """The findings of one rule (or the dissector items of one text) at one severity.

    Every finding counts and its first frame is marked in a bitmap (one bit a frame of the capture,
    whatever the number of findings, and no sorting at the end); the items themselves only up to
    ``keep`` (those of the earliest frames, as the output shows them), so that a capture of millions of
    findings costs a summary that does not grow with them.  ``keep`` None keeps them all."""

    __slots__ = ("severity", "group", "rule", "source", "keep", "count", "_heap", "_seq", "_seen")

    def __init__(self, severity: str, group: str, rule: str | None, source: str, keep: int | None = None) -> None:
        self.severity = severity
        self.group = group
        self.rule = rule              # the rule id; None for a dissector's expert item
        self.source = source
        self.keep = keep
        self.count = 0
        self._heap: list[tuple[int, int, Kept]] = []      # (-first frame, -arrival, item): the latest on top
        self._seq = 0
        self._seen = bytearray()      # bit f: a finding's first frame is f

    def add(self, item: Kept) -> None:
        self.count += 1
        fr = item[0]
        first = fr[0] if fr else 0
        if fr:
            seen = self._seen
            i = first >> 3
            if i >= len(seen):
                seen.extend(bytes(i + 1 - len(seen) + (len(seen) >> 2)))    # grows by a quarter at least
            seen[i] |= 1 << (first & 7)
        self._seq += 1
        heap = self._heap
        keep = self.keep
        if keep is None or len(heap) < keep:
            heapq.heappush(heap, (-first, -self._seq, item))
        elif -first > heap[0][0]:   # an earlier first frame than the latest kept's (of one frame, the first kept)
            heapq.heapreplace(heap, (-first, -self._seq, item))

    @property
    def items(self) -> list[Item]:
        """The items kept, by first frame (in arrival order for one frame)."""
        out: list[Item] = []
        for _f, _s, (fr, t, c, x) in sorted(self._heap, reverse=True):
            out.append((fr, t if isinstance(t, str) else t.text, c, x))
        return out

    @property
    def frames(self) -> list[int]:
        return list(self.each_frame())

    def each_frame(self) -> Iterator[int]:
        """The first frames of the findings, in order, each once."""
        seen = bytes(self._seen)        # see frame_ranges
        for i in range(len(seen)):      # by index: mypyc (1.x) fails on enumerate() of a bytearray
            byte = seen[i]
            if byte:
                base = i << 3
                for bit in _BITS[byte]:
                    yield base + bit

    def frame_ranges(self, most: int) -> str:
        """``1-3, 7, 9-10`` of the frames, at most ``most`` ranges and then a count of the frames left out;
        one compiled loop over the bitmap (a generator's frame at a time to an interpreted loop cost some
        500 instructions a frame: 10 M for `expert` of the mix's 20,000 frames)."""
        parts: list[str] = []
        used = 0                          # frames in the ranges of ``parts``
        start = end = -1
        # A copy as bytes: compiled, a bytes object's item is read in place, where a bytearray's is a generic
        # call and an int object made (some 290 instructions a byte: 4.9 M for the mix's 20,000 frames).
        seen = bytes(self._seen)
        for i in range(len(seen)):
            byte = seen[i]
            if byte:
                base = i << 3
                for bit in _BITS[byte]:
                    f = base + bit
                    if f == end + 1 and start >= 0:
                        end = f
                        continue
                    if start >= 0:
                        parts.append(str(start) if start == end else f"{start}-{end}")
                        used += end - start + 1
                        if len(parts) == most:
                            return ", ".join(parts) + f", ... ({self.frame_count() - used} more)"
                    start = end = f
        if start >= 0:
            parts.append(str(start) if start == end else f"{start}-{end}")
        return ", ".join(parts)

    def frame_count(self) -> int:
        """How many frames ``each_frame`` yields."""
        return int.from_bytes(self._seen, "little").bit_count()

    def record(self, limit: int | None = None) -> dict[str, Any]:
        items = self.items if limit is None else self.items[:limit]
        return {"severity": self.severity, "group": self.group, "rule": self.rule, "source": self.source,
                "count": self.count, "frames": self.frames,
                "findings": [{"frames": list(f), "message": t, "conn": c, "xid": x} for f, t, c, x in items]}


class Grouping(PacketSink):
    """Groups the findings of the analysis (``on_finding``) and the dissectors' expert items on the packets
    (``packet``) as they come; ``keep``: the items kept per group (None: all)."""

    def __init__(self, keep: int | None = None) -> None:
        self.keep = keep
        self.groups: dict[Key, Group] = {}
        self._by_rule: dict[str, Group] = {}    # the group of each rule id the analysis reported, found once

    def packet(self, pkt: Packet) -> None:
        items = pkt.expert
        if not items:
            return
        num = pkt.frame.num
        conn: int | None = getattr(pkt.conv, "conn_id", None)
        groups = self.groups
        for e in items:
            if isinstance(e, Finding):
                continue
            if e.rule:          # a declared rule: grouped with its own, like the analysis' findings
                key: Key = (e.severity, "rule", e.group, e.rule)
                g = groups.get(key)
                if g is None:
                    g = groups[key] = Group(e.severity, e.group, e.rule, RULES[e.rule].source, self.keep)
            else:
                key = (e.severity, "dissector", e.group, e.source or e.text)
                g = groups.get(key)
                if g is None:
                    g = groups[key] = Group(e.severity, e.group, None, e.source, self.keep)
            g.add(((num,), e.text, conn, None))

    def on_finding(self, f: Finding) -> None:
        r = f.rule_def
        g = self._by_rule.get(r.id)
        if g is None:
            key: Key = (r.severity, "rule", r.group, r.id)
            g = self.groups.get(key)
            if g is None:
                g = self.groups[key] = Group(r.severity, r.group, r.id, r.source, self.keep)
            self._by_rule[r.id] = g
        g.add((f.frames, f, f.conn, f.xid))

    def finish(self) -> None:
        pass
