#!/usr/bin/env python3
"""Summarise `lab/run bench` results: native hot path vs pure pyverbs vs perftest, one table.

    python3 lab/bench_report.py [lab/cache/out/bench]
"""
from __future__ import annotations

import json
import re
import sys
from pathlib import Path


def _json(d: Path, name: str) -> dict | None:
    p = d / name
    return json.loads(p.read_text()) if p.exists() else None


def _perftest_row(d: Path, name: str) -> list[float] | None:
    """The numeric result row of a perftest client log."""
    p = d / name
    if not p.exists():
        return None
    for line in p.read_text().splitlines():
        cols = line.split()
        if len(cols) >= 4 and all(re.fullmatch(r"[0-9.]+", c) for c in cols):
            return [float(c) for c in cols]
    return None


def main(argv: list[str]) -> int:
    d = Path(argv[1]) if len(argv) > 1 else Path(__file__).resolve().parent / "cache" / "out" / "bench"
    rows = []
    native, pyv = _json(d, "bench-native.json"), _json(d, "bench-pyverbs.json")
    for label, b in (("native loop, pyverbs-made QP/CQ (Send/Recv)", native),
                     ("pure-pyverbs loop, same QP/CQ (Send/Recv)", pyv),
                     ("native loop, QP made by rdma_create_ep", _json(d, "bench-native-cm.json"))):
        if b:
            rows.append((label, b["round_trips_per_s"], b["half_round_trip_us"]))
    lat = _perftest_row(d, "perftest-send-lat.client.log")
    if lat:
        # bytes iterations t_min t_max t_typical t_avg ...: t_avg is one way (half a round trip)
        t_avg = lat[5]
        rows.append(("perftest ib_send_lat (64 B)", 1e6 / (2 * t_avg), t_avg))
    for label, name in (("rdmaspy load, RPC NULL, 1 in flight", "rpc-null-c1.json"),
                        ("rdmaspy load, RPC NULL, 16 in flight", "rpc-null-c16.json")):
        r = _json(d, name)
        if r:
            rows.append((label, r["ops_per_s"], r["latency_us"]["p50"] / 2))
    print(f"{'':50} {'round trips/s':>14} {'one-way us':>11}")
    for label, rate, us in rows:
        print(f"{label:50} {rate:14.0f} {us:11.1f}")
    bw = _perftest_row(d, "perftest-write-bw.client.log")
    if bw:
        print(f"perftest ib_write_bw ({int(bw[0])} B): {bw[3]:.1f} MB/s average, {bw[4]:.4f} Mpps")
    if native and pyv:
        print(f"native / pure pyverbs: {native['round_trips_per_s'] / pyv['round_trips_per_s']:.2f}x")
    if native and lat:
        print(f"native / perftest ib_send_lat: {native['round_trips_per_s'] / (1e6 / (2 * lat[5])):.2f}")
    return 0 if rows else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
