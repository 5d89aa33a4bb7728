"""The program: ``python -m rdmaspy`` and the ``rdmaspy`` command (``run``).

What only a process of its own may do lives here, not in ``cli.main`` (which the tests and other programs
call inside theirs): the collector's start-up threshold and the exit without the interpreter's teardown.
"""
from __future__ import annotations

import gc
import os
import sys

# The young generation's threshold from the start: what start-up allocates (modules, declarations,
# tables) lives as long as the process, and at the default (700) the collector went over it some 70
# times before the first frame.  A pipeline's pull sets its own thresholds and puts these back.
START_THRESHOLD = 100_000


def run() -> None:
    """The command line, then the end of the process with its exit status."""
    gc.set_threshold(START_THRESHOLD, *gc.get_threshold()[1:])
    from .cli import main
    end(main())


def end(code: int) -> None:
    """End the process with ``code`` once its output is out, without the interpreter's teardown (freeing
    every object one by one: the modules, the tables, what the last run left to the collector), which
    took a tenth of a 20,000-frame summary.  The exit functions still run.  When the output cannot be
    flushed (a reader that went away) or another thread still runs, the interpreter ends as usual."""
    if not isinstance(code, int) or not 0 <= code <= 255 or _threads_running() or not _flushed():
        sys.exit(code)
    import atexit
    atexit._run_exitfuncs()
    if not _flushed():
        sys.exit(code)
    os._exit(code)


def _flushed() -> bool:
    try:
        for stream in (sys.stdout, sys.stderr):
            if stream is not None:
                stream.flush()
    except (OSError, ValueError):
        return False
    return True


def _threads_running() -> bool:
    threading = sys.modules.get("threading")
    if threading is None:
        return False
    main_thread = threading.main_thread()
    return any(t is not main_thread and not t.daemon and t.is_alive() for t in threading.enumerate())


if __name__ == "__main__":
    run()
