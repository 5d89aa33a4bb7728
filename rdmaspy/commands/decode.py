"""``rdmaspy decode FILE``: one line per packet (like ``tshark -r``), the full tree (``-V``), hex (``-x``),
JSON Lines (``-T json``) or chosen fields (``-T fields -e NAME``), through a display filter (``-Y``),
coloured on a terminal; or the shown packets written to a pcapng file (``-w``).  tshark's ``-r``,
``-t``, ``-l`` and ``-n`` are taken as tshark takes them."""
from __future__ import annotations

import argparse
import os

from ..errors import RdmaspyError
from ..fields import Field
from ..output.clock import FORMATS, HELP as TIME_HELP, Clock
from ..output.lines import LineWriter
from ..output.sinks import SummarySink, TextSink
from ..packet import Packet
from ..pipeline import Options, Sink
from ..typenames import Any, Callable
from .common import (add_capture_argument, add_host_trace_argument, pipeline_options, positive_int,
                     report_problems, report_writer, run_capture, stdout_lines)
from .processes import printing_processes


# a packet's values of the named fields (rdmaspy.filter.make_extractor)
Extractor = Callable[[Packet, int], dict[str, list[Any]]]


def cmd_decode(args: argparse.Namespace) -> int:
    if args.T not in ("fields", "ek") and args.fields:
        raise RdmaspyError("decode: -e names the fields of -T fields (or -T ek); add -T fields")
    if args.T == "fields" and not args.fields:
        raise RdmaspyError("decode: -T fields needs at least one -e NAME")
    # The analysis runs for the tree and JSON (they show its fields); for summary lines only with -A,
    # since it costs about half again the time of a plain summary.
    analyze = args.analyze or args.verbose or args.T == "json" or (args.T == "ek" and not args.fields)
    options = pipeline_options(args.display_filter, args.count, analyze)
    if args.host_trace and (args.write is not None or args.T != "text"):
        raise RdmaspyError("decode: --host-trace shows the host's events between the packets of text output (-V or "
                           "summary lines); flows and export carry them as data")
    if args.write is not None:
        return _write(args, options)
    ways = printing_processes(args)
    if ways > 1:
        from .sharing import decode_shared
        return decode_shared(args, options, ways, lambda out: _sink(args, out, options), _checked(args))
    out = stdout_lines(args.line_buffered, safe=_checked(args))
    sinks: list[Sink] = [_sink(args, out, options)]
    if args.host_trace:
        from ..output.hosttrace import HostLines, measure, open_traces
        from .common import warn_unmatched
        traces = open_traces(list(args.host_trace))
        clocks = measure(args.file, traces)
        warn_unmatched(clocks)
        sinks.insert(0, HostLines(out, traces, clocks, options.matcher is not None))
    # a bar on stderr while the lines go to a file (not to the terminal, nor to a program reading them)
    cap, _pipe = run_capture(args.file, sinks, options, out, progress=None if out.timed else "decode")
    return report_problems(cap)


def _checked(args: argparse.Namespace) -> bool:
    """Whether the output is checked for control characters from the capture: text that is not painted
    (painted lines are made safe one by one before the colour goes on; JSON and -T fields escape them)."""
    from ..output.console import color_wanted
    return args.T == "text" and not color_wanted(args.color)


def _sink(args: argparse.Namespace, out: LineWriter, options: Options) -> Sink:
    """The sink that prints what the options ask for (the analysis is turned on where it is needed)."""
    clock = Clock(args.time_format) if args.time_format not in (None, "r") else None
    if args.T == "json":
        from ..output.jsonlines import JsonLinesSink
        return JsonLinesSink(out)
    if args.T == "fields":
        return _field_columns(args, out, options)
    if args.T == "ek":
        from ..output.ek import EkSink
        if not args.fields:
            return EkSink(out, [], {}, None)
        fields, extract = _named_fields(args, options)
        return EkSink(out, list(args.fields), fields, extract)
    from ..output.console import color_wanted
    if color_wanted(args.color):
        from ..output.console import color_forced, terminal_painter
        painter = terminal_painter(force=color_forced(args.color))
        return TextSink(out, args.verbose, args.hex, args.analyze, painter, clock)
    if args.verbose or args.hex:
        return TextSink(out, args.verbose, args.hex, args.analyze, None, clock)
    return SummarySink(out, args.analyze, clock)


def _field_columns(args: argparse.Namespace, out: LineWriter, options: Options) -> Sink:
    from ..output.field_columns import FieldColumns, parse_layout
    layout = parse_layout(args.layout)
    fields, extract = _named_fields(args, options)
    return FieldColumns(out, list(args.fields), layout, fields, extract)


def _named_fields(args: argparse.Namespace, options: Options) -> tuple[dict[str, Field], Extractor]:
    """The declarations of the ``-e`` fields and a function that takes their values from a packet (an
    unknown name is an error naming the nearest one); the analysis runs when one of them is its."""
    import difflib

    from ..filter import filter_needs_analysis, known_fields, make_extractor
    from ..fieldview import presence_field
    cat = known_fields()
    fields = {}
    for name in args.fields:
        if name in cat.fields:
            fields[name] = cat.fields[name]
        elif name in cat.protocols:
            fields[name] = presence_field(name)
        else:
            close = difflib.get_close_matches(name, list(cat.fields), n=1, cutoff=0.75)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise RdmaspyError(f"decode: -e {name}: no such field{hint} (see 'rdmaspy fields')")
    if filter_needs_analysis(args.fields):
        options.analyze = True
    return fields, make_extractor(args.fields)


def _write(args: argparse.Namespace, options: Options) -> int:
    """``-w FILE``: the shown packets as pcapng (and their summary lines with ``-P``)."""
    from ..output.capture_file import PcapngSink
    from ..writers.outfile import OutputFile     # the writers: -w's alone (imported at every start before)
    if args.T != "text" or args.verbose or args.hex:
        raise RdmaspyError("decode: -w writes packets, not text: -T, -V and -x do not go with it (-P prints "
                           "summary lines as well)")
    inputs = [args.file]
    if args.write == "-" and args.print_summary:
        raise RdmaspyError("decode: -w - writes the packets on standard output, where -P would print lines")
    with OutputFile(args.write, inputs) as stream:
        written = PcapngSink(stream, comment=f"written by rdmaspy from {os.path.basename(args.file)}"
                             + (f" with filter {args.display_filter}" if args.display_filter else ""))
        sinks: list[Sink] = [written]
        out = None
        if args.print_summary:
            out = stdout_lines(args.line_buffered, safe=_checked(args))
            sinks.append(_sink(args, out, options))
        cap, _pipe = run_capture(args.file, sinks, options, out, progress="decode -w")
    report_writer(args.write, written.writer)
    return report_problems(cap)


def register(sub: Any) -> None:
    d = sub.add_parser("decode", help="decode a capture, one line per packet (like tshark -r)")
    add_capture_argument(d)
    d.add_argument("-V", dest="verbose", action="store_true", help="print the full tree of every layer")
    d.add_argument("-x", dest="hex", action="store_true", help="print hex and ASCII of each frame")
    d.add_argument("-c", dest="count", type=positive_int, metavar="N", help="stop after N packets (shown)")
    d.add_argument("-T", choices=("text", "json", "fields", "ek"), default="text",
                   help="output format: text (default), json (JSON Lines, one object per packet), fields "
                        "(the -e fields, one line per packet) or ek (Elasticsearch bulk lines, as tshark -T ek;"
                        " every field, or the -e fields)")
    d.add_argument("-e", dest="fields", action="append", default=[], metavar="NAME",
                   help="a field to print with -T fields (repeat for more), e.g. -e frame.number -e bth.psn")
    d.add_argument("-E", dest="layout", action="append", default=[], metavar="OPTION=VALUE",
                   help="-T fields layout, as tshark: separator=,|/t|/s  aggregator=,  occurrence=a|f|l  "
                        "quote=d|s|n  header=y|n")
    d.add_argument("-Y", dest="display_filter", metavar="EXPR",
                   help="display filter, e.g. 'bth.opcode == 0x0a and reth.dma_length > 4096'")
    d.add_argument("-w", dest="write", metavar="OUT.pcapng",
                   help="write the packets the filter shows (and -c counts) to a pcapng file, comments kept;"
                        " - for standard output")
    d.add_argument("-P", dest="print_summary", action="store_true", help="with -w, print the summary lines too")
    d.add_argument("-t", dest="time_format", choices=FORMATS, metavar="FORMAT", help=TIME_HELP)
    d.add_argument("-l", dest="line_buffered", action="store_true",
                   help="write each line as soon as it is made (for a pipe to a program reading it live)")
    d.add_argument("-n", dest="numeric", action="store_true",
                   help="no name resolution (accepted for tshark's sake: addresses are always numeric)")
    d.add_argument("--color", choices=("auto", "always", "never"), default="auto",
                   help="colour the text: auto (default: on a terminal, unless NO_COLOR is set; FORCE_COLOR "
                        "forces it), always or never")
    d.add_argument("-A", "--analyze", action="store_true",
                   help="run the analysis (PSNs, transactions, expert findings) for summary lines too; always on"
                        " with -V, -T json and filters on analysis or expert fields")
    d.add_argument("-j", "--jobs", type=positive_int, metavar="N",
                   help="processes that share the printing of -V, -x, -T json and -T ek (each reads the whole "
                        "capture, prints its turns; the output is the same): default one a core up to 4 for a "
                        "capture file of 1 MiB or more; 1 for one process")
    add_host_trace_argument(d)
    d.set_defaults(func=cmd_decode)
