"""Where the TUI's packets come from: the one pipeline (reader → Engine → Analyzer) over a capture.

The TUI never dissects by itself: every packet it shows has gone through this, exactly as
``rdmaspy decode`` runs it, so what the screen says is what ``decode`` prints.
"""
from __future__ import annotations

from typing import Any, Callable, Iterator

from ..analysis.analyzer import Analyzer
from ..engine import Engine
from ..packet import Frame, Packet
from ..readers import Capture, open_capture


class Pipeline:
    """Frames in, dissected and analysed packets out, one at a time (``feed``), then ``finish``."""

    __slots__ = ("engine", "analyzer")

    def __init__(self, analyze: bool = True, keep_findings: bool = False,
                 on_finding: Callable[[Any], None] | None = None,
                 on_record: Callable[..., None] | None = None) -> None:
        self.engine = Engine()
        self.analyzer: Analyzer | None = Analyzer(on_finding=on_finding, on_record=on_record,
                                                  keep_findings=keep_findings,
                                                  budget=self.engine.session.budget) if analyze else None
        if self.analyzer is not None:
            self.analyzer.engine = self.engine

    def feed(self, frame: Frame) -> Packet:
        pkt = self.engine.dissect(frame)
        if self.analyzer is not None:
            self.analyzer.feed(pkt)
        return pkt

    def finish(self) -> None:
        if self.analyzer is not None:
            self.analyzer.finish()


def open_frames(path: str) -> Capture:
    """The capture at ``path``; raises CaptureError (with a sentence for the status bar) if it is none."""
    return open_capture(path)


def packets_of(cap: Capture, pipe: Pipeline) -> Iterator[tuple[Packet, int]]:
    """(packet, ts of the first frame) for every frame of ``cap``, then the pipeline's finish."""
    t0 = -1
    feed = pipe.feed
    for frame in cap:
        if t0 < 0:
            t0 = frame.ts
        yield feed(frame), t0
    pipe.finish()
