"""The fast paths of the RPC-over-RDMA, ONC RPC and NFSv3 decoders agree with the careful walks.

Well-formed headers are read with a few struct unpacks; anything short or out of range goes to
the careful XDR walk, which says what is wrong.  For any header (built from the encoders, then
cut, mutated or given random lengths) the fast path either declines, or yields exactly the facts
and the end offset the careful walk yields."""
from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from rdmaspy.dissectors import nfs, onc_rpc, rpcrdma
from rdmaspy.dissectors.onc_rpc import NULL, RpcInfo
from rdmaspy.dissectors.rpcrdma import RpcRdmaMessage
from rdmaspy.dissectors.xdr import Cursor, XdrError, p32, p64, popaque

from conftest import CAPTURES, FIXTURES

SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
u32 = st.integers(0, 0xFFFFFFFF)
small = st.integers(0, 12)
edits = st.lists(st.tuples(st.integers(0, 200), st.integers(0, 255)), max_size=4)

FACTS = ("rpcvers", "prog", "vers", "proc", "prog_name", "proc_name", "cred_flavor", "uid", "gid", "machinename",
         "gss_proc", "gss_seq", "gss_service", "reply_stat", "accept_stat", "reject_stat")


def _mutate(body: bytes, changes: list[tuple[int, int]], cut: int) -> bytes:
    b = bytearray(body)
    for at, value in changes:
        if at < len(b):
            b[at] = value
    return bytes(b[:max(0, len(b) - cut)])


def _slow_header(buf: bytes, mtype: int) -> tuple[int, RpcInfo] | None:
    info = RpcInfo(0, mtype)
    try:
        return onc_rpc._walk_header(buf, 0, len(buf), info, NULL), info
    except XdrError:
        return None


def _check_rpc(buf: bytes) -> None:
    if len(buf) < 8:
        return
    mtype = int.from_bytes(buf[4:8], "big")
    if mtype > 1:
        return
    fast = RpcInfo(0, mtype)
    body = (onc_rpc._call_facts if mtype == 0 else onc_rpc._reply_facts)(buf, 0, len(buf), fast)
    slow = _slow_header(buf, mtype)
    if body < 0:
        return                       # declined: the careful walk decides
    assert slow is not None, "the fast path accepted a header the careful walk rejects"
    assert body == slow[0]
    assert {f: getattr(fast, f) for f in FACTS} == {f: getattr(slow[1], f) for f in FACTS}


creds = st.one_of(
    st.tuples(u32, st.text(max_size=12), u32, u32, st.lists(u32, max_size=16)).map(
        lambda t: onc_rpc.encode_auth_sys(t[0], t[1], t[2], t[3], tuple(t[4]))),
    st.tuples(small, small, u32, st.integers(1, 3), st.binary(max_size=20)).map(
        lambda t: (6, p32(1, t[1], t[2], t[3]) + popaque(t[4]))),
    st.tuples(st.sampled_from([0, 2, 3, 7]), st.binary(max_size=24)),
)


@SETTINGS
@given(u32, u32, u32, u32, creds, st.tuples(small, st.binary(max_size=12)), st.binary(max_size=16), edits,
       st.integers(0, 40))
def test_call_header_fast_facts_equal_the_walk(xid, prog, vers, proc, cred, verf, body, changes, cut):
    msg = onc_rpc.encode_call(xid, prog, vers, proc, body, cred=cred, verf=verf)
    _check_rpc(msg)
    _check_rpc(_mutate(msg, changes, cut))


@SETTINGS
@given(u32, st.integers(0, 6), st.tuples(small, st.binary(max_size=12)), st.binary(max_size=16), edits,
       st.integers(0, 30), st.sampled_from([None, 0, 1]))
def test_reply_header_fast_facts_equal_the_walk(xid, accept, verf, body, changes, cut, denied):
    msg = onc_rpc.encode_reply(xid, body, accept, verf, denied)
    _check_rpc(msg)
    _check_rpc(_mutate(msg, changes, cut))


def test_known_names_come_from_the_fast_path():
    msg = onc_rpc.encode_call(5, 100003, 3, 6, cred=onc_rpc.encode_auth_sys(1, "host", 10, 20, (30,)))
    info = RpcInfo(5, 0)
    assert onc_rpc._call_facts(msg, 0, len(msg), info) == len(msg)
    assert (info.prog_name, info.proc_name, info.machinename, info.uid, info.gid) == ("NFS", "READ", "host", 10, 20)


# --- RPC-over-RDMA v1 transport header ------------------------------------------------------------------
seg = st.tuples(u32, u32, st.integers(0, (1 << 64) - 1))
rseg = st.tuples(st.integers(0, 4096), u32, u32, st.integers(0, (1 << 64) - 1))
FIELDS = ("version", "xid", "credits", "proc", "align", "thresh", "header_len", "payload_len")


def _segs(segs: list) -> list:
    return [(s.position, s.handle, s.length, s.offset, s.at) for s in segs]


def _check_v1(buf: bytes) -> None:
    if len(buf) < 16:
        return
    xid, vers, credits, proc = rpcrdma._HDR.unpack_from(buf, 0)
    if vers != 1 or proc > 2:
        return
    fast = rpcrdma._parse_v1_fast(buf, 0, len(buf), xid, vers, credits, proc)
    slow, err = rpcrdma.parse_v1(buf, 0, len(buf))
    if fast is None:
        return
    assert err is None, "the fast path accepted a header the careful parse rejects"
    assert {f: getattr(fast, f) for f in FIELDS} == {f: getattr(slow, f) for f in FIELDS}
    assert _segs(fast.reads) == _segs(slow.reads)
    assert [(p, _segs(s)) for p, s in fast.read_chunks] == [(p, _segs(s)) for p, s in slow.read_chunks]
    assert [_segs(c) for c in fast.writes] == [_segs(c) for c in slow.writes]
    assert (fast.reply is None) == (slow.reply is None)
    if fast.reply is not None:
        assert _segs(fast.reply) == _segs(slow.reply)


@SETTINGS
@given(u32, st.integers(0, 2), st.lists(rseg, max_size=3), st.lists(st.lists(seg, max_size=3), max_size=2),
       st.one_of(st.none(), st.lists(seg, max_size=3)), st.binary(max_size=24), edits, st.integers(0, 60))
def test_v1_header_fast_parse_equals_the_careful_parse(xid, proc, reads, writes, reply, payload, changes, cut):
    msg = rpcrdma.encode_v1(xid, proc, 32, reads=reads, writes=writes, reply=reply, payload=payload,
                            align=8, thresh=1024)
    _check_v1(msg)
    _check_v1(_mutate(msg, [(16 + at, v) for at, v in changes], cut))


# --- NFSv3 DDP-eligible items --------------------------------------------------------------------------
def _nfs_facts(buf: bytes, msgtype: int, proc: int, chunks: tuple | None, fast: bool) -> tuple | None:
    info = RpcInfo(1, msgtype)
    info.vers, info.proc = 3, proc
    if fast:
        fn = nfs._v3_write_call if msgtype == 0 else nfs._v3_read_reply
        if not fn(buf, 0, len(buf), info, -8, chunks, True):
            return None
    else:
        nfs._walk_nfs(buf, 0, len(buf), info, NULL, -8, chunks, None)
    ddp = [(d.kind, d.position, d.length, d.inline, d.chunk) for d in info.ddp or ()]
    ops = [(f.op, f.status, f.offset, f.count, f.eof, f.stable, f.ddp is not None) for f in info.nfs or ()]
    return info.nfs_status, ddp, ops


def _check_nfs(buf: bytes, msgtype: int, chunks: tuple | None) -> None:
    proc = 7 if msgtype == 0 else 6
    fast = _nfs_facts(buf, msgtype, proc, chunks, True)
    if fast is not None:
        assert fast == _nfs_facts(buf, msgtype, proc, chunks, False)


@SETTINGS
@given(st.binary(max_size=70), st.integers(0, 1 << 40), st.binary(max_size=40), st.booleans(), edits,
       st.integers(0, 50), st.booleans())
def test_v3_write_call_fast_equals_the_walk(fh, offset, data, reduced, changes, cut, with_chunks):
    body = nfs.encode_v3_write_args(fh, offset, data, reduced=reduced)
    pos = 8 + 4 + ((len(fh) + 3) & ~3) + 20          # the data's place from the RPC start (base -8 here)
    chunks = (frozenset({pos}) if reduced else frozenset(), ()) if with_chunks else None
    for b in (body, _mutate(body, changes, cut)):
        _check_nfs(b, 0, chunks)


@SETTINGS
@given(st.binary(max_size=40), st.booleans(), st.booleans(), st.lists(st.integers(0, 64), max_size=3), edits,
       st.integers(0, 40), st.booleans())
def test_v3_read_reply_fast_equals_the_walk(data, eof, reduced, writes, changes, cut, attrs):
    """Also with Write chunks that returned nothing (empty or unused: the data stays inline)."""
    body = nfs.encode_v3_read_res(data, eof, reduced=reduced)
    if attrs:
        body = body[:4] + p32(1) + bytes(84) + body[8:]
    for b in (body, _mutate(body, changes, cut), p32(70) + p32(0), p32(70) + p32(1) + bytes(84)):
        _check_nfs(b, 1, (frozenset(), tuple(writes)))
        _check_nfs(b, 1, None)


def _op_facts(buf: bytes, msgtype: int, proc: int, fast: bool) -> list[tuple]:
    info = RpcInfo(1, msgtype)
    info.vers, info.proc = 3, proc
    if fast:
        if msgtype == 0:
            nfs._v3_read_call(buf, 0, len(buf), info)
        else:
            nfs._v3_write_reply(buf, 0, len(buf), info)
    else:
        nfs._walk_nfs(buf, 0, len(buf), info, NULL, -8, None, None)
    return [(f.op, f.status, f.offset, f.count, f.eof, f.stable) for f in info.nfs or ()]


@SETTINGS
@given(st.binary(max_size=70), st.integers(0, (1 << 64) - 1), u32, edits, st.integers(0, 50))
def test_v3_read_call_facts_are_the_walks(fh, offset, count, changes, cut):
    """READ3args read word by word (offset, count) as the declaration's walk reads them; where the
    words give way (a handle over 64 bytes, a short body) neither says anything."""
    body = popaque(fh) + p64(offset) + p32(count)
    for b in (body, _mutate(body, changes, cut)):
        assert _op_facts(b, 0, 6, True) == _op_facts(b, 0, 6, False)


@SETTINGS
@given(st.sampled_from([0, 28, 70]), st.booleans(), st.booleans(), u32, st.integers(0, 2), edits, st.integers(0, 40))
def test_v3_write_reply_facts_are_the_walks(status, before, after, count, committed, changes, cut):
    """WRITE3res's count and committed read past the wcc_data word by word, as the walk reads them."""
    wcc = p32(int(before)) + bytes(24 * before) + p32(int(after)) + bytes(84 * after)
    body = p32(status) + wcc + (p32(count, committed) + bytes(8) if status == 0 else b"")
    assert _op_facts(body, 1, 7, True) == _op_facts(body, 1, 7, False)
    mutated = _mutate(body, changes, cut)
    walked = _op_facts(mutated, 1, 7, False)
    if walked:                  # where the walk reads the body whole, the words read the same
        assert _op_facts(mutated, 1, 7, True) == walked


def test_v3_failed_read_reply_is_taken_by_the_fast_path():
    info = RpcInfo(1, 1)
    buf = p32(70, 0)
    assert nfs._v3_read_reply(buf, 0, len(buf), info, 0, None, True) and info.nfs_status == 70 and info.ddp is None


@SETTINGS
@given(u32, u32, u32, st.binary(max_size=20), st.integers(0, 3))
def test_heuristic_takes_rdma_msg_without_chunks_by_the_rpc_xid_and_type(xid, rxid, rtype, tail, chunks):
    """RDMA_MSG without chunks (the short cut) is taken exactly when an RPC call or reply with the
    transport's XID follows; with chunks the general path decides the same way."""
    from rdmaspy.engine import Session
    from rdmaspy.packet import Frame, Packet
    writes = [[(1, 8, 0)]] * (chunks & 1)
    reply = [(2, 8, 0)] if chunks & 2 else None
    body = rpcrdma.encode_v1(xid, 0, 16, writes=writes, reply=reply, payload=p32(rxid, rtype) + tail)
    pkt = Packet(Frame(1, 0, 1, body, len(body)))
    taken = rpcrdma.heuristic(pkt, body, 0, len(body), Session())
    assert taken == (rxid == xid and rtype <= 1)
    if taken:
        msg = pkt.extra["rpcrdma"]
        assert (msg.header_len, msg.payload_len) == (len(body) - 8 - len(tail), 8 + len(tail))
        assert pkt.info[0].startswith(f"RPC-over-RDMA v1 RDMA_MSG xid=0x{xid:08x} credits=16")


# --- the chunk lists: the fused fast path, the declared walk and the builder -----------------------------
def _lists_both_ways(buf: bytes, start: int, end: int) -> tuple[int, RpcRdmaMessage | None, RpcRdmaMessage]:
    """(where the fast path ends or -1, its message or None, the declared walk's message); the walk must
    accept what the fast path accepts."""
    fast = RpcRdmaMessage(1, 0, 0, 0)
    stop = rpcrdma.fast_lists(buf, start, end, fast)
    walked = RpcRdmaMessage(1, 0, 0, 0)
    cur = Cursor(buf, start, end)
    try:
        rpcrdma.parse_lists(cur, walked)
    except XdrError:
        assert stop < 0, "the fast path accepted chunk lists the declared walk rejects"
        return stop, None, walked
    if stop >= 0:
        assert stop == cur.pos
        _same_lists(fast, walked)
    return stop, fast if stop >= 0 else None, walked


def _same_lists(a: RpcRdmaMessage, b: RpcRdmaMessage) -> None:
    assert _segs(a.reads) == _segs(b.reads)
    assert [(p, _segs(s)) for p, s in a.read_chunks] == [(p, _segs(s)) for p, s in b.read_chunks]
    assert [_segs(c) for c in a.writes] == [_segs(c) for c in b.writes]
    assert (a.reply is None) == (b.reply is None)
    if a.reply is not None and b.reply is not None:
        assert _segs(a.reply) == _segs(b.reply)


def _as_built(msg: RpcRdmaMessage) -> bytes:
    """The builder's encoding of a message's chunk lists."""
    return rpcrdma.encode_lists([(s.position, s.handle, s.length, s.offset) for s in msg.reads],
                                [[(s.handle, s.length, s.offset) for s in c] for c in msg.writes],
                                None if msg.reply is None else [(s.handle, s.length, s.offset) for s in msg.reply])


@SETTINGS
@given(st.lists(rseg, max_size=4), st.lists(st.lists(seg, max_size=3), max_size=3),
       st.one_of(st.none(), st.lists(seg, max_size=3)), st.binary(max_size=8), edits, st.integers(0, 40))
def test_built_chunk_lists_parse_the_same_both_ways(reads, writes, reply, tail, changes, cut):
    lists = rpcrdma.encode_lists(reads, writes, reply)
    buf = b"\xee" * 8 + lists + tail          # lists at an offset, followed by something else
    stop, fast, walked = _lists_both_ways(buf, 8, len(buf))
    assert stop == 8 + len(lists) and fast is not None
    assert [(s.position, s.handle, s.length, s.offset) for s in walked.reads] == reads
    assert [[(s.handle, s.length, s.offset) for s in c] for c in walked.writes] == writes
    assert (None if walked.reply is None else [(s.handle, s.length, s.offset) for s in walked.reply]) == reply
    assert _as_built(walked) == lists
    damaged = _mutate(lists, changes, cut)
    _lists_both_ways(damaged, 0, len(damaged))


def test_segments_keep_each_declared_value_under_its_declared_name():
    """parse_lists builds Segments from the declared items' values by position; the tree reads them back
    by the declared names."""
    seg = rpcrdma._read_segment((11, 22, 33, 44), 9)
    assert [getattr(seg, k) for k in rpcrdma.READ_SEGMENT.keys] == [11, 22, 33, 44] and seg.at == 9
    for item in (rpcrdma.WRITE_SEGMENT, rpcrdma.REPLY_SEGMENT):
        seg = rpcrdma._rdma_segment((22, 33, 44), 5)
        assert [getattr(seg, k) for k in item.keys] == [22, 33, 44] and seg.position is None and seg.at == 5


def _capture_lists(path) -> list[str]:
    """Every RPC-over-RDMA message with chunk lists in a capture, its lists read again both ways and built
    again: the kinds of lists seen."""
    from rdmaspy.engine import Engine
    from rdmaspy.readers import open_capture
    engine = Engine()
    seen = []
    with open_capture(str(path)) as cap:
        for frame in cap:
            pkt = engine.dissect(frame)
            msg = pkt.noted(rpcrdma.RPCRDMA)      # the packet's last message (an FPDU may follow another)
            lay = next((lay for lay in reversed(pkt.layers) if lay.proto in ("rpcrdma", "rpcrdma2")), None)
            if msg is None or lay is None or msg.malformed or msg.version not in (1, 2) or msg.proc > 2 or \
                    (msg.version == 2 and msg.proc > 1):
                continue
            wire = _as_built(msg)
            end = lay.off + msg.header_len
            start = end - len(wire)
            assert bytes(lay.buf[start:end]) == wire, frame.num
            stop, fast, walked = _lists_both_ways(lay.buf, start, end)
            assert stop == end and fast is not None, frame.num
            _same_lists(walked, msg)
            seen += ["reads"] * bool(msg.reads) + ["writes"] * bool(msg.writes) + ["reply"] * (msg.reply is not None)
            seen.append("message")
    return seen


CAPTURE_FILES = sorted(CAPTURES.glob("*.pcap")) + sorted(FIXTURES.glob("*.pcap*"))


@pytest.mark.parametrize("path", CAPTURE_FILES, ids=lambda p: p.name)
def test_capture_chunk_lists_parse_the_same_both_ways(path):
    seen = _capture_lists(path)
    if "nfs" in path.name or "rpcrdma" in path.name:
        assert "message" in seen


def test_the_captures_hold_every_kind_of_chunk_list():
    kinds = set()
    for name in ("rxe-nfsv3-rdma.pcap", "siw-nfsv3-rdma.pcap", "rxe-nfsv42-rdma.pcap"):
        kinds.update(_capture_lists(CAPTURES / name))
    assert kinds >= {"reads", "writes", "reply"}


# --- NFSv4 operations' facts (RpcInfo.nfs) ----------------------------------------------------------------
def _v4_facts(ops: list[tuple[int, bytes]], reply: bool) -> list[tuple]:
    body = nfs.encode_compound(ops, minor=1, status=0 if reply else None)
    info = RpcInfo(1, int(reply))
    info.vers, info.proc = 4, 1
    nfs._walk_nfs(body, 0, len(body), info, NULL, -8, None, None)
    return [(f.op, f.status, f.offset, f.count, f.eof, f.stable, f.session, f.slot, f.sequence, f.highest, f.target,
             None if f.ddp is None else f.ddp.length) for f in info.nfs or ()]


stateid = st.fixed_dictionaries({"seqid": u32, "other": st.binary(min_size=12, max_size=12)})
u64 = st.integers(0, (1 << 64) - 1)


@SETTINGS
@given(st.binary(min_size=16, max_size=16), u32, u32, u32, u32, u32, stateid, u64, u32, st.integers(0, 2),
       st.binary(max_size=40), st.booleans())
def test_v4_operation_facts_are_the_declarations_values(session, seq, slot, highest, target, flags, sid, offset,
                                                        count, stable, data, eof):
    """SEQUENCE, READ and WRITE read word by word from their arguments and results, as their declarations
    decode them (the NFSv4 COMPOUND's summary walk skips them by the same declarations)."""
    from rdmaspy.dissectors import nfs4
    from rdmaspy.dissectors.xdrlang import encode
    seq_args = {"sessionid": session, "sequenceid": seq, "slotid": slot, "highest_slotid": highest, "cachethis": True}
    ops = [(53, encode(nfs4.ARGS[53], seq_args)),
           (25, encode(nfs4.ARGS[25], {"stateid": sid, "offset": offset, "count": count})),
           (38, encode(nfs4.ARGS[38], {"stateid": sid, "offset": offset, "stable": stable, "data": data}))]
    assert _v4_facts(ops, False) == [(53, None, None, None, None, None, session, slot, seq, highest, 0, None),
                                     (25, None, offset, count, None, None, None, 0, 0, 0, 0, None),
                                     (38, None, offset, None, None, stable, None, 0, 0, 0, 0, len(data))]
    seq_res = {"sessionid": session, "sequenceid": seq, "slotid": slot, "highest_slotid": highest,
               "target_highest_slotid": target, "status_flags": flags}
    res = [(53, p32(0) + encode(nfs4.RES[53], seq_res)),
           (25, p32(0) + encode(nfs4.RES[25], {"eof": int(eof), "data": data})),
           (38, p32(0) + encode(nfs4.RES[38], {"count": count, "committed": stable, "writeverf": offset})),
           (25, p32(10025))]          # a READ that failed: its status, nothing else
    assert _v4_facts(res, True) == [(53, 0, None, None, None, None, session, slot, seq, highest, target, None),
                                    (25, 0, None, None, eof, None, None, 0, 0, 0, 0, len(data)),
                                    (38, 0, None, count, None, stable, None, 0, 0, 0, 0, None),
                                    (25, 10025, None, None, None, None, None, 0, 0, 0, 0, None)]
