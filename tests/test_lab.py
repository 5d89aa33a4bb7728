"""The lab loop on real SoftRoCE and soft-iWARP: `rdmaspy serve`/`load` in a qemu guest, analysed on the host.

Runs only when asked (``python3 -m pytest -m lab`` or RDMASPY_LAB=1): it needs qemu,
debootstrap and e2fsprogs, builds the guest image on first use (lab/cache/, about
3 minutes here) and boots it once (``lab/run test``). RDMASPY_LAB_RESULTS=DIR analyses
the results of an earlier run instead of booting.
"""
from __future__ import annotations

import json
import os
import subprocess
from collections import defaultdict
from pathlib import Path

import pytest

from rdmaspy.analysis.analyzer import Analyzer
from rdmaspy.analysis.model import Transaction
from rdmaspy.fieldview import layer_nodes
from rdmaspy.output.flows import transaction_record
from rdmaspy.engine import Engine
from rdmaspy.readers import open_capture
from rdmaspy.traffic import protocol as P

pytestmark = pytest.mark.lab

ROOT = Path(__file__).resolve().parent.parent
CLIENT, SERVER = "192.0.2.1", "192.0.2.2"
TRAFFIC = [f"{k}-{v}" for k in ("rxe", "siw") for v in ("v1", "v2", "v2-fallback")]
FAULTS = ["fault-exceed-credits", "fault-xid-mismatch", "fault-skip-done", "fault-overrun-reply"]


@pytest.fixture(scope="module")
def results(request) -> Path:
    asked = "lab" in (request.config.getoption("markexpr") or "") or os.environ.get("RDMASPY_LAB") == "1"
    if not asked:
        pytest.skip("the lab boots a VM: run it with `python3 -m pytest -m lab` or lab/run test")
    given = os.environ.get("RDMASPY_LAB_RESULTS")
    if given:
        return Path(given)
    subprocess.run([str(ROOT / "lab" / "run"), "test"], check=True, timeout=3600)
    return Path(os.environ.get("RDMASPY_LAB_CACHE") or ROOT / "lab" / "cache") / "out" / "test"


def _pkts(path: Path) -> list:
    eng = Engine(strict=True)
    with open_capture(str(path)) as cap:
        return [eng.dissect(f) for f in cap]


def _analyse(path: Path) -> tuple[list[dict], list]:
    """The analysis of a capture: transaction records and findings."""
    records: list[dict] = []
    an = Analyzer(strict=True, on_record=lambda rec: records.append(transaction_record(rec))
                  if isinstance(rec, Transaction) else None)
    for p in _pkts(path):
        an.feed(p)
    an.finish()
    return records, an.findings


def _rules(findings) -> set[str]:
    return {f.rule_def.id for f in findings}


def _rpcrdma(pkts) -> list[tuple[str, object, object]]:
    """Every RPC-over-RDMA message with its sender: a TCP segment of soft-iWARP may carry two Sends (an
    RDMA_DONE and the next call), each its own layer."""
    out = []
    for p in pkts:
        for lay in p.layers:
            if lay.proto in ("rpcrdma", "rpcrdma2"):
                out.append((p.src, lay, p))
    return out


def _vals(layer, name: str) -> list:
    return [v for _d, f, v, _o, _l in layer_nodes(layer) if getattr(f, "name", None) == name]


def _get(lay, name: str):
    return lay.get("rpcrdma." + name, lay.get("rpcrdma2." + name))


def _transactions(msgs) -> tuple[dict, dict]:
    calls: dict[int, object] = {}
    replies: dict[int, object] = defaultdict(list)
    for src, lay, _p in msgs:
        xid = _get(lay, "xid")
        proc = lay.get("rpcrdma.proc", lay.get("rpcrdma2.htype"))
        if CLIENT in str(src):
            if proc != P.RDMA_DONE or lay.proto == "rpcrdma2":
                calls[xid] = lay
        else:
            replies[xid].append(lay)
    return calls, replies


def _load(results: Path, name: str) -> dict:
    return json.loads((results / f"{name}.load.json").read_text())


@pytest.mark.parametrize("name", TRAFFIC)
def test_traffic_completes_and_decodes_cleanly(results, name):
    pcap = results / f"{name}.pcap"
    summary = _load(results, name)
    assert summary["failed"] == 0 and summary["calls"] > 0
    pkts = _pkts(pcap)
    bad = [(i + 1, p.malformed) for i, p in enumerate(pkts) if p.malformed]
    assert not bad, bad[:5]
    errors = [(i + 1, e.text) for i, p in enumerate(pkts) for e in (p.expert or ()) if e.severity == "error"]
    assert not errors, errors[:5]
    msgs = _rpcrdma(pkts)
    calls, replies = _transactions(msgs)
    # Every call has its reply (the version exchange of v2 is a call and reply too).
    assert set(calls) <= set(replies), sorted(set(calls) - set(replies))[:5]
    assert len(calls) >= summary["calls"]
    # Every chunk kind crossed the wire.
    transfers = summary["transfers"]
    for how in ("inline", "write-chunk", "read-chunk", "reply-chunk"):
        assert transfers.get(how), (how, transfers)
    if summary["version"] == 1:
        assert transfers.get("read-chunk-reply")
        dones = [lay for src, lay, _ in msgs if CLIENT in str(src) and lay.get("rpcrdma.proc") == P.RDMA_DONE]
        assert len(dones) == transfers["read-chunk-reply"]
    # The analysis finds every transaction complete and nothing wrong.
    records, findings = _analyse(pcap)
    assert records and {r["state"] for r in records} == {"complete"}
    assert len(records) >= summary["calls"]
    errors = [(f.rule_def.id, f.frames[:3]) for f in findings if f.severity == "error"]
    assert not errors, errors[:5]
    warnings = [(f.rule_def.id, f.frames[0]) for f in findings if f.severity == "warning"]
    # (in the fallback runs the v1 ERR_VERS answering the RDMA2_CONNPROP is no stray reply)
    assert not warnings, warnings[:5]
    versions = {_get(lay, "version") for _s, lay, _p in msgs}
    if name.endswith("-v2"):
        assert summary["version"] == 2 and versions == {2}
        htypes = [(CLIENT in str(s), lay.get("rpcrdma2.htype")) for s, lay, _ in msgs]
        assert htypes[0] == (True, P.RDMA2_CONNPROP) and (False, P.RDMA2_CONNPROP) in htypes
    elif name.endswith("fallback"):
        assert summary["fell_back"] and summary["version"] == 1
        first = msgs[0][1]
        assert first.proto == "rpcrdma2" and first.get("rpcrdma2.htype") == P.RDMA2_CONNPROP
        err = msgs[1][1]
        assert (err.get("rpcrdma.proc"), _vals(err, "rpcrdma.errcode")) == (P.RDMA_ERROR, [P.ERR_VERS])
        assert versions == {1, 2}
    else:
        assert versions == {1}


@pytest.mark.parametrize("kind", ["rxe", "siw"])
def test_connection_carries_rfc8797_private_data(results, kind):
    pkts = _pkts(results / f"{kind}-v1.pcap")
    found = [(str(p.src), _vals(lay, "rpcrdma.pdata.send_size"), _vals(lay, "rpcrdma.pdata.recv_size"))
             for p in pkts for lay in _layers(p) if _vals(lay, "rpcrdma.pdata.send_size")]
    assert [(src, s, r) for src, s, r in found][:2] == [(CLIENT, [4096], [4096]), (SERVER, [4096], [4096])]


def _layers(p):
    for lay in p.layers:
        yield lay
        stack = list(lay.children or ())
        while stack:
            c = stack.pop()
            yield c
            stack.extend(c.children or ())


def test_fault_exceed_credits(results):
    s = _load(results, "fault-exceed-credits")
    assert s["max_outstanding"] > s["credits_granted"] == 4
    msgs = _rpcrdma(_pkts(results / "fault-exceed-credits.pcap"))
    outstanding = peak = 0
    for src, lay, _p in msgs:
        outstanding += 1 if CLIENT in str(src) else -1
        peak = max(peak, outstanding)
    grants = {lay.get("rpcrdma.credits") for src, lay, _ in msgs if SERVER in str(src)}
    assert grants == {4} and peak > 4
    assert "credits.exceeded" in _rules(_analyse(results / "fault-exceed-credits.pcap")[1])


def test_fault_xid_mismatch(results):
    pkts = _pkts(results / "fault-xid-mismatch.pcap")
    pairs = []                          # each RPC-over-RDMA message's XID and the RPC message it carried
    for p in pkts:
        xid = None
        for lay in p.layers:
            if lay.proto in ("rpcrdma", "rpcrdma2"):
                xid = _get(lay, "xid")
            elif lay.proto == "rpc" and xid is not None:
                pairs.append((xid, lay))
                xid = None
    mism = [(x, r.get("rpc.xid")) for x, r in pairs if r.get("rpc.xid") != x]
    assert mism
    assert "rpcrdma.xid_mismatch" in _rules(_analyse(results / "fault-xid-mismatch.pcap")[1])


def test_fault_skip_done(results):
    s = _load(results, "fault-skip-done")
    assert s["transfers"].get("read-chunk-reply") == s["calls"] > 0
    msgs = _rpcrdma(_pkts(results / "fault-skip-done.pcap"))
    pulled = [lay for src, lay, _ in msgs if SERVER in str(src) and lay.get("rpcrdma.proc") == P.RDMA_NOMSG
              and _vals(lay, "rpcrdma.read.segment.position") == [0]]
    dones = [lay for src, lay, _ in msgs if CLIENT in str(src) and lay.get("rpcrdma.proc") == P.RDMA_DONE]
    assert pulled and not dones
    assert "rpcrdma.done_missing" in _rules(_analyse(results / "fault-skip-done.pcap")[1])


def test_fault_overrun_reply(results):
    pkts = _pkts(results / "fault-overrun-reply.pcap")
    offered = {}
    for src, lay, _p in _rpcrdma(pkts):
        if CLIENT in str(src):
            for h, ln, off in zip(_vals(lay, "rpcrdma.reply.segment.handle"), _vals(lay, "rpcrdma.reply.segment.length"),
                                  _vals(lay, "rpcrdma.reply.segment.offset")):
                offered[(h, off)] = ln
    over = []
    for p in pkts:
        reth = next((lay for lay in _layers(p) if lay.proto == "reth"), None)
        if reth is not None and p.layer("rpcrdma") is None:
            key = (reth.get("reth.r_key"), reth.get("reth.va"))
            if key in offered and reth.get("reth.dma_length") > offered[key]:
                over.append(key)
    assert over
    assert "chunk.reply_overrun" in _rules(_analyse(results / "fault-overrun-reply.pcap")[1])
