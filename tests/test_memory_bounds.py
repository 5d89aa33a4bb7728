"""Values from the wire never decide how much memory rdmaspy takes (issue: a 3-frame capture took 7.9 GB).

Each hostile capture goes through every command in this process with tracemalloc on; the peak must stay
within a constant factor of the capture's size plus a fixed allowance.  The shapes: Write list and Reply
chunk segments written 1 MiB, 1 GiB, 4 GiB past their offset and reported 2^31-1 and 2^32-1 bytes long
(tests/fixtures/hostile_build.py); 20,000 queue pairs of one SEND each; thousands of unanswered calls.
"""
from __future__ import annotations

import contextlib
import io
import os
import sys
import tracemalloc
from pathlib import Path

import pytest

from conftest import FIXTURES, ROOT

sys.path.insert(0, str(FIXTURES))
import hostile_build  # noqa: E402

from rdmaspy import craft  # noqa: E402
from rdmaspy.cli import main  # noqa: E402

FACTOR = 400                  # bytes held per byte captured, at most (generous: the tree and JSON of a packet)
ALLOWANCE = 24 << 20          # what any run may take whatever the capture (tables, buffers, caches)
COMMANDS = {
    "decode": ["decode"], "tree": ["decode", "-V"], "json": ["decode", "-T", "json"],
    "flows": ["flows", "-o", "{out}"], "expert": ["expert"], "stats": ["stats"],
    "conversations": ["conversations"], "annotate": ["annotate", "-o", "{out}"],
}


def peak_of(argv: list[str], tmp: Path) -> tuple[int, int]:
    """(exit code, peak bytes traced) of one command run in this process, its output discarded."""
    out = str(tmp / "out")
    args = [out if a == "{out}" else a for a in argv]
    sink = io.TextIOWrapper(io.BytesIO(), encoding="utf-8")
    with contextlib.redirect_stdout(sink), contextlib.redirect_stderr(io.StringIO()):
        main(args)                       # once to load what a run loads (modules, tables)
        tracemalloc.start()
        try:
            rc = main(args)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
    if os.path.exists(out):
        os.unlink(out)
    return rc, peak


@pytest.mark.parametrize("name", sorted(hostile_build.FIXTURE_BUILDERS))
@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_claimed_lengths_and_offsets_cost_nothing(name, command, tmp_path):
    path = FIXTURES / name
    rc, peak = peak_of([*COMMANDS[command], str(path)], tmp_path)
    assert rc == 0
    assert peak < FACTOR * path.stat().st_size + ALLOWANCE, f"{command} {name}: {peak >> 20} MiB"


def test_hostile_fixtures_are_what_the_builder_makes(tmp_path):
    for p in hostile_build.build(tmp_path):
        assert p.read_bytes() == (FIXTURES / p.name).read_bytes(), p.name


def test_a_write_outside_its_segment_is_a_finding_not_a_rebuild():
    from rdmaspy.commands.expert import collect
    _cap, _frames, groups = collect(str(FIXTURES / "hostile_write_list.pcap"))
    rules = {g.rule for g in groups}
    assert {"chunk.write_overrun", "chunk.write_length_mismatch"} <= rules


def _pcap(tmp: Path, name: str, frames) -> Path:
    path = tmp / name
    craft.write_pcap(str(path), frames)
    return path


def test_twenty_thousand_queue_pairs_cost_what_they_hold(tmp_path):
    """20,000 empty SEND Only to distinct QPs (1.5 MB): 4 GB before the PSN state grew on use."""
    path = _pcap(tmp_path, "qps.pcap", hostile_build.qps(20_000))
    rc, peak = peak_of(["expert", str(path)], tmp_path)
    assert rc == 0
    assert peak < 100 * path.stat().st_size + ALLOWANCE, f"{peak >> 20} MiB"


@pytest.mark.parametrize("command", ["tree", "flows", "stats", "annotate"])
def test_many_queue_pairs_through_every_analysing_command(command, tmp_path):
    path = _pcap(tmp_path, "qps.pcap", hostile_build.qps(3000))
    rc, peak = peak_of([*COMMANDS[command], str(path)], tmp_path)
    assert rc == 0
    assert peak < FACTOR * path.stat().st_size + ALLOWANCE, f"{command}: {peak >> 20} MiB"


def test_unanswered_calls_stay_within_the_memory_budget(tmp_path):
    """Open transactions past the budget are given up oldest first, with a finding, and decoding goes on."""
    path = _pcap(tmp_path, "calls.pcap", hostile_build.unanswered_calls(12_000))
    from rdmaspy.commands.expert import collect
    from rdmaspy import budget
    budget.configure(4 << 20)
    try:
        _cap, frames, groups = collect(str(path))
    finally:
        budget.configure(None)
    assert frames == 12_000
    by_rule = {g.rule: g for g in groups}
    assert by_rule["transaction.no_reply"].count == 12_000     # every call still reported
    shed = by_rule["memory.budget"]
    assert shed.items and "open RPC transactions" in shed.items[0][1]


def test_unanswered_calls_take_linear_time(tmp_path):
    """Giving up the oldest calls past the per-connection limit is not quadratic: 4x the calls, ~4x the time."""
    import time

    from rdmaspy.analysis import transactions
    from rdmaspy.analysis.analyzer import Analyzer
    from rdmaspy.engine import Engine
    from rdmaspy.readers import open_capture

    def once(path) -> float:
        engine = Engine()
        an = Analyzer(keep_findings=False, budget=engine.session.budget)
        t = time.process_time()         # this process's CPU: other work on a shared machine does not count
        with open_capture(str(path)) as cap:
            for frame in cap:
                an.feed(engine.dissect(frame))
        an.finish()
        return time.process_time() - t

    def run(n: int) -> float:
        path = _pcap(tmp_path, f"c{n}.pcap", hostile_build.unanswered_calls(n))
        return min(once(path) for _ in range(3))

    limit = transactions._OPEN_LIMIT
    transactions._OPEN_LIMIT = 256
    try:
        run(500)                        # warm: imports, tables and caches are made once
        small, large = run(2000), run(8000)
    finally:
        transactions._OPEN_LIMIT = limit
    # Linear: 4x the calls cost about 4x; quadratic giving-up cost 16x and more.
    assert large < 8 * small


def test_out_of_memory_is_one_line_on_every_command(tmp_path):
    """Under an address-space limit too small for the capture, each command ends with one clear line."""
    import resource
    import subprocess

    # 20,000 queue pairs: each one's state is kept to the end of the capture (20,000 unanswered calls
    # no longer are: past CALL_WINDOW later calls they are closed, so they fit in the limit)
    path = _pcap(tmp_path, "qps.pcap", hostile_build.qps(20_000))
    limit = 64 << 20

    def cap() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    ran_out = 0
    for command, argv in COMMANDS.items():
        args = [tmp_path / "out" if a == "{out}" else a for a in argv]
        res = subprocess.run([sys.executable, "-m", "rdmaspy", *map(str, args), str(path)], preexec_fn=cap,
                             capture_output=True, text=True, timeout=300)
        if res.returncode == 0:
            continue
        assert res.stderr == "rdmaspy: error: out of memory\n", (command, res.stderr[-2000:])
        ran_out += 1
    assert ran_out >= 3, ran_out          # the limit is low enough to matter


def test_out_of_memory_closes_the_runs_generators_before_its_one_line(monkeypatch, capsys):
    """A reader's generator still open when memory runs out is closed in the handler, with standard error
    kept quiet: closing it later, after the line, is when CPython printed its failure to close."""
    from rdmaspy.commands import stats

    said: list[str] = []

    def frames():
        try:
            yield 1
        finally:
            said.append("closed")
            print("closing a generator", file=sys.stderr)
            raise MemoryError

    def gather(*args):
        held = frames()
        next(held)
        raise MemoryError

    monkeypatch.setattr(stats, "gather", gather)
    assert main(["stats", str(ROOT / "captures" / "rxe-nfsv3-rdma.pcap")]) == 1
    assert said == ["closed"]
    assert capsys.readouterr().err == "rdmaspy: error: out of memory\n"


def test_a_system_call_out_of_memory_is_the_same_one_line(monkeypatch, capsys):
    """ENOMEM from a system call (a directory read under an address-space limit) is out of memory too."""
    import errno

    from rdmaspy.commands import stats

    def gather(*args):
        raise OSError(errno.ENOMEM, os.strerror(errno.ENOMEM), "/tmp/rdmaspy-flows-1-x")

    monkeypatch.setattr(stats, "gather", gather)
    assert main(["stats", str(ROOT / "captures" / "rxe-nfsv3-rdma.pcap")]) == 1
    assert capsys.readouterr().err == "rdmaspy: error: out of memory\n"


@pytest.mark.parametrize("name", ["rxe-nfsv3-rdma.pcap", "rpcrdma_v1_shapes.pcap", "hostile_write_list.pcap"])
def test_annotate_spooling_its_comments_writes_the_same_file(name, tmp_path, monkeypatch):
    """Comments past the in-memory run go to sorted temporary runs merged in frame order: same output."""
    from conftest import capture

    from rdmaspy.commands import annotate as A
    path = str(capture(name))
    A.annotate(path, str(tmp_path / "held.pcapng"))
    monkeypatch.setattr(A, "_RUN", 7)
    A.annotate(path, str(tmp_path / "spooled.pcapng"))
    assert (tmp_path / "held.pcapng").read_bytes() == (tmp_path / "spooled.pcapng").read_bytes()


def test_annotate_memory_stays_bounded_with_many_unanswered_calls(tmp_path, monkeypatch):
    """Annotate holds no more than the analysis it runs (as stats does): its comments are spooled."""
    from rdmaspy.commands import annotate as A
    monkeypatch.setattr(A, "_RUN", 1024)
    path = _pcap(tmp_path, "calls.pcap", hostile_build.unanswered_calls(12_000))
    _rc, peak_stats = peak_of(["stats", str(path)], tmp_path)
    _rc, peak = peak_of(["annotate", "-o", "{out}", str(path)], tmp_path)
    assert peak < peak_stats + (3 << 20), (peak_stats >> 20, peak >> 20)


@pytest.mark.parametrize("limit_name", ["RLIMIT_AS", "RLIMIT_DATA"])
def test_json_probes_the_room_wherever_a_limit_can_fail_an_allocation(limit_name):
    """jsonout.dumps probes the room orjson needs only where an allocation can fail: under a limit of the
    address space or of the data, it can (and the probe runs); with neither (and the kernel's usual
    accounting), the answer is the kernel's."""
    import resource
    import subprocess

    limit = getattr(resource, limit_name)

    def cap() -> None:
        hard = resource.getrlimit(limit)[1]
        resource.setrlimit(limit, (4 << 30 if hard == resource.RLIM_INFINITY else hard, hard))

    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    code = "from rdmaspy.output.jsonout import allocations_can_fail as f; print(f())"
    res = subprocess.run([sys.executable, "-P", "-c", code], preexec_fn=cap, capture_output=True, text=True,
                         timeout=120, env=env)
    assert res.stdout == "True\n", res.stderr[-2000:]
    strict = Path("/proc/sys/vm/overcommit_memory").read_text().strip() == "2"
    free = subprocess.run([sys.executable, "-P", "-c", code], capture_output=True, text=True, timeout=120, env=env)
    unlimited = all(resource.getrlimit(r)[0] == resource.RLIM_INFINITY
                    for r in (resource.RLIMIT_AS, resource.RLIMIT_DATA))
    if unlimited:
        assert free.stdout == f"{strict}\n", free.stderr[-2000:]


def test_json_out_of_memory_is_one_line_every_time(tmp_path):
    """orjson crashes (SIGSEGV) when an allocation fails inside it: out of memory while a packet's JSON is
    made must still be the one line.  Where the limit is hit differs from run to run, so several runs (one
    run in two crashed before jsonout.dumps probed the room first)."""
    import resource
    import subprocess

    path = _pcap(tmp_path, "qps.pcap", hostile_build.qps(20_000))
    limit = 64 << 20

    def cap() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    env = {**os.environ, "PYTHONPATH": str(ROOT)}     # the package under test, from any directory
    for _ in range(10):
        res = subprocess.run([sys.executable, "-P", "-m", "rdmaspy", "decode", "-T", "json", str(path)],
                             preexec_fn=cap, capture_output=True, text=True, timeout=300, cwd=tmp_path, env=env)
        assert (res.returncode, res.stderr) == (1, "rdmaspy: error: out of memory\n"), (res.returncode,
                                                                                       res.stderr[-2000:])
