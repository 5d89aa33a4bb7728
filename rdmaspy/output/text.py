"""Text presentation: summary lines, the verbose tree, hex dumps."""
from __future__ import annotations

from ..fields import Field, Header
from ..fieldview import EVERY_FIELD, Plan, Sink, protocols_text
from ..packet import Frame, Item, Layer, Packet
from ..typenames import Any, Callable, Final, Iterator, i64
from .safe import safe_text
from .values import ADDR_DISPLAYS, address_text, text_value


# The address and protocol columns made so far, by source, destination and protocol text: three look-ups
# of strings (their hashes kept by the strings) rather than a tuple made, hashed and compared each time.
_columns: Final[dict[str, dict[str, dict[str, bytes]]]] = {}

try:        # the line in one call in C, built with the compiled decoder (setup.py); the f-string below otherwise
    from ._line import line as _line_c  # type: ignore[import-not-found,import-untyped,unused-ignore]
except ImportError:
    _line_c = None
# (num, us, middle, the frame's bytes for their length, the Info text or its pieces to be joined by spaces)
LINE: Final[Callable[[int, int, bytes, bytes, list[str] | str], bytes] | None] = _line_c


def summary_bytes(pkt: Packet, t0: int, when: bytes | None = None) -> bytes:
    """The summary line in UTF-8, as it is written out; ``when``: its time column, made by the caller
    (another format than seconds since the first frame).

    Bytes rather than text: the arrow between the addresses would make every line a two-byte-per-
    character string, to be widened, joined and encoded again line by line."""
    f = pkt.frame
    middle = _middle(pkt.src, pkt.dst, pkt.proto)
    if when is None:
        line = LINE
        d = f.ts - t0
        if line is not None and 0 <= d < _EXACT_NS:
            dn: i64 = d
            if dn % 1000 != 500:        # as below: the line in one call, the Info's pieces joined in it
                return line(f.num, (dn + 500) // 1000, middle, f.data, pkt.info_text if pkt.malformed else pkt.info)
    info = pkt.info
    text = info[0] if len(info) == 1 else " ".join(info)
    if pkt.malformed:
        text = pkt.info_text
    if when is not None:
        return b"%7d %s %s %5d %s" % (f.num, when, middle, len(f.data), text.encode())
    d = f.ts - t0
    # below 2**53 a machine integer (``i64``): compiled, its remainder and quotient are C's, not calls
    nd: i64 = d if 0 <= d < _EXACT_NS else -1
    if nd >= 0 and nd % 1000 != 500:
        # Microseconds in integers, as %12.6f of d/1e9 would print them, cheaper than formatting a float.
        # The same digits: below 2**53 ns (104 days) d is exact as a float and d/1e9 is off by at most
        # (d/1e9) * 2**-53 < 1 ns, while a rounding boundary (an odd multiple of 500 ns) is at least
        # 1 ns away unless d ends in 500 (the decimal tie, left to the float).
        us: i64 = (nd + 500) // 1000
        # One f-string without format specs, encoded once: compiled, one join of the pieces, where
        # "%7d %5d.%06d" parses its format each time, rjust and zfill are method calls and each "+" makes
        # a string.  The seconds and the length columns repeat from line to line: each made once.  The
        # same bytes as "%7d %5d.%06d ... %5d".
        num = str(f.num)
        pad = _SPACES[7 - len(num)] if len(num) < 7 else ""
        frac = str(us % 1_000_000)
        head = f"{pad}{num} {_padded5(us // 1_000_000)}.{_ZEROS[6 - len(frac)]}{frac}"
        return b"%s %s %s %s" % (head.encode(), middle, _length5(len(f.data)), text.encode())
    return b"%7d %12.6f %s %5d %s" % (f.num, d / 1e9, middle, len(f.data), text.encode())


class _RecentColumns:
    """The source, destination and protocol columns of the last two lines, by the identity of their
    texts: the address texts are cached by the dissectors and the protocols are constants, so a
    conversation's two directions find theirs with a few pointer compares instead of a hashed tuple."""

    __slots__ = ("src0", "dst0", "proto0", "bytes0", "src1", "dst1", "proto1", "bytes1", "made")

    def __init__(self) -> None:
        self.src0 = self.dst0 = self.proto0 = self.src1 = self.dst1 = self.proto1 = ""
        self.bytes0 = self.bytes1 = b""
        self.made = 0           # entries in _columns


_RECENT: Final = _RecentColumns()


def _middle(src: str, dst: str, proto: str) -> bytes:
    """The source, destination and protocol columns in UTF-8."""
    r = _RECENT
    if src is r.src0 and dst is r.dst0 and proto is r.proto0:
        return r.bytes0
    if src is r.src1 and dst is r.dst1 and proto is r.proto1:
        return r.bytes1
    by_dst = _columns.get(src)
    if by_dst is None:
        by_dst = _columns[src] = {}
    by_proto = by_dst.get(dst)
    if by_proto is None:
        by_proto = by_dst[dst] = {}
    middle = by_proto.get(proto)
    if middle is None:
        # a capture has few combinations: past that many (a hostile one), the table starts again
        if r.made >= 4096:
            _columns.clear()
            r.made = 0
            by_proto = {}
            _columns[src] = {dst: by_proto}
        middle = by_proto[proto] = ("%15s → %-15s %-9s" % (src, dst, proto)).encode()
        r.made += 1
    r.src1, r.dst1, r.proto1, r.bytes1 = r.src0, r.dst0, r.proto0, r.bytes0
    r.src0, r.dst0, r.proto0, r.bytes0 = src, dst, proto, middle
    return middle


_EXACT_NS: Final = 1 << 53
_SPACES: Final = tuple(" " * n for n in range(8))
_ZEROS: Final = tuple("0" * n for n in range(7))
_SMALL: Final = 16384       # the columns cached for values below it (a list each: an index, not a hash)
_PADDED: Final[list[str | None]] = [None] * _SMALL
_LENGTHS: Final[list[bytes | None]] = [None] * _SMALL


def _right(s: str, width: int) -> str:
    """``s`` right-aligned in ``width`` columns (at most 7), as ``str.rjust`` writes it."""
    n = len(s)
    return f"{_SPACES[width - n]}{s}" if n < width else s


class _Last:
    """The last value beyond the cached ones and its column (the seconds of a capture longer than
    ``_SMALL`` seconds change once a second)."""

    __slots__ = ("n", "text")

    def __init__(self) -> None:
        self.n = -1
        self.text = ""


_LAST: Final = _Last()


def _padded5(n: int) -> str:
    """``n`` right-aligned in five columns, as "%5d" writes it."""
    if 0 <= n < _SMALL:
        got = _PADDED[n]
        if got is None:
            got = _PADDED[n] = _right(str(n), 5)
        return got
    if n < 0:
        return _right(str(n), 5)
    last = _LAST          # n >= _SMALL: never the -1 it starts with
    if n != last.n:
        last.text = _right(str(n), 5)
        last.n = n
    return last.text


def _length5(n: int) -> bytes:
    """``_padded5(n)`` in UTF-8."""
    if 0 <= n < _SMALL:
        got = _LENGTHS[n]
        if got is None:
            got = _LENGTHS[n] = _padded5(n).encode()
        return got
    return _padded5(n).encode()


def summary_line(pkt: Packet, t0: int, when: bytes | None = None) -> str:
    return summary_bytes(pkt, t0, when).decode()


def tree_lines(pkt: Packet, t0: int) -> list[str]:
    """The lines of ``decode -V`` for one packet (no line holds a newline: see ``tree_text``)."""
    return tree_text(pkt, t0).split("\n")


def tree_text(pkt: Packet, t0: int) -> str:
    """The tree of ``decode -V`` for one packet as one text, its lines joined by newlines."""
    return "".join(tree_pieces(pkt, t0, []))


def tree_utf8(pkt: Packet, t0: int, hexdump: bool) -> bytes:
    """The tree of ``decode -V`` as it is written: UTF-8, with the hex dump (``-x``) and the blank line
    after it.  Encoded a run of ASCII pieces at a time: one "…" (a long value cut short) would make the
    whole text two bytes a character, to be widened and encoded character by character."""
    wide: list[int] = []
    pieces = tree_pieces(pkt, t0, wide)
    if hexdump:
        pieces.append("\n")
        pieces.append("\n".join(hex_lines(pkt.frame.data)))
    pieces.append("\n")
    if not wide:
        return "".join(pieces).encode()
    out: list[bytes] = []
    start = 0
    for i in wide:
        out.append("".join(pieces[start:i]).encode())
        out.append(pieces[i].encode())
        start = i + 1
    out.append("".join(pieces[start:]).encode())
    return b"".join(out)


def tree_pieces(pkt: Packet, t0: int, wide: list[int]) -> list[str]:
    """The tree of ``decode -V`` for one packet as pieces of text to be joined with nothing between
    them: a line's prefix ("\n", indent, label; made once) and its value, not a string per line.
    ``wide`` gets the indexes of the pieces that are not ASCII among the values and expert texts
    (a label or a comment may be too: they are not counted, which costs speed, not correctness).

    Safe for a terminal as it is made: every piece of text that can come from the capture (a comment,
    a layer's label, a value, an expert item's text) has its control characters shown as escapes,
    the rest is numbers and declared names."""
    f = pkt.frame
    pieces = [_frame_head(f, t0)]
    if f.comment:
        pieces.append("\n    Comment: " + safe_text(f.comment))
    pieces.append("\n    Protocols in frame: " + protocols_text(pkt))
    EVERY_FIELD.layers(pkt, _TreePieces(pieces, wide))
    if pkt.expert:
        pieces.append("\nExpert Info")
        for e in pkt.expert:
            cited = citation(e.rule, e.source)
            pieces.append("\n    ")
            text = safe_text(f"[{e.severity.capitalize()}/{e.group}] {e.text}{f' [{cited}]' if cited else ''}")
            if not text.isascii():
                wide.append(len(pieces))
            pieces.append(text)
    return pieces


def _frame_head(f: Frame, t0: int) -> str:
    """The tree's first lines: the frame's numbers and times."""
    d = f.ts - t0
    ts = f.ts
    if 0 <= d < _EXACT_SINCE and ts >= 0:
        # One f-string of integers' digits, where a % format parses itself and formats a float: the same
        # text.  Below 2**50 ns (13 days) d/1e9 is off by at most (d/1e9) * 2**-53 < 0.13 ns from d's
        # value, so %.9f of it shows d's own digits.
        since = str(d % 1_000_000_000)
        epoch = str(ts % 1_000_000_000)
        return (f"Frame {f.num}: {f.wirelen} bytes on wire, {len(f.data)} bytes captured (link type "
                f"{f.linktype}, interface {f.iface})\n    Arrival time (epoch): {ts // 1_000_000_000}."
                f"{_ZEROS9[9 - len(epoch)]}{epoch}\n    Time since first frame: {d // 1_000_000_000}."
                f"{_ZEROS9[9 - len(since)]}{since} seconds")
    # % rather than format specs in an f-string: compiled, each of those is a str.format call
    return ("Frame %d: %d bytes on wire, %d bytes captured (link type %d, interface %d)\n"
            "    Arrival time (epoch): %d.%09d\n    Time since first frame: %.9f seconds"
            % (f.num, f.wirelen, len(f.data), f.linktype, f.iface, ts // 1_000_000_000, ts % 1_000_000_000,
               d / 1e9))


_EXACT_SINCE: Final = 1 << 50
_ZEROS9: Final = tuple("0" * n for n in range(10))


def citation(rule: str, source: str) -> str:
    """An expert item's rule and source as the tree shows them: "ib.duplicate (IBTA 9.7)"."""
    if rule and source:
        return f"{rule} ({source})"
    return rule or source


# Each line's start, "\n<indent><label>: ", made once per depth: per field (``_FieldTexts``) and per
# indent (a layer's label).
_BOUND: Final = 4096        # fields and headers are declared once, so a depth's tables stay small; bounded


class _Depth:
    """The tree's texts at one depth: its indent, the texts of fields and headers (tables by field and
    by header), and where the items of a layer with no header start (the field of the first item last
    time, as ``_FieldTexts.next_field``).  One look-up per layer for all of them."""

    __slots__ = ("indent", "fields", "headers", "start")

    def __init__(self, depth: int) -> None:
        self.indent = "\n" + "    " * depth
        self.fields: dict[Field, _FieldTexts] = {}
        self.headers: dict[Header, _HeaderTexts] = {}
        self.start = _FieldTexts(None, "")


_DEPTHS: Final[list[_Depth]] = []


def _depth(depth: int) -> _Depth:
    if depth < len(_DEPTHS):
        return _DEPTHS[depth]
    while len(_DEPTHS) <= depth:
        _DEPTHS.append(_Depth(len(_DEPTHS)))
    return _DEPTHS[depth]


def _prefix(f: Field, depth: int) -> str:
    return _field_texts(_depth(depth), f).prefix


class _FieldTexts:
    """A field's texts in the tree at one depth, kept by the tree (a table by field, ``_Depth.fields``):
    its lines' prefix, how its values show, an enumeration's lines by value.  And the field of the item
    that followed it last: a layer's items come in the same order packet after packet, so most find
    their texts by that one compare rather than a hashed look-up."""

    __slots__ = ("prefix", "plain", "flag", "true_line", "false_line", "named", "lines", "hits", "next_field",
                 "next_texts")

    def __init__(self, f: Field | None, prefix: str) -> None:
        self.prefix = prefix
        names = None if f is None else f.names
        display = "" if f is None else f.display
        # an int value is its decimal digits (text_value's first case)
        self.plain = f is not None and names is None and not f.unit and display == "dec"
        self.flag = display == "bool"       # a bool's line, or an int's without names: True or False
        self.true_line = prefix + "True"
        self.false_line = prefix + "False"
        # an int value of an enumeration: its line (prefix and text), kept here by value
        self.named: dict[int, str] | None = None if names is None else {}
        # an int value shown otherwise (hex, a unit) or a plain decimal of 1024 or more: its line, kept
        # here by value.  Most repeat from packet to packet (reserved words, CRCs siw leaves zero, masks,
        # XIDs of a call and its reply, ports, a file's times); None: this field's seldom do (checksums,
        # sequence numbers), its lines made each time (``_keep``)
        self.lines: dict[int, str] | None = {}
        self.hits = 0                       # look-ups of ``lines`` that found the line
        self.next_field: Field | None = None
        self.next_texts: _FieldTexts = self


def _field_texts(at: _Depth, f: Field) -> _FieldTexts:
    known = at.fields
    texts = known.get(f)
    if texts is None:
        if len(known) >= _BOUND:
            known.clear()
        texts = known[f] = _FieldTexts(f, at.indent + f.label + ": ")
    return texts


class _HeaderTexts:
    """A header's texts at one depth: its fields' in field order, and where its layer's items start (the
    field of the first item last time, as ``_FieldTexts.next_field``): a layer of a header (TCP's options,
    DDP's payload length, MPA's CRC) finds its first item's texts by one compare, where a start shared by
    every layer of the depth would miss as each kind of layer follows another."""

    __slots__ = ("every", "start")

    def __init__(self, every: tuple[_FieldTexts, ...]) -> None:
        self.every = every
        self.start = _FieldTexts(None, "")


def _header_texts(hdr: Header, at: _Depth) -> _HeaderTexts:
    """The texts of a header's fields at one depth."""
    known = at.headers
    got = known.get(hdr)
    if got is None:
        if len(known) >= _BOUND:
            known.clear()
        got = known[hdr] = _HeaderTexts(tuple([_field_texts(at, f) for f in hdr.fields]))
    return got


# Labels a dissector made (most layers show their header's declared label): made safe once each.
_SAFE_LABELS: Final[dict[str, str]] = {}


def _label(lay: Layer) -> str:
    label = lay.label
    hdr = lay.header
    if (hdr is not None and label is hdr.label) or label is lay.proto:
        return label                # declared
    safe = _SAFE_LABELS.get(label)
    if safe is None:
        if len(_SAFE_LABELS) >= 4096:
            _SAFE_LABELS.clear()
        safe = _SAFE_LABELS[label] = safe_text(label)
    return safe


class _TreePieces(Sink):
    """The layers' part of the tree as pieces of text: a layer's label, then its fields one level in,
    each field a prefix and a value (the indexes of values that are not ASCII kept in ``wide``)."""

    __slots__ = ("pieces", "wide")

    def __init__(self, pieces: list[str], wide: list[int]) -> None:
        self.pieces = pieces
        self.wide = wide

    def layer(self, lay: Layer, present: bool, plan: Plan, items: list[Item] | None, depth: int) -> None:
        pieces = self.pieces
        inner = _depth(depth + 1)           # looked up once for the layer's fields and items
        pieces.append(_depth(depth).indent)
        pieces.append(_label(lay))
        head: _HeaderTexts | None = None
        if plan:
            vals = lay.values
            hdr = lay.header
            if hdr is not None and plan is hdr.every_field:
                head = _header_texts(hdr, inner)            # looked up once for all the header's fields
                every = head.every
                for i, f in plan:
                    v = vals[i]
                    texts = every[i]
                    if texts.plain and type(v) is int:
                        n: int = v
                        if 0 <= n < _NDECIMALS:
                            pieces.append(texts.prefix)
                            pieces.append(_DECIMALS[n])
                        else:
                            _decimal_line(pieces, texts, n)
                    else:
                        self._line(pieces, texts, f, v)
            else:
                for i, f in plan:
                    pieces.append(_prefix(f, depth + 1))
                    self._value(pieces, f, vals[i])
        if items:
            last = head.start if head is not None else inner.start
            for f, v, _o, _l in items:
                # the item after the last one is most often the field that followed it before: its
                # texts found by a pointer compare; the table by field otherwise
                if last.next_field is f:
                    texts = last.next_texts
                else:
                    texts = _field_texts(inner, f)
                    last.next_field = f
                    last.next_texts = texts
                last = texts
                if texts.plain and type(v) is int:
                    m: int = v          # most XDR words: the number as it is (text_value's first case)
                    if 0 <= m < _NDECIMALS:
                        pieces.append(texts.prefix)
                        pieces.append(_DECIMALS[m])
                    else:
                        _decimal_line(pieces, texts, m)
                else:
                    self._line(pieces, texts, f, v)

    def _line(self, pieces: list[str], texts: _FieldTexts, f: Field, v: Any) -> None:
        """A field's line but for a plain decimal's: an enumeration's or a flag's as one piece, prefix
        and text (``_value``'s text, made once per field and value), others as the prefix and ``_value``."""
        cls = type(v)
        if cls is int:
            named = texts.named
            if named is not None:
                line = named.get(v)
                if line is None:
                    line = texts.prefix + text_value(f, v)
                    if len(named) < 256:
                        named[v] = line
                pieces.append(line)
                return
            if texts.flag:          # _value's flag of an int (its unit not shown)
                pieces.append(texts.true_line if v else texts.false_line)
                return
            lines = texts.lines
            if lines is not None:
                line = lines.get(v)
                if line is None:
                    line = self._int_line(texts, f, v)
                    _keep(texts, lines, v, line)
                else:
                    texts.hits += 1
                pieces.append(line)
                return
        elif cls is bool and texts.flag:
            pieces.append(texts.true_line if v else texts.false_line)
            return
        pieces.append(texts.prefix)
        self._value(pieces, f, v)

    def _int_line(self, texts: _FieldTexts, f: Field, v: int) -> str:
        """An int's line as one piece: the prefix and ``_value``'s pieces (an int's never count as wide)."""
        parts = [texts.prefix]
        self._value(parts, f, v)
        return "".join(parts)

    def _value(self, pieces: list[str], f: Field, v: Any) -> None:
        """``text_value(f, v)`` as pieces: the common kinds of value made here with no detour (the same
        text), an enumeration's or a flag's text made once per field and value."""
        cls = type(v)
        if cls is int:
            n: int = v
            d = f.display
            names = f.names
            if names is None:
                if d == "dec" or (d == "hex" and n >= 0 and f.bits <= 64):
                    if d == "dec":
                        pieces.append(_DECIMALS[n] if 0 <= n < _NDECIMALS else str(n))
                    else:
                        # "0x", the zeros up to the declared width (none for XDR's words), the digits:
                        # text_value's "0x" + hex(n)[2:].zfill(width), a string fewer
                        h: str = _HEX(v)    # the object at hand: no box made, no builtin looked up
                        pad = (f.bits + 3) // 4 + 2 - len(h)
                        if pad <= 0:
                            pieces.append(h)
                        else:
                            pieces.append(_HEX_PADS[pad])
                            pieces.append(h[2:])
                    if f.unit:
                        pieces.append(" ")
                        pieces.append(f.unit)
                    return
                if d == "bool":
                    pieces.append("True" if n else "False")
                    return
            else:
                pieces.append(_named_text(f, n))
                return
            pieces.append(text_value(f, n))         # an integer's text is ASCII (names and units: nearly)
            return
        if cls is bool and f.display == "bool":
            pieces.append("True" if v else "False")
            return
        if cls is str and f.names is None and not f.unit and f.display != "bool":
            t: str = v
            if _ISASCII(t) and _ISPRINTABLE(t):     # nothing for safe_text to escape, nothing wide
                pieces.append(t)
                return
        if cls is bytes:
            b: bytes = v
            d = f.display
            if d in ADDR_DISPLAYS:              # text_value's; ASCII: digits, hex, dots and colons
                pieces.append(address_text(f, b))
                return
            if d != "str" and 0 < len(b) <= 48:     # text_value's hex of a short value (names, units: none)
                pieces.append(b.hex())
                return
        text = text_value(f, v)
        if not text.isascii():
            self.wide.append(len(pieces))
        pieces.append(text)


def _decimal_line(pieces: list[str], texts: _FieldTexts, n: int) -> None:
    """A plain decimal's line (not one of ``_DECIMALS``): one piece kept by value (``_FieldTexts.lines``)."""
    lines = texts.lines
    if lines is None:
        pieces.append(texts.prefix)
        pieces.append(str(n))
        return
    line = lines.get(n)
    if line is None:
        line = texts.prefix + str(n)
        _keep(texts, lines, n, line)
    else:
        texts.hits += 1
    pieces.append(line)


_LINES_BOUND: Final = 256


def _keep(texts: _FieldTexts, lines: dict[int, str], v: int, line: str) -> None:
    """Keep a line made for a value not kept.  A field's table full: begun again if most look-ups found
    their line, else dropped for good (its values seldom repeat: each look-up would be a loss)."""
    if len(lines) >= _LINES_BOUND:
        if texts.hits < len(lines):
            texts.lines = None
            return
        lines.clear()
        texts.hits = 0
    lines[v] = line


_HEX_PADS: Final = tuple("0x" + "0" * n for n in range(17))
# The texts of the numbers below 1024, made once: three values in four of an NFS -V tree are (counts,
# lengths, kinds, small offsets), each a string made and freed otherwise.
_NDECIMALS: Final = 1024
_DECIMALS: Final[tuple[str, ...]] = tuple(str(i) for i in range(_NDECIMALS))
# hex() as a static (a builtin named in compiled code is looked up in the builtins at each call)
_HEX: Final[Callable[[int], str]] = hex
_ISASCII: Final[Callable[[str], bool]] = str.isascii
_ISPRINTABLE: Final[Callable[[str], bool]] = str.isprintable
# An enumeration's texts ("NFS4_OK (0)"), by field and value: the values a capture shows are few.
_NAMED_TEXTS: Final[dict[Field, dict[int, str]]] = {}


def _named_text(f: Field, n: int) -> str:
    known = _NAMED_TEXTS.get(f)
    if known is None:
        if len(_NAMED_TEXTS) >= 4096:
            _NAMED_TEXTS.clear()
        known = _NAMED_TEXTS[f] = {}
    text = known.get(n)
    if text is None:
        text = text_value(f, n)
        if len(known) < 256:
            known[n] = text
    return text


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
