"""The rules of RFC 8166, RFC 8797, seeds/001 and draft-01: each broken alone yields its finding."""
from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent / "fixtures"))

import analysis_build as ab  # noqa: E402
from analysis_build import CLIENT, SERVER, Wire  # noqa: E402
from analysis_run import OWN_PREFIXES, analyse, analyse_frames  # noqa: E402

from rdmaspy.analysis.analyzer import load_modules  # noqa: E402
from rdmaspy.analysis.rules import RULES  # noqa: E402
from rdmaspy.dissectors import onc_rpc, rpcrdma, rpcrdma2  # noqa: E402
from rdmaspy.dissectors.xdr import p32, popaque  # noqa: E402
from rdmaspy.engine import load_dissectors  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
RESP = rpcrdma2.F_RESPONSE


def _own_rules() -> dict:
    load_modules()
    return {k: r for k, r in RULES.items() if k.startswith(OWN_PREFIXES)}


# --- the real captures: the one MUST Linux breaks -----------------------------------------------------
@pytest.mark.parametrize("name, invalidating", [
    ("rxe-nfsv3-rdma.pcap", {0x17}), ("rxe-nfsv42-rdma.pcap", {0x17}), ("rxe-nfsv3-concurrent.pcap", {0x17}),
    ("siw-nfsv3-rdma.pcap", None)])
def test_real_captures_break_only_the_r_bit_rule(name, invalidating):
    """Linux's server sends R=0 in its REP private data, then replies with Send With Invalidate:
    RFC 8797 §4.1 says a responder uses only Send when either peer cleared R.  Each finding is on a
    reply sent with Invalidate, of a handle its call advertised, on a connection whose server said R=0."""
    res = analyse(name)
    assert {f.rule_def.id for f in res.own} == {"rpcrdma.invalidate_not_negotiated"}
    (conn,) = [c for c in res.conns if c.pdata_server is not None]
    assert conn.pdata_client.remote_invalidate and not conn.pdata_server.remote_invalidate
    by_reply = {t["reply"]["frame"]: t for t in res.transactions}
    invalidated = {t["reply"]["frame"] for t in res.transactions if t["reply"]["invalidated"] is not None}
    assert {f.frames[0] for f in res.own} == invalidated
    for f in res.own:
        t = by_reply[f.frames[0]]
        assert f.args == {"handle": t["reply"]["invalidated"], "who": "the server"} and f.xid == t["xid"]
        assert t["reply"]["invalidated"] in {c["handle"] for c in t["chunks"]}
        if invalidating is not None:
            assert res.opcodes[f.frames[0]] in invalidating     # RC SEND Only with Invalidate
    if invalidating is not None:
        swi = {fr for fr, op in res.opcodes.items() if op in (0x16, 0x17)}
        assert swi == invalidated


# --- the conversations of analysis_build, one fault each ----------------------------------------------
@pytest.mark.parametrize("fault, rules", [
    ("xid_mismatch", ["rpcrdma.xid_mismatch"]),
    ("inline_over", ["rpcrdma.inline_threshold"]),
    ("msgp", ["rpcrdma.msgp"]),
    ("invalidate_foreign", ["rpcrdma.invalidate_foreign"]),
    ("server_r0", ["rpcrdma.invalidate_not_negotiated"]),
    ("nomsg_empty", ["rpcrdma.nomsg_without_chunk"]),
    ("position_zero_msg", ["rpcrdma.position_zero_in_msg"]),
    ("extra_done", ["rpcrdma.done_unexpected"]),
])
def test_version_1_fault(fault, rules):
    assert analyse_frames(ab.scenario_v1()).rules() == []
    assert analyse_frames(ab.scenario_v1(**{fault: True})).rules() == rules


def test_inline_threshold_finding_names_the_negotiated_size():
    res = analyse_frames(ab.scenario_v1(inline_over=True))
    f = res.own[0]
    assert f.args["threshold"] == 4096 and f.args["size"] > 4096 and f.args["direction"] == "client to server"


def test_missing_rdma_done_after_a_responder_provided_read_chunk():
    base = ab.scenario_v1(responder_read=True)
    assert analyse_frames(base).rules() == ["rpcrdma.responder_read_chunk"]
    res = analyse_frames(ab.scenario_v1(responder_read=True, no_done=True))
    assert res.rules() == ["rpcrdma.done_missing", "rpcrdma.responder_read_chunk"]
    assert next(t for t in res.transactions if t["xid"] == 0x1009)["state"] == "pull_incomplete"


@pytest.mark.parametrize("fault, rules", [
    ("more_with_chunks", ["rpcrdma2.more_with_chunks"]),
    ("tpmore", ["rpcrdma2.tpmore_htype"]),
    ("response_flag", ["rpcrdma2.response_flag"]),
    ("inv_unknown", ["rpcrdma2.inv_handle_unknown"]),
    ("invalidate_other", ["rpcrdma2.invalidate_handle"]),
    ("more_htype", ["rpcrdma2.more_htype"]),
    ("continuation_broken", ["rpcrdma2.continuation_broken"]),
    ("reserved_flags", ["rpcrdma2.reserved_flags"]),
    ("refresh_xid", ["credits.refresh", "rpcrdma2.refresh_xid"]),
])
def test_version_2_fault(fault, rules):
    assert analyse_frames(ab.scenario_v2()).rules() == []
    assert analyse_frames(ab.scenario_v2(**{fault: True})).rules() == rules


# --- small conversations for the rest -------------------------------------------------------------------
def _call(xid: int, proc: int = 1, body: bytes = popaque(ab.FH)) -> bytes:
    return onc_rpc.encode_call(xid, ab.NFS, ab.V3, proc, body, (0, b""))


def _reply(xid: int) -> bytes:
    return onc_rpc.encode_reply(xid, p32(0) + bytes(84))


def _v1_pair(w: Wire, xid: int, version: int = 1, **call_kw) -> None:
    w.send(CLIENT, rpcrdma.encode_v1(xid, 0, 32, payload=_call(xid), version=version, **call_kw))
    w.send(SERVER, rpcrdma.encode_v1(xid, 0, 8, payload=_reply(xid)))


def _conv(build) -> list[str]:
    w = Wire()
    w.cm()
    build(w)
    return analyse_frames(w.out()).rules()


def test_unknown_version_answered_by_err_vers():
    def build(w):
        w.send(CLIENT, rpcrdma.encode_v1(0x1, 0, 32, payload=_call(0x1), version=3))
        w.send(SERVER, rpcrdma.encode_v1(0x1, 4, 8, errcode=1, vers_low=1, vers_high=1))
        _v1_pair(w, 0x2)
    assert _conv(build) == ["rpcrdma.version_unknown"]


def test_a_version_outside_the_err_vers_range_again():
    def build(w):
        w.send(CLIENT, rpcrdma.encode_v1(0x1, 0, 32, payload=_call(0x1), version=3))
        w.send(SERVER, rpcrdma.encode_v1(0x1, 4, 8, errcode=1, vers_low=1, vers_high=1))
        w.send(CLIENT, rpcrdma.encode_v1(0x2, 0, 32, payload=_call(0x2), version=3))
        w.send(SERVER, rpcrdma.encode_v1(0x2, 4, 8, errcode=1, vers_low=1, vers_high=1))
    assert _conv(build) == ["rpcrdma.version_after_err_vers", "rpcrdma.version_unknown", "rpcrdma.version_unknown"]


def test_err_vers_range_upside_down():
    def build(w):
        w.send(CLIENT, rpcrdma.encode_v1(0x1, 0, 32, payload=_call(0x1), version=3))
        w.send(SERVER, rpcrdma.encode_v1(0x1, 4, 8, errcode=1, vers_low=2, vers_high=1))
    assert _conv(build) == ["rpcrdma.err_vers_range", "rpcrdma.version_unknown"]


def test_version_changed_mid_connection():
    def build(w):
        _v1_pair(w, 0x1)
        w.send(CLIENT, rpcrdma2.encode(0x2, 0, max_credits=32, granted=16, payload=_call(0x2)))
        w.send(SERVER, rpcrdma.encode_v1(0x2, 0, 8, payload=_reply(0x2)))
    assert _conv(build) == ["rpcrdma.version_changed"]


def test_rpc_over_rdma_on_an_unreliable_queue_pair():
    def build(w):
        w.pkt(CLIENT, 0x24, rpcrdma.encode_v1(0x1, 0, 32, payload=_call(0x1)))      # UC SEND Only
        w.send(SERVER, rpcrdma.encode_v1(0x1, 0, 8, payload=_reply(0x1)))
    assert _conv(build) == ["rpcrdma.not_rc"]


def test_read_list_out_of_order():
    def build(w):
        w.send(CLIENT, rpcrdma.encode_v1(0x1, 0, 32, reads=[(200, 0xA1, 8, 0x1000), (100, 0xA2, 8, 0x2000)],
                                         payload=_call(0x1, 7, bytes(240))))
        w.read(SERVER, 0xA1, 0x1000, bytes(8))
        w.read(SERVER, 0xA2, 0x2000, bytes(8))
        w.send(SERVER, rpcrdma.encode_v1(0x1, 0, 8, payload=_reply(0x1)))
    assert _conv(build) == ["rpcrdma.read_list_order"]


def test_read_position_not_xdr_aligned():
    def build(w):
        w.send(CLIENT, rpcrdma.encode_v1(0x1, 0, 32, reads=[(102, 0xA1, 8, 0x1000)],
                                         payload=_call(0x1, 7, bytes(240))))
        w.read(SERVER, 0xA1, 0x1000, bytes(8))
        w.send(SERVER, rpcrdma.encode_v1(0x1, 0, 8, payload=_reply(0x1)))
    assert _conv(build) == ["rpcrdma.read_position_unaligned"]


def test_a_read_list_in_an_rdma_msg_reply():
    def build(w):
        w.send(CLIENT, rpcrdma.encode_v1(0x1, 0, 32, payload=_call(0x1)))
        w.send(SERVER, rpcrdma.encode_v1(0x1, 0, 8, reads=[(4, 0xB1, 8, 0x3000)], payload=_reply(0x1)))
    assert _conv(build) == ["rpcrdma.reply_read_list"]


def test_write_list_of_another_shape():
    def build(w):
        w.send(CLIENT, rpcrdma.encode_v1(0x1, 0, 32, writes=[[(0xC1, 4096, 0x4000)]], payload=_call(0x1, 6)))
        w.write(SERVER, 0xC1, 0x4000, bytes(100))
        w.send(SERVER, rpcrdma.encode_v1(0x1, 0, 8, writes=[[(0xC1, 100, 0x4000)], [(0xC2, 0, 0x5000)]],
                                         payload=_reply(0x1)))
    assert _conv(build) == ["rpcrdma.write_list_shape"]


def test_write_list_longer_than_offered():
    def build(w):
        w.send(CLIENT, rpcrdma.encode_v1(0x1, 0, 32, writes=[[(0xC1, 1024, 0x4000)]], payload=_call(0x1, 6)))
        w.write(SERVER, 0xC1, 0x4000, bytes(1024))
        w.send(SERVER, rpcrdma.encode_v1(0x1, 0, 8, writes=[[(0xC1, 2048, 0x4000)]], payload=_reply(0x1)))
    # The reply claims 2048 of a 1024-byte segment, and RDMA WRITE put 1024 there: both show.
    assert _conv(build) == ["chunk.write_length_mismatch", "rpcrdma.write_list_length"]


def test_write_past_a_write_chunk():
    def build(w):
        w.send(CLIENT, rpcrdma.encode_v1(0x1, 0, 32, writes=[[(0xC1, 1024, 0x4000)]], payload=_call(0x1, 6)))
        w.write(SERVER, 0xC1, 0x4000, bytes(1500))
        w.send(SERVER, rpcrdma.encode_v1(0x1, 0, 8, writes=[[(0xC1, 1500, 0x4000)]], payload=_reply(0x1)))
    assert _conv(build) == ["chunk.write_overrun"]


def _v2_pair(w: Wire, xid: int, **kw) -> None:
    w.send(CLIENT, rpcrdma2.encode(xid, 0, max_credits=32, granted=16, payload=_call(xid), **kw))
    w.send(SERVER, rpcrdma2.encode(xid, 0, max_credits=32, granted=8, flags=RESP, payload=_reply(xid)))


def test_first_version_2_message_over_1024_bytes():
    def build(w):
        w.send(CLIENT, rpcrdma2.encode(0x1, 0, max_credits=32, granted=16, payload=_call(0x1, 1, bytes(1200))))
        w.send(SERVER, rpcrdma2.encode(0x1, 0, max_credits=32, granted=8, flags=RESP, payload=_reply(0x1)))
    assert _conv(build) == ["rpcrdma.initial_size"]


def test_err_vers_answering_a_connprop_is_the_fallback_not_a_stray_reply():
    # draft-01: a version 1 peer answers the client's RDMA2_CONNPROP with ERR_VERS; the client goes on in v1.
    def build(w):
        w.send(CLIENT, rpcrdma2.encode(0x7, 5, max_credits=32, granted=16, props=[(1, 4096)]))
        w.send(SERVER, rpcrdma.encode_v1(0x7, 4, 8, errcode=1, vers_low=1, vers_high=1))
        _v1_pair(w, 0x8)
    assert _conv(build) == []


def test_err_vers_for_another_xid_than_the_connprop_is_still_a_stray_reply():
    def build(w):
        w.send(CLIENT, rpcrdma2.encode(0x7, 5, max_credits=32, granted=16, props=[(1, 4096)]))
        w.send(SERVER, rpcrdma.encode_v1(0x9, 4, 8, errcode=1, vers_low=1, vers_high=1))
        _v1_pair(w, 0x8)
    assert _conv(build) == ["transaction.reply_without_call"]


def test_connprop_after_the_last_one():
    def build(w):
        w.send(CLIENT, rpcrdma2.encode(0, 5, max_credits=32, granted=16, props=[(1, 4096)]))
        w.send(CLIENT, rpcrdma2.encode(0, 5, max_credits=32, granted=16, props=[(2, 4096)]))
    assert _conv(build) == ["rpcrdma2.connprop_after_last"]


def test_receive_buffer_size_property_sets_the_threshold():
    def build(w):
        w.send(SERVER, rpcrdma2.encode(0, 5, max_credits=32, granted=16, flags=RESP, props=[(2, 8192)]))
        _v2_pair(w, 0x1)
        w.send(CLIENT, rpcrdma2.encode(0x2, 0, max_credits=32, granted=16, payload=_call(0x2, 1, bytes(6000))))
        w.send(SERVER, rpcrdma2.encode(0x2, 0, max_credits=32, granted=8, flags=RESP, payload=_reply(0x2)))
        w.send(CLIENT, rpcrdma2.encode(0x3, 0, max_credits=32, granted=16, payload=_call(0x3, 1, bytes(9000))))
        w.send(SERVER, rpcrdma2.encode(0x3, 0, max_credits=32, granted=8, flags=RESP, payload=_reply(0x3)))
    assert _conv(build) == ["rpcrdma.inline_threshold"]


def test_unknown_header_type_and_sending_it_again():
    def build(w):
        w.send(CLIENT, rpcrdma2.encode(0x1, 9, max_credits=32, granted=16))
        w.send(SERVER, rpcrdma2.encode(0x1, 4, max_credits=32, granted=8, flags=RESP, errcode=4))
        w.send(CLIENT, rpcrdma2.encode(0x2, 9, max_credits=32, granted=16))
        w.send(SERVER, rpcrdma2.encode(0x2, 4, max_credits=32, granted=8, flags=RESP, errcode=4))
    assert _conv(build) == ["rpcrdma2.htype_after_inval", "rpcrdma2.unknown_htype", "rpcrdma2.unknown_htype"]


def test_error_code_not_defined():
    def build(w):
        w.send(CLIENT, rpcrdma2.encode(0x1, 0, max_credits=32, granted=16, payload=_call(0x1)))
        w.send(SERVER, rpcrdma2.encode(0x1, 4, max_credits=32, granted=8, flags=RESP, errcode=77))
    assert _conv(build) == ["rpcrdma2.unknown_error"]


def test_version_2_error_answering_a_version_1_call():
    def build(w):
        w.send(CLIENT, rpcrdma.encode_v1(0x1, 0, 32, payload=_call(0x1)))
        w.send(SERVER, rpcrdma2.encode(0x1, 4, max_credits=32, granted=8, flags=RESP, errcode=100))
    assert _conv(build) == ["rpcrdma2.error_version"]


def test_write_resource_error_naming_a_chunk_the_call_lacks():
    def build(w):
        w.send(CLIENT, rpcrdma2.encode(0x1, 0, max_credits=32, granted=16, writes=[[(0xD1, 512, 0x6000)]],
                                       payload=_call(0x1, 6)))
        w.send(SERVER, rpcrdma2.encode(0x1, 4, max_credits=32, granted=8, flags=RESP, errcode=9,
                                       error_args={"chunk_index": 3, "length_needed": 4096}))
    assert _conv(build) == ["rpcrdma2.write_resource_index"]


# --- declarations, templates, documentation ---------------------------------------------------------------
def test_every_rule_has_a_source_and_a_template_that_renders():
    for fault in ab.FAULTS_V1:
        for f in analyse_frames(ab.scenario_v1(responder_read=True, **{fault: True})).own:
            assert "{" not in f.text and f.rule_def.source
    for fault in ab.FAULTS_V2:
        for f in analyse_frames(ab.scenario_v2(**{fault: True})).own:
            assert "{" not in f.text and f.rule_def.source


def test_docs_list_every_rule_with_its_severity_and_source():
    doc = (ROOT / "docs" / "expert.md").read_text()
    rows = {m.group(1): (m.group(2), m.group(3)) for m in
            re.finditer(r"^\| `([a-z0-9_.]+)` \| (\w+) \| ([^|]+) \|", doc, re.M)}
    rules = _own_rules()
    load_dissectors()                  # the dissectors' declared rules are documented in the same way
    import rdmaspy.analysis.hostjoin   # noqa: F401  so are the host traces' (declared by --host-trace's join)
    assert set(rules) <= set(rows) <= set(RULES)
    for rid in rows:
        r = RULES[rid]
        sev, source = rows[rid]
        assert sev == r.severity, rid
        # The documented source names the same documents and sections as the declaration.
        for ref in re.findall(r"(RFC \d+ §[\d.]+|draft-01 §[\d.]+|seeds/\d+)", source):
            assert ref.split(" §")[0] in r.source, (rid, ref)
        sections = re.findall(r"§[\d.]+", r.source)
        assert "seeds/" in r.source or not sections or sections[0] in source, rid


# --- the synthetic captures of captures/: each finding is a fault the capture holds ----------------------
def test_synthetic_cm_capture_findings():
    """synth_rocev2_cm_rpcrdma.pcap (rdmaspy decode shows each frame): frame 4 is a call never answered;
    frame 7 a second call (no grant yet) in RDMA_NOMSG with only a Reply chunk, so nothing conveys it;
    frame 8 an ERR_VERS (1..1) for an XID nobody called; frame 9 an RDMA_DONE with no Read chunk
    waiting; frame 10 a version-2 message with header type 10 after version 1 and after ERR_VERS."""
    with_frames = sorted((f.frames[0], f.rule_def.id) for f in analyse("synth_rocev2_cm_rpcrdma.pcap").own)
    assert with_frames == [
        (4, "transaction.no_reply"), (7, "credits.initial_single"), (7, "rpcrdma.nomsg_without_chunk"),
        (7, "transaction.no_reply"), (8, "transaction.reply_without_call"), (9, "rpcrdma.done_unexpected"),
        (10, "rpcrdma.version_after_err_vers"), (10, "rpcrdma.version_changed"), (10, "rpcrdma2.unknown_htype"),
        (10, "transaction.no_reply")]


def test_synthetic_write_capture_findings():
    """synth_rocev2_rpcrdma_write.pcap: the READ of frame 7 goes to R_Key 0x55667788, which no RPC-over-RDMA
    message offered (frame 6 is a plain SEND); frame 5 is a (cut) ERR_VERS for an XID nobody called.
    The Write chunk of frame 1 is written (64 of 8192 bytes) and the reply reports those 64."""
    res = analyse("synth_rocev2_rpcrdma_write.pcap")
    assert sorted((f.frames[0], f.rule_def.id) for f in res.own) == [
        (5, "transaction.reply_without_call"), (7, "chunk.unadvertised")]
    assert res.own[-1].args["handle"] == 0x55667788
    (t,) = res.transactions
    assert [(c["used"], c["reported"], c["status"]) for c in t["chunks"]] == [(64, 64, "partial")]


@pytest.mark.parametrize("name", [
    "rocev2_cnp_cx4lx.pcap", "rxe-ib_read_bw.pcap", "rxe-ib_send_bw-rnr.pcap", "rxe-ib_write_bw-loss.pcap",
    "rxe-pyverbs-rc-verbs.pcap", "rxe-ucmatose.pcap", "siw-rping.pcap", "siw-ib_write_bw-rdmacm.pcap"])
def test_rdma_without_rpc_over_rdma_gives_no_rpcrdma_findings(name):
    res = analyse(name)
    assert res.own == [] and res.transactions == []


# --- any bytes: the analysis never raises ------------------------------------------------------------------
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

_BASE = ab.scenario_v1(responder_read=True)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.integers(0, len(_BASE) - 1), st.integers(42, 1500), st.integers(0, 255)),
                min_size=1, max_size=6),
       st.lists(st.integers(0, len(_BASE) - 1), max_size=4))
def test_analysis_survives_damaged_and_missing_frames(edits, drops):
    frames = [bytearray(f) for _t, f in _BASE]
    for i, pos, val in edits:
        if pos < len(frames[i]):
            frames[i][pos] = val
    out = [(t, bytes(f)) for j, ((t, _), f) in enumerate(zip(_BASE, frames)) if j not in drops]
    res = analyse_frames(out)
    for f in res.own:
        assert f.text and f.rule_def.source
    for t in res.transactions:
        assert t["state"] in ("complete", "unanswered", "pull_incomplete")
