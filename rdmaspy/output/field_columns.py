"""``decode -T fields -e NAME ...``: the values of the named fields, one line per packet, as tshark
prints them with ``-T fields`` and its ``-E`` options.

Values are the raw ones (an enumeration's number, not its name): integers in decimal, or in
hexadecimal padded to the field's width when the field is declared hex; addresses in their usual
text; other bytes as contiguous hex; booleans 1 or 0; frame times with nine decimals.  Control
characters in text are escaped (``\\n``, ``\\t``, ``\\xNN``), as tshark's ``escape=y`` does.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable

from ..errors import RdmaspyError
from ..fields import Field
from ..packet import Packet
from .lines import LineWriter
from .values import json_value

if TYPE_CHECKING:
    from ..pipeline import Pipeline

_EPOCH = "frame.time_epoch"
_RELATIVE = "frame.time_relative"


@dataclass(slots=True)
class Layout:
    """The ``-E`` options: what separates fields and values, quoting, header, which occurrences."""
    separator: str = "\t"
    aggregator: str = ","
    occurrence: str = "a"          # a: all, f: first, l: last
    quote: str = ""                # "", '"' or "'"
    header: bool = False


_SPECIALS = {"/t": "\t", "/s": " "}


def parse_layout(options: list[str]) -> Layout:
    """``-E`` options (``separator=,`` ``header=y`` ``quote=d`` ``occurrence=f`` ``aggregator=;``)."""
    lay = Layout()
    for opt in options:
        key, eq, value = opt.partition("=")
        if not eq:
            raise RdmaspyError(f"-E {opt}: expected NAME=VALUE (separator, aggregator, occurrence, quote, header)")
        if key == "separator":
            lay.separator = _SPECIALS.get(value, value[:1] if value else "\t")
        elif key == "aggregator":
            lay.aggregator = _SPECIALS.get(value, value[:1] if value else ",")
        elif key == "occurrence":
            if value not in ("a", "f", "l"):
                raise RdmaspyError(f"-E {opt}: occurrence is a (all), f (first) or l (last)")
            lay.occurrence = value
        elif key == "quote":
            quotes = {"d": '"', "s": "'", "n": ""}
            if value not in quotes:
                raise RdmaspyError(f"-E {opt}: quote is d (double), s (single) or n (none)")
            lay.quote = quotes[value]
        elif key == "header":
            if value not in ("y", "n"):
                raise RdmaspyError(f"-E {opt}: header is y or n")
            lay.header = value == "y"
        elif key in ("bom", "escape"):
            if value not in ("y", "n"):
                raise RdmaspyError(f"-E {opt}: {key} is y or n")
        else:
            raise RdmaspyError(f"-E {opt}: unknown option {key!r} (separator, aggregator, occurrence, quote, "
                               f"header)")
    return lay


_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\\]")
_ESCAPES = {"\n": "\\n", "\t": "\\t", "\r": "\\r", "\\": "\\\\"}


def _escape(m: re.Match[str]) -> str:
    c = m.group()
    return _ESCAPES.get(c) or f"\\x{ord(c):02x}"


def _seconds(ns: int) -> str:
    sign = "-" if ns < 0 else ""
    ns = abs(ns)
    return f"{sign}{ns // 1_000_000_000}.{ns % 1_000_000_000:09d}"


def field_text(field: Field, value: Any) -> str:
    """One value as ``-T fields`` prints it."""
    if field.display == "bool":
        return "1" if value else "0"
    if value.__class__ is int:
        if field.display == "hex":
            width = (field.bits + 3) // 4 if field.bits else 0
            return f"0x{value:0{width}x}"
        return str(value)
    if isinstance(value, float):
        return repr(value)
    if value is None:
        return ""
    v = json_value(field, value)
    text = v if isinstance(v, str) else str(v)
    return _CONTROL.sub(_escape, text) if _CONTROL.search(text) else text


def field_texts(name: str, field: Field, values: list[Any] | None, pkt: Packet, t0: int) -> list[str]:
    """Every value of the field ``name`` in a packet as ``-T fields`` prints it (frame times exact)."""
    if name == _EPOCH:
        return [_seconds(pkt.frame.ts)]
    if name == _RELATIVE:
        return [_seconds(pkt.frame.ts - t0)]
    return [field_text(field, x) for x in values or ()]


class FieldColumns:
    """The pipeline's sink for ``-T fields``: a line of the named fields' values per shown packet."""

    __slots__ = ("out", "names", "layout", "_fields", "_extract", "_pipe")

    def __init__(self, out: LineWriter, names: list[str], layout: Layout, fields: dict[str, Field],
                 extract: Callable[[Packet, int], dict[str, list[Any]]]) -> None:
        self.out = out
        self.names = names
        self.layout = layout
        self._fields = fields           # name -> declaration (a protocol's presence: a bool field)
        self._extract = extract
        self._pipe: Pipeline | None = None
        if layout.header:
            out.text(layout.separator.join(names))         # tshark does not quote the names

    def attach(self, pipe: Pipeline) -> None:
        self._pipe = pipe

    def _quoted(self, text: str) -> str:
        q = self.layout.quote
        return f"{q}{text}{q}" if q else text

    def packet(self, pkt: Packet) -> None:
        pipe = self._pipe
        t0 = pipe.t0 if pipe is not None else pkt.frame.ts
        values = self._extract(pkt, t0)
        lay = self.layout
        cols: list[str] = []
        for name in self.names:
            xs = values.get(name)
            if lay.occurrence == "f" and xs:
                xs = xs[:1]
            elif lay.occurrence == "l" and xs:
                xs = xs[-1:]
            texts = field_texts(name, self._fields[name], xs, pkt, t0)
            cols.append(self._quoted(lay.aggregator.join(texts)) if texts else "")
        self.out.text(lay.separator.join(cols))

    def flush(self) -> None:
        self.out.flush()

    def finish(self) -> None:
        self.out.flush()
