#!/usr/bin/env python3
"""Decode benchmark: rdmaspy against tshark on the same large RoCEv2 capture, in one run.

Builds (once, cached in benchmarks/out/) captures of the NFSv3-over-RDMA workload of traffic.py at
100k and 1M frames, then runs at each size:
  rdmaspy decode FILE          vs  tshark -r FILE          (summary lines)
  rdmaspy decode -T json FILE  vs  tshark -r FILE -T ek    (every field)
  rdmaspy flows FILE           (analysis; when the flows command exists)
and prints packets per second, the ratios, and peak memory (RSS) of each.

rdmaspy is measured as ``pip install .`` installs it: the per-packet path compiled with mypyc
(built from the working tree into benchmarks/out/compiled by scripts/compiled_tree.py).
``--build pure`` measures the Python source instead, ``--build installed`` the rdmaspy on PATH.

    python3 benchmarks/decode_bench.py [--sizes 100000,1000000] [--repeat 1] [--skip-ek-above N]
                                       [--build compiled|pure|installed]
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

import traffic  # noqa: E402
from measure import Run, best_of  # noqa: E402


def capture_for(size: int, out: Path) -> Path:
    path = out / f"nfs_rocev2_{size}.pcap"
    if not path.exists():
        tmp = path.with_suffix(".tmp")
        print(f"building {path.name} ({size:,} frames) ...", flush=True)
        traffic.build(str(tmp), size)
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


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="100000,1000000")
    ap.add_argument("--repeat", type=int, default=1,
                    help="runs of each command (tshark -T ek: one); the fastest is reported")
    ap.add_argument("--skip-ek-above", type=int, default=10**9,
                    help="skip tshark -T ek for captures larger than this (it is slow)")
    ap.add_argument("--out", default=str(HERE / "out"))
    ap.add_argument("--build", choices=("compiled", "pure", "installed"), default="compiled",
                    help="which rdmaspy to measure (default: compiled, as pip install . builds it)")
    args = ap.parse_args()
    if not shutil.which("tshark"):
        print("tshark is needed: apt-get install -y tshark", file=sys.stderr)
        return 1
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    print("rdmaspy:", use_build(args.build, out), flush=True)
    sizes = [int(s) for s in args.sizes.split(",")]
    flows = has_command("flows")
    results: dict[int, dict[str, Run]] = {}
    for size in sizes:
        path = str(capture_for(size, out))
        print(f"\n{size:,} frames ({os.path.getsize(path) / 2**20:.0f} MiB)")
        res: dict[str, Run] = {}
        res["tshark -r"] = best_of(args.repeat, "tshark -r", ["tshark", "-n", "-r", path], size)
        print(row(res["tshark -r"]), flush=True)
        res["rdmaspy decode"] = best_of(args.repeat, "rdmaspy decode", rdmaspy_cmd("decode", path), size)
        print(row(res["rdmaspy decode"]), flush=True)
        if size <= args.skip_ek_above:
            # once: it is the slow one, and a minute or two per run at 1M frames
            res["tshark -T ek"] = best_of(1, "tshark -T ek", ["tshark", "-n", "-r", path, "-T", "ek"], size)
            print(row(res["tshark -T ek"]), flush=True)
        res["rdmaspy decode -T json"] = best_of(args.repeat, "rdmaspy decode -T json",
                                                rdmaspy_cmd("decode", "-T", "json", path), size)
        print(row(res["rdmaspy decode -T json"]), flush=True)
        if flows:
            res["rdmaspy flows"] = best_of(args.repeat, "rdmaspy flows",
                                           rdmaspy_cmd("flows", path, "-o", os.devnull), size)
            print(row(res["rdmaspy flows"]), flush=True)
        results[size] = res
        s = res["rdmaspy decode"].pps / res["tshark -r"].pps
        print(f"  summary: rdmaspy/tshark = {s:.2f}x (target >= 1.0)")
        if "tshark -T ek" in res:
            j = res["rdmaspy decode -T json"].pps / res["tshark -T ek"].pps
            print(f"  JSON:    rdmaspy/tshark ek = {j:.2f}x (target >= 3.0)")
    if len(sizes) > 1:
        small, large = results[sizes[0]], results[sizes[-1]]
        print(f"\npeak memory, {sizes[0]:,} -> {sizes[-1]:,} frames:")
        for key in small:
            if key in large:
                print(f"  {key:<28} {small[key].maxrss_mb:8.1f} -> {large[key].maxrss_mb:8.1f} MiB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
