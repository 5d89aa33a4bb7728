"""ONC RPC (RFC 5531) headers: call, credentials, reply statuses, call/reply matching; layouts written out
from the RFC's XDR (section 9) rather than from the encoder."""
from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as st

from rdmaspy.dissectors import onc_rpc
from rdmaspy.dissectors.xdr import p32, popaque, pstring
from rdmaspy.engine import Session, load_dissectors
from rdmaspy.fieldview import layer_nodes
from rdmaspy.packet import Frame, Packet

load_dissectors()      # the program dissectors (nfs.py) register the names


def values(lay, name: str) -> list:
    return [v for _d, f, v, _o, _l in layer_nodes(lay) if getattr(f, "name", "") == name]


def dissect(body: bytes, session: Session | None = None, num: int = 1, ts: int = 0):
    p = Packet(Frame(num, ts, 1, b"", 0))
    info = onc_rpc.dissect_rpc(p, body, 0, len(body), session or Session(), ("a", "b"))
    return p, info


def test_call_layout_and_auth_sys_fields():
    cred = p32(7) + pstring("host") + p32(1000, 100, 2, 4, 24)
    body = p32(9, 0, 2, 100005, 3, 1) + p32(1) + popaque(cred) + p32(0, 0)
    assert onc_rpc.encode_call(9, 100005, 3, 1, cred=onc_rpc.encode_auth_sys(7, "host", 1000, 100, (4, 24))) == body
    p, info = dissect(body)
    assert (info.xid, info.msgtype, info.prog, info.vers, info.proc) == (9, 0, 100005, 3, 1)
    assert (info.prog_name, info.proc_name) == ("MOUNT", "MNT")
    assert (info.cred_flavor, info.uid, info.gid, info.machinename) == (1, 1000, 100, "host")
    lay = p.layer("rpc")
    assert values(lay, "rpc.auth.gid") == [100, 4, 24]
    assert values(lay, "rpc.auth.flavor") == [1, 0]
    assert "| MOUNTv3 MNT Call" in p.info_text


def test_rpcsec_gss_is_named_and_its_body_left_alone():
    cred = p32(1, 0, 17, 2) + popaque(b"ctx-handle")
    body = p32(10, 0, 2, 100003, 3, 7) + p32(6) + popaque(cred) + p32(6) + popaque(b"mic!") + b"\x01" * 40
    p, info = dissect(body)
    assert (info.cred_flavor, info.gss_proc, info.gss_seq, info.gss_service) == (6, 0, 17, 2)
    lay = p.layer("rpc")
    assert values(lay, "rpc.authgss.service") == [2] and values(lay, "rpc.authgss.context") == [b"ctx-handle"]
    assert p.layer("nfs") is None          # integrity-wrapped arguments are not NFS XDR


def test_reply_is_named_after_its_call_and_timed():
    s = Session()
    dissect(onc_rpc.encode_call(11, 100003, 3, 6), s, num=4, ts=1_000_000)
    p, info = dissect(p32(11, 1, 0, 0, 0, 0) + p32(0) + bytes(84), s, num=9, ts=3_500_000)
    assert (info.prog, info.vers, info.proc, info.call_frame) == (100003, 3, 6, 4)
    assert p.layer("rpc")["rpc.reqframe"] == 4 and p.layer("rpc")["rpc.time"] == pytest.approx(0.0025)
    assert "NFSv3 READ Reply" in p.info_text


@pytest.mark.parametrize("body, field, value, text", [
    (p32(1, 1, 0, 0, 0, 2, 2, 4), "rpc.programversion.min", 2, "PROG_MISMATCH"),
    (p32(1, 1, 0, 0, 0, 4), "rpc.state_accept", 4, "GARBAGE_ARGS"),
    (p32(1, 1, 1, 0, 2, 2), "rpc.version.min", 2, "denied RPC_MISMATCH"),
    (p32(1, 1, 1, 1, 5), "rpc.state_auth", 5, "denied AUTH_ERROR"),
])
def test_reply_statuses(body, field, value, text):
    p, info = dissect(body)
    assert p.layer("rpc")[field] == value and text in p.info_text and p.malformed is None


def test_encode_reply_denied_layout():
    assert onc_rpc.encode_reply(3, denied=0) == p32(3, 1, 1, 0, 2, 2)
    assert onc_rpc.encode_reply(3, denied=1) == p32(3, 1, 1, 1, 1)


@pytest.mark.parametrize("body, needle", [
    (p32(1, 2), "neither call"),
    (p32(1, 1, 7), "reply status 7"),
    (p32(1, 0, 2, 100003), "truncated"),
    (p32(1, 0, 2, 100003, 3, 0, 1, 500) + bytes(500), "at most 400"),
])
def test_bad_messages_are_malformed(body, needle):
    p, _ = dissect(body)
    assert p.malformed and needle in p.malformed


def _SmallCalls() -> onc_rpc._Calls:
    return onc_rpc._Calls(limit=4, answered=3)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(0, 9), max_size=80))
def test_calls_table_keeps_the_newest_calls_in_order(keys):
    """The bounded call table behaves as a dict that moves a key re-added to the end and drops its
    first key past the bound (what a reply can still be matched to)."""
    calls = _SmallCalls()
    model: dict[int, list] = {}
    for i, k in enumerate(keys):
        v = [i]
        calls.add(k, v)
        model.pop(k, None)
        model[k] = v
        if len(model) > 4:
            del model[next(iter(model))]
        assert list(calls.by_key.items()) == list(model.items())


def test_a_reply_moves_its_call_to_the_answered_calls_which_are_bounded_too():
    """Memory follows the calls in flight: a reply takes its call out of the outstanding calls; a
    reply seen again still finds it among the answered ones, of which only the newest are kept."""
    calls = _SmallCalls()
    for i in range(10):
        calls.add(("f", i), [i])
        assert calls.reply(("f", i)) == [i]
        assert calls.reply(("f", i)) == [i]          # seen again: still matched
    assert len(calls.by_key) == 0
    assert list(calls.answered) == [("f", 7), ("f", 8), ("f", 9)]   # answered=3: the newest only
    assert calls.reply(("f", 99)) is None
    calls.add(("f", 9), ["again"])                  # the same XID called again is outstanding, not answered
    assert ("f", 9) not in calls.answered and calls.reply(("f", 9)) == ["again"]
