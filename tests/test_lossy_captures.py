"""Every error and warning finding on real captures of a lossy path is what the packets say.

The captures (captures/README.md: `lab/run nfs` and `lab/run perftest` over a path that drops 1 % of the
packets, reorders 3 % and duplicates 0.5 %, on rxe and siw) are checked finding by finding against
tests/lossy_oracle.py, which reads each packet's bytes and IPv4 identification alone: rxe numbers every
packet it sends to a host from one counter, so a copy made on the way, a packet sent again and a delayed
original each show what they are.  A finding the oracle has no check for fails the test too.
"""
from __future__ import annotations

from collections import Counter

import pytest

from conftest import capture
from lossy_oracle import Oracle, findings_of

ROCE = ["rxe-nfsv3-lossy.pcap", "rxe-ib_read_bw-lossy.pcap"]
IWARP = ["siw-nfsv3-lossy.pcap"]


@pytest.mark.parametrize("name", ROCE + IWARP)
def test_every_error_and_warning_finding_is_what_the_packets_say(name: str) -> None:
    path = capture(name)
    oracle = Oracle(path)
    checked: Counter = Counter()
    false = []
    for rule, severity, frames, args, text in findings_of(path):
        if severity not in ("error", "warning"):
            continue
        verdict = oracle.verdict(rule, frames, args)
        assert verdict != "unchecked", f"no check for {rule} ({text})"
        if verdict is not None:
            false.append(f"{rule} {frames}: {text} -- {verdict}")
        checked[rule] += 1
    assert false == []
    assert checked


def test_the_lossy_captures_show_every_kind_of_event() -> None:
    """What the test above checks: losses, reorderings, copies, NAKs and READs answered from their middle on
    RoCE; holes in the TCP stream on iWARP."""
    roce: Counter = Counter()
    for name in ROCE:
        roce.update(rule for rule, severity, *_ in findings_of(capture(name)))
    for rule in ("ib.lost_segment", "ib.out_of_order", "ib.duplicate", "ib.retransmission", "ib.nak.psn_sequence",
                 "ib.read_response_sequence", "ib.go_back_n_stall"):
        assert roce[rule], rule
    iwarp: Counter = Counter()
    for name in IWARP:
        iwarp.update(rule for rule, *_ in findings_of(capture(name)))
    assert iwarp["tcp.held"]


def test_the_oracle_finds_the_findings_the_packets_refute() -> None:
    """On the same capture, the findings rdmaspy gave before issue 30 are false by the oracle: a gap the late
    packets fill called lost, a delayed original called sent again, a copy made on the way called sent again,
    an answer to a READ sent again called a duplicate."""
    path = capture("rxe-ib_read_bw-lossy.pcap")
    oracle = Oracle(path)
    found = findings_of(path)
    overtaken = [(frames, args) for rule, _s, frames, args, _t in found
                 if rule == "ib.out_of_order" and "overtook" in str(args["what"])]
    assert overtaken
    (ahead, late), args = overtaken[0]
    p = oracle.roce[ahead]
    assert oracle.verdict("ib.lost_segment", (ahead,), {"count": 1, "expected": oracle.roce[late].psn}) is not None
    assert oracle.verdict("ib.retransmission", (late,), {}) is not None
    copies = [frames for rule, _s, frames, _a, _t in found if rule == "ib.duplicate"]
    assert copies
    assert oracle.verdict("ib.retransmission", copies[0], {}) is not None
    answers = [n for n, q in oracle.roce.items() if q.opcode in (0x0D, 0x10) and oracle.copy_of(n) is None
               and any(r.psn == q.psn and r.opcode == q.opcode and r.frame < n and oracle.copy_of(r.frame) is None
                       for r in oracle.roce.values() if r.src == q.src)]
    assert answers
    assert oracle.verdict("ib.duplicate", (answers[0],), {}) is not None
    assert p.psn != oracle.roce[late].psn


@pytest.mark.parametrize("name", ROCE + ["rxe-ib_write_bw-loss.pcap", "rxe-ib_send_bw-rnr.pcap", "rxe-nfsv3-loss.pcap",
                                         "rxe-nfsv3-loss-after.pcap"])
def test_every_nak_and_rnr_nak_tshark_sees_is_found_at_its_psn(name: str) -> None:
    """tshark as the oracle of the NAKs: each AETH whose syndrome is a NAK (0b11) or an RNR NAK (0b01) is one
    finding of rdmaspy at its frame and PSN, and rdmaspy finds no other, on the lossy and fault captures."""
    from conftest import tshark_fields, tshark_int
    path = capture(name)
    seen = set()
    for row in tshark_fields(path, ["frame.number", "infiniband.aeth.syndrome", "infiniband.bth.psn"],
                             "-Y", "infiniband.aeth"):
        syndrome = tshark_int(row["infiniband.aeth.syndrome"][0])
        kind = {3: "nak", 1: "rnr_nak"}.get(syndrome >> 5)
        if kind is not None:
            seen.add((kind, int(row["frame.number"][0]), tshark_int(row["infiniband.bth.psn"][0])))
    found = {("rnr_nak" if rule == "ib.rnr_nak" else "nak", frames[0], args["psn"])
             for rule, _s, frames, args, _t in findings_of(path) if rule == "ib.rnr_nak" or rule.startswith("ib.nak.")}
    assert seen
    assert found == seen
