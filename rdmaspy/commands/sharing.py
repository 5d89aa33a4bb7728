"""``decode``'s printing shared among processes (rdmaspy.output.turns): the processes (how many:
``commands.processes``).

The others are forked once the arguments are read, before the capture is opened: each opens the file
itself and runs the same pipeline, printing its turns into a pipe to the first, with nothing on standard
error (the first reports the capture's problems, once).  They end when the first has read what it needs
of them, or with it.
"""
from __future__ import annotations

import argparse
import fcntl
import os
# the signal module's C half (as cli): ``signal`` makes enums of every signal number and handler at import
import _signal as signal
import sys
import threading

from ..output.lines import LIMIT, LineWriter
from ..pipeline import Options, Sink
from ..typenames import BinaryIO, Callable
from .common import report_problems, run_capture, stdout_lines
from .processes import AUTO_MAX, AUTO_MIN_BYTES, printing_processes  # noqa: F401  (what it was asked of)

PIPE_BYTES = 1 << 20            # a worker's pipe, if the system lets it be this big (a run is sent whole)
_F_SETPIPE_SZ = 1031            # Linux's fcntl
_PR_SET_PDEATHSIG = 1           # Linux's prctl
_STOPPING = {signal.SIGINT, signal.SIGTERM}

# Makes the sink that prints (decode's choice from the arguments) writing to a LineWriter.
MakeSink = Callable[[LineWriter], Sink]


def decode_shared(args: argparse.Namespace, options: Options, ways: int, make: MakeSink, safe: bool) -> int:
    """Run the decode in ``ways`` processes; the exit code of the first."""
    from ..output.turns import TurnPrinter      # before the fork: the processes find it imported
    sys.stdout.flush()
    sys.stderr.flush()
    # a fork copies one thread: another's locks (an import's, a stream's) would stay held in the copy
    alone = threading.active_count() == 1
    pids, sources = _start(args, options, ways, make, safe) if alone else ([], [])
    out = stdout_lines(args.line_buffered, safe=safe)
    # a bar on stderr while the lines go to a file (not to the terminal, nor to a program reading them)
    progress = None if out.timed else "decode"
    if not pids:                # no process could be started: this one prints everything
        cap, _pipe = run_capture(args.file, [make(out)], options, out, progress=progress)
        return report_problems(cap)
    printer = TurnPrinter(make(out), out, sources)
    try:
        cap, _pipe = run_capture(args.file, [printer], options, out, progress=progress)
    finally:
        printer.close()
        _stop(pids)
    if printer.lost:
        print(f"rdmaspy: decode: {len(printer.lost)} of the {ways} printing processes ended early; "
              "this one printed their packets", file=sys.stderr)
    return report_problems(cap)


def _start(args: argparse.Namespace, options: Options, ways: int, make: MakeSink,
           safe: bool) -> tuple[list[int], list[BinaryIO | None]]:
    """Fork the processes of turns 1 to ``ways - 1``, each with its pipe; none if one cannot be."""
    pipes: list[tuple[int, int]] = []
    pids: list[int] = []
    try:
        for _ in range(1, ways):
            r, w = os.pipe()
            pipes.append((r, w))
            try:
                fcntl.fcntl(w, _F_SETPIPE_SZ, PIPE_BYTES)
            except OSError:
                pass            # the default size: a run waits for the first to read it
        first = os.getpid()
        # Blocked across the fork: a signal that came before a process set its own handlers (the first's
        # SIGTERM as it stops at once, say) would run the CLI's in the copy and print there.
        blocked = signal.pthread_sigmask(signal.SIG_BLOCK, _STOPPING)
        try:
            for turn in range(1, ways):
                pid = os.fork()
                if pid == 0:
                    signal.signal(signal.SIGINT, signal.SIG_IGN)    # Ctrl-C: the first ends, and stops this one
                    signal.signal(signal.SIGTERM, signal.SIG_DFL)
                    signal.pthread_sigmask(signal.SIG_SETMASK, blocked)
                    _die_with(first)
                    _work(args, options, ways, turn, pipes, make, safe)
                pids.append(pid)
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, blocked)
    except OSError:
        _stop(pids)
        for r, w in pipes:
            os.close(r)
            os.close(w)
        return [], []
    sources: list[BinaryIO | None] = [None]
    for r, w in pipes:
        os.close(w)
        sources.append(os.fdopen(r, "rb", buffering=PIPE_BYTES))
    return pids, sources


def _work(args: argparse.Namespace, options: Options, ways: int, turn: int, pipes: list[tuple[int, int]],
          make: MakeSink, safe: bool) -> None:
    """A forked process's whole life: never returns."""
    from ..output.turns import HeldLines, TurnWorker     # imported before the fork (decode_shared)
    code = 1
    try:
        held = HeldLines()
        out = LineWriter(held, False, LIMIT, safe)
        inner = make(out)           # as the first makes it: standard output still the same (colours)
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 2)         # the first process reports, once
        os.dup2(devnull, 1)         # and writes standard output
        os.close(devnull)
        for i, (r, w) in enumerate(pipes):
            os.close(r)
            if i != turn - 1:
                os.close(w)
        sink = os.fdopen(pipes[turn - 1][1], "wb", buffering=PIPE_BYTES)
        worker = TurnWorker(inner, out, held, sink, ways, turn)
        run_capture(args.file, [worker], options, None, progress=None)
        sink.close()
        code = 0
    except BaseException:       # noqa: B036 - the first process reads a run cut short as this one's end
        pass
    finally:
        os._exit(code)


def _die_with(parent: int) -> None:
    """This process ends when ``parent`` does, however it ends (killed, a broken pipe's SIGPIPE): Linux's
    parent-death signal; elsewhere it ends at its next run sent, on the broken pipe."""
    try:
        import ctypes
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)
    except (OSError, AttributeError):
        pass
    if os.getppid() != parent:      # it ended before the signal was asked for
        os._exit(1)


def _stop(pids: list[int]) -> None:
    """End the processes (those that sent all the first needed may still be reading frames) and reap them."""
    for pid in pids:
        try:
            os.kill(pid, signal.SIGTERM)
        except OSError:
            pass
    for pid in pids:
        try:
            os.waitpid(pid, 0)
        except OSError:
            pass
