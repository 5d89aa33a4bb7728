"""``rdmaspy expert FILE``: findings grouped by severity then rule, as text and JSON."""
from __future__ import annotations

import orjson
from hypothesis import given, strategies as st

from conftest import FIXTURES, capture
from rdmaspy.cli import main
from rdmaspy.commands.expert import Group

LOSS = capture("rxe-ib_write_bw-loss.pcap")
RNR = capture("rxe-ib_send_bw-rnr.pcap")


def run(capsys, *args: str) -> tuple[int, str, str]:
    rc = main(list(args))
    cap = capsys.readouterr()
    return rc, cap.out, cap.err


def as_json(capsys, path) -> dict:
    rc, out, _ = run(capsys, "expert", "-T", "json", str(path))
    assert rc == 0
    return orjson.loads(out)


def test_json_groups_the_loss_capture_by_rule(capsys):
    doc = as_json(capsys, LOSS)
    assert doc["frames"] == 575
    assert doc["counts"] == {"error": 0, "warning": 14, "note": 57, "chat": 0}
    by_rule = {g["rule"]: g for g in doc["groups"]}
    assert set(by_rule) == {"ib.nak.psn_sequence", "ib.retransmission"}
    nak = by_rule["ib.nak.psn_sequence"]
    assert nak["severity"] == "warning" and nak["count"] == 14 and nak["source"].startswith("IBTA")
    assert nak["frames"][:3] == [5, 55, 105]
    assert nak["findings"][0] == {"frames": [5], "message": "NAK PSN sequence error: the responder expects PSN "
                                  "10710096", "conn": 1, "xid": None}
    # warnings before notes
    assert [g["severity"] for g in doc["groups"]] == ["warning", "note"]


def test_text_shows_severity_titles_rules_sources_and_frames(capsys):
    rc, out, _ = run(capsys, "expert", str(RNR))
    assert rc == 0
    lines = out.splitlines()
    assert lines[0].startswith("Expert Information: ") and "(408 frames)" in lines[0]
    assert "Warnings (88)" in lines and "Notes (220)" in lines
    assert lines.index("Warnings (88)") < lines.index("Notes (220)")
    rule_lines = [ln for ln in lines if "] ib." in ln]
    assert any(ln.split()[0] == "44" and "ib.rnr_nak — IBTA vol. 1 9.7" in ln for ln in rule_lines)
    assert any(ln.split()[0] == "220" and "ib.retransmission" in ln for ln in rule_lines)
    assert "          frame 10, conn 1: RNR NAK at PSN 6795804: receiver not ready, retry after 0.64 ms" in lines
    assert "          ... 41 more" in lines


def test_all_messages_with_n_0(capsys):
    _, out, _ = run(capsys, "expert", "-n", "0", str(RNR))
    assert sum(1 for ln in out.splitlines() if ": PSN " in ln and "sent again" in ln) == 220


def test_severity_filter(capsys):
    doc_all = as_json(capsys, RNR)
    rc, out, _ = run(capsys, "expert", "-T", "json", "--severity", "warning", str(RNR))
    doc = orjson.loads(out)
    assert {g["severity"] for g in doc["groups"]} == {"warning"}
    assert doc["counts"]["warning"] == doc_all["counts"]["warning"] == 88 and doc["counts"]["note"] == 0


def test_clean_capture_has_no_findings(capsys):
    rc, out, _ = run(capsys, "expert", str(FIXTURES / "analysis_transport_clean.pcap"))
    assert rc == 0 and out.splitlines()[1:] == ["  no findings"]
    assert as_json(capsys, FIXTURES / "analysis_transport_clean.pcap")["groups"] == []


def test_dissector_items_stand_beside_findings(capsys):
    # frame 5 of this capture is a truncated RDMA_ERROR: the dissector says so, the analysis adds its findings
    doc = as_json(capsys, capture("synth_rocev2_rpcrdma_write.pcap"))
    dissector = [g for g in doc["groups"] if g["rule"] is None]
    assert any(g["group"] == "malformed" and g["frames"] == [5] and g["severity"] == "error" for g in dissector)
    assert any(g["rule"] == "ib.cnp" and g["frames"] == [9] for g in doc["groups"])


def test_bad_icrc_counted_once(capsys):
    doc = as_json(capsys, FIXTURES / "analysis_transport_badicrc.pcap")
    assert [(g["rule"], g["count"], g["frames"]) for g in doc["groups"]] == [("ib.bad_icrc", 1, [5])]


def _group_of(frames: list[int]) -> Group:
    g = Group("warning", "sequence", "x.y", "", keep=1)
    for f in frames:
        g.add(((f,), "text", None, None))
    return g


def test_a_groups_frames_are_printed_as_ranges_cut_at_most():
    assert _group_of([1, 2, 3, 7, 9, 10]).frame_ranges(40) == "1-3, 7, 9-10"
    assert _group_of([]).frame_ranges(40) == ""
    assert _group_of([1, 3, 5, 7, 9]).frame_ranges(2) == "1, 3, ... (3 more)"


def test_errors_are_one_line(capsys, tmp_path):
    rc, _, err = run(capsys, "expert", str(tmp_path / "missing.pcap"))
    assert rc == 1 and err.startswith("rdmaspy: error: ") and len(err.splitlines()) == 1
    rc, _, err = run(capsys, "expert", "-n", "-1", str(LOSS))
    assert rc == 1 and "must be 0 or more" in err


def test_tcp_findings_are_grouped_by_their_rule_with_its_source(capsys):
    """Before, each byte count of a TCP retransmission was a group of its own, named by its text."""
    doc = as_json(capsys, FIXTURES / "lossy_siw_nfsv3.pcap")
    by_rule = {g["rule"]: g for g in doc["groups"]}
    retrans = by_rule["tcp.retransmission"]
    sizes = {f["message"] for f in retrans["findings"]}
    assert len(sizes) > 1 and all(m.startswith("TCP retransmission of ") for m in sizes)
    assert retrans["count"] == 5 and retrans["severity"] == "note" and retrans["source"].startswith("RFC 9293")
    assert by_rule["tcp.held"]["source"].startswith("RFC 9293")
    # every group of the capture has a rule now: none is named by its text alone
    assert all(g["rule"] for g in doc["groups"])


def test_declared_dissector_rules_are_documented():
    from pathlib import Path

    from rdmaspy.engine import load_dissectors
    from rdmaspy.rules import RULES
    load_dissectors()
    doc = (Path(__file__).resolve().parent.parent / "docs" / "expert.md").read_text()
    for rid in ("tcp.retransmission", "tcp.held", "tcp.overlap", "tcp.missing", "mpa.resync"):
        r = RULES[rid]
        assert f"| `{rid}` | {r.severity} | {r.source.split(' (')[0]} |" in doc, rid


@given(st.lists(st.integers(min_value=1, max_value=5000), max_size=300), st.integers(min_value=1, max_value=6))
def test_a_group_gives_its_first_frames_in_order_once_and_their_ranges(firsts, most):
    g = Group("warning", "sequence", "x.y", "", keep=2)
    for f in firsts:
        g.add(((f, f + 1), "text", None, None))
    want = sorted(set(firsts))
    assert g.frames == want and g.frame_count() == len(want) and g.count == len(firsts)
    assert g.frame_ranges(most) == _ranges(want, most)
    assert len(g.items) == min(2, len(firsts))


def _ranges(frames: list[int], most: int) -> str:
    """The ranges by index arithmetic over the whole list (the reference a group's ranges are held to)."""
    parts, i = [], 0
    while i < len(frames):
        if len(parts) == most:
            return ", ".join(parts) + f", ... ({len(frames) - i} more)"
        j = i
        while j + 1 < len(frames) and frames[j + 1] == frames[j] + 1:
            j += 1
        parts.append(str(frames[i]) if i == j else f"{frames[i]}-{frames[j]}")
        i = j + 1
    return ", ".join(parts)


def test_group_frame_ranges_as_the_reference():
    """A group's ranges of frames from its bitmap are the reference's of its frames, cut at ``most``."""
    import random
    rnd = random.Random(33)
    for _ in range(2000):
        g = Group("warn", "g", "r", "s", keep=3)
        p = rnd.random()
        frames = [f for f in range(rnd.randint(0, 3), rnd.randint(0, 180)) if rnd.random() < p]
        for f in rnd.sample(frames, len(frames)):
            g.add(((f,), "t", None, None))
        most = rnd.randint(1, 6)
        assert g.frame_ranges(most) == _ranges(frames, most), (frames, most)
