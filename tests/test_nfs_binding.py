"""The NFS binding to RPC-over-RDMA (RFC 8267, RFC 8166 §3.4) and NFSv4.1 session slots, checked per
transaction (rdmaspy/analysis/nfs_binding.py): each rule broken alone in a built conversation, and the
real Linux captures, which keep every one of them."""
from __future__ import annotations

import sys
from pathlib import Path

import orjson
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent / "fixtures"))

import nfs_binding_build as nb  # noqa: E402
from analysis_run import analyse, analyse_frames  # noqa: E402

from rdmaspy import craft  # noqa: E402
from rdmaspy.analysis import nfs_binding  # noqa: E402
from rdmaspy.cli import main  # noqa: E402

NFS_CAPTURES = sorted(p.name for p in (Path(__file__).resolve().parent.parent / "captures" / "nfs").glob("*.pcap"))
OLD_CAPTURES = ["rxe-nfsv3-rdma.pcap", "rxe-nfsv42-rdma.pcap", "rxe-nfsv3-concurrent.pcap", "siw-nfsv3-rdma.pcap",
                "siw-nfsv41-rdma.pcap", "rxe-nfsv3-loss.pcap", "rxe-nfsv3-loss-after.pcap", "siw-nfsv3-loss.pcap",
                "rxe-nfsv41-loss.pcap", "rxe-nfsv41-deleg-recall.pcap", "rxe-nfsv3-lossy.pcap", "siw-nfsv3-lossy.pcap"]


def _nfs(res) -> list:
    return [f for f in res.findings if f.rule_def.id.startswith("nfs.")]


def _rules(frames) -> list[str]:
    return sorted(f.rule_def.id for f in analyse_frames(frames).findings)


def test_clean_conversations_keep_the_binding():
    """NFSv3 as Linux sends it (the READ's write-pad segment left alone, the WRITE's Read chunk at its data)
    breaks nothing; NFSv4.1 only has its session reported (a note)."""
    assert _rules(nb.scenario_v3()) == []
    assert _rules(nb.scenario_v41()) == ["nfs.session_slots"]


@pytest.mark.parametrize("fault, rules", [
    ("pad_written", ["nfs.write_chunk_roundup"]),
    # the reply hides the pad bytes: the Write list's segment says 0, RDMA WRITE put 3 there
    ("pad_written_unreported", ["chunk.write_length_mismatch", "nfs.write_chunk_roundup"]),
    ("write_chunk_short", ["nfs.write_chunk_short"]),
    ("write_chunk_length", ["nfs.write_chunk_length"]),
    # the Write list and the data's length word say 5,001, RDMA WRITE put 5,000 there: the transport says
    # so for the segment, once (the binding's nfs.write_chunk_moved would say it again of the item)
    ("write_moved_short", ["chunk.write_length_mismatch"]),
    ("inline_despite_chunk", ["nfs.inline_despite_write_chunk"]),
    ("short_read", ["nfs.short_read"]),
    ("read_count", ["nfs.read_count"]),
    ("read_position", ["nfs.read_chunk_position"]),
    ("read_position_length_word", ["nfs.read_chunk_position"]),
    ("read_chunk_padded", ["nfs.read_chunk_length"]),
    ("write_count", ["nfs.write_count"]),
    ("read_chunk_partly_read", ["nfs.read_chunk_moved"]),
    ("committed", ["nfs.write_committed"]),
    ("read_chunk_not_ddp", ["nfs.read_chunk_not_ddp"]),
    ("write_chunk_not_ddp", ["nfs.write_chunk_not_ddp"]),
])
def test_nfsv3_fault(fault, rules):
    assert _rules(nb.scenario_v3(**{fault: True})) == rules


def test_bytes_moved_unlike_the_item_where_the_transport_could_not_compare_are_the_bindings_to_say():
    """The reply names another handle for the data segment than the one RDMA WRITE used: the transport has
    no Write list length for what was written, so the item's 5,001 bytes against the 5,000 put is said by
    the binding (the handle changed is the Write list's own fault)."""
    assert _rules(nb.scenario_v3(write_moved_short=True, write_list_other_handle=True)) == \
        ["nfs.write_chunk_moved", "rpcrdma.write_list_shape"]
    assert _rules(nb.scenario_v3(write_list_other_handle=True)) == ["rpcrdma.write_list_shape"]


@pytest.mark.parametrize("fault, rules", [
    ("seq_gap", ["nfs.slot_sequence"]),
    ("slot_reused", ["nfs.slot_reused"]),
    ("slot_beyond", ["nfs.slot_beyond_highest"]),
    ("two_reads", ["nfs.chunk_list_complexity"]),
    # an empty Write chunk: the first READ's data comes inline (no fault there), the second READ takes the
    # second chunk; two Write chunks are beyond RFC 8267's complexity
    ("empty_chunk", ["nfs.chunk_list_complexity"]),
    ("read_plus", ["nfs.read_plus_write_chunk"]),
    ("write_committed", ["nfs.write_committed"]),
    ("read_position", ["nfs.read_chunk_position"]),
])
def test_nfsv41_fault(fault, rules):
    assert _rules(nb.scenario_v41(**{fault: True})) == sorted(rules + ["nfs.session_slots"])


def test_findings_name_the_values_that_broke_the_rule():
    (f,) = _nfs(analyse_frames(nb.scenario_v3(pad_written=True)))
    assert f.args["placed"] == 5004 and f.args["length"] == 5001 and f.args["chunk"] == 0
    assert f.text == ("5004 bytes in Write chunk 0 (as the Write list says) for a 5001-byte READ data: the XDR "
                      "padding was written")
    (f,) = _nfs(analyse_frames(nb.scenario_v3(read_position_length_word=True)))
    assert (f.args["position"], f.args["expected"]) == (f.args["expected"] - 4, f.args["expected"])
    res = analyse_frames(nb.scenario_v41(slot_reused=True))
    (f,) = [g for g in res.findings if g.rule_def.id == "nfs.slot_reused"]
    assert (f.args["rxid"], f.args["busy"], f.args["sequence"], f.args["last"]) == (0x136B6D1D, 0x126B6D1D, 3, 2)
    assert f.frames[1] in res.transactions[2]["call"]["frames"]        # the busy request's call
    # the finding joins the transaction it is about
    (t,) = [t for t in res.transactions if t["xid"] == 0x136B6D1D]
    assert [g["rule"] for g in t["findings"]] == ["nfs.slot_reused"]


def test_session_note_gives_slots_and_credits_side_by_side():
    """RFC 8267 §4.5: the slot table need not match the credits; both are reported, neither judged."""
    (f,) = [g for g in analyse_frames(nb.scenario_v41(slot_beyond=True)).findings if g.rule_def.id ==
            "nfs.session_slots"]
    assert f.args == {"session": nb.SESSION.hex(), "used": 40, "claimed": 40, "highest": 29, "target": 29,
                      "credits": nb.GRANT}
    assert f.severity == "note" and f.rule_def.source.startswith("RFC 8267 §4.5")


def test_every_finding_renders_with_its_source():
    for fn, faults in ((nb.scenario_v3, nb.FAULTS_V3), (nb.scenario_v41, nb.FAULTS_V41)):
        for fault in faults:
            for f in _nfs(analyse_frames(fn(**{fault: True}))):
                assert "{" not in f.text and f.rule_def.source


def test_session_state_is_charged_to_the_memory_budget_and_bounded():
    from rdmaspy.analysis.analyzer import Analyzer
    from rdmaspy.engine import Engine
    from rdmaspy.packet import Frame
    an = Analyzer(strict=True)
    eng = Engine(strict=True)
    for i, (ts, data) in enumerate(nb.scenario_v41(slot_beyond=True), 1):
        an.feed(eng.dissect(Frame(i, ts, 1, data, len(data))))
    mod = an.modules["nfs.binding"]
    assert mod.held == nfs_binding.SESSION_COST + 2 * nfs_binding.SLOT_COST       # slots 0 and 40
    assert mod.shed(1) == 1 and mod.held == 0 and not mod.sessions


def test_docs_list_every_binding_rule_with_its_severity_and_source():
    import re
    from rdmaspy.rules import RULES
    doc = (Path(__file__).resolve().parent.parent / "docs" / "expert.md").read_text()
    rows = {m.group(1): (m.group(2), m.group(3).strip()) for m in
            re.finditer(r"^\| `(nfs\.[a-z0-9_.]+)` \| (\w+) \| ([^|]+) \|", doc, re.M)}
    declared = {k: r for k, r in RULES.items() if k.startswith("nfs.")}
    assert set(rows) == set(declared)
    for rid, (severity, source) in rows.items():
        r = declared[rid]
        assert severity == r.severity, rid
        for ref in re.findall(r"RFC \d+ §[\d.]+", source):     # each section named is the declaration's
            assert ref.split(" §")[0] in r.source and ref.split(" ")[-1] in r.source, (rid, ref)
        assert re.findall(r"§[\d.]+", r.source)[0] in source, rid


def test_expert_lists_the_binding_rules(tmp_path, capsys):
    path = tmp_path / "v3.pcap"
    craft.write_pcap(str(path), nb.scenario_v3(read_chunk_not_ddp=True))
    assert main(["expert", "-T", "json", str(path)]) == 0
    doc = orjson.loads(capsys.readouterr().out)
    (g,) = [g for g in doc["groups"] if g["rule"].startswith("nfs.")]
    assert g["rule"] == "nfs.read_chunk_not_ddp" and g["severity"] == "error" and "RFC 8267 §3" in g["source"]


# --- the real captures: Linux 6.1 keeps the binding -------------------------------------------------------------
@pytest.mark.parametrize("name", [f"nfs/{n}" for n in NFS_CAPTURES] + OLD_CAPTURES)
def test_linux_captures_break_no_binding_rule(name):
    """Linux's client and server over rxe and siw, with and without loss: every Read chunk stands at its WRITE
    or SYMLINK data and is as long; every READ's Write chunk offers its count and comes back with exactly the
    data's length (READs past the end of file come back short with eof set, not flagged); the write-pad segment
    (a 4-byte segment at the end of a READ's Write chunk, its address without the XID) comes back empty; every
    slot takes sequence ids one by one.  The one finding is each NFSv4.1/4.2 session's note: the server's
    30 slots (highest 29, target 29) beside the 64 credits it grants."""
    res = analyse(name)
    found = _nfs(res)
    assert {f.rule_def.id for f in found} <= {"nfs.session_slots"}
    for f in found:
        assert f.args["highest"] == 29 and f.args["target"] == 29 and f.args["credits"] == 64
        assert f.args["used"] <= 5 and f.args["claimed"] == f.args["used"]
    # one note per session: each v4.1 capture has one (the NFSv4.2 ones reconnect within the same session)
    v41 = "v41" in name or "v42" in name
    assert len(found) == (1 if v41 else 0)


@pytest.mark.parametrize("name", ["nfs/rxe-nfsv3-full.pcap", "nfs/siw-nfsv3-full.pcap", "nfs/rxe-nfsv41-full.pcap"])
def test_the_write_pad_segment_and_short_reads_with_eof_are_there_and_not_flagged(name):
    """What the checks see and leave alone in the real traffic: the 5,001-byte READ's Write chunk ends with
    Linux's write-pad segment (4 bytes, registered under XID 0: no XID in its address's upper 32 bits), which
    the reply returns with length 0; READs past the end of file return fewer bytes than asked, with eof."""
    res = analyse(name)
    pads = [t for t in res.transactions if any(c["list"] == "write" and c["length"] == 4 and c["offset"] >> 32 == 0
                                              for c in t["chunks"])]
    assert pads, "the capture has a READ with the write-pad segment"
    for t in pads:
        (pad,) = [c for c in t["chunks"] if c["list"] == "write" and c["length"] == 4]
        (data,) = [c for c in t["chunks"] if c["list"] == "write" and c["length"] != 4]
        assert data["offset"] >> 32 == t["xid"] and pad["reported"] == 0 and data["reported"] == 5001
        assert not t["findings"]
    assert not _nfs(res) or {f.rule_def.id for f in _nfs(res)} == {"nfs.session_slots"}


# --- the facts cost a summary nothing -------------------------------------------------------------------------
def _facts(frames, facts: bool) -> list[tuple[int, list[int]]]:
    """(XID, the NFS operations left in RpcInfo.nfs) of each NFS message, the session's facts on or off."""
    from rdmaspy.dissectors.onc_rpc import RPC
    from rdmaspy.engine import Engine
    from rdmaspy.packet import Frame
    eng = Engine(strict=True)
    eng.session.facts = facts
    out = []
    for i, (ts, data) in enumerate(frames, 1):
        info = eng.dissect(Frame(i, ts, 1, data, len(data))).noted(RPC)
        if info is not None and info.prog == 100003:
            out.append((info.xid, [f.op for f in info.nfs or ()]))
    return out


def test_the_binding_facts_are_left_only_when_an_analysis_runs():
    """Summary lines run no analysis: the NFS dissector leaves no RpcInfo.nfs (the NFSv3 fast paths and the
    NFSv4 COMPOUND walk alike); with an analysis every READ, WRITE and SEQUENCE is there."""
    from rdmaspy.pipeline import Options, Pipeline
    for frames in (nb.scenario_v3(), nb.scenario_v41()):
        with_facts, without = _facts(frames, True), _facts(frames, False)
        assert [x for x, _ in with_facts] == [x for x, _ in without]
        assert all(ops for _, ops in with_facts[:4]) and not any(ops for _, ops in without)
    assert Pipeline(None, Options()).engine.session.facts is False
    assert Pipeline(None, Options(analyze=True)).engine.session.facts is True


def test_mutated_binding_conversations_raise_nothing(tmp_path):
    """Every fault's conversation, its frames mutated (tests/fuzz_pipeline.py), through the engine and the
    analysis with the binding: hostile counts, positions, slots and sessions raise nothing."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import fuzz_pipeline
    paths = []
    for fn, faults in ((nb.scenario_v3, nb.FAULTS_V3), (nb.scenario_v41, nb.FAULTS_V41)):
        for fault in ("",) + faults:
            path = tmp_path / f"{fn.__name__}-{fault or 'clean'}.pcap"
            craft.write_pcap(str(path), fn(**({fault: True} if fault else {})))
            paths.append(path)
    report = fuzz_pipeline.run(seconds=3.0, seed=31, rate=0.3, paths=paths)
    assert report.frames > 300 and report.clean(), report.text()
