"""NFS names (v3 procedures, v4.x COMPOUND operations, CB_COMPOUND, MOUNT, NLM, NFSACL) and the four
DDP-eligible items of RFC 8267 located in the RPC message.  Argument layouts are written out from
RFC 1813 / RFC 8881 / RFC 7530 here, independently of the walker under test."""
from __future__ import annotations

import pytest

from conftest import capture
from rdmaspy.dissectors import nfs, onc_rpc, rpcrdma
from rdmaspy.dissectors.rpcrdma import CHUNKS
from rdmaspy.dissectors.xdr import p32, p64, popaque, pstring
from rdmaspy.engine import Engine, Session, load_dissectors
from rdmaspy.packet import Frame, Packet
from rdmaspy.readers import open_capture

load_dissectors()
FH = b"\x01" * 28
STATEID = bytes(16)
SEQ = bytes(16) + p32(1, 0, 0, 0)                     # SEQUENCE4args


def call(prog: int, vers: int, proc: int, body: bytes, xid: int = 5, session=None, chunks=None):
    p = Packet(Frame(1, 0, 1, b"", 0))
    if chunks is not None:
        p.note(CHUNKS, chunks)
    msg = onc_rpc.encode_call(xid, prog, vers, proc, body)
    info = onc_rpc.dissect_rpc(p, msg, 0, len(msg), session or Session(), "flow")
    return p, info


def reply(xid: int, body: bytes, session: Session, chunks=None):
    p = Packet(Frame(2, 0, 1, b"", 0))
    if chunks is not None:
        p.note(CHUNKS, chunks)
    msg = onc_rpc.encode_reply(xid, body)
    return p, onc_rpc.dissect_rpc(p, msg, 0, len(msg), session, "flow")


@pytest.mark.parametrize("proc, name", sorted(nfs.NFS3_PROCS.items()))
def test_every_nfsv3_procedure_is_named(proc, name):
    p, info = call(100003, 3, proc, b"")
    assert info.proc_name == name and f"NFSv3 {name} Call" in p.info_text


@pytest.mark.parametrize("prog, vers, proc, text, proto", [
    (100005, 3, 1, "MOUNTv3 MNT Call", "MOUNT"), (100021, 4, 2, "NLMv4 LOCK Call", "NLM"),
    (100227, 3, 1, "NFSACLv3 GETACL Call", "NFSACL"), (100003, 4, 0, "NFSv4 NULL Call", "NFS"),
])
def test_side_programs(prog, vers, proc, text, proto):
    p, _ = call(prog, vers, proc, b"")
    assert text in p.info_text and p.proto == proto


def test_v4_compound_names_each_operation_call_and_reply():
    ops = [(53, SEQ), (22, popaque(FH)), (18, p32(0, 2, 0) + p64(1) + popaque(b"owner") + p32(1, 0) + p32(0, 0)
                                          + p32(0) + pstring("file")),
           (10, b""), (3, p32(0x1F)), (9, p32(2, 0x10011A, 0xB0A23A))]
    s = Session()
    p, info = call(100003, 4, 1, nfs.encode_compound(ops, minor=2, tag="t"), xid=7, session=s)
    assert info.ops == ["SEQUENCE", "PUTFH", "OPEN", "GETFH", "ACCESS", "GETATTR"]
    assert "NFSv4.2 COMPOUND SEQUENCE PUTFH OPEN GETFH ACCESS GETATTR Call" in p.info_text
    res = [(53, p32(0) + bytes(36)), (22, p32(0)),
           (18, p32(0) + STATEID + p32(1) + p64(1) + p64(2) + p32(4) + p32(1, 2) + p32(0)),
           (10, p32(0) + popaque(FH)), (3, p32(0, 0x1F, 0x1F)), (9, p32(0) + p32(1, 2) + popaque(bytes(12)))]
    q, rinfo = reply(7, nfs.encode_compound(res, status=0), s)
    assert rinfo.ops == ["SEQUENCE", "PUTFH", "OPEN", "GETFH", "ACCESS", "GETATTR"]
    assert "NFSv4.2 COMPOUND SEQUENCE PUTFH OPEN GETFH ACCESS GETATTR Reply" in q.info_text


def test_v4_failed_operation_ends_the_reply():
    s = Session()
    call(100003, 4, 1, nfs.encode_compound([(53, SEQ), (22, popaque(FH)), (15, pstring("x")), (10, b"")]), 8,
         session=s)
    _, info = reply(8, nfs.encode_compound([(53, p32(0) + bytes(36)), (22, p32(0)), (15, p32(2))], status=2), s)
    assert info.ops == ["SEQUENCE", "PUTFH", "LOOKUP"] and info.nfs_status == 2


def test_v4_write_data_and_read_result_are_ddp_items():
    write = (38, STATEID + p64(0) + p32(2) + popaque(b"w" * 10))
    p, info = call(100003, 4, 1, nfs.encode_compound([(53, SEQ), (22, popaque(FH)), write, (9, p32(1, 2))]),
                   session=Session())
    (item,) = info.ddp
    assert (item.kind, item.length, item.inline) == ("write_data", 10, True)
    assert info.ops[-1] == "GETATTR"
    # position: RPC header (40) + tag/minor/count (12) + SEQUENCE (4+32) + PUTFH (4+4+28) + WRITE up to data (4+28+4)
    assert item.position == 40 + 12 + 36 + 36 + 36
    # the same call reduced: the data sits in a Read chunk at that position, GETATTR follows the length word
    body = nfs.encode_compound([(53, SEQ), (22, popaque(FH)), (38, STATEID + p64(0) + p32(2) + p32(10)),
                                (9, p32(1, 2))])
    p, info = call(100003, 4, 1, body, chunks=(frozenset({item.position}), ()))
    assert [(d.position, d.inline) for d in info.ddp] == [(item.position, False)] and info.ops[-1] == "GETATTR"
    s = Session()
    call(100003, 4, 1, nfs.encode_compound([(53, SEQ), (22, popaque(FH)), (25, STATEID + p64(0) + p32(100))]), 9,
         session=s)
    _, rinfo = reply(9, nfs.encode_compound([(53, p32(0) + bytes(36)), (22, p32(0)), (25, p32(0, 1, 100))],
                                            status=0), s, chunks=((), (100,)))
    assert [(d.kind, d.length, d.inline, d.chunk) for d in rinfo.ddp] == [("read_data", 100, False, 0)]


def test_an_empty_or_unused_write_chunk_leaves_a_read_result_inline():
    """RFC 8267 §4.3.1: the n-th READ takes the n-th Write chunk; one the reply returns with nothing in it
    (empty: no segment; unused: segments of length zero) leaves that READ's data inline, and the next READ
    takes the next chunk.  The walk goes on after each READ to the operation that follows."""
    s = Session()
    read = (25, STATEID + p64(0) + p32(100))
    call(100003, 4, 1, nfs.encode_compound([(53, SEQ), (22, popaque(FH)), read, read, (9, p32(1, 2))]), 11, session=s)
    res = nfs.encode_compound([(53, p32(0) + bytes(36)), (22, p32(0)), (25, p32(0, 1) + popaque(b"i" * 6)),
                               (25, p32(0, 1, 100)), (9, p32(0) + p32(1, 2) + popaque(b""))], status=0)
    _, rinfo = reply(11, res, s, chunks=((), (0, 100)))
    assert [(d.length, d.inline, d.chunk) for d in rinfo.ddp] == [(6, True, 0), (100, False, 1)]
    assert rinfo.ops[-1] == "GETATTR" and [(f.op, f.status, f.eof) for f in rinfo.nfs][1:] == [(25, 0, True)] * 2


def test_readlink_symlink_and_create_nf4lnk():
    s = Session()
    call(100003, 3, 5, popaque(FH), 20, session=s)
    _, info = reply(20, p32(0, 0) + pstring("/target"), s)
    assert [(d.kind, d.length, d.inline) for d in info.ddp] == [("readlink", 7, True)]
    _, info = call(100003, 3, 10, popaque(FH) + pstring("ln") + p32(1, 0o777, 0, 0, 0, 0, 0) + pstring("/t"))
    assert [(d.kind, d.length) for d in info.ddp] == [("symlink", 2)]
    create = (6, p32(5) + pstring("/dest") + pstring("name") + p32(1, 0) + popaque(b""))
    _, info = call(100003, 4, 1, nfs.encode_compound([(53, SEQ), (22, popaque(FH)), create, (10, b"")]))
    assert [(d.kind, d.length) for d in info.ddp] == [("symlink", 5)] and info.ops[-1] == "GETFH"


def test_cb_compound():
    args = nfs.encode_compound([(11, bytes(16) + p32(1, 0, 0, 0) + p32(0)), (4, STATEID + p32(0) + popaque(FH))],
                               minor=1)
    args = args[:8] + p32(0x1234) + args[8:]         # callback_ident after the minor version
    p, info = call(nfs.NFS_CB_PROG, 1, 1, args)
    assert info.ops == ["CB_SEQUENCE", "CB_RECALL"] and "CB_COMPOUND CB_SEQUENCE CB_RECALL Call" in p.info_text
    assert p.proto == "NFS CB"


def test_every_v4_operation_in_the_real_capture_is_named():
    """No COMPOUND of the NFSv4.2 capture is left partly unwalked."""
    with open_capture(str(capture("rxe-nfsv42-rdma.pcap"))) as cap:
        eng = Engine(strict=True)
        seen = set()
        for pkt in map(eng.dissect, cap):
            for key in ("rpcrdma", "rpcrdma.rebuilt"):
                m = (pkt.extra or {}).get(key)
                rpc = None if m is None else (m.rebuilt_rpc if key == "rpcrdma.rebuilt" else m.rpc)
                if rpc is not None and rpc.ops:
                    assert "…" not in rpc.ops, (pkt.frame.num, rpc.ops)
                    seen.update(rpc.ops)
    assert {"EXCHANGE_ID", "CREATE_SESSION", "SEQUENCE", "OPEN", "WRITE", "READ", "CLOSE",
            "DESTROY_SESSION", "DESTROY_CLIENTID"} <= seen


def test_write_items_of_the_real_v3_capture_match_their_read_chunks():
    with open_capture(str(capture("rxe-nfsv3-rdma.pcap"))) as cap:
        eng = Engine(strict=True)
        checked = 0
        for pkt in map(eng.dissect, cap):
            m = (pkt.extra or {}).get("rpcrdma")
            if m is not None and m.reads and m.rpc is not None:
                (item,) = m.rpc.ddp
                (pos, segs), = m.read_chunks
                assert (item.kind, item.position, item.length, item.inline) == \
                    ("write_data", pos, sum(s.length for s in segs), False)
                checked += 1
            if m is not None and m.writes and m.rpc is not None and m.rpc.msgtype == 1:
                (item,) = m.rpc.ddp
                assert item.kind == "read_data" and not item.inline
                assert item.length == sum(s.length for s in m.writes[0])
                checked += 1
    assert checked == 3 + 7
    assert rpcrdma.NFS_RDMA_PORT == 20049


def test_callback_program_learnt_from_create_session():
    """A client may name its callback program anything: CREATE_SESSION tells (RFC 8881 §18.36)."""
    s = Session()
    attrs = p32(0, 1 << 20, 1 << 20, 4096, 8, 16) + p32(0)          # channel_attrs4, no rdma_ird
    cs = (43, p64(7) + p32(1, 3) + attrs + attrs + p32(0x40000123) + p32(1, 0))
    _, info = call(100003, 4, 1, nfs.encode_compound([cs], minor=1), 30, session=s)
    assert info.ops == ["CREATE_SESSION"]
    args = nfs.encode_compound([(11, bytes(16) + p32(1, 0, 0, 0) + p32(0))], minor=1)
    args = args[:8] + p32(1) + args[8:]
    p, cb = call(0x40000123, 1, 1, args, 31, session=s)
    assert cb.ops == ["CB_SEQUENCE"] and p.proto == "NFS CB"
    q, other = call(0x40000124, 1, 1, args, 32, session=s)          # not learnt: a plain RPC
    assert other.ops is None and q.layer("nfs") is None
    r, again = call(0x40000123, 1, 1, args, 33, session=Session())  # learnt per capture only
    assert again.ops is None


@pytest.mark.parametrize("vers, proc", [(3, 0), (2, 0), (2, 3), (2, 7)])
def test_a_void_reply_has_no_status(vers, proc):
    """NULL (and NFSv2's ROOT and WRITECACHE) answer with nothing: no status to miss."""
    s = Session()
    call(100003, vers, proc, b"", xid=9, session=s)
    p, info = reply(9, b"", s)
    assert info.nfs_status is None and not p.expert and p.malformed is None
    s = Session()
    call(100003, vers, 1, b"", xid=9, session=s)     # GETATTR: its status is due, and missed
    p, info = reply(9, b"", s)
    assert [e.text for e in p.expert] == [f"nfs: nfs.status{vers}: truncated (0 of 4 bytes)"]


@pytest.mark.parametrize("name, frame", [("rxe-nfsv3-rdma.pcap", 6), ("siw-nfsv3-rdma.pcap", 9)])
def test_the_real_nfsv3_null_replies_are_not_malformed(name, frame):
    eng = Engine()
    with open_capture(str(capture(name))) as cap:
        pkts = [eng.dissect(f) for f in cap if f.num <= frame]
    p = pkts[-1]
    assert "NFSv3 NULL Reply" in p.info_text
    assert p.malformed is None and not [e for e in p.expert or () if e.group == "malformed"]


_DECLARED_PROGRAMS = [(100003, 2, sorted(nfs.nfs2.ARGS)), (100003, 3, sorted(nfs.nfs3.ARGS)),
                      (100003, 4, [1]), (100005, 3, list(range(6))), (100021, 4, [1, 2, 3, 4, 5, 20, 23]),
                      (100227, 3, [1, 2, 3])]


@pytest.mark.parametrize("prog, vers, procs", _DECLARED_PROGRAMS)
def test_hostile_bodies_leave_a_reason_and_never_an_exception(prog, vers, procs):
    """Random call and reply bodies for every declared procedure: the summary path and the fill of the
    tree raise nothing; a body the declarations cannot read leaves its reason (``*.malformed``) in the
    tree, the frame's decoding and the capture's go on."""
    from hypothesis import HealthCheck, given, settings, strategies as st

    from rdmaspy.fieldview import layer_nodes

    @settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(st.sampled_from(procs), st.binary(max_size=160), st.binary(max_size=160))
    def hostile(proc, args, results):
        s = Session()
        for p, _info in (call(prog, vers, proc, args, 7, session=s), reply(7, results, s)):
            names = set()
            for lay in p.layers:
                for _d, item, _v, off, ln in layer_nodes(lay):
                    names.add(getattr(item, "name", None) or getattr(item, "proto", None))
                    assert off == -1 or 0 <= off and off + ln <= len(lay.buf)
            if any(e.group == "malformed" for e in p.expert or ()):
                assert names & {"nfs.malformed", "mount.malformed", "nlm.malformed", "nfsacl.malformed"}
    hostile()


def _nfs_values(p) -> dict[str, list]:
    from rdmaspy.fieldview import layer_nodes
    out: dict[str, list] = {}
    for lay in p.layers:
        if lay.proto == "nfs":
            for _d, item, value, _o, _l in layer_nodes(lay):
                if hasattr(item, "name") and not hasattr(item, "proto"):
                    out.setdefault(item.name, []).append(value)
    return out


def test_setclientid_teaches_the_callback_program():
    """An NFSv4.0 client names its callback program in SETCLIENTID (RFC 7530 §16.33): calls to it are
    CB_COMPOUNDs, learnt on the summary path where the arguments are skipped over."""
    s = Session()
    setclientid = (35, p64(1) + popaque(b"client") + p32(0x40000777) + pstring("tcp") + pstring("192.0.2.1.3.4")
                   + p32(1))
    _, info = call(100003, 4, 1, nfs.encode_compound([setclientid, (36, p64(1) + p64(2))], minor=0), 40, session=s)
    assert info.ops == ["SETCLIENTID", "SETCLIENTID_CONFIRM"]
    args = nfs.encode_compound([(4, STATEID + p32(0) + popaque(FH))], minor=0)
    args = args[:8] + p32(1) + args[8:]
    p, cb = call(0x40000777, 1, 1, args, 41, session=s)
    assert cb.ops == ["CB_RECALL"] and p.proto == "NFS CB"
    got = _nfs_values(call(100003, 4, 1, nfs.encode_compound([setclientid], minor=0), 42, session=Session())[0])
    assert got["nfs.cb_program"] == [0x40000777] and got["nfs.r_addr"] == ["192.0.2.1.3.4"]
    assert got["nfs.universal_address.ipv4"] == [bytes((192, 0, 2, 1))]


def test_failed_lock_and_setattr_carry_what_their_rfc_says():
    """LOCK and LOCKT answer NFS4ERR_DENIED with the conflicting lock, SETATTR answers every status with the
    attributes it set, SETCLIENTID NFS4ERR_CLID_INUSE with the client in the way; any other failed operation
    carries nothing (RFC 7530 §16): the walk reads those and reads no further."""
    owner = p64(9) + popaque(b"holder")
    denied = p64(100) + p64(50) + p32(2) + owner
    cases = [
        (12, p32(2, 0) + p64(100) + p64(50) + p32(0) + STATEID + p32(1), 10010, denied,
         {"nfs.offset4": [100], "nfs.length4": [50], "nfs.lock_owner4": [b"holder"], "nfs.clientid": [9]}),
        (13, p32(2) + p64(100) + p64(50) + owner, 10010, denied, {"nfs.locktype4": [2], "nfs.clientid": [9]}),
        (34, STATEID + p32(1, 2) + popaque(bytes(8)), 13, p32(1, 0x10), {"nfs.attr": [4]}),
        (35, p64(1) + popaque(b"c") + p32(7) + pstring("tcp") + pstring("1.2") + p32(1), 10017,
         pstring("tcp") + pstring("192.0.2.9.0.1"), {"nfs.r_addr": ["192.0.2.9.0.1"]}),
        (15, pstring("name"), 2, b"", {}),
    ]
    for op, args, status, carried, want in cases:
        s = Session()
        call(100003, 4, 1, nfs.encode_compound([(22, popaque(FH)), (op, args)], minor=0), 50, session=s)
        body = nfs.encode_compound([(22, p32(0)), (op, p32(status) + carried)], status=status)
        p, info = reply(50, body, s)
        assert info.nfs_status == status and not p.expert and p.malformed is None, op
        got = _nfs_values(p)
        assert "nfs.malformed" not in got, (op, got.get("nfs.malformed"))
        for name, values in want.items():
            assert got[name] == values, (op, name)


def test_v4_declared_operations_are_skipped_on_the_summary_path_to_the_next():
    """The summary path steps over every declared operation by its declaration: the operations after
    OPEN (claims, a delegation with its ACE), READDIR (entries with attributes), LOCK (a new lock owner)
    are found, and the DDP-eligible items placed."""
    s = Session()
    open_args = (18, p32(0, 3, 0) + p64(1) + popaque(b"owner") + p32(1, 2) + p64(5)
                 + p32(2) + STATEID + pstring("f"))
    lock_args = (12, p32(2, 0) + p64(0) + p64(1) + p32(1, 0) + STATEID + p32(0) + p64(1) + popaque(b"lo"))
    create = (6, p32(5) + pstring("/dest") + pstring("ln") + p32(0) + popaque(b""))
    _, info = call(100003, 4, 1, nfs.encode_compound([(22, popaque(FH)), open_args, lock_args, create, (27, b""),
                                                      (10, b"")], minor=0), 60, session=s)
    assert info.ops == ["PUTFH", "OPEN", "LOCK", "CREATE", "READLINK", "GETFH"]
    assert [(d.kind, d.length) for d in info.ddp] == [("symlink", 5)]
    ace = p32(0, 0, 0x1F) + pstring("OWNER@")
    open_res = (18, p32(0) + STATEID + p32(1) + p64(1) + p64(2) + p32(4) + p32(1, 0x10)
                + p32(2) + STATEID + p32(0) + p32(2, 10, 4096) + ace)
    entry = p64(1) + pstring("a") + p32(1, 0x10) + popaque(p64(4096))
    readdir = (26, p32(0) + p64(0) + p32(1) + entry + p32(1) + entry + p32(0, 1))
    res = [(22, p32(0)), open_res, (12, p32(0) + STATEID), (6, p32(0) + p32(1) + p64(1) + p64(2) + p32(0)),
           (27, p32(0) + pstring("/dest")), (10, p32(0) + popaque(FH))]
    _, rinfo = reply(60, nfs.encode_compound(res, status=0), s)
    assert rinfo.ops == ["PUTFH", "OPEN", "LOCK", "CREATE", "READLINK", "GETFH"]
    assert [(d.kind, d.length, d.inline) for d in rinfo.ddp] == [("readlink", 5, True)]
    s = Session()
    call(100003, 4, 1, nfs.encode_compound([(22, popaque(FH)), (26, bytes(24) + p32(0)), (10, b"")]), 61,
         session=s)
    p, rinfo = reply(61, nfs.encode_compound([(22, p32(0)), readdir, (10, p32(0) + popaque(FH))], status=0), s)
    assert rinfo.ops == ["PUTFH", "READDIR", "GETFH"]
    got = _nfs_values(p)
    assert got["nfs.name"] == ["a", "a"] and got["nfs.entry_name"] == ["a", "a"] and got["nfs.dirlist4.eof"] == [True]


@pytest.mark.parametrize("direction", ["call", "reply"])
def test_hostile_v4_operation_bodies_leave_a_reason_and_never_an_exception(direction):
    """Random arguments or results for every declared NFSv4 operation (with the statuses whose failures
    carry data) inside a well-formed COMPOUND: no exception on the summary path or in the tree, and a body
    the declarations cannot read leaves its reason in the tree."""
    from hypothesis import HealthCheck, given, settings, strategies as st

    from rdmaspy.dissectors import nfs4
    from rdmaspy.fieldview import layer_nodes

    @settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(st.sampled_from(sorted(nfs4.ARGS)), st.binary(max_size=200), st.sampled_from([0, 10010, 10017, 13]))
    def hostile(op, body, status):
        s = Session()
        args = body if direction == "call" else b""
        p, _info = call(100003, 4, 1, nfs.encode_compound([(op, args), (10, b"")], minor=0), 70, session=s)
        if direction == "reply":
            p, _info = reply(70, nfs.encode_compound([(op, p32(status) + body)], status=status), s)
        names = set()
        for lay in p.layers:
            for _d, item, _v, off, ln in layer_nodes(lay):
                names.add(getattr(item, "name", None) or getattr(item, "proto", None))
                assert off == -1 or 0 <= off and off + ln <= len(lay.buf)
        if any(e.group == "malformed" for e in p.expert or ()):
            assert "nfs.malformed" in names
    hostile()
