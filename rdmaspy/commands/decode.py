"""``rdmaspy decode FILE``: one line per packet (like ``tshark -r``), the full tree (``-V``), hex (``-x``)
or JSON Lines (``-T json``), through a display filter (``-Y``), coloured on a terminal."""
from __future__ import annotations

import argparse
import sys
from typing import Any

from ..output.sinks import SummarySink, TextSink
from ..pipeline import Sink
from .common import pipeline_options, positive_int, report_problems, run_capture, stdout_lines


def cmd_decode(args: argparse.Namespace) -> int:
    # The analysis runs for the tree and JSON (they show its fields); for summary lines only with -A,
    # since it costs about half again the time of a plain summary.
    analyze = args.analyze or args.verbose or args.T == "json"
    options = pipeline_options(args.display_filter, args.count, analyze)
    out = stdout_lines()
    sink: Sink
    if args.T == "json":
        from ..output.jsonlines import JsonLinesSink
        sink = JsonLinesSink(out)
    elif sys.stdout.isatty():
        from ..output.console import terminal_painter
        sink = TextSink(out, args.verbose, args.hex, args.analyze, terminal_painter())
    elif args.verbose or args.hex:
        sink = TextSink(out, args.verbose, args.hex, args.analyze)
    else:
        sink = SummarySink(out, args.analyze)
    cap, _pipe = run_capture(args.file, [sink], options, out)
    return report_problems(cap)


def register(sub: Any) -> None:
    d = sub.add_parser("decode", help="decode a capture, one line per packet (like tshark -r)")
    d.add_argument("file", help="pcap or pcapng file (optionally gzip-compressed)")
    d.add_argument("-V", dest="verbose", action="store_true", help="print the full tree of every layer")
    d.add_argument("-x", dest="hex", action="store_true", help="print hex and ASCII of each frame")
    d.add_argument("-c", dest="count", type=positive_int, metavar="N", help="stop after N packets (shown)")
    d.add_argument("-T", choices=("text", "json"), default="text",
                   help="output format: text (default) or json (JSON Lines, one object per packet)")
    d.add_argument("-Y", dest="display_filter", metavar="EXPR",
                   help="display filter, e.g. 'bth.opcode == 0x0a and reth.dma_length > 4096'")
    d.add_argument("-A", "--analyze", action="store_true",
                   help="run the analysis (PSNs, transactions, expert findings) for summary lines too; always on"
                        " with -V, -T json and filters on analysis or expert fields")
    d.set_defaults(func=cmd_decode)
