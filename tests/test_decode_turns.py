"""``decode``'s printing shared among processes (``-j``): the same bytes as one process, for every capture and
every output that shares it; a process that ends early costs no packet; the choice of how many; no process
left behind, no traceback, when the reader goes away."""
from __future__ import annotations

import argparse
import io
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import CAPTURES, ROOT, capture

from rdmaspy.commands.common import pipeline_options, run_capture
from rdmaspy.commands.sharing import AUTO_MIN_BYTES, printing_processes
from rdmaspy.output import turns
from rdmaspy.output.lines import LineWriter
from rdmaspy.output.sinks import TextSink

EVERY_CAPTURE = sorted(p for p in [*CAPTURES.glob("*.pcap*"), *(CAPTURES / "nfs").glob("*.pcap*")])
# Short runs, so that a few hundred packets change hands dozens of times, at every kind of packet.
SHORT_RUN = 7


def _decode_argv(run: int) -> list[str]:
    """``rdmaspy decode`` in a fresh interpreter, its turns ``run`` packets long."""
    code = ("import sys; from rdmaspy.output import turns; turns.RUN = %d; from rdmaspy.cli import main; "
            "sys.exit(main(sys.argv[1:]))" % run)
    return [sys.executable, "-c", code, "decode"]


ENV = {**os.environ, "PYTHONPATH": str(ROOT), "NO_COLOR": ""}


def _decode(args: list[str], run: int = SHORT_RUN) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([*_decode_argv(run), *args], capture_output=True, env=ENV, stdin=subprocess.DEVNULL,
                          timeout=600, check=False)


def _started(args: list[str], run: int, new_session: bool = False) -> subprocess.Popen[bytes]:
    """A decode running, its output and errors read through pipes, and the processes it started."""
    return subprocess.Popen([*_decode_argv(run), *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            stdin=subprocess.DEVNULL, env=ENV, start_new_session=new_session)


def _workers_of(proc: subprocess.Popen[bytes]) -> list[int]:
    for _ in range(100):
        workers = _children(proc.pid)
        if workers:
            return workers
        time.sleep(0.05)
    raise AssertionError("the decode started no second process")


def _same_in_one_and_three(args: list[str]) -> None:
    one = _decode([*args, "-j", "1"])
    three = _decode([*args, "-j", "3"])
    assert one.returncode == three.returncode == 0, (one.stderr, three.stderr)
    assert three.stderr == one.stderr
    assert len(one.stdout) > 1000
    assert three.stdout == one.stdout


@pytest.mark.parametrize("path", EVERY_CAPTURE, ids=lambda p: p.name)
def test_tree_printed_by_three_processes_is_the_tree_of_one(path: Path) -> None:
    _same_in_one_and_three(["-V", "-c", "300", str(path)])


@pytest.mark.parametrize("name", ["rxe-nfsv41-loss.pcap", "siw-nfsv3-rdma.pcap", "rxe-nvme-rdma.pcap.gz",
                                  "rxe-rpcrdma2-session.pcap", "nfs/siw-nfsv42-full.pcap"])
def test_json_printed_by_three_processes_is_the_json_of_one(name: str) -> None:
    _same_in_one_and_three(["-T", "json", "-c", "300", str(CAPTURES / name)])


@pytest.mark.parametrize("extra", [["-T", "ek"], ["-x"], ["-V", "-x", "--color", "always"],
                                   ["-V", "-Y", "rpcrdma", "-t", "dd"], ["-A", "-x", "-t", "ad"]])
def test_other_outputs_printed_by_three_processes_are_those_of_one(extra: list[str]) -> None:
    _same_in_one_and_three([*extra, "-c", "250", str(CAPTURES / "rxe-nfsv3-loss.pcap")])


def test_count_ending_inside_another_process_turn_prints_exactly_that_many() -> None:
    one = _decode(["-V", "-j", "1", "-c", "17", str(CAPTURES / "rxe-nfsv3-rdma.pcap")], run=3)
    two = _decode(["-V", "-j", "2", "-c", "17", str(CAPTURES / "rxe-nfsv3-rdma.pcap")], run=3)
    assert two.stdout == one.stdout
    assert one.stdout.count(b"\nFrame ") + one.stdout.startswith(b"Frame ") == 17


def test_damaged_capture_is_reported_once_with_the_same_packets(tmp_path: Path) -> None:
    data = capture("rxe-nfsv3-loss.pcap").read_bytes()
    cut = tmp_path / "cut.pcap"
    cut.write_bytes(data[:len(data) * 2 // 3 - 5])       # ends inside a record
    one = _decode(["-V", "-j", "1", str(cut)])
    two = _decode(["-V", "-j", "2", str(cut)])
    assert one.returncode == two.returncode == 2
    assert two.stdout == one.stdout
    assert two.stderr == one.stderr and one.stderr.count(b"\n") == 1


class _Cut(io.BytesIO):
    """A worker's pipe that gives its first run and then ends, as if the process had died."""


def _tree_in_one(path: Path, count: int) -> bytes:
    buf = io.BytesIO()
    out = LineWriter(buf, False)
    run_capture(str(path), [TextSink(out, True, False)], pipeline_options(None, count, True), out)
    return buf.getvalue()


def _trees(text: bytes) -> list[bytes]:
    """The packets' trees of a ``-V`` output."""
    return [b"Frame " + t for t in (b"\n" + text).split(b"\nFrame ")[1:]]


def test_a_process_that_ends_early_costs_no_packet() -> None:
    path = CAPTURES / "rxe-nfsv3-loss.pcap"
    count, run = 60, 8
    whole = _trees(_tree_in_one(path, count))
    # the worker's one run (the second: packets 9 to 16), as it would have sent it
    held = turns.HeldLines()
    w_out = LineWriter(held, False)
    sent = io.BytesIO()
    worker = turns.TurnWorker(TextSink(w_out, True, False), w_out, held, sent, 2, 1, run)
    run_capture(str(path), [worker], pipeline_options(None, 2 * run, True), None)
    first_run_only = sent.getvalue()
    buf = io.BytesIO()
    out = LineWriter(buf, False)
    printer = turns.TurnPrinter(TextSink(out, True, False), out, [None, _Cut(first_run_only)], run)
    run_capture(str(path), [printer], pipeline_options(None, count, True), out)
    assert printer.lost == [1]
    got = _trees(buf.getvalue())
    assert len(got) == len(whole) == count
    owed = range(3 * run, 4 * run)      # the run it did not send: printed here, without the analysis' fields
    for i, (a, b) in enumerate(zip(got, whole)):
        if i in owed:
            assert a.split(b"\n", 1)[0] == b.split(b"\n", 1)[0]
            assert b"analysis" not in a
        else:
            assert a == b, i
    assert any(b"analysis" in whole[i] for i in owed)


def _args(**given: object) -> argparse.Namespace:
    base: dict[str, object] = dict(jobs=None, write=None, line_buffered=False, host_trace=[], T="text",
                                   verbose=True, hex=False, count=None, file=str(CAPTURES / "rxe-nfsv3-loss.pcap"))
    base.update(given)
    return argparse.Namespace(**base)


def test_printing_is_shared_only_where_it_pays_and_the_capture_can_be_read_twice(tmp_path: Path) -> None:
    big = tmp_path / "big.pcapng"
    big.write_bytes(b"\0" * AUTO_MIN_BYTES)
    cores = len(os.sched_getaffinity(0))
    assert printing_processes(_args(file=str(big))) == max(1, min(4, cores))
    assert printing_processes(_args()) == 1                            # a small capture (1.4 MB)
    assert printing_processes(_args(jobs=3)) == 3                      # asked for
    assert printing_processes(_args(file=str(big), jobs=1)) == 1
    assert printing_processes(_args(file=str(big), verbose=False)) == 1    # summary lines: cheap to print
    assert printing_processes(_args(file=str(big), T="json", verbose=False)) == max(1, min(4, cores))
    assert printing_processes(_args(file=str(big), T="fields", verbose=False)) == 1
    assert printing_processes(_args(file=str(big), line_buffered=True)) == 1
    assert printing_processes(_args(file=str(big), write="x.pcapng")) == 1
    assert printing_processes(_args(file=str(big), host_trace=["t.txt"])) == 1
    assert printing_processes(_args(file=str(big), count=5)) == 1       # all in the first turn
    assert printing_processes(_args(file="-", jobs=2)) == 1            # standard input: read once
    assert printing_processes(_args(file=str(tmp_path / "none.pcap"), jobs=2)) == 1


def _children(pid: int) -> list[int]:
    """The processes whose parent is ``pid``."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            found.append(int(stat.parent.name))
    return found


def test_reader_going_away_ends_every_process_without_a_traceback() -> None:
    proc = _started(["-V", "-j", "2", str(CAPTURES / "rxe-nvme-rdma-loss-after.pcap.gz")], 5)
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.read(200_000)
    workers = _workers_of(proc)
    proc.stdout.close()
    assert proc.wait(timeout=120) in (0, -signal.SIGPIPE)      # the CLI dies quietly of SIGPIPE, as head's writers
    assert proc.stderr.read() == b""
    _gone(workers)


def _running(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"      # a zombie has ended (its parent reaps it)


def _gone(pids: list[int]) -> None:
    """The processes end within seconds (a reaped one at once; an orphan by its parent-death signal)."""
    for _ in range(200):
        alive = [pid for pid in pids if _running(pid)]
        if not alive:
            return
        time.sleep(0.05)
    raise AssertionError(f"still running: {alive}")


def test_interrupt_ends_every_process_with_130() -> None:
    proc = _started(["-V", "-j", "2", str(CAPTURES / "rxe-nvme-rdma-loss-after.pcap.gz")], 5, new_session=True)
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.read(100_000)
    workers = _workers_of(proc)
    os.killpg(proc.pid, signal.SIGINT)        # Ctrl-C: the terminal signals the whole process group
    proc.stdout.read()
    assert proc.wait(timeout=120) == 130
    assert proc.stderr.read() == b""
    _gone(workers)


def test_a_killed_process_leaves_its_packets_to_the_first() -> None:
    proc = _started(["-V", "-j", "2", "-c", "3000", str(CAPTURES / "rxe-nvme-rdma-loss-after.pcap.gz")], 50)
    assert proc.stdout is not None and proc.stderr is not None
    head = proc.stdout.read(300_000)
    workers = _workers_of(proc)
    for pid in workers:
        os.kill(pid, signal.SIGKILL)
    rest = proc.stdout.read()
    assert proc.wait(timeout=300) == 0
    frames = [int(line.split(b":", 1)[0][6:]) for line in (head + rest).split(b"\n") if line.startswith(b"Frame ")]
    assert frames == list(range(1, 3001))
    assert proc.stderr.read() == (b"rdmaspy: decode: 1 of the 2 printing processes ended early; this one printed "
                                  b"their packets\n")


def test_a_capture_that_cannot_be_read_is_one_line_with_its_other_processes_stopped_at_once(tmp_path: Path) -> None:
    garbage = tmp_path / "garbage.pcap"
    garbage.write_bytes(bytes(range(256)) * 64)
    for _ in range(5):          # the first stops the others as they start: no run may print from them
        res = _decode(["-V", "-j", "3", str(garbage)])
        assert res.returncode == 1
        assert res.stdout == b""
        assert res.stderr.count(b"\n") == 1 and res.stderr.startswith(b"rdmaspy: error: "), res.stderr
