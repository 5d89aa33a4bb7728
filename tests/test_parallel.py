"""``export --workers N`` / ``--cluster``: the shards on Dask give the tables of one process exactly
(ordered by frame), and their transactions and findings are those of ``flows`` and ``expert``."""
from __future__ import annotations

import glob
import json
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

# Sort keys that order every table the same way whichever shard wrote a row.
KEYS = {"packets": ["frame"], "transactions": ["first_frame", "call_frame", "connection", "xid"],
        "segments": ["call_frame", "list", "chunk", "segment"],
        "credits": ["connection", "direction", "frame", "time", "outstanding", "granted", "requested"],
        "connections": ["connection"],
        "findings": ["frame", "origin", "rule", "message", "severity", "connection"]}


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
