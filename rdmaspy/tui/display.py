"""Applying a display filter: which rows ``rdmaspy decode -Y EXPR`` would print.

The capture runs through the pipeline once more with the compiled filter, exactly as ``decode -Y``
runs it (with the analysis when the filter names an analysis or expert field), on a background
thread; the result is the list of matching rows, 4 bytes a row.
"""
from __future__ import annotations

import threading
from array import array
from dataclasses import dataclass, field
from typing import Callable

from ..errors import RdmaspyError
from ..filter import compile_filter, filter_needs_analysis
from ..packet import Packet
from ..pipeline import Options, Pipeline
from .source import open_frames


def needs_analysis(names: frozenset[str]) -> bool:
    return filter_needs_analysis(names)


@dataclass(slots=True)
class FilterRun:
    """One application of a filter; ``rows`` grows while it runs, ``done`` when it has ended."""
    expr: str
    rows: array = field(default_factory=lambda: array("I"))
    scanned: int = 0
    done: bool = False
    error: str | None = None
    stop: threading.Event = field(default_factory=threading.Event)
    # Live mode: frames past ``limit`` are matched as they arrive (``offer``) and wait in ``pending``
    # until the run over the frames before them is done, so that ``rows`` stays in order.
    limit: int = 0
    pending: list[int] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    match: Callable[[Packet, int], bool] | None = None

    def compile(self) -> None:
        self.match = compile_filter(self.expr)

    def offer(self, row: int, pkt: Packet, t0: int) -> None:
        """A frame that arrived live (row ``row``, 0-based): kept if it matches."""
        match = self.match
        if match is None or row < self.limit or not match(pkt, t0):
            return
        with self.lock:
            if self.done:
                self.rows.append(row)
            else:
                self.pending.append(row)

    def _end(self) -> None:
        with self.lock:
            self.rows.extend(self.pending)
            self.pending.clear()
            self.done = True

    def run(self, path: str) -> None:
        """Match every frame of ``path`` (the first ``limit`` only, when more than 0)."""
        limit = self.limit
        try:
            if self.match is None:
                self.compile()
            match = self.match
            assert match is not None
            cap = open_frames(path)
        except RdmaspyError as exc:
            self.error = str(exc)
            self._end()
            return
        rows = _Rows(self.rows)
        pipe = Pipeline(None, Options(analyze=needs_analysis(match.names), matcher=match),   # type: ignore[attr-defined]
                        [rows])
        feed = pipe.feed
        try:
            with cap:
                for frame in cap:
                    feed(frame)
                    self.scanned = frame.num
                    if frame.num == limit or (frame.num & 1023 == 0 and self.stop.is_set()):
                        break
                if limit and self.scanned < limit and not self.stop.is_set():
                    self.error = f"the capture spool ended at frame {self.scanned} of {limit}"
        except OSError as exc:
            self.error = f"read error: {exc.strerror or exc}"
        self._end()


class _Rows:
    """The sink of a filter's pipeline: the row (frame number - 1) of every packet it shows."""

    def __init__(self, rows: array) -> None:
        self.rows = rows

    def packet(self, pkt: Packet) -> None:
        self.rows.append(pkt.frame.num - 1)

    def finish(self) -> None:
        pass
