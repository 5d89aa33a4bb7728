"""The real-traffic workload: the SoftRoCE and soft-iWARP captures shipped in captures/, cycled (or any
captures given, each alone for the per-kind table of decode_bench.py).

Each copy of each capture is shifted in time to start just after the previous one ends, so the
timestamps rise as in one long capture; link types keep their own pcapng interface.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from rdmaspy.readers import open_capture  # noqa: E402
from rdmaspy.writers.pcapng import PcapngWriter  # noqa: E402

Record = tuple[int, int, bytes, int]      # link type, timestamp (ns), data, length on the wire


def real_captures() -> list[Path]:
    """The captures made on real stacks (SoftRoCE rxe-*, soft-iWARP siw-*)."""
    return sorted(p for p in (ROOT / "captures").glob("*.pcap*") if p.name.startswith(("rxe-", "siw-")))


def _records(path: Path) -> list[Record]:
    with open_capture(str(path)) as cap:
        return [(f.linktype, f.ts, f.data, f.wirelen) for f in cap]


def build(out: Path, frames: int, captures: list[Path] | None = None) -> Path:
    """Write ``frames`` frames of ``captures`` (default: the real captures), cycled, to ``out`` (pcapng)."""
    sources = [r for r in (_records(p) for p in (real_captures() if captures is None else captures)) if r]
    written = 0
    shift = sources[0][0][1]                          # the first capture's own start
    with PcapngWriter(str(out)) as writer:
        ifaces: dict[int, int] = {}
        while written < frames:
            for records in sources:
                first = last = records[0][1]
                for linktype, ts, data, wirelen in records:
                    idx = ifaces.get(linktype)
                    if idx is None:
                        idx = ifaces[linktype] = writer.add_interface(linktype, tsresol=9)
                    writer.write_packet(idx, shift + ts - first, data, wirelen)
                    last = ts
                    written += 1
                    if written == frames:
                        return out
                shift += last - first + 1_000_000     # the next copy starts 1 ms after this one ends
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description="Write FRAMES frames of the real captures, cycled, to OUT (pcapng).")
    ap.add_argument("out", type=Path, help="the pcapng file to write")
    ap.add_argument("frames", type=int, help="how many frames")
    ap.add_argument("captures", type=Path, nargs="*", default=[], help="the captures to cycle (default: captures/rxe-*, siw-*)")
    args = ap.parse_args()
    if args.frames < 1:
        ap.error("FRAMES must be at least 1")
    missing = [str(p) for p in args.captures if not p.is_file()]
    if missing:
        ap.error(f"no such capture: {', '.join(missing)}")
    print(build(args.out, args.frames, args.captures or None))


if __name__ == "__main__":
    main()
