"""``rdmaspy export FILE... -o DIR``: the capture as Parquet tables (schema export-1, docs/export.md).

Several files are one capture, read in the order given (rdmaspy.scale.source).  With ``--workers``
above 1 or ``--cluster``, the decode is split into shards run on the distributed engine
(rdmaspy.scale.parallel); the tables are the same as one process writes.
"""
from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from ..errors import RdmaspyError
from .common import EXIT_DAMAGED, EXIT_OK, add_host_trace_argument, positive_int, warn_unmatched


def check_inputs(paths: list[str]) -> None:
    """Every input opens as a capture (one clear line for the first that does not), before anything runs."""
    from ..readers import open_capture
    for path in paths:
        open_capture(path).close()


def prepare_directory(directory: str) -> None:
    """An output directory that holds no tables of an earlier export (they would mix with these)."""
    from ..output.parquet import EVERY_TABLE as TABLES
    from ..output.parquet import MANIFEST
    if os.path.exists(directory) and not os.path.isdir(directory):
        raise RdmaspyError(f"{directory}: exists and is not a directory")
    try:
        os.makedirs(directory, exist_ok=True)
    except OSError as exc:
        raise RdmaspyError(f"{directory}: {exc.strerror or exc}") from None
    for name in os.listdir(directory):
        if name == MANIFEST or (name.endswith(".parquet") and name.split(".", 1)[0].split("-", 1)[0] in TABLES):
            os.remove(os.path.join(directory, name))


def export_single(paths: list[str], directory: str, host: Any = None) -> tuple[dict[str, int], int, list[str]]:
    """One process: the files through the one pipeline with the export sink (and, with ``host``, the join of
    host traces before it: the host_events table).  Returns the rows of each table, the frames read and the
    damage met."""
    from ..output.parquet import ExportSink
    from ..pipeline import Options, Pipeline
    from ..scale.source import ChainedCapture

    cap = ChainedCapture(paths)
    sink = ExportSink(directory, file_of=cap.file_of, host_events=host is not None)
    with cap:
        pipe = Pipeline(cap, Options(analyze=True), [sink] if host is None else [host, sink])
        pipe.run()
    return sink.rows, pipe.frames, cap.problems


def export_tables(paths: list[str], directory: str, workers: int | None,
                  cluster: str | None, host: Any = None) -> tuple[dict[str, int], int, list[str], int]:
    """One process, or shards on the engine: asked for (``--workers N`` above 1, ``--cluster``), or by
    default when the machine has several cores and the capture is big enough and has several host pairs.
    With host traces (``host``), one process: the traces are read in the capture's order.
    Returns the rows of each table, the frames, the damage met and the shards."""
    if host is not None:
        rows, frames, problems = export_single(paths, directory, host)
        return rows, frames, problems, 1
    plan = None
    if workers is None and cluster is None:
        cores = os.cpu_count() or 1
        if cores > 1:
            from ..scale.parallel import MIN_PARALLEL_FRAMES, make_plan
            plan = make_plan(paths, cores)
            if plan.frames < MIN_PARALLEL_FRAMES or plan.shards == 1:
                plan = None
            else:
                workers = cores
    if (workers is None or workers == 1) and cluster is None and plan is None:
        rows, frames, problems = export_single(paths, directory)
        return rows, frames, problems, 1
    from ..scale.parallel import export_parallel
    result = export_parallel(paths, directory, workers, cluster, plan)
    return result.rows, result.frames, result.problems, result.workers


def write_manifest(directory: str, paths: list[str], frames: int, rows: dict[str, int], workers: int) -> None:
    import orjson
    from ..output.parquet import MANIFEST, SCHEMA_NAME, SCHEMA_VERSION
    doc: dict[str, Any] = {"format": SCHEMA_NAME, "version": SCHEMA_VERSION, "files": paths, "frames": frames,
                           "rows": rows, "workers": workers}
    with open(os.path.join(directory, MANIFEST), "wb") as fh:
        fh.write(orjson.dumps(doc, option=orjson.OPT_INDENT_2) + b"\n")


def cmd_export(args: argparse.Namespace) -> int:
    from ..scale import need
    need("pyarrow.parquet", "export")
    paths: list[str] = args.files
    check_inputs(paths)
    host = None
    if args.host_trace:
        if (args.workers or 1) > 1 or args.cluster:
            raise RdmaspyError("export: --host-trace joins the traces in the capture's order, in one process: "
                               "--workers and --cluster do not go with it")
        from ..budget import default_limit
        from ..output.hosttrace import prepare
        host = prepare(paths[0], list(args.host_trace), default_limit())
        warn_unmatched(host.clocks)
    prepare_directory(args.output)
    rows, frames, problems, workers = export_tables(paths, args.output, args.workers, args.cluster, host)
    write_manifest(args.output, paths, frames, rows, workers)
    if not args.quiet:
        counts = ", ".join(f"{n} {t}" for t, n in rows.items())
        print(f"rdmaspy: {frames} frames exported to {args.output}: {counts}", file=sys.stderr)
    for p in problems:
        print(f"rdmaspy: warning: {p}; the frames before it were exported", file=sys.stderr)
    return EXIT_DAMAGED if problems else EXIT_OK


def register(sub: Any) -> None:
    p = sub.add_parser("export", help="the capture as Parquet tables: packets, transactions, segments, credits, "
                                      "connections, findings (docs/export.md)")
    p.add_argument("files", nargs="+", metavar="FILE", help="pcap or pcapng files, read as one capture in this order")
    p.add_argument("-o", dest="output", required=True, metavar="DIR", help="directory for the tables")
    p.add_argument("--workers", type=positive_int, metavar="N",
                   help="decode in N shards by host pair on the distributed engine (Dask), the packets of a shard "
                        "in time slices when there are fewer host pairs than N; default: the machine's cores for a "
                        "capture of 200,000 frames or more with several host pairs, else one process")
    p.add_argument("--cluster", metavar="ADDRESS", help="run the shards on the Dask scheduler at ADDRESS "
                   "(tcp://host:8786) instead of a local cluster; the files must be at the same path on its workers")
    p.add_argument("-q", dest="quiet", action="store_true", help="print no summary line")
    add_host_trace_argument(p)
    p.set_defaults(func=cmd_export)
