"""A packet sent again is one event, said once (ib.retransmission / ib.duplicate, or TCP's note): it opens,
closes and accounts no transaction, segment or credit.

On the lossy fixtures (tests/fixtures/lossy_build.py: real captures with packets sent again, lost
before the capture point and reordered) and on the real lossy and iWARP captures, the transactions
and the findings of the RPC-over-RDMA analysis are those of the capture without the copies; a
hypothesis test sends random packets of real captures again (InfiniBand go-back-N, TCP segments) and
removes the copies the real lossy captures have, and compares the same way.
"""
from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import FIXTURES

sys.path.insert(0, str(FIXTURES))
import lossy_build as lb  # noqa: E402

from rdmaspy.analysis import model  # noqa: E402
from rdmaspy.analysis.analyzer import Analyzer  # noqa: E402
from rdmaspy.analysis.rules import Finding  # noqa: E402
from rdmaspy.analysis.transport import Transport  # noqa: E402
from rdmaspy.engine import Engine  # noqa: E402
from rdmaspy.output.flows import transaction_record  # noqa: E402
from rdmaspy.packet import Frame  # noqa: E402

# The findings of the transport layers: the ones a copy is allowed to add (or a removed copy to take away).
TRANSPORT_RULES = ("ib.",)
RPC_RULES = ("transaction.", "chunk.", "credits.", "rpcrdma.", "rpcrdma2.")
LOSSY = ["rxe-ib_write_bw-loss.pcap", "rxe-read-retry-stall.pcap", "siw-nfsv3-rdma.pcap", "siw-rping.pcap",
         "siw-ib_write_bw-rdmacm.pcap"]


class Run:
    """The analysis of a list of wires, with every frame named by the real frame it copies."""

    def __init__(self, wires: list[lb.Wire]) -> None:
        self.origin = {i: w.origin for i, w in enumerate(wires, 1)}
        self.copies = {i for i, w in enumerate(wires, 1) if w.copy}
        self.transactions: list[dict[str, Any]] = []
        self.again: dict[int, int] = {}          # frame -> the frame of its earlier copy (0: not known)
        self.dissector: dict[int, list[str]] = {}
        an = Analyzer(strict=True, on_record=self._record)
        transport = an.modules["ib.transport"]
        assert isinstance(transport, Transport)
        eng = Engine(strict=True)
        for i, w in enumerate(wires, 1):
            pkt = eng.dissect(Frame(i, w.ts, 1, w.data, len(w.data)))
            an.feed(pkt)
            if transport.again:
                self.again[i] = transport.again_of
            # the dissectors' items but the transport layers' (TCP sequence notes, as ib.* for InfiniBand)
            items = [e.text for e in pkt.expert or () if not isinstance(e, Finding) and e.group != "sequence"]
            if items:
                self.dissector[i] = items
        an.finish()
        self.findings: list[Finding] = an.findings

    def _record(self, rec: model.Record) -> None:
        if isinstance(rec, model.Transaction):
            self.transactions.append(transaction_record(rec))

    def real(self, value: Any, key: str = "") -> Any:
        """``value`` with every frame number (under a key naming frames) turned into the real frame's."""
        if isinstance(value, dict):
            return {k: self.real(v, k) for k, v in value.items()}
        if isinstance(value, list):
            return [self.real(v, key) for v in value]
        if isinstance(value, int) and "frame" in key:
            return self.origin.get(value, value)
        return value

    def rpc_findings(self) -> Counter:
        return Counter((f.rule_def.id, tuple(self.origin.get(n, n) for n in f.frames), f.conn, f.xid)
                       for f in self.findings if not f.rule_def.id.startswith(TRANSPORT_RULES))

    def canonical(self, held: bool = False) -> tuple[list[dict[str, Any]], Counter, dict[int, list[str]]]:
        """Transactions, the findings other than the transport layers', and the dissectors' items of the
        frames that are no copy, all in real frame numbers.  ``held``: a TCP segment was lost before the
        capture point, so the bytes after it are dissected in the frame that fills the hole (the
        steps' frames are left out)."""
        txns = [self.real(t) for t in self.transactions]
        for t in txns:
            # a reply dropped by its responder (sent beyond a lost packet) is taken from its copy, later
            for when in ("latency_ns", "latency", "timing"):
                t.pop(when, None)
            if t.get("reply"):
                t["reply"].pop("ts", None)
            for step in t["steps"]:
                step.pop("ts", None)        # a step moved by a copy that stands in for a lost packet
                if held:
                    step.pop("frames")
        items = {self.origin[i]: v for i, v in self.dissector.items() if i not in self.copies}
        return txns, self.rpc_findings(), items


def same_analysis(a: Run, b: Run, held: bool = False) -> None:
    ta, fa, da = a.canonical(held)
    tb, fb, db = b.canonical(held)
    assert ta == tb
    assert fa == fb
    assert da == db


def real_wires(name: str, count: int | None = None) -> list[lb.Wire]:
    return lb.Edit(name, count).wires


@pytest.mark.parametrize("name", sorted({**lb.FIXTURES, **lb.OTHERS}))
def test_lossy_fixtures_are_what_the_builder_builds(name: str, tmp_path: Path) -> None:
    lb.build(tmp_path)
    assert (tmp_path / f"{name}.pcap").read_bytes() == (FIXTURES / f"{name}.pcap").read_bytes()


@pytest.mark.parametrize("name", sorted(lb.FIXTURES))
def test_copies_leave_the_transactions_and_findings_of_the_real_capture(name: str) -> None:
    wires = lb.FIXTURES[name]()
    lossy = Run(wires)
    real = Run(real_wires(*(("rxe-nfsv3-rdma.pcap", 600) if "rxe" in name else ("siw-nfsv3-rdma.pcap", 600))))
    assert lossy.copies
    same_analysis(lossy, real, held="siw" in name)
    # the copies are said, each once, by the transport layer; nothing else is said on them
    for f in lossy.findings:
        if f.frames[0] in lossy.copies:
            assert f.rule_def.id.startswith(TRANSPORT_RULES), (f.frames, f.text)


def test_a_reply_sent_again_is_no_reply_without_call() -> None:
    """Before: the FSINFO and NULL replies sent again and the WRITE reply with Invalidate sent again
    matched no outstanding call, and the WRITE Only into a closed Reply chunk touched an unadvertised R_Key."""
    run = Run(lb.rxe_nfsv3())
    ids = Counter(f.rule_def.id for f in run.findings)
    assert ids["transaction.reply_without_call"] == 0
    assert ids["transaction.retransmitted_call"] == 0
    assert ids["chunk.unadvertised"] == 0
    # each copy said once: sent again (the copy of a packet lost before the capture point too: its
    # identification is a later one), or a copy made on the way (the same bytes)
    said = Counter(f.frames[0] for f in run.findings if f.frames[0] in run.copies)
    assert said == Counter(run.copies)
    assert {f.rule_def.id for f in run.findings if f.frames[0] in run.copies} == {
        "ib.retransmission", "ib.duplicate"}


def test_a_reply_chunk_write_sent_again_after_the_reply_touches_nothing() -> None:
    run = Run(lb.rxe_nfsv3())
    write_only = next(i for i in run.copies if run.origin[i] == 38)
    assert run.again[write_only] == next(i for i, o in run.origin.items() if o == 38 and i not in run.copies)
    assert [f.rule_def.id for f in run.findings if write_only in f.frames] == ["ib.retransmission"]


def test_a_write_lost_before_the_capture_point_is_accounted_from_its_copy() -> None:
    run = Run(lb.rxe_nfsv3())
    txn = next(t for t in run.transactions if t["xid"] == 0xa8fff5fc)
    assert [(c["status"], c["used"], c["operations"]) for c in txn["chunks"]] == [("full", 65536, 4)]
    assert txn["bytes"]["rdma_write"] == 65536


def _decoded_calls(run: Run) -> set[tuple[int | None, int]]:
    return {(t["conn"], t["xid"]) for t in run.transactions}


@pytest.mark.parametrize("name", LOSSY + [f"{n}.pcap" for n in sorted({**lb.FIXTURES, **lb.OTHERS})])
def test_no_false_finding_on_lossy_and_iwarp_captures(name: str) -> None:
    built = {**lb.FIXTURES, **lb.OTHERS}
    wires = built[name[:-5]]() if name[:-5] in built else real_wires(name)
    run = Run(wires)
    calls = _decoded_calls(run)
    for f in run.findings:
        rid = f.rule_def.id
        if rid == "transaction.reply_without_call":
            assert (f.conn, f.xid) not in calls, f.text
        if rid.startswith(RPC_RULES):
            assert f.frames[0] not in run.again, (rid, f.frames, f.text)


# --- the hypothesis test over real captures -----------------------------------------------------------------
SOURCES = [("rxe-nfsv3-rdma.pcap", 700), ("rxe-nfsv42-rdma.pcap", 500), ("rxe-nfsv3-concurrent.pcap", 600),
           ("rxe-read-retry-stall.pcap", None), ("rxe-ib_write_bw-loss.pcap", 200), ("siw-nfsv3-rdma.pcap", 700),
           ("siw-rping.pcap", None)]


def _candidates(name: str, count: int | None) -> tuple[dict[int, lb.IbRequest], list[int], list[tuple[int, int]]]:
    """A real capture's InfiniBand requests, its TCP segments with a payload, and its WRITE Middles each with
    the Send that follows it on its stream (within 40 requests: a reply after its Write chunk's WRITEs)."""
    e = lb.Edit(name, count)
    reqs = lb.ib_requests(e.real)
    frames = sorted(reqs)
    before_send = []
    for i, o in enumerate(frames):
        if reqs[o].kind == "write" and reqs[o].pos == "middle":
            later = [n for n in frames[i + 1:i + 41] if reqs[n].stream == reqs[o].stream]
            send = next((n for n in later if reqs[n].kind == "send" and reqs[n].pos in ("only", "last")), None)
            if send is not None:
                before_send.append((o, send))
    eng = Engine()
    segments = []
    for o, data in sorted(e.real.items()):
        pkt = eng.dissect(Frame(o, 0, 1, data, len(data)))
        tcp = pkt.layer("tcp")
        if tcp is not None and len(data) > tcp.off + tcp.length + 60 and pkt.conv is not None:
            segments.append(o)
    return reqs, segments, before_send


_CANDIDATES = {src: _candidates(*src) for src in SOURCES}
_REAL_RUNS: dict[tuple[str, int | None], Run] = {}


def _real_run(src: tuple[str, int | None]) -> Run:
    if src not in _REAL_RUNS:
        _REAL_RUNS[src] = Run(real_wires(*src))
    return _REAL_RUNS[src]


@st.composite
def resent(draw: st.DrawFn) -> tuple[tuple[str, int | None], lb.Edit]:
    """A real capture with some of its packets sent again: an InfiniBand requester going back to a PSN
    (go-back-N: every request of its stream from there to a later one, sent again after it), or a TCP
    segment sent again whole a few frames later; on InfiniBand, maybe first a WRITE Middle lost before
    the capture point, the requests after it through a Send dropped by the responder (their ACKs never
    come) and sent again from it, as rxe does after its NAK."""
    src = draw(st.sampled_from(SOURCES))
    reqs, segments, before_send = _CANDIDATES[src]
    e = lb.Edit(*src)
    if before_send and draw(st.booleans()):
        middle, send = draw(st.sampled_from(before_send))
        e.lose(middle, send, draw(st.sampled_from([20_000, 300_000, 2_000_000])))
    picks = draw(st.lists(st.integers(0, 10**6), min_size=1, max_size=4, unique=True))
    for p in picks:
        delay = draw(st.sampled_from([1000, 20_000, 2_000_000]))
        if reqs:
            frames = sorted(reqs)
            first = frames[p % len(frames)]
            stream = [o for o in frames if reqs[o].stream == reqs[first].stream and o >= first]
            last = stream[min(len(stream) - 1, draw(st.integers(0, 6)))]
            e.go_back_n(first, last, delay)
        elif segments:
            o = segments[p % len(segments)]
            later = [w.origin for w in e.wires[e.at(o):] if not w.copy][:12]
            e.resend([o], later[draw(st.integers(0, len(later) - 1))], delay)
    return src, e


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(resent())
def test_analysis_is_the_same_with_packets_sent_again(case: tuple[tuple[str, int | None], lb.Edit]) -> None:
    src, e = case
    same_analysis(Run(e.wires), _real_run(src))


REAL_LOSSY = ["rxe-read-retry-stall.pcap", "rxe-ib_write_bw-loss.pcap"]


def _marked(name: str) -> tuple[list[lb.Wire], Run]:
    """The frames of a real lossy capture with its copies (a packet sent again whose first sending it
    has) marked, and their analysis."""
    wires = real_wires(name)
    for i, earlier in Run(wires).again.items():
        if earlier:
            wires[i - 1].copy = True
    return wires, Run(wires)


_MARKED = {name: _marked(name) for name in REAL_LOSSY}


@pytest.mark.parametrize("name", REAL_LOSSY)
def test_analysis_is_the_same_without_the_copies_a_real_capture_has(name: str) -> None:
    wires, run = _MARKED[name]
    assert run.copies
    same_analysis(Run([w for w in wires if not w.copy]), run)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(REAL_LOSSY), st.data())
def test_analysis_is_the_same_without_any_of_the_copies_a_real_capture_has(name: str, data: st.DataObject) -> None:
    wires, run = _MARKED[name]
    copies = sorted(w.origin for w in wires if w.copy)
    gone = set(data.draw(st.lists(st.sampled_from(copies), min_size=1, unique=True)))
    same_analysis(Run([w for w in wires if w.origin not in gone]), run)


def test_read_responses_lost_before_the_capture_point_are_accounted_from_the_retried_read() -> None:
    """Responses 3 and 4 (frames 108, 109) of the READ of frame 105 (6000 bytes of a WRITE call's Read
    chunk) lost before the capture point; the READ is retried at its PSN and answered whole again."""
    e = lb.Edit("rxe-nfsv3-rdma.pcap", 130)
    e.drop(108)
    e.drop(109)
    e.resend([105], 111, 40_000)
    e.resend([106, 107, 108, 109, 110, 111], 111, 60_000)
    run = Run(e.wires)
    txn = next(t for t in run.transactions if t["xid"] == 0x95fff5fc)
    assert [s["op"] for s in txn["steps"]].count("read") == 1
    assert txn["bytes"]["rdma_read"] == 6000
    assert [(c["status"], c["used"]) for c in txn["chunks"]] == [("full", 6000)]
    assert [f.rule_def.id for f in run.findings if f.xid == 0x95fff5fc] == ["rpcrdma.invalidate_not_negotiated"]


def test_a_read_retried_whole_and_answered_again_accounts_nothing_twice() -> None:
    """The READ of frame 11 of the real stall capture (the call's Position Zero Read chunk, 8236 bytes)
    sent again at its PSN after its responses, and all nine responses again."""
    e = lb.Edit("rxe-read-retry-stall.pcap")
    e.resend([11], 20, 40_000)
    e.resend(list(range(12, 21)), 20, 60_000)
    same_analysis(Run(e.wires), Run(real_wires("rxe-read-retry-stall.pcap")))


@pytest.mark.parametrize("name", ["lossy_rxe_nfsv3.pcap", "lossy_siw_nfsv3.pcap", "siw-nfsv3-rdma.pcap"])
def test_no_reply_without_call_where_tshark_saw_the_call(name: str) -> None:
    """tshark as the oracle of which replies have their call earlier in the capture (same XID)."""
    from conftest import capture, tshark_fields
    path = capture(name)
    rows = tshark_fields(path, ["frame.number", "rpc.xid", "rpc.msgtyp"])
    called: set[str] = set()
    answered: set[int] = set()
    for r in rows:
        for xid, kind in zip(r["rpc.xid"], r["rpc.msgtyp"]):
            if kind == "0":
                called.add(xid)
            elif kind == "1" and xid in called:
                answered.add(int(r["frame.number"][0]))
    assert answered
    built = {**lb.FIXTURES, **lb.OTHERS}
    run = Run(built[name[:-5]]() if name[:-5] in built else real_wires(name))
    false = [f.frames[0] for f in run.findings if f.rule_def.id == "transaction.reply_without_call"
             and f.frames[0] in answered]
    assert false == []


# --- requests the responder dropped: sent beyond a PSN it had not taken -----------------------------------
def test_a_reply_sent_beyond_a_lost_write_is_taken_from_its_copy_in_sequence() -> None:
    """The WRITE Middle of frame 392 (a READ reply's Write chunk) lost before the capture point: the
    WRITEs after it and the reply (415) go by and are dropped by the client, and the server sends them
    all again from 392.  The reply taken is the copy, after every byte of its Write chunk."""
    e = lb.Edit("rxe-nfsv3-rdma.pcap", 700)
    e.lose(392, 415, 300_000)
    run = Run(e.wires)
    copy = next(i for i, w in enumerate(e.wires, 1) if w.copy and w.origin == 415)
    txn = next(t for t in run.transactions if t["reply"] and run.origin[t["reply"]["frame"]] == 415)
    assert txn["reply"]["frame"] == copy
    assert not [f.text for f in run.findings if f.rule_def.id.startswith("chunk.")]
    same_analysis(run, _real_run(("rxe-nfsv3-rdma.pcap", 700)))


def test_a_packet_the_capture_missed_holds_the_reply_only_until_its_ack() -> None:
    """The same WRITE Middle missed by the capture only, and the client's ACKs after it but the one of the
    reply (416): nothing is sent again, the client took them all.  The reply, beyond a PSN not seen taken,
    is held until that ACK shows it taken, then taken from its own frame; the transactions come out in
    the order of the real capture."""
    e = lb.Edit("rxe-nfsv3-rdma.pcap", 700)
    for missed in (392, 413, 414):
        e.drop(missed)
    run = Run(e.wires)
    real = _real_run(("rxe-nfsv3-rdma.pcap", 700))
    assert [t["xid"] for t in run.transactions] == [t["xid"] for t in real.transactions]
    txn = next(t for t in run.transactions if t["reply"] and run.origin[t["reply"]["frame"]] == 415)
    assert txn["reply"]["ts"] == e.ts[415]


@pytest.mark.parametrize("name, replies", [("rxe-nfsv3-loss.pcap", {0xdc76e04b: 1152, 0xdb76e04b: 1491}),
                                           ("rxe-nfsv3-loss-after.pcap", {})])
def test_expert_has_no_chunk_finding_on_real_captures_with_loss(name: str, replies: dict[int, int]) -> None:
    """rxe-nfsv3-loss.pcap: the server's WRITEs lose a PSN before the capture point; the client NAKs it and
    drops what follows, the reply too (frames 1072, 1286); the copies sent again from the lost PSN are what
    it takes (frames 1152, 1491).  rxe-nfsv3-loss-after.pcap: the loss is after the capture point."""
    from conftest import capture
    from rdmaspy.commands.expert import analyse
    findings: list[Finding] = []
    txns: dict[int, int] = {}

    def record(rec: model.Record) -> None:
        if isinstance(rec, model.Transaction) and rec.key in replies and rec.response is not None:
            txns[rec.key] = rec.response.frame
    analyse(str(capture(name)), on_finding=findings.append, on_record=record)
    assert findings
    false = [f.text for f in findings
             if f.rule_def.id.startswith("chunk.") or f.rule_def.id == "transaction.reply_without_call"]
    assert false == []
    assert txns == replies
