"""``rdmaspy flows FILE``: annotated JSON flows, one object per connection (schema flows-1).

``-o flows.json`` writes one JSON document; ``-T jsonl`` writes JSON Lines on stdout (or to ``-o``):
a line per connection, then a line for the capture.  The capture is decoded and analysed in one
pass; the records are spooled per connection by rdmaspy.output.flows and assembled at the end.
This module only wires the pieces together and writes bytes.
"""
from __future__ import annotations

import argparse
import os
from typing import Any

from ..errors import RdmaspyError
from ..pipeline import Options
from ..writers.outfile import STDOUT, OutputFile
from .common import add_capture_argument, add_host_trace_argument, host_join, report_problems, run_capture


class FlowsSink:
    """The pipeline's sink for the flows: the analysis records spooled per connection by the builder,
    the document (``fmt`` "json") or JSON Lines ("jsonl") written to the binary stream ``out`` at the end."""

    def __init__(self, builder: Any, out: Any, path: str, fmt: str = "json") -> None:
        self.builder = builder
        self.on_record = builder.on_record
        self.on_finding = builder.on_finding
        self.out = out
        self.path = path
        self.fmt = fmt
        self._pipe: Any = None

    reads_packets = False       # the flow builder's records and findings are all it reads
    wants_psn_events = False    # the flows hold transactions, credits and summaries

    def attach(self, pipe: Any) -> None:
        self._pipe = pipe

    def packet(self, pkt: Any) -> None:
        pass

    def finish(self) -> None:
        from ..analysis.model import Connection
        from ..conversation import connections
        pipe = self._pipe
        conns = [Connection.of(c) for c in connections(pipe.session)]
        t0 = pipe.t0 if pipe.frames else None
        if self.fmt == "jsonl":
            self.builder.write_lines(self.out, conns, self.path, t0, pipe.frames)
        else:
            self.builder.write_document(self.out, conns, self.path, t0, pipe.frames)


def spool_dir(output: str | None) -> str | None:
    """Where the spool of a run goes: beside its output file (the space it needs is the output's),
    else $TMPDIR."""
    if output is None or output == STDOUT or (os.path.exists(output) and not os.path.isfile(output)):
        return None                 # standard output, a device, a FIFO
    head = os.path.dirname(os.path.abspath(output))
    return head if os.path.isdir(head) and os.access(head, os.W_OK) else None


def run(path: str, out: Any, fmt: str = "json", spool: str | None = None, host: Any = None) -> tuple[Any, int]:
    """Decode and analyse ``path``, write the flows to the binary stream ``out``; returns (capture, frames).
    ``spool``: the directory of the temporary spool (None: $TMPDIR); ``host``: the join of host traces
    (``common.host_join``): the transactions carry their host events, the document the clocks."""
    from ..output.flows import FlowBuilder

    with FlowBuilder(spool) as builder:
        if host is not None:
            builder.host_clocks = host.clocks
        cap, pipe = run_capture(path, [FlowsSink(builder, out, path, fmt)], Options(packet_fields=False),
                                progress="flows", host=host)          # records only: no packet is shown
    return cap, pipe.frames


def cmd_flows(args: argparse.Namespace) -> int:
    fmt = args.T
    if args.output is None and fmt != "jsonl":
        raise RdmaspyError("flows: give -o FILE for the JSON document, or -T jsonl for JSON Lines on stdout")
    # Written whole or not at all: under a temporary name beside the output, renamed at the end.
    host = host_join(args)
    with OutputFile(args.output or STDOUT, [args.file]) as out:
        cap, _n = run(args.file, out, fmt, spool_dir(args.output), host)
    return report_problems(cap)


def register(sub: Any) -> None:
    p = sub.add_parser("flows", help="annotated JSON flows: per connection its setup, transactions, credits, findings")
    add_capture_argument(p)
    p.add_argument("-o", dest="output", metavar="FILE", help="write the flows to FILE (JSON document; JSON Lines "
                   "with -T jsonl)")
    p.add_argument("-T", choices=("json", "jsonl"), default="json",
                   help="json (default: one document, needs -o) or jsonl (one connection per line)")
    add_host_trace_argument(p)
    p.set_defaults(func=cmd_flows)
