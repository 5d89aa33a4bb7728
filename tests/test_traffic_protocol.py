"""The traffic generator's protocol logic without a device: marshalling, RFC 8797, credits, chunk planning."""
from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as st

from rdmaspy.traffic import protocol as P
from rdmaspy.traffic.protocol import Chunks, Inline, Message, PrivateData, ProtocolError, ReadSegment, Segment

u32 = st.integers(0, 0xFFFFFFFF)
u64 = st.integers(0, (1 << 64) - 1)
segs = st.builds(Segment, u32, u32, u64)
rsegs = st.builds(ReadSegment, u32, u32, u32, u64)
chunks = st.builds(Chunks, st.lists(rsegs, max_size=3).map(tuple),
                   st.lists(st.lists(segs, max_size=3).map(tuple), max_size=2).map(tuple),
                   st.none() | st.lists(segs, max_size=3).map(tuple))


def _same(a: Message, b: Message) -> None:
    assert (a.xid, a.vers, a.credit, a.proc, a.flags, a.inv_handle, a.chunks, a.payload, a.error, a.props) == \
           (b.xid, b.vers, b.credit, b.proc, b.flags, b.inv_handle, b.chunks, b.payload, b.error, b.props)


@settings(max_examples=60, deadline=None)
@given(u32, u32, st.sampled_from([P.RDMA_MSG, P.RDMA_NOMSG]), chunks, st.binary(max_size=64))
def test_v1_message_round_trip(xid, credit, proc, ch, payload):
    m = Message(xid, 1, credit, proc, chunks=ch, payload=payload)
    _same(P.parse(P.build(m)), m)


@settings(max_examples=60, deadline=None)
@given(u32, st.integers(0, 0xFFFF), st.integers(1, 0xFFFF), st.sampled_from([P.RDMA2_MSG, P.RDMA2_NOMSG]),
       st.integers(0, 7), u32, chunks, st.binary(max_size=64))
def test_v2_message_round_trip(xid, mx, grant, htype, flags, inv, ch, payload):
    m = Message(xid, 2, P.credit2(mx, grant), htype, flags, inv, ch, payload)
    got = P.parse(P.build(m))
    _same(got, m)
    assert (got.max_outstanding, got.grant) == (mx, grant)


def test_errors_done_connprop_round_trip():
    for m in (Message(7, 1, 3, P.RDMA_ERROR, error=(P.ERR_VERS, 1, 1)),
              Message(7, 1, 3, P.RDMA_ERROR, error=(P.ERR_CHUNK,)),
              Message(9, 1, 3, P.RDMA_DONE),
              Message(7, 2, P.credit2(8, 8), P.RDMA2_ERROR, P.F_RESPONSE, error=(P.RDMA2_ERR_VERS, 1, 2)),
              Message(7, 2, P.credit2(8, 8), P.RDMA2_ERROR, P.F_RESPONSE, error=(P.RDMA2_ERR_REPLY_RESOURCE, 9000)),
              Message(1, 2, P.credit2(8, 1), P.RDMA2_CONNPROP,
                      props=P.props_u32([(1, 4096), (2, 8192), (5, 0)]) + ((6, b"abcde"),))):
        _same(P.parse(P.build(m)), m)


def test_v1_header_layout_is_rfc8166():
    m = Message(0x01020304, 1, 32, P.RDMA_MSG,
                chunks=Chunks(writes=((Segment(0xAA, 0x1000, 0x1122334455667788),),)), payload=b"RPC!")
    raw = P.build(m)
    assert raw.hex() == ("01020304" "00000001" "00000020" "00000000"      # xid vers credit proc
                         "00000000"                                        # empty read list
                         "00000001" "00000001" "000000aa" "00001000" "1122334455667788" "00000000"
                         "00000000"                                        # no reply chunk
                         + b"RPC!".hex())
    assert m.header_len == len(raw) - 4


@pytest.mark.parametrize("bad", [b"", b"\0" * 15, bytes.fromhex("00000001 00000003 00000001 00000000"),
                                 bytes.fromhex("00000001 00000001 00000001 00000009"),
                                 bytes.fromhex("00000001 00000001 00000001 00000000 00000002"),
                                 bytes.fromhex("00000001 00000001 00000001 00000000 00000000 00000001 7fffffff")])
def test_bad_headers_raise_protocol_error(bad):
    with pytest.raises(ProtocolError):
        P.parse(bad)


@given(st.binary(max_size=80))
def test_parse_never_fails_otherwise(data):
    try:
        P.parse(data)
    except ProtocolError:
        pass


def test_private_data_is_rfc8797_and_found_anywhere():
    linux_client = PrivateData(4096, 4096, True)
    assert linux_client.encode().hex() == "f6ab0e1801010303"
    assert PrivateData.find(b"\0" * 13 + bytes.fromhex("f6ab0e1801000303") + b"\0") == PrivateData(4096, 4096, False)
    assert PrivateData.find(b"\0" * 56) is None
    with pytest.raises(ValueError):
        PrivateData(1000, 4096).encode()


def test_inline_thresholds_follow_both_peers():
    c, s = PrivateData(8192, 4096), PrivateData(4096, 2048)
    assert Inline.negotiate(c, s) == Inline(call=2048, reply=4096)
    assert Inline.negotiate(None, s) == Inline(1024, 1024)        # absent: the defaults hold


def test_credits_are_never_exceeded_unless_asked():
    c = P.Credits(1)
    c.sent()
    assert not c.can_send()
    with pytest.raises(ProtocolError):
        c.sent()
    c.replied(4)
    for _ in range(4):
        c.sent()
    assert not c.can_send() and c.high_water == 4
    with pytest.raises(ProtocolError):
        c.replied(0)
    over = P.Credits(2, overcommit=1)
    for _ in range(3):
        over.sent()
    assert over.high_water == 3 > over.granted
    with pytest.raises(ValueError):
        P.credit2(4, 0)


@pytest.mark.parametrize("proc,size,expect", [
    (P.PROC_NULL, 0, dict(long_call=False, read_chunk=False, write_chunk=False, reply_chunk=0)),
    (P.PROC_ECHO, 100, dict(long_call=False, reply_chunk=0)),
    (P.PROC_ECHO, 2000, dict(long_call=True, reply_chunk=P.RPC_REPLY_HEADER + 4 + 2000)),
    (P.PROC_READ, 9000, dict(write_chunk=True, reply_chunk=0)),
    (P.PROC_WRITE, 9000, dict(read_chunk=True, long_call=False)),
    (P.PROC_BIGREPLY, 5000, dict(reply_chunk=P.RPC_REPLY_HEADER + 4 + 5000)),
    (P.PROC_BIGREPLY, 100, dict(reply_chunk=0)),
    (P.PROC_PULLREPLY, 5000, dict(reply_chunk=0, write_chunk=False)),
])
def test_chunk_planning(proc, size, expect):
    plan = P.plan_call(proc, size, Inline(1024, 1024))
    for k, v in expect.items():
        assert getattr(plan, k) == v, k


def test_pull_reply_is_version_1_only():
    with pytest.raises(ValueError):
        P.plan_call(P.PROC_PULLREPLY, 10, Inline(), vers=2)


def test_segments_split_and_fill():
    s = P.split_segments(5, 0x1000, 2500, 1024)
    assert [x.length for x in s] == [1024, 1024, 452] and s[1].offset == 0x1400
    assert [x.length for x in P.fill_segments(s, 1500)] == [1024, 476, 0]
    with pytest.raises(ProtocolError):
        P.fill_segments(s, 3000)


def test_rpc_call_and_reply():
    call = P.rpc_call(0x42, P.PROC_ECHO, P.xdr_opaque(b"abc"))
    rpc = P.parse_rpc(call)
    assert (rpc.xid, rpc.mtype, rpc.proc, rpc.body) == (0x42, P.RPC_CALL, P.PROC_ECHO, P.xdr_opaque(b"abc"))
    rep = P.parse_rpc(P.rpc_reply(0x42, b"\0\0\0\1"))
    assert (rep.mtype, rep.proc, rep.body) == (P.RPC_REPLY, P.SUCCESS, b"\0\0\0\1")
    with pytest.raises(ProtocolError):
        P.parse_rpc(call[:20])
