"""Several capture files read as one capture, in the order given (a ring buffer's files, a shell glob).

Frames are numbered on across the files (the second file's first frame follows the first file's last),
so a connection set up in one file and used in the next is one connection, as in the capture the
files were cut from; ``file_of(frame)`` names the file a frame came from.  Given how many frames each
file holds (``counts``, from a first read), ``between(lo, hi)`` reads only the files that hold frames
``lo + 1 .. hi``: the time slices of a parallel export read their own files, side by side.
"""
from __future__ import annotations

import bisect
from typing import Iterator

from ..packet import Frame
from ..readers import Capture, open_capture


class ChainedCapture:
    """Frames of ``paths`` one file after the other; ``problems`` gathers each file's damage."""

    def __init__(self, paths: list[str], counts: list[int] | None = None) -> None:
        self.paths = list(paths)
        self.counts = counts                 # frames in each file, when a first read counted them
        self.path = ", ".join(self.paths)
        self.problems: list[str] = []
        # the first frame number of each file (known from ``counts``, else of each file opened so far)
        self.starts: list[int] = [] if counts is None else [1 + sum(counts[:i]) for i in range(len(counts))]
        self.frames = 0
        self._open: Capture | None = None

    def __iter__(self) -> Iterator[Frame]:
        for path in self.paths:
            cap = open_capture(path)
            self._open = cap
            base = self.frames
            if self.counts is None:
                self.starts.append(base + 1)
            with cap:
                for frame in cap:
                    frame.num += base
                    self.frames = frame.num
                    yield frame
            self.problems.extend(f"{path}: {p}" for p in cap.problems)
            self._open = None

    def between(self, lo: int, hi: int) -> Iterator[Frame]:
        """Frames ``lo + 1 .. hi``, numbered as in the whole capture, from the files that hold them
        (every file from the start without ``counts``)."""
        counts = self.counts if self.counts is not None else [-1] * len(self.paths)
        base = 0
        for path, count in zip(self.paths, counts):
            if count >= 0 and base + count <= lo:
                base += count                # a file wholly before the slice: not opened
                continue
            if base >= hi:
                return
            cap = open_capture(path)
            self._open = cap
            seen = 0
            with cap:
                for frame in cap:
                    seen += 1
                    frame.num += base
                    if frame.num > hi:
                        return
                    if frame.num > lo:
                        yield frame
            self._open = None
            base += seen

    def file_of(self, frame: int) -> str:
        """The file frame number ``frame`` was read from."""
        i = bisect.bisect_right(self.starts, frame) - 1
        return self.paths[max(i, 0)]

    def close(self) -> None:
        if self._open is not None:
            self._open.close()

    def __enter__(self) -> "ChainedCapture":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
