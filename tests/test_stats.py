"""``rdmaspy stats FILE``: operations with latency percentiles (checked against tshark's rpc.time), bytes,
credits, PSN counters and findings by rule."""
from __future__ import annotations

import math

import orjson
import pytest

from conftest import FIXTURES, capture, tshark_fields
from rdmaspy.analysis.model import Direction, Message, Transaction
from rdmaspy.analysis.rpcrdma_facts import RpcRdmaFacts, RpcSummary
from rdmaspy.cli import main
from rdmaspy.commands.stats import operation_name, percentile

CONCURRENT = capture("rxe-nfsv3-concurrent.pcap")
NFS3_PROCS = {0: "NULL", 1: "GETATTR", 3: "LOOKUP", 4: "ACCESS", 6: "READ", 7: "WRITE", 8: "CREATE",
              19: "FSINFO", 20: "PATHCONF", 21: "COMMIT"}


def stats_json(capsys, path) -> dict:
    rc = main(["stats", "-T", "json", str(path)])
    out = capsys.readouterr().out
    assert rc == 0
    return orjson.loads(out)


@pytest.fixture(scope="module")
def concurrent_doc():
    import io
    import sys
    old = sys.stdout
    sys.stdout = io.TextIOWrapper(io.BytesIO())
    try:
        assert main(["stats", "-T", "json", str(CONCURRENT)]) == 0
        sys.stdout.flush()
        data = sys.stdout.buffer.getvalue()
    finally:
        sys.stdout = old
    return orjson.loads(data)


@pytest.fixture(scope="module")
def tshark_latencies() -> dict[str, list[float]]:
    """NFSv3 latencies by procedure from tshark's fields: the reply's time minus the time of the SEND
    that carried the call (tshark's own rpc.time starts at the frame where it rebuilt a call whose
    data came by RDMA READ, which leaves out the pull of the data)."""
    calls: dict[int, int] = {}
    out: dict[str, list[float]] = {}
    fields = ["frame.time_epoch", "ip.src", "rpcordma.xid", "rpc.msgtyp", "rpc.xid", "nfs.procedure_v3"]
    for row in tshark_fields(CONCURRENT, fields):
        sec, _, frac = row["frame.time_epoch"][0].partition(".")
        t = int(sec) * 1_000_000_000 + int(frac.ljust(9, "0")[:9])
        if row["rpcordma.xid"] and row["ip.src"] == ["192.0.2.2"]:
            calls.setdefault(int(row["rpcordma.xid"][0], 0), t)
        if row["rpc.msgtyp"][:1] == ["1"] and row["nfs.procedure_v3"]:
            xid = int(row["rpc.xid"][0], 0)
            out.setdefault(NFS3_PROCS[int(row["nfs.procedure_v3"][0])], []).append((t - calls[xid]) / 1e9)
    return out


def test_operation_counts_match_tshark(concurrent_doc, tshark_latencies):
    ops = {o["operation"]: o for o in concurrent_doc["overall"]["operations"]}
    nfs3 = {name.split(" ", 1)[1]: o for name, o in ops.items() if name.startswith("NFSv3 ")}
    assert {k: o["count"] for k, o in nfs3.items()} == {k: len(v) for k, v in tshark_latencies.items()}
    assert concurrent_doc["overall"]["transactions"] == 568 == sum(o["count"] for o in ops.values())
    assert concurrent_doc["overall"]["unanswered"] == 0
    assert all(o["answered"] == o["count"] for o in ops.values())


def test_latency_percentiles_match_tshark_timestamps(concurrent_doc, tshark_latencies):
    ops = {o["operation"]: o for o in concurrent_doc["overall"]["operations"]}
    for name, lats in tshark_latencies.items():
        lats = sorted(lats)
        got = ops[f"NFSv3 {name}"]["latency"]
        for p in (50, 90, 99):
            want = lats[max(1, math.ceil(p / 100 * len(lats))) - 1]
            assert got[f"p{p}"] == pytest.approx(want, abs=1e-9), (name, p)
        assert got["max"] == pytest.approx(lats[-1], abs=1e-9)


def test_bytes_inline_read_write_agree_with_the_wire(concurrent_doc):
    o = concurrent_doc["overall"]
    # no loss in this capture: every byte on the wire belongs to a transaction
    assert o["bytes"]["inline"] == o["wire"]["send_bytes"] > 0
    assert o["bytes"]["rdma_read"] == o["wire"]["read_bytes"] == 192 * 4096
    assert o["bytes"]["rdma_write"] == o["wire"]["write_bytes"] > 192 * 4096
    assert o["wire"]["retransmissions"] == 0


def test_credit_usage(concurrent_doc):
    (cred,) = concurrent_doc["overall"]["credits"]
    # the client asks for 128, the server grants 64, and 64 calls are outstanding at the peak
    assert cred["requested"] == 128 and cred["granted_min"] == cred["granted_max"] == 64
    assert cred["peak_outstanding"] == 64 and cred["exceeded"] == 0 and cred["calls"] == 568


def test_per_connection_equals_overall_with_one_connection(concurrent_doc):
    (conn,) = concurrent_doc["connections"]
    for key in ("operations", "bytes", "wire", "credits", "findings", "transactions"):
        assert conn[key] == concurrent_doc["overall"][key]
    assert conn["client"] == "192.0.2.2" and conn["server"] == "192.0.2.1"


def test_loss_capture_psn_counters_and_findings(capsys):
    doc = stats_json(capsys, capture("rxe-ib_write_bw-loss.pcap"))
    o = doc["overall"]
    assert o["operations"] == [] and o["transactions"] == 0
    assert o["wire"]["retransmissions"] == 57 and o["wire"]["naks"] == 14 and o["wire"]["lost"] == 0
    assert o["findings"] == {"ib.retransmission": 57, "ib.nak.psn_sequence": 14}


def test_rnr_time_waited(capsys):
    doc = stats_json(capsys, capture("rxe-ib_send_bw-rnr.pcap"))
    w = doc["overall"]["wire"]
    assert w["rnr_naks"] == 44 and 0 < w["rnr_delay"] < doc["duration"]


def test_text_output(capsys):
    rc = main(["stats", str(FIXTURES / "analysis_transport_drop.pcap")])
    out = capsys.readouterr().out
    assert rc == 0
    lines = out.splitlines()
    assert lines[0].startswith("Statistics: ") and "Overall (1 connections)" in lines
    assert "  Findings: ib.lost_segment 1" in lines
    assert any(ln.startswith("Connection 1 (ib, unknown-setup): 192.0.2.2 QP 0x000021 -> 192.0.2.1 QP 0x000011")
               for ln in lines)


def test_percentile_is_nearest_rank():
    xs = [float(i) for i in range(1, 101)]
    assert percentile(xs, 50) == 50 and percentile(xs, 90) == 90 and percentile(xs, 99) == 99
    assert percentile([3.0], 99) == 3.0 and percentile([], 50) is None
    assert percentile([1.0, 2.0], 50) == 1.0


def _transaction(rpc: RpcSummary | None, proc: str = "RDMA_MSG") -> Transaction:
    return Transaction("rpcrdma", 1, 7, Direction.C2S, Message([1], 0, 100), RpcRdmaFacts(1, proc, None, 32, rpc))


def test_compound_named_by_its_main_operation():
    rpc = RpcSummary(100003, 4, 1, "COMPOUND", "NFSv4.2", ["SEQUENCE", "PUTFH", "READ"])
    assert operation_name(_transaction(rpc)) == "NFSv4.2 COMPOUND(READ)"
    rpc.ops = ["SEQUENCE", "PUTFH", "GETATTR"]
    assert operation_name(_transaction(rpc)) == "NFSv4.2 COMPOUND(GETATTR)"
    assert operation_name(_transaction(None, "RDMA_NOMSG")) == "RPC-over-RDMA RDMA_NOMSG"
    assert operation_name(_transaction(RpcSummary(100099, 1, 5, None, None, None))) == "program 100099 v1 proc 5"


def test_congestion_per_flow(capsys):
    doc = stats_json(capsys, capture("rocev2_cnp_cx4lx.pcap"))
    assert doc["congestion"] == [{"src": "10.0.17.1", "dst": "10.0.18.1", "qp": 0x118, "cnps": 1, "ce_marks": 0}]
    doc = stats_json(capsys, FIXTURES / "analysis_transport_ecn.pcap")
    assert doc["congestion"] == [{"src": "192.0.2.2", "dst": "192.0.2.1", "qp": 0x11, "cnps": 0, "ce_marks": 1}]
    rc = main(["stats", str(capture("rocev2_cnp_cx4lx.pcap"))])
    assert "  Congestion 10.0.17.1 -> 10.0.18.1 QP 0x000118: 1 CNPs, 0 ECN CE / FECN marks" in capsys.readouterr().out


def test_folded_as_textwrap():
    """stats folds its long lines as textwrap.wrap would (without breaking words or at hyphens)."""
    import random
    import textwrap

    from rdmaspy.commands.stats import folded
    rnd = random.Random(33)
    pieces = ["a", "bb", "-", " ", "  ", "\t", "\n", "\xa0", "é", "x" * 30, "\r", " " * 7, "rule.name(12)"]
    for _ in range(3000):
        line = "".join(rnd.choice(pieces) for _ in range(rnd.randint(0, 60)))
        width = rnd.randint(1, 40)
        indent = " " * (len(line) - len(line.lstrip(" ")))
        want = [line] if len(line) <= width else textwrap.wrap(
            line, width, subsequent_indent=indent + "    ", break_long_words=False, break_on_hyphens=False) or [line]
        assert folded([line], width) == want, (line, width)
