#!/usr/bin/env python3
"""TUI benchmark: opening a large capture in ``rdmaspy tui``, beside termshark's approach, in one run.

Builds (once, cached in benchmarks/out/) captures of 100k and 1M frames by cycling the Ethernet
captures shipped in captures/ of a kind (timestamps moved on so that time only grows), written with the
project's pcap writer: ``mix`` the plain pcaps (RoCE and iWARP, NFS and perftest: the figures docs/tui.md
keeps), ``nvme`` the NVMe/RDMA ones (compressed, over RoCE and iWARP), so that the transactions, segments
and queue depths of NVMe are measured too.  Then, for each kind at each size:

- rdmaspy tui (the app, headless, 160x50, in a fresh process): time to the first screen (the packet
  list has a screen of rows and has drawn them), time to the whole file indexed with every view
  complete (the rows, their colours and the analysis: transactions, credits, expert...), time to show
  the last row after ``G``, time to show a far frame's detail tree (the last frame's, then a jump back to
  the frame 50,000 before it), time to apply a display filter over the whole file (``--filter``), peak
  memory (RSS) of the app's process and of its helper processes;
- termshark's approach, tshark's PSML of the whole file (``tshark -r FILE -T psml``, what termshark
  reads before it shows its list): time to its first 64 KiB of PSML (about its first screen), time to
  the end, peak memory; and ``tshark -r FILE -Y FILTER`` (``--tshark-filter``), what a filter costs it.

Not a timed test: figures depend on the machine.  docs/tui.md keeps the last ones.

    python3 benchmarks/tui_bench.py [--sizes 100000,1000000] [--kinds mix,nvme] [--tree DIR] [--tshark-up-to N]
                                    [--repeat N]
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent

LINKTYPE_ETHERNET = 1
FAR_JUMP = 50_000          # frames back from the last one for the far jump
FILTER = "bth.opcode == 12"                     # RDMA READ requests ...
TSHARK_FILTER = "infiniband.bth.opcode == 12"   # ... as Wireshark names the field
# The kinds of traffic cycled: the shipped captures each takes, by their names' patterns.
KINDS: dict[str, tuple[str, ...]] = {
    "mix": ("*.pcap",),                             # every plain pcap: NFS, perftest, CM, RoCE and iWARP
    "nvme": ("*nvme*.pcap", "*nvme*.pcap.gz"),      # NVMe/RDMA over RoCE and iWARP
}


def sources_of(kind: str) -> list[Path]:
    return sorted({p for pattern in KINDS[kind] for p in (ROOT / "captures").glob(pattern)})


def cycled_capture(size: int, out: Path, kind: str = "mix") -> Path:
    """``size`` frames cycling the shipped Ethernet captures of ``kind``, as a pcap (built once)."""
    from rdmaspy.readers import open_capture
    from rdmaspy.writers import PcapWriter

    sources = sources_of(kind)
    digest = hashlib.sha256(b"".join(p.name.encode() + p.read_bytes() for p in sources)).hexdigest()[:12]
    # the mix keeps the name it had before there were kinds (its cached builds stay good)
    path = out / (f"tui_cycled_{digest}_{size}.pcap" if kind == "mix" else f"tui_cycled_{kind}_{digest}_{size}.pcap")
    if path.exists():
        return path
    frames: list[tuple[int, bytes, int]] = []
    for cap_path in sources:
        with open_capture(str(cap_path)) as cap:
            for f in cap:
                if f.linktype == LINKTYPE_ETHERNET:
                    frames.append((f.ts, bytes(f.data), f.wirelen))
    print(f"building {path.name} ({size:,} frames from {len(frames):,} shipped ones) ...", flush=True)
    tmp = path.with_suffix(".tmp")
    base = 1_700_000_000_000_000_000
    with PcapWriter(str(tmp), LINKTYPE_ETHERNET, nanosecond=True) as w:
        n = 0
        while n < size:
            first = frames[0][0]
            for ts, data, wirelen in frames:
                w.write_packet(base + (ts - first) % 1_000_000_000 + n * 1000, data, wirelen)
                n += 1
                if n == size:
                    break
    tmp.rename(path)
    return path


# -- the TUI side, run in a fresh process (--child) ------------------------------------------------
def child(path: str, expr: str) -> None:
    import asyncio

    from rdmaspy.tui.app import RdmaspyApp
    from rdmaspy.tui.model import CaptureModel
    from rdmaspy.tui.packet_list import PacketList

    # The moments the list really draws a row, and its last row: measured in render_line itself.
    drawn: dict[str, float] = {}
    render_line = PacketList.render_line

    def timed(self: PacketList, y: int):
        strip = render_line(self, y)
        pos = round(self.scroll_y) + y
        if 0 <= pos < self.rows:
            drawn.setdefault("first", time.perf_counter())
            if pos == self.rows - 1 and self.index.done:
                drawn.setdefault("last", time.perf_counter())
        return strip

    PacketList.render_line = timed          # type: ignore[method-assign]

    async def go() -> dict[str, float]:
        t0 = time.perf_counter()
        app = RdmaspyApp(CaptureModel(path))
        out: dict[str, float] = {}
        async with app.run_test(size=(160, 50)) as pilot:
            while "first" not in drawn:
                await asyncio.sleep(0.002)
            out["first_screen_s"] = drawn["first"] - t0
            out["rss_first_screen_mib"] = _rss_now_mib()
            index = app.model.index
            while not index.done:
                await asyncio.sleep(0.02)
            out["index_s"] = time.perf_counter() - t0
            out["index_cpu_s"] = _cpu(resource.RUSAGE_SELF) + _cpu(resource.RUSAGE_CHILDREN)   # the rows' helper too
            out["rows_s"] = (index.rows_at or 0.0) - index.started
            out["analysis_s"] = (index.analysed_at or 0.0) - index.started
            await asyncio.sleep(0.3)
            t = time.perf_counter()
            await pilot.press("G")
            while "last" not in drawn:
                await asyncio.sleep(0.001)
            out["to_last_row_s"] = drawn["last"] - t
            out["rows"] = float(app.packet_list.rows)
            out["rss_indexed_mib"] = _rss_now_mib()
            last = int(out["rows"])
            out["detail_last_s"] = await _detail_time(app, last)
            out["far_jump_back_s"] = await _detail_time(app, max(last - FAR_JUMP, 1))
            t = time.perf_counter()
            cpu = _cpu(resource.RUSAGE_SELF) + _cpu(resource.RUSAGE_CHILDREN)
            app.apply_filter(expr)
            run = app.filter_run
            while run is not None and not run.done:
                await asyncio.sleep(0.01)
            out["filter_s"] = time.perf_counter() - t
            out["filter_cpu_s"] = _cpu(resource.RUSAGE_SELF) + _cpu(resource.RUSAGE_CHILDREN) - cpu
            out["filter_rows"] = float(len(run.rows)) if run is not None else 0.0
            if run is not None and run.error:
                raise SystemExit(f"the filter failed: {run.error}")
        out["peak_rss_mib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        # the helpers' own (getrusage's would count the app's memory they were forked from)
        out["helpers_peak_rss_mib"] = max(app.model.index.helper_peak_mib,
                                          run.helper_peak_mib if run is not None else 0.0)
        return out

    print(json.dumps(asyncio.run(go())))


async def _detail_time(app, frame: int) -> float:
    """Seconds from selecting ``frame`` to its tree on the screen."""
    import asyncio

    from rdmaspy.tui.detail_tree import DetailTree

    t = time.perf_counter()
    app.show_frame(frame)
    tree = app.query_one(DetailTree)
    while tree.detail is None or tree.detail.frame != frame:
        await asyncio.sleep(0.005)
    return time.perf_counter() - t


def _cpu(who: int) -> float:
    ru = resource.getrusage(who)
    return ru.ru_utime + ru.ru_stime


def _rss_now_mib() -> float:
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def measure_tui(path: Path, tree: Path, expr: str) -> dict[str, float]:
    # -P: the current directory must not come before the tree measured
    res = subprocess.run([sys.executable, "-P", str(Path(__file__).resolve()), "--child", str(path), expr],
                         capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(tree)})
    if res.returncode != 0:
        raise SystemExit(f"the TUI run failed:\n{res.stderr[-3000:]}")
    return json.loads(res.stdout.strip().splitlines()[-1])


# -- termshark's approach: tshark's PSML of the whole file ----------------------------------------
_PSML = r"""
import json, os, resource, subprocess, sys, time
t = time.perf_counter()
p = subprocess.Popen(sys.argv[1:], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
got = 0
first = None
while True:
    chunk = p.stdout.read1(1 << 16)
    if not chunk:
        break
    got += len(chunk)
    if first is None and got >= 1 << 16:
        first = time.perf_counter() - t
p.wait()
total = time.perf_counter() - t
ru = resource.getrusage(resource.RUSAGE_CHILDREN)
print(json.dumps({"first_screen_s": first if first is not None else total, "index_s": total,
                  "index_cpu_s": ru.ru_utime + ru.ru_stime,
                  "peak_rss_mib": ru.ru_maxrss / 1024, "bytes": got, "rc": p.returncode}))
"""


def measure_psml(path: Path) -> dict[str, float] | None:
    tshark = shutil.which("tshark")
    if tshark is None:
        return None
    res = subprocess.run([sys.executable, "-c", _PSML, tshark, "-n", "-r", str(path), "-T", "psml"],
                         capture_output=True, text=True)
    return json.loads(res.stdout.strip().splitlines()[-1])


def measure_tshark_filter(path: Path, expr: str) -> tuple[float, float, int]:
    """Seconds ``tshark -r FILE -Y EXPR`` takes (wall, CPU), and the lines it prints."""
    cpu = _cpu(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    res = subprocess.run(["tshark", "-n", "-r", str(path), "-Y", expr], capture_output=True)
    return time.perf_counter() - t, _cpu(resource.RUSAGE_CHILDREN) - cpu, res.stdout.count(b"\n")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="100000,1000000", help="frame counts, comma-separated")
    ap.add_argument("--kinds", default=",".join(KINDS),
                    help=f"the kinds of traffic cycled, comma-separated: {', '.join(KINDS)} (default: all)")
    ap.add_argument("--tree", type=Path, default=ROOT,
                    help="the rdmaspy to measure: a checkout (default: this one, pure Python) or a compiled "
                         "tree made by scripts/compiled_tree.py DIR (what pip install . builds)")
    ap.add_argument("--filter", default=FILTER, help=f"the display filter applied (default: {FILTER})")
    ap.add_argument("--tshark-filter", default=TSHARK_FILTER,
                    help=f"the same filter as Wireshark writes it (default: {TSHARK_FILTER})")
    ap.add_argument("--tshark-up-to", type=int, default=10**9,
                    help="run tshark only on captures up to this many frames (its PSML of 10M frames needs "
                         "some 7 GiB of memory)")
    ap.add_argument("--repeat", type=int, default=1,
                    help="runs of each side, by turns (rdmaspy, tshark, rdmaspy...): the fastest of each figure")
    ap.add_argument("--child", nargs=2, metavar=("FILE", "FILTER"), help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        child(*a.child)          # the rdmaspy of PYTHONPATH (--tree)
        return 0
    sys.path.insert(0, str(ROOT))
    out = HERE / "out"
    out.mkdir(exist_ok=True)
    print("size        what                          first screen  whole file, every view   last row (G)   "
          "last tree / far jump back   filter      peak RSS")
    kinds = [k for k in a.kinds.split(",") if k]
    unknown = [k for k in kinds if k not in KINDS]
    if unknown:
        ap.error(f"unknown kind {unknown[0]!r}: {', '.join(KINDS)}")
    for kind, size in ((k, int(s)) for k in kinds for s in a.sizes.split(",")):
        path = cycled_capture(size, out, kind)
        mb = path.stat().st_size / 1e6
        runs: list[dict[str, float]] = []
        psmls: list[dict[str, float]] = []
        filters: list[tuple[float, float, int]] = []
        with_tshark = size <= a.tshark_up_to and shutil.which("tshark") is not None
        for _ in range(a.repeat):
            runs.append(measure_tui(path, a.tree, a.filter))
            if with_tshark:
                psml = measure_psml(path)
                assert psml is not None
                psmls.append(psml)
                filters.append(measure_tshark_filter(path, a.tshark_filter))
        tui = {k: min(r[k] for r in runs) for k in runs[0]}       # each figure's best
        tui["peak_rss_mib"] = max(r["peak_rss_mib"] for r in runs)
        tui["helpers_peak_rss_mib"] = max(r["helpers_peak_rss_mib"] for r in runs)
        print(f"{size:>9,}  rdmaspy tui, {kind} ({mb:,.0f} MB)".ljust(44) +
              f"{tui['first_screen_s']:9.2f} s {tui['index_s']:14.2f} s {tui['to_last_row_s']:18.3f} s "
              f"{tui['detail_last_s']:9.2f} s / {tui['far_jump_back_s']:6.2f} s {tui['filter_s']:11.2f} s "
              f"{tui['peak_rss_mib']:8.1f} MiB (RSS at first screen {tui['rss_first_screen_mib']:.1f}, "
              f"indexed {tui['rss_indexed_mib']:.1f}; helpers' peak {tui['helpers_peak_rss_mib']:.1f}; "
              f"{tui['filter_rows']:,.0f} rows displayed; rows {tui['rows_s']:.2f} s, analysis "
              f"{tui['analysis_s']:.2f} s; CPU: whole file {tui['index_cpu_s']:.2f} s, filter "
              f"{tui['filter_cpu_s']:.2f} s)", flush=True)
        if not with_tshark:
            print(f"{size:>9,}  tshark, {kind}: not run")
            continue
        psml = min(psmls, key=lambda r: r["index_s"])
        filter_s, filter_cpu, filter_rows = min(filters)
        print(f"{size:>9,}  tshark -T psml / -Y, {kind}".ljust(44) +
              f"{psml['first_screen_s']:9.2f} s {psml['index_s']:14.2f} s {'':>20} {'':>28}"
              f"{filter_s:11.2f} s {psml['peak_rss_mib']:8.1f} MiB ({filter_rows:,} rows displayed; CPU: PSML "
              f"{psml['index_cpu_s']:.2f} s, filter {filter_cpu:.2f} s)", flush=True)
        print(f"{size:>9,}  rdmaspy / tshark, {kind}: whole file {psml['index_s'] / tui['index_s']:.2f}x "
              f"(CPU {psml['index_cpu_s'] / tui['index_cpu_s']:.2f}x), filter {filter_s / tui['filter_s']:.2f}x "
              f"(CPU {filter_cpu / tui['filter_cpu_s']:.2f}x) (above 1: rdmaspy takes less time)", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
