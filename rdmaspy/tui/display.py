"""Applying a display filter: which rows ``rdmaspy decode -Y EXPR`` would print.

The capture runs through the pipeline once more with the compiled filter, exactly as ``decode -Y``
runs it (with the analysis when the filter names an analysis or expert field), on a background
thread; the result is the list of matching rows, 4 bytes a row.
"""
from __future__ import annotations

import threading
from array import array
from dataclasses import dataclass, field

from ..errors import RdmaspyError
from ..filter import compile_filter
from .source import Pipeline, open_frames


def needs_analysis(names: frozenset[str]) -> bool:
    from ..cli import _filter_needs_analysis
    return _filter_needs_analysis(names)


@dataclass(slots=True)
class FilterRun:
    """One application of a filter; ``rows`` grows while it runs, ``done`` when it has ended."""
    expr: str
    rows: array = field(default_factory=lambda: array("I"))
    scanned: int = 0
    done: bool = False
    error: str | None = None
    stop: threading.Event = field(default_factory=threading.Event)

    def run(self, path: str, limit: int = 0) -> None:
        """Match every frame of ``path`` (the first ``limit`` only, when more than 0)."""
        try:
            match = compile_filter(self.expr)
            cap = open_frames(path)
        except RdmaspyError as exc:
            self.error = str(exc)
            self.done = True
            return
        pipe = Pipeline(analyze=needs_analysis(match.names))     # type: ignore[attr-defined]
        feed = pipe.feed
        rows = self.rows
        t0 = -1
        try:
            with cap:
                for frame in cap:
                    if t0 < 0:
                        t0 = frame.ts
                    pkt = feed(frame)
                    if match(pkt, t0):
                        rows.append(frame.num - 1)
                    self.scanned = frame.num
                    if frame.num == limit or (frame.num & 1023 == 0 and self.stop.is_set()):
                        break
        except OSError as exc:
            self.error = f"read error: {exc.strerror or exc}"
        self.done = True
