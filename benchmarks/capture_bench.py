"""Live-capture benchmark: `rdmaspy capture -w` against `tcpdump -w` on the same veth link, same run.

Builds two network namespaces joined by a veth pair (tests/netns/veth-pair.sh), compiles a
small C sender at run time (a pure-Python sender tops out far below what the capturers take:
measure it with --python-sender), and for rising rates sends real SoftRoCE frames for a few
seconds while one capturer listens on the far end.  For each tool it reports the highest rate
sustained with zero drops (kernel drops, and every sent packet in the file's count), and the
CPU the capturer used.  Needs root.

    python3 benchmarks/capture_bench.py [--rates 50000,100000,...] [--seconds 3] [--frames FILE]
"""
from __future__ import annotations

import argparse
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
NETNS = ROOT / "tests" / "netns" / "veth-pair.sh"
BENCH_FRAMES = ROOT / "benchmarks" / "out" / "nfs_rocev2_100000.pcap"     # decode_bench.py's capture
FILTER = "udp port 4791 or ether proto 0x8915"

# Paced raw sender: frames from a classic pcap, replayed round-robin at RATE per second for SECONDS.
C_SENDER = r"""
#include <arpa/inet.h>
#include <linux/if_packet.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <errno.h>

static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec / 1e9; }

int main(int argc, char **argv) {
    if (argc != 5) { fprintf(stderr, "usage: send IFACE PCAP RATE SECONDS\n"); return 2; }
    FILE *f = fopen(argv[2], "rb");
    if (!f) { perror(argv[2]); return 1; }
    unsigned char gh[24];
    if (fread(gh, 1, 24, f) != 24) return 1;
    int swap = gh[0] == 0xa1;
    enum { MAXF = 100000 };
    static unsigned char *fr[MAXF]; static unsigned len[MAXF];
    int n = 0; unsigned char rh[16];
    while (n < MAXF && fread(rh, 1, 16, f) == 16) {
        uint32_t cl; memcpy(&cl, rh + 8, 4);
        if (swap) cl = ntohl(cl);
        fr[n] = malloc(cl); if (fread(fr[n], 1, cl, f) != cl) break;
        len[n++] = cl;
    }
    int s = socket(AF_PACKET, SOCK_RAW, 0);
    if (s < 0) { perror("socket"); return 1; }
    struct sockaddr_ll sll; memset(&sll, 0, sizeof sll);
    sll.sll_family = AF_PACKET; sll.sll_ifindex = if_nametoindex(argv[1]);
    if (bind(s, (struct sockaddr *)&sll, sizeof sll) < 0) { perror("bind"); return 1; }
    int one = 1;   /* straight to the driver: the qdisc layer would cost the sender a third of its rate */
    setsockopt(s, SOL_PACKET, PACKET_QDISC_BYPASS, &one, sizeof one);
    double rate = atof(argv[3]), secs = atof(argv[4]);
    long total = (long)(rate * secs), sent = 0;
    double t0 = now();
    while (sent < total) {
        /* pace in batches of up to 32 frames: the schedule, not the batch, sets the rate */
        long due = (long)((now() - t0) * rate) + 1;
        if (due > total) due = total;
        if (due <= sent) continue;
        while (sent < due) {
            int i = sent % n;
            if (send(s, fr[i], len[i], 0) < 0) { if (errno == ENOBUFS || errno == EAGAIN) continue; perror("send"); return 1; }
            sent++;
        }
    }
    double el = now() - t0;
    printf("%ld %.6f\n", sent, el);
    return 0;
}
"""

PY_SENDER = r"""
import socket, sys, time
sys.path.insert(0, "@ROOT@")
from rdmaspy.readers import open_capture
frames = [bytes(f.data) for f in open_capture(sys.argv[2])]
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, 0); s.bind((sys.argv[1], 0))
rate, secs = float(sys.argv[3]), float(sys.argv[4]); total = int(rate * secs); n = len(frames)
send = s.send; sent = 0; t0 = time.perf_counter()
while sent < total:
    due = min(total, int((time.perf_counter() - t0) * rate) + 1)
    while sent < due:
        send(frames[sent % n]); sent += 1
print(sent, time.perf_counter() - t0)
"""


def build_sender(workdir: str) -> list[str]:
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        _apt("gcc")
        cc = shutil.which("gcc")
    src = os.path.join(workdir, "send.c")
    exe = os.path.join(workdir, "send")
    Path(src).write_text(C_SENDER)
    subprocess.run([cc, "-O2", "-o", exe, src], check=True)
    return [exe]


def _apt(pkg: str) -> None:
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    subprocess.run(["apt-get", "update", "-qq"], check=True, env=env)
    subprocess.run(["apt-get", "install", "-y", "-qq", pkg], check=True, env=env, stdout=subprocess.DEVNULL)


def cpu_of(pid: int) -> float:
    """utime + stime of a live process, in seconds."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def wait_ready(proc: subprocess.Popen, errfile: str, pattern: str, timeout: float = 10.0) -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if proc.poll() is not None:
            raise RuntimeError(f"capturer exited early: {Path(errfile).read_text()}")
        if pattern in Path(errfile).read_text(errors="replace"):
            time.sleep(0.2)
            return
        time.sleep(0.05)
    raise RuntimeError(f"capturer not ready: {Path(errfile).read_text()}")


def run_one(tool: str, ns_a: str, ns_b: str, dev_a: str, dev_b: str, sender: list[str], frames: str,
            rate: int, seconds: float, workdir: str, buffer_kib: int) -> dict:
    out = os.path.join(workdir, f"{tool}.pcap{'ng' if tool == 'rdmaspy' else ''}")
    err = os.path.join(workdir, f"{tool}.err")
    if tool == "rdmaspy":
        cmd = [sys.executable, "-m", "rdmaspy", "capture", "-i", dev_b, "-w", out, "-f", FILTER,
               "-B", str(buffer_kib)]
    else:
        cmd = ["tcpdump", "-i", dev_b, "-w", out, "-B", str(buffer_kib), "-s", "262144", "-n", FILTER]
    with open(err, "w") as ef:
        proc = subprocess.Popen(["ip", "netns", "exec", ns_b, *cmd], stdout=subprocess.DEVNULL, stderr=ef,
                                cwd=str(ROOT))
    wait_ready(proc, err, "listening on")
    cpu0 = cpu_of(proc.pid)
    t0 = time.monotonic()
    res = subprocess.run(["ip", "netns", "exec", ns_a, *sender, dev_a, frames, str(rate), str(seconds)],
                         capture_output=True, text=True, check=True)
    sent, elapsed = res.stdout.split()
    sent_n, elapsed_s = int(sent), float(elapsed)
    # Let the capturer drain its ring: tcpdump's last TPACKET_V3 block is handed over only when the block's
    # retire timer (its 1 s poll timeout) fires, and a stop before that loses it (lab README).
    time.sleep(1.5)
    cpu1 = cpu_of(proc.pid)
    wall = time.monotonic() - t0
    proc.send_signal(signal.SIGINT)
    proc.wait(timeout=60)
    text = Path(err).read_text(errors="replace")
    nums = {k: int(v) for v, k in re.findall(r"(\d+) packets? (captured|received by filter|dropped by kernel)", text)}
    captured = nums.get("captured", 0)
    kdrop = nums.get("dropped by kernel", -1)
    os.unlink(out)
    return {"tool": tool, "rate": rate, "sent": sent_n, "send_pps": sent_n / elapsed_s, "captured": captured,
            "kernel_dropped": kdrop, "ok": kdrop == 0 and captured >= sent_n,
            "cpu_pct": 100.0 * (cpu1 - cpu0) / wall, "us_per_pkt": 1e6 * (cpu1 - cpu0) / max(1, captured)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rates", default="25000,50000,100000,150000,200000,300000,400000",
                    help="comma-separated packet rates to try, rising")
    ap.add_argument("--seconds", type=float, default=3.0, help="seconds of traffic per step")
    ap.add_argument("--frames", default=str(BENCH_FRAMES),
                    help="classic pcap whose frames are replayed (default: the 100k-frame NFS-over-RDMA benchmark "
                         "capture, built when missing)")
    ap.add_argument("--buffer", type=int, default=32768, help="ring size in KiB for both capturers")
    ap.add_argument("--python-sender", action="store_true", help="use a pure-Python sender (to see its ceiling)")
    ap.add_argument("--tools", default="rdmaspy,tcpdump")
    a = ap.parse_args()
    if os.geteuid() != 0:
        print("capture_bench: needs root (network namespaces, raw sockets)", file=sys.stderr)
        return 2
    if shutil.which("tcpdump") is None:
        _apt("tcpdump")
    if a.frames == str(BENCH_FRAMES) and not BENCH_FRAMES.exists():
        sys.path.insert(0, str(ROOT / "benchmarks"))
        import traffic
        BENCH_FRAMES.parent.mkdir(exist_ok=True)
        print(f"building {BENCH_FRAMES} ...", flush=True)
        traffic.build(str(BENCH_FRAMES), 100000)
    tag = f"b{os.getpid() % 100000}"
    ns_a, ns_b, dev_a, dev_b = f"rs-{tag}-a", f"rs-{tag}-b", f"va-{tag}", f"vb-{tag}"
    workdir = tempfile.mkdtemp(prefix="rdmaspy-bench-")
    subprocess.run([str(NETNS), "up", tag], check=True)
    try:
        if a.python_sender:
            script = os.path.join(workdir, "send.py")
            Path(script).write_text(PY_SENDER.replace("@ROOT@", str(ROOT)))
            sender = [sys.executable, script]
        else:
            sender = build_sender(workdir)
        tools = a.tools.split(",")
        best: dict[str, tuple[int, float]] = {}      # tool -> (highest drop-free rate, CPU % there)
        failed: dict[str, int] = {}                   # tool -> lowest rate with drops
        per_pkt: dict[str, list[float]] = {}          # tool -> CPU microseconds per packet, each step
        print(f"sender: {'python' if a.python_sender else 'C (compiled now)'}, frames from {a.frames}, "
              f"{a.seconds:g} s per step, ring {a.buffer} KiB for both")
        print(f"{'tool':8} {'rate':>8} {'sent/s':>9} {'sent':>8} {'captured':>9} {'kdrop':>7} {'cpu%':>6} "
              f"{'us/pkt':>7}  drop-free")
        for rate in (int(r) for r in a.rates.split(",")):
            if all(t in failed for t in tools):
                break
            for tool in tools:
                if tool in failed:
                    continue
                r = run_one(tool, ns_a, ns_b, dev_a, dev_b, sender, a.frames, rate, a.seconds, workdir, a.buffer)
                print(f"{tool:8} {rate:8d} {r['send_pps']:9.0f} {r['sent']:8d} {r['captured']:9d} "
                      f"{r['kernel_dropped']:7d} {r['cpu_pct']:6.1f} {r['us_per_pkt']:7.2f}  "
                      f"{'yes' if r['ok'] else 'NO'}", flush=True)
                per_pkt.setdefault(tool, []).append(r["us_per_pkt"])
                if not r["ok"]:
                    failed[tool] = rate
                else:
                    # a step the sender could not reach counts at the rate actually sent
                    got = min(rate, int(r["send_pps"]))
                    if got > best.get(tool, (0, 0.0))[0]:
                        best[tool] = (got, r["cpu_pct"])
        print()
        for tool in tools:
            b = best.get(tool)
            line = f"{tool}: highest drop-free rate {b[0] if b else 0} pps"
            if b:
                line += f" (CPU {b[1]:.0f}% of one core there)"
            line += f"; first drops at {failed[tool]} pps" if tool in failed else "; no drops at any rate tried"
            if per_pkt.get(tool):
                us = sorted(per_pkt[tool])[len(per_pkt[tool]) // 2]
                line += f"; median {us:.2f} CPU us/packet (one core's worth: ~{1e6 / us:,.0f} pps)"
            print(line)
        if "rdmaspy" in best and "tcpdump" in best:
            print(f"rdmaspy / tcpdump drop-free rate: {100.0 * best['rdmaspy'][0] / best['tcpdump'][0]:.0f}%"
                  + (" (both bounded by the sender, not by drops)" if not failed else ""))
    finally:
        subprocess.run([str(NETNS), "down", tag])
        shutil.rmtree(workdir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
