"""``rdmaspy flows FILE``: annotated JSON flows, one object per connection (schema flows-1).

``-o flows.json`` writes one JSON document; ``-T jsonl`` writes JSON Lines on stdout (or to ``-o``):
a line per connection, then a line for the capture.  The capture is decoded and analysed in one
pass; the records are spooled per connection by rdmaspy.output.flows and assembled at the end.
This module only wires the pieces together and writes bytes.
"""
from __future__ import annotations

import argparse
import sys
from typing import Any

from ..errors import RdmaspyError
from .common import report_problems


def run(path: str, out: Any, fmt: str = "json") -> tuple[Any, int]:
    """Decode and analyse ``path``, write the flows to the binary stream ``out``; returns (capture, frames)."""
    from ..analysis.analyzer import Analyzer
    from ..analysis.model import Connection
    from ..conversation import connections
    from ..output.flows import FlowBuilder
    from ..engine import Engine
    from ..readers import open_capture

    cap = open_capture(path)
    engine = Engine()
    with FlowBuilder() as builder:
        analyzer = Analyzer(on_finding=builder.on_finding, on_record=builder.on_record, keep_findings=False,
                            budget=engine.session.budget)
        feed = analyzer.feed
        dissect = engine.dissect
        t0 = None
        frames = 0
        with cap:
            for frame in cap:
                if t0 is None:
                    t0 = frame.ts
                frames += 1
                feed(dissect(frame))
        analyzer.finish()
        conns = [Connection.of(c) for c in connections(engine.session)]
        if fmt == "jsonl":
            builder.write_lines(out, conns, path, t0, frames)
        else:
            builder.write_document(out, conns, path, t0, frames)
    return cap, frames


def cmd_flows(args: argparse.Namespace) -> int:
    fmt = args.T
    if args.output is None and fmt != "jsonl":
        raise RdmaspyError("flows: give -o FILE for the JSON document, or -T jsonl for JSON Lines on stdout")
    if args.output is None:
        out = sys.stdout.buffer
        cap, _n = run(args.file, out, fmt)
        out.flush()
    else:
        try:
            fh = open(args.output, "wb")
        except OSError as exc:
            raise RdmaspyError(f"{args.output}: {exc.strerror or exc}") from None
        with fh:
            cap, _n = run(args.file, fh, fmt)
    return report_problems(cap)


def register(sub: Any) -> None:
    p = sub.add_parser("flows", help="annotated JSON flows: per connection its setup, transactions, credits, findings")
    p.add_argument("file", help="pcap or pcapng file (optionally gzip-compressed)")
    p.add_argument("-o", dest="output", metavar="FILE", help="write the flows to FILE (JSON document; JSON Lines "
                   "with -T jsonl)")
    p.add_argument("-T", choices=("json", "jsonl"), default="json",
                   help="json (default: one document, needs -o) or jsonl (one connection per line)")
    p.set_defaults(func=cmd_flows)
