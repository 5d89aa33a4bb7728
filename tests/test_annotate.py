"""``rdmaspy annotate FILE -o out.pcapng``: the same frames, with the analysis as comments tshark reads back."""
from __future__ import annotations

import pytest

from conftest import FIXTURES, capture, tshark_fields
from rdmaspy.analysis.analyzer import Analyzer
from rdmaspy.cli import main
from rdmaspy.engine import Engine
from rdmaspy.readers import open_capture
from rdmaspy.writers.pcapng import PcapngWriter

LOSS = capture("rxe-ib_write_bw-loss.pcap")
NFS = capture("rxe-nfsv3-rdma.pcap")


def frames(path) -> list:
    with open_capture(str(path)) as cap:
        return list(cap)


def annotate(capsys, src, out) -> None:
    rc = main(["annotate", str(src), "-o", str(out)])
    err = capsys.readouterr().err
    assert rc == 0, err


def test_frames_are_copied_unchanged(capsys, tmp_path):
    out = tmp_path / "loss.pcapng"
    annotate(capsys, LOSS, out)
    a, b = frames(LOSS), frames(out)
    assert len(a) == len(b) == 575
    for x, y in zip(a, b):
        assert (x.ts, x.data, x.wirelen, x.linktype) == (y.ts, y.data, y.wirelen, y.linktype)


def test_tshark_reads_a_comment_on_every_packet_with_a_finding(capsys, tmp_path):
    out = tmp_path / "loss.pcapng"
    annotate(capsys, LOSS, out)
    an = Analyzer(strict=True)
    engine = Engine()
    for fr in frames(LOSS):
        an.feed(engine.dissect(fr))
    an.finish()
    want = {f.frames[0] for f in an.findings}
    assert len(want) == 14 + 57
    rows = tshark_fields(out, ["frame.number", "frame.comment"])
    got = {int(r["frame.number"][0]): r["frame.comment"] for r in rows if r["frame.comment"]}
    assert set(got) == want
    assert got[5] == ["rdmaspy warning: NAK PSN sequence error: the responder expects PSN 10710096 "
                      "[ib.nak.psn_sequence: IBTA vol. 1 9.7 (AETH syndrome NAK code 0: PSN sequence error)]"]
    assert got[6][0].startswith("rdmaspy note: PSN 10710096 sent again (first in frame 2)")


def test_calls_and_replies_carry_their_xid(capsys, tmp_path):
    out = tmp_path / "nfs.pcapng"
    annotate(capsys, NFS, out)
    rows = tshark_fields(out, ["frame.number", "frame.comment", "rpc.xid", "rpc.msgtyp"])
    # tshark rebuilds 321 of the 328 replies (not those sent through a Reply chunk); each has its comment
    replies = [r for r in rows if r["rpc.msgtyp"] == ["1"]]
    assert len(replies) == 321
    for r in replies:
        xid = int(r["rpc.xid"][0], 0)
        text = " ".join(r["frame.comment"])
        assert f"XID 0x{xid:08x}: reply to the call in frame " in text, r["frame.number"]
    # a call is one frame, or its SEND and the frame where its Read chunk data completed it
    calls = {c.split(" XID ")[1][:10] for r in rows for c in r["frame.comment"] if ": call; reply in frame " in c}
    assert len(calls) == 328


def test_rdma_operations_name_their_chunk(capsys, tmp_path):
    out = tmp_path / "nfs.pcapng"
    annotate(capsys, NFS, out)
    rows = tshark_fields(out, ["frame.number", "frame.comment", "infiniband.bth.opcode"])
    writes = [r for r in rows if any("RDMA WRITE into Write chunk 0 segment 0" in c for c in r["frame.comment"])]
    assert writes
    # every RDMA WRITE packet of the capture belongs to a chunk of some transaction
    write_ops = {6, 7, 8, 10}
    rdma_writes = [r for r in rows if r["infiniband.bth.opcode"] and int(r["infiniband.bth.opcode"][0], 0) in write_ops]
    assert rdma_writes and all(any("RDMA WRITE into" in c for c in r["frame.comment"]) for r in rdma_writes)


def test_original_comments_are_kept(capsys, tmp_path):
    src = tmp_path / "in.pcapng"
    data = frames(FIXTURES / "analysis_transport_drop.pcap")
    with PcapngWriter(str(src)) as w:
        i = w.add_interface(1, tsresol=9)
        for fr in data:
            w.write_packet(i, fr.ts, fr.data, fr.wirelen, comment="from the field" if fr.num == 2 else None)
    out = tmp_path / "out.pcapng"
    annotate(capsys, src, out)
    got = {fr.num: fr.comment for fr in frames(out) if fr.comment}
    # frame 2 is the packet after the dropped one: the user's comment first, then the finding
    assert list(got) == [2]
    rows = tshark_fields(out, ["frame.comment"])
    assert rows[1]["frame.comment"][0] == "from the field"
    assert rows[1]["frame.comment"][1].startswith("rdmaspy warning: PSN 102: 1 earlier PSN(s) not captured")


def test_clean_capture_has_no_comments(capsys, tmp_path):
    out = tmp_path / "clean.pcapng"
    annotate(capsys, FIXTURES / "analysis_transport_clean.pcap", out)
    assert all(fr.comment is None for fr in frames(out))
    assert len(frames(out)) == 19


def test_refuses_to_overwrite_its_input(capsys, tmp_path):
    src = tmp_path / "x.pcap"
    src.write_bytes((FIXTURES / "analysis_transport_clean.pcap").read_bytes())
    rc = main(["annotate", str(src), "-o", str(src)])
    err = capsys.readouterr().err
    assert rc == 1 and "is the capture being read" in err
    assert src.read_bytes() == (FIXTURES / "analysis_transport_clean.pcap").read_bytes()
    rc = main(["annotate", str(src)])
    assert rc == 1 and "-o" in capsys.readouterr().err


# Captures whose findings come from the dissectors too: malformed frames (a truncated RDMA_ERROR, an NFS
# reply cut short), the CM's REJ and its bad private data, TCP retransmissions and holes, bad checksums.
EXPERT_CASES = ["synth_rocev2_rpcrdma_write.pcap", "cm_all_messages.pcap", "siw-nfsv3-rdma.pcap",
                "lossy_siw_nfsv3.pcap", "rxe-read-retry-stall.pcap", "iwarp_stream_cases.pcap",
                "iwarp_markers_crc.pcap", "hostile_write_list.pcap"]


@pytest.mark.parametrize("name", EXPERT_CASES)
def test_every_finding_expert_lists_is_a_comment_on_its_frame(capsys, tmp_path, name):
    import json

    from rdmaspy.commands.annotate import finding_comment
    src = capture(name)
    assert main(["expert", "-T", "json", "-n", "0", str(src)]) == 0
    doc = json.loads(capsys.readouterr().out)
    want = {(f["frames"][0], finding_comment(g["severity"], f["message"], g["rule"], g["source"]))
            for g in doc["groups"] for f in g["findings"] if f["frames"]}
    assert want
    out = tmp_path / "out.pcapng"
    annotate(capsys, src, out)
    rows = tshark_fields(out, ["frame.number", "frame.comment"])
    got = {(int(r["frame.number"][0]), c) for r in rows for c in r["frame.comment"]
           if c.startswith(("rdmaspy error:", "rdmaspy warning:", "rdmaspy note:", "rdmaspy chat:"))}
    assert got == want
