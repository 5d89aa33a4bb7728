"""``export --workers N`` / ``--cluster``: the shards on Dask give the tables of one process exactly
(ordered by frame), and their transactions and findings are those of ``flows`` and ``expert``."""
from __future__ import annotations

import glob
import json
import signal
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from conftest import CAPTURES

sys.path.insert(0, str(Path(__file__).resolve().parent / "fixtures"))

import analysis_build as ab  # noqa: E402
import scale_build as sb  # noqa: E402

from rdmaspy import cli  # noqa: E402
from rdmaspy.output.parquet import TABLES  # noqa: E402
from rdmaspy.scale import parallel  # noqa: E402
from rdmaspy.scale.source import ChainedCapture  # noqa: E402

# Sort keys that order every table the same way whichever shard wrote a row.
KEYS = {"packets": ["frame"], "transactions": ["first_frame", "call_frame", "connection", "xid"],
        "segments": ["call_frame", "list", "chunk", "segment"],
        "credits": ["connection", "direction", "frame", "time", "outstanding", "granted", "requested"],
        "connections": ["connection"],
        "findings": ["frame", "origin", "rule", "message", "severity", "connection"]}


@pytest.fixture(autouse=True)
def short_slices(monkeypatch):
    """Time slices of a few hundred frames, so that the small captures of the tests are cut too."""
    monkeypatch.setattr(parallel, "MIN_SLICE_FRAMES", 300)


@pytest.fixture(scope="module")
def cluster():
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                                  memory_limit=0) as lc:
        yield lc.scheduler_address


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("built")
    return {"many-hosts": ab.write(d / "many.pcap", sb.many_hosts(64)),
            "one-connection": ab.write(d / "one.pcap", sb.one_connection(120))}


def _tables(d: Path) -> dict[str, pa.Table]:
    out = {}
    for t in TABLES:
        files = sorted(glob.glob(str(d / f"{t}.parquet")) + glob.glob(str(d / f"{t}-*.parquet")))
        out[t] = pq.read_table(files).sort_by([(k, "ascending") for k in KEYS[t]]).combine_chunks()
    return out


def _export(path: Path, out: Path, *extra: str) -> dict[str, pa.Table]:
    assert cli.main(["export", str(path), "-o", str(out), "-q", *extra]) == 0
    return _tables(out)


def _same(a: dict[str, pa.Table], b: dict[str, pa.Table]) -> None:
    for t in TABLES:
        assert a[t].schema == b[t].schema, t
        assert a[t].num_rows == b[t].num_rows, t
        differ = [c for c in a[t].column_names if not a[t][c].equals(b[t][c])]
        assert not differ, (t, differ)


def _check(path: Path, tmp_path: Path, cluster: str) -> dict[str, pa.Table]:
    one = _export(path, tmp_path / "w1", "--workers", "1")
    for n in ("2", "8"):
        _same(one, _export(path, tmp_path / f"w{n}", "--workers", n, "--cluster", cluster))
    return one


@pytest.mark.parametrize("name", sorted(p.name for p in CAPTURES.glob("*.pcap")))
def test_shipped_capture_same_tables_with_1_2_8_workers(name, tmp_path, cluster, capsys):
    _flows_and_expert_agree(CAPTURES / name, _check(CAPTURES / name, tmp_path, cluster), tmp_path, capsys)


def test_many_hosts_are_dealt_to_shards_and_give_the_same_tables(built, tmp_path, cluster):
    plan = parallel.make_plan([str(built["many-hosts"])], 8)
    assert plan.shards == 8 and len(plan.assignment) == 64 and max(plan.loads) - min(plan.loads) < 200
    one = _check(built["many-hosts"], tmp_path, cluster)
    assert one["connections"].num_rows == 64 and len(glob.glob(str(tmp_path / "w8" / "packets-*.parquet"))) == 8


def test_one_connection_gives_the_same_tables(built, tmp_path, cluster):
    one = _check(built["one-connection"], tmp_path, cluster)
    assert one["connections"].num_rows == 1 and one["transactions"].num_rows > 400


def test_one_connection_is_cut_into_time_slices_whose_tasks_write_its_packets(built, tmp_path, cluster):
    one = _export(built["one-connection"], tmp_path / "w1", "--workers", "1")
    two = _export(built["one-connection"], tmp_path / "w2", "--workers", "2", "--cluster", cluster)
    slices = sorted(glob.glob(str(tmp_path / "w2" / "packets-0000-*.parquet")))
    # a few thousand frames in slices of at least 300: 8 slices (4 a worker), each with its packets
    assert len(slices) == 8 and all(pq.read_metadata(f).num_rows > 250 for f in slices)
    assert pq.read_metadata(str(tmp_path / "w2" / "packets-0000.parquet")).num_rows == 0
    _same(one, two)


def test_a_few_hosts_on_more_workers_are_sharded_and_sliced_with_the_same_tables(tmp_path, cluster, monkeypatch):
    monkeypatch.setattr(parallel, "MIN_SLICE_FRAMES", 30)          # 3 conversations of some 45 frames
    path = ab.write(tmp_path / "three.pcap", sb.many_hosts(3))
    plan = parallel.make_plan([str(path)], 8)
    assert plan.shards == 3 and len(parallel.slice_cuts(plan, 8)) == 3
    one = _export(path, tmp_path / "w1", "--workers", "1")
    eight = _export(path, tmp_path / "w8", "--workers", "8", "--cluster", cluster)
    assert glob.glob(str(tmp_path / "w8" / "packets-0002-0001.parquet"))
    _same(one, eight)


def test_a_state_that_cannot_be_pickled_leaves_the_packets_to_the_shards_task(built, tmp_path, monkeypatch):
    """mypyc's classes cannot be read back: nothing is handed after slice 0, the answer is the same."""
    path = [str(built["one-connection"])]
    plan = parallel.make_plan(path, 2)
    plan.cuts = parallel.slice_cuts(plan, 2)
    staging = tmp_path / "staging"
    staging.mkdir()
    monkeypatch.setattr(parallel, "_pickled_state", lambda pipe: None)
    shard = parallel.run_shard(path, 0, plan.assignment, str(staging), plan.cuts, plan.files)
    slices = [parallel.run_slice(path, 0, plan.assignment, str(staging), k, lo, hi, plan.files)
              for k, (lo, hi) in enumerate(plan.slices())]
    assert shard.handed == 1 and [bool(s.rows) for s in slices] == [True] + [False] * (len(slices) - 1)
    lo, hi = plan.slices()[0]
    assert slices[0].frames == hi and shard.rows["packets"] == plan.frames - hi
    # slice 0's packets, their expert items counted with the analysis' (which the shard's task ran)
    lookup = parallel.connection_numbers([shard])[0]
    items = {f: n for f, n in shard.analysis_items.items() if f <= hi}
    parallel.renumber_part(str(staging / "packets-0000-0000.parquet"), str(tmp_path / "s0.parquet"), lookup, items)
    parallel.renumber_part(str(staging / "packets-0000.parquet"), str(tmp_path / "s.parquet"), lookup)
    got = pq.read_table([str(tmp_path / "s0.parquet"), str(tmp_path / "s.parquet")])
    one = _export(built["one-connection"], tmp_path / "w1", "--workers", "1")
    assert got.sort_by("frame").equals(one["packets"])


class _InProcess:
    """The engine's ``map`` run in this process."""

    def map(self, fn, calls):
        return [fn(*args) for args in calls]


def test_a_shard_whose_memory_budget_gave_up_state_is_made_again_without_slices(built, tmp_path):
    path = [str(built["one-connection"])]
    plan = parallel.make_plan(path, 2)
    plan.cuts = parallel.slice_cuts(plan, 2)
    staging = tmp_path / "staging"
    staging.mkdir()
    shard = parallel.run_shard(path, 0, plan.assignment, str(staging), plan.cuts, plan.files)
    slices = [parallel.run_slice(path, 0, plan.assignment, str(staging), k, lo, hi, plan.files)
              for k, (lo, hi) in enumerate(plan.slices())]
    assert shard.handed == len(slices) and not shard.shed and not any(s.shed for s in slices)
    slices[3].shed = True             # as a slice reports when the budget gave up state in it
    results, kept = parallel._redo_shed(_InProcess(), [shard], slices, path, plan, str(staging))
    assert kept == [] and results[0].handed == 0 and results[0].rows["packets"] == plan.frames
    assert sorted(p.name for p in staging.iterdir()) == sorted(f"{t}-0000.parquet" for t in TABLES)


def test_a_slice_whose_export_ended_without_its_state_stops_waiting(built, tmp_path):
    """The shard's task failed and the export removed its staging directory: the slice's task ends."""
    path = [str(built["one-connection"])]
    plan = parallel.make_plan(path, 2)
    plan.cuts = parallel.slice_cuts(plan, 2)
    lo, hi = plan.slices()[2]
    done = parallel.run_slice(path, 0, plan.assignment, str(tmp_path / "gone"), 2, lo, hi, plan.files)
    assert done.rows == {} and done.frames == 0


def _ring(frames: list[tuple[int, bytes]], directory: Path, files: int) -> list[str]:
    """The capture cut into ``files`` files, as ``capture -b`` leaves a ring buffer."""
    directory.mkdir()
    step = -(-len(frames) // files)
    return [str(ab.write(directory / f"ring_{i:05d}.pcap", frames[i * step:(i + 1) * step])) for i in range(files)]


def test_a_ring_buffer_is_counted_and_sliced_file_by_file_with_the_same_tables(tmp_path, cluster):
    ring = _ring(sb.one_connection(120), tmp_path / "ring", 3)
    assert cli.main(["export", *ring, "-o", str(tmp_path / "w1"), "-q", "--workers", "1"]) == 0
    one = _tables(tmp_path / "w1")
    assert sorted(set(one["packets"]["file"].to_pylist())) == ring
    for n in ("2", "8"):
        assert cli.main(["export", *ring, "-o", str(tmp_path / f"w{n}"), "-q", "--workers", n,
                         "--cluster", cluster]) == 0
        _same(one, _tables(tmp_path / f"w{n}"))


def test_a_slice_reads_only_the_files_that_hold_its_frames(tmp_path):
    ring = _ring(sb.one_connection(30), tmp_path / "ring", 3)
    counts = [parallel.count_file(p)[0] for p in ring]
    whole = [(f.num, f.data) for f in ChainedCapture(ring)]
    Path(ring[0]).unlink()            # the first file is not opened for frames after it
    lo, hi = counts[0] + 5, counts[0] + counts[1] + 7
    cap = ChainedCapture(ring, counts)
    got = [(f.num, f.data) for f in cap.between(lo, hi)]
    assert got == whole[lo:hi] and cap.file_of(hi) == ring[2] and cap.file_of(lo + 1) == ring[1]


def test_a_local_cluster_of_workers_by_default_engine(built, tmp_path):
    """--workers 2 without an address starts its own local cluster."""
    one = _export(built["many-hosts"], tmp_path / "a", "--workers", "1")
    _same(one, _export(built["many-hosts"], tmp_path / "b", "--workers", "2"))
    manifest = json.loads((tmp_path / "b" / "rdmaspy-export.json").read_text())
    assert manifest["workers"] == 2 and manifest["frames"] == one["packets"].num_rows


def _flows_and_expert_agree(path: Path, tables: dict[str, pa.Table], tmp_path: Path, capsys) -> None:
    """The tables' transactions are those of ``flows``, their findings those of ``expert``."""
    flows = tmp_path / "flows.json"
    assert cli.main(["flows", str(path), "-o", str(flows)]) in (0, 2)
    doc = json.loads(flows.read_text())
    want = sorted((t["conn"], t["xid"], t["call"]["frame"], t["reply"]["frame"] if t["reply"] else None, t["state"])
                  for c in doc["connections"] for t in c["transactions"])
    got = sorted((t["connection"], t["xid"], t["call_frame"], t["reply_frame"], t["state"])
                 for t in tables["transactions"].select(["connection", "xid", "call_frame", "reply_frame",
                                                         "state"]).to_pylist())
    assert got == want and len(got) == doc["summary"]["transactions"]
    capsys.readouterr()
    assert cli.main(["expert", "-T", "json", str(path)]) in (0, 2)
    expert = json.loads(capsys.readouterr().out)
    want_f = sorted(((g["rule"], tuple(f["frames"]), f["conn"], f["xid"]) for g in expert["groups"]
                     for f in g["findings"]), key=repr)
    got_f = sorted(((f["rule"], tuple(f["frames"]), f["connection"], f["xid"]) for f in
                    tables["findings"].select(["rule", "frames", "connection", "xid"]).to_pylist()), key=repr)
    assert got_f == want_f


@pytest.mark.parametrize("which", ["many-hosts", "one-connection"])
def test_parallel_transactions_and_findings_are_flows_and_expert(built, tmp_path, capsys, cluster, which):
    path = built[which]
    tables = _export(path, tmp_path / "p", "--workers", "2", "--cluster", cluster)
    assert tables["transactions"].num_rows and tables["findings"].num_rows
    _flows_and_expert_agree(path, tables, tmp_path, capsys)


def test_an_unreachable_cluster_is_one_line(tmp_path, capsys, built, monkeypatch):
    monkeypatch.setattr(parallel, "CONNECT_TIMEOUT", "1s")
    rc = cli.main(["export", str(built["many-hosts"]), "-o", str(tmp_path / "x"), "--cluster", "tcp://127.0.0.1:9"])
    err = capsys.readouterr().err
    assert rc == 1 and err.count("\n") == 1 and "cannot reach the cluster" in err


def test_a_damaged_capture_is_reported_once_and_exported_up_to_the_damage(built, tmp_path, capsys, cluster):
    data = built["many-hosts"].read_bytes()
    cut = tmp_path / "cut.pcap"
    cut.write_bytes(data[:len(data) * 2 // 3 + 7])
    assert cli.main(["export", str(cut), "-o", str(tmp_path / "a"), "-q", "--workers", "1"]) == 2
    one_err = capsys.readouterr().err
    assert cli.main(["export", str(cut), "-o", str(tmp_path / "b"), "-q", "--workers", "2", "--cluster", cluster]) == 2
    err = capsys.readouterr().err
    assert err == one_err and err.count("\n") == 1 and "warning" in err
    _same(_tables(tmp_path / "a"), _tables(tmp_path / "b"))


def test_the_engine_ignores_sigpipe_while_open_and_restores_it(cluster):
    """The command line sets SIGPIPE to die quietly under ``| head``; with the engine's sockets open
    that would let a closing worker kill the whole run (exit 141), so the engine ignores it meanwhile."""
    before = signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    try:
        engine = parallel._Engine(1, cluster)
        try:
            assert signal.getsignal(signal.SIGPIPE) == signal.SIG_IGN
        finally:
            engine.close()
        assert signal.getsignal(signal.SIGPIPE) == signal.SIG_DFL
    finally:
        signal.signal(signal.SIGPIPE, before)


def test_a_shard_task_names_every_part_file_of_a_long_table(tmp_path, monkeypatch):
    """A table longer than ROW_GROUPS_PER_FILE row groups goes on in further files; the shard's task
    names them all (the export copies and renumbers each), and together they hold every row."""
    from rdmaspy.output import parquet as pqout
    monkeypatch.setattr(pqout, "ROW_GROUPS_PER_FILE", 2)
    monkeypatch.setitem(pqout.BATCHES, "packets", 500)
    path = str(CAPTURES / "rxe-nfsv3-rdma.pcap")
    staging = tmp_path / "staging"
    staging.mkdir()
    r = parallel.run_shard([path], 0, {}, str(staging))
    assert r.files["packets"] == ["packets-0000.parquet", "packets-0000.1.parquet", "packets-0000.2.parquet"]
    assert sorted(p.name for p in staging.iterdir()) == sorted(f for fs in r.files.values() for f in fs)
    rows = sum(pq.ParquetFile(staging / f).metadata.num_rows for f in r.files["packets"])
    assert rows == r.rows["packets"] == r.frames


def test_the_local_cluster_workers_keep_no_profile_of_their_tasks():
    """A Dask worker's profiler keeps a sample tree of every second of a task (up to 1,000 of them): a
    shard's task of several minutes would grow its worker's memory with the file's length."""
    pytest.importorskip("distributed")
    engine = parallel._Engine(1, None)
    try:
        callbacks = engine.client.run(lambda dask_worker: sorted(dask_worker.periodic_callbacks))
        assert callbacks and all("profile" not in names and "profile-cycle" not in names
                                 for names in callbacks.values())
    finally:
        engine.close()
