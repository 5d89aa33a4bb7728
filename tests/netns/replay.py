"""Send the Ethernet frames of capture files out of an interface, in order, at a controlled rate.

Raw AF_PACKET send: the frames leave exactly as they are in the files.  Run it inside the
sending namespace (``ip netns exec rs-TAG-a python3 replay.py -i va-TAG ...``).  Prints the
number of frames sent.  For line-rate stress use the C sender of benchmarks/capture_bench.py.
"""
from __future__ import annotations

import argparse
import socket
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from rdmaspy.readers import open_capture  # noqa: E402


def frames(paths: list[str]) -> list[bytes]:
    out = []
    for p in paths:
        with open_capture(p) as cap:
            out.extend(bytes(f.data) for f in cap)
    return out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("-i", dest="iface", required=True)
    ap.add_argument("-r", dest="rate", type=float, default=10000.0, help="frames per second (0: as fast as possible)")
    ap.add_argument("-l", dest="loops", type=int, default=1, help="send the whole list this many times")
    ap.add_argument("--start-after", type=float, default=0.0, help="seconds to wait before the first frame")
    ap.add_argument("files", nargs="+")
    a = ap.parse_args()
    data = frames(a.files)
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, 0)
    s.bind((a.iface, 0))
    time.sleep(a.start_after)
    send = s.send
    gap = 1.0 / a.rate if a.rate > 0 else 0.0
    t0 = time.perf_counter()
    sent = 0
    for _ in range(a.loops):
        for fr in data:
            if gap:
                due = t0 + sent * gap
                now = time.perf_counter()
                if due > now:
                    if due - now > 0.002:
                        time.sleep(due - now - 0.001)
                    while time.perf_counter() < due:
                        pass
            while True:
                try:
                    send(fr)
                    break
                except BlockingIOError:      # the qdisc is full: wait, never skip a frame
                    time.sleep(0.0005)
            sent += 1
    print(sent, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
