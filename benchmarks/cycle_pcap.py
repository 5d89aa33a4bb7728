"""One capture cycled to FRAMES frames, written as pcap (what dpkt.pcap.Reader reads): the input of the
comparison in docs/dpkt.md.

    python3 benchmarks/cycle_pcap.py captures/rxe-ib_write_bw.pcap 100000 /tmp/write_bw-100k.pcap

Each copy is moved in time to start 1 ms after the previous one ends, so the timestamps keep rising.
"""
from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from rdmaspy.readers import open_capture  # noqa: E402
from rdmaspy.writers.pcap import PcapWriter  # noqa: E402


def build(source: Path, frames: int, out: Path) -> Path:
    with open_capture(str(source)) as cap:
        records = [(f.linktype, f.ts, f.data, f.wirelen) for f in cap]
    if not records or len({r[0] for r in records}) != 1:
        raise SystemExit(f"{source}: a pcap holds one link type; this capture has {len({r[0] for r in records})}")
    first, last = records[0][1], records[-1][1]
    shift, written = 0, 0
    with PcapWriter(str(out), records[0][0], nanosecond=False) as writer:
        while written < frames:
            for _linktype, ts, data, wirelen in records[:frames - written]:
                writer.write_packet(shift + ts, data, wirelen)
            written = min(frames, written + len(records))
            shift += last - first + 1_000_000
    return out


if __name__ == "__main__":
    if len(sys.argv) != 4:
        raise SystemExit(__doc__)
    print(build(Path(sys.argv[1]), int(sys.argv[2]), Path(sys.argv[3])))
