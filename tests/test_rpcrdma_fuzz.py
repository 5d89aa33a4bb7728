"""Random and mutated transport headers: no exception, no allocation sized by a count from the wire;
encoder/decoder round trips."""
from __future__ import annotations

import tracemalloc

from hypothesis import HealthCheck, given, settings, strategies as st

from rdmaspy import craft
from rdmaspy.dissectors import nfs, onc_rpc, rpcrdma, rpcrdma2
from rdmaspy.dissectors.xdr import p32
from rdmaspy.engine import Engine, Session
from rdmaspy.fieldview import layer_nodes
from rdmaspy.packet import Frame, Packet

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
u32 = st.integers(0, 0xFFFFFFFF)
u64 = st.integers(0, (1 << 64) - 1)
seg = st.tuples(u32, u32, u64)
rseg = st.tuples(st.integers(0, 1 << 20).map(lambda x: x * 4), u32, u32, u64)

CALL = onc_rpc.encode_call(0x42, 100003, 3, 7, p32(0) * 6)
SEEDS = [
    rpcrdma.encode_v1(0x42, 0, 8, reads=[(40, 1, 2, 3)], writes=[[(4, 5, 6)]], reply=[(7, 8, 9)], payload=CALL),
    rpcrdma.encode_v1(0x42, 2, 8, align=8, thresh=1024, payload=CALL),
    rpcrdma.encode_v1(0x42, 4, 8, errcode=1),
    rpcrdma2.encode(0x42, 0, flags=2, writes=[[(1, 2, 3)]], payload=CALL),
    rpcrdma2.encode(0x42, 4, errcode=9, error_args={"chunk_index": 1, "length_needed": 9}),
    rpcrdma2.encode(0, 5, props=[(1, 4096), (6, b"abc"), (9, b"zz")]),
    rpcrdma.encode_v1(0x43, 0, 8, payload=onc_rpc.encode_call(0x43, 100003, 4, 1, nfs.encode_compound(
        [(53, bytes(32)), (22, p32(4) + b"abcd"), (38, bytes(28) + p32(3) + b"xyz\0"), (6, p32(5, 1) + b"/\0\0\0"
                                                                                        + p32(1) + b"n\0\0\0"
                                                                                        + p32(0, 0)),
         (18, bytes(12) + p32(0, 0, 0, 1, 0) + bytes(4) + p32(0) + p32(0)), (9, p32(1, 0))]),
        onc_rpc.encode_auth_sys(1, "m", 2, 3, (4,)))),
    rpcrdma.encode_v1(0x44, 0, 8, writes=[[(1, 8, 0)]], payload=onc_rpc.encode_reply(
        0x44, p32(0) + bytes(4) + p32(1) + p32(25, 0, 0, 8))),
]


def _run(body: bytes) -> Packet:
    p = Packet(Frame(1, 0, 1, b"", 0))
    rpcrdma.dissect_rpcrdma(p, body, 0, len(body), Session())
    q = Packet(Frame(1, 0, 1, b"", 0))
    rpcrdma.heuristic(q, body, 0, len(body), Session())
    for pkt in (p, q):            # the trees are built on demand: build them all
        for lay in pkt.layers:
            list(layer_nodes(lay))
    return p


@SETTINGS
@given(st.binary(max_size=300))
def test_random_bytes_never_raise(data):
    _run(data)
    _run(p32(0x42, 1) + data)
    _run(p32(0x42, 2) + data)


@SETTINGS
@given(st.sampled_from(SEEDS), st.lists(st.tuples(st.integers(0, 400), u32), min_size=1, max_size=4),
       st.integers(0, 400))
def test_mutated_headers_never_raise(body, edits, cut):
    b = bytearray(body)
    for pos, word in edits:
        if pos + 4 <= len(b):
            b[pos:pos + 4] = word.to_bytes(4, "big")
    _run(bytes(b))
    _run(bytes(b[:cut]))


@SETTINGS
@given(st.lists(rseg, max_size=4), st.lists(st.lists(seg, max_size=3), max_size=3),
       st.one_of(st.none(), st.lists(seg, max_size=3)), u32, u32)
def test_v1_lists_round_trip(reads, writes, reply, xid, credits):
    body = rpcrdma.encode_v1(xid, 1, credits, reads=reads, writes=writes, reply=reply)
    msg, err = rpcrdma.parse_v1(body, 0, len(body))
    assert err is None and msg.header_len == len(body)
    assert [(s.position, s.handle, s.length, s.offset) for s in msg.reads] == reads
    assert [[(s.handle, s.length, s.offset) for s in c] for c in msg.writes] == writes
    assert (None if msg.reply is None else [(s.handle, s.length, s.offset) for s in msg.reply]) == reply
    assert sum(len(segs) for _p, segs in msg.read_chunks) == len(reads)


@SETTINGS
@given(st.integers(0, 0xFFFF), st.integers(1, 0xFFFF), st.integers(0, 7), u32,
       st.lists(st.tuples(st.integers(1, 200), u32), max_size=5))
def test_v2_round_trip(max_credits, granted, flags, inv, props):
    body = rpcrdma2.encode(9, 5, max_credits=max_credits, granted=granted, flags=flags, props=props)
    msg, err = rpcrdma2.parse_v2(body, 0, len(body))
    assert err is None and (msg.max_credits, msg.granted, msg.flags) == (max_credits, granted, flags)
    assert len(msg.props) == len(props)
    body = rpcrdma2.encode(9, 1, inv_handle=inv, reply=[(1, 2, 3)])
    msg, err = rpcrdma2.parse_v2(body, 0, len(body))
    assert err is None and msg.inv_handle == inv and msg.reply[0].handle == 1


def _peak(fn) -> int:
    tracemalloc.start()
    try:
        fn()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_huge_counts_are_malformed_not_allocated():
    big = 0xFFFFFFFF
    bodies = [
        p32(1, 1, 8, 0, 0, 1, big) + b"\0" * 32,                  # Write chunk of 2^32-1 segments in 60 bytes
        p32(1, 1, 8, 1, 0, 0, 1, big) + b"\0" * 28,               # Reply chunk
        p32(1, 2, 0x10001, 5, 0, big) + b"\0" * 36,               # CONNPROP property count
        p32(1, 2, 0x10001, 5, 0, 1, 6, big) + b"\0" * 28,         # a property's data length
        # an AUTH_SYS credential claiming 2^32-1 auxiliary gids, and an NFSv4 COMPOUND of 2^32-1 ops
        rpcrdma.encode_v1(1, 0, 8, payload=p32(1, 0, 2, 100003, 3, 0, 1, 20, 0, 0, 0, 0, big, 0, 0)),
        rpcrdma.encode_v1(1, 0, 8, payload=p32(1, 0, 2, 100003, 4, 1, 0, 0, 0, 0, 0, 2, big)),
    ]
    for body in bodies:
        assert len(body) <= 96
        peak = _peak(lambda: _run(body))
        assert peak < 256 * 1024, (body.hex(), peak)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.sampled_from([0x00, 0x01, 0x02, 0x04, 0x0A, 0x06, 0x07, 0x08, 0x0C, 0x0D, 0x0E,
                                           0x0F, 0x10]), st.integers(0, 8), st.binary(max_size=80)),
                max_size=12))
def test_random_rc_streams_through_the_engine(ops):
    """SEND fragments, READ responses and WRITEs in any order, with RPC-over-RDMA-looking payloads."""
    eng = Engine(strict=True)
    frames = []
    for op, psn, data in ops:
        payload = (SEEDS[psn % len(SEEDS)] + data) if psn % 2 else data
        kw = {"va": 0x1000, "r_key": 1, "dma_length": len(payload)} if op in (0x0A, 0x06, 0x0C) else {}
        if op in (0x0D, 0x0F, 0x10):
            kw = {"syndrome": 0, "msn": 0}
        frames.append(craft.rocev2(op, 0x22, psn, b"" if op == 0x0C else payload, **kw))
    for i, f in enumerate(frames):
        eng.dissect(Frame(i + 1, i, 1, f, len(f)))
