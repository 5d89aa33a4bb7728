"""What the commands share: opening a capture, the display filter, where output goes, exit codes.

A command is its arguments plus a choice of sinks for the pipeline (rdmaspy.pipeline); the helpers
here are the rest.  Nothing here knows a protocol.
"""
from __future__ import annotations

import argparse
import sys
from typing import Any, BinaryIO

from ..errors import RdmaspyError
from ..filter import filter_needs_analysis
from ..output.lines import LineWriter, is_timed
from ..pipeline import Matcher, Options, Pipeline, Sink
from ..readers import Capture, open_capture

EXIT_OK = 0
EXIT_ERROR = 1
EXIT_DAMAGED = 2      # the capture was read only in part (as tshark)


def open_source(path: str) -> Capture:
    """The capture at ``path`` as a frame source (CaptureError, one clear line, when it is none)."""
    return open_capture(path)


def report_problems(cap: Capture) -> int:
    """Warn about the damage that stopped the reading of a capture; the exit code that says so."""
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
        analyze = analyze or filter_needs_analysis(getattr(matcher, "names", ()))
    return Options(analyze=analyze, matcher=matcher, count=count or 0)


def run_capture(path: str, sinks: list[Sink], options: Options | None = None,
                out: LineWriter | None = None) -> tuple[Capture, Pipeline]:
    """Open ``path`` and run it through the sinks; ``out`` is flushed however the run ends (an
    interrupt leaves every line made so far).  Returns the capture (for its problems) and the pipeline."""
    cap = open_source(path)
    with cap:
        pipe = Pipeline(cap, options, sinks)
        try:
            pipe.run()
        finally:
            if out is not None:
                out.flush()
    return cap, pipe


def stdout_lines() -> LineWriter:
    """Standard output as a ``LineWriter``: blocks of 64 KiB, and every 100 ms to a terminal or a pipe."""
    sys.stdout.flush()
    stream = getattr(sys.stdout, "buffer", None)
    if stream is None:                  # a text stream in memory (a program running main())
        return LineWriter(_TextSink(sys.stdout), False)
    return LineWriter(stream, is_timed(stream))


class _TextSink:
    """A text stream seen as a binary one: the bytes written are UTF-8."""

    def __init__(self, text: Any) -> None:
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
