"""What every view of the TUI looks at: one capture, its packet index, its analysis, its details."""
from __future__ import annotations

import os
import threading
from typing import Any

from ..errors import RdmaspyError
from ..pipeline import Options, Pipeline
from .analysis_store import AnalysisStore
from .checkpoints import EVERY as CHECKPOINT_EVERY, Checkpoints
from .detail import DetailSource
from .display import FilterRun
from .index import PacketIndex, read_fraction
from .source import open_frames
from .spool import SpoolDir


class CaptureModel:
    """A capture file opened in the TUI.  ``start()`` begins the background work on it.

    Two passes read the file at the same time, each through the one pipeline (``rdmaspy.pipeline``): a
    helper process makes the packet list's rows (``index``: the summary line and colour of every packet,
    ``worker.py``), and a thread of this process runs the analysis into the analysis store
    (``analysis``: the transactions, connections, credits and findings the analysis views read, and the
    colour each frame's findings give its row) and now and then keeps its state (``checkpoints``), from
    which a frame's detail is made.  All of them keep their records in files made in a private temporary
    directory and unlinked at once (the directory is removed as soon as they are made): they go when they
    are closed or the process ends.  In live mode one pass makes both (``pipeline``).
    """

    def __init__(self, path: str, name: str | None = None, checkpoint_every: int = CHECKPOINT_EVERY,
                 host: Any = None) -> None:
        """``host``: the join of host traces (``output.hosttrace.prepare``): the transactions carry their
        kernel events, which the transactions view's timeline shows among the wire's steps."""
        self.path = path
        self.host = host
        self.name = name or os.path.basename(path)
        self.spool_dir = SpoolDir()
        self.index = PacketIndex(self.name, self.spool_dir)
        self.analysis = AnalysisStore(self.spool_dir)
        self.checkpoints = Checkpoints(self.spool_dir, checkpoint_every)
        # Every spool file is made (and unlinked): the directory can go now, so that not even an
        # empty directory is left behind when the process is killed.
        self.spool_dir.remove()
        self.details = DetailSource(path, checkpoints=self.checkpoints)
        self.live = False                    # True in live mode (``rdmaspy capture --tui``)
        self.live_filter: FilterRun | None = None   # live mode: the display filter new frames are matched by
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        index = self.index
        index.overlay = self.analysis.severities
        index.analysed = False
        index.analysis_progress = 0.0
        index.start_worker(self.path)
        self._thread = threading.Thread(target=self._analyse, name="rdmaspy-analysis", daemon=True)
        self._thread.start()

    def pipeline(self) -> Pipeline:
        """Live mode's pipeline: dissection and analysis into the index and the store."""
        return Pipeline(None, Options(analyze=True),
                        self._sinks([self.index.sink(), self.analysis.sink(), self.analysis]))

    def analysis_pipeline(self) -> Pipeline:
        """A capture file's analysis pass: the rows come from the helper process, so no packet is shown:
        the dissectors skip the Info text and the analysis its fields (a detail made from a checkpoint of
        this pass turns both on: ``Checkpoints.load``)."""
        return Pipeline(None, Options(analyze=True, packet_fields=False),
                        self._sinks([self.analysis.sink(), self.analysis]))

    def _sinks(self, sinks: list[Any]) -> list[Any]:
        """``sinks`` after the host traces' join when there is one: the transactions get their events
        before the store sees them."""
        return sinks if self.host is None else [self.host, *sinks]

    def _analyse(self) -> None:
        analyse_file(self.index, self.path, self._stop, self.analysis_pipeline(), self.checkpoints)

    def live_status(self) -> str:
        """What the status bar says of a live capture ('' for a file)."""
        return ""

    def wait(self, timeout: float | None = None) -> bool:
        """Wait for the background work to end (tests, export); says whether it has."""
        if self._thread is not None:
            self._thread.join(timeout)
        self.index.wait(timeout)
        return self.index.done

    def close(self) -> None:
        self._stop.set()
        self.index.stop_worker()         # at once: joining the analysis pass may take a while
        if self._thread is not None:
            self._thread.join(5.0)
        self.details.close()
        self.index.close()
        self.analysis.close()
        self.checkpoints.close()


class _Stopped(Exception):
    """The model is closed while its pass reads the file."""


# Frames between two collections of every generation in the analysis pass (the pipeline's default: 65,536),
# and of the young ones (1,024): the pass makes none of the young ones but these.  The store breaks the
# cycles of the transactions it spools (``TransactionIndex.let_go``), so what a collection finds is a few
# thousand objects, while each walks all the analysis keeps alive (and, in the app, the screen's objects):
# at 1M frames of the TUI's mix, in the app, the collections took 0.50-0.54 s of the pass thread's CPU with
# 16,384 and 65,536 (61 young, 15 full), 0.08 s with 262,144 alone (3 full), the peak memory within 1 MiB.
# Between them the collector's own threshold (``YOUNG_THRESHOLD`` young objects alive) collects the young
# generation, a few times.
ANALYSIS_FULL_COLLECT_EVERY = 262_144
ANALYSIS_YOUNG_COLLECT_EVERY = ANALYSIS_FULL_COLLECT_EVERY


def analyse_file(index: PacketIndex, path: str, stop: threading.Event, pipe: Pipeline,
                 checkpoints: Checkpoints | None = None) -> None:
    """The analysis pass over a capture file: every frame through ``pipe`` (whose sinks are the analysis
    store's), its state kept now and then in ``checkpoints``; what is wrong with the file goes to ``index``."""
    try:
        cap = open_frames(path)
    except RdmaspyError as exc:
        index.fail(str(exc))
        return
    try:
        size = os.path.getsize(path)
    except OSError:
        size = 0

    def between(n: int) -> int:
        """After frame ``n``: a checkpoint when one is due, the progress and a stop every 1024 frames;
        the frame to be called after next."""
        if checkpoints is not None and n == checkpoints.next_at:
            checkpoints.take(pipe, n)        # the pipeline has fed frames 1..n
        if n & 1023 == 0:
            index.analysis_progress = read_fraction(cap, size)
            if stop.is_set():
                raise _Stopped
        after = (n | 1023) + 1
        return min(after, checkpoints.next_at) if checkpoints is not None else after

    try:
        with cap:
            # the pipeline's own loop, compiled, with the collector's settings of a long run
            pipe.source = cap
            pipe.run(between, min(1024, checkpoints.next_at) if checkpoints is not None else 1024,
                     ANALYSIS_YOUNG_COLLECT_EVERY, ANALYSIS_FULL_COLLECT_EVERY)
            index.problems.extend([*cap.warnings, *cap.problems])
    except _Stopped:
        return
    except OSError as exc:
        index.problems.append(f"read error: {exc.strerror or exc}")
    if pipe.frames == 0 and index.error is None and not index.problems:
        index.error = "the capture holds no packets"
    index.finish()
