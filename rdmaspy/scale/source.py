"""Several capture files read as one capture, in the order given (a ring buffer's files, a shell glob).

Frames are numbered on across the files (the second file's first frame follows the first file's last),
so a connection set up in one file and used in the next is one connection, as in the capture the
files were cut from; ``file_of(frame)`` names the file a frame came from.
"""
from __future__ import annotations

import bisect
from typing import Iterator

from ..packet import Frame
from ..readers import Capture, open_capture


class ChainedCapture:
    """Frames of ``paths`` one file after the other; ``problems`` gathers each file's damage."""

    def __init__(self, paths: list[str]) -> None:
        self.paths = list(paths)
        self.path = ", ".join(self.paths)
        self.problems: list[str] = []
        self.starts: list[int] = []          # the first frame number of each file opened so far
        self.frames = 0
        self._open: Capture | None = None

    def __iter__(self) -> Iterator[Frame]:
        for path in self.paths:
            cap = open_capture(path)
            self._open = cap
            base = self.frames
            self.starts.append(base + 1)
            with cap:
                for frame in cap:
                    frame.num += base
                    self.frames = frame.num
                    yield frame
            self.problems.extend(f"{path}: {p}" for p in cap.problems)
            self._open = None

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
