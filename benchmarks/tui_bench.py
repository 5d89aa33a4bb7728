#!/usr/bin/env python3
"""TUI benchmark: opening a large capture in ``rdmaspy tui``, beside termshark's approach, in one run.

Builds (once, cached in benchmarks/out/) captures of 100k and 1M frames by cycling the Ethernet
captures shipped in captures/ (timestamps moved on so that time only grows), written with the
project's pcap writer.  Then, at each size:

- rdmaspy tui (the app, headless, 160x50, in a fresh process): time to the first screen (the packet
  list has a screen of rows and has drawn them), time to index the whole file, time to show the last
  row after ``G``, time to show a far frame's detail tree (the last frame's, then a jump back to the
  frame 50,000 before it), peak memory (RSS) of the process;
- termshark's approach, tshark's PSML of the whole file (``tshark -r FILE -T psml``, what termshark
  reads before it shows its list): time to its first 64 KiB of PSML (about its first screen), time to
  the end, peak memory.

Not a timed test: figures depend on the machine.  docs/tui.md keeps the last ones.

    python3 benchmarks/tui_bench.py [--sizes 100000,1000000] [--tree DIR]
"""
from __future__ import annotations

import argparse
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


def cycled_capture(size: int, out: Path) -> Path:
    """``size`` frames cycling the shipped Ethernet captures, as a pcap (built once)."""
    from rdmaspy.readers import open_capture
    from rdmaspy.writers import PcapWriter

    path = out / f"tui_cycled_{size}.pcap"
    if path.exists():
        return path
    frames: list[tuple[int, bytes, int]] = []
    for cap_path in sorted((ROOT / "captures").glob("*.pcap")):
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
def child(path: str) -> None:
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
            while not app.model.index.done:
                await asyncio.sleep(0.02)
            out["index_s"] = time.perf_counter() - t0
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
        out["peak_rss_mib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
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


def _rss_now_mib() -> float:
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def measure_tui(path: Path, tree: Path) -> dict[str, float]:
    # -P: the current directory must not come before the tree measured
    res = subprocess.run([sys.executable, "-P", str(Path(__file__).resolve()), "--child", str(path)],
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
                  "peak_rss_mib": ru.ru_maxrss / 1024, "bytes": got, "rc": p.returncode}))
"""


def measure_psml(path: Path) -> dict[str, float] | None:
    tshark = shutil.which("tshark")
    if tshark is None:
        return None
    res = subprocess.run([sys.executable, "-c", _PSML, tshark, "-n", "-r", str(path), "-T", "psml"],
                         capture_output=True, text=True)
    return json.loads(res.stdout.strip().splitlines()[-1])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="100000,1000000", help="frame counts, comma-separated")
    ap.add_argument("--tree", type=Path, default=ROOT,
                    help="the rdmaspy to measure: a checkout (default: this one, pure Python) or a compiled "
                         "tree made by scripts/compiled_tree.py DIR (what pip install . builds)")
    ap.add_argument("--child", metavar="FILE", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        child(a.child)          # the rdmaspy of PYTHONPATH (--tree)
        return 0
    sys.path.insert(0, str(ROOT))
    out = HERE / "out"
    out.mkdir(exist_ok=True)
    print("size        what                          first screen    whole file   last row (G)   "
          "last tree / far jump back   peak RSS")
    for size in (int(s) for s in a.sizes.split(",")):
        path = cycled_capture(size, out)
        mb = path.stat().st_size / 1e6
        tui = measure_tui(path, a.tree)
        print(f"{size:>9,}  rdmaspy tui ({mb:,.0f} MB)".ljust(44) +
              f"{tui['first_screen_s']:9.2f} s {tui['index_s']:11.2f} s {tui['to_last_row_s']:12.3f} s "
              f"{tui['detail_last_s']:9.2f} s / {tui['far_jump_back_s']:6.2f} s      "
              f"{tui['peak_rss_mib']:8.1f} MiB (RSS at first screen {tui['rss_first_screen_mib']:.1f}, "
              f"indexed {tui['rss_indexed_mib']:.1f})", flush=True)
        psml = measure_psml(path)
        if psml is None:
            print(f"{size:>9,}  tshark -T psml: tshark is not installed")
        else:
            print(f"{size:>9,}  tshark -T psml (termshark)".ljust(44) +
                  f"{psml['first_screen_s']:9.2f} s {psml['index_s']:11.2f} s {'':>14} {'':>28}"
                  f"{psml['peak_rss_mib']:8.1f} MiB", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
