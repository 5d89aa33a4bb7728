"""InfiniBand transport analysis: PSN findings and ib.analysis fields, on real captures and built faults."""
from __future__ import annotations

import importlib.util
from collections import Counter

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rdmaspy.analysis.analyzer import Analyzer
from rdmaspy.analysis.model import CongestionFlow, PsnEvent, PsnEventKind, PsnStats
from rdmaspy.analysis.rules import RULES
from rdmaspy.dissectors.infiniband import PLANS
from rdmaspy.engine import Engine
from rdmaspy.readers import open_capture

from conftest import FIXTURES, capture


def analyse(path) -> tuple[list, Analyzer, list]:
    """(packets, analyzer, records) of a whole capture."""
    records: list = []
    an = Analyzer(strict=True, on_record=records.append)
    engine = Engine(strict=True)
    pkts = []
    with open_capture(str(path)) as cap:
        for frame in cap:
            pkt = engine.dissect(frame)
            an.feed(pkt)
            pkts.append(pkt)
    an.finish()
    return pkts, an, records


def ib_rules(an: Analyzer) -> Counter:
    """Findings of the transport rules only (other analysis modules have their own tests)."""
    return Counter(f.rule_def.id for f in an.findings if f.rule_def.id.startswith("ib."))


def field(pkt, name):
    bth = pkt.layer("bth")
    lay = next((c for c in bth.children or () if c.proto == "ib.analysis"), None) if bth is not None else None
    if lay is None or not lay.items:
        return None
    for f, v, _o, _l in lay.items:
        if f.name == name:
            return v
    return None


def requests_resent(path, requester: str) -> int:
    """An independent count: request packets from ``requester`` whose PSN is not beyond every PSN seen before."""
    engine = Engine(strict=True)
    top = None
    n = 0
    with open_capture(str(path)) as cap:
        for frame in cap:
            pkt = engine.dissect(frame)
            ib = pkt.ib
            if ib is None or pkt.src != requester or ib.plan.kind not in ("send", "write", "read_request"):
                continue
            if top is not None and ((ib.psn - top) & 0xFFFFFF) >= 0x800000 or ib.psn == top:
                n += 1
            else:
                top = ib.psn
    return n


# --- real captures ---------------------------------------------------------------------------------------
def test_write_bw_loss_has_14_psn_sequence_naks_and_57_retransmitted_psns():
    path = capture("rxe-ib_write_bw-loss.pcap")
    pkts, an, records = analyse(path)
    assert ib_rules(an) == {"ib.nak.psn_sequence": 14, "ib.retransmission": 57}
    assert requests_resent(path, "192.0.2.2") == 57
    resent = [p for p in pkts if field(p, "ib.analysis.retransmission")]
    assert len({p.ib.psn for p in resent}) == 57
    # every retransmission names the frame where its PSN first went out, which carried the same PSN
    by_num = {p.frame.num: p for p in pkts}
    for p in resent:
        orig = field(p, "ib.analysis.original_frame")
        assert orig is not None and orig < p.frame.num and by_num[orig].ib.psn == p.ib.psn
    # the first NAK (frame 5) asks for PSN 10710096, which frame 6 sends again
    assert field(by_num[5], "ib.analysis.nak") == 0
    assert field(by_num[6], "ib.analysis.nak_frame") == 5
    (stream,) = [r for r in records if isinstance(r, PsnStats)]
    assert stream.retransmissions == 57 and stream.naks == {0: 14}     # 0: PSN Sequence Error
    assert stream.lost == 0 and stream.duplicates == 0 and stream.path_mtu == 1024
    events = [r for r in records if isinstance(r, PsnEvent)]
    assert Counter(e.kind for e in events) == {PsnEventKind.NAK: 14, PsnEventKind.RETRANSMISSION: 57}
    assert all(e.direction is stream.direction for e in events)


def test_read_retry_answered_with_a_middle_packet_is_named_at_each_step():
    # rxe lost the tail of a READ response past the capture point; the retry asks from PSN +3 and
    # the responder answers READ Response Middle, six times over (captures/README.md).
    path = capture("rxe-read-retry-stall.pcap")
    pkts, an, _ = analyse(path)
    by_num = {p.frame.num: p for p in pkts}
    finds = [f for f in an.findings if f.rule_def.id == "ib.read_response_sequence"]
    assert [f.frames for f in finds] == [(26, 25), (35, 34), (44, 43), (53, 52), (62, 61), (77, 76)]
    for f in finds:
        first = by_num[f.frames[0]]
        assert first.ib.opcode == 0x0E and first.ib.psn == 1431219      # RC READ Response Middle
        assert by_num[f.frames[1]].ib.psn == 1431219 and by_num[f.frames[1]].ib.opcode == 0x0C
    resumed = [f for f in an.findings if f.rule_def.id == "ib.retransmission" and f.frames[0] == 25]
    assert resumed[0].frames == (25, 11) and "from its response packet 4" in resumed[0].text
    assert field(by_num[25], "ib.analysis.original_frame") == 11
    assert not [f for f in an.findings if "?" in f.text]


def test_send_bw_rnr_has_44_rnr_naks_each_followed_by_a_psn_sequence_nak():
    path = capture("rxe-ib_send_bw-rnr.pcap")
    pkts, an, _ = analyse(path)
    counts = ib_rules(an)
    assert counts["ib.rnr_nak"] == 44
    assert counts["ib.nak.psn_sequence"] == 44
    assert counts["ib.retransmission"] == requests_resent(path, "192.0.2.2") == 220
    assert set(counts) == {"ib.rnr_nak", "ib.nak.psn_sequence", "ib.retransmission"}
    responses = [p for p in pkts if p.ib.plan.kind == "ack"]
    for i, p in enumerate(responses):
        if field(p, "ib.analysis.rnr_nak"):
            nxt = responses[i + 1]
            assert field(nxt, "ib.analysis.nak") == 0 and nxt.ib.psn == p.ib.psn
    # the RNR delay: from the RNR NAK to the retry of its PSN, frame 10 -> frame 15
    by_num = {p.frame.num: p for p in pkts}
    assert field(by_num[15], "ib.analysis.rnr_nak_frame") == 10
    assert field(by_num[15], "ib.analysis.rnr_delay") == pytest.approx(
        (by_num[15].frame.ts - by_num[10].frame.ts) / 1e9)
    delays = [field(p, "ib.analysis.rnr_delay") for p in pkts if field(p, "ib.analysis.rnr_delay") is not None]
    assert len(delays) == 44 and all(d > 0 for d in delays)


def test_read_bw_responses_match_their_requests():
    pkts, an, _ = analyse(capture("rxe-ib_read_bw.pcap"))
    assert ib_rules(an) == {}
    requests = {p.ib.psn: p for p in pkts if p.ib.plan.kind == "read_request"}
    assert len(requests) == 8
    lasts = 0
    for p in pkts:
        if p.ib.plan.kind != "read_response":
            continue
        req = requests[max(psn for psn in requests if psn <= p.ib.psn)]
        assert field(p, "ib.analysis.read_request_frame") == req.frame.num
        if p.ib.plan.pos in ("last", "only"):
            lasts += 1
            # 4096 bytes at a path MTU of 1024 (inferred from the full-size packets): 4 packets
            assert field(p, "ib.analysis.read_packets") == 4 == field(p, "ib.analysis.read_packets_expected")
            assert field(p, "ib.analysis.read_bytes") == req.ib.reth[2] == 4096
            assert field(p, "ib.analysis.path_mtu") == 1024
            assert field(p, "ib.analysis.read_time") == pytest.approx((p.frame.ts - req.frame.ts) / 1e9)
    assert lasts == 8


def test_cnp_capture_has_its_cnp():
    pkts, an, records = analyse(capture("rocev2_cnp_cx4lx.pcap"))
    assert ib_rules(an) == {"ib.cnp": 1}
    assert field(pkts[0], "ib.analysis.cnp_count") == 1
    assert CongestionFlow("10.0.17.1", "10.0.18.1", 0x118, 1, 0) in records


@pytest.mark.parametrize("name", ["rxe-ib_write_bw.pcap", "rxe-ib_send_bw.pcap", "rxe-ib_write_lat.pcap",
                                  "rxe-rc-pingpong.pcap", "rxe-ibv_srq_pingpong.pcap", "rxe-ibv_uc_pingpong.pcap",
                                  "rxe-ucmatose.pcap", "rxe-nfsv3-rdma.pcap", "rxe-nfsv3-concurrent.pcap",
                                  "rxe-nfsv42-rdma.pcap", "rxe-pyverbs-rc-verbs.pcap"])
def test_clean_real_captures_have_no_transport_findings(name):
    _, an, _ = analyse(capture(name))
    assert ib_rules(an) == {}


def test_acks_count_the_psns_they_cover():
    pkts, _, _ = analyse(capture("rxe-ib_write_bw.pcap"))
    acks = [p for p in pkts if p.ib.plan.kind == "ack"]
    assert acks
    covered = [field(p, "ib.analysis.ack_psns") for p in acks[1:]]
    assert all(n is not None and n >= 1 for n in covered)
    # ib_write_bw writes 4 KiB in 4 packets and asks for one ACK: each ACK after the first covers 4 PSNs
    assert set(covered) == {4}
    assert all(field(p, "ib.analysis.ack_coalesced") for p in acks[1:])


# --- built faults: each yields exactly its finding ----------------------------------------------------------
EXPECTED = {
    "clean": {},
    "drop": {"ib.lost_segment": 1},
    "duplicate": {"ib.duplicate": 1},
    # the later packet first shows a gap; the earlier one, arriving next, fills it: late, not lost
    "reorder": {"ib.out_of_order": 1},
    "nak": {"ib.nak.remote_access": 1},
    # the RNR NAK, and the SEND sent again after it
    "rnr": {"ib.rnr_nak": 1, "ib.retransmission": 1},
    "badicrc": {"ib.bad_icrc": 1},
    "cnp": {"ib.cnp": 1},
    "ecn": {"ib.ecn_ce": 1},
    "readshort": {"ib.read_response_count": 1, "ib.read_response_length": 1},
    "ackunseen": {"ib.acked_unseen": 1},
}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_fault_yields_exactly_its_finding(name):
    _, an, _ = analyse(FIXTURES / f"analysis_transport_{name}.pcap")
    assert ib_rules(an) == EXPECTED[name]


def test_fixtures_are_what_the_builder_makes(tmp_path):
    spec = importlib.util.spec_from_file_location("analysis_transport_build",
                                                  FIXTURES / "analysis_transport_build.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    for p in mod.build(tmp_path):
        assert p.read_bytes() == (FIXTURES / p.name).read_bytes(), p.name


def by_frame(name):
    pkts, an, _ = analyse(FIXTURES / f"analysis_transport_{name}.pcap")
    return {p.frame.num: p for p in pkts}, an


def test_drop_marks_the_packet_after_the_gap():
    pk, an = by_frame("drop")
    (f,) = [f for f in an.findings if f.rule_def.id == "ib.lost_segment"]
    p = pk[f.frames[0]]
    assert p.ib.psn == 102 and field(p, "ib.analysis.lost_psns") == 1 and field(p, "ib.analysis.lost_segment")
    assert f.args == {"psn": 102, "count": 1, "expected": 101}
    assert f in p.expert


def test_duplicate_names_its_original():
    pk, an = by_frame("duplicate")
    (f,) = [f for f in an.findings if f.rule_def.id == "ib.duplicate"]
    dup, orig = f.frames
    assert pk[dup].ib.psn == pk[orig].ib.psn == 103 and dup == orig + 1
    assert field(pk[dup], "ib.analysis.original_frame") == orig
    assert field(pk[orig], "ib.analysis.duplicate") is None


def test_a_reordered_packet_is_out_of_order_and_the_gap_it_fills_no_loss():
    """SEND Last 109 overtook SEND First 108: said once, on 109; 108 is the one out of order."""
    pk, an = by_frame("reorder")
    (ooo,) = [f for f in an.findings if f.rule_def.id.startswith("ib.")]
    overtaking, late = ooo.frames
    assert ooo.rule_def.id == "ib.out_of_order" and pk[overtaking].ib.psn == 109 and pk[late].ib.psn == 108
    assert late == overtaking + 1
    assert field(pk[late], "ib.analysis.out_of_order")
    assert field(pk[overtaking], "ib.analysis.lost_segment") is None


def test_rnr_delay_runs_from_the_rnr_nak_to_the_retry():
    pk, an = by_frame("rnr")
    rnr = next(f for f in an.findings if f.rule_def.id == "ib.rnr_nak")
    assert rnr.args["timer_ms"] == 1.28 and rnr.args["psn"] == 103
    retry = next(p for p in pk.values() if field(p, "ib.analysis.rnr_delay") is not None)
    assert retry.ib.psn == 103 and field(retry, "ib.analysis.rnr_nak_frame") == rnr.frames[0]
    assert field(retry, "ib.analysis.rnr_delay") == pytest.approx(0.002)
    assert field(retry, "ib.analysis.retransmission")


def test_bad_icrc_finding_takes_the_place_of_the_dissector_item():
    pk, an = by_frame("badicrc")
    (f,) = [f for f in an.findings if f.rule_def.id == "ib.bad_icrc"]
    p = pk[f.frames[0]]
    assert p.ib.icrc_ok is False and field(p, "ib.analysis.bad_icrc")
    checksum = [e for e in p.expert if e.group == "checksum"]
    assert checksum == [f]
    assert f.args["got"] == f.args["expected"] ^ 0xFFFFFFFF


def test_nak_code_is_a_field():
    pk, an = by_frame("nak")
    (f,) = [f for f in an.findings if f.rule_def.id == "ib.nak.remote_access"]
    assert field(pk[f.frames[0]], "ib.analysis.nak") == 2 and f.args["psn"] == 104
    assert f.severity == "error"


def test_short_read_response_counts_packets_and_bytes():
    pk, an = by_frame("readshort")
    count = next(f for f in an.findings if f.rule_def.id == "ib.read_response_count")
    length = next(f for f in an.findings if f.rule_def.id == "ib.read_response_length")
    assert count.args == {"length": 2500, "packets": 2, "expected": 3, "mtu": 1024}
    assert length.args["got"] == 1024 + 452 and length.args["length"] == 2500
    assert pk[count.frames[1]].ib.plan.kind == "read_request"


def test_psn_arithmetic_wraps_at_2_24(tmp_path):
    from rdmaspy.craft import rocev2, write_pcap
    psns = [0xFFFFFE, 0xFFFFFF, 0, 1, 3]          # wraps cleanly, then skips PSN 2
    frames = [rocev2(0x04, 0x11, psn, b"x" * 8, src="192.0.2.2", dst="192.0.2.1") for psn in psns]
    path = tmp_path / "wrap.pcap"
    write_pcap(str(path), frames)
    pkts, an, _ = analyse(path)
    (f,) = an.findings
    assert f.rule_def.id == "ib.lost_segment" and f.args == {"psn": 3, "count": 1, "expected": 2}


_OPS = [0x00, 0x01, 0x02, 0x04, 0x06, 0x07, 0x08, 0x0A, 0x0C, 0x0D, 0x0E, 0x0F, 0x10, 0x11, 0x12, 0x13, 0x14, 0x17,
        0x24, 0x2A, 0x81]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.booleans(), st.sampled_from(_OPS), st.integers(0, 40) | st.integers(0xFFFFF0, 0xFFFFFF),
                          st.integers(0, 255), st.integers(0, 3000), st.booleans()), max_size=40))
def test_any_packet_sequence_is_analysed_without_error(seq):
    from rdmaspy.craft import rocev2
    from rdmaspy.packet import Frame

    engine = Engine(strict=True)
    an = Analyzer(strict=True)
    for i, (c2s, op, psn, syndrome, length, bad) in enumerate(seq):
        kw: dict = {}
        plan_exts = {h.name for h in PLANS[op].exts}
        if "reth" in plan_exts:
            kw.update(va=0x1000, r_key=7, dma_length=length)
        if "aeth" in plan_exts:
            kw.update(syndrome=syndrome, msn=i)
        payload = b"" if op in (0x0C, 0x11, 0x81) else b"\0" * min(length, 1024)
        src, dst, qp = ("192.0.2.2", "192.0.2.1", 0x11) if c2s else ("192.0.2.1", "192.0.2.2", 0x21)
        data = rocev2(op, qp, psn, payload, src=src, dst=dst, icrc="bad" if bad else "auto", **kw)
        an.feed(engine.dissect(Frame(i + 1, 1_700_000_000_000_000_000 + i * 1000, 1, data, len(data))))
    an.finish()
    for f in an.findings:
        assert f.rule_def.id in RULES and f.frames and all(1 <= n <= len(seq) for n in f.frames)
        assert f.text
