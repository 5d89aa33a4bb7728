"""How many processes print ``decode``'s output (``commands.sharing`` runs them): asked at every decode,
so that a decode printed by one process (every summary) does not import the sharing, its forks and pipes.
"""
from __future__ import annotations

import argparse
import os
import stat

AUTO_MAX = 4                    # processes at most unless -j says more
AUTO_MIN_BYTES = 2 << 20        # smaller captures print in one process (what a second saves is small)


def printing_processes(args: argparse.Namespace) -> int:
    """How many processes print ``args``'s decode: ``-j``, or one per core up to ``AUTO_MAX`` for a
    capture of ``AUTO_MIN_BYTES`` or more; one where the output is cheap to make (summary lines), where
    it is made as the packets come (``-l``, ``-w``, host traces) or where the capture cannot be read
    twice (standard input, a pipe)."""
    jobs: int | None = args.jobs
    if jobs == 1:
        return 1
    if args.write is not None or args.line_buffered or args.host_trace:
        return 1
    if args.T == "text" and not (args.verbose or args.hex):
        return 1
    if args.T == "fields":
        return 1
    if args.count is not None:
        # the printing by turns, imported only where a count asks (a small capture's start spares it: typing,
        # threading and queue)
        from ..output.turns import RUN
        if args.count <= RUN:
            return 1            # the first process's turn holds them all
    try:
        st = os.stat(args.file)
    except OSError:
        return 1                # the run that follows says why it cannot be read
    if not stat.S_ISREG(st.st_mode):
        return 1
    if jobs is not None:
        return jobs
    if st.st_size < AUTO_MIN_BYTES:
        return 1
    return max(1, min(AUTO_MAX, len(os.sched_getaffinity(0))))
