"""``rdmaspy decode`` with the analysis: filters on analysis and expert fields, -V, -T json, -A."""
from __future__ import annotations

import orjson
import pytest

from conftest import FIXTURES, capture
from rdmaspy.cli import main
from rdmaspy.filter import filter_needs_analysis
from rdmaspy.filter import compile_filter

LOSS = capture("rxe-ib_write_bw-loss.pcap")
RNR = capture("rxe-ib_send_bw-rnr.pcap")


def run(capsys, *args: str) -> tuple[int, list[str]]:
    rc = main(list(args))
    out = capsys.readouterr().out
    return rc, out.splitlines()


def frame_numbers(lines: list[str]) -> list[int]:
    return [int(line.split()[0]) for line in lines if line.strip()]


def test_filter_on_retransmission_selects_the_57_resent_packets(capsys):
    rc, lines = run(capsys, "decode", "-Y", "ib.analysis.retransmission", str(LOSS))
    assert rc == 0 and len(lines) == 57
    assert frame_numbers(lines)[:3] == [6, 7, 8]


def test_filter_on_nak_code_and_expert_severity(capsys):
    rc, lines = run(capsys, "decode", "-Y", "ib.analysis.nak == 0", str(LOSS))
    assert rc == 0 and len(lines) == 14
    _, warn = run(capsys, "decode", "-Y", 'expert.severity == "warning"', str(RNR))
    _, rnr = run(capsys, "decode", "-Y", "ib.analysis.rnr_nak", str(RNR))
    _, nak = run(capsys, "decode", "-Y", "ib.analysis.nak", str(RNR))
    # RNR NAKs and PSN sequence NAKs are warnings; retransmissions are notes
    assert sorted(frame_numbers(warn)) == sorted(frame_numbers(rnr) + frame_numbers(nak))
    assert len(rnr) == 44 and len(nak) == 44


def test_filter_compares_analysis_values(capsys):
    _, slow = run(capsys, "decode", "-Y", "ib.analysis.rnr_delay > 0.0075", str(RNR))
    _, all_ = run(capsys, "decode", "-Y", "ib.analysis.rnr_delay", str(RNR))
    assert 0 < len(slow) < len(all_) == 44


def test_bad_icrc_is_an_error_finding(capsys):
    rc, lines = run(capsys, "decode", "-Y", 'expert.severity == "error"',
                    str(FIXTURES / "analysis_transport_badicrc.pcap"))
    assert rc == 0 and frame_numbers(lines) == [5]
    _, rule = run(capsys, "decode", "-Y", 'expert.rule == "ib.bad_icrc"',
                  str(FIXTURES / "analysis_transport_badicrc.pcap"))
    assert frame_numbers(rule) == [5]
    _, source = run(capsys, "decode", "-Y", 'expert.source contains "IBTA" and expert.rule == "ib.bad_icrc"',
                    str(FIXTURES / "analysis_transport_badicrc.pcap"))
    assert frame_numbers(source) == [5]


def test_which_filters_turn_the_analysis_on():
    def needs(expr: str) -> bool:
        return filter_needs_analysis(compile_filter(expr).names)
    assert needs("ib.analysis.retransmission")
    assert needs("ib.analysis")
    assert needs('expert.severity == "error"')
    assert needs("expert")
    assert not needs("bth.opcode == 4")
    assert not needs("frame.number < 10 and aeth")


def test_json_carries_analysis_fields_and_findings(capsys):
    rc, lines = run(capsys, "decode", "-T", "json", str(FIXTURES / "analysis_transport_duplicate.pcap"))
    assert rc == 0
    objs = [orjson.loads(line) for line in lines]
    dup = [o for o in objs if o.get("ib.analysis.duplicate")]
    assert len(dup) == 1
    (o,) = dup
    assert o["frame.number"] == 6 and o["ib.analysis.original_frame"] == 5
    assert o["expert.severity"] == ["warning"] and o["expert.rule"] == ["ib.duplicate"]
    assert o["expert.source"][0].startswith("IBTA")
    assert "ib.analysis" not in o["frame.protocols"].split(":")
    # ACKs carry how many PSNs they cover
    acks = [o for o in objs if "ib.analysis.ack_psns" in o]
    assert acks and all(o["bth.opcode"] == 0x11 for o in acks)


def test_verbose_tree_shows_the_analysis(capsys):
    rc, lines = run(capsys, "decode", "-V", "-Y", "frame.number == 15", str(RNR))
    assert rc == 0
    text = "\n".join(lines)
    assert "    InfiniBand transport analysis" in text
    assert "Retry after the RNR NAK in frame: 10" in text
    assert "[Note/sequence] PSN 6795804 sent again (first in frame 9)" in text


def test_summary_lines_without_analysis_unless_asked(capsys):
    _, plain = run(capsys, "decode", str(RNR))
    _, analysed = run(capsys, "decode", "-A", str(RNR))
    assert len(plain) == len(analysed) == 408
    changed = [(a, b) for a, b in zip(plain, analysed) if a != b]
    # -A appends the findings of each packet: 44 RNR NAKs, 44 NAKs, 220 retransmissions
    assert len(changed) == 44 + 44 + 220
    assert all(b.startswith(a + " [") and b.endswith("]") for a, b in changed)
    assert analysed[9].endswith("[RNR NAK at PSN 6795804: receiver not ready, retry after 0.64 ms]")


@pytest.mark.parametrize("name", ["rxe-nfsv3-rdma.pcap", "synth_rocev2_cm_rpcrdma.pcap"])
def test_analysis_does_not_change_the_decode(capsys, name):
    path = str(capture(name))
    _, plain = run(capsys, "decode", "-Y", "frame", path)
    _, analysed = run(capsys, "decode", "-Y", "frame or expert", path)
    assert plain == analysed


def test_filter_on_transaction_latency_matches_the_transactions(capsys):
    from rdmaspy.analysis.model import Transaction
    from rdmaspy.commands.expert import analyse
    path = capture("rxe-nfsv3-rdma.pcap")
    records: list = []
    analyse(str(path), on_record=records.append)
    slow = sorted(t.response_frame for t in records
                  if isinstance(t, Transaction) and t.latency_ns is not None and t.latency_ns / 1e9 > 0.001)
    assert slow
    rc, lines = run(capsys, "decode", "-Y", "rpcrdma.analysis.latency > 0.001", str(path))
    assert rc == 0 and frame_numbers(lines) == slow


def test_transaction_fields_on_rdma_operations(capsys):
    path = str(capture("rxe-nfsv3-rdma.pcap"))
    rc, lines = run(capsys, "decode", "-T", "json", "-Y", "rpcrdma.analysis.xid == 0xa8fff5fc", path)
    objs = [orjson.loads(line) for line in lines]
    roles = {}
    for o in objs:
        roles.setdefault(o["rpcrdma.analysis.role"], []).append(o["frame.number"])
    assert roles["call"] == [345] and roles["reply"] == [415]
    assert len(roles["rdma_write"]) == 64          # 65536 bytes at a path MTU of 1024
    w = next(o for o in objs if o["rpcrdma.analysis.role"] == "rdma_write")
    assert (w["rpcrdma.analysis.call_frame"], w["rpcrdma.analysis.chunk_list"], w["rpcrdma.analysis.chunk"],
            w["rpcrdma.analysis.segment"]) == (345, "write", 0, 0)
    reply = next(o for o in objs if o["rpcrdma.analysis.role"] == "reply")
    assert reply["rpcrdma.analysis.latency"] == pytest.approx(0.021684)
