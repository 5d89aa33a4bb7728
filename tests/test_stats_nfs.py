"""``rdmaspy stats`` of NFS: per file (ops, bytes read and written, latency) and the service response time
tables, checked against what the test program did and against tshark's ``-z rpc,srt``."""
from __future__ import annotations

import json
import re
import subprocess

import orjson
import pytest

from conftest import CAPTURES, capture, require_tshark
from rdmaspy.cli import main

FULL = sorted(f"nfs/{p.name}" for p in (CAPTURES / "nfs").glob("*full*.pcap"))
# Captures with loss: tshark counts every copy of a reply it sees (a reply sent again after a reconnect, one it
# matched to an earlier copy of the call), rdmaspy each transaction once; not compared
SRT_NOT_COMPARED = {"nfs/rxe-nfsv41-full-loss2-after.pcap"}
NFS_PROG = 100003
_ROW = re.compile(r"^\s*(\d+)\s+(\S+)\s+(\d+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s*$")
TSHARK_OPTIONS: dict[str, tuple[str, ...]] = {
    "nfs/siw-nfsv42-full-loss2.pcap": ("-o", "tcp.reassemble_out_of_order:TRUE"),
}


def _stats(capsys, name: str) -> dict:
    assert main(["stats", "-T", "json", str(capture(name))]) == 0
    return orjson.loads(capsys.readouterr().out)


def _flows(capsys, name: str) -> list[dict]:
    assert main(["flows", "-T", "jsonl", str(capture(name))]) == 0
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    return [t for t in lines if t.get("kind") == "transaction"]


def _tshark_srt(name: str, version: int) -> dict[str, tuple[int, float, float, float]]:
    """tshark's -z rpc,srt,100003,VERSION: procedure -> (calls, min, max, sum) in seconds."""
    out = subprocess.run([require_tshark(), "-n", "-q", "-r", str(capture(name)), *TSHARK_OPTIONS.get(name, ()),
                          "-z", f"rpc,srt,{NFS_PROG},{version}"], capture_output=True, text=True, check=True).stdout
    rows = {}
    for line in out.splitlines():
        m = _ROW.match(line)
        if m:
            rows[m[2]] = (int(m[3]), float(m[4]), float(m[5]), float(m[7]))
    return rows


def _twice_by_tshark(t: dict) -> bool:
    """A reply whose data came back in a Write chunk: tshark 4.0 dissects it twice in its frame (reduced, then
    rebuilt with the chunk's data) and counts its call twice in the SRT table."""
    return t["reply"] is not None and any(c["list"] == "write" and c.get("reported") for c in t["chunks"])


@pytest.mark.parametrize("name", [n for n in FULL if n not in SRT_NOT_COMPARED])
def test_service_response_times_are_tsharks(name, capsys):
    """Per NFS procedure: the calls answered and the min, max and sum of their service response times (from
    the call whole at the server, after the RDMA READs of its Read chunks, to the reply) are tshark's, once
    the calls tshark counts twice are counted twice here too."""
    doc = _stats(capsys, name)
    txns = _flows(capsys, name)
    for version in (3, 4):
        theirs = _tshark_srt(name, version)
        ours = {r["procedure"]: r for r in doc["srt"] if r["table"] == f"NFS v{version}"}
        assert set(ours) == set(theirs), (version, sorted(ours), sorted(theirs))
        for proc, (calls, lo, hi, total) in theirs.items():
            twice = [t for t in txns if t["rpc"] and t["rpc"]["program"] == NFS_PROG and t["rpc"]["version"] == version
                     and t["rpc"]["name"] == proc and _twice_by_tshark(t)]
            assert not any(c["list"] == "read" for t in twice for c in t["chunks"])   # SRT from the call's Send
            extra = sum(t["reply"]["ts"] - t["call"]["ts"] for t in twice) / 1e9
            r = ours[proc]
            assert r["calls"] + len(twice) == calls, (version, proc, r["calls"], len(twice), calls)
            assert r["min"] == pytest.approx(lo, abs=1.5e-6) and r["max"] == pytest.approx(hi, abs=1.5e-6), proc
            assert r["sum"] + extra == pytest.approx(total, abs=1e-6 * calls + 1e-6), proc


def test_service_response_time_text_is_one_table_per_program_and_version(capsys):
    assert main(["stats", str(capture("nfs/rxe-nfsv3-full.pcap"))]) == 0
    out = capsys.readouterr().out
    assert "Service response time: NFS v3 (as tshark -z rpc,srt)" in out
    assert "Service response time: NFSACL v3 (as tshark -z rpc,srt)" in out
    row = next(line for line in out.splitlines() if re.match(r"\s+21\s+COMMIT\s", line))
    assert row.split()[2:] == ["1", "0.013540", "0.013540", "0.013540", "0.013540"]   # as tshark prints it


@pytest.mark.parametrize("name, directory", [("nfs/rxe-nfsv3-full.pcap", "v3"), ("nfs/rxe-nfsv41-full.pcap", "v4.1"),
                                             ("nfs/siw-nfsv40-full.pcap", "v4.0")])
def test_per_file_bytes_are_what_the_program_read_and_wrote(name, directory, capsys):
    """io.bin is opened O_DIRECT: every pwrite and pread of the test program (its .ops.json) is one WRITE or
    READ on the wire, so the bytes stats gives the file are the bytes the program wrote and read."""
    steps = json.loads(capture(name.replace(".pcap", ".ops.json")).read_text())["steps"]
    wrote = sum(s["args"]["size"] for s in steps if s["action"] == "pwrite" and s["args"]["file"] == "io.bin"
                and s["ok"])
    read = sum(s["result"]["read"] for s in steps if s["action"] == "pread" and s["args"]["file"] == "io.bin"
               and s["ok"])
    doc = _stats(capsys, name)
    files = {g["value"]: g for g in doc["overall"]["groups"] if g["dimension"] == "file"}
    io = files.get(f"/{directory}/io.bin") or files["io.bin"]     # NFSv3: no MOUNT over RDMA, no full name
    assert (io["read"], io["written"]) == (read, wrote) and read and wrote
    assert io["count"] >= len([s for s in steps if s["action"] in ("pwrite", "pread") and s["args"]["file"] == "io.bin"])
    assert io["latency"]["p50"] is not None and io["latency"]["p50"] <= io["latency"]["max"]


def test_a_handle_never_named_is_grouped_by_its_hash(capsys):
    """NFSv3 over RDMA after a MOUNT over TCP: the export's root is never named in the capture; its operations
    are grouped by the handle's CRC-32 as tshark shows it (nfs.fh.hash)."""
    doc = _stats(capsys, "nfs/rxe-nfsv3-full.pcap")
    unnamed = [g for g in doc["overall"]["groups"] if g["dimension"] == "file" and g["value"].startswith("fh 0x")]
    assert [g["value"] for g in unnamed] == ["fh 0x62d40c52"] and unnamed[0]["count"] > 10


def test_nvme_groups_keep_their_shape(capsys):
    """A dimension that says nothing of bytes read and written (NVMe's namespace) has no such keys."""
    doc = _stats(capsys, "rxe-nvme-rdma.pcap.gz")
    groups = doc["overall"]["groups"]
    assert groups and all("read" not in g and "written" not in g for g in groups)
    assert doc["srt"] == []
