"""The credit chart: credits granted as a line and calls outstanding as bars, on one scale and one
time axis, with every moment more calls were outstanding than granted drawn in red.

Samples come at irregular times, so each column is a slice of time, not a number of samples: a
column shows the lowest grant and the highest number outstanding of its slice (no dip or peak is
averaged away) and carries the last grant into slices where nothing changed.  The samples are
folded as they are read (a series may hold millions), and the folded columns are kept until the
series grows or the chart changes width.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Hashable, Iterable, Protocol, Sequence

from rich.text import Text
from textual.widget import Widget

LEVELS = " ▁▂▃▄▅▆▇█"


class Sample(Protocol):
    """What the chart reads of a credit sample (``CreditSample``, the store's ``Point``)."""
    @property
    def ts(self) -> int: ...

    @property
    def granted(self) -> int | None: ...

    @property
    def outstanding(self) -> int: ...


@dataclass(slots=True)
class Column:
    granted: int | None
    outstanding: int


def columns(samples: Iterable[Sample], width: int, t0: int | None = None, t1: int | None = None) -> list[Column]:
    """``samples`` (in time order, from ``t0`` to ``t1``: a sequence's first and last when not given)
    folded into ``width`` slices of time."""
    if t0 is None or t1 is None:
        seq = list(samples)
        if not seq:
            return []
        samples, t0, t1 = seq, seq[0].ts, seq[-1].ts
    if width <= 0:
        return []
    span = max(t1 - t0, 1)
    cols: list[Column | None] = [None] * width
    for s in samples:
        i = min(width - 1, (s.ts - t0) * width // span)
        col = cols[i]
        if col is None:
            cols[i] = Column(s.granted, s.outstanding)
        else:
            if s.granted is not None:
                col.granted = s.granted if col.granted is None else min(col.granted, s.granted)
            col.outstanding = max(col.outstanding, s.outstanding)
    if cols[0] is None:
        return []
    out: list[Column] = []
    last: Column = Column(None, 0)
    for col in cols:
        if col is None:
            col = Column(last.granted, last.outstanding)
        out.append(col)
        last = col
    return out


def chart_lines(samples: Iterable[Sample], width: int, height: int) -> list[Text]:
    """The chart as ``height`` lines of text (the last one the scale) ``width`` characters wide."""
    return lines_of(columns(samples, width), height)


def lines_of(cols: Sequence[Column], height: int) -> list[Text]:
    """Folded columns drawn as ``height`` lines."""
    if not cols:
        return [Text("no credit samples", style="dim")]
    top = max(max((c.granted or 0) for c in cols), max(c.outstanding for c in cols), 1)
    rows = max(height - 1, 1)
    steps = rows * 8
    lines: list[Text] = []
    for r in range(rows - 1, -1, -1):
        line = Text()
        for c in cols:
            eighths = c.outstanding * steps // top
            if c.outstanding and not eighths:
                eighths = 1             # a call outstanding is never drawn as none
            bar = eighths - r * 8
            grant_level = None if c.granted is None else min(rows - 1, c.granted * rows // (top + 1))
            over = c.granted is not None and c.outstanding > c.granted
            if bar > 0:
                line.append(LEVELS[min(bar, 8)], style="bold red" if over else "yellow")
            elif grant_level == r:
                line.append("─", style="green")
            else:
                line.append(" ")
        lines.append(line)
    lines.append(Text(f"scale 0..{top}: ── granted (green), bars outstanding (red: over the grant)", style="dim"))
    return lines


class CreditChart(Widget):
    """Draws a series to fit its size; ``show`` gives it a new one (or none)."""

    DEFAULT_CSS = """
    CreditChart { height: 8; padding: 0 1; }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._key: Hashable = None
        self._read: Callable[[], Iterable[Sample]] | None = None
        self._span = (0, 0)
        self._folded: tuple[Hashable, int, list[Column]] | None = None

    def show(self, key: Hashable, read: Callable[[], Iterable[Sample]] | None = None, t0: int = 0,
             t1: int = 0) -> None:
        """Draw the series ``read()`` gives (from ``t0`` to ``t1``); ``key`` changes when it does."""
        self._key, self._read, self._span = key, read, (t0, t1)
        self.refresh()

    def render(self) -> Text:
        width = max(self.content_region.width, 10)
        height = max(self.content_region.height, 2)
        folded = self._folded
        if folded is None or folded[0] != self._key or folded[1] != width:
            cols = [] if self._read is None else columns(self._read(), width, *self._span)
            folded = self._folded = (self._key, width, cols)
        return Text("\n").join(lines_of(folded[2], height))
