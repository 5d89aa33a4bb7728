"""``rdmaspy tui FILE``: the interactive terminal interface over a capture."""
from __future__ import annotations

import argparse
import os
import sys

from ..errors import RdmaspyError
from .common import add_capture_argument, add_host_trace_argument, host_join


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("tui", help="browse a capture interactively: packets, detail, bytes, filters, analysis",
                       description="Open a capture in the terminal interface: the packet list, each packet's "
                                   "tree and bytes, display filters, and the transactions, connections, credits, "
                                   "segments and expert views.  Press ? inside for the keys.")
    add_capture_argument(p)
    p.add_argument("-Y", dest="display_filter", metavar="EXPR", help="display filter applied on opening")
    add_host_trace_argument(p)
    p.set_defaults(func=cmd_tui)


def cmd_tui(args: argparse.Namespace) -> int:
    if args.file == "-":
        raise RdmaspyError("tui: the interface reads its keys from standard input: give a capture file, not -")
    if not os.path.exists(args.file):
        raise RdmaspyError(f"{args.file}: no such file")
    if os.path.isdir(args.file):
        raise RdmaspyError(f"{args.file}: is a directory, not a capture file")
    if args.display_filter:
        from ..filter import compile_filter
        compile_filter(args.display_filter)          # a bad filter is a usage error, before the screen opens
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        raise RdmaspyError("rdmaspy tui needs a terminal (use 'rdmaspy decode' for output to a pipe or file)")
    host = host_join(args)              # the traces read and their clocks measured before the screen opens
    from ..tui.app import RdmaspyApp
    from ..tui.model import CaptureModel
    app = RdmaspyApp(CaptureModel(args.file, host=host), initial_filter=args.display_filter or "")
    # The index is built on a thread beside the interface: switch between them often, so that a key
    # is answered within a few milliseconds however busy the index is (Python's default is 5 ms a turn).
    interval = sys.getswitchinterval()
    sys.setswitchinterval(0.001)
    try:
        app.run()
    finally:
        sys.setswitchinterval(interval)
    return 0
