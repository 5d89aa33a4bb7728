"""Text presentation: summary lines, the verbose tree, hex dumps."""
from __future__ import annotations

from typing import Iterator

from ..fields import Field
from ..fieldview import EVERY_FIELD, Plan, protocols_text
from ..packet import Item, Layer, Packet
from .values import text_value


_columns: dict[tuple[str, str, str], bytes] = {}


def summary_bytes(pkt: Packet, t0: int, when: bytes | None = None) -> bytes:
    """The summary line in UTF-8, as it is written out; ``when``: its time column, made by the caller
    (another format than seconds since the first frame).

    Bytes rather than text: the arrow between the addresses would make every line a two-byte-per-
    character string, to be widened, joined and encoded again line by line."""
    f = pkt.frame
    info = pkt.info
    text = info[0] if len(info) == 1 else " ".join(info)
    if pkt.malformed:
        text = pkt.info_text
    key = (pkt.src, pkt.dst, pkt.proto)
    middle = _columns.get(key)
    if middle is None:
        # source, destination and protocol columns: a capture has few combinations
        if len(_columns) >= 4096:
            _columns.clear()
        middle = _columns[key] = ("%15s → %-15s %-9s" % key).encode()
    if when is not None:
        return b"%7d %s %s %5d %s" % (f.num, when, middle, len(f.data), text.encode())
    d = f.ts - t0
    if 0 <= d < 1_000_000_000_000 and d % 1000 != 500:
        # Microseconds in integers, as %12.6f of d/1e9 would print them (no tie, so the same rounding):
        # cheaper than formatting a float.
        us = (d + 500) // 1000
        # %s of bytes made with str() and rjust: compiled, a join (mypyc compiles plain %s, not %7d), a
        # quarter cheaper than bytes formatting of the integers; the same bytes as "%7d %5d.%06d ... %5d"
        return b"%s %s.%s %s %s %s" % (str(f.num).rjust(7).encode(), str(us // 1_000_000).rjust(5).encode(),
                                       str(us % 1_000_000).zfill(6).encode(), middle,
                                       str(len(f.data)).rjust(5).encode(), text.encode())
    return b"%7d %12.6f %s %5d %s" % (f.num, d / 1e9, middle, len(f.data), text.encode())


def summary_line(pkt: Packet, t0: int, when: bytes | None = None) -> str:
    return summary_bytes(pkt, t0, when).decode()


def tree_lines(pkt: Packet, t0: int) -> list[str]:
    """The lines of ``decode -V`` for one packet (a list: compiled, a generator costs a resumable
    object and a call per line)."""
    f = pkt.frame
    lines = [f"Frame {f.num}: {f.wirelen} bytes on wire, {len(f.data)} bytes captured (link type {f.linktype},"
             f" interface {f.iface})",
             f"    Arrival time (epoch): {f.ts // 1_000_000_000}.{f.ts % 1_000_000_000:09d}",
             f"    Time since first frame: {(f.ts - t0) / 1e9:.9f} seconds"]
    if f.comment:
        lines.append(f"    Comment: {f.comment}")
    lines.append("    Protocols in frame: " + protocols_text(pkt))
    EVERY_FIELD.layers(pkt, _TreeLines(lines))
    if pkt.expert:
        lines.append("Expert Info")
        for e in pkt.expert:
            cited = citation(e.rule, e.source)
            lines.append(f"    [{e.severity.capitalize()}/{e.group}] {e.text}{f' [{cited}]' if cited else ''}")
    return lines


def citation(rule: str, source: str) -> str:
    """An expert item's rule and source as the tree shows them: "ib.duplicate (IBTA 9.7)"."""
    if rule and source:
        return f"{rule} ({source})"
    return rule or source


# Each field's "<indent><label>: " at each depth, made once: a line is then one concatenation with its
# value, where an f-string of four parts costs a generic string build per line.
_PREFIXES: list[dict[Field, str]] = []


def _prefixes(depth: int) -> dict[Field, str]:
    while len(_PREFIXES) <= depth:
        _PREFIXES.append({})
    return _PREFIXES[depth]


def _line(known: dict[Field, str], f: Field, value: object, depth: int) -> str:
    """``f``'s line at ``depth``: its prefix (made once, kept in ``known``) and its value."""
    prefix = known.get(f)
    if prefix is None:
        if len(known) >= 4096:      # fields are declared once; bounded all the same
            known.clear()
        prefix = known[f] = "    " * depth + f.label + ": "
    return prefix + text_value(f, value)


class _TreeLines:
    """The layers' lines of the tree: a layer's label, then its fields one level in."""

    __slots__ = ("lines",)

    def __init__(self, lines: list[str]) -> None:
        self.lines = lines

    def layer(self, lay: Layer, present: bool, plan: Plan, items: list[Item] | None, depth: int) -> None:
        lines = self.lines
        lines.append("    " * depth + lay.label)
        if not plan and not items:
            return
        known = _prefixes(depth + 1)
        if plan:
            vals = lay.values
            for i, f in plan:
                lines.append(_line(known, f, vals[i], depth + 1))
        if items:
            for f, v, _o, _l in items:
                lines.append(_line(known, f, v, depth + 1))


def hex_lines(data: bytes) -> Iterator[str]:
    for i in range(0, len(data), 16):
        chunk = data[i:i + 16]
        hexpart = " ".join(f"{b:02x}" for b in chunk[:8])
        if len(chunk) > 8:
            hexpart += "  " + " ".join(f"{b:02x}" for b in chunk[8:])
        text = "".join(chr(b) if 32 <= b < 127 else "." for b in chunk)
        yield f"{i:04x}  {hexpart:<49} {text}"


def packet_style(pkt: Packet) -> str | None:
    """How a terminal colours a packet: red for malformed or failed checks, yellow for warnings."""
    if pkt.malformed:
        return "red"
    expert = pkt.expert
    if not expert:
        return None
    sev = {e.severity for e in expert}
    if "error" in sev:
        return "red"
    if "warning" in sev:
        return "yellow"
    return None
