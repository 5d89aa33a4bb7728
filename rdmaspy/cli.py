"""The ``rdmaspy`` command line.

Every subcommand turns user mistakes (bad path, garbage file, bad filter) into
one line on stderr and a non-zero exit, never a traceback.
"""
from __future__ import annotations

import argparse
import os
import signal
import sys
from typing import Callable, Iterator, Sequence

from . import __version__
from .errors import RdmaspyError

EXIT_OK = 0
EXIT_ERROR = 1
EXIT_DAMAGED = 2      # the capture was read only in part (as tshark)


def _out_writer() -> tuple[Callable[[str], None], Callable[[], None]]:
    """Buffered line output: the summary path prints hundreds of thousands of lines."""
    buf: list[str] = []
    write = sys.stdout.write

    def emit(line: str) -> None:
        buf.append(line)
        if len(buf) >= 2048:
            buf.append("")
            write("\n".join(buf))
            buf.clear()

    def flush() -> None:
        if buf:
            buf.append("")
            write("\n".join(buf))
            buf.clear()
        sys.stdout.flush()

    return emit, flush


def _packets(path: str, display_filter: str | None, count: int | None, analyze: bool = False):
    """Open, dissect, analyse (when asked, or when the filter names an analysis or expert field),
    filter: yields (packet, t0) and leaves the capture for its problems."""
    from .engine import Engine
    from .readers import open_capture

    matcher = None
    if display_filter:
        from .filter import compile_filter
        matcher = compile_filter(display_filter)   # before opening: a bad filter leaves nothing open
        analyze = analyze or _filter_needs_analysis(matcher.names)
    cap = open_capture(path)
    engine = Engine()
    feed = finish = None
    if analyze:
        from .analysis.analyzer import Analyzer
        analyzer = Analyzer(keep_findings=False, budget=engine.session.budget)
        feed, finish = analyzer.feed, analyzer.finish

    from .pipeline import packets
    return cap, packets(cap, engine, feed, finish, matcher, count or 0)


def _filter_needs_analysis(names) -> bool:
    """Whether a filter names an expert field or a field that an analysis module declares."""
    from .filter import known_fields
    origin = known_fields(False).origin
    return any(n == "expert" or n.startswith("expert.") or origin.get(n, "").startswith("rdmaspy.analysis")
               for n in names)


def cmd_decode(args: argparse.Namespace) -> int:
    # The analysis runs for the tree and JSON (they show its fields); for summary lines only with -A,
    # since it costs about half again the time of a plain summary.
    analyze = args.analyze or args.verbose or args.T == "json"
    cap, packets = _packets(args.file, args.display_filter, args.count, analyze)
    with cap:
        _decode_to_stdout(args, packets)
    return _report_problems(cap)


def _decode_to_stdout(args: argparse.Namespace, packets: Iterator) -> None:
    if args.T == "json":
        from .pipeline import write_json_lines
        try:
            write_json_lines(packets, sys.stdout.buffer.write)
        finally:
            sys.stdout.buffer.flush()
    elif sys.stdout.isatty():
        _decode_console(packets, args.verbose, args.hex, args.analyze)
    else:
        from .output.text import hex_lines, summary_line, tree_lines
        verbose, hexdump, flag = args.verbose, args.hex, args.analyze
        if not (verbose or hexdump):
            from .pipeline import write_summaries
            try:
                write_summaries(packets, sys.stdout.buffer.write, _with_findings_bytes if flag else None)
            finally:
                sys.stdout.buffer.flush()
            return
        emit, flush = _out_writer()
        try:
            for pkt, t0 in packets:
                if verbose:
                    for line in tree_lines(pkt, t0):
                        emit(line)
                else:
                    emit(summary_line(pkt, t0) if not flag else _with_findings(summary_line(pkt, t0), pkt))
                if hexdump:
                    if not verbose:
                        emit("")
                    for line in hex_lines(pkt.frame.data):
                        emit(line)
                if verbose or hexdump:
                    emit("")
        finally:
            flush()


def _with_findings_bytes(line: bytes, pkt) -> bytes:
    return _with_findings(line.decode(), pkt).encode()


def _with_findings(line: str, pkt) -> str:
    """A summary line with the messages of the analysis findings on its packet (``-A``)."""
    from .analysis.rules import Finding
    notes = [e.text for e in pkt.expert or () if isinstance(e, Finding)]
    return f"{line} [{'; '.join(notes)}]" if notes else line


def _decode_console(packets: Iterator, verbose: bool, hexdump: bool, flag: bool = False) -> None:
    """A terminal: the same text, coloured (malformed and bad checksums red, warnings yellow, titles bold).

    rich decides whether and how to colour (terminal type, NO_COLOR); each style is rendered once
    into its escape sequences, and lines go out through the same buffered writer as plain text,
    because printing line by line through rich is a hundred times slower.
    """
    from rich.color import ColorSystem
    from rich.console import Console
    from rich.style import Style

    from .output.text import hex_lines, packet_style, summary_line, tree_lines
    console = Console()
    systems = {"standard": ColorSystem.STANDARD, "256": ColorSystem.EIGHT_BIT, "truecolor": ColorSystem.TRUECOLOR,
               "windows": ColorSystem.STANDARD}
    system = systems.get(console.color_system or "")
    painters: dict[str | None, Callable[[str], str]] = {}

    def painter(style: str | None) -> Callable[[str], str]:
        fn = painters.get(style)
        if fn is None:
            if not style or system is None or console.no_color:
                fn = str
            else:
                before, _, after = Style.parse(style).render("\0", color_system=system).partition("\0")
                fn = (lambda b, a: lambda line: b + line + a)(before, after)
            painters[style] = fn
        return fn

    emit, flush = _out_writer()
    bold, red, yellow = painter("bold"), painter("red"), painter("yellow")
    try:
        for pkt, t0 in packets:
            style = packet_style(pkt)
            paint = painter(style)
            if verbose:
                head = painter(f"bold {style}" if style else "bold")
                for line in tree_lines(pkt, t0):
                    if line.startswith("Frame "):
                        emit(head(line))
                    elif line.startswith("    [Error/"):
                        emit(red(line))
                    elif line.startswith("    [Warning/"):
                        emit(yellow(line))
                    elif not line.startswith(" "):
                        emit(bold(line))
                    else:
                        emit(line)
            else:
                line = summary_line(pkt, t0)
                emit(paint(_with_findings(line, pkt) if flag else line))
            if hexdump:
                if not verbose:
                    emit("")
                hexpaint = painter("dim") if style is None else paint
                for line in hex_lines(pkt.frame.data):
                    emit(hexpaint(line))
            if verbose or hexdump:
                emit("")
    finally:
        flush()


def _report_problems(cap) -> int:
    if cap.problems:
        for p in cap.problems:
            print(f"rdmaspy: warning: {cap.path}: {p}; the frames before it were decoded", file=sys.stderr)
        return EXIT_DAMAGED
    return EXIT_OK


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(
        prog="rdmaspy",
        description="Protocol analyzer for RDMA: RoCEv2/RoCEv1/InfiniBand/iWARP and RPC-over-RDMA v1/v2.")
    p.add_argument("--version", action="version", version=f"rdmaspy {__version__}")
    p.add_argument("--memory-budget", metavar="SIZE",
                   help="most memory kept across packets (reassembly, analysis), e.g. 512M or 2G; past it the oldest"
                        " state is given up with a finding (default 256M, or $RDMASPY_MEMORY_BUDGET); accepted"
                        " before or after the command")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")

    d = sub.add_parser("decode", help="decode a capture, one line per packet (like tshark -r)")
    d.add_argument("file", help="pcap or pcapng file (optionally gzip-compressed)")
    d.add_argument("-V", dest="verbose", action="store_true", help="print the full tree of every layer")
    d.add_argument("-x", dest="hex", action="store_true", help="print hex and ASCII of each frame")
    d.add_argument("-c", dest="count", type=_positive_int, metavar="N", help="stop after N packets (shown)")
    d.add_argument("-T", choices=("text", "json"), default="text",
                   help="output format: text (default) or json (JSON Lines, one object per packet)")
    d.add_argument("-Y", dest="display_filter", metavar="EXPR",
                   help="display filter, e.g. 'bth.opcode == 0x0a and reth.dma_length > 4096'")
    d.add_argument("-A", "--analyze", action="store_true",
                   help="run the analysis (PSNs, transactions, expert findings) for summary lines too; always on"
                        " with -V, -T json and filters on analysis or expert fields")
    d.set_defaults(func=cmd_decode)

    import importlib
    for name in COMMAND_MODULES:
        importlib.import_module(name).register(sub)
    return p


# Modules that add subcommands: each has ``register(subparsers)``.
COMMAND_MODULES: tuple[str, ...] = ("rdmaspy.commands.fields", "rdmaspy.commands.capture",
                                   "rdmaspy.commands.conversations", "rdmaspy.commands.traffic",
                                   "rdmaspy.commands.flows", "rdmaspy.commands.expert",
                                   "rdmaspy.commands.stats", "rdmaspy.commands.annotate",
                                   "rdmaspy.commands.tui")


class UsageError(RdmaspyError):
    """A command line argparse rejects."""


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage mistake is one ``rdmaspy: error:`` line and exit 1 like every other error
    (exit 2 means a damaged capture).  Subparsers are made of the same class."""

    def error(self, message: str):  # type: ignore[override]
        raise UsageError(f"{message} (see '{self.prog} --help')")


def _positive_int(text: str) -> int:
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


def _take_memory_budget(argv: list[str]) -> list[str]:
    """``--memory-budget SIZE`` (or ``=SIZE``) anywhere on the line sets the one budget of every command."""
    from . import budget
    rest: list[str] = []
    i = 0
    while i < len(argv):
        a = argv[i]
        if a == "--":
            rest.extend(argv[i:])
            break
        if a == "--memory-budget" or a.startswith("--memory-budget="):
            if "=" in a:
                value = a.split("=", 1)[1]
            elif i + 1 < len(argv):
                i += 1
                value = argv[i]
            else:
                raise UsageError("argument --memory-budget: expected a size such as 512M")
            budget.configure(budget.parse_size(value))
        else:
            rest.append(a)
        i += 1
    return rest


def main(argv: Sequence[str] | None = None) -> int:
    from . import budget
    hook = sys.unraisablehook
    sys.unraisablehook = _quiet_out_of_memory
    budget.arm_reserve()
    try:
        return _main(list(sys.argv[1:] if argv is None else argv))
    finally:
        sys.unraisablehook = hook
        budget.configure(None)


def _quiet_out_of_memory(unraisable) -> None:
    """Out of memory, a generator being closed on the way out fails again: the run already says
    "out of memory" in one line, so that second failure is not printed as a traceback."""
    if isinstance(unraisable.exc_value, MemoryError):
        return
    sys.__unraisablehook__(unraisable)


def _main(argv: list[str]) -> int:
    try:
        argv = _take_memory_budget(argv)
        parser = build_parser()
        args = parser.parse_args(argv)
    except RdmaspyError as exc:
        print(f"rdmaspy: error: {exc}", file=sys.stderr)
        return EXIT_ERROR
    except SystemExit as exc:        # --help, --version
        return exc.code if isinstance(exc.code, int) else EXIT_OK
    if not getattr(args, "func", None):
        parser.print_help(sys.stderr)
        return EXIT_ERROR
    # Die quietly when the reader of our output goes away (``| head``); restored on return so that
    # calling main() inside another program (the tests) leaves its signal handling alone.
    try:
        old_pipe = signal.signal(signal.SIGPIPE, signal.SIG_DFL) if hasattr(signal, "SIGPIPE") else None
    except ValueError:                # not the main thread
        old_pipe = None
    try:
        return args.func(args)
    except RdmaspyError as exc:
        print(f"rdmaspy: error: {exc}", file=sys.stderr)
        caret = getattr(exc, "caret", None)
        if caret is not None and sys.stderr.isatty():
            print(caret(), file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # Point stdout at /dev/null so that the interpreter's last flush does not complain.
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
        except (OSError, ValueError):
            pass
        return EXIT_OK
    except MemoryError:
        from . import budget
        budget.out_of_memory()
        print("rdmaspy: error: out of memory", file=sys.stderr)
        return EXIT_ERROR
    except OSError as exc:            # a full disk, an I/O error on the capture
        print(f"rdmaspy: error: {exc.strerror or exc}", file=sys.stderr)
        return EXIT_ERROR
    finally:
        if old_pipe is not None:
            signal.signal(signal.SIGPIPE, old_pipe)


if __name__ == "__main__":
    sys.exit(main())
