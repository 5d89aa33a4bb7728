"""The credit chart: credits granted as a line and calls outstanding as bars, on one scale and one
time axis, with every moment more calls were outstanding than granted drawn in red.

Samples come at irregular times, so each column is a slice of time, not a number of samples: a
column shows the lowest grant and the highest number outstanding of its slice (no dip or peak is
averaged away) and carries the last grant into slices where nothing changed.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from rich.text import Text
from textual.widget import Widget

from ...analysis.model import CreditSample

LEVELS = " ▁▂▃▄▅▆▇█"


@dataclass(slots=True)
class Column:
    granted: int | None
    outstanding: int


def columns(samples: Sequence[CreditSample], width: int) -> list[Column]:
    """``samples`` (in time order) folded into ``width`` slices of time."""
    if not samples or width <= 0:
        return []
    t0, t1 = samples[0].ts, samples[-1].ts
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
    out: list[Column] = []
    last: Column = Column(None, 0)
    for col in cols:
        if col is None:
            col = Column(last.granted, last.outstanding)
        out.append(col)
        last = col
    return out


def chart_lines(samples: Sequence[CreditSample], width: int, height: int) -> list[Text]:
    """The chart as ``height`` lines of text (the last one the scale) ``width`` characters wide."""
    cols = columns(samples, width)
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
    lines.append(Text(f"0 ── granted (green line) and outstanding (bars) on a scale of 0..{top}; red: over the grant",
                      style="dim"))
    return lines


class CreditChart(Widget):
    """Draws ``samples`` to fit its size; ``show`` gives it a new series."""

    DEFAULT_CSS = """
    CreditChart { height: 8; padding: 0 1; }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.samples: Sequence[CreditSample] = ()

    def show(self, samples: Sequence[CreditSample]) -> None:
        self.samples = samples
        self.refresh()

    def render(self) -> Text:
        width = max(self.content_region.width, 10)
        height = max(self.content_region.height, 2)
        return Text("\n").join(chart_lines(self.samples, width, height))
