"""``rdmaspy export``: Parquet tables from the one pipeline, typed, in bounded row groups, checked
against tshark (the header columns), ``flows`` (transactions) and ``expert`` (findings)."""
from __future__ import annotations

import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from conftest import capture, tshark_fields, tshark_int

from rdmaspy import cli
from rdmaspy.output import parquet as pqout

NFS = "rxe-nfsv3-rdma.pcap"
IWARP = "siw-nfsv3-rdma.pcap"


def _export(tmp_path, *names: str, extra: tuple[str, ...] = ()) -> tuple[str, dict]:
    out = tmp_path / "tables"
    assert cli.main(["export", *[str(capture(n)) for n in names], "-o", str(out), "-q", *extra]) == 0
    manifest = json.loads((out / pqout.MANIFEST).read_text())
    return str(out), manifest


def _table(d: str, name: str) -> pa.Table:
    return pq.read_table(f"{d}/{name}.parquet")


def test_every_table_is_written_with_its_versioned_schema(tmp_path):
    d, manifest = _export(tmp_path, NFS)
    assert manifest["format"] == "rdmaspy-export" and manifest["version"] == pqout.SCHEMA_VERSION
    for name, schema in pqout.SCHEMAS.items():
        t = _table(d, name)
        assert t.schema.remove_metadata() == schema, name
        assert t.schema.metadata[b"rdmaspy.schema"] == b"rdmaspy-export-1"
        assert manifest["rows"][name] == t.num_rows
    tx = _table(d, "transactions")
    assert tx.schema.field("xid").type == pa.uint32() and tx.schema.field("call_time").type == pa.timestamp("ns", "UTC")


def test_packets_are_every_frame_with_tshark_header_fields(tmp_path):
    d, manifest = _export(tmp_path, NFS)
    rows = _table(d, "packets").to_pylist()
    ref = tshark_fields(capture(NFS), ["frame.number", "infiniband.bth.opcode", "infiniband.bth.destqp",
                                       "infiniband.bth.psn", "ip.src", "udp.dstport"])
    assert [r["frame"] for r in rows] == [int(t["frame.number"][0]) for t in ref] == list(range(1, len(ref) + 1))
    assert manifest["frames"] == len(ref)
    checked = 0
    for r, t in zip(rows, ref):
        if t["infiniband.bth.opcode"]:
            assert r["bth_opcode"] == tshark_int(t["infiniband.bth.opcode"][0])
            assert r["bth_destqp"] == tshark_int(t["infiniband.bth.destqp"][0])
            assert r["bth_psn"] == tshark_int(t["infiniband.bth.psn"][0])
            checked += 1
        if t["ip.src"]:
            assert r["ip_src"] == t["ip.src"][0] and r["udp_dstport"] == tshark_int(t["udp.dstport"][0])
    assert checked > 2000
    assert {r["connection"] for r in rows if r["bth_opcode"] is not None and r["bth_destqp"] != 1} == {1}


def _flows_transactions(tmp_path, name: str) -> list[tuple]:
    out = tmp_path / "flows.json"
    assert cli.main(["flows", str(capture(name)), "-o", str(out)]) == 0
    doc = json.loads(out.read_text())
    rows = [(t["conn"], t["xid"], t["call"]["frame"], t["reply"]["frame"] if t["reply"] else None, t["state"],
             len(t["steps"]), len(t["chunks"])) for c in doc["connections"] for t in c["transactions"]]
    return sorted(rows, key=repr)


def _expert_findings(name: str, capsys) -> list[tuple]:
    capsys.readouterr()
    assert cli.main(["expert", "-T", "json", str(capture(name))]) == 0
    doc = json.loads(capsys.readouterr().out)
    rows = [(g["rule"], tuple(f["frames"]), f["conn"], f["xid"]) for g in doc["groups"] for f in g["findings"]]
    return sorted(rows, key=repr)


@pytest.mark.parametrize("name", [NFS, IWARP, "rxe-nfsv42-rdma.pcap"])
def test_transactions_and_findings_are_those_of_flows_and_expert(tmp_path, capsys, name):
    d, _m = _export(tmp_path, name)
    segments: dict[int, int] = {}
    for s in _table(d, "segments").to_pylist():
        segments[s["call_frame"]] = segments.get(s["call_frame"], 0) + 1
    mine = [(t["connection"], t["xid"], t["call_frame"], t["reply_frame"], t["state"], len(t["steps"]),
             segments.get(t["call_frame"], 0)) for t in _table(d, "transactions").to_pylist()]
    assert sorted(mine, key=repr) == _flows_transactions(tmp_path, name)
    fi = [(f["rule"], tuple(f["frames"]), f["connection"], f["xid"]) for f in _table(d, "findings").to_pylist()]
    assert sorted(fi, key=repr) == _expert_findings(name, capsys)


def test_rows_go_out_in_bounded_row_groups(tmp_path):
    """The writer holds at most one batch of rows per table: a 2238-frame capture with batches of 500
    makes five row groups with the same rows as one batch."""
    from rdmaspy.pipeline import Options, Pipeline
    from rdmaspy.readers import open_capture
    sizes = []

    class Watch(pqout.ExportSink):
        def packet(self, pkt):
            super().packet(pkt)
            sizes.append(len(self.writers["packets"].columns[0]))

    with open_capture(str(capture(NFS))) as cap:
        Pipeline(cap, Options(analyze=True), [Watch(str(tmp_path / "small"), batch=500)]).run()
    assert max(sizes) <= 500
    small = pq.ParquetFile(tmp_path / "small" / "packets.parquet")
    assert small.metadata.num_row_groups == 5
    d, _m = _export(tmp_path, NFS)
    assert small.read().drop(["file"]).equals(_table(d, "packets").drop(["file"]))


def test_a_long_table_goes_on_in_further_files_that_query_reads_as_one(tmp_path, monkeypatch, capsys):
    """A file holds at most ROW_GROUPS_PER_FILE row groups (the writer keeps every row group's metadata
    until it closes a file): 2238 frames in batches of 500, two row groups a file, make three files."""
    from rdmaspy.pipeline import Options, Pipeline
    from rdmaspy.readers import open_capture
    monkeypatch.setattr(pqout, "ROW_GROUPS_PER_FILE", 2)
    out = tmp_path / "small"
    sink = pqout.ExportSink(str(out), batch=500)
    with open_capture(str(capture(NFS))) as cap:
        Pipeline(cap, Options(analyze=True), [sink]).run()
    assert sink.files["packets"] == ["packets.parquet", "packets.1.parquet", "packets.2.parquet"]
    groups = [pq.ParquetFile(out / f).metadata.num_row_groups for f in sink.files["packets"]]
    assert groups == [2, 2, 1]
    whole = pa.concat_tables(pq.read_table(out / f) for f in sink.files["packets"])
    d, _m = _export(tmp_path, NFS)
    assert whole.drop(["file"]).equals(_table(d, "packets").drop(["file"]))
    pytest.importorskip("duckdb")
    assert cli.main(["query", str(out), "SELECT count(*) AS n, max(frame) AS last FROM packets", "-T", "csv"]) == 0
    assert capsys.readouterr().out.split() == ["n,last", f"{whole.num_rows},{whole.num_rows}"]


def test_several_files_make_one_dataset_numbered_on(tmp_path):
    d, manifest = _export(tmp_path, NFS, IWARP)
    first, _m1 = _export(tmp_path / "a", NFS)
    n1 = _table(first, "packets").num_rows
    rows = _table(d, "packets").to_pylist()
    assert [r["frame"] for r in rows] == list(range(1, len(rows) + 1))
    assert {r["file"] for r in rows[:n1]} == {str(capture(NFS))}
    assert {r["file"] for r in rows[n1:]} == {str(capture(IWARP))}
    conns = _table(d, "connections").to_pylist()
    assert [(c["connection"], c["transport"]) for c in conns] == [(1, "ib"), (2, "iwarp")]
    assert conns[1]["first_frame"] > n1
    assert manifest["files"] == [str(capture(NFS)), str(capture(IWARP))]


def test_duckdb_reads_the_tables_as_they_are(tmp_path):
    duckdb = pytest.importorskip("duckdb")
    d, _m = _export(tmp_path, NFS)
    con = duckdb.connect()
    (n, xid_type), = con.sql(f"SELECT count(*), any_value(typeof(xid)) FROM '{d}/transactions.parquet'").fetchall()
    assert n == _table(d, "transactions").num_rows and xid_type == "UINTEGER"


def test_a_missing_input_is_one_line_and_writes_nothing(tmp_path, capsys):
    out = tmp_path / "t"
    assert cli.main(["export", str(capture(NFS)), str(tmp_path / "nope.pcap"), "-o", str(out)]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "nope.pcap" in err and not out.exists()


def test_the_documentation_names_every_column():
    from conftest import ROOT
    text = (ROOT / "docs" / "export.md").read_text()
    for name, schema in pqout.SCHEMAS.items():
        section = text.split(f"### `{name}`", 1)[1].split("\n### ", 1)[0]
        for col in schema.names:
            assert col in section, (name, col)
    for sub in pqout.STEP:
        assert f"`{sub.name}`" in text
