"""``rdmaspy query DIR "SELECT ..."``: SQL over the tables of ``rdmaspy export``, on embedded DuckDB.

Each table of the directory is a view of its name (``packets``, ``transactions``, ...; the files of a
parallel export, ``packets-*.parquet``, and a long table's next files, ``packets.1.parquet``..., make one
view).  The result is a table on a terminal, CSV or JSON Lines (``-T``) otherwise.  ``--list`` names the
queries that ship; give a name instead of SQL to run one.  A missing directory, bad SQL, an unknown table
or column: one line, exit 1.
"""
from __future__ import annotations

import argparse
import csv
import glob
import os
import sys
from typing import Any, Iterator

from ..errors import RdmaspyError
from .common import EXIT_OK

# Named queries: (what it shows, SQL).
NAMED: dict[str, tuple[str, str]] = {
    "slowest-transactions": (
        "the 20 transactions with the longest latency",
        "SELECT connection, printf('0x%08x', xid) AS xid, rpc_label, rpc_name, call_frame, reply_frame,"
        " round(latency_ns / 1e3, 1) AS latency_us, state FROM transactions WHERE latency_ns IS NOT NULL"
        " ORDER BY latency_ns DESC, call_frame LIMIT 20"),
    "credit-stalls": (
        "per connection and direction of calls: samples with every granted credit in use",
        "SELECT connection, direction, count(*) FILTER (WHERE granted IS NOT NULL AND outstanding >= granted)"
        " AS stalled_samples, count(*) AS samples, max(outstanding) AS peak_outstanding, min(granted) AS"
        " min_granted, min(frame) FILTER (WHERE granted IS NOT NULL AND outstanding >= granted) AS first_stall"
        " FROM credits GROUP BY connection, direction ORDER BY stalled_samples DESC, connection, direction"),
    "bytes-by-operation": (
        "transactions and bytes (inline, by RDMA READ, by RDMA WRITE) by NFS/RPC operation",
        "SELECT coalesce(rpc_label, '?') AS program, coalesce(array_to_string(nfs_ops, ','), rpc_name, '?') AS"
        " operation, count(*) AS transactions, sum(bytes_inline) AS inline_bytes, sum(bytes_read) AS"
        " read_bytes, sum(bytes_written) AS written_bytes FROM transactions GROUP BY 1, 2"
        " ORDER BY sum(bytes_read + bytes_written + bytes_inline) DESC, 1, 2"),
    "findings-by-rule": (
        "findings by severity and rule, with their first frame",
        "SELECT severity, coalesce(rule, message) AS what, count(*) AS findings, min(frame) AS first_frame"
        " FROM findings GROUP BY 1, 2 ORDER BY list_position(['error', 'warning', 'note', 'chat'], severity),"
        " 3 DESC, 2"),
}
_TERMINAL_ROWS = 1000     # rows a terminal table shows; CSV and JSON Lines stream them all
_FETCH = 4096


def connect(directory: str) -> Any:
    """A DuckDB connection with a view per table of the export in ``directory``."""
    from ..scale import need
    duckdb = need("duckdb", "query")
    if not os.path.isdir(directory):
        raise RdmaspyError(f"{directory}: no such directory (make one with rdmaspy export FILE -o {directory})")
    con = duckdb.connect()
    try:
        found = _views(con, directory)
    except duckdb.Error as exc:
        raise RdmaspyError(f"{directory}: {_first_line(exc)}") from None
    if not found:
        raise RdmaspyError(f"{directory}: holds no tables of rdmaspy export")
    return con


def _views(con: Any, directory: str) -> int:
    """A view per table found in ``directory``; returns how many."""
    from ..output.parquet import EVERY_TABLE as TABLES
    found = 0
    for name in TABLES:
        # <name>.parquet, its next files <name>.<n>.parquet, a parallel export's <name>-<shard>...
        files = sorted(f for pattern in (f"{name}.parquet", f"{name}.*.parquet", f"{name}-*.parquet")
                       for f in glob.glob(os.path.join(glob.escape(directory), pattern)))
        if files:
            found += 1
            listed = ", ".join("'" + f.replace("'", "''") + "'" for f in files)
            con.execute(f"CREATE VIEW {name} AS SELECT * FROM read_parquet([{listed}])")
    return found


def run_sql(con: Any, sql: str) -> tuple[list[str], Iterator[tuple]]:
    """Column names and the rows of ``sql``; DuckDB's errors as one line."""
    import duckdb
    try:
        cur = con.execute(sql)
    except duckdb.Error as exc:
        raise RdmaspyError(f"query: {_first_line(exc)}") from None
    if cur.description is None:
        return [], iter(())
    names = [d[0] for d in cur.description]

    def rows() -> Iterator[tuple]:
        while True:
            try:
                batch = cur.fetchmany(_FETCH)
            except duckdb.Error as exc:
                raise RdmaspyError(f"query: {_first_line(exc)}") from None
            if not batch:
                return
            yield from batch
    return names, rows()


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def _plain(v: Any) -> Any:
    """A value as text for CSV: lists and structs as JSON, times in ISO 8601."""
    if v is None:
        return ""
    if isinstance(v, (list, dict)):
        import orjson
        return orjson.dumps(v, default=str).decode()
    if hasattr(v, "isoformat"):
        return v.isoformat()
    return v


def write_csv(names: list[str], rows: Iterator[tuple]) -> None:
    w = csv.writer(sys.stdout, lineterminator="\n")
    w.writerow(names)
    for row in rows:
        w.writerow([_plain(v) for v in row])


def write_json_lines(names: list[str], rows: Iterator[tuple]) -> None:
    import orjson
    out = sys.stdout.buffer
    for row in rows:
        out.write(orjson.dumps(dict(zip(names, row)), default=str) + b"\n")
    out.flush()


def write_table(names: list[str], rows: Iterator[tuple]) -> None:
    from rich.console import Console
    from rich.table import Table
    table = Table(*names, show_lines=False)
    shown = 0
    more = 0
    for row in rows:
        if shown < _TERMINAL_ROWS:
            table.add_row(*["" if v is None else str(_plain(v)) for v in row])
            shown += 1
        else:
            more += 1
    console = Console()
    console.print(table)
    tail = f"{shown} rows" if not more else f"{shown} of {shown + more} rows shown (-T csv or -T json for all)"
    console.print(tail, style="dim")


def cmd_query(args: argparse.Namespace) -> int:
    if args.list:
        for name, (what, sql) in NAMED.items():
            print(f"{name:<22} {what}")
            if args.verbose:
                print(f"{'':<22} {sql}")
        sys.stdout.flush()
        return EXIT_OK
    if args.directory is None or args.sql is None:
        raise RdmaspyError("query: give DIR and SQL (or the name of a query: see --list)")
    sql = NAMED[args.sql][1] if args.sql in NAMED else args.sql
    con = connect(args.directory)
    names, rows = run_sql(con, sql)
    fmt = args.T or ("table" if sys.stdout.isatty() else "csv")
    sys.stdout.flush()
    if fmt == "csv":
        write_csv(names, rows)
    elif fmt == "json":
        write_json_lines(names, rows)
    else:
        write_table(names, rows)
    sys.stdout.flush()
    return EXIT_OK


def register(sub: Any) -> None:
    p = sub.add_parser("query", help="SQL (DuckDB) over the tables of rdmaspy export; --list: the named queries")
    p.add_argument("directory", nargs="?", metavar="DIR", help="a directory written by rdmaspy export")
    p.add_argument("sql", nargs="?", metavar="SQL", help="a SELECT over packets, transactions, segments, credits, "
                   "connections, findings; or the name of a query from --list")
    p.add_argument("-T", choices=("table", "csv", "json"),
                   help="table (default on a terminal), csv (default otherwise) or json (JSON Lines)")
    p.add_argument("--list", action="store_true", help="the named queries")
    p.add_argument("-v", dest="verbose", action="store_true", help="with --list: their SQL too")
    p.set_defaults(func=cmd_query)
