"""Files the commands write: whole or not at all, never over their input, errors that name the path.

``OutputFile(path, inputs)`` is a context manager giving a binary stream.  A regular file is written
under a temporary name beside it (``.NAME.rdmaspy-PID.part``) and renamed onto ``path`` only when the
run succeeds, so an interrupted or failed run leaves the previous file (or none), never a cut one.
Standard output (``-``) and devices (``/dev/null``, a FIFO) are written directly.  A write error
becomes one line naming the path: ``/dev/full: No space left on device``.
"""
from __future__ import annotations

import os
import stat
import sys
from types import TracebackType
from typing import BinaryIO, Iterable, cast

from ..errors import RdmaspyError

STDOUT = "-"


def refuse_input(path: str, inputs: Iterable[str]) -> None:
    """RdmaspyError when ``path`` is one of the capture files the command reads."""
    for src in inputs:
        if src == STDOUT or path == STDOUT:
            continue
        try:
            same = os.path.samefile(src, path)
        except OSError:
            same = False
        if same:
            raise RdmaspyError(f"{path}: this is the capture being read; write the output to another file")


class NamedStream:
    """A binary stream whose write errors name its path (one line, no traceback)."""

    __slots__ = ("raw", "path")

    def __init__(self, raw: BinaryIO, path: str) -> None:
        self.raw = raw
        self.path = path

    def _failed(self, exc: OSError) -> RdmaspyError:
        return RdmaspyError(f"{self.path}: {exc.strerror or exc}")

    def write(self, data: bytes | bytearray | memoryview) -> int:
        try:
            return self.raw.write(data)
        except OSError as exc:
            raise self._failed(exc) from None

    def flush(self) -> None:
        try:
            self.raw.flush()
        except OSError as exc:
            raise self._failed(exc) from None

    def close(self) -> None:
        try:
            self.raw.close()
        except OSError as exc:
            raise self._failed(exc) from None

    def fileno(self) -> int:
        return self.raw.fileno()

    @property
    def name(self) -> str:
        return self.path


class OutputFile:
    """The file at ``path``, written whole on success or left as it was (see the module)."""

    def __init__(self, path: str, inputs: Iterable[str] = (), buffering: int = 1 << 20) -> None:
        refuse_input(path, inputs)
        self.path = path
        self.buffering = buffering
        self.temporary: str | None = None
        self.stream: NamedStream | None = None

    def __enter__(self) -> BinaryIO:
        """The stream to write: a ``NamedStream``, which does what the writers ask of a binary file."""
        path = self.path
        if path == STDOUT:
            sys.stdout.flush()
            self.stream = NamedStream(sys.stdout.buffer, "standard output")
            return cast(BinaryIO, self.stream)
        try:
            mode = os.stat(path).st_mode
        except FileNotFoundError:
            mode = None
        except OSError as exc:
            raise RdmaspyError(f"{path}: {exc.strerror or exc}") from None
        if mode is not None and stat.S_ISDIR(mode):
            raise RdmaspyError(f"{path}: is a directory")
        try:
            if mode is not None and not stat.S_ISREG(mode):
                raw = open(path, "wb", buffering=self.buffering)      # a device or a FIFO: written in place
            else:
                raw = self._temporary()
        except OSError as exc:
            raise RdmaspyError(f"{path}: {exc.strerror or exc}") from None
        self.stream = NamedStream(raw, path)
        return cast(BinaryIO, self.stream)

    def _temporary(self) -> BinaryIO:
        head, tail = os.path.split(os.path.abspath(self.path))
        name = os.path.join(head, f".{tail}.rdmaspy-{os.getpid()}.part")
        fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o666)
        self.temporary = name
        return os.fdopen(fd, "wb", buffering=self.buffering)

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        stream = self.stream
        if stream is None:
            return
        if self.path == STDOUT:
            if kind is None:
                stream.flush()
            return
        try:
            if kind is None:
                stream.close()
                if self.temporary is not None:
                    self._keep()
            else:
                try:
                    stream.close()
                except RdmaspyError:
                    pass                      # the run failed already: its error is the one to tell
        finally:
            if self.temporary is not None and os.path.lexists(self.temporary):
                os.unlink(self.temporary)

    def _keep(self) -> None:
        """The temporary file (made with the permissions of a new file) becomes the output."""
        assert self.temporary is not None
        try:
            os.replace(self.temporary, self.path)
        except OSError as exc:
            raise RdmaspyError(f"{self.path}: {exc.strerror or exc}") from None
