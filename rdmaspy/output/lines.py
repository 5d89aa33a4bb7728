"""Lines out as they are made, through a bounded buffer.

One write per block rather than per line (a decode prints hundreds of thousands of lines), but
never more than ``LIMIT`` bytes held, and, when the reader is a terminal or a pipe (a person, or a
program such as ``head`` or ``jq`` waiting for each line), never a line held longer than
``INTERVAL`` once the next one is made.  Memory does not grow with the capture, and an interrupted
run leaves every line written before ``flush()``.
"""
from __future__ import annotations

import os
import stat
import time

from ..typenames import BinaryIO, Callable, Final, Protocol
from .safe import safe_block, safe_lines

try:        # the check of a block in C, built with the compiled decoder (setup.py); safe.py's passes otherwise
    from ._scan import newlines_if_safe as _newlines_if_safe  # type: ignore[import-not-found,import-untyped,unused-ignore]
except ImportError:
    _newlines_if_safe = None
NEWLINES_IF_SAFE: Final[Callable[[bytes], int] | None] = _newlines_if_safe

LIMIT: Final = 1 << 16          # bytes held at most before they are written
INTERVAL: Final = 0.1           # seconds a line may wait for company, for a terminal or a pipe
# Final: compiled, a C static (the clock is read for every line to a terminal or pipe; an imported
# name would be a look-up in the module's dict each time).
_monotonic: Final = time.monotonic


class ByteStream(Protocol):
    """Where lines go: a binary file, or a text stream seen as one."""

    def write(self, data: bytes, /) -> int: ...
    def flush(self) -> None: ...


class LineWriter:
    """Writes lines (bytes, without their newline) to a binary stream in blocks."""

    __slots__ = ("stream", "timed", "limit", "safe", "_buf", "_size", "_due", "_checked")

    def __init__(self, stream: ByteStream, timed: bool, limit: int = LIMIT, safe: bool = False) -> None:
        self.stream = stream
        self.timed = timed            # flush by time too (a terminal or a pipe)
        self.limit = limit            # bytes held at most (1: every line as it is made, ``-l``)
        self.safe = safe              # show control characters in the lines as escapes (text from a capture)
        self._buf: list[bytes] = []
        self._size = 0
        self._due = _monotonic() + INTERVAL
        self._checked = 0             # with ``safe``: how many of the lines held are checked already (blocks)

    def line(self, data: bytes) -> None:
        self._buf.append(data)
        self._size += len(data) + 1
        if self._size >= self.limit:
            self.flush()
        elif self.timed and _monotonic() >= self._due:
            self.flush()

    def text(self, line: str) -> None:
        self.line(line.encode())

    def block(self, lines: list[str]) -> None:
        """Several lines at once (a packet's summary and hex dump): joined and encoded once, one hand-over.
        With ``safe`` the block is checked as it comes (a line may hold a newline from the capture, which
        must show escaped, not pass for a join): the lines before it are checked first, to keep the order."""
        if not lines:
            return
        data = "\n".join(lines).encode()
        if self.safe:
            data = safe_block(data, lines)
        self._add_checked(data)

    def safe_block(self, data: bytes) -> None:
        """Lines joined by newlines, in UTF-8, made safe for a terminal by their maker (a packet's tree,
        whose values are escaped as they are made): held with no check of their own."""
        self._add_checked(data)

    def _add_checked(self, data: bytes) -> None:
        buf = self._buf
        if self.safe:
            if self._checked < len(buf):
                buf[self._checked:] = safe_lines(buf[self._checked:])
            self._checked = len(buf) + 1
        buf.append(data)
        self._size += len(data) + 1
        if self._size >= self.limit:
            self.flush()
        elif self.timed and _monotonic() >= self._due:
            self.flush()

    def flush(self) -> None:
        """Write what is held and flush the stream."""
        buf = self._buf
        if buf:
            self._buf = []
            data = self._joined(buf)
            self._checked = 0
            self._size = 0
            self.stream.write(data)
        self.stream.flush()
        if self.timed:
            self._due = _monotonic() + INTERVAL


    def _joined(self, buf: list[bytes]) -> bytes:
        """The lines held, each ending in its newline, those not checked yet made safe (with ``safe``)."""
        checked = self._checked
        if self.safe and checked < len(buf):
            scan = NEWLINES_IF_SAFE
            if scan is not None and checked == 0:
                # Lines only (the usual summary): joined once and checked once; as many newlines as joins
                # means no line holds a control character of its own.
                buf.append(b"")
                data = b"\n".join(buf)
                if scan(data) == len(buf) - 1:
                    return data
                buf.pop()
            buf = buf[:checked] + safe_lines(buf[checked:])
        buf.append(b"")
        return b"\n".join(buf)


def is_timed(stream: BinaryIO) -> bool:
    """Whether lines written to ``stream`` are awaited as they come: anything but a regular file
    (a terminal, a pipe, a socket) or the null device, which nobody reads (the clock would be read
    for every line for nothing); False for a stream with no file descriptor (one in memory)."""
    try:
        st = os.fstat(stream.fileno())
    except (OSError, ValueError, AttributeError):
        return False
    if stat.S_ISREG(st.st_mode):
        return False
    return not (stat.S_ISCHR(st.st_mode) and _is_null_device(st))


def _is_null_device(st: os.stat_result) -> bool:
    try:
        null = os.stat(os.devnull)
    except OSError:
        return False
    return st.st_rdev == null.st_rdev and stat.S_ISCHR(null.st_mode)
