"""What every view of the TUI looks at: one capture, its packet index, its analysis, its details."""
from __future__ import annotations

import os
import threading
from typing import Any

from ..pipeline import Options, Pipeline
from .analysis_store import AnalysisStore
from .checkpoints import EVERY as CHECKPOINT_EVERY, Checkpoints
from .detail import DetailSource
from .display import FilterRun
from .index import IndexSink, PacketIndex, index_file
from .spool import SpoolDir


class CaptureModel:
    """A capture file opened in the TUI.  ``start()`` begins the background pass over it.

    The pass is the one pipeline (``rdmaspy.pipeline``) with the analysis on and two sinks: the
    packet index (a row per packet, for the list) and the analysis store (``analysis``: the
    transactions, connections, credits and findings the analysis views read); now and then it
    keeps its state (``checkpoints``), from which a frame's detail is made.  All of them keep their
    records in files made in a private temporary directory and unlinked at once (the directory is
    removed as soon as they are made): they go when they are closed or the process ends.
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
        self._thread = threading.Thread(target=self._index, name="rdmaspy-index", daemon=True)
        self._thread.start()

    def pipeline(self) -> Pipeline:
        """The pipeline of the background pass: dissection and analysis into the index and the store."""
        sinks: list[Any] = [IndexSink(self.index), self.analysis]
        if self.host is not None:
            sinks.insert(0, self.host)      # first: the transactions get their events before the store sees them
        return Pipeline(None, Options(analyze=True), sinks)

    def _index(self) -> None:
        index_file(self.index, self.path, self._stop, self.pipeline(), self.checkpoints)

    def live_status(self) -> str:
        """What the status bar says of a live capture ('' for a file)."""
        return ""

    def wait(self, timeout: float | None = None) -> bool:
        """Wait for the background pass to end (tests, export); says whether it has."""
        if self._thread is not None:
            self._thread.join(timeout)
        return self.index.done

    def close(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(5.0)
        self.details.close()
        self.index.close()
        self.analysis.close()
        self.checkpoints.close()
