"""A large capture made of the shipped real captures, cycled: the memory and streaming tests' input.

    python3 tests/cycled.py OUT.pcapng FRAMES

The SoftRoCE and soft-iWARP captures in captures/ are copied one after another, again and again,
until FRAMES frames are written (pcapng, one interface per link type); each copy is moved in time
to start just after the previous one ends, so the timestamps keep rising as a real capture's do.
"""
from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from rdmaspy.readers import open_capture  # noqa: E402
from rdmaspy.writers.pcapng import PcapngWriter  # noqa: E402


def real_captures() -> list[Path]:
    """The captures made on real stacks (SoftRoCE rxe-*, soft-iWARP siw-*)."""
    return sorted(p for p in (ROOT / "captures").glob("*.pcap*") if p.name.startswith(("rxe-", "siw-")))


def build(out: Path, frames: int) -> Path:
    """Write ``frames`` frames of the real captures, cycled, to ``out``."""
    sources = []
    for p in real_captures():
        with open_capture(str(p)) as cap:
            sources.append([(f.linktype, f.ts, f.data, f.wirelen) for f in cap])
    written = 0
    shift = 0
    with PcapngWriter(str(out)) as w:
        ifaces: dict[int, int] = {}
        while written < frames:
            for frames_of_one in sources:
                first = frames_of_one[0][1]
                last = first
                for linktype, ts, data, wirelen in frames_of_one:
                    idx = ifaces.get(linktype)
                    if idx is None:
                        idx = ifaces[linktype] = w.add_interface(linktype, tsresol=9)
                    last = ts
                    w.write_packet(idx, shift + ts - first, data, wirelen)
                    written += 1
                    if written == frames:
                        return out
                shift += last - first + 1_000_000        # the next copy starts 1 ms after this one
    return out


if __name__ == "__main__":
    print(build(Path(sys.argv[1]), int(sys.argv[2])))
