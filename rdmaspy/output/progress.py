"""Progress of long work on stderr: a bar over the bytes of the capture read, frames counted.

Shown only when stderr is a terminal, and only once the work has taken more than a second (a small
capture never flashes a bar); it disappears when the work ends.  It is drawn by a thread that looks
at the position of the capture file and the pipeline's frame count ten times a second: nothing is
added to the work per packet.  A capture read from a pipe, or gzip-compressed, has no size known in
advance: the bar then counts frames only.
"""
from __future__ import annotations

import os
import stat
import sys

from ..typenames import TYPE_CHECKING, Any, Callable, TextIO

if TYPE_CHECKING:
    import threading

DELAY = 1.0          # seconds of work before the bar appears
INTERVAL = 0.1       # seconds between updates


def wanted(stream: TextIO | None = None) -> bool:
    """Whether progress is drawn: stderr is a terminal (and not a dumb one)."""
    err = sys.stderr if stream is None else stream
    try:
        return err.isatty() and os.environ.get("TERM") != "dumb"
    except (AttributeError, ValueError):
        return False


def _file_of(cap: Any) -> tuple[int, int] | None:
    """(descriptor, size) of the regular file a capture reads uncompressed, else None."""
    stream = getattr(cap, "stream", None)
    if stream is None or hasattr(stream, "inner"):          # a GzipStream: its offsets are not the file's
        return None
    try:
        fd = stream.fileno()
        st = os.fstat(fd)
    except (OSError, ValueError, AttributeError):
        return None
    return (fd, st.st_size) if stat.S_ISREG(st.st_mode) and st.st_size else None


class Progress:
    """``with Progress("flows", cap, lambda: pipe.frames):`` around the work on ``cap``."""

    def __init__(self, label: str, cap: Any, frames: Callable[[], int], *, enabled: bool | None = None,
                 delay: float = DELAY, console: Any = None) -> None:
        self.label = label
        self.cap = cap
        self.frames = frames
        self.enabled = wanted() if enabled is None else enabled
        self.delay = delay
        self.console = console
        self._stop: threading.Event | None = None
        self._thread: threading.Thread | None = None

    def __enter__(self) -> "Progress":
        if self.enabled:
            import threading        # here: a bar drawn (its import, some 2 M instructions of every start)
            self._stop = threading.Event()
            self._thread = threading.Thread(target=self._run, args=(self._stop,), name="rdmaspy-progress",
                                            daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._stop is not None:
            self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=2)

    def _run(self, stop: threading.Event) -> None:
        if stop.wait(self.delay):
            return
        from rich.console import Console
        from rich.progress import (BarColumn, Progress as Bar, TaskProgressColumn, TextColumn, TimeElapsedColumn,
                                   TimeRemainingColumn)
        file = _file_of(self.cap)
        console = self.console if self.console is not None else Console(stderr=True)
        columns: list[Any] = [TextColumn("{task.description}"), BarColumn(), TaskProgressColumn(),
                              TextColumn("{task.fields[frames]:,} frames"), TimeElapsedColumn()]
        if file is not None:
            columns.append(TimeRemainingColumn())
        with Bar(*columns, console=console, transient=True, auto_refresh=False) as bar:
            task = bar.add_task(self.label, total=file[1] if file is not None else None, frames=0)
            while True:
                done = file is not None and self._position(file[0]) or 0
                bar.update(task, completed=done, frames=self.frames())
                bar.refresh()
                if stop.wait(INTERVAL):
                    break

    @staticmethod
    def _position(fd: int) -> int:
        try:
            return os.lseek(fd, 0, os.SEEK_CUR)
        except OSError:
            return 0
