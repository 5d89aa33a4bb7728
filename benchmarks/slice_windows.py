#!/usr/bin/env python3
"""How wide the warm-up and look-ahead windows of a time slice must be, measured, not guessed
(figures in docs/export.md; `rdmaspy export --workers` starts each slice from a pickled state instead).

    python3 benchmarks/slice_windows.py                                    # the shipped NFS captures
    python3 benchmarks/slice_windows.py captures/rxe-nfsv3-loss.pcap --slices 8

Each capture is cut into ``--slices`` time slices.  One process gives the reference: every packet's
row of the ``packets`` table, every transaction's row of ``transactions`` and every credit sample.
Then each slice is decoded by a new pipeline that starts W frames before the slice (the warm-up) and
reads on L frames after it (the look-ahead); its rows for the slice's frames (a transaction: by its
first frame) are compared with the reference.  The table gives, for each window, the share of rows
that come out exactly as in one process: a window is wide enough when every slice gives 100 %.
"""
from __future__ import annotations

import argparse
import collections
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from rdmaspy.analysis.model import CreditSeries, Record, Transaction  # noqa: E402
from rdmaspy.output.parquet import SCHEMAS, packet_row, transaction_row  # noqa: E402
from rdmaspy.packet import Packet  # noqa: E402
from rdmaspy.pipeline import Options, Pipeline  # noqa: E402
from rdmaspy.readers import open_capture  # noqa: E402

CAPTURES = ["rxe-nfsv3-rdma.pcap", "rxe-nfsv3-concurrent.pcap", "rxe-nfsv3-loss.pcap", "siw-nfsv3-rdma.pcap",
            "siw-nfsv3-loss.pcap"]
WARM_UPS = [0, 10, 100, 1000, -1]           # frames before the slice; -1: from the capture's first frame
LOOK_AHEADS = [0, 10, 100, 1000, -1]        # frames after the slice; -1: to the capture's last frame


class Rows:
    """The rows one pipeline gives: packets by frame, transactions by first frame, credit samples."""

    def __init__(self) -> None:
        self.packets: dict[int, tuple[Any, ...]] = {}
        self.transactions: dict[tuple[int, int], tuple[Any, ...]] = {}
        self.credits: dict[tuple[int, str], tuple[Any, ...]] = {}

    def packet(self, pkt: Packet) -> None:
        self.packets[pkt.frame.num] = packet_row(pkt, "")

    def on_record(self, rec: Record) -> None:
        if isinstance(rec, Transaction):
            row = transaction_row(rec)
            self.transactions[(row[5], row[1])] = row          # (first frame, xid)
        elif isinstance(rec, CreditSeries):
            for p in rec.samples:
                self.credits[(p.frame, p.direction.value)] = (p.conn, p.granted, p.requested, p.outstanding)

    def finish(self) -> None:
        pass


def rows_of(frames: list[Any], first: int, last: int) -> Rows:
    """A new pipeline over frames first .. last (1-based, inclusive)."""
    rows = Rows()
    pipe = Pipeline(iter(frames[first - 1:last]), Options(analyze=True), [rows])
    pipe.run()
    return rows


def share(want: dict, got: dict, keep: Any, names: list[str] | None = None,
          differ: collections.Counter | None = None) -> tuple[int, int]:
    """(rows exactly as in one process, rows in one process) of the keys ``keep`` accepts; the columns
    that differ are counted in ``differ`` (a missing row as "missing")."""
    keys = [k for k in want if keep(k)]
    same = 0
    for k in keys:
        row = got.get(k)
        if row == want[k]:
            same += 1
        elif differ is not None and names is not None:
            differ.update(["missing"] if row is None else
                          [names[i] for i, (a, b) in enumerate(zip(want[k], row)) if a != b])
    return same, len(keys)


def measure(path: Path, slices: int) -> None:
    with open_capture(str(path)) as cap:
        frames = list(cap)
    n = len(frames)
    ref = rows_of(frames, 1, n)
    cuts = [n * k // slices for k in range(slices + 1)]
    print(f"\n{path.name}: {n:,} frames, {slices} slices, {len(ref.transactions)} transactions")
    print("| window | frames | packets exact | transactions exact | credit samples exact | columns that differ most |")
    print("| --- | ---: | ---: | ---: | ---: | --- |")
    for kind, widths in (("warm-up", WARM_UPS), ("look-ahead", LOOK_AHEADS)):
        for w in widths:
            total = [0, 0, 0, 0, 0, 0]
            differ: collections.Counter = collections.Counter()
            for k in range(1, slices + 1) if kind == "warm-up" else range(slices):
                lo, hi = cuts[k - 1] if kind == "warm-up" else cuts[k], cuts[k] if kind == "warm-up" else cuts[k + 1]
                if kind == "warm-up":          # a look-ahead to the end: only the warm-up is short
                    first, last = (1 if w < 0 else max(1, lo + 1 - w)), n
                else:                          # the exact state at the slice's start (from frame 1)
                    first, last = 1, (n if w < 0 else min(n, hi + w))
                got = rows_of(frames, first, last)
                inside = (lambda f, lo=lo, hi=hi: lo < f <= hi)
                for i, (want, have, key, names) in enumerate((
                        (ref.packets, got.packets, inside, [f"packets.{n}" for n in SCHEMAS["packets"].names]),
                        (ref.transactions, got.transactions, lambda t, inside=inside: inside(t[0]),
                         [f"transactions.{n}" for n in SCHEMAS["transactions"].names]),
                        (ref.credits, got.credits, lambda c, inside=inside: inside(c[0]),
                         ["credits.connection", "credits.granted", "credits.requested", "credits.outstanding"]))):
                    same, of = share(want, have, key, names, differ)
                    total[2 * i] += same
                    total[2 * i + 1] += of
            label = "whole capture" if w < 0 else f"{w:,}"
            cells = " | ".join(f"{100 * s / o:.1f} % ({o - s:,} differ)" if o else "-"
                               for s, o in zip(total[0::2], total[1::2]))
            most = ", ".join(f"{name} {n:,}" for name, n in differ.most_common(3))
            print(f"| {kind} | {label} | {cells} | {most} |", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("captures", nargs="*", type=Path)
    ap.add_argument("--slices", type=int, default=4)
    args = ap.parse_args()
    paths = args.captures or [ROOT / "captures" / c for c in CAPTURES]
    for path in paths:
        measure(path, args.slices)


if __name__ == "__main__":
    main()
