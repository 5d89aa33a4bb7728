"""``rdmaspy flows``: the JSON document and JSON Lines validate against the shipped schema."""
from __future__ import annotations

import hashlib
import json
import sys
from importlib import resources
from pathlib import Path

import jsonschema
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent / "fixtures"))

import analysis_build as ab  # noqa: E402

from rdmaspy import cli  # noqa: E402
from rdmaspy.analysis.model import Direction, Message, Transaction, UlpSummary  # noqa: E402
from rdmaspy.analysis.rpcrdma_facts import RpcRdmaFacts  # noqa: E402
from rdmaspy.output import flows as flows_mod  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
NFS_CAPTURES = ("rxe-nfsv3-rdma.pcap", "rxe-nfsv42-rdma.pcap", "rxe-nfsv3-concurrent.pcap", "siw-nfsv3-rdma.pcap")


def _schema() -> dict:
    return json.loads(resources.files("rdmaspy").joinpath("schemas/flows-1.json").read_text())


def _validator(ref: str | None = None) -> jsonschema.Draft202012Validator:
    schema = _schema()
    if ref is not None:
        schema = {**schema, "oneOf": [{"$ref": f"#/$defs/{ref}"}]}
    return jsonschema.Draft202012Validator(schema)


def test_schema_is_a_valid_json_schema_shipped_in_the_package():
    schema = _schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    assert schema["$id"] == flows_mod.SCHEMA_ID and "version 1 (revision 4)" in schema["title"]


# The document of revision 2 (before the upper layers shared one transaction shape), its "file" left out,
# as json.dumps writes it compactly: its SHA-256.  (Since revision 2 a reply that came through the Reply chunk
# gives its transaction's ``rpc`` the reply's status, as an inline one always did.)
REVISION_2_DIGESTS = {
    "rxe-nfsv3-rdma.pcap": "f8e96ad51fafb18728f44553a2d4ca66ff4b4cdfef903f763111e1008da281d7",
    "siw-nfsv3-rdma.pcap": "f6199a1bb60da0970d154fa195e96eef17d13d1ef1785cde4ae3f67e3ebc8de8",
}


def _without_revision_3(doc: dict) -> dict:
    """What revisions 3 and 4 added taken out of a document: the transactions' protocol, key, timing and
    expected bytes, the segments' access and invalidate, the connections' upper_layer (3); the transactions'
    nfs (4)."""
    for c in doc["connections"]:
        upper = c.pop("upper_layer")
        assert upper is None or upper["protocol"] == "rpcrdma"
        for t in c["transactions"]:
            for k in ("protocol", "key", "timing", "nfs"):
                t.pop(k)
            t["bytes"].pop("expected")
            for seg in t["chunks"]:
                seg.pop("access")
                seg.pop("invalidate")
    return doc


@pytest.mark.parametrize("name", sorted(REVISION_2_DIGESTS))
def test_revision_3_adds_to_an_rpc_document_and_changes_nothing_else(name, tmp_path):
    """Revision 3 is additive: an RPC-over-RDMA capture's document, the keys it added taken out, is byte for
    byte revision 2's (the same keys in the same order with the same values)."""
    out = tmp_path / "flows.json"
    assert cli.main(["flows", str(ROOT / "captures" / name), "-o", str(out)]) == 0
    doc = json.loads(out.read_text())
    txns = [t for c in doc["connections"] for t in c["transactions"]]
    assert txns and all(t["protocol"] == "rpcrdma" and t["key"] == t["xid"] for t in txns)
    doc.pop("file", None)
    text = json.dumps(_without_revision_3(doc), separators=(",", ":")).encode()
    assert hashlib.sha256(text).hexdigest() == REVISION_2_DIGESTS[name]


def test_a_reply_through_the_reply_chunk_gives_its_rpc_status(tmp_path):
    """A READDIRPLUS reply too long to go inline comes through the Reply chunk (RDMA_NOMSG): its transaction's
    RPC has the reply's status, from the message rebuilt from the chunk, as an inline reply's does."""
    out = tmp_path / "flows.json"
    assert cli.main(["flows", str(ROOT / "captures" / "rxe-nfsv3-rdma.pcap"), "-o", str(out)]) == 0
    txns = [t for c in json.loads(out.read_text())["connections"] for t in c["transactions"]]
    by_chunk = [t for t in txns if t["reply"] is not None and t["reply"]["proc"] == "RDMA_NOMSG"]
    assert {t["rpc"]["name"] for t in by_chunk} >= {"READDIRPLUS"}
    for t in by_chunk:
        assert t["rpc"]["reply_stat"] == 0 and t["rpc"]["accept_stat"] == 0, t["call"]["frame"]
    assert all(t["rpc"]["nfs_status"] == 0 for t in by_chunk if t["rpc"]["name"] == "READDIRPLUS")


@pytest.mark.parametrize("name", NFS_CAPTURES)
def test_flows_document_of_a_real_capture_validates(name, tmp_path):
    out = tmp_path / "flows.json"
    assert cli.main(["flows", str(ROOT / "captures" / name), "-o", str(out)]) == 0
    doc = json.loads(out.read_text())
    _validator("document").validate(doc)
    _validator().validate(doc)          # the schema as shipped: exactly one of its forms
    (conn,) = [c for c in doc["connections"] if c["rpcrdma"] is not None]
    assert conn["rpcrdma"]["transactions"] == len(conn["transactions"]) == doc["summary"]["transactions"]
    assert conn["setup"]["setup_known"] and conn["setup"]["inline_c2s"] == 4096
    assert conn["setup"]["pdata_server"]["remote_invalidate"] is False
    # the server's R=0 (docs/expert.md) and, for an NFSv4.1/4.2 session, the note of its slots beside the credits
    session = {"nfs.session_slots"} if "nfsv4" in name else set()
    assert {f["rule"] for f in conn["findings"]} == {"rpcrdma.invalidate_not_negotiated"} | session
    assert sum(doc["summary"]["findings"].values()) == len(conn["findings"]) + len(doc["findings"])
    series = conn["credits"]["forward"]["series"]
    assert series and [p[0] for p in series] == sorted(p[0] for p in series)


def test_flows_json_lines_validate_line_by_line(tmp_path, capsysbinary):
    frames = ab.scenario_v1(responder_read=True, reply_overrun=True)
    pcap = ab.write(tmp_path / "overrun.pcap", frames)
    assert cli.main(["flows", str(pcap), "-T", "jsonl"]) == 0
    lines = capsysbinary.readouterr().out.splitlines()
    objs = [json.loads(x) for x in lines]
    kinds = [o["kind"] for o in objs]
    assert kinds[0] == "connection" and kinds[-1] == "capture" and kinds.count("connection") == 1
    assert kinds.index("transaction") < kinds.index("credits") < kinds.index("finding")
    ref = {"connection": "connection_line", "transaction": "transaction_line", "credits": "credits_line",
           "finding": "finding_line", "capture": "capture"}
    for o in objs:
        _validator(ref[o["kind"]]).validate(o)
        _validator().validate(o)        # the schema as shipped: exactly one of its forms
    cid = objs[0]["id"]
    assert all(o["conn"] == cid for o in objs if o["kind"] in ("transaction", "credits"))
    rules = sorted(o["rule"] for o in objs if o["kind"] == "finding" and not o["rule"].startswith("ib."))
    assert rules == ["chunk.reply_overrun", "rpcrdma.responder_read_chunk"]
    t = next(o for o in objs if o["kind"] == "transaction" and o["xid"] == 0x1004)
    assert [f["rule"] for f in t["findings"]] == ["chunk.reply_overrun"]
    assert t["chunks"][0]["status"] == "overrun"
    assert objs[-1]["frames"] == len(frames)
    assert objs[-1]["summary"]["transactions"] == kinds.count("transaction")


def test_flows_json_lines_hold_what_the_document_holds(tmp_path, capsysbinary):
    """Every transaction, credit sample and finding of the document, one record a line."""
    path = str(ROOT / "captures" / "rxe-nfsv3-concurrent.pcap")
    out = tmp_path / "f.json"
    assert cli.main(["flows", path, "-o", str(out)]) == 0
    doc = json.loads(out.read_text())
    capsysbinary.readouterr()
    assert cli.main(["flows", path, "-T", "jsonl"]) == 0
    lines = capsysbinary.readouterr().out.splitlines()
    objs = [json.loads(x) for x in lines]
    assert len(objs) > 2 * doc["summary"]["transactions"] // 2 and max(map(len, lines)) < 1 << 16
    for conn in doc["connections"]:
        mine = [o for o in objs if o.get("conn") == conn["id"] or o.get("id") == conn["id"]]
        assert [o for o in mine if o["kind"] == "transaction"] == [{"kind": "transaction", **t}
                                                                   for t in conn["transactions"]]
        for direction, ledger in conn["credits"].items():
            series = [p for o in mine if o["kind"] == "credits" and o["direction"] == direction for p in o["series"]]
            assert series == ledger["series"]
        assert [o for o in mine if o["kind"] == "finding"] == [{"kind": "finding", **f} for f in conn["findings"]]


def test_duckdb_reads_the_json_lines(tmp_path):
    duckdb = pytest.importorskip("duckdb")
    out = tmp_path / "f.jsonl"
    assert cli.main(["flows", str(ROOT / "captures" / "rxe-nfsv3-rdma.pcap"), "-T", "jsonl", "-o", str(out)]) == 0
    con = duckdb.connect()
    (n,), = con.sql(f"SELECT count(*) FROM read_json_auto('{out}') WHERE kind = 'transaction'").fetchall()
    assert n == 328


def test_flows_needs_an_output_for_the_document(capsys):
    assert cli.main(["flows", str(ROOT / "captures" / "rxe-nfsv3-rdma.pcap")]) == 1
    assert "-o FILE" in capsys.readouterr().err


def test_a_capture_without_rdma_gives_connections_without_rpcrdma(tmp_path):
    out = tmp_path / "f.json"
    assert cli.main(["flows", str(ROOT / "captures" / "rxe-ib_write_bw.pcap"), "-o", str(out)]) == 0
    doc = json.loads(out.read_text())
    _validator("document").validate(doc)
    assert doc["connections"] and all(c["rpcrdma"] is None and c["transactions"] == [] for c in doc["connections"])


def _call(conn: int, xid: int, frames: list[int], ts: int) -> Transaction:
    return Transaction("rpcrdma", conn, xid, Direction.C2S, Message(frames, ts, 100), RpcRdmaFacts(1, "RDMA_MSG", None, 32))


def test_many_connections_hold_no_more_than_the_bound_all_together(tmp_path, monkeypatch):
    """Each connection's spools hold up to their own bound; a capture of thousands of short connections
    would multiply it: all spools together hold at most _HELD_BYTES, and a connection's records go to
    disk when its summary (it ended) comes."""
    monkeypatch.setattr(flows_mod, "_HELD_BYTES", 4096)
    b = flows_mod.FlowBuilder(str(tmp_path))
    for conn in range(1, 201):
        b.on_record(_call(conn, conn, [conn], conn))
        assert sum(sp.size for sp in b._spools.values()) <= 4096 + 1024
    b.on_record(_call(500, 7, [9], 7))
    assert b._spools[(500, "transactions")].buf
    b.on_record(UlpSummary("rpcrdma", 500, 1, 0, 0, [1], [], 0, 0))
    assert not b._spools[(500, "transactions")].buf
    assert [json.loads(x)["xid"] for x in b._spools[(500, "transactions")].items()] == [7]
    assert all(len(list(b._spools[(c, "transactions")].items())) == 1 for c in range(1, 201))
    b.close()


def test_records_are_spooled_to_disk_not_kept(tmp_path, monkeypatch):
    """Memory is bounded by the buffer of each spool, not by the number of transactions."""
    monkeypatch.setattr(flows_mod, "_BUFFER", 4)
    b = flows_mod.FlowBuilder(str(tmp_path))
    for i in range(50):
        b.on_record(_call(1, i, [i + 1], i))
    sp = b._spools[(1, "transactions")]
    assert len(sp.buf) <= 4 and sp.count == 50
    assert [json.loads(x)["xid"] for x in sp.items()] == list(range(50))
    big = flows_mod._Spool(str(tmp_path / "big"))
    for _ in range(3):
        big.add(b"x" * (flows_mod._BUFFER_BYTES // 2 + 1))   # large records: flushed by size, not count
    assert len(big.buf) == 1 and big.size == flows_mod._BUFFER_BYTES // 2 + 1
    b.close()
    assert [p.name for p in tmp_path.iterdir()] == ["big"]
