"""Chunk accounting: every advertised segment against the bytes RDMA READ and WRITE moved there."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st

sys.path.insert(0, str(Path(__file__).resolve().parent / "fixtures"))

import analysis_build as ab  # noqa: E402
from analysis_run import analyse, analyse_frames  # noqa: E402

from rdmaspy.analysis.ledger import SegmentLedger  # noqa: E402
from rdmaspy.analysis.model import Segment, SegmentState, Side  # noqa: E402
from rdmaspy.analysis.rpcrdma_facts import ChunkList  # noqa: E402

NFS_CAPTURES = ("rxe-nfsv3-rdma.pcap", "rxe-nfsv42-rdma.pcap", "rxe-nfsv3-concurrent.pcap", "siw-nfsv3-rdma.pcap")


@pytest.mark.parametrize("name", NFS_CAPTURES)
def test_every_segment_of_a_real_capture_is_accounted_for(name):
    res = analyse(name)
    segs = [s for t in res.transactions for s in t["chunks"]]
    assert segs
    for s in segs:
        assert s["status"] in ("full", "partial", "unused", "empty")
        assert s["overrun"] == 0 and 0 <= s["used"] <= s["length"]
        if "reported" in s:          # Write list / Reply chunk of the reply: the lengths written
            assert s["reported"] == s["used"]
    assert not [f for f in res.own if f.rule_def.id.startswith("chunk.")]
    assert all(c["unadvertised_operations"] == 0 for c in res.records["rpcrdma.connection"])


@pytest.mark.parametrize("name", NFS_CAPTURES)
def test_bytes_of_the_operations_equal_the_bytes_used(name):
    res = analyse(name)
    for t in res.transactions:
        moved = sum(s["bytes"] for s in t["steps"] if s["op"] in ("read", "write"))
        assert moved == sum(s["used"] for s in t["chunks"]) == t["bytes"]["rdma_read"] + t["bytes"]["rdma_write"]


@pytest.mark.parametrize("name", ["rxe-nfsv3-rdma.pcap", "siw-nfsv3-rdma.pcap"])
def test_read_chunks_of_writes_are_read_in_full(name):
    """NFSv3 WRITEs over RoCE and iWARP: the server reads every byte of each Read chunk before it replies
    (iWARP: Read Responses land at the sink STag; their offset is carried back to the source segment)."""
    res = analyse(name)
    reads = [s for t in res.transactions for s in t["chunks"] if s["list"] == "read"]
    assert reads and all(s["status"] == "full" for s in reads)
    assert all(s["memory_of"] == "client" for s in reads)


@pytest.mark.parametrize("name", ["rxe-nfsv3-rdma.pcap", "siw-nfsv3-rdma.pcap"])
def test_write_chunks_of_reads_hold_what_the_reply_reports(name):
    res = analyse(name)
    writes = [(t, s) for t in res.transactions for s in t["chunks"] if s["list"] == "write"]
    assert writes
    for t, s in writes:
        assert t["rpc"]["name"] == "READ"
        assert s["reported"] == s["used"] > 0


def test_partly_used_reply_chunk_says_how_much():
    """GETACL of frame 36: a Reply chunk of 256 + 28672 + 4 bytes, the server writes 136 into the first."""
    res = analyse("rxe-nfsv3-rdma.pcap")
    t = next(t for t in res.transactions if t["xid"] == 0x86FFF5FC)
    st = [(s["length"], s["used"], s["status"]) for s in t["chunks"]]
    assert st == [(256, 136, "partial"), (28672, 0, "unused"), (4, 0, "unused")]


def test_clean_conversation_accounts_every_segment():
    res = analyse_frames(ab.scenario_v1())
    assert res.rules() == []
    got = {(t["xid"], s["list"]): (s["used"], s["status"]) for t in res.transactions for s in t["chunks"]}
    assert got[(0x1002, "write")] == (3000, "partial")
    assert got[(0x1003, "read")] == (2500, "full")
    assert got[(0x1004, "reply")][1] == "partial"
    assert got[(0x1005, "read")][1] == "full"


def test_reply_chunk_overrun_is_the_connection_killing_case():
    res = analyse_frames(ab.scenario_v1(reply_overrun=True))
    assert res.rules() == ["chunk.reply_overrun"]
    f = res.own[0]
    assert f.args["handle"] == 0xA300 and f.args["outside"] == f.args["length"] - 1024 > 0
    seg = next(s for t in res.transactions if t["xid"] == 0x1004 for s in t["chunks"])
    assert seg["status"] == "overrun" and seg["used"] == 1024 and seg["overrun"] == f.args["outside"]


def test_write_into_an_unadvertised_rkey():
    res = analyse_frames(ab.scenario_v1(unadvertised=True))
    assert res.rules() == ["chunk.unadvertised"]
    f = res.own[0]
    assert f.args["handle"] == 0xDEAD and f.args["op"] == "WRITE" and f.xid is None
    assert res.records["rpcrdma.connection"][0]["unadvertised_operations"] == 1


def test_write_list_length_that_differs_from_the_bytes_written():
    res = analyse_frames(ab.scenario_v1(write_length=True))
    assert res.rules() == ["chunk.write_length_mismatch"]
    assert res.own[0].args["reported"] == 2900 and res.own[0].args["written"] == 3000


def test_read_request_past_the_read_chunk():
    res = analyse_frames(ab.scenario_v1(read_overrun=True))
    assert res.rules() == ["chunk.read_overrun"]
    assert res.own[0].args["outside"] == 100


def test_a_reply_chunk_nobody_offered():
    # The server writes a reply into memory the call did not offer and says so in a Reply chunk: both show.
    res = analyse_frames(ab.scenario_v1(reply_chunk_unoffered=True))
    assert res.rules() == ["chunk.unadvertised", "rpcrdma.reply_chunk_unoffered"]


def test_ranges_are_merged_so_a_retransmission_counts_once():
    seg = Segment(ChunkList.WRITE, 0, 0, None, 7, 1000, 100, Side.CLIENT)
    seg.add(0, 40, 1)
    seg.add(40, 60, 2)
    seg.add(0, 40, 3)        # the same bytes again
    seg.add(90, 100, 4)
    assert seg.used == 70 and seg.spans == [[0, 60], [90, 100]] and seg.state is SegmentState.PARTIAL
    assert seg.frames == [1, 2, 3, 4]


def test_a_range_is_marked_on_the_segments_of_one_handle_it_falls_in():
    book = SegmentLedger()
    a = Segment(ChunkList.REPLY, 0, 0, None, 9, 1000, 100, Side.CLIENT)
    b = Segment(ChunkList.REPLY, 0, 1, None, 9, 1100, 50, Side.CLIENT)
    book.advertise(a)
    book.advertise(b)
    assert book.touched(Side.CLIENT, 9, 1050, 120) == 20
    assert (a.ops, b.ops) == (1, 1)
    assert book.moved(Side.CLIENT, 9, 1050, 120, 7) == 20
    assert (a.spans, b.spans, a.frames, b.frames) == ([[50, 100]], [[0, 50]], [7], [7])
    assert book.moved(Side.SERVER, 9, 1050, 10, 8) == 10 and book.touched(Side.SERVER, 9, 1050, 10) == 10
    assert (a.ops, b.ops, a.frames) == (1, 1, [7])
    book.withdraw(a)
    book.withdraw(b)
    assert not book.known(Side.CLIENT, 9)


def test_reply_chunk_length_that_differs_from_the_bytes_written():
    from analysis_build import CLIENT, SERVER, Wire

    from rdmaspy.dissectors import onc_rpc, rpcrdma
    from rdmaspy.dissectors.xdr import p32, popaque
    w = Wire()
    w.cm()
    call = onc_rpc.encode_call(0x1, ab.NFS, ab.V3, 1, popaque(ab.FH), (0, b""))
    w.send(CLIENT, rpcrdma.encode_v1(0x1, 0, 32, reply=[(0xE1, 1024, 0x9000)], payload=call))
    reply = onc_rpc.encode_reply(0x1, p32(0) + bytes(160))
    w.write(SERVER, 0xE1, 0x9000, reply)
    w.send(SERVER, rpcrdma.encode_v1(0x1, 1, 8, reply=[(0xE1, len(reply) + 100, 0x9000)]))
    res = analyse_frames(w.out())
    assert res.rules() == ["chunk.reply_length_mismatch"]
    assert res.own[0].args["written"] == len(reply) and res.own[0].args["reported"] == len(reply) + 100


_KERNEL = 0xFFFF888100000000      # a kernel virtual address: beyond the compiled build's machine integers


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 300), st.integers(0, 120)), min_size=1, max_size=4),
       st.integers(-50, 400), st.integers(-5, 200), st.sampled_from([0, _KERNEL, (1 << 64) - 512]))
def test_a_moved_range_is_its_overlap_with_each_segment(segs, at, n, base):
    """Each segment's share of [va, va + n) is its overlap with it, relative to the segment, and the rest is
    outside, whether the addresses are small or kernel ones (the overlap is computed relative to each
    segment); an operation's start counts one on each segment it overlaps."""
    book = SegmentLedger()
    made = [Segment(ChunkList.WRITE, 0, i, None, 9, base + off, length, Side.CLIENT)
            for i, (off, length) in enumerate(segs)]
    for s in made:
        book.advertise(s)
    va = base + at
    outside_start = book.touched(Side.CLIENT, 9, va, n)
    outside = book.moved(Side.CLIENT, 9, va, n, 1)
    inside = 0
    for s in made:
        lo, hi = max(va, s.offset), min(va + n, s.offset + s.length)
        overlaps = n > 0 and lo < hi
        assert s.spans == ([[lo - s.offset, hi - s.offset]] if overlaps else [])
        assert s.ops == (1 if overlaps else 0)
        inside += hi - lo if overlaps else 0
    assert outside == outside_start == max(n, 0) - inside