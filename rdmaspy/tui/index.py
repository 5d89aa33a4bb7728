"""The packet list's index: every frame's row, made in the background while the user already works.

A row is the summary line ``rdmaspy decode`` prints and one byte for its colour (the protocol's number
and a severity).  A ``RowSink`` (rdmaspy.output.sinks) makes them from the pipeline's packets; a
``RowWriter`` puts each block of them in three temporary files: the lines' text, each line's end
offset in it, and the colour bytes.  Rows are read back (``os.pread``) only when they are drawn:
memory stays the same however many frames the capture holds.

For a capture file the rows are made by a helper process (``worker.py``, the machine's other core),
while the app's own background pass runs the analysis (``model.py``); in live mode the one pass makes
both.  The helper's summary lines come from a pipeline without the analysis, which changes no line:
what the analysis adds to a row is its colour (a retransmission, a missing reply: warnings).  The
analysis pass hands the index each frame's severity (``overlay``); a row's colour is final once that
pass has reached it, and the index is ``done`` when both have read the whole file.
"""
from __future__ import annotations

import os
import struct
import subprocess
import threading
import time
from array import array
from typing import IO, Callable

from ..output.sinks import SEVERITY_ERROR, SEVERITY_NONE, SEVERITY_WARNING, RowSink
from . import process
from .spool import SpooledArray, SpoolDir

__all__ = ["SEVERITY_ERROR", "SEVERITY_NONE", "SEVERITY_WARNING", "PacketIndex", "RowWriter", "read_fraction"]

_PROTOCOL_BITS = 0x3F


class RowWriter:
    """Writes blocks of rows (a ``RowSink``'s) to the three files; gives the rows written so far."""

    def __init__(self, text_fd: int, ends_fd: int, codes_fd: int) -> None:
        self.text_fd, self.ends_fd, self.codes_fd = text_fd, ends_fd, codes_fd
        self.count = 0
        self._text_at = 0

    def write(self, lines: list[bytes], ends: list[int], codes: bytes) -> int:
        _write_all(self.text_fd, b"".join(lines), self._text_at)
        self._text_at = ends[-1]
        _write_all(self.ends_fd, array("Q", ends).tobytes(), self.count * 8)
        _write_all(self.codes_fd, codes, self.count)
        self.count += len(ends)
        return self.count


def _write_all(fd: int, data: bytes, at: int) -> None:
    view = memoryview(data)
    while view:
        n = os.pwrite(fd, view, at)
        at += n
        view = view[n:]


class FileArray:
    """Numbers of one ``array`` type code in a file another writer appends to: item ``i`` is read back
    by blocks (the last few kept); the caller says how many items are there."""

    def __init__(self, fd: int, typecode: str, block: int, cached: int = 4) -> None:
        self.fd = fd
        self.typecode = typecode
        self.block = block
        self._size = array(typecode).itemsize
        self._blocks: dict[int, array] = {}
        self._order: list[int] = []
        self._cached = cached
        self._lock = threading.Lock()

    def get(self, i: int, count: int) -> int:
        """Item ``i`` of the ``count`` there are."""
        n, at = divmod(i, self.block)
        with self._lock:
            data = self._blocks.get(n)
            if data is not None and at < len(data):
                return data[at]
        have = min(self.block, count - n * self.block)
        data = array(self.typecode)
        data.frombytes(os.pread(self.fd, have * self._size, n * self.block * self._size))
        with self._lock:
            if n not in self._blocks:
                self._order.append(n)
            self._blocks[n] = data
            while len(self._order) > self._cached:
                del self._blocks[self._order.pop(0)]
        return data[at]


class PacketIndex:
    """Rows of the packet list, written by one writer (the helper process, or the live pass) and read by
    the UI.  ``count`` only grows, and only after the rows below it are in the files, so the UI may
    read any row under ``count`` at any time without a lock."""

    def __init__(self, name: str, directory: SpoolDir) -> None:
        self.name = name                     # what the status bar calls the capture
        self._files: list[IO[bytes]] = [directory.file(p) for p in ("rdmaspy-rows-", "rdmaspy-ends-",
                                                                    "rdmaspy-codes-")]
        self._text_fd, ends_fd, codes_fd = (f.fileno() for f in self._files)
        self._ends = FileArray(ends_fd, "Q", 16384)
        self._codes = FileArray(codes_fd, "B", 65536)
        self.protocols: list[str] = []       # protocol number -> name, as the rows use them
        self.count = 0                       # rows the UI may read
        self.rows_done = False               # every row is written
        self.overlay: SpooledArray | None = None   # the analysis pass's severity of each frame
        self.analysed = True                 # the analysis pass has read the whole file (no overlay: yes)
        self.error: str | None = None        # why nothing could be read (not a capture, empty...)
        self.problems: list[str] = []        # damage found part-way (a truncated record...)
        self.rows_progress = 0.0             # 0..1 of the file read, by the rows' writer ...
        self.analysis_progress = 1.0         # ... and by the analysis pass
        self.started = time.monotonic()
        self.rows_at: float | None = None       # when the rows were all written ...
        self.analysed_at: float | None = None   # ... the analysis pass ended ...
        self.finished_at: float | None = None   # ... and both
        self.before_publish: Callable[[], None] | None = None   # live mode: flush the frame spool first
        self._writer = RowWriter(self._text_fd, ends_fd, codes_fd)
        self._sink: RowSink | None = None
        self._worker: subprocess.Popen[bytes] | None = None
        self.helper_peak_mib = 0.0           # the helper process's peak memory, once it has ended
        self._reader: threading.Thread | None = None

    @property
    def done(self) -> bool:
        """The rows and their colours are final."""
        return self.rows_done and self.analysed

    @property
    def progress(self) -> float:
        return min(self.rows_progress, self.analysis_progress)

    @property
    def coloured(self) -> int:
        """Rows whose colour is final (the analysis pass has reached them)."""
        overlay = self.overlay
        return self.count if overlay is None or self.analysed else min(len(overlay), self.count)

    # -- writing in this process (live mode) ---------------------------------------------------------
    def sink(self) -> RowSink:
        """The pipeline sink that adds every packet's row (this process writes them)."""
        self._sink = RowSink(self._take_block)
        return self._sink

    def _take_block(self, lines: list[bytes], ends: list[int], codes: bytes) -> None:
        if self.before_publish is not None:
            self.before_publish()
        count = self._writer.write(lines, ends, codes)
        if self._sink is not None:
            self.protocols = list(self._sink.protocols)
        self.count = count

    def publish(self) -> None:
        """Put the pending rows in the files and let the UI see them."""
        if self._sink is not None:
            self._sink.publish()

    # -- writing in a helper process (a capture file) ------------------------------------------------
    def start_worker(self, path: str) -> None:
        """Have a helper process write the rows of the capture at ``path``."""
        fds = (self._text_fd, self._writer.ends_fd, self._writer.codes_fd)
        try:
            self._worker = process.start("rows", path, *map(str, fds), pass_fds=fds)
        except OSError as exc:
            self._rows_failed(f"the packet list's helper process did not start: {exc.strerror or exc}")
            return
        self._reader = threading.Thread(target=self._read_worker, name="rdmaspy-rows", daemon=True)
        self._reader.start()

    def _read_worker(self) -> None:
        proc = self._worker
        assert proc is not None and proc.stdout is not None
        ended = False
        for kind, payload in process.messages(proc.stdout):
            if kind == process.COUNT:
                count, progress = struct.unpack("<Qd", payload)
                self.rows_progress = progress
                self.count = count
            elif kind == process.PROTOCOL:
                self.protocols = self.protocols + [payload.decode()]
            elif kind == process.ERROR and self.error is None and not self.problems:
                # the analysis pass reads the same file and says the same, unless the helper alone failed
                self._rows_failed(payload.decode())
            elif kind == process.END:
                ended = True
                (peak,) = struct.unpack("<Q", payload)
                self.helper_peak_mib = peak / 1024
        rc = proc.wait()
        if not ended and rc != 0 and self.error is None:
            self._rows_failed(f"the packet list's helper process ended with status {rc}")
        self.rows_progress = 1.0
        self.rows_done = True
        self._finished()

    def _rows_failed(self, message: str) -> None:
        self.problems.append(message)
        self.rows_progress = 1.0
        self.rows_done = True
        self._finished()

    # -- the end --------------------------------------------------------------------------------------
    def fail(self, message: str) -> None:
        self.error = message
        self.finish()

    def finish(self) -> None:
        """The pass in this process has ended (in live mode, the rows with it)."""
        if self._worker is None:
            self.publish()
            self.rows_progress = 1.0
            self.rows_done = True
        self.analysis_progress = 1.0
        self.analysed = True
        self._finished()

    def _finished(self) -> None:
        now = time.monotonic()
        if self.rows_done and self.rows_at is None:
            self.rows_at = now
        if self.analysed and self.analysed_at is None:
            self.analysed_at = now
        if self.done and self.finished_at is None:
            self.finished_at = now

    def wait(self, timeout: float | None = None) -> bool:
        """Wait for the helper process's rows (tests, export); says whether they are all written."""
        if self._reader is not None:
            self._reader.join(timeout)
        return self.rows_done

    # -- reader side (the UI) ---------------------------------------------------------------------------
    def row(self, i: int) -> str:
        """The summary line of row ``i`` (0-based), as ``rdmaspy decode`` prints it."""
        count = self.count
        start = self._ends.get(i - 1, count) if i else 0
        data = os.pread(self._text_fd, self._ends.get(i, count) - start, start)
        return data.decode("utf-8", "replace")

    def code(self, i: int) -> int:
        code = self._codes.get(i, self.count)
        overlay = self.overlay
        if overlay is not None and i < len(overlay):
            severity = overlay[i]
            if severity > code >> 6:
                code = (code & _PROTOCOL_BITS) | (severity << 6)
        return code

    def protocol(self, code: int) -> str:
        pid = code & _PROTOCOL_BITS
        protocols = self.protocols
        return protocols[pid] if pid < len(protocols) else ""

    @staticmethod
    def severity(code: int) -> int:
        return code >> 6

    def stop_worker(self) -> None:
        """Kill the helper process if it still works (the model is closed: its rows are not wanted)."""
        proc = self._worker
        if proc is not None and proc.poll() is None:
            proc.kill()
            proc.wait()

    def close(self) -> None:
        self.stop_worker()
        if self._reader is not None:
            self._reader.join(5.0)
        for f in self._files:
            f.close()


def read_fraction(cap: object, size: int) -> float:
    """How far into its file (``size`` bytes) a capture's reader is (compressed files: the compressed
    position; 0 when it cannot say)."""
    raw = getattr(getattr(cap, "stream", None), "raw", None)
    if raw is None or not size:
        return 0.0
    try:
        return min(raw.tell() / size, 1.0)
    except (OSError, ValueError):
        return 0.0
