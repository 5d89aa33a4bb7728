"""The lab's NFS captures (captures/nfs/) hold what their workload logs say was done.

`lab/run nfs-full` leaves, for each NFS version and transport, a capture, the JSON log of its
workload (lab/guest/nfs_workload.py: every step, its outcome, the RPC operations it put on the wire,
the offset and count of each READ and WRITE), and the kernel's trace of the same run (trace-cmd
report text, xz-compressed). tshark is the judge of what a capture holds (lab/nfs_ops.py names the
operations with tshark's own tables), so that a capture made again, cut or replaced cannot silently
lose its content.
"""
from __future__ import annotations

import importlib.util
import json
import lzma
import re
from collections import Counter
from functools import lru_cache
from pathlib import Path

import pytest

from conftest import CAPTURES, ROOT, require_tshark
from rdmaspy.readers import open_capture

NFS_CAPTURES = CAPTURES / "nfs"
LOGS = sorted(NFS_CAPTURES.glob("*.ops.json"))


def _nfs_ops():
    spec = importlib.util.spec_from_file_location("nfs_ops", ROOT / "lab" / "nfs_ops.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


nfs_ops = _nfs_ops()


def _name(log: Path) -> str:
    return log.name.removesuffix(".ops.json")


def _log(log: Path) -> dict:
    return json.loads(log.read_text())


def _pcap(log: Path) -> Path:
    return log.with_name(_name(log) + ".pcap")


@lru_cache(maxsize=None)
def _frames(log: Path) -> list[dict[str, list[str]]]:
    """tshark's fields of each frame of the capture (one tshark run per capture)."""
    return nfs_ops.frames(str(_pcap(log)))


@pytest.fixture(scope="module", autouse=True)
def _tshark() -> None:
    require_tshark()


def test_the_captures_cover_every_version_transport_and_loss():
    runs = {(d["transport"], d["version"], d["loss"]) for d in map(_log, LOGS)}
    for kind in ("rxe", "siw"):
        assert {v for k, v, loss in runs if k == kind and loss == "0"} == {"3", "4.0", "4.1", "4.2"}, kind
        assert any(k == kind and loss != "0" for k, _v, loss in runs), f"no lossy run over {kind}"


@pytest.mark.parametrize("log", LOGS, ids=_name)
def test_capture_is_whole(log):
    """tcpdump wrote every packet its filter received, and the file holds exactly those."""
    cap = _log(log)["capture"]
    assert cap["captured"] == cap["received"] > 0 and cap["dropped"] == 0, cap
    with open_capture(str(_pcap(log))) as frames:
        assert sum(1 for _ in frames) == cap["captured"]
    assert _name(log).startswith(_log(log)["transport"] + "-")


@pytest.mark.parametrize("log", LOGS, ids=_name)
def test_every_step_did_what_it_was_meant_to(log):
    """A step fails only where failing is its point (xattrs before NFSv4.2, the undersized GETXATTR over RDMA)."""
    steps = _log(log)["steps"]
    wrong = [(s["action"], s["args"], s["error"]) for s in steps
             if not s["ok"] and not (s["allowed_error"] and s["error"].startswith(s["allowed_error"] + ":"))]
    assert not wrong, wrong
    assert steps[1]["action"] == "mount" and steps[1]["ok"] and steps[-1]["action"] == "umount"


@pytest.mark.parametrize("log", LOGS, ids=_name)
def test_capture_holds_the_logged_operations(log):
    """Each step's operations are on the wire, at least as many times as steps asked for them."""
    wanted: Counter[str] = Counter(op for s in _log(log)["steps"] for op in s["expect"])
    assert wanted
    seen = nfs_ops.count_ops(_frames(log))
    short = {op: (n, seen.get(op, 0)) for op, n in wanted.items() if seen.get(op, 0) < n}
    assert not short, f"operation: (steps that made it, calls in the capture) {short}"


@pytest.mark.parametrize("log", LOGS, ids=_name)
def test_reads_and_writes_are_at_the_logged_offsets(log):
    logged = {(io["op"], io["offset"], io["count"]) for s in _log(log)["steps"] for io in s["io"]}
    assert len(logged) >= 15
    missing = logged - nfs_ops.io_calls(_frames(log))
    assert not missing, sorted(missing)


def _trace_xids(log: Path) -> set[int]:
    """The XIDs the client marshalled, from the kernel's trace of the same run."""
    text = lzma.open(log.with_name(_name(log) + ".trace.txt.xz"), "rt").read()
    return {int(x, 16) for x in re.findall(r"xprtrdma_marshal: .*?xid=(0x[0-9a-f]+)", text)}


@pytest.mark.parametrize("log", LOGS, ids=_name)
def test_trace_is_of_the_same_run(log):
    """Every NFS call the capture shows going over RDMA was marshalled by the client in the trace beside it."""
    rows = _frames(log)
    xids = {int(x, 16) for r in rows if r["rpcordma.msg_type"] and nfs_ops.CALL in r["rpc.msgtyp"]
            for x, p, t in zip(r["rpc.xid"], r["rpc.program"], r["rpc.msgtyp"])
            if t == nfs_ops.CALL and int(p) in (nfs_ops.NFS, nfs_ops.NFSACL)}
    assert len(xids) > 50
    missing = xids - _trace_xids(log)
    assert not missing, [hex(x) for x in sorted(missing)[:10]]
