"""``rdmaspy extract``: one connection, one transaction or one filter as a capture tshark reads."""
from __future__ import annotations

import json
import subprocess

import pytest
from conftest import capture, require_tshark, tshark_fields

from rdmaspy import cli

NFS = "rxe-nfsv3-rdma.pcap"


def _flows(tmp_path, name: str) -> dict:
    out = tmp_path / "flows.json"
    assert cli.main(["flows", str(capture(name)), "-o", str(out)]) == 0
    return json.loads(out.read_text())


def _frames_of(t: dict) -> set[int]:
    frames = set(t["call"]["frames"])
    for again in t["call"]["retransmissions"]:
        frames.update(again)
    if t["reply"]:
        frames.update(t["reply"]["frames"])
        if t["reply"]["done_frame"] is not None:
            frames.add(t["reply"]["done_frame"])
    for st in t["steps"]:
        frames.update(st["frames"])
        frames.update(st.get("response_frames") or ())
    return frames


def _original_times(name: str, frames: set[int]) -> list[str]:
    rows = tshark_fields(capture(name), ["frame.number", "frame.time_epoch", "frame.len"])
    return [(r["frame.time_epoch"][0], r["frame.len"][0]) for r in rows if int(r["frame.number"][0]) in frames]


def _times(path) -> list[tuple[str, str]]:
    return [(r["frame.time_epoch"][0], r["frame.len"][0]) for r in tshark_fields(path, ["frame.time_epoch",
                                                                                      "frame.len"])]


def test_a_transaction_is_its_frames_as_flows_lists_them(tmp_path):
    doc = _flows(tmp_path, NFS)
    t = max((t for c in doc["connections"] for t in c["transactions"]), key=lambda t: len(t["steps"]))
    out = tmp_path / "one.pcapng"
    assert cli.main(["extract", str(capture(NFS)), "--xid", hex(t["xid"]), "-w", str(out)]) == 0
    want = _frames_of(t)
    assert len(want) > 10 and _times(out) == _original_times(NFS, want)


def test_the_export_index_finds_the_same_frames_without_a_decode(tmp_path):
    doc = _flows(tmp_path, NFS)
    t = max((t for c in doc["connections"] for t in c["transactions"]), key=lambda t: len(t["steps"]))
    tables = tmp_path / "tables"
    assert cli.main(["export", str(capture(NFS)), "-o", str(tables), "-q"]) == 0
    a, b = tmp_path / "a.pcapng", tmp_path / "b.pcapng"
    assert cli.main(["extract", str(capture(NFS)), "--xid", str(t["xid"]), "-w", str(a)]) == 0
    assert cli.main(["extract", str(capture(NFS)), "--xid", str(t["xid"]), "-w", str(b), "--index", str(tables)]) == 0
    assert a.read_bytes() == b.read_bytes()
    c, d = tmp_path / "c.pcap", tmp_path / "d.pcap"
    assert cli.main(["extract", str(capture("siw-nfsv3-rdma.pcap")), "--connection", "1", "-w", str(c)]) == 0
    assert cli.main(["export", str(capture("siw-nfsv3-rdma.pcap")), "-o", str(tables), "-q"]) == 0
    assert cli.main(["extract", str(capture("siw-nfsv3-rdma.pcap")), "--connection", "1", "-w", str(d),
                     "--index", str(tables)]) == 0
    assert c.read_bytes() == d.read_bytes() and len(_times(c)) > 100


def test_a_filter_writes_the_frames_decode_shows(tmp_path):
    out = tmp_path / "f.pcap"
    assert cli.main(["extract", str(capture(NFS)), "-Y", "rpcrdma.proc == 1", "-w", str(out)]) == 0
    exe = require_tshark()
    ref = subprocess.run([exe, "-n", "-r", str(capture(NFS)), "-Y", "rpcordma.msg_type == 1", "-T", "fields",
                          "-e", "frame.number"], capture_output=True, text=True, check=True).stdout.split()
    assert len(_times(out)) == len(ref) > 100
    assert _times(out) == _original_times(NFS, {int(x) for x in ref})


@pytest.mark.parametrize("argv, says", [
    ((), "say what to extract"),
    (("--xid", "0x12345678"), "no frame of XID 0x12345678"),
    (("--connection", "9"), "no frame of connection 9"),
    (("--xid", "1", "--index", "{tmp}/nothing"), "no export manifest"),
    (("--file", "no-such-file"), "no frame of file 'no-such-file'"),
    (("--file", "x", "--xid", "1"), "one of --xid, --command and --file"),
    (("--file", ""), "--file needs a file name"),
])
def test_mistakes_are_one_line(tmp_path, capsys, argv, says):
    out = tmp_path / "x.pcapng"
    argv = tuple(a.format(tmp=tmp_path) for a in argv)
    assert cli.main(["extract", str(capture(NFS)), *argv, "-w", str(out)]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and says in err and not out.exists()


NFS41 = "nfs/rxe-nfsv41-full.pcap"


def _handle_frames(tmp_path, name: str, full_name: str) -> tuple[str, int, set[int]]:
    """The handle of the file ``full_name`` (as flows names it), its hash, and the frames of every transaction
    on that handle."""
    doc = _flows(tmp_path, name)
    txns = [t for c in doc["connections"] for t in c["transactions"] if t.get("nfs")]
    (fh, digest), = {(t["nfs"]["fh"], t["nfs"]["fh_hash"]) for t in txns if t["nfs"]["full_name"] == full_name}
    frames: set[int] = set()
    for t in txns:
        if t["nfs"]["fh"] == fh:
            frames |= _frames_of(t)
    return fh, digest, frames


def test_a_file_is_the_frames_of_every_operation_on_its_handle(tmp_path):
    """``--file io.bin``: the OPEN that returned the handle, its WRITEs, READs, GETATTRs and CLOSE, whatever
    the file is called by (name, full name, the end of it, the handle's hash), by decode or from the export."""
    _fh, digest, want = _handle_frames(tmp_path, NFS41, "/v4.1/io.bin")
    out = tmp_path / "io.pcapng"
    assert cli.main(["extract", str(capture(NFS41)), "--file", "io.bin", "-w", str(out)]) == 0
    assert len(want) > 50 and _times(out) == _original_times(NFS41, want)
    # the READ and WRITE calls tshark sees on that handle are all in it
    rows = tshark_fields(capture(NFS41), ["frame.number", "nfs.fh.hash", "nfs.opcode"])
    rw = {int(r["frame.number"][0]) for r in rows if f"0x{digest:08x}" in r.get("nfs.fh.hash", ())
          and {"25", "38"} & set(r.get("nfs.opcode", ()))}
    assert len(rw) > 10 and rw <= want
    tables = tmp_path / "tables"
    assert cli.main(["export", str(capture(NFS41)), "-o", str(tables), "-q"]) == 0
    for i, alias in enumerate(["/v4.1/io.bin", "v4.1/io.bin", f"0x{digest:08x}"]):
        again = tmp_path / f"io{i}.pcapng"
        assert cli.main(["extract", str(capture(NFS41)), "--file", alias, "-w", str(again)]) == 0
        assert again.read_bytes() == out.read_bytes(), alias
    indexed = tmp_path / "indexed.pcapng"
    assert cli.main(["extract", str(capture(NFS41)), "--file", "io.bin", "-w", str(indexed),
                     "--index", str(tables)]) == 0
    assert indexed.read_bytes() == out.read_bytes()


def test_a_file_on_one_connection_and_a_name_with_a_quote(tmp_path, capsys):
    """``--connection`` narrows ``--file``; a name with a quote is a name, in the export's SQL too."""
    _fh, _digest, want = _handle_frames(tmp_path, NFS41, "/v4.1/io.bin")
    doc = _flows(tmp_path, NFS41)
    conns = {c["id"] for c in doc["connections"] for t in c["transactions"]
             if t.get("nfs") and t["nfs"]["full_name"] == "/v4.1/io.bin"}
    (conn,) = conns
    out = tmp_path / "c.pcapng"
    assert cli.main(["extract", str(capture(NFS41)), "--file", "io.bin", "--connection", str(conn),
                     "-w", str(out)]) == 0
    assert _times(out) == _original_times(NFS41, want)
    tables = tmp_path / "tables"
    assert cli.main(["export", str(capture(NFS41)), "-o", str(tables), "-q"]) == 0
    capsys.readouterr()
    assert cli.main(["extract", str(capture(NFS41)), "--file", "it's", "-w", str(tmp_path / "q.pcapng"),
                     "--index", str(tables)]) == 1
    assert capsys.readouterr().err == f"rdmaspy: error: {capture(NFS41)}: no frame of file \"it's\"; nothing written\n"
