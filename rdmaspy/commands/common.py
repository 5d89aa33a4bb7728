"""What the commands share: opening a capture, the display filter, where output goes, exit codes.

A command is its arguments plus a choice of sinks for the pipeline (rdmaspy.pipeline); the helpers
here are the rest.  Nothing here knows a protocol.
"""
from __future__ import annotations

import argparse
# the signal module's C half: ``signal`` itself makes enums of every signal number and handler at import
# (some 3 M instructions of every start), which nothing here reads
import _signal as signal
import sys
from contextlib import contextmanager
from functools import partial

from ..errors import RdmaspyError
from ..output.lines import LIMIT, LineWriter, is_timed
from ..pipeline import Matcher, Options, Pipeline, Sink
from ..readers.base import defer_signal, deliver_signals, drop_signals, on_main_thread
from ..readers import Capture, open_capture
from ..typenames import Any, BinaryIO, Iterator, TextIO

EXIT_OK = 0
EXIT_ERROR = 1
EXIT_DAMAGED = 2      # the capture was read only in part (as tshark)


CAPTURE_HELP = "pcap or pcapng file (optionally gzip-compressed); - reads standard input"
HOST_TRACE_HELP = ("a kernel trace of the same time (trace-cmd report text, -R or -t; ftrace text; .xz/.gz; "
                   "trace.dat through trace-cmd) joined to the capture's transactions; repeat for the client's "
                   "and the server's (docs/hosttrace.md)")


@contextmanager
def signals_between_frames() -> Iterator[None]:
    """Ctrl-C and SIGTERM during a run end it between two frames, by the exception their handlers raise
    (KeyboardInterrupt, the CLI's Terminated), not inside compiled code (``readers.base.defer_signal``); a
    second one before the next frame, at once.  Only the main thread handles signals."""
    if not on_main_thread():
        yield
        return
    saved: dict[int, Any] = {}
    for sig in (signal.SIGINT, signal.SIGTERM):
        handler = signal.getsignal(sig)
        if callable(handler):
            saved[sig] = handler
            signal.signal(sig, partial(defer_signal, handler))
    ended = False
    try:
        yield
        ended = True
    finally:
        for signum, handler in saved.items():
            signal.signal(signum, handler)
        if not ended:
            drop_signals()      # the run ended by another exception: that is what the command reports
    deliver_signals()           # one that came as the run finished ends the command as it would have


def add_capture_argument(p: argparse.ArgumentParser) -> None:
    """The capture a command reads: the positional FILE, or ``-r FILE`` as tshark takes it."""
    p.add_argument("file", nargs="?", metavar="FILE", help=CAPTURE_HELP)
    p.add_argument("-r", dest="read_file", metavar="FILE", help="the capture to read (the same as FILE, as tshark -r)")


def add_host_trace_argument(p: argparse.ArgumentParser) -> None:
    """``--host-trace FILE``, repeatable: the kernel traces joined to the capture (docs/hosttrace.md)."""
    p.add_argument("--host-trace", dest="host_trace", action="append", default=[], metavar="FILE",
                   help=HOST_TRACE_HELP)


def host_join(args: argparse.Namespace) -> Any:
    """The join of the ``--host-trace`` files with the capture, its clocks measured (None without any): the
    sink to put first among the command's sinks (``run_capture(..., host=)``)."""
    paths = getattr(args, "host_trace", None)
    if not paths:
        return None
    from ..budget import default_limit
    from ..output.hosttrace import prepare
    join = prepare(args.file, list(paths), default_limit())
    warn_unmatched(join.clocks)
    return join


def warn_unmatched(clocks: Any) -> None:
    """One line for each trace that shares no XID with the beginning of the capture: it joins nothing."""
    for c in clocks:
        if c.offset_ns is None:
            print(f"rdmaspy: warning: {c.path}: no XID of the trace is in the capture's first transactions: its "
                  f"events are not joined", file=sys.stderr)


def resolve_capture_argument(args: argparse.Namespace) -> None:
    """``args.file`` from FILE or ``-r FILE`` (given once); RdmaspyError when neither or both are."""
    if not hasattr(args, "read_file"):
        return
    given = [p for p in (args.file, args.read_file) if p is not None]
    if not given:
        raise RdmaspyError(f"{args.command}: give the capture to read: FILE or -r FILE")
    if len(given) == 2:
        raise RdmaspyError(f"{args.command}: give the capture once, as FILE or -r FILE, not both")
    args.file = given[0]


def open_source(path: str) -> Capture:
    """The capture at ``path`` as a frame source (CaptureError, one clear line, when it is none); what
    is odd in its header is said once here."""
    cap = open_capture(path)
    for message in cap.warnings:
        print(f"rdmaspy: warning: {cap.path}: {message}", file=sys.stderr)
    return cap


def undecoded_linktypes(cap: Capture, told: set[int]) -> None:
    """Warn once for each link type of the capture that no dissector decodes (its frames are shown
    as data); ``told``: the link types warned about already."""
    from ..engine import load_dissectors
    from ..registry import table
    load_dissectors()
    known = table("linktype").by_key
    for lt in sorted(set(cap.linktypes.values())):
        if lt not in known and lt not in told:
            told.add(lt)
            print(f"rdmaspy: warning: {cap.path}: link type {lt} is not decoded; its frames are shown as data",
                  file=sys.stderr)


def report_writer(path: str, writer: Any) -> None:
    """Say what a capture writer could not write as it was given: times it clamped, comments it split."""
    clamped = getattr(writer, "clamped", 0)
    if clamped:
        print(f"rdmaspy: warning: {path}: {clamped} frame time{'s' if clamped != 1 else ''} cannot be written in "
              f"pcapng (before 1970 or past 64 bits of ticks) and {'were' if clamped != 1 else 'was'} clamped",
              file=sys.stderr)
    split = getattr(writer, "split_comments", 0)
    if split:
        print(f"rdmaspy: warning: {path}: {split} packet comment{'s' if split != 1 else ''} longer than one pcapng "
              f"option (65,535 bytes) {'were' if split != 1 else 'was'} split across several comments",
              file=sys.stderr)


def report_problems(cap: Capture) -> int:
    """Warn about the damage that stopped the reading of a capture; the exit code that says so.
    Times the capture gives beyond what 64-bit nanoseconds hold are a warning, not damage."""
    if cap.clamped:
        print(f"rdmaspy: warning: {cap.path}: {cap.clamped} frame{'s' if cap.clamped != 1 else ''} give a time more "
              f"than 292 years from 1970 (a wrong if_tsresol or if_tsoffset?); clamped to the nearest time that "
              f"64-bit nanoseconds hold", file=sys.stderr)
    if cap.problems:
        for p in cap.problems:
            print(f"rdmaspy: warning: {cap.path}: {p}; the frames before it were decoded", file=sys.stderr)
        return EXIT_DAMAGED
    return EXIT_OK


def display_filter(expr: str | None) -> Matcher | None:
    """Compile a display filter (FilterError, with a caret, when it does not)."""
    if not expr:
        return None
    from ..filter import compile_filter
    return compile_filter(expr)


def pipeline_options(expr: str | None, count: int | None = None, analyze: bool = False) -> Options:
    """The pipeline's options for a display filter expression: the analysis runs also when the filter
    names one of its fields.  The filter is compiled before anything is opened."""
    matcher = display_filter(expr)
    if matcher is not None:
        from ..filter import filter_needs_analysis      # here, as compile_filter: a run without -Y never needs it
        analyze = analyze or filter_needs_analysis(getattr(matcher, "names", ()))
    return Options(analyze=analyze, matcher=matcher, count=count or 0)


def run_capture(path: str, sinks: list[Sink], options: Options | None = None,
                out: LineWriter | None = None, progress: str | None = None,
                host: Sink | None = None) -> tuple[Capture, Pipeline]:
    """Open ``path`` and run it through the sinks; ``out`` is flushed however the run ends (an
    interrupt leaves every line made so far).  ``progress``: the label of a progress bar on stderr
    (rdmaspy.output.progress: a terminal only, and long work only).  Returns the capture (for its
    problems) and the pipeline."""
    from ..output.progress import Progress
    cap = open_source(path)
    told: set[int] = set()
    if host is not None:
        sinks = [host, *sinks]      # first: the transactions get their host events before the others see them
    with cap:
        undecoded_linktypes(cap, told)
        pipe = Pipeline(cap, options, sinks)
        try:
            with Progress(progress or "", cap, lambda: pipe.frames, enabled=None if progress else False), \
                    signals_between_frames():
                pipe.run()
        finally:
            if out is not None:
                out.flush()
        undecoded_linktypes(cap, told)           # interfaces described later in a pcapng
    return cap, pipe


def stdout_lines(each_line: bool = False, safe: bool = False) -> LineWriter:
    """Standard output as a ``LineWriter``: blocks of 64 KiB, and every 100 ms to a terminal or a pipe;
    ``each_line``: every line as soon as it is made (``-l``); ``safe``: control characters in the lines
    (text from the capture) shown as escapes."""
    sys.stdout.flush()
    stream = getattr(sys.stdout, "buffer", None)
    limit = 1 if each_line else LIMIT
    if stream is None:                  # a text stream in memory (a program running main())
        return LineWriter(_TextSink(sys.stdout), False, limit, safe)
    return LineWriter(stream, is_timed(stream), limit, safe)


def print_text(lines: list[str]) -> None:
    """Lines of a text report on standard output, with the text from the capture made safe."""
    if not all(line.isprintable() for line in lines):   # a check in C a line: the escapes only when one needs them
        from ..output.safe import safe_text
        lines = [safe_text(line) for line in lines]
    sys.stdout.write("".join(line + "\n" for line in lines))
    sys.stdout.flush()


class _TextSink:
    """A text stream seen as a binary one: the bytes written are UTF-8."""

    def __init__(self, text: TextIO) -> None:
        self.text = text

    def write(self, data: bytes) -> int:
        return self.text.write(data.decode())

    def flush(self) -> None:
        self.text.flush()


def write_stdout(data: bytes) -> None:
    """A whole document on standard output."""
    sys.stdout.flush()
    sys.stdout.buffer.write(data)
    sys.stdout.buffer.flush()


def json_document(doc: Any) -> bytes:
    """A JSON document as the commands print it: indented by two, one newline at the end."""
    import orjson      # here, not at import: every command module is imported to build the parser
    return orjson.dumps(doc, option=orjson.OPT_INDENT_2) + b"\n"


def open_output(path: str) -> BinaryIO:
    """A file to write, opened for bytes; an RdmaspyError (one line) when it cannot be."""
    try:
        return open(path, "wb")
    except OSError as exc:
        raise RdmaspyError(f"{path}: {exc.strerror or exc}") from None


def positive_int(text: str) -> int:
    """argparse type: a whole number of at least 1 (decimal, or 0x.. / 0o..)."""
    try:
        v = int(text, 10)
    except ValueError:
        try:
            v = int(text, 0)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if v <= 0:
        raise argparse.ArgumentTypeError(f"{text!r} must be at least 1")
    return v
