"""The NFS facts on the transactions (analysis/nfs_facts.py) against tshark 4.0, on the shipped NFS captures.

Each RPC-over-RDMA transaction whose RPC is NFS carries its main operation's facts (``nfs`` in flows, the
``nfs_*`` columns of the export).  For every fact tshark also decodes, the value rdmaspy gives must be one
tshark shows in one of the transaction's frames (its call's and reply's Sends, the RDMA READ responses and
WRITEs that completed them: tshark shows a reduced message where it is rebuilt): the handle's CRC-32
(``nfs.fh.hash``), offset, count, the bytes moved, status, eof, stable_how, slot, sequence id and session,
and the name with tshark's name snooping on (full names: test_nfs_names).  Per frame tshark's values are a set (a COMPOUND shows a
status per operation, a seqid per stateid), so rdmaspy's value is checked to be in it; each fact must be
compared on some transaction of each capture that has it, so that the test cannot pass by comparing nothing.
"""
from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from conftest import CAPTURES, capture, tshark_fields, tshark_int
from rdmaspy import cli
from rdmaspy.dissectors.nfs import STABLE_HOW

NFS_CAPTURES = sorted(f"nfs/{p.name}" for p in (CAPTURES / "nfs").glob("*full*.pcap")) + \
    ["rxe-nfsv3-rdma.pcap", "rxe-nfsv42-rdma.pcap", "siw-nfsv41-rdma.pcap"]
NAME_SNOOPING = ("-o", "nfs.file_name_snooping:TRUE", "-o", "nfs.file_full_name_snooping:TRUE")
TSHARK_OPTIONS: dict[str, tuple[str, ...]] = {
    "nfs/siw-nfsv42-full-loss2.pcap": ("-o", "tcp.reassemble_out_of_order:TRUE"),
}
# The name is compared on the operations that name no file in their arguments or results (tshark's nfs.name
# is also a LOOKUP's, LINK's, RENAME's component and a READDIR entry's name)
HANDLE_ONLY_OPS = frozenset({"READ", "WRITE", "COMMIT", "GETATTR", "SETATTR", "ACCESS", "READLINK", "CLOSE"})
STABLE_BY_NAME = {v: k for k, v in STABLE_HOW.items()}

# fact -> (the tshark fields whose values it may be among, how rdmaspy's value is written as tshark's)
_INT = int
COMPARED: dict[str, tuple[tuple[str, ...], object]] = {
    "fh_hash": (("nfs.fh.hash",), _INT),
    "offset": (("nfs.offset3", "nfs.offset4"), _INT),
    "count": (("nfs.count3", "nfs.count4", "nfs.write.data_length"), _INT),
    "moved": (("nfs.count3", "nfs.count4", "nfs.read.data_length"), _INT),
    "status": (("nfs.status", "nfs.nfsstat4"), _INT),
    "eof": (("nfs.read.eof", "nfs.eof"), lambda v: int(bool(v))),
    "stable": (("nfs.write.stable", "nfs.stable_how4"), lambda v: STABLE_BY_NAME[v]),
    "committed": (("nfs.write.committed", "nfs.stable_how4"), lambda v: STABLE_BY_NAME[v]),
    "slot": (("nfs.slotid",), _INT),
    "sequence": (("nfs.seqid",), _INT),
    "session": (("nfs.session_id4",), str),
    "name": (("nfs.name",), str),
}
FIELDS = sorted({f for fields, _ in COMPARED.values() for f in fields})


def _tshark_value(field: str, text: str) -> object:
    if field == "nfs.name":
        return text
    if field == "nfs.session_id4":
        return text.replace(":", "")
    if text in ("True", "False"):
        return int(text == "True")
    return tshark_int(text)


def _transactions(path: Path, tmp: Path) -> list[dict]:
    out = tmp / "flows.jsonl"
    assert cli.main(["flows", str(path), "-T", "jsonl", "-o", str(out)]) == 0
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    return [t for t in lines if t.get("kind") == "transaction" and t.get("nfs") is not None]


def _frames(t: dict) -> set[int]:
    frames = {t["call"]["frame"], *t["call"]["frames"]}
    if t["reply"] is not None:
        frames |= {t["reply"]["frame"], *t["reply"]["frames"]}
    for s in t["steps"]:
        frames |= set(s["frames"]) | set(s.get("response_frames") or ())
    return frames


@pytest.mark.parametrize("name", NFS_CAPTURES)
def test_nfs_facts_are_what_tshark_decodes(name, tmp_path):
    path = capture(name)
    txns = _transactions(path, tmp_path)
    assert txns
    rows = tshark_fields(path, FIELDS, *NAME_SNOOPING, *TSHARK_OPTIONS.get(name, ()))
    compared: Counter[str] = Counter()
    had: Counter[str] = Counter()
    for t in txns:
        nfs = t["nfs"]
        frames = _frames(t)
        for fact, (fields, as_tshark) in COMPARED.items():
            value = nfs[fact]
            if value is None or (fact == "name" and nfs["op"] not in HANDLE_ONLY_OPS):
                continue
            had[fact] += 1
            shown = {_tshark_value(f, v) for n in frames if n <= len(rows) for f in fields for v in rows[n - 1][f]}
            if not shown:
                continue            # tshark shows none of it there (a reply it misreads, a handle it did not name)
            assert as_tshark(value) in shown, (name, t["call"]["frame"], nfs["op"], fact, value, shown)  # type: ignore[operator]
            compared[fact] += 1
    for fact in ("fh_hash", "status"):
        assert compared[fact] >= had[fact] * 0.9, (fact, compared[fact], had[fact])
    for fact in had:
        assert compared[fact] > 0, (fact, had[fact])


def test_a_read_and_a_write_carry_their_file_offset_count_and_bytes(tmp_path):
    """NFSv4.1 on SoftRoCE: the READs and WRITEs of io.bin, named, with the offsets and counts the test
    program used (captures/nfs/rxe-nfsv41-full.ops.json) and a short READ at the end of the file."""
    txns = _transactions(capture("nfs/rxe-nfsv41-full.pcap"), tmp_path)
    io = [t["nfs"] for t in txns if t["nfs"]["full_name"] == "/v4.1/io.bin" and t["nfs"]["op"] in ("READ", "WRITE")]
    writes = [(n["offset"], n["count"], n["moved"], n["stable"]) for n in io if n["op"] == "WRITE"]
    reads = [(n["offset"], n["count"], n["moved"], n["eof"]) for n in io if n["op"] == "READ"]
    assert writes[:3] == [(0, 1, 1, "FILE_SYNC"), (1, 1000, 1000, "FILE_SYNC"), (1001, 3000, 3000, "FILE_SYNC")]
    assert (79000, 4096, 1000, True) in reads and (200000, 100, 0, True) in reads
    assert all(n["session"] and n["slot"] is not None and n["sequence"] for n in io)
    assert {n["status_name"] for n in io} == {"NFS4_OK"}


def test_an_open_names_the_file_it_opened(tmp_path):
    """OPEN acts on a directory and makes the file it opened current: the handle a GETFH after it returned
    is the transaction's, named as the file."""
    txns = _transactions(capture("nfs/rxe-nfsv41-full.pcap"), tmp_path)
    opens = [t["nfs"] for t in txns if t["nfs"]["op"] == "OPEN"]
    assert opens and {"/v4.1/io.bin", "/v4.1/buffered.bin"} <= {n["full_name"] for n in opens}


def test_facts_left_only_where_an_analysis_reads_them():
    """A summary run (no analysis) leaves no NFS main operation on the RPC messages: it does not pay for them."""
    from rdmaspy.dissectors.onc_rpc import RPC
    from rdmaspy.engine import Engine
    from rdmaspy.readers import open_capture
    eng = Engine(strict=True)
    eng.session.facts = False
    with open_capture(str(capture("nfs/rxe-nfsv3-full.pcap"))) as cap:
        infos = [eng.dissect(f).noted(RPC) for f in cap]
    assert any(i is not None for i in infos)
    assert all(i.main is None and i.names is None for i in infos if i is not None)


def test_export_has_the_nfs_facts_as_typed_columns(tmp_path):
    """export: a column per NFS fact, typed as declared, the same values as flows gives."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    out = tmp_path / "tables"
    assert cli.main(["export", str(capture("nfs/rxe-nfsv41-full.pcap")), "-o", str(out), "-q"]) == 0
    table = pq.read_table(out / "transactions.parquet")
    schema = table.schema
    assert schema.field("nfs_fh_hash").type == pa.uint32() and schema.field("nfs_offset").type == pa.uint64()
    assert schema.field("nfs_eof").type == pa.bool_() and schema.field("nfs_op").type == pa.string()
    rows = {r["call_frame"]: r for r in table.to_pylist()}
    flows = {t["call"]["frame"]: t["nfs"] for t in _transactions(capture("nfs/rxe-nfsv41-full.pcap"), tmp_path)}
    assert flows
    for frame, nfs in flows.items():
        assert {k: rows[frame][f"nfs_{k}" if k != "status" else "nfs_op_status"] for k in nfs} == nfs, frame
