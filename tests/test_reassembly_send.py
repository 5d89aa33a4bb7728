"""RC SEND First/Middle/Last reassembled per direction and QP in PSN order, before the transport header
is read; RDMA READ responses and WRITEs matched to advertised chunks."""
from __future__ import annotations

from hypothesis import given, settings, strategies as st

from conftest import capture
from rdmaspy import craft
from rdmaspy.dissectors import onc_rpc, rpcrdma
from rdmaspy.dissectors.nfs import encode_v3_write_args
from rdmaspy.engine import Engine
from rdmaspy.packet import Frame
from rdmaspy.readers import open_capture

A, B = "192.0.2.10", "192.0.2.20"


def big_message(xid: int, size: int) -> bytes:
    call = onc_rpc.encode_call(xid, 100003, 3, 7, encode_v3_write_args(b"f" * 32, 0, bytes(size)))
    return rpcrdma.encode_v1(xid, 0, 128, payload=call)


def split(msg: bytes, mtu: int, psn: int, qp: int = 0x22, src: str = A, dst: str = B) -> list[bytes]:
    parts = [msg[i:i + mtu] for i in range(0, len(msg), mtu)]
    out = []
    for i, part in enumerate(parts):
        op = 0x04 if len(parts) == 1 else 0x00 if i == 0 else 0x02 if i == len(parts) - 1 else 0x01
        out.append(craft.rocev2(op, qp, psn + i, part, src=src, dst=dst))
    return out


def run(frames: list[bytes]):
    eng = Engine(strict=True)
    return [eng.dissect(Frame(i + 1, i, 1, f, len(f))) for i, f in enumerate(frames)]


def test_256k_inline_message_over_many_packets():
    msg = big_message(0x31, 256 * 1024 - 200)
    frames = split(msg, 4096, 100)
    pkts = run(frames)
    assert len(frames) == 64
    assert all(p.layer("rpcrdma") is None and p.layer("rdma.fragment") for p in pkts[:-1])
    last = pkts[-1].extra["rpcrdma"]
    assert last.frames == list(range(1, 65)) and last.rpc.xid == 0x31 and last.rpc.proc == 7
    assert last.rpc.ddp[0].inline and last.rpc.ddp[0].length == 256 * 1024 - 200
    lay = pkts[-1].layer("rdma.reassembled")
    assert lay["rdma.reassembled.length"] == len(msg)


def test_two_directions_and_queue_pairs_interleaved():
    m1, m2 = big_message(0x41, 3000), big_message(0x42, 3000)
    f1 = split(m1, 1024, 10, qp=0x22)
    f2 = split(m2, 1024, 500, qp=0x33)
    pkts = run([x for pair in zip(f1, f2) for x in pair])
    done = {p.extra["rpcrdma"].xid: p.extra["rpcrdma"].frames for p in pkts if p.extra and "rpcrdma" in p.extra}
    assert done == {0x41: [1, 3, 5, 7], 0x42: [2, 4, 6, 8]}


def test_missing_middle_stops_the_message():
    frames = split(big_message(0x51, 3000), 1024, 10)
    pkts = run(frames[:1] + frames[2:])
    assert not any(p.extra and "rpcrdma" in p.extra for p in pkts)
    assert any(e.group == "reassembly" for e in pkts[1].expert or [])


def test_retransmitted_first_restarts_and_duplicate_middle_is_ignored():
    frames = split(big_message(0x52, 3000), 1024, 10)
    order = [frames[0], frames[1], frames[0], frames[1], frames[1], frames[2], frames[3]]
    pkts = run(order)
    assert pkts[4].info_text.endswith("[retransmitted SEND fragment]")
    assert pkts[-1].extra["rpcrdma"].frames == [3, 4, 6, 7]


def test_last_without_first_is_data():
    frames = split(big_message(0x53, 3000), 1024, 10)
    (pkt,) = run([frames[-1]])
    assert pkt.layer("data") is not None and pkt.layer("rpcrdma") is None


def test_non_rpc_payload_reassembles_to_data():
    """ibv_rc_pingpong's 4096-byte SENDs: joined, not taken by any upper layer, shown as data."""
    with open_capture(str(capture("rxe-rc-pingpong.pcap"))) as cap:
        pkts = list(map(Engine(strict=True).dissect, cap))
    lasts = [p for p in pkts if p.layer("rdma.reassembled") is not None]
    assert lasts and all(p.layer("rpcrdma") is None for p in pkts)
    assert all(p.layer("rdma.reassembled")["rdma.reassembled.length"] == 4096 for p in lasts)
    assert all(p.layer("data") is not None for p in lasts)


def test_real_send_first_middle_last_nfs_write():
    with open_capture(str(capture("rxe-nfsv3-rdma.pcap"))) as cap:
        pkts = list(map(Engine(strict=True).dissect, cap))
    msg = pkts[86].extra["rpcrdma"]             # frame 87, SEND Last
    assert msg.frames == [84, 85, 86, 87] and msg.rpc.proc == 7 and msg.rpc.ddp[0].length == 3000


def test_read_response_psn_gap_waits_for_the_missing_packet():
    """A READ response packet missing leaves a hole: no rebuild until the packet comes (here the Middle,
    retransmitted after the Last), then the call is rebuilt in the packet that filled the hole."""
    data = bytes(range(250)) * 12
    reduced = onc_rpc.encode_call(0x61, 100003, 3, 7, encode_v3_write_args(b"f" * 32, 0, data, reduced=True))
    call = rpcrdma.encode_v1(0x61, 0, 128, reads=[(len(reduced), 0x77, 3000, 0x9000)], payload=reduced)
    frames = [craft.rocev2(0x04, 0x22, 1, call, src=A, dst=B),
              craft.rocev2(0x0C, 0x11, 50, b"", src=B, dst=A, va=0x9000, r_key=0x77, dma_length=3000),
              craft.rocev2(0x0D, 0x22, 50, data[:1024], src=A, dst=B, syndrome=0, msn=1),
              craft.rocev2(0x0F, 0x22, 52, data[2048:], src=A, dst=B, syndrome=0, msn=1)]
    pkts = run(frames)
    assert not any(p.extra and "rpcrdma.rebuilt" in p.extra for p in pkts)
    pkts = run(frames + [craft.rocev2(0x0E, 0x22, 51, data[1024:2048], src=A, dst=B)])
    assert [i for i, p in enumerate(pkts) if p.extra and "rpcrdma.rebuilt" in p.extra] == [4]
    assert pkts[4].layer("rpcrdma.rebuilt").buf[len(reduced):] == data


def test_chunked_call_rebuilt_in_segment_pieces():
    """One Read segment pulled by two READ requests (as servers do for large chunks)."""
    data = bytes(range(256)) * 8
    reduced = onc_rpc.encode_call(0x62, 100003, 3, 7, encode_v3_write_args(b"f" * 32, 0, data, reduced=True))
    call = rpcrdma.encode_v1(0x62, 0, 128, reads=[(len(reduced), 0x78, len(data), 0x9000)], payload=reduced)
    frames = [craft.rocev2(0x04, 0x22, 1, call, src=A, dst=B)]
    for k, psn in ((0, 60), (1, 61)):
        frames.append(craft.rocev2(0x0C, 0x11, psn, b"", src=B, dst=A, va=0x9000 + 1024 * k, r_key=0x78,
                                   dma_length=1024))
    for k, psn in ((1, 61), (0, 60)):            # responses of the second request first
        frames.append(craft.rocev2(0x10, 0x22, psn, data[1024 * k:1024 * (k + 1)], src=A, dst=B, syndrome=0,
                                   msn=1))
    pkts = run(frames)
    msg = pkts[-1].extra["rpcrdma.rebuilt"]
    rpc = msg.rebuilt_rpc
    assert rpc.xid == 0x62 and rpc.ddp[0].inline and rpc.length == len(reduced) + len(data)
    assert pkts[-1].layer("rpcrdma.rebuilt").buf[len(reduced):] == data


def test_bounded_tables_drop_their_oldest_entries_in_batches():
    """Past the bound the oldest entries go (an eighth of the bound at once), never the newest."""
    from rdmaspy.dissectors import rdma_reassembly as R
    d = {i: i for i in range(100)}
    R._bound(d, 80)
    assert list(d) == list(range(30, 100))          # 20 over the bound, plus 80 // 8 = 10 more
    R._bound(d, 80)
    assert len(d) == 70                              # under the bound: untouched


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 64), st.binary(min_size=1, max_size=40)), max_size=8,
                unique_by=lambda p: p[0]),
       st.integers(1, 80))
def test_a_segment_is_put_together_from_overlapping_pieces_as_the_bytes_placed_first_say(pieces, length):
    """A chunk segment's bytes from the pieces placed in it (offset, bytes; overlapping, out of order, one
    per offset): the first ``length`` bytes, each taken from the piece of lowest offset that has it, or
    None when a byte of them is missing."""
    from rdmaspy.dissectors import rdma_reassembly as R
    want = bytearray(length)
    have = [False] * length
    for delta, data in sorted(pieces, reverse=True):          # lower offsets written last: they win
        for i, byte in enumerate(data):
            if delta + i < length:
                want[delta + i] = byte
                have[delta + i] = True
    got = R._segment_bytes(list(pieces), length)
    assert got == (bytes(want) if all(have) else None)
