#!/usr/bin/env python3
"""Decode benchmark: rdmaspy against tshark on the same large captures, in one run.

Two workloads, each at 100k and 1M frames (built once, cached in benchmarks/out/):
  real       the SoftRoCE and soft-iWARP captures shipped in captures/, cycled (real_mix.py)
  synthetic  the NFSv3-over-RDMA workload of traffic.py, made with the encoders
At each size it runs, side by side with tshark:
  rdmaspy decode FILE          vs  tshark -r FILE                  (summary lines)
  rdmaspy decode -T json FILE  vs  tshark -r FILE -T ek            (every field)
  rdmaspy decode -V FILE       vs  tshark -r FILE -V               (the full tree)
  rdmaspy stats FILE           vs  tshark -q -z conv,udp           (statistics)
  rdmaspy expert FILE          vs  tshark -q -z expert             (findings)
  rdmaspy flows FILE           (the transaction analysis; tshark has none)
and prints packets per second, the ratios against the targets, and peak memory (RSS) of each.

rdmaspy is measured as ``pip install .`` installs it: the per-packet path compiled with mypyc
(built from the working tree into benchmarks/out/compiled by scripts/compiled_tree.py).
``--build pure`` measures the Python source instead, ``--build installed`` the rdmaspy on PATH.

    python3 benchmarks/decode_bench.py [--workloads real,synthetic] [--sizes 100000,1000000]
                                       [--repeat 1] [--skip-slow-above N] [--build compiled|pure|installed]
                                       [--commands=summary,JSON,-V,stats,expert,flows]
"""
from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

import real_mix  # noqa: E402
import traffic  # noqa: E402
from measure import Run, best_of  # noqa: E402

WORKLOADS = {
    "real": ("real_mix_{size}.pcapng", lambda path, size: real_mix.build(Path(path), size)),
    "synthetic": ("nfs_rocev2_{size}.pcap", lambda path, size: traffic.build(path, size)),
}


def capture_for(workload: str, size: int, out: Path) -> Path:
    pattern, build = WORKLOADS[workload]
    path = out / pattern.format(size=size)
    if not path.exists():
        tmp = path.with_name(path.name + ".tmp")
        print(f"building {path.name} ({size:,} frames) ...", flush=True)
        build(str(tmp), size)
        tmp.rename(path)
    return path


BUILD = {"tree": None}      # the directory whose rdmaspy runs (None: the installed command)


def use_build(kind: str, out: Path) -> str:
    """Choose what ``rdmaspy`` means in this run; returns a description."""
    if kind == "installed":
        BUILD["tree"] = None
        return f"installed: {shutil.which('rdmaspy') or 'python -m rdmaspy'}"
    if kind == "pure":
        BUILD["tree"] = str(HERE.parent)
        return f"pure Python from {HERE.parent}"
    res = subprocess.run([sys.executable, str(HERE.parent / "scripts" / "compiled_tree.py"), str(out / "compiled")],
                         capture_output=True, text=True)
    if res.returncode != 0:
        raise SystemExit(res.stderr.strip() or "the compiled build failed")
    BUILD["tree"] = res.stdout.strip()
    return f"compiled with mypyc (as pip install . builds it), in {BUILD['tree']}"


def rdmaspy_cmd(*args: str) -> list[str]:
    tree = BUILD["tree"]
    if tree is not None:
        # -P: the current directory (a checkout, pure Python) must not come before the tree
        return ["env", f"PYTHONPATH={tree}", sys.executable, "-P", "-m", "rdmaspy", *args]
    exe = shutil.which("rdmaspy")
    return [exe, *args] if exe else [sys.executable, "-m", "rdmaspy", *args]


def has_command(name: str) -> bool:
    res = subprocess.run(rdmaspy_cmd("--help"), capture_output=True, text=True)
    return f" {name} " in res.stdout or f"{{{name}," in res.stdout or f",{name}," in res.stdout or \
        f",{name}}}" in res.stdout


def row(r: Run) -> str:
    return f"  {r.label:<28} {r.frames:>9,} frames {r.wall:8.2f} s {r.pps:>11,.0f} pkt/s " \
           f"cpu {r.cpu:7.2f} s  peak RSS {r.maxrss_mb:8.1f} MiB"


# (label, rdmaspy arguments ({file}: the capture), tshark arguments or None, target ratio rdmaspy/tshark, slow)
COMMANDS: list[tuple[str, list[str], list[str] | None, float | None, bool]] = [
    ("summary", ["decode", "{file}"], [], 2.0, False),
    ("JSON", ["decode", "-T", "json", "{file}"], ["-T", "ek"], 4.0, True),
    ("-V", ["decode", "-V", "{file}"], ["-V"], 1.0, True),
    ("stats", ["stats", "{file}"], ["-q", "-z", "conv,udp"], 1.0, False),
    ("expert", ["expert", "{file}"], ["-q", "-z", "expert"], None, False),
    ("flows", ["flows", "{file}", "-o", os.devnull], None, None, False),
]


def measure(path: str, size: int, repeat: int, skip_slow: bool,
            only: set[str] | None = None) -> list[tuple[str, Run, Run | None, float | None]]:
    rows = []
    for label, ours, theirs, target, slow in COMMANDS:
        if (slow and skip_slow) or (only is not None and label not in only):
            continue
        if ours[0] != "decode" and not has_command(ours[0]):
            continue
        tshark_run = None
        if theirs is not None:
            # tshark's slow outputs once whatever --repeat says: minutes a run at 1M frames
            tshark_run = best_of(1 if slow else repeat, f"tshark {' '.join(theirs) or '-r'}",
                                 ["tshark", "-n", "-r", path, *theirs], size)
            print(row(tshark_run), flush=True)
        argv = [path if a == "{file}" else a for a in ours]
        name = " ".join(a for a in ours if a not in ("{file}", "-o", os.devnull))
        ours_run = best_of(repeat, f"rdmaspy {name}", rdmaspy_cmd(*argv), size)
        print(row(ours_run), flush=True)
        if tshark_run is not None:
            ratio = ours_run.pps / tshark_run.pps
            goal = f" (target >= {target:.1f})" if target is not None else ""
            print(f"  {label}: rdmaspy/tshark = {ratio:.2f}x{goal}", flush=True)
        rows.append((label, ours_run, tshark_run, target))
    return rows


def table(results: dict[tuple[str, int], list]) -> str:
    """The figures as a Markdown table (docs/performance.md keeps one)."""
    lines = ["| workload | frames | command | rdmaspy pkt/s | tshark pkt/s | ratio | target | rdmaspy peak MiB | "
             "tshark peak MiB |", "|---|---|---|---|---|---|---|---|---|"]
    for (workload, size), rows in results.items():
        for label, ours, theirs, target in rows:
            ratio = f"{ours.pps / theirs.pps:.2f}x" if theirs is not None else ""
            lines.append(f"| {workload} | {size:,} | {label} | {ours.pps:,.0f} | "
                         f"{'' if theirs is None else f'{theirs.pps:,.0f}'} | {ratio} | "
                         f"{'' if target is None else f'>= {target:.1f}x'} | {ours.maxrss_mb:.1f} | "
                         f"{'' if theirs is None else f'{theirs.maxrss_mb:.1f}'} |")
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workloads", default="real,synthetic", help="real, synthetic or both (comma-separated)")
    ap.add_argument("--sizes", default="100000,1000000")
    ap.add_argument("--repeat", type=int, default=1,
                    help="runs of each command (tshark's JSON and -V: one); the fastest is reported")
    ap.add_argument("--skip-slow-above", type=int, default=10**9,
                    help="skip the JSON and -V comparisons for captures larger than this (tshark takes minutes)")
    ap.add_argument("--commands", help="only these, comma-separated (--commands=-V,stats): " + ", ".join(c[0] for c in COMMANDS))
    ap.add_argument("--out", default=str(HERE / "out"))
    ap.add_argument("--build", choices=("compiled", "pure", "installed"), default="compiled",
                    help="which rdmaspy to measure (default: compiled, as pip install . builds it)")
    args = ap.parse_args()
    if not shutil.which("tshark"):
        print("tshark is needed: apt-get install -y tshark", file=sys.stderr)
        return 1
    workloads = [w for w in args.workloads.split(",") if w]
    unknown = [w for w in workloads if w not in WORKLOADS]
    if unknown:
        print(f"unknown workload {unknown[0]!r} (real, synthetic)", file=sys.stderr)
        return 1
    only = None if args.commands is None else set(args.commands.split(","))
    if only is not None and not only <= {c[0] for c in COMMANDS}:
        print(f"unknown command {sorted(only - {c[0] for c in COMMANDS})[0]!r} "
              f"({', '.join(c[0] for c in COMMANDS)})", file=sys.stderr)
        return 1
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    tshark_version = subprocess.run(["tshark", "--version"], capture_output=True, text=True).stdout.splitlines()[0]
    print("rdmaspy:", use_build(args.build, out), flush=True)
    print("tshark:", tshark_version, flush=True)
    sizes = [int(s) for s in args.sizes.split(",")]
    results: dict[tuple[str, int], list] = {}
    for workload in workloads:
        for size in sizes:
            path = str(capture_for(workload, size, out))
            print(f"\n{workload}: {size:,} frames ({os.path.getsize(path) / 2**20:.0f} MiB)", flush=True)
            results[(workload, size)] = measure(path, size, args.repeat, size > args.skip_slow_above, only)
    if len(sizes) > 1:
        for workload in workloads:
            small, large = results[(workload, sizes[0])], results[(workload, sizes[-1])]
            print(f"\n{workload}: peak memory, {sizes[0]:,} -> {sizes[-1]:,} frames:")
            # by command: the large size may have skipped the slow ones (--skip-slow-above)
            large_of = {row[0]: row for row in large}
            for label, ours, theirs, _t in small:
                if label not in large_of:
                    continue
                _l, ours_l, theirs_l, _t2 = large_of[label]
                print(f"  rdmaspy {label:<10} {ours.maxrss_mb:8.1f} -> {ours_l.maxrss_mb:8.1f} MiB")
                if theirs is not None and theirs_l is not None:
                    print(f"  tshark  {label:<10} {theirs.maxrss_mb:8.1f} -> {theirs_l.maxrss_mb:8.1f} MiB")
    print("\n" + table(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
