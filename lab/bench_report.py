#!/usr/bin/env python3
"""Summarise `lab/run bench`: the generator's native hot path beside a pure-pyverbs loop and perftest.

    python3 lab/bench_report.py [RESULTS_DIR]     the lab's results (default: the lab cache's out/bench)
    python3 lab/bench_report.py --host [DEVICE]   on a machine with a real RDMA device: wall-clock rate and
                                                  latency percentiles of rdmaspy and perftest, run here

Lab mode prints user-space instructions per operation (callgrind) and system calls per operation
(strace -c) of requester and responder: under qemu TCG wall-clock figures measure the emulated
kernel, not our code. Host mode needs /sys/class/infiniband to list a device and says so if not.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

KINDS = (("send", "Send/Recv", "ib_send_lat"), ("write", "RDMA WRITE x16", "ib_write_bw -t 16"),
         ("read", "RDMA READ", "ib_read_lat"))
SIDES = ("client", "server")


@dataclass(slots=True)
class PerOp:
    """Per operation of one side: instructions, CQ polls, instructions outside CQ polling, system calls
    (None where not measured)."""
    instructions: float | None
    polls: float | None = None
    outside: float | None = None
    syscalls: float | None = None


@dataclass(slots=True)
class Count:
    """One callgrind run: all instructions, and the CQ polls with the instructions they took."""
    total: int
    polls: int = 0
    poll_ir: int = 0


_NAMED = re.compile(r"\((\d+)\)(?: (.*))?")


def _calls(lines: list[str]) -> list[tuple[str, str, str, str, int, int]]:
    """The call edges of a callgrind file: (caller ob, caller fn, callee ob, callee fn, calls, inclusive Ir)."""
    names: dict[tuple[str, str], str] = {}

    def name(kind: str, text: str) -> str:
        m = _NAMED.fullmatch(text.strip())
        if not m:
            return text.strip()
        if m.group(2):
            names[(kind, m.group(1))] = m.group(2)
        return names.get((kind, m.group(1)), m.group(1))

    edges = []
    ob = fn = ""
    cob = cfn = None
    calls = None
    for line in lines:
        key, _, val = line.partition("=")
        if key == "ob":
            ob = name("ob", val)
        elif key == "fn":
            fn = name("fn", val)
        elif key == "cob":
            cob = name("ob", val)
        elif key == "cfn":
            cfn = name("fn", val)
        elif key == "calls":
            calls = int(val.split()[0])
        elif calls is not None and line[:1] in "0123456789+-*":
            edges.append((ob, fn, cob if cob is not None else ob, cfn or "", calls, int(line.split()[-1])))
            cob = cfn = calls = None
    return edges


def callgrind_count(path: Path) -> Count | None:
    """All instructions of a callgrind file, and those of its CQ polls: the calls into the provider's
    busiest function (rxe's poll_cq), taken where the benchmark's own code calls them: for the
    pyverbs loop, at the Python interpreter's call into pyverbs (Cython's wrapper included)."""
    if not path.exists():
        return None
    lines = path.read_text(errors="replace").splitlines()
    total = next((int(x.split()[1]) for x in lines if x.startswith("totals:")), None)
    if total is None:
        total = next((int(x.split()[1]) for x in lines if x.startswith("summary:")), None)
    if total is None:
        return None
    edges = _calls(lines)
    into_provider: dict[tuple[str, str], int] = {}
    for _ob, _fn, cob, cfn, n, _ir in edges:
        if "librxe" in cob or "libmlx" in cob:
            into_provider[(cob, cfn)] = into_provider.get((cob, cfn), 0) + n
    if not into_provider:
        return Count(total)
    top = {max(into_provider, key=into_provider.__getitem__)}
    # Climb out of pyverbs: its Cython functions are part of the poll as the Python loop sees it.
    for _ in range(4):
        up = {(ob, fn) for ob, fn, cob, cfn, _n, _ir in edges if (cob, cfn) in top and "pyverbs" in ob}
        if not up:
            break
        top = up
    polls = poll_ir = 0
    for ob, _fn, cob, cfn, n, ir in edges:
        if (cob, cfn) in top and ob != cob:
            polls += n
            poll_ir += ir
    return Count(total, polls, poll_ir)


def callgrind_total(path: Path) -> int | None:
    """The instruction count of a callgrind output file."""
    c = callgrind_count(path)
    return None if c is None else c.total


def strace_calls(path: Path) -> int | None:
    """The total system calls of an `strace -c` summary."""
    if not path.exists():
        return None
    for line in path.read_text(errors="replace").splitlines():
        cols = line.split()
        if cols and cols[-1] == "total" and len(cols) >= 5:
            return int(cols[3])
    return None


def strace_by_name(path: Path) -> dict[str, int]:
    """The calls of each system call of an `strace -c` summary ({} if the file is missing)."""
    counts: dict[str, int] = {}
    if not path.exists():
        return counts
    for line in path.read_text(errors="replace").splitlines():
        cols = line.split()
        # % time, seconds, usecs/call, calls, [errors,] name
        if len(cols) in (5, 6) and cols[0][:1].isdigit() and cols[3].isdigit() and cols[-1] != "total":
            counts[cols[-1]] = int(cols[3])
    return counts


def syscalls_by_name(d: Path, name: str, side: str, n: int, least: float = 0.01) -> dict[str, float]:
    """The system calls per operation of one side, by name (difference of N and 2N), those of at
    least `least` an operation, most first."""
    first, second = strace_by_name(d / "st" / f"{name}.{side}.{n}.txt"), \
        strace_by_name(d / "st" / f"{name}.{side}.{2 * n}.txt")
    if not first or not second:
        return {}
    per = {k: (second.get(k, 0) - first.get(k, 0)) / n for k in set(first) | set(second)}
    return dict(sorted(((k, v) for k, v in per.items() if v >= least), key=lambda kv: (-kv[1], kv[0])))


def syscall_lines(d: Path, n: int) -> list[str]:
    """Which system calls each loop makes per operation (rxe's doorbell is a write() per ibv_post_send)."""
    out = []
    for key, label, _perftest in KINDS:
        for loop in ("native", "pyverbs", "perftest"):
            sides = []
            for side, who in (("client", "requester"), ("server", "responder")):
                calls = syscalls_by_name(d, f"{loop}-{key}", side, n)
                if calls:
                    sides.append(f"{who} " + ", ".join(f"{k} {v:.2f}" for k, v in calls.items()))
                elif strace_by_name(d / "st" / f"{loop}-{key}.{side}.{n}.txt"):
                    sides.append(f"{who} none")
            if sides:
                out.append(f"  {label + ', ' + loop + ':':28} " + "; ".join(sides))
    return ["system calls per operation by name (strace -c, N and 2N differenced; rxe rings its doorbell "
            "with a write() per ibv_post_send):"] + out if out else []


def _difference(first: int | None, second: int | None, n: int) -> float | None:
    return None if first is None or second is None else (second - first) / n


def per_op(d: Path, name: str, side: str, n: int) -> PerOp:
    cg, st = d / "cg", d / "st"
    if name.startswith("perftest") or "-rpc-" in name:
        a, b = callgrind_count(cg / f"{name}.{side}.{n}.out"), callgrind_count(cg / f"{name}.{side}.{2 * n}.out")
        if a is None or b is None:
            c = None
        else:
            c = Count(b.total - a.total, b.polls - a.polls, b.poll_ir - a.poll_ir)
    else:
        # rdmaspy switches instrumentation on around its loop: the count is the loop's alone.
        c = callgrind_count(cg / f"{name}.{side}.{n}.out")
    sc = _difference(strace_calls(st / f"{name}.{side}.{n}.txt"), strace_calls(st / f"{name}.{side}.{2 * n}.txt"), n)
    if c is None:
        return PerOp(None, syscalls=sc)
    if c.polls < 0 or c.poll_ir < 0:
        # The longer run waited less: differenced polls are its waits' noise, not the operations'.
        return PerOp(c.total / n, syscalls=sc)
    return PerOp(c.total / n, c.polls / n, (c.total - c.poll_ir) / n, sc)


def _iterations(d: Path) -> int | None:
    """N of the run, from the callgrind files' names."""
    for p in sorted((d / "cg").glob("native-send.client.*.out")):
        return int(p.name.split(".")[2])
    return None


def _fmt(v: float | None, digits: int = 0) -> str:
    return "-" if v is None else f"{v:,.{digits}f}"


def _ratio(a: float | None, b: float | None) -> str:
    return "-" if a is None or b is None or b <= 0 else f"{a / b:.2f}"


def instruction_table(d: Path) -> list[str]:
    n = _iterations(d)
    if n is None:
        return [f"no callgrind results in {d / 'cg'} (run `lab/run bench`)"]
    out = [f"user-space instructions (Ir), CQ polls and system calls per operation, N={n} "
           "(lab guest, rxe, 64-byte messages)",
           f"{'':42} {'-------------- requester ---------------':>40}  {'-------------- responder ---------------':>40}",
           f"{'operation':16} {'loop':25} " + 2 * f" {'Ir':>9} {'polls':>6} {'Ir-polls':>9} {'syscalls':>9}  "]
    ratios = []

    def cols(p: PerOp) -> str:
        return f" {_fmt(p.instructions):>9} {_fmt(p.polls):>6} {_fmt(p.outside):>9} {_fmt(p.syscalls, 2):>9}  "

    for key, label, perftest in KINDS:
        rows = {}
        for loop, name in (("native hot path", f"native-{key}"), ("pure pyverbs", f"pyverbs-{key}"),
                           (f"perftest {perftest}", f"perftest-{key}")):
            cli, srv = per_op(d, name, "client", n), per_op(d, name, "server", n)
            rows[name.split("-")[0]] = cli
            out.append(f"{label:16} {loop:25} {cols(cli)}{cols(srv)}".rstrip())
        nat, pyv, pt = rows["native"], rows["pyverbs"], rows["perftest"]
        ratios.append(f"{label}, requester: native/pyverbs {_ratio(nat.instructions, pyv.instructions)} all, "
                      f"{_ratio(nat.outside, pyv.outside)} outside polls (target <= 0.20); native/perftest "
                      f"{_ratio(nat.instructions, pt.instructions)} all, {_ratio(nat.outside, pt.outside)} outside "
                      "polls (target <= 1.25)")
    cli, srv = per_op(d, "native-rpc-write-chunk", "client", n), per_op(d, "native-rpc-write-chunk", "server", n)
    out.append(f"{'RPC, Write chunk':16} {'rdmaspy load/serve 4 KiB':25} {cols(cli)}{cols(srv)}".rstrip())
    out.append("Ir: all user-space instructions; polls: CQ polls (calls of the provider's poll_cq, for pyverbs "
               "of its CQ.poll); Ir-polls: Ir outside those calls (the wait for the peer is mostly polls)")
    out.append("-: not measured, or two differenced runs waited so differently that the longer made fewer polls")
    return out + ratios + syscall_lines(d, n)


def _json(d: Path, name: str) -> dict | None:
    p = d / name
    return json.loads(p.read_text()) if p.exists() else None


def _perftest_row(path: Path) -> list[float] | None:
    """The numeric result row of a perftest client log."""
    if not path.exists():
        return None
    for line in path.read_text(errors="replace").splitlines():
        cols = line.split()
        if len(cols) >= 4 and all(re.fullmatch(r"[0-9.]+", c) for c in cols):
            return [float(c) for c in cols]
    return None


def wallclock_table(d: Path) -> list[str]:
    rows = []
    for label, name in (("native loop, pyverbs-made QP/CQ (Send/Recv)", "bench-native.json"),
                        ("pure-pyverbs loop, same QP/CQ (Send/Recv)", "bench-pyverbs.json"),
                        ("native loop, QP made by rdma_create_ep", "bench-native-cm.json")):
        b = _json(d, name)
        if b:
            rows.append((label, b["round_trips_per_s"], b["half_round_trip_us"]))
    lat = _perftest_row(d / "perftest-send-lat.client.log")
    if lat:
        rows.append(("perftest ib_send_lat (64 B)", 1e6 / (2 * lat[5]), lat[5]))   # t_avg: one way
    for label, name in (("rdmaspy load, RPC NULL, 1 in flight", "rpc-null-c1.json"),
                        ("rdmaspy load, RPC NULL, 16 in flight", "rpc-null-c16.json")):
        r = _json(d, name)
        if r:
            rows.append((label, r["ops_per_s"], r["latency_us"]["p50"] / 2))
    if not rows:
        return []
    out = ["wall clock under qemu TCG (the emulated kernel's speed, not rdmaspy's):",
           f"{'':50} {'round trips/s':>14} {'one-way us':>11}"]
    out += [f"{label:50} {rate:14.0f} {us:11.1f}" for label, rate, us in rows]
    return out


# ---------------------------------------------------------------- host mode

def _run(cmd: list[str], timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)


def _pair(server: list[str], client: list[str], ready: str | None) -> subprocess.CompletedProcess:
    """Run server, then client once the server is ready; the client's result."""
    srv = subprocess.Popen(server, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        if ready is not None:
            assert srv.stdout is not None
            for line in srv.stdout:
                if ready in line:
                    break
        else:
            time.sleep(2)
        return _run(client)
    finally:
        try:
            srv.wait(timeout=30)
        except subprocess.TimeoutExpired:
            srv.kill()


def host_mode(device: str | None) -> int:
    devices = sorted(os.listdir("/sys/class/infiniband")) if os.path.isdir("/sys/class/infiniband") else []
    if not devices:
        print("bench_report: host mode needs a real RDMA device and /sys/class/infiniband is empty here; "
              "in the lab run `lab/run bench` and then this script without --host", file=sys.stderr)
        return 1
    dev = device or devices[0]
    addr = os.environ.get("RDMASPY_BENCH_ADDR", "")
    if not addr:
        print("bench_report: host mode: set RDMASPY_BENCH_ADDR to the IP address of "
              f"{dev}'s netdev (serve and load run on it, in loopback)", file=sys.stderr)
        return 1
    n = int(os.environ.get("RDMASPY_BENCH_N", "100000"))
    print(f"mode: host, RDMA device {dev} at {addr}, loopback, {n} operations: wall clock")
    rdmaspy = [sys.executable, "-m", "rdmaspy"]
    print(f"{'':44} {'ops/s':>10} {'p50 us':>8} {'p99 us':>8} {'p99.9 us':>9} {'max us':>8}")
    for label, cl in (("rdmaspy load, RPC NULL, 1 in flight", ["--mix", "null", "--concurrency", "1"]),
                      ("rdmaspy load, RPC read (Write chunk) 4 KiB", ["--mix", "read", "--size", "4096",
                                                                       "--concurrency", "1"])):
        r = _pair(rdmaspy + ["serve", "--addr", addr], rdmaspy + ["load", "--src", addr, "--dst", addr, "--quiet",
                  "--count", str(n), "-T", "json", *cl], "listening on")
        try:
            s = json.loads(r.stdout)
        except json.JSONDecodeError:
            print(f"{label:44} failed: {r.stderr.strip().splitlines()[-1:]}")
            continue
        lat = s["latency_us"]
        print(f"{label:44} {s['ops_per_s']:10.0f} {lat['p50']:8.1f} {lat['p99']:8.1f} {lat['p99.9']:9.1f} "
              f"{lat['max']:8.1f}")
    for label, tool in (("perftest ib_send_lat (one way)", "ib_send_lat"),
                        ("perftest ib_read_lat", "ib_read_lat")):
        if not shutil.which(tool):
            print(f"{label:44} not installed (Debian: perftest)")
            continue
        args = ["-d", dev, "-s", "64", "-n", str(n)]
        r = _pair([tool, *args], [tool, *args, addr], None)
        row = None
        for line in r.stdout.splitlines():
            cols = line.split()
            if len(cols) >= 9 and all(re.fullmatch(r"[0-9.]+", c) for c in cols):
                row = [float(c) for c in cols]
        if row is None:
            print(f"{label:44} failed")
            continue
        # bytes iterations t_min t_max t_typical t_avg t_stdev 99% 99.9%
        print(f"{label:44} {1e6 / row[5]:10.0f} {row[4]:8.1f} {row[7]:8.1f} {row[8]:9.1f} {row[3]:8.1f}")
    return 0


def main(argv: list[str]) -> int:
    if len(argv) > 1 and argv[1] == "--host":
        return host_mode(argv[2] if len(argv) > 2 else None)
    cache = Path(os.environ.get("RDMASPY_LAB_CACHE") or Path(__file__).resolve().parent / "cache")
    d = Path(argv[1]) if len(argv) > 1 else cache / "out" / "bench"
    print(f"mode: lab (results of `lab/run bench` in {d}); a host with a real RDMA device: --host")
    table = instruction_table(d)
    print("\n".join(table))
    wall = wallclock_table(d)
    if wall:
        print()
        print("\n".join(wall))
    rc = 0 if (d / "cg").is_dir() else 1
    if os.path.isdir("/sys/class/infiniband") and os.listdir("/sys/class/infiniband"):
        print()
        rc = host_mode(None) or rc
    else:
        print("\n(no RDMA device on this host, /sys/class/infiniband is empty: no wall-clock run beside perftest here)")
    return rc


if __name__ == "__main__":
    sys.exit(main(sys.argv))
