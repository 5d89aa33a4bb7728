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


def _callgrind(path: Path, total: int, polls: int = 0, poll_ir: int = 0, pyverbs: bool = False) -> None:
    """A callgrind file whose loop calls the rxe provider's poll function polls times (poll_ir in all),
    through pyverbs' Cython CQ.poll when pyverbs (which adds 100 Ir a call)."""
    rxe = "ob=(2) /usr/lib/x86_64-linux-gnu/libibverbs/librxe-rdmav34.so"
    if pyverbs:
        calls = (f"cob=(3) /usr/lib/python3/dist-packages/pyverbs/cq.cpython-311-x86_64-linux-gnu.so\n"
                 f"cfn=(4) 0x0000000000012340\ncalls={polls} 0\n* {poll_ir + 100 * polls}\n"
                 f"ob=(3)\nfn=(4)\n0 {100 * polls}\ncob=(2) {rxe[5:]}\ncfn=(2) 0x0000000000002ca0\n"
                 f"calls={polls} 0\n* {poll_ir}\n")
    else:
        calls = f"cob=(2) {rxe[5:]}\ncfn=(2) 0x0000000000002ca0\ncalls={polls} 0\n* {poll_ir}\n"
    post = f"cob=(2)\ncfn=(5) 0x0000000000004550\ncalls=3 0\n* 300\n"
    path.write_text("# callgrind format\nversion: 1\ncreator: callgrind-3.19.0\nevents: Ir\nsummary: 0\n\n"
                    "ob=(1) /usr/lib/loop.so\nfl=(1) loop.c\nfn=(1) loop\n10 5\n+2 7\n" + calls + post
                    + f"\ntotals: {total}\n")


def _strace(path: Path, total: int) -> None:
    path.write_text(STRACE.format(rest=total - 100, total=total))


def _results(tmp_path: Path, n: int) -> Path:
    """A bench run's files: rdmaspy loops counted around the loop, perftest and RPC at N and 2N."""
    (tmp_path / "cg").mkdir()
    (tmp_path / "st").mkdir()
    for side, k in (("client", 1), ("server", 2)):
        for key in ("send", "write", "read"):
            # native: 2,000 Ir an operation, 1,500 of them in 30 polls
            _callgrind(tmp_path / "cg" / f"native-{key}.{side}.{n}.out", 2_000 * k * n, 30 * n, 1_500 * k * n)
            _callgrind(tmp_path / "cg" / f"pyverbs-{key}.{side}.{n}.out", 20_000 * k * n, 10 * n, 1_000 * n, True)
            for m in (n, 2 * n):     # start-up 5 M and 1,000 polls, then 1,600 Ir and 20 polls an operation
                _callgrind(tmp_path / "cg" / f"perftest-{key}.{side}.{m}.out", 5_000_000 + 1_600 * k * m,
                           1_000 + 20 * m, 40_000 + 800 * m)
        for m in (n, 2 * n):
            _callgrind(tmp_path / "cg" / f"native-rpc-write-chunk.{side}.{m}.out", 9_000_000 + 30_000 * m)
            _strace(tmp_path / "st" / f"native-send.{side}.{m}.txt", 4000 + (3 * m if side == "server" else 0))
    return tmp_path


def test_per_op_counts_and_differences(tmp_path):
    d = _results(tmp_path, 500)
    native = bench_report.per_op(d, "native-send", "client", 500)
    assert (native.instructions, native.polls, native.outside) == pytest.approx((2000, 30, 500))
    assert native.syscalls == pytest.approx(0)
    assert bench_report.per_op(d, "native-send", "server", 500).syscalls == pytest.approx(3)
    pt = bench_report.per_op(d, "perftest-read", "server", 500)
    assert (pt.instructions, pt.polls, pt.outside) == pytest.approx((3200, 20, 2400))
    rpc = bench_report.per_op(d, "native-rpc-write-chunk", "client", 500)
    assert rpc.instructions == pytest.approx(30_000) and rpc.syscalls is None


def test_pyverbs_polls_are_counted_where_python_calls_them(tmp_path):
    d = _results(tmp_path, 100)
    pyv = bench_report.per_op(d, "pyverbs-send", "client", 100)
    # 10 polls an operation of 100 Ir (rxe) + 100 Ir (Cython's CQ.poll)
    assert (pyv.instructions, pyv.polls, pyv.outside) == pytest.approx((20_000, 10, 18_000))


def test_table_and_ratios_against_the_targets(tmp_path):
    lines = bench_report.instruction_table(_results(tmp_path, 500))
    assert lines[0].startswith("user-space instructions") and "N=500" in lines[0]
    row = next(line for line in lines if line.startswith("RDMA READ") and "native" in line)
    assert row.split()[-8:] == ["2,000", "30", "500", "-", "4,000", "30", "1,000", "-"]
    ratio = next(line for line in lines if line.startswith("Send/Recv, requester"))
    assert "native/pyverbs 0.10 all, 0.03 outside polls" in ratio
    assert "native/perftest 1.25 all, 0.62 outside polls" in ratio


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


def test_system_calls_are_named_per_operation(tmp_path):
    d = _results(tmp_path, 500)
    # the server's openat grows by 3 an operation; its read stays at 100: left out
    assert bench_report.syscalls_by_name(d, "native-send", "server", 500) == pytest.approx({"openat": 3.0})
    assert bench_report.syscalls_by_name(d, "native-send", "client", 500) == {}
    assert bench_report.syscalls_by_name(d, "pyverbs-send", "client", 500) == {}     # not measured
    lines = bench_report.syscall_lines(d, 500)
    assert lines[0].startswith("system calls per operation by name")
    assert lines[1:] == ["  Send/Recv, native:           requester none; responder openat 3.00"]


def test_differenced_polls_fewer_in_the_longer_run_are_not_shown(tmp_path):
    d = _results(tmp_path, 100)
    # the RPC call's 2N run waited less than its N run: 50 fewer polls in all
    _callgrind(d / "cg" / "native-rpc-write-chunk.server.100.out", 9_000_000 + 30_000 * 100, 2_000, 100_000)
    _callgrind(d / "cg" / "native-rpc-write-chunk.server.200.out", 9_000_000 + 30_000 * 200, 1_950, 97_500)
    rpc = bench_report.per_op(d, "native-rpc-write-chunk", "server", 100)
    assert rpc.instructions == pytest.approx(30_000) and rpc.polls is None and rpc.outside is None
    row = next(line for line in bench_report.instruction_table(d) if line.startswith("RPC, Write chunk"))
    assert row.split()[-4:] == ["30,000", "-", "-", "-"]
