"""The TUI's helper processes: work on a capture file beside the app, on the machine's other core.

    python -m rdmaspy.tui.worker rows FILE TEXT_FD ENDS_FD CODES_FD
    python -m rdmaspy.tui.worker filter FILE EXPR LIMIT

``rows`` makes the packet list's rows (``index.py``) and writes them to the three files it inherits;
``filter`` finds the rows a display filter shows, as ``decode -Y EXPR`` does (the first LIMIT frames
only, when LIMIT is more than 0).  Each runs the one pipeline, compiled where rdmaspy is, in a process of
its own: it takes none of the app's time, and the app's analysis pass runs beside it.  Each tells the
app what it has done in the messages of ``process.py``.
"""
from __future__ import annotations

import os
import struct
import sys
import time
from array import array
from itertools import islice
from typing import Iterable

from ..errors import RdmaspyError
from ..packet import Frame, Packet
from ..pipeline import Options, Pipeline
from .index import RowWriter, read_fraction
from .process import COUNT, END, ERROR, PROTOCOL, ROWS, SCANNED, Out


def _peak_kib() -> int:
    """This process's peak resident memory since it started (getrusage's counts what it was forked from)."""
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def _end(out: Out) -> None:
    out.send(END, struct.pack("<Q", _peak_kib()))


def _size(path: str) -> int:
    try:
        return os.path.getsize(path)
    except OSError:
        return 0


def rows(path: str, text_fd: int, ends_fd: int, codes_fd: int) -> None:
    from ..output.sinks import RowSink
    from .source import open_frames
    out = Out()
    try:
        cap = open_frames(path)
    except RdmaspyError as exc:
        out.send(ERROR, str(exc).encode())
        _end(out)
        return
    size = _size(path)
    writer = RowWriter(text_fd, ends_fd, codes_fd)
    told: list[str] = []

    def emit(lines: list[bytes], ends: list[int], codes: bytes) -> None:
        count = writer.write(lines, ends, codes)
        for name in sink.protocols[len(told):]:
            out.send(PROTOCOL, name.encode())
            told.append(name)
        out.send(COUNT, struct.pack("<Qd", count, read_fraction(cap, size)))

    sink = RowSink(emit)
    try:
        with cap:
            Pipeline(cap, Options(), [sink]).run()
    except OSError as exc:
        sink.publish()
        out.send(ERROR, f"read error: {exc.strerror or exc}".encode())
    _end(out)


class _Matches:
    """The sink of a filter's pipeline: the row (frame number - 1) of every packet it shows, sent a block
    at a time."""

    def __init__(self, out: Out) -> None:
        self.out = out
        self.rows = array("I")
        self.last = time.monotonic()

    def packet(self, pkt: Packet) -> None:
        rows = self.rows
        rows.append(pkt.frame.num - 1)
        if len(rows) >= 16384 or (len(rows) & 63 == 0 and time.monotonic() - self.last >= 0.1):
            self.flush()

    def flush(self) -> None:
        self.last = time.monotonic()
        if self.rows:
            self.out.send(ROWS, self.rows.tobytes())
            self.rows = array("I")

    def finish(self) -> None:
        self.flush()


def filter_rows(path: str, expr: str, limit: int) -> None:
    from ..filter import compile_filter, filter_needs_analysis
    from .source import open_frames
    out = Out()
    try:
        match = compile_filter(expr)
        cap = open_frames(path)
    except RdmaspyError as exc:
        out.send(ERROR, str(exc).encode())
        _end(out)
        return
    sink = _Matches(out)
    analyze = filter_needs_analysis(getattr(match, "names", ()))
    try:
        with cap:
            frames: Iterable[Frame] = islice(cap, limit) if limit else cap
            pipe = Pipeline(frames, Options(analyze=analyze, matcher=match), [sink])
            pipe.run()
            out.send(SCANNED, struct.pack("<Q", pipe.frames))
            if limit and pipe.frames < limit:
                out.send(ERROR, f"the capture spool ended at frame {pipe.frames} of {limit}".encode())
    except OSError as exc:
        sink.flush()
        out.send(ERROR, f"read error: {exc.strerror or exc}".encode())
    _end(out)


def main(argv: list[str]) -> int:
    try:
        if argv[:1] == ["rows"] and len(argv) == 5:
            rows(argv[1], int(argv[2]), int(argv[3]), int(argv[4]))
        elif argv[:1] == ["filter"] and len(argv) == 4:
            filter_rows(argv[1], argv[2], int(argv[3]))
        else:
            print(__doc__.split("\n\n")[1], file=sys.stderr)
            return 2
    except (BrokenPipeError, KeyboardInterrupt):
        os._exit(0)             # the app went away: nobody reads what is left
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
