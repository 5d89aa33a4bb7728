"""RPC-over-RDMA messages rebuilt from their chunks over iWARP and under loss.

Fixtures: tests/fixtures/rebuild_build.py (real captures with packets dropped, reordered, repeated).
Oracle: tshark 4.0, whose packet-rpcrdma.c marks every message it puts back together with
``rpcordma.reassembled.length`` (and ``.data``): every RPC message tshark rebuilds, rdmaspy rebuilds
too.  rdmaspy also rebuilds the NFS READ replies whose data went into a Write chunk, which tshark 4.0
does not place (it marks them malformed); those are checked against the capture without loss.
"""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from conftest import FIXTURES, capture, tshark_fields, tshark_int
from rdmaspy import craft
from rdmaspy.dissectors import onc_rpc, rpcrdma
from rdmaspy.dissectors.nfs import encode_v3_read_res, encode_v3_write_args
from rdmaspy.dissectors.xdr import p32, p64, popaque
from rdmaspy.engine import Engine
from rdmaspy.packet import Frame, Packet
from rdmaspy.readers import open_capture

# Every iWARP capture and every capture with loss or retransmissions in the test set.
LOSSY_AND_IWARP = ["siw-nfsv3-rdma.pcap", "siw-nfsv41-rdma.pcap", "siw-nfsv3-loss.pcap", "rxe-nfsv3-loss.pcap",
                   "rxe-nfsv3-loss-after.pcap", "siw-rping.pcap", "siw-ib_write_bw-rdmacm.pcap",
                   "rxe-read-retry-stall.pcap", "rxe-ib_write_bw-loss.pcap", "rxe-ib_send_bw-rnr.pcap",
                   "rebuild_ib_read_reordered.pcap", "rebuild_ib_write_retransmitted.pcap",
                   "rebuild_iwarp_tcp_retransmitted.pcap"]
# tshark's Read-chunk calls with holes squeezed out (see glued()), on real captures with loss.
GLUED = {"rxe-nfsv3-loss.pcap": 2}
# Those where tshark rebuilds messages (the others carry no RPC-over-RDMA chunk).
WITH_REBUILDS = {"siw-nfsv3-rdma.pcap", "siw-nfsv41-rdma.pcap", "siw-nfsv3-loss.pcap", "rxe-nfsv3-loss.pcap",
                 "rxe-nfsv3-loss-after.pcap", "rebuild_ib_read_reordered.pcap", "rebuild_ib_write_retransmitted.pcap",
                 "rebuild_iwarp_tcp_retransmitted.pcap"}


def decode(name: str) -> list[Packet]:
    engine = Engine(strict=True)
    with open_capture(str(capture(name))) as cap:
        return [engine.dissect(frame) for frame in cap]


def rebuilt(pkts: list[Packet]) -> dict[int, list[tuple[int, bytes]]]:
    """XID -> (frame, bytes) of every RPC message rebuilt from chunks."""
    out: dict[int, list[tuple[int, bytes]]] = {}
    for num, pkt in enumerate(pkts, 1):
        msg = (pkt.extra or {}).get("rpcrdma.rebuilt")
        if msg is None:
            continue
        lay = pkt.layer("rpcrdma.rebuilt")
        out.setdefault(msg.xid, []).append((num, bytes(lay.buf[lay.off:lay.off + lay.length])))
    return out


def reassembled_xids(pkts: list[Packet]) -> set[int]:
    """The XIDs of every message rdmaspy put back together: from chunks, or from SEND fragments."""
    xids = set(rebuilt(pkts))
    for pkt in pkts:
        msg = (pkt.extra or {}).get("rpcrdma")
        if msg is not None and pkt.layer("rdma.reassembled") is not None:
            xids.add(msg.xid)
    return xids


def tshark_reassembled(name: str) -> dict[int, bytes]:
    """RPC XID -> bytes of every RPC message tshark reassembles.  A READ response sent again after its
    call was rebuilt is reassembled by tshark once more as bare chunk data, with no RPC message in it
    (no rpc.xid): that is not a message, and is left out."""
    rows = tshark_fields(capture(name), ["rpcordma.reassembled.length", "rpcordma.reassembled.data", "rpc.xid"])
    out = {}
    for row in rows:
        if row["rpcordma.reassembled.length"] and row["rpc.xid"]:
            data = bytes.fromhex(row["rpcordma.reassembled.data"][0].replace(":", ""))
            out[tshark_int(row["rpc.xid"][-1])] = data
    return out


def glued(theirs: dict[int, bytes], pkts: list[Packet]) -> set[int]:
    """The XIDs of calls tshark rebuilt shorter than the data of their Read chunks alone: where READ
    responses were lost, tshark 4.0 declares the chunk complete all the same and glues the pieces it
    has, holes squeezed out."""
    chunk_data = {}
    for pkt in pkts:
        msg = (pkt.extra or {}).get("rpcrdma")
        if msg is not None and msg.reads and not msg.is_reply:
            chunk_data[msg.xid] = sum(s.length for s in msg.reads)
    return {x for x, data in theirs.items() if len(data) < chunk_data.get(x, 0)}


@pytest.mark.parametrize("name", LOSSY_AND_IWARP)
def test_every_message_tshark_rebuilds_rdmaspy_rebuilds_too(name):
    """Save the calls tshark glues with holes (rdmaspy rebuilds a message only without holes: the same
    call once its lost READ responses are sent again, else not at all)."""
    theirs = tshark_reassembled(name)
    pkts = decode(name)
    bad = glued(theirs, pkts)
    missing = set(theirs) - bad - reassembled_xids(pkts)
    assert not missing, sorted(hex(x) for x in missing)
    assert bool(theirs) == (name in WITH_REBUILDS)
    assert len(bad) == GLUED.get(name, 0)


@pytest.mark.parametrize("name", sorted(WITH_REBUILDS))
def test_rebuilt_bytes_are_tsharks_and_each_message_is_rebuilt_once(name):
    theirs = tshark_reassembled(name)
    pkts = decode(name)
    ours = rebuilt(pkts)
    bad = glued(theirs, pkts)
    for xid, copies in ours.items():
        assert len(copies) == 1, f"XID 0x{xid:08x} rebuilt in frames {[f for f, _ in copies]}"
        if xid in theirs and xid not in bad:
            assert copies[0][1] == theirs[xid], f"XID 0x{xid:08x}"


# --- 1. over iWARP ------------------------------------------------------------------------------------
def test_iwarp_reply_read_and_write_chunks_are_rebuilt():
    pkts = decode("siw-nfsv3-rdma.pcap")
    ours = rebuilt(pkts)
    assert len(tshark_reassembled("siw-nfsv3-rdma.pcap")) == 266 and len(ours) == 273
    reply = pkts[27].extra["rpcrdma.rebuilt"]           # frame 28: RDMA_NOMSG, GETACL reply in a Reply chunk
    assert reply.xid == 0xEF6DE814 and reply.rebuilt_frames == [27] and reply.rebuilt_rpc.msgtype == 1
    call = pkts[80].extra["rpcrdma.rebuilt"]            # frame 81: the last Read Response of a 6000-byte chunk
    assert call.rebuilt_frames == [69, 71, 72, 78, 80, 81]                  # as tshark lists them
    assert call.rebuilt_rpc.proc == 7 and call.rebuilt_rpc.ddp[0].inline and call.rebuilt_rpc.ddp[0].length == 6000
    read = pkts[437].extra["rpcrdma.rebuilt"]           # frame 438: an NFS READ reply, 64 KiB in a Write chunk
    assert read.xid == 0x116EE814 and read.rebuilt_rpc.ddp[0].length == 65536


def test_iwarp_tcp_retransmissions_and_reordering_rebuild_the_same_messages():
    clean = rebuilt(decode("siw-nfsv3-rdma.pcap"))
    lossy = rebuilt(decode("rebuild_iwarp_tcp_retransmitted.pcap"))
    assert lossy and {x: [d for _f, d in c] for x, c in lossy.items()} == \
        {x: [d for _f, d in c] for x, c in clean.items() if x in lossy}
    assert {0xEF6DE814, 0xFE6DE814, 0x066EE814} <= set(lossy)


# --- 2. Read chunk: READ responses out of order or lost, then sent again ------------------------------------
@pytest.mark.parametrize("xid,psn,frames", [
    (0x99FFF5FC, 10803866, 1 + 16),      # Middle N+4 before the First: complete at the first copy's Last
    (0x95FFF5FC, 10803844, 1 + 5 + 1),   # Middle M+3 lost: complete when the resumed READ's First M+3 comes
])
def test_read_chunk_call_rebuilt_after_out_of_order_or_lost_read_responses(xid, psn, frames):
    clean = rebuilt(decode("rxe-nfsv3-rdma.pcap"))[xid]
    pkts = decode("rebuild_ib_read_reordered.pcap")
    ours = rebuilt(pkts)
    assert [d for _f, d in ours[xid]] == [d for _f, d in clean]
    pkt = pkts[ours[xid][0][0] - 1]
    assert pkt.ib.psn == psn                                    # the packet that filled the last hole
    assert len(pkt.extra["rpcrdma.rebuilt"].rebuilt_frames) == frames      # the call, each packet once


def test_read_chunk_with_a_hole_is_not_rebuilt():
    pkts = decode("rebuild_ib_read_reordered.pcap")[:110]      # cut before the READ asked again
    assert 0x95FFF5FC not in rebuilt(pkts)


# --- 3. Write chunk: WRITEs retransmitted before the reply ---------------------------------------------------
@pytest.mark.parametrize("xid", [0xA8FFF5FC, 0xA9FFF5FC])
def test_write_chunk_reply_rebuilt_once_from_retransmitted_writes(xid):
    clean = rebuilt(decode("rxe-nfsv3-rdma.pcap"))[xid]
    pkts = decode("rebuild_ib_write_retransmitted.pcap")
    ours = rebuilt(pkts)[xid]
    assert [d for _f, d in ours] == [d for _f, d in clean]
    msg = pkts[ours[0][0] - 1].extra["rpcrdma.rebuilt"]
    assert msg.rebuilt_rpc is not None and msg.rebuilt_rpc.ddp[0].length == 65536
    frames = msg.rebuilt_frames
    assert len(frames) == len(set(frames)) == 64            # one packet per 1 KiB placed, each once


def test_fixtures_are_what_the_script_builds(tmp_path):
    spec = importlib.util.spec_from_file_location("rebuild_build", FIXTURES / "rebuild_build.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules["rebuild_build"] = mod
    spec.loader.exec_module(mod)
    mod.HERE = Path(tmp_path)
    mod.main()
    for p in Path(tmp_path).glob("*.pcap"):
        assert p.read_bytes() == (FIXTURES / p.name).read_bytes(), p.name


# --- order and repeats do not matter: every packet is placed at its own address ----------------------------
A, B = "192.0.2.10", "192.0.2.20"
DATA = bytes(range(251)) * 16                      # 4016 bytes: three full 1 KiB packets and a short last one
PARTS = [DATA[i:i + 1024] for i in range(0, len(DATA), 1024)]
HANDLE, VA = 0x88, 0x5000


def run(frames: list[bytes]) -> list[Packet]:
    engine = Engine(strict=True)
    return [engine.dissect(Frame(i + 1, i * 1000, 1, f, len(f))) for i, f in enumerate(frames)]


def write_packet(i: int) -> bytes:
    op = 0x06 if i == 0 else 0x08 if i == len(PARTS) - 1 else 0x07
    ext = {"va": VA, "r_key": HANDLE, "dma_length": len(DATA)} if i == 0 else {}
    return craft.rocev2(op, 0x22, 70 + i, PARTS[i], src=B, dst=A, **ext)


def read_response(i: int) -> bytes:
    op = 0x0D if i == 0 else 0x0F if i == len(PARTS) - 1 else 0x0E
    ext = {"syndrome": 0, "msn": 1} if op != 0x0E else {}
    return craft.rocev2(op, 0x22, 50 + i, PARTS[i], src=A, dst=B, **ext)


def nfs_read_exchange(writes: list[int]) -> list[bytes]:
    """An NFSv3 READ whose 4016 bytes go into a Write chunk by the WRITE packets ``writes`` (indices)."""
    call = onc_rpc.encode_call(0x71, 100003, 3, 6, popaque(b"f" * 32) + p64(0) + p32(len(DATA)))
    reply = onc_rpc.encode_reply(0x71, encode_v3_read_res(DATA, reduced=True))
    return [craft.rocev2(0x04, 0x11, 1, rpcrdma.encode_v1(0x71, 0, 128, writes=[[(HANDLE, len(DATA), VA)]],
                                                          payload=call), src=A, dst=B),
            *[write_packet(i) for i in writes],
            craft.rocev2(0x04, 0x22, 90, rpcrdma.encode_v1(0x71, 0, 8, writes=[[(HANDLE, len(DATA), VA)]],
                                                           payload=reply), src=B, dst=A)]


def nfs_write_exchange(responses: list[int]) -> tuple[list[bytes], bytes]:
    """An NFSv3 WRITE whose 4016 bytes the server pulls by one RDMA READ, answered by ``responses``."""
    reduced = onc_rpc.encode_call(0x72, 100003, 3, 7, encode_v3_write_args(b"f" * 32, 0, DATA, reduced=True))
    call = rpcrdma.encode_v1(0x72, 0, 128, reads=[(len(reduced), HANDLE, len(DATA), VA)], payload=reduced)
    return [craft.rocev2(0x04, 0x11, 1, call, src=A, dst=B),
            craft.rocev2(0x0C, 0x11, 50, b"", src=B, dst=A, va=VA, r_key=HANDLE, dma_length=len(DATA)),
            *[read_response(i) for i in responses]], reduced


EVERY = list(range(len(PARTS)))
PACKETS = st.lists(st.sampled_from(EVERY), max_size=10)


@settings(max_examples=60, deadline=None)
@given(first_copy=PACKETS)
@example(first_copy=EVERY)                          # the whole WRITE twice
@example(first_copy=[0, 1, 3])                      # a Middle lost, then everything again
def test_write_chunk_rebuilt_once_whatever_came_before_a_whole_copy(first_copy):
    """Any WRITE packets, in any order, repeated or missing, then the whole WRITE again: one rebuild,
    the chunk's bytes once."""
    pkts = run(nfs_read_exchange(first_copy + EVERY))
    done = [p for p in pkts if p.extra and "rpcrdma.rebuilt" in p.extra]
    assert len(done) == 1 and done[0] is pkts[-1]
    rpc = done[0].extra["rpcrdma.rebuilt"].rebuilt_rpc
    lay = done[0].layer("rpcrdma.rebuilt")
    assert rpc.ddp[0].length == len(DATA) and DATA in bytes(lay.buf[lay.off:lay.off + lay.length])
    assert len(done[0].extra["rpcrdma.rebuilt"].rebuilt_frames) == len(PARTS)      # each packet's bytes once


@settings(max_examples=60, deadline=None)
@given(rest=st.permutations(EVERY[1:]), repeats=PACKETS)
def test_write_chunk_rebuilt_from_packets_in_any_order_after_the_first(rest, repeats):
    pkts = run(nfs_read_exchange([0] + list(rest) + repeats))
    msg = pkts[-1].extra["rpcrdma.rebuilt"]
    assert msg.rebuilt_rpc.ddp[0].length == len(DATA) and len(msg.rebuilt_frames) == len(PARTS)


@settings(max_examples=60, deadline=None)
@given(order=st.permutations(EVERY), repeats=PACKETS)
def test_read_chunk_rebuilt_from_responses_in_any_order_and_repeated(order, repeats):
    """READ responses in any order (the First anywhere), with repeats: the call is rebuilt once, in the
    packet that filled the last hole, with the chunk's bytes in place."""
    cut = len(order) // 2
    frames, reduced = nfs_write_exchange(list(order[:cut]) + repeats + list(order[cut:]) + repeats)
    pkts = run(frames)
    done = [p for p in pkts if p.extra and "rpcrdma.rebuilt" in p.extra]
    assert len(done) == 1
    lay = done[0].layer("rpcrdma.rebuilt")
    assert bytes(lay.buf[lay.off + len(reduced):lay.off + lay.length]) == DATA


def test_write_chunk_reply_rebuilt_when_the_writes_and_the_reply_are_sent_again():
    """WRITE packets lost before the reply (a hole at its first copy) are sent again after it, and the
    reply with them: the retransmitted reply is rebuilt, once."""
    first = nfs_read_exchange([0, 1, 3])
    pkts = run(first + [write_packet(2), write_packet(3), first[-1], first[-1]])
    done = [i for i, p in enumerate(pkts) if p.extra and "rpcrdma.rebuilt" in p.extra]
    assert done == [len(first) + 2]
    assert pkts[done[0]].extra["rpcrdma.rebuilt"].rebuilt_rpc.ddp[0].length == len(DATA)


def test_real_write_chunk_replies_rebuilt_from_writes_sent_again_after_the_reply():
    """rxe with 2% loss: the WRITEs of two NFS READ replies lost packets before the reply; the server
    sent them again after it, then the reply again, which is rebuilt (tshark 4.0 rebuilds neither)."""
    pkts = decode("rxe-nfsv3-loss.pcap")
    ours = rebuilt(pkts)
    for xid, frame, length in ((0xDC76E04B, 1152, 65536), (0xDB76E04B, 1348, 131072)):
        assert [f for f, _d in ours[xid]] == [frame]
        msg = pkts[frame - 1].extra["rpcrdma.rebuilt"]
        assert msg.rebuilt_rpc.ddp[0].length == length and len(msg.rebuilt_frames) == len(set(msg.rebuilt_frames))


def test_real_write_chunk_replies_rebuilt_from_writes_retransmitted_before_the_reply():
    """rxe with 2% loss after the capture point: each lost WRITE packet and its retransmission are both
    in the capture before the reply; every NFS READ reply is rebuilt at its first copy."""
    pkts = decode("rxe-nfsv3-loss-after.pcap")
    ours = rebuilt(pkts)
    for xid, frame, length in ((0x5706E38B, 612, 65536), (0x5806E38B, 800, 131072), (0x5906E38B, 999, 65536)):
        assert [f for f, _d in ours[xid]] == [frame]
        msg = pkts[frame - 1].extra["rpcrdma.rebuilt"]
        assert msg.rebuilt_rpc.ddp[0].length == length and len(msg.rebuilt_frames) == length // 1024
