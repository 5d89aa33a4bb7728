"""A trace file opened: its lines, one at a time, and the events declared in ``events`` among them.

Forms read (told by their first bytes, not their names): text (``trace-cmd report``, with or without
``-R`` and ``-t``; ``/sys/kernel/tracing/trace``), text compressed with xz or gzip, and ``trace.dat``,
which ``trace-cmd report -t`` turns into text as it is read (one clear line when trace-cmd is not
installed).  Nothing is read whole: a line is read with a bounded length (a longer one is skipped), the
events are parsed as they come.  What is not an event line, or is an event line that does not parse, is
counted (``TraceStats``), never fatal; a file that cannot be opened is a ``TraceError``, one line.
"""
from __future__ import annotations

import gzip
import lzma
import os
import re
import shutil
import subprocess
from dataclasses import dataclass, field
from typing import IO, Final, Iterator

from ..errors import RdmaspyError
from .events import EVENTS
from .parse import HostEvent, parse_body, split_line

MAX_LINE: Final = 16384          # bytes of one line; a longer one is skipped
MAX_NAMES: Final = 512           # distinct unknown event names counted by name (the rest: together)
DAT_MAGIC: Final = b"\x17\x08\x44tracing"
_XZ: Final = b"\xfd7zXZ\x00"
_GZ: Final = b"\x1f\x8b"
_LOST: Final = re.compile(r"\[(?:LOST )?(\d+) EVENTS(?: DROPPED)?\]")


class TraceError(RdmaspyError):
    """A host trace that cannot be read at all."""


@dataclass(slots=True)
class TraceStats:
    """What reading a trace met."""
    lines: int = 0
    events: int = 0                  # event lines
    kept: int = 0                    # events declared (parsed and joined)
    unknown: dict[str, int] = field(default_factory=dict)   # other events, by name
    skipped: int = 0                 # lines that are no event line and no known header
    too_long: int = 0                # lines past MAX_LINE
    lost: int = 0                    # events the tracer itself says it lost
    first_ts: int | None = None
    last_ts: int | None = None
    form: str = "text"

    def count_unknown(self, name: str) -> None:
        if name in self.unknown or len(self.unknown) < MAX_NAMES:
            self.unknown[name] = self.unknown.get(name, 0) + 1
        else:
            self.unknown["(other)"] = self.unknown.get("(other)", 0) + 1


def _form(path: str) -> str:
    try:
        with open(path, "rb") as f:
            head = f.read(len(DAT_MAGIC))
    except FileNotFoundError:
        raise TraceError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise TraceError(f"{path}: is a directory, not a trace") from None
    except OSError as exc:
        raise TraceError(f"{path}: {exc.strerror or exc}") from None
    if head.startswith(DAT_MAGIC):
        return "dat"
    if head.startswith(_XZ):
        return "xz"
    if head.startswith(_GZ):
        return "gzip"
    return "text"


def check(path: str) -> str:
    """The form of the trace at ``path`` (TraceError when it cannot be read): before anything runs."""
    form = _form(path)
    if form == "dat" and shutil.which("trace-cmd") is None:
        raise TraceError(f"{path}: a trace.dat is read through 'trace-cmd report', and trace-cmd is not installed "
                         "(install it, or give the text of 'trace-cmd report -t')")
    return form


class TraceFile:
    """One trace file; ``events()`` reads it from the start each time it is called."""

    def __init__(self, path: str, number: int = 0) -> None:
        self.path = path
        self.number = number
        self.form = check(path)
        self.stats = TraceStats(form=self.form)

    def _stream(self) -> tuple[IO[bytes] | gzip.GzipFile, subprocess.Popen[bytes] | None]:
        if self.form == "dat":
            proc = subprocess.Popen(["trace-cmd", "report", "-t", "-i", self.path], stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)
            assert proc.stdout is not None
            return proc.stdout, proc
        if self.form == "xz":
            return lzma.open(self.path, "rb"), None
        if self.form == "gzip":
            return gzip.open(self.path, "rb"), None
        return open(self.path, "rb"), None

    def lines(self) -> Iterator[bytes]:
        """The file's lines (without their ends), each at most MAX_LINE bytes: a longer one is counted and
        skipped.  Damage in a compressed stream ends the lines with a TraceError."""
        stream, proc = self._stream()
        try:
            with stream:
                while True:
                    try:
                        line = stream.readline(MAX_LINE + 1)
                    except (lzma.LZMAError, EOFError, OSError, gzip.BadGzipFile) as exc:
                        raise TraceError(f"{self.path}: the compressed trace is damaged ({exc}); "
                                         f"{self.stats.lines} lines were read") from None
                    if not line:
                        break
                    if len(line) > MAX_LINE and not line.endswith(b"\n"):
                        self.stats.too_long += 1
                        while line and not line.endswith(b"\n"):   # the rest of the long line
                            line = stream.readline(MAX_LINE)
                        continue
                    yield line.rstrip(b"\r\n")
        finally:
            if proc is not None:
                _end(proc, self.path)

    def events(self) -> Iterator[HostEvent]:
        """The declared events of the trace in its order, parsed; everything else counted."""
        self.stats = stats = TraceStats(form=self.form)
        number = self.number
        for raw in self.lines():
            stats.lines += 1
            text = raw.decode("utf-8", "replace")
            line = split_line(text)
            if line is None:
                m = _LOST.search(text)
                if m is not None:
                    stats.lost += int(m.group(1))
                elif text.strip() and not text.startswith(("#", "cpus=", "version", "CPU ")):
                    stats.skipped += 1
                continue
            stats.events += 1
            if stats.first_ts is None:
                stats.first_ts = line.ts
            stats.last_ts = line.ts
            decl = EVENTS.get(line.event)
            if decl is None:
                stats.count_unknown(line.event)
                continue
            stats.kept += 1
            yield HostEvent(line.event, line.ts, line.pid, parse_body(decl, line.body), None, number)


def _end(proc: subprocess.Popen[bytes], path: str) -> None:
    """The reader stopped (the end, or the caller had enough): trace-cmd is ended; a failure it reported is
    a TraceError."""
    if proc.poll() is None:
        proc.kill()
        proc.wait()
        return
    err = proc.stderr.read().decode("utf-8", "replace") if proc.stderr is not None else ""
    if proc.returncode != 0:
        first = next((ln.strip() for ln in err.splitlines() if ln.strip()), f"exit status {proc.returncode}")
        raise TraceError(f"{path}: trace-cmd report failed: {first}")


def describe(path: str) -> str:
    """A trace's name for messages."""
    return os.path.basename(path) or path
