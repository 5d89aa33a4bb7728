"""NFSv4.1 and 4.2 operations and the NFSv4.1 callback program on the XDR engine (rdmaspy.dissectors.nfs41):
what the declarations show, what they refuse, and that hostile bodies leave a reason, never an exception.
tshark's names and values are held by tests/test_nfs_tshark.py."""
from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from rdmaspy.dissectors import nfs, nfs4, nfs41, onc_rpc
from rdmaspy.dissectors.rpcrdma import CHUNKS
from rdmaspy.dissectors.xdr import p32, p64, popaque, pstring
from rdmaspy.engine import Session, load_dissectors
from rdmaspy.fieldview import layer_nodes
from rdmaspy.packet import Frame, Layer, Packet

load_dissectors()
SEQ = bytes(16) + p32(1, 0, 0, 0)                      # SEQUENCE4args
SEQ_RES = p32(0) + bytes(16) + p32(1, 0, 0, 0, 0)      # NFS4_OK, SEQUENCE4resok
CB_SEQ = bytes(16) + p32(1, 0, 0, 0) + p32(0)          # CB_SEQUENCE4args, no referring calls
STATEID = p32(1) + bytes(range(12))


def message(prog: int, vers: int, body: bytes, xid: int, session: Session, reply: bool = False, chunks=None):
    p = Packet(Frame(2 if reply else 1, 0, 1, b"", 0))
    if chunks is not None:
        p.note(CHUNKS, chunks)
    msg = onc_rpc.encode_reply(xid, body) if reply else onc_rpc.encode_call(xid, prog, vers, 1, body)
    return p, onc_rpc.dissect_rpc(p, msg, 0, len(msg), session, "flow")


def cb_compound(ops: list[tuple[int, bytes]], ident: int = 7) -> bytes:
    return pstring("") + p32(1, ident, len(ops)) + b"".join(p32(op) + body for op, body in ops)


def shown(p: Packet) -> dict[str, list]:
    """Every named item of the packet's NFS layers (the tree's fill), by name."""
    out: dict[str, list] = {}
    for lay in p.layers:
        if lay.proto != "nfs":
            continue
        for _d, item, value, _o, _l in layer_nodes(lay):
            if not isinstance(item, Layer):
                out.setdefault(item.name, []).append(value)
    return out


def test_every_nfsv4_operation_and_every_callback_operation_is_declared():
    assert set(nfs4.ARGS) == set(nfs4.RES) == set(nfs.NFS4_OPS)
    assert set(nfs41.CB_ARGS) == set(nfs41.CB_RES) == set(nfs.NFS_CB_OPS)
    # no hand walker is left beside the declarations
    assert not any(hasattr(nfs, name) for name in ("_V4_ARGS", "_V4_RES", "_CB_ARGS", "_CB_RES"))


def test_exchange_id_shows_its_owner_flags_and_state_protection():
    ops = p32(1, 0x11) + p32(0)             # must_enforce: CLOSE (4) and ACCESS... bits 0 and 4; must_allow: none
    args = p64(9) + popaque(b"owner") + p32(0x10001) + p32(1) + ops + p32(1) + pstring("kernel.org") + \
        pstring("Linux") + p64(5) + p32(6)
    p, info = message(100003, 4, nfs.encode_compound([(42, args)], minor=1), 3, Session())
    got = shown(p)
    assert got["nfs.exchange_id.flags.non_pnfs"] == [True] and got["nfs.exchange_id.flags.moved_refer"] == [True]
    assert got["nfs.exchange_id.state_protect"] == [1] and got["nfs.op_mask"] == [0x11]
    assert [v for v in got["nfs.opcode"] if v != 42] == [0, 4]        # the operations the mask names
    assert got["nfs.nii_domain4"] == ["kernel.org"] and got["nfs.nfstime4.seconds"] == [5]


def test_callback_program_learnt_from_backchannel_ctl():
    """BACKCHANNEL_CTL names the callback program as CREATE_SESSION does (RFC 8881 §18.33): the summary
    path learns it, and calls to it in the reverse direction are CB_COMPOUNDs."""
    s = Session()
    _, info = message(100003, 4, nfs.encode_compound([(53, SEQ), (40, p32(0x40000777) + p32(1, 0))], minor=1), 4, s)
    assert info.ops == ["SEQUENCE", "BACKCHANNEL_CTL"]
    p, cb = message(0x40000777, 1, cb_compound([(11, CB_SEQ)]), 5, s)
    assert cb.ops == ["CB_SEQUENCE"] and p.proto == "NFS CB"


def test_cb_sequence_shows_its_referring_call_lists():
    refs = p32(1) + bytes(range(16)) + p32(2, 10, 1, 11, 2)
    s = Session()
    recall = STATEID + p32(1) + popaque(b"fh")
    p, info = message(nfs.NFS_CB_PROG, 1, cb_compound([(11, CB_SEQ[:-4] + refs), (4, recall)]), 6, s)
    got = shown(p)
    assert info.ops == ["CB_SEQUENCE", "CB_RECALL"] and got["nfs.cb.ops.count"] == [2]
    assert got["nfs.seqid"] == [1, 10, 11] and got["nfs.slotid"] == [0, 1, 2] and got["nfs.truncate"] == [True]
    q, _ = message(0, 0, p32(0) + pstring("") + p32(1) + p32(11) + p32(0) + bytes(16) + p32(1, 0, 15, 15), 6, s,
                   reply=True)
    assert shown(q)["nfs.target_high_slotid"] == [15]


def test_copy_refused_for_its_requirements_shows_them():
    """COPY answers NFS4ERR_OFFLOAD_NO_REQS with the requirements it could meet (RFC 7862 §15.2.3)."""
    s = Session()
    args = STATEID + STATEID + p64(0) + p64(0) + p64(4096) + p32(1, 1) + p32(0)
    message(100003, 4, nfs.encode_compound([(53, SEQ), (60, args)]), 7, s)
    p, info = message(0, 0, nfs.encode_compound([(53, SEQ_RES), (60, p32(10094, 0, 1))], status=10094), 7, s,
                      reply=True)
    got = shown(p)
    assert info.ops == ["SEQUENCE", "COPY"] and p.malformed is None
    assert got["nfs.consecutive"] == [False] and got["nfs.synchronous"] == [True]


def test_read_plus_data_is_never_ddp_eligible():
    """No part of a READ_PLUS reply moves by RDMA (RFC 8267 lists READ's data, not READ_PLUS's): with a
    Write chunk offered, the contents stay inline and take no chunk."""
    s = Session()
    message(100003, 4, nfs.encode_compound([(53, SEQ), (68, STATEID + p64(0) + p32(5))]), 8, s)
    res = p32(0, 1, 1) + p32(0) + p64(0) + popaque(b"hello")
    p, info = message(0, 0, nfs.encode_compound([(53, SEQ_RES), (68, res)], status=0), 8, s, reply=True,
                      chunks=((), 1))
    assert info.ddp is None and shown(p)["nfs.data"] == [b"hello"]


def test_a_tcp_universal_address_shows_its_ipv4_address():
    netloc = p32(3) + pstring("tcp") + pstring("192.0.2.9.8.1")
    p, _ = message(100003, 4, nfs.encode_compound([(61, STATEID + netloc)]), 9, Session())
    assert shown(p)["nfs.universal_address.ipv4"] == [bytes([192, 0, 2, 9])]
    assert nfs41.universal_ipv4("not an address") == bytes(4)


@pytest.mark.parametrize("body, reason", [
    # a files layout whose body holds more than the layout: the operation is malformed, with the reason
    (p32(1) + STATEID + p32(1) + p64(0) + p64(1) + p32(1, 1) + popaque(bytes(16) + p32(0, 0) + p64(0) + p32(0)
                                                                   + bytes(4)),
     "files layout: 4 bytes after its contents"),
    # a state protection of no known kind
    (None, "state_protect4_r: no arm for discriminant 3"),
])
def test_a_malformed_operation_leaves_its_reason_and_the_packet_goes_on(body, reason):
    s = Session()
    if body is None:
        message(100003, 4, nfs.encode_compound([(42, p64(1) + popaque(b"o") + p32(0, 0, 0))]), 10, s)
        body = p64(1) + p32(1, 0, 3)
        op = 42
    else:
        message(100003, 4, nfs.encode_compound([(53, SEQ), (50, p32(0, 1, 1) + bytes(24) + STATEID + p32(9))]),
                10, s)
        op = 50
    head = [] if op == 42 else [(53, SEQ_RES)]
    p, info = message(0, 0, nfs.encode_compound(head + [(op, p32(0) + body)], status=0), 10, s, reply=True)
    assert any(e.group == "malformed" for e in p.expert or ())
    got = shown(p)
    assert any(reason in m for m in got["nfs.malformed"]), got.get("nfs.malformed")


def test_a_notification_bit_without_a_declared_value_is_refused():
    notify = p32(1, 1 << 9) + popaque(b"")               # bit 9: no notify_type4 of that number
    p, _ = message(nfs.NFS_CB_PROG, 1, cb_compound([(11, CB_SEQ), (6, STATEID + popaque(b"fh") + p32(1) + notify)]),
                   11, Session())
    assert any("no value declared for bit 9" in m for m in shown(p)["nfs.malformed"])


_OPS = sorted(op for op in nfs4.ARGS if op >= 40)
_CB_OPS = sorted(nfs41.CB_ARGS)


@pytest.mark.parametrize("prog", [nfs.NFS_PROG, nfs.NFS_CB_PROG])
def test_hostile_operation_bodies_leave_a_reason_and_never_an_exception(prog):
    """Random arguments and results for every declared v4.1/4.2 and callback operation, after a well formed
    SEQUENCE (CB_SEQUENCE) and before another operation: the summary path and the tree's fill raise
    nothing, every item shown lies in the bytes, a body the declarations refuse leaves its reason."""
    cb = prog == nfs.NFS_CB_PROG

    @settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(st.sampled_from(_CB_OPS if cb else _OPS), st.binary(max_size=120), st.binary(max_size=120),
           st.integers(0, 3))
    def hostile(op, args, results, status):
        s = Session()
        if cb:
            call_body = cb_compound([(11, CB_SEQ), (op, args), (4, STATEID + p32(0) + popaque(b"fh"))])
            head = p32(0) + pstring("") + p32(2) + p32(11) + SEQ_RES[:4] + bytes(16) + p32(1, 0, 0, 0)
        else:
            call_body = nfs.encode_compound([(53, SEQ), (op, args), (10, b"")])
            head = p32(0) + pstring("") + p32(2) + p32(53) + SEQ_RES
        st_word = (0, 10008, 10058, 10094)[status]
        for p, _info in (message(prog, 1 if cb else 4, call_body, 12, s),
                         message(0, 0, head + p32(op, st_word) + results, 12, s, reply=True)):
            names = set()
            for lay in p.layers:
                for _d, item, _v, off, ln in layer_nodes(lay):
                    names.add(getattr(item, "name", None) or getattr(item, "proto", None))
                    assert off == -1 or 0 <= off and off + ln <= len(lay.buf)
            if any(e.group == "malformed" for e in p.expert or ()):
                assert "nfs.malformed" in names
    hostile()
