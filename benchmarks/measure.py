"""Running a command and measuring it: wall time, CPU time, peak memory of the process tree.

Each command runs under a small Python wrapper process so that RUSAGE_CHILDREN of that
wrapper belongs to that command alone (ru_maxrss is the largest child's peak RSS).
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass

_WRAPPER = r"""
import json, resource, subprocess, sys, time
t = time.perf_counter()
with open(sys.argv[1], "wb") as out:
    rc = subprocess.run(sys.argv[2:], stdout=out, stderr=subprocess.DEVNULL).returncode
wall = time.perf_counter() - t
ru = resource.getrusage(resource.RUSAGE_CHILDREN)
print(json.dumps({"rc": rc, "wall": wall, "cpu": ru.ru_utime + ru.ru_stime, "maxrss_kb": ru.ru_maxrss}))
"""


@dataclass
class Run:
    label: str
    frames: int
    wall: float
    cpu: float
    maxrss_mb: float
    rc: int

    @property
    def pps(self) -> float:
        return self.frames / self.wall if self.wall > 0 else 0.0


def run(label: str, cmd: list[str], frames: int, output: str = os.devnull) -> Run:
    res = subprocess.run([sys.executable, "-c", _WRAPPER, output, *cmd], capture_output=True, text=True,
                         check=True)
    r = json.loads(res.stdout.strip().splitlines()[-1])
    if r["rc"] not in (0,):
        raise SystemExit(f"{label}: {' '.join(cmd)} exited with {r['rc']}")
    return Run(label, frames, r["wall"], r["cpu"], r["maxrss_kb"] / 1024, r["rc"])


def best_of(n: int, label: str, cmd: list[str], frames: int, output: str = os.devnull) -> Run:
    """The fastest of n runs (the machine is shared; the minimum is the least disturbed)."""
    runs = [run(label, cmd, frames, output) for _ in range(n)]
    return min(runs, key=lambda r: r.wall)
