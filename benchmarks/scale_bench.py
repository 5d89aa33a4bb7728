#!/usr/bin/env python3
"""Parallel export: speed-up from 1 to N workers, time per frame against workers and file size, peak
memory per worker, beside tshark in the same run (not a timed test; figures in docs/performance.md).

    python3 benchmarks/scale_bench.py                          # 10k and 100k frames, 1 and 2 workers
    python3 benchmarks/scale_bench.py --frames 10000 1000000 10000000 --workers 1 2 4
    python3 benchmarks/scale_bench.py --engines               # Dask and Ray on the same shards (needs ray)
    python3 benchmarks/scale_bench.py --tree DIR              # the compiled build (scripts/compiled_tree.py DIR)

Two workloads, built with the encoders (benchmarks/traffic.py): ``many-hosts``, 64 clients of one
server each with its own NFSv3 connection (RPC-over-RDMA v1: inline calls, READ by RDMA WRITE, WRITE by
RDMA READ), interleaved in time; ``one-connection``, the same traffic on one connection.  Each
``rdmaspy export --workers N`` runs as its own process on a local Dask cluster of N worker processes;
its wall time includes starting the cluster, the first read that deals host pairs to shards and the
renumbering.  Peak memory per worker is the largest ru_maxrss a shard task reports.  On a shared machine
the wall time measures the other load as much as the export: the CPU time of the biggest shard (the
critical path when each shard has a core) against the CPU time of one process is the speed-up the
split allows, whatever the load.
"""
from __future__ import annotations

import argparse
import heapq
import itertools
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Iterator

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import traffic  # noqa: E402

from rdmaspy.craft import write_pcap  # noqa: E402

HOSTS = 64


def many_hosts(frames: int) -> Iterator[tuple[int, bytes]]:
    streams = [traffic.transactions(seed=i + 1, client=f"10.1.{i // 200}.{i % 200 + 2}", server=traffic.SERVER,
                                    server_qp=0x100 + i) for i in range(HOSTS)]
    shifted = [((ts + i * 250, data) for ts, data in s) for i, s in enumerate(streams)]
    return itertools.islice(heapq.merge(*shifted, key=lambda f: f[0]), frames)


def one_connection(frames: int) -> Iterator[tuple[int, bytes]]:
    return itertools.islice(traffic.transactions(seed=1), frames)


WORKLOADS = {"many-hosts": many_hosts, "one-connection": one_connection}


def build(directory: Path, workload: str, frames: int) -> Path:
    path = directory / f"{workload}-{frames}.pcap"
    if not path.exists():
        write_pcap(str(path), WORKLOADS[workload](frames))
    return path


_EXPORT = r"""
import json, resource, sys, time
sys.path.insert(0, sys.argv[1])
from rdmaspy.commands import export
paths, out, workers = [sys.argv[2]], sys.argv[3], int(sys.argv[4])
t = time.perf_counter()
if workers == 1:
    u = resource.getrusage(resource.RUSAGE_SELF)
    rows, frames, _p = export.export_single(paths, out)
    v = resource.getrusage(resource.RUSAGE_SELF)
    peak, shards, cpu = v.ru_maxrss, 1, v.ru_utime + v.ru_stime - u.ru_utime - u.ru_stime
else:
    from rdmaspy.scale.parallel import export_parallel
    r = export_parallel(paths, out, workers, None)
    tasks = [*r.shards, *r.slices]
    frames, peak, shards = r.frames, max(s.peak_rss_kib for s in tasks), r.workers
    cpu = max(s.cpu_s for s in r.shards)
    slices, total = len([s for s in r.slices if s.rows]), sum(s.cpu_s for s in tasks)
print(json.dumps({"wall": time.perf_counter() - t, "frames": frames, "peak_kib": peak, "shards": shards,
                  "cpu": cpu, "slices": slices if workers > 1 else 0, "total_cpu": total if workers > 1 else cpu}))
"""


def export_run(path: Path, workers: int, tree: Path = ROOT) -> dict:
    """One export in its own process, with the rdmaspy of ``tree`` (its workers too: a spawned process
    starts from its parent's module path)."""
    out = tempfile.mkdtemp(prefix="scale-bench-")
    try:
        # -P: the current directory must not come before the tree measured
        res = subprocess.run([sys.executable, "-P", "-c", _EXPORT, str(tree), str(path), out, str(workers)],
                             capture_output=True, text=True, check=True)
        return json.loads(res.stdout.strip().splitlines()[-1])
    finally:
        shutil.rmtree(out, ignore_errors=True)


def tshark_run(path: Path) -> float | None:
    exe = shutil.which("tshark")
    if exe is None:
        return None
    t = time.perf_counter()
    subprocess.run([exe, "-n", "-r", str(path), "-T", "fields", "-e", "frame.number", "-e", "infiniband.bth.psn"],
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    return time.perf_counter() - t


def engines(path: Path, workers: int) -> None:
    """The shard tasks of one export on Dask and on Ray: start-up, tasks, total, memory of the cluster."""
    from rdmaspy.scale import parallel
    plan = parallel.make_plan([str(path)], workers)
    print(f"engines on {path.name}: {plan.frames} frames, {plan.shards} shards")
    for name in ("dask", "ray"):
        out = tempfile.mkdtemp(prefix="scale-engine-")
        try:
            t0 = time.perf_counter()
            if name == "dask":
                from distributed import Client, LocalCluster
                cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                                       dashboard_address=None, memory_limit=0)
                client = Client(cluster)
                t1 = time.perf_counter()
                futures = [client.submit(parallel.run_shard, [str(path)], s, plan.assignment, out, pure=False)
                           for s in range(plan.shards)]
                results = client.gather(futures)
                t2 = time.perf_counter()
                client.close()
                cluster.close()
            else:
                import ray
                ray.init(num_cpus=workers, include_dashboard=False, logging_level="ERROR", log_to_driver=False)
                task = ray.remote(parallel.run_shard)
                t1 = time.perf_counter()
                results = ray.get([task.remote([str(path)], s, plan.assignment, out) for s in range(plan.shards)])
                t2 = time.perf_counter()
                ray.shutdown()
            t3 = time.perf_counter()
            peak = max(r.peak_rss_kib for r in results) / 1024
            print(f"  {name:5} start {t1 - t0:6.2f} s  tasks {t2 - t1:6.2f} s  stop {t3 - t2:5.2f} s  "
                  f"total {t3 - t0:6.2f} s  ({(t2 - t1) / plan.frames * 1e6:.2f} us/frame in tasks)  "
                  f"peak per worker {peak:.0f} MiB")
        finally:
            shutil.rmtree(out, ignore_errors=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--frames", type=int, nargs="+", default=[10_000, 100_000])
    ap.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--workloads", nargs="+", default=list(WORKLOADS), choices=list(WORKLOADS))
    ap.add_argument("--engines", action="store_true", help="compare Dask and Ray on the shards of many-hosts")
    ap.add_argument("--dir", help="where the captures are built (kept between runs)")
    ap.add_argument("--tree", type=Path, default=ROOT,
                    help="the rdmaspy measured: this checkout (pure Python) by default, or a compiled tree made "
                         "by scripts/compiled_tree.py DIR (what pip install . builds)")
    args = ap.parse_args()
    directory = Path(args.dir or tempfile.mkdtemp(prefix="scale-bench-captures-"))
    directory.mkdir(parents=True, exist_ok=True)
    print(f"{os.cpu_count()} cores; captures in {directory}; rdmaspy from {args.tree}")
    if args.engines:
        engines(build(directory, "many-hosts", max(args.frames)), max(args.workers))
        return
    print("| workload | frames | workers | shards | slices | wall s | us/frame | speed-up | CPU s of the biggest shard "
          "| CPU speed-up | CPU s of all tasks | peak MiB/worker | tshark -T fields s |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for workload in args.workloads:
        for frames in args.frames:
            path = build(directory, workload, frames)
            ts = tshark_run(path)
            base = base_cpu = None
            for w in args.workers:
                r = export_run(path, w, args.tree)
                base = base or r["wall"]
                base_cpu = base_cpu or r["cpu"]
                print(f"| {workload} | {frames:,} | {w} | {r['shards']} | {r['slices']} | {r['wall']:.2f} | "
                      f"{r['wall'] / frames * 1e6:.1f} | {base / r['wall']:.2f} | {r['cpu']:.2f} | "
                      f"{base_cpu / r['cpu']:.2f} | {r['total_cpu']:.2f} | {r['peak_kib'] / 1024:.0f} | "
                      f"{'-' if ts is None else f'{ts:.2f}'} |", flush=True)


if __name__ == "__main__":
    main()
