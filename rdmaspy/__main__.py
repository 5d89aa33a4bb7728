"""The program: ``python -m rdmaspy`` and the ``rdmaspy`` command (``run``).

What only a process of its own may do lives here, not in ``cli.main`` (which the tests and other programs
call inside theirs): the collector's start-up threshold, argparse's translations looked up once, and the exit
without the interpreter's teardown.
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
    translate_argparse_once()
    end(main())


def translate_argparse_once() -> None:
    """argparse's messages translated by the catalogue gettext finds once for the process.  argparse calls
    ``gettext.gettext`` for each of its messages, and gettext looks for the catalogue anew at every call (the
    environment's languages normalised by ``locale``, imported for it, and a stat for each), found or not:
    4.9 M instructions of every start.  The same catalogue answers as long as the domain and the environment
    stay what they were at the start, which a process of its own does not change; and where the directory
    of catalogues does not exist (an interpreter built without them) there is none to look for."""
    import argparse
    import gettext
    domain = gettext.textdomain()
    directory = gettext.bindtextdomain(domain)
    if not os.path.isdir(directory):
        catalogue = gettext.NullTranslations()
    else:
        try:
            catalogue = gettext.translation(domain, directory, fallback=True)
        except OSError:         # a catalogue that cannot be read: gettext's own calls say each message as it is
            return
    argparse._ = catalogue.gettext              # type: ignore[attr-defined]
    argparse.ngettext = catalogue.ngettext      # type: ignore[attr-defined]


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
