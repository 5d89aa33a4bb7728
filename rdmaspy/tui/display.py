"""Applying a display filter: which rows ``rdmaspy decode -Y EXPR`` would print.

The capture runs through the pipeline once more with the compiled filter, exactly as ``decode -Y``
runs it (with the analysis when the filter names an analysis or expert field), in a helper process
(``worker.py``) that a background thread reads; the result is the list of matching rows, 4 bytes a row.
"""
from __future__ import annotations

import struct
import subprocess
import threading
from array import array
from dataclasses import dataclass, field
from typing import Callable

from ..errors import RdmaspyError
from ..filter import compile_filter
from ..packet import Packet
from . import process


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
    helper_peak_mib: float = 0.0         # the helper process's peak memory, once it has ended

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
        """Match every frame of ``path`` (the first ``limit`` only, when more than 0), in a helper process
        (``worker.py``): the app's process keeps its time for the screen and its analysis pass."""
        try:
            if self.match is None:
                self.compile()
            proc = process.start("filter", path, self.expr, str(self.limit))
        except RdmaspyError as exc:
            self.error = str(exc)
            self._end()
            return
        except OSError as exc:
            self.error = f"the filter's helper process did not start: {exc.strerror or exc}"
            self._end()
            return
        assert proc.stdout is not None
        watcher = threading.Thread(target=self._kill_when_stopped, args=(proc,), daemon=True)
        watcher.start()
        ended = False
        for kind, payload in process.messages(proc.stdout):
            if kind == process.ROWS:
                self.rows.frombytes(payload)
            elif kind == process.SCANNED:
                (self.scanned,) = struct.unpack("<Q", payload)
            elif kind == process.ERROR:
                self.error = payload.decode()
            elif kind == process.END:
                ended = True
                (peak,) = struct.unpack("<Q", payload)
                self.helper_peak_mib = peak / 1024
        rc = proc.wait()
        if not ended and not self.stop.is_set() and self.error is None:
            self.error = f"the filter's helper process ended with status {rc}"
        self._end()
        watcher.join()

    def _kill_when_stopped(self, proc: subprocess.Popen[bytes]) -> None:
        while proc.poll() is None:
            if self.stop.wait(0.1):
                proc.kill()
                return
