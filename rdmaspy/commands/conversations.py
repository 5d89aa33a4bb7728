"""``rdmaspy conversations FILE``: one row per RDMA connection, in the manner of ``tshark -z conv``.

The table is built by rdmaspy.conversation while the capture is decoded; this
module presents its connections as the analysis model has them (``model.Connection``):
a rich table on a terminal, plain columns when piped, or JSON (``-T json``).
"""
from __future__ import annotations

import argparse
import sys
from typing import Any

from ..analysis.model import Connection
from ..conversation import ConnectionTable, connections
from ..output.safe import safe_text
from .common import add_capture_argument, report_problems, run_capture

COLUMNS = ("#", "Client", "QPN", "Server", "QPN", "Service", "State", "Start", "End",
           "Pkts c>s", "Bytes c>s", "Pkts s>c", "Bytes s>c", "Inline c>s", "Inline s>c", "R")


def build_table(path: str) -> tuple[ConnectionTable, Any, int | None]:
    """Decode the whole capture; returns the connection table, the capture (for its problems) and t0."""
    cap, pipe = run_capture(path, [])
    return connections(pipe.session), cap, pipe.t0 if pipe.frames else None


def _qpn(c: Connection, q: int | None) -> str:
    if c.transport == "iwarp":
        return "-"
    return f"0x{q:06x}" if q is not None else "?"


def _service(c: Connection) -> str:
    from ..dissectors.rdma_cm import service_text
    from ..output.ulp import ulp_service
    if c.transport == "iwarp":
        return f"iWARP TCP({c.port}){ulp_service(c, named=True)}"
    if c.service_id is None:
        return "-" if not c.ulp else ulp_service(c, named=True).strip()
    return service_text(c.service_id) + ulp_service(c)


def _endpoint(addr: str, tcp_port: int | None) -> str:
    return f"{addr}:{tcp_port}" if tcp_port is not None else addr


def row(c: Connection, t0: int) -> list[str]:
    state = c.state.value
    if c.reject_reason is not None:
        from ..dissectors.ib_cm import REJ_REASONS
        state = f"{state} ({REJ_REASONS.get(c.reject_reason, c.reject_reason)})"
    return [
        str(c.id), _endpoint(c.client.address, c.client.tcp_port), _qpn(c, c.client.qpn),
        _endpoint(c.server.address, c.server.tcp_port), _qpn(c, c.server.qpn), _service(c), state,
        f"{(c.t_start - t0) / 1e9:.6f}", f"{(c.t_end - t0) / 1e9:.6f}",
        str(c.packets_c2s), str(c.bytes_c2s), str(c.packets_s2c), str(c.bytes_s2c),
        *((str(c.inline_c2s), str(c.inline_s2c), "1" if c.remote_invalidate else "0") if c.inline_applies
          else ("-", "-", "-")),      # RPC-over-RDMA's negotiation: not another upper layer's
    ]


def cmd_conversations(args: argparse.Namespace) -> int:
    tab, cap, t0 = build_table(args.file)
    t0 = t0 or 0
    conns = [Connection.of(c) for c in tab]
    if args.T == "json":
        import orjson

        from ..output.flows import connection_record
        doc = {"file": args.file, "t0": t0, "connections": [connection_record(c) for c in conns]}
        sys.stdout.buffer.write(orjson.dumps(doc, option=orjson.OPT_INDENT_2) + b"\n")
        sys.stdout.flush()
        return report_problems(cap)
    rows = [[safe_text(v) for v in row(c, t0)] for c in conns]
    if sys.stdout.isatty():
        _print_table(f"RDMA connections: {safe_text(args.file)}", rows)
    else:
        widths = [max([len(h)] + [len(r[i]) for r in rows]) for i, h in enumerate(COLUMNS)]
        print("  ".join(h.ljust(w) for h, w in zip(COLUMNS, widths)).rstrip())
        for r in rows:
            print("  ".join(v.ljust(w) for v, w in zip(r, widths)).rstrip())
    return report_problems(cap)


# Columns that hold numbers (right-aligned); where the table splits when the terminal is too narrow
# for it: who and what (# to State), then when and how much (# again, Start to R).
_NUMERIC = frozenset({0, 7, 8, 9, 10, 11, 12, 13, 14})
_SPLIT = 7


def _print_table(title: str, rows: list[list[str]]) -> None:
    """The rows as a rich table.  Nothing is cut to an ellipsis: a table wider than the terminal is
    printed as two (the connections, then their counters, each row numbered), and a value that still
    does not fit folds onto a second line."""
    from rich.console import Console
    console = Console()
    whole = _table(title, list(range(len(COLUMNS))), rows)
    natural = console.measure(whole, options=console.options.update_width(1 << 16)).maximum
    if natural <= console.width:
        console.print(whole)
        return
    console.print(_table(title, list(range(_SPLIT)), rows))
    console.print(_table("", [0, *range(_SPLIT, len(COLUMNS))], rows))


def _table(title: str, columns: list[int], rows: list[list[str]]) -> Any:
    from rich.table import Table
    from rich.text import Text
    t = Table(title=Text(title) if title else None, title_justify="left")
    for i in columns:
        t.add_column(COLUMNS[i], justify="right" if i in _NUMERIC else "left", overflow="fold")
    for r in rows:
        t.add_row(*(Text(r[i]) for i in columns))       # Text: a value is never read as rich markup
    return t


def register(sub: Any) -> None:
    p = sub.add_parser("conversations", help="list RDMA connections, one row each (like tshark -z conv)")
    add_capture_argument(p)
    p.add_argument("-T", choices=("text", "json"), default="text", help="output format: text (default) or json")
    p.set_defaults(func=cmd_conversations)
