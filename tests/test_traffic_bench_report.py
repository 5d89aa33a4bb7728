"""lab/bench_report.py: the instruction and system-call table of `lab/run bench`, from recorded results."""
from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

REPORT = Path(__file__).resolve().parent.parent / "lab" / "bench_report.py"
spec = importlib.util.spec_from_file_location("bench_report", REPORT)
bench_report = importlib.util.module_from_spec(spec)
sys.modules["bench_report"] = bench_report
spec.loader.exec_module(bench_report)

STRACE = """% time     seconds  usecs/call     calls    errors syscall
------ ----------- ----------- --------- --------- ----------------
 60.00    0.000600           6       100           read
 40.00    0.000400           4       {rest}        12 openat
------ ----------- ----------- --------- --------- ----------------
100.00    0.001000           5       {total}        12 total
"""


def _callgrind(path: Path, total: int) -> None:
    path.write_text(f"# callgrind format\nversion: 1\ncreator: callgrind-3.19.0\nevents: Ir\n"
                    f"fn=(1) main\n1 {total}\nsummary: {total}\ntotals: {total}\n")


def _strace(path: Path, total: int) -> None:
    path.write_text(STRACE.format(rest=total - 100, total=total))


def _results(tmp_path: Path, n: int) -> Path:
    """A bench run's files: rdmaspy loops counted around the loop, perftest and RPC at N and 2N."""
    (tmp_path / "cg").mkdir()
    (tmp_path / "st").mkdir()
    for side, k in (("client", 1), ("server", 2)):
        for key in ("send", "write", "read"):
            _callgrind(tmp_path / "cg" / f"native-{key}.{side}.{n}.out", 2_000 * k * n)
            _callgrind(tmp_path / "cg" / f"pyverbs-{key}.{side}.{n}.out", 20_000 * k * n)
            for m in (n, 2 * n):     # start-up 5 M, then 1,600 per operation
                _callgrind(tmp_path / "cg" / f"perftest-{key}.{side}.{m}.out", 5_000_000 + 1_600 * k * m)
        for m in (n, 2 * n):
            _callgrind(tmp_path / "cg" / f"native-rpc-write-chunk.{side}.{m}.out", 9_000_000 + 30_000 * m)
            _strace(tmp_path / "st" / f"native-send.{side}.{m}.txt", 4000 + (3 * m if side == "server" else 0))
    return tmp_path


def test_per_op_counts_and_differences(tmp_path):
    d = _results(tmp_path, 500)
    native = bench_report.per_op(d, "native-send", "client", 500)
    assert native.instructions == pytest.approx(2000) and native.syscalls == pytest.approx(0)
    assert bench_report.per_op(d, "native-send", "server", 500).syscalls == pytest.approx(3)
    assert bench_report.per_op(d, "perftest-read", "server", 500).instructions == pytest.approx(3200)
    rpc = bench_report.per_op(d, "native-rpc-write-chunk", "client", 500)
    assert rpc.instructions == pytest.approx(30_000) and rpc.syscalls is None


def test_table_and_ratios_against_the_targets(tmp_path):
    lines = bench_report.instruction_table(_results(tmp_path, 500))
    assert lines[0].startswith("user-space instructions") and "N=500" in lines[0]
    row = next(line for line in lines if line.startswith("RDMA READ") and "native" in line)
    assert row.split()[-4:] == ["2,000", "4,000", "-", "-"]
    ratio = next(line for line in lines if line.startswith("Send/Recv: requester"))
    assert "native/pyverbs 0.10" in ratio and "native/perftest 1.25" in ratio


def test_script_says_which_mode_it_ran(tmp_path):
    r = subprocess.run([sys.executable, str(REPORT), str(_results(tmp_path, 200))], capture_output=True,
                       text=True, timeout=60)
    assert r.stdout.startswith("mode: lab") and "RPC, Write chunk" in r.stdout
    assert r.returncode == 0 or "host mode" in r.stderr


def test_host_mode_without_a_device_says_so_in_one_line(tmp_path):
    if Path("/sys/class/infiniband").is_dir() and any(Path("/sys/class/infiniband").iterdir()):
        pytest.skip("this machine has an RDMA device")
    r = subprocess.run([sys.executable, str(REPORT), "--host"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 1 and r.stdout == ""
    assert len(r.stderr.strip().splitlines()) == 1 and "/sys/class/infiniband is empty" in r.stderr
