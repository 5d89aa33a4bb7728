"""The ``rdmaspy`` command line.

Every subcommand turns user mistakes (bad path, garbage file, bad filter) into
one line on stderr and a non-zero exit, never a traceback.
"""
from __future__ import annotations

import argparse
import errno
import io
import os
# the signal module's C half: ``signal`` itself makes enums of every signal number and handler at import
# (some 3 M instructions of every start), which nothing here reads
import _signal as signal
import sys
from types import ModuleType

from . import __version__
from .commands.common import EXIT_ERROR, EXIT_OK, resolve_capture_argument
from .errors import RdmaspyError
from .typenames import Any, Sequence


def build_parser(argv: Sequence[str] = ()) -> argparse.ArgumentParser:
    """The parser of the command line ``argv`` (its options and the subcommand's): only the subcommand's
    module is imported when ``argv`` names one (the others' imports and parsers were an eighth of a
    short run's start), every subcommand's otherwise (``--help``, a mistake, the shell completion)."""
    p = _Parser(
        prog="rdmaspy",
        description="Protocol analyzer for RDMA: RoCEv2/RoCEv1/InfiniBand/iWARP, RPC-over-RDMA v1/v2 and NVMe over "
                    "Fabrics on RDMA.")
    p.add_argument("--version", action="version", version=f"rdmaspy {__version__}")
    p.add_argument("--memory-budget", metavar="SIZE",
                   help="most memory kept across packets (reassembly, analysis), e.g. 512M or 2G; past it the oldest"
                        " state is given up with a finding (default 256M, or $RDMASPY_MEMORY_BUDGET); accepted"
                        " before or after the command")
    p.add_argument("--decode-as", metavar="PORT=PROTOCOL", action="append",
                   help="decode the RDMA connections of RDMA-CM port (iWARP: TCP port) PORT as PROTOCOL, one of "
                        "nvme-rdma, rpcrdma (repeatable; NVMe/RDMA is bound to 4420 and RPC-over-RDMA to 20049 "
                        "already); accepted before or after the command")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")
    if not (argv and argv[0] == "--version"):      # answered before any subcommand is looked at
        for module in command_modules(_named_command(argv)):
            module.register(sub)
    # Commands that describe the program itself (completion, manual page) are handed the parser.
    p.set_defaults(root_parser=p)
    return p


# The modules that add subcommands, in the order of the help, each with the subcommands it adds
# (``register(subparsers)``).  The shell's (completion, manual page) describe every other one.
COMMANDS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("decode", ("decode",)), ("fields", ("fields",)), ("capture", ("capture",)),
    ("conversations", ("conversations",)), ("traffic", ("serve", "load")), ("flows", ("flows",)),
    ("expert", ("expert",)), ("stats", ("stats",)), ("annotate", ("annotate",)), ("tui", ("tui",)),
    ("export", ("export",)), ("query", ("query",)), ("extract", ("extract",)), ("shell", ()))


def _named_command(argv: Sequence[str]) -> str | None:
    """The module of the subcommand ``argv`` names first (None: none, or one that needs them all)."""
    for arg in argv:
        if arg.startswith("-"):
            return None             # an option before the subcommand: argparse decides
        return next((module for module, names in COMMANDS if arg in names), None)
    return None


def command_modules(only: str | None = None) -> tuple[ModuleType, ...]:
    """The modules that add subcommands (``only``: that one alone)."""
    import importlib
    return tuple(importlib.import_module(f".commands.{module}", __package__) for module, _names in COMMANDS
                 if only is None or module == only)


class UsageError(RdmaspyError):
    """A command line argparse rejects."""


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage mistake is one ``rdmaspy: error:`` line and exit 1 like every other error
    (exit 2 means a damaged capture), and help formatted by ``_Formatter``.  Subparsers are made of the
    same class."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", _Formatter)
        self._columns = 0       # the terminal's width, asked at the parser's first formatter
        super().__init__(*args, **kwargs)

    def _get_formatter(self) -> argparse.HelpFormatter:
        """A formatter at the terminal's width, asked once a parser: argparse makes a formatter for each argument
        added (to check its metavar), and each asking cost some 16,000 instructions (two exceptions caught where
        there is no ``$COLUMNS`` and no terminal)."""
        if not self._columns:
            self._columns = terminal_columns()
        return self.formatter_class(prog=self.prog, width=self._columns - 2)  # type: ignore[call-arg]

    def error(self, message: str):  # type: ignore[override]
        raise UsageError(f"{message} (see '{self.prog} --help')")


class _Formatter(argparse.HelpFormatter):
    """argparse's help formatter, the terminal's width found without ``shutil``: argparse makes a formatter
    for each argument added (to check its metavar), and the formatter imports shutil for
    ``get_terminal_size``; shutil's import (bz2, lzma, fnmatch...) cost every command some 8 M
    instructions where nothing else imports it (an interpreter without this machine's ``.pth`` files)."""

    def __init__(self, prog: str, indent_increment: int = 2, max_help_position: int = 24,
                 width: int | None = None) -> None:
        super().__init__(prog, indent_increment, max_help_position, terminal_columns() - 2 if width is None else width)


def terminal_columns() -> int:
    """``shutil.get_terminal_size().columns``: ``$COLUMNS`` when a positive number, else the width of the
    terminal standard output is (0 or none: 80)."""
    try:
        columns = int(os.environ["COLUMNS"])
    except (KeyError, ValueError):
        columns = 0
    if columns > 0:
        return columns
    stdout = sys.__stdout__
    if stdout is None:
        return 80
    try:
        return os.get_terminal_size(stdout.fileno()).columns or 80
    except (AttributeError, ValueError, OSError):
        return 80


def _take_global_options(argv: list[str]) -> list[str]:
    """``--memory-budget SIZE`` and ``--decode-as PORT=PROTOCOL`` (or ``=VALUE``) anywhere on the line: the one
    budget of every command, the upper layers bound to ports."""
    from . import budget
    rest: list[str] = []
    i = 0
    while i < len(argv):
        a = argv[i]
        if a == "--":
            rest.extend(argv[i:])
            break
        name = a.split("=", 1)[0]
        if name in ("--memory-budget", "--decode-as"):
            if "=" in a:
                value = a.split("=", 1)[1]
            elif i + 1 < len(argv):
                i += 1
                value = argv[i]
            else:
                raise UsageError("argument --memory-budget: expected a size such as 512M" if name == "--memory-budget"
                                 else "argument --decode-as: expected PORT=PROTOCOL, such as 4421=nvme-rdma")
            if name == "--memory-budget":
                budget.configure(budget.parse_size(value))
            else:
                _decode_as(value)
        else:
            rest.append(a)
        i += 1
    return rest


def _decode_as(text: str) -> None:
    """``PORT=PROTOCOL``: bind an upper layer to an RDMA-CM port (registry.decode_as)."""
    from .engine import load_dissectors
    from .registry import ULPS, decode_as
    load_dissectors()
    port_text, _, name = text.partition("=")
    try:
        port = int(port_text, 0)
    except ValueError:
        port = -1
    if not 0 < port < 65536 or name not in ULPS:
        raise UsageError(f"argument --decode-as: {text!r} is not PORT=PROTOCOL (a port 1-65535, a protocol of "
                         f"{', '.join(sorted(ULPS))})")
    decode_as(port, name)


def main(argv: Sequence[str] | None = None) -> int:
    from . import budget
    from .readers.base import keep_chunks_in_heap
    hook = sys.unraisablehook
    sys.unraisablehook = _quiet_out_of_memory
    budget.arm_reserve()
    keep_chunks_in_heap()       # the process is ours: its heap keeps the readers' chunks (no refaulted pages)
    try:
        return _main(list(sys.argv[1:] if argv is None else argv))
    finally:
        sys.unraisablehook = hook
        budget.configure(None)
        from .registry import reset_decode_as
        reset_decode_as()


def _quiet_out_of_memory(unraisable) -> None:
    """Out of memory, a generator being closed on the way out fails again: the run already says
    "out of memory" in one line, so that second failure is not printed as a traceback."""
    if isinstance(unraisable.exc_value, MemoryError):
        return
    sys.__unraisablehook__(unraisable)


class _Discard(io.StringIO):
    """A standard error that keeps nothing, for the moment a failed run's frames are let go."""

    def write(self, text: str) -> int:
        return len(text)


_DISCARD = _Discard()


def _out_of_memory(exc: BaseException) -> int:
    """Out of memory: give the reserve back, let go of what the failed run holds, and say so in one line.

    The frames of the exception's tracebacks hold the run's state and its readers' generators. Let go
    of now, while the reserve's room is free, a generator that fails again to close is not printed:
    with no memory to build the unraisable hook's arguments, CPython writes that failure to
    ``sys.stderr`` itself, so nothing else is written there meanwhile."""
    from . import budget
    budget.out_of_memory()
    err = sys.stderr
    sys.stderr = _DISCARD
    try:
        seen: BaseException | None = exc
        while seen is not None:
            tb = seen.__traceback__
            while tb is not None:
                try:
                    tb.tb_frame.clear()
                except RuntimeError:    # a frame still running (this handler's caller)
                    pass
                tb = tb.tb_next
            seen = seen.__context__
    except MemoryError:
        pass
    finally:
        sys.stderr = err
    print("rdmaspy: error: out of memory", file=sys.stderr)
    return EXIT_ERROR


def _main(argv: list[str]) -> int:
    try:
        argv = _take_global_options(argv)
        parser = build_parser(argv)
        args = parser.parse_args(argv)
        resolve_capture_argument(args)
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
    # SIGTERM (kill, a service manager) ends the run as Ctrl-C does: through the code that removes
    # temporary files and spools, not past it.
    try:
        old_term = signal.signal(signal.SIGTERM, _terminate)
    except ValueError:
        old_term = None
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
    except Terminated:
        return 128 + signal.SIGTERM
    except BrokenPipeError:
        # Point stdout at /dev/null so that the interpreter's last flush does not complain.
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
        except (OSError, ValueError):
            pass
        return EXIT_OK
    except MemoryError as exc:
        return _out_of_memory(exc)
    except OSError as exc:            # a full disk, an I/O error on the capture
        if exc.errno == errno.ENOMEM:     # a system call's buffer (a directory read) under the same limit
            return _out_of_memory(exc)
        where = f"{exc.filename}: " if exc.filename else ""
        print(f"rdmaspy: error: {where}{exc.strerror or exc}", file=sys.stderr)
        return EXIT_ERROR
    finally:
        if old_pipe is not None:
            signal.signal(signal.SIGPIPE, old_pipe)
        if old_term is not None:
            signal.signal(signal.SIGTERM, old_term)


class Terminated(BaseException):
    """SIGTERM arrived: the run unwinds (its ``finally`` blocks and context managers clean up)."""


def _terminate(signum: int, frame: object) -> None:
    signal.signal(signal.SIGTERM, signal.SIG_DFL)         # a second SIGTERM ends the process at once
    raise Terminated()


if __name__ == "__main__":
    sys.exit(main())
