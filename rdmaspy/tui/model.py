"""What every view of the TUI looks at: one capture, its packet index, its analysis, its details."""
from __future__ import annotations

import os
import threading
from typing import Any, Callable

from ..analysis.analyzer import Analyzer
from ..analysis.model import AnalysisModel
from ..packet import Packet
from .detail import DetailSource
from .display import FilterRun
from .index import PacketIndex, index_file
from .source import Pipeline


class CaptureModel:
    """A capture file opened in the TUI.  ``start()`` begins the background pass over it.

    ``packet_listeners`` are called (on the background thread) with every packet once it has been
    dissected and analysed, in capture order, so that a view can keep its own summary as it goes;
    ``analysis`` (an ``AnalysisModel``) keeps every record and finding of the pass as they become
    final; ``record_listeners`` and ``finding_listeners`` receive what the analysis emits (the Analyzer's
    ``on_record`` and ``on_finding``), also on the background thread.  Add to them before ``start``.
    """

    def __init__(self, path: str, name: str | None = None) -> None:
        self.path = path
        self.name = name or os.path.basename(path)
        self.index = PacketIndex(self.name)
        self.details = DetailSource(path)
        # Every record and finding of the background pass's analysis, kept for the analysis views.
        self.analysis = AnalysisModel()
        self.packet_listeners: list[Callable[[Packet], None]] = []
        self.record_listeners: list[Callable[..., None]] = []
        self.finding_listeners: list[Callable[[Any], None]] = []
        self.live = False                    # True in live mode (``rdmaspy capture --tui``)
        self.live_filter: FilterRun | None = None   # live mode: the display filter new frames are matched by
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def analyzer(self) -> Analyzer | None:
        """The analysis of the background pass (grows while the capture is indexed)."""
        pipe = self.index.pipeline
        return pipe.analyzer if pipe is not None else None

    def start(self) -> None:
        self._thread = threading.Thread(target=self._index, name="rdmaspy-index", daemon=True)
        self._thread.start()

    def pipeline(self) -> Pipeline:
        """The pipeline of the background pass, its analysis wired to the listeners."""
        return Pipeline(keep_findings=False, on_finding=self._finding, on_record=self._record)

    def _index(self) -> None:
        index_file(self.index, self.path, self._stop, self._notify if self.packet_listeners else None,
                   self.pipeline())

    def _record(self, record: Any) -> None:
        self.analysis.on_record(record)
        for fn in self.record_listeners:
            fn(record)

    def _finding(self, finding: Any) -> None:
        self.analysis.on_finding(finding)
        for fn in self.finding_listeners:
            fn(finding)

    def _notify(self, pkt: Packet) -> None:
        for fn in self.packet_listeners:
            fn(pkt)

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
