"""What every capture writer shares: opening a path (or taking a stream), flushing, closing."""
from __future__ import annotations

import os
from typing import BinaryIO

from ..errors import RdmaspyError


class Writer:
    """A binary output: a path opened and owned here, or a stream the caller owns."""

    def __init__(self, target: str | os.PathLike | BinaryIO, buffering: int) -> None:
        if isinstance(target, (str, os.PathLike)):
            self.path = os.fspath(target)
            try:
                self.stream: BinaryIO = open(self.path, "wb", buffering=buffering)
            except OSError as exc:
                raise RdmaspyError(f"{self.path}: cannot write: {exc.strerror or exc}") from None
            self._owns = True
        else:
            self.path = getattr(target, "name", "<stream>")
            self.stream = target
            self._owns = False

    def flush(self) -> None:
        self.stream.flush()

    def close(self) -> None:
        if self._owns:
            try:
                self.stream.close()
            except OSError as exc:
                raise RdmaspyError(f"{self.path}: write failed: {exc.strerror or exc}") from None
        else:
            self.stream.flush()

    def __enter__(self):
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
