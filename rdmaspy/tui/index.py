"""The packet list's index: built once, in the background, while the user already works.

A background thread runs the pipeline over the capture once.  Per frame it keeps only what the list
needs to draw a row without decoding again: the summary line ``rdmaspy decode`` prints, spooled to
a temporary file, its end offset and one byte for its colour (protocol and expert severity) in
``SpooledArray``s, whose older blocks wait on disk too: memory stays the same however many frames
the capture holds.  Rows are read back from the spool (``os.pread``) only when they are drawn.
The detail of a frame is dissected again on demand (``detail.py``).
"""
from __future__ import annotations

import os
import threading
import time
from typing import Callable, Iterable

from ..errors import RdmaspyError
from ..output.text import packet_style, summary_bytes
from ..packet import Frame, Packet
from ..pipeline import Pipeline
from .checkpoints import Checkpoints
from .source import open_frames
from .spool import SpooledArray, SpoolDir

# The colour byte: bits 0-5 the protocol's number in ``PacketIndex.protocols``, bits 6-7 the severity.
SEVERITY_NONE = 0
SEVERITY_WARNING = 1
SEVERITY_ERROR = 2
_SEVERITY_OF_STYLE = {None: SEVERITY_NONE, "yellow": SEVERITY_WARNING, "red": SEVERITY_ERROR}
_MAX_PROTOCOLS = 63          # protocol numbers past this share the last one (drawn uncoloured)
_PUBLISH_ROWS = 4096          # rows become visible at least every this many rows...
_PUBLISH_SECONDS = 0.1        # ...or this often


class PacketIndex:
    """Rows of the packet list, appended by one writer thread and read by the UI.

    ``count`` only grows, and only after the rows below it are on the spool, so the UI may read any
    row under ``count`` at any time without a lock.
    """

    def __init__(self, name: str, directory: SpoolDir) -> None:
        self.name = name                     # what the status bar calls the capture
        self._spool = directory.file("rdmaspy-rows-")
        self._fd = self._spool.fileno()
        self._ends = SpooledArray(directory, "Q", 16384)     # end offset of row i's text in the spool
        self._codes = SpooledArray(directory, "B", 65536)    # colour byte of row i
        self._pending: list[bytes] = []
        self._written = 0                    # spool bytes written
        self.protocols: list[str] = []       # protocol number -> name, as the rows use them
        self._proto_ids: dict[str, int] = {}
        self.count = 0                       # rows the UI may read
        self.done = False                    # the background pass has ended
        self.error: str | None = None        # why nothing could be read (not a capture, empty...)
        self.problems: list[str] = []        # damage found part-way (a truncated record...)
        self.progress = 0.0                  # 0..1 of the file read
        self.started = time.monotonic()
        self.finished_at: float | None = None
        self._last_publish = 0.0
        self.before_publish: Callable[[], None] | None = None   # live mode: flush the frame spool first

    # -- writer side (the background thread) --------------------------------------------------------
    def add(self, pkt: Packet, t0: int) -> None:
        line = summary_bytes(pkt, t0)
        self._pending.append(line)
        self._written += len(line)
        self._ends.append(self._written)
        self._codes.append(self._proto_id(pkt.proto) | (_SEVERITY_OF_STYLE.get(packet_style(pkt), 0) << 6))
        if len(self._pending) >= _PUBLISH_ROWS:
            self.publish()
        elif len(self._pending) & 63 == 0 and time.monotonic() - self._last_publish >= _PUBLISH_SECONDS:
            self.publish()

    def _proto_id(self, proto: str) -> int:
        pid = self._proto_ids.get(proto)
        if pid is None:
            if len(self.protocols) >= _MAX_PROTOCOLS:
                return _MAX_PROTOCOLS
            pid = self._proto_ids[proto] = len(self.protocols)
            self.protocols.append(proto)
        return pid

    def publish(self) -> None:
        """Put the pending rows on the spool and let the UI see them."""
        if self.before_publish is not None:
            self.before_publish()
        if self._pending:
            os.write(self._fd, b"".join(self._pending))
            self._pending.clear()
        self.count = len(self._ends)
        self._last_publish = time.monotonic()

    def fail(self, message: str) -> None:
        self.error = message
        self.finish()

    def finish(self) -> None:
        self.publish()
        self.progress = 1.0
        self.finished_at = time.monotonic()
        self.done = True

    # -- reader side (the UI) -----------------------------------------------------------------------
    def row(self, i: int) -> str:
        """The summary line of row ``i`` (0-based), as ``rdmaspy decode`` prints it."""
        start = self._ends[i - 1] if i else 0
        data = os.pread(self._fd, self._ends[i] - start, start)
        return data.decode("utf-8", "replace")

    def code(self, i: int) -> int:
        return self._codes[i]

    def protocol(self, code: int) -> str:
        pid = code & 0x3F
        return self.protocols[pid] if pid < len(self.protocols) else ""

    @staticmethod
    def severity(code: int) -> int:
        return code >> 6

    def close(self) -> None:
        self._spool.close()
        self._ends.close()
        self._codes.close()


def file_progress(cap: object, frame: Frame, size: int) -> float:
    """How far into the file a frame is (compressed files: the compressed position)."""
    stream = getattr(cap, "stream", None)
    raw = getattr(stream, "raw", None)
    if raw is not None:
        try:
            return min(raw.tell() / size, 1.0)
        except (OSError, ValueError):
            return 0.0
    return min(frame.offset / size, 1.0) if size else 1.0


class IndexSink:
    """The pipeline's sink that adds every packet's row to the index."""

    def __init__(self, index: PacketIndex) -> None:
        self.index = index
        self._pipe: Pipeline | None = None

    def attach(self, pipe: Pipeline) -> None:
        self._pipe = pipe

    def packet(self, pkt: Packet) -> None:
        assert self._pipe is not None
        self.index.add(pkt, self._pipe.t0)

    def finish(self) -> None:
        self.index.publish()


def index_file(index: PacketIndex, path: str, stop: threading.Event, pipe: Pipeline,
               checkpoints: Checkpoints | None = None) -> None:
    """The background pass over a capture file: every frame through ``pipe`` (whose sinks fill
    ``index``), its state kept now and then in ``checkpoints``."""
    try:
        cap = open_frames(path)
    except RdmaspyError as exc:
        index.fail(str(exc))
        return
    try:
        size = os.path.getsize(path)
    except OSError:
        size = 0
    try:
        with cap:
            _run(index, cap, pipe, stop, lambda f: file_progress(cap, f, size), checkpoints)
            index.problems = [*cap.warnings, *cap.problems]
    except OSError as exc:
        index.problems.append(f"read error: {exc.strerror or exc}")
    index.publish()
    if index.count == 0 and index.error is None and not index.problems:
        index.error = "the capture holds no packets"
    index.finish()


def _run(index: PacketIndex, frames: Iterable[Frame], pipe: Pipeline, stop: threading.Event,
         where: Callable[[Frame], float], checkpoints: Checkpoints | None) -> None:
    feed = pipe.feed
    n = 0
    next_checkpoint = checkpoints.next_at if checkpoints is not None else -1
    for frame in frames:
        feed(frame)
        n += 1
        if n == next_checkpoint and checkpoints is not None:
            checkpoints.take(pipe, n)
            next_checkpoint = checkpoints.next_at
        if n & 1023 == 0:
            index.progress = where(frame)
            if stop.is_set():
                return
    pipe.finish()
