"""The TUI's analysis views driven by Textual's Pilot on the shipped captures: transactions with
their timeline, connections and the focus on one, credits, segments and the expert, each checked
against what ``rdmaspy flows``/``expert`` say of the same capture."""
from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys

import pytest

from rdmaspy.tui.views.connections import ConnectionsView
from rdmaspy.tui.views.credit_chart import chart_lines
from rdmaspy.tui.views.credits import CreditsView
from rdmaspy.tui.views.expert import ExpertView
from rdmaspy.tui.views.segments import SegmentsView
from rdmaspy.tui.views.transactions import TransactionsView, transaction_frames

from conftest import ROOT, capture
from tui_helpers import concatenated, new_app, screen_text, settle, shown

NFS_ROCE = capture("rxe-nfsv3-rdma.pcap")
NFS_IWARP = capture("siw-nfsv3-rdma.pcap")
NFS4 = capture("rxe-nfsv42-rdma.pcap")
PERFTEST = capture("rxe-ib_write_bw.pcap")
V2 = capture("rpcrdma_v2_all.pcap")
NVME = ROOT / "captures" / "rxe-nvme-rdma.pcap.gz"


def run(coro):
    return asyncio.run(coro)


def flows(path) -> dict:
    out = subprocess.run([sys.executable, "-m", "rdmaspy", "flows", "-T", "jsonl", str(path)], capture_output=True,
                         text=True, stdin=subprocess.DEVNULL, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert out.returncode in (0, 2), out.stderr
    lines = [json.loads(line) for line in out.stdout.splitlines() if line.strip()]
    return {"transactions": [t for t in lines if t.get("kind") == "transaction"],
            "connections": [c for c in lines if c.get("kind") == "connection"]}


def expert_counts(path) -> dict[str, int]:
    out = subprocess.run([sys.executable, "-m", "rdmaspy", "expert", "-T", "json", str(path)], capture_output=True,
                         text=True, stdin=subprocess.DEVNULL, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert out.returncode in (0, 2), out.stderr
    return {k: v for k, v in json.loads(out.stdout)["counts"].items() if v}


@pytest.mark.parametrize("path", [NFS_ROCE, NFS_IWARP, NFS4, V2])
def test_transactions_view_lists_every_transaction_flows_reports(path):
    want = flows(path)["transactions"]

    async def go():
        app = new_app(path)
        async with app.run_test(size=(140, 40)) as pilot:
            view = await shown(pilot, app, "2", TransactionsView)
            assert [t.key for t in view.rows] == [t["xid"] for t in want]
            if want:
                assert f"0x{want[0]['xid']:08x}" in screen_text(app)
                assert f"Transactions: {len(want)}" in screen_text(app)
    run(go())


def test_nvme_commands_are_transactions_of_the_view_named_by_their_upper_layer():
    """The view knows no NVMe of its own: the commands come as transactions, named by the declaration's
    operation, and a Read's timeline shows the RDMA WRITE into its SGL."""
    want = flows(NVME)["transactions"]

    async def go():
        app = new_app(NVME)
        async with app.run_test(size=(140, 40)) as pilot:
            view = await shown(pilot, app, "2", TransactionsView)
            assert sorted((t.conn, t.key) for t in view.rows) == sorted((t["conn"], t["key"]) for t in want)
            row = next(i for i, t in enumerate(view.rows) if t.facts.name == "Read" and t.bytes_written)
            view.table.move_to(row)
            await pilot.pause()
            text = screen_text(app)
            assert "Read" in text and "RDMA WRITE" in text and f"Transactions: {len(want)}" in text
    run(go())


def _titles(table) -> list[str]:
    return [c.title for c in table.columns]


def test_nvme_transactions_view_speaks_the_words_of_its_declaration():
    """An NVMe/RDMA capture's list and timeline say CID, command and completion, as NVMe/RDMA's UlpModel
    declares them; the selected command's facts are the declared ones with their values, and the groups
    stats puts it in."""
    from rdmaspy.analysis.nvme_facts import MODEL

    async def go():
        app = new_app(NVME)
        async with app.run_test(size=(200, 50)) as pilot:
            view = await shown(pilot, app, "2", TransactionsView)
            assert _titles(view.table)[:8] == ["CID", "Conn", "Dir", "Operation", "Latency", "State", "Command",
                                               "Completion"]
            row = next(i for i, t in enumerate(view.rows) if t.facts.name == "Read" and t.bytes_written)
            view.table.move_to(row)
            await pilot.pause()
            t = view.rows[row]
            text = screen_text(app)
            assert f"0x{t.key:04x}" in text and f"0x{t.key:08x}" not in text
            detail = app.query_one("#transaction-detail").render().plain
            assert detail.startswith(f"NVMe/RDMA CID 0x{t.key:04x} Read")
            for label, value in (("Queue", t.facts.qid), ("Starting LBA", t.facts.slba), ("Blocks", t.facts.nlb),
                                 ("SGL bytes", t.facts.sgl_bytes)):
                assert f"  {label} {value}" in detail
            assert f"grouped by namespace {t.facts.nsid}, controller {t.facts.cntlid}" in detail
            assert {f.label for f in MODEL.facts if f.label != "CID" and f.get(t) is not None} <= \
                {f.label for f in MODEL.facts if f"  {f.label} " in detail}
            assert "command Send" in text and "RDMA WRITE" in text and "SGL 0.0" in text
            for rpc_word in ("XID", "Procedure", "call Send", "reply Send", "Read chunk"):
                assert rpc_word not in text
    run(go())


def test_a_fact_the_declaration_gains_shows_in_the_detail_without_a_change_of_the_view(monkeypatch):
    from copy import copy

    from rdmaspy.analysis import ulp
    from rdmaspy.tui.views.transactions import detail_text

    model = ulp.model_of("nvme-rdma")
    extra = ulp.Fact("nvme_test_double_cid", "u32", "Twice the CID", lambda t: 2 * t.key)
    gained = copy(model)
    gained.facts = (*model.facts, extra)
    gained.groups = (*model.groups, ulp.Group("parity", lambda t: t.key % 2))
    monkeypatch.setitem(ulp.ULPS, "nvme-rdma", gained)

    async def go():
        app = new_app(NVME)
        async with app.run_test(size=(200, 50)) as pilot:
            view = await shown(pilot, app, "2", TransactionsView)
            view.table.move_to(3)
            await pilot.pause()
            t = view.rows[3]
            assert f"  Twice the CID {2 * t.key}" in detail_text(t).plain
            assert f"parity {t.key % 2}" in app.query_one("#transaction-detail").render().plain
    run(go())


def test_a_capture_of_two_upper_layers_shows_each_row_in_its_own_terms(tmp_path):
    """RPC-over-RDMA and NVMe/RDMA in one capture: neutral titles and a Protocol column, each row's key
    named and written as its upper layer declares it; focused on one connection, that layer's own words."""
    mixed = concatenated(tmp_path / "mixed.pcap", NFS_ROCE, NVME)
    want = flows(mixed)["transactions"]

    async def go():
        app = new_app(mixed)
        async with app.run_test(size=(200, 50)) as pilot:
            view = await shown(pilot, app, "2", TransactionsView)
            assert len(view.rows) == len(want)
            assert _titles(view.table)[:9] == ["Protocol", "Key", "Conn", "Dir", "Operation", "Latency", "State",
                                               "Request", "Response"]
            rows = {t.protocol: view.table.source.cells(i) for i, t in enumerate(view.rows)}
            assert rows["rpcrdma"][0] == "RPC-over-RDMA" and rows["rpcrdma"][1].startswith("XID 0x")
            assert len(rows["rpcrdma"][1]) == len("XID 0x") + 8
            assert rows["nvme-rdma"][0] == "NVMe/RDMA" and rows["nvme-rdma"][1].startswith("CID 0x")
            assert len(rows["nvme-rdma"][1]) == len("CID 0x") + 4
            nvme = next(i for i, t in enumerate(view.rows) if t.protocol == "nvme-rdma")
            view.table.move_to(nvme)
            await pilot.pause()
            assert "command Send" in screen_text(app)
            view.table.move_to(0)
            await pilot.pause()
            assert "call Send" in screen_text(app)
            await pilot.press("5")
            await pilot.pause()
            segments = app.query_one(SegmentsView)
            assert _titles(segments.table)[0] == "Key"
            lists = {segments.table.source.cells(i)[2] for i in range(len(segments.rows))}
            assert {"SGL", "Read chunk"} <= lists
            # focused on the NVMe connection: its own words again
            await pilot.press("3")
            await pilot.pause()
            conns = app.query_one(ConnectionsView)
            conns.table.move_to(next(i for i, c in enumerate(conns.rows) if c.ulp == "nvme-rdma"))
            await pilot.press("enter")
            await settle(pilot, app)
            await pilot.press("2")
            await pilot.pause()
            assert _titles(view.table)[:4] == ["CID", "Conn", "Dir", "Operation"]
    run(go())


def test_a_timeline_step_opens_its_packet_and_n_walks_the_transaction():
    async def go():
        app = new_app(NFS_ROCE)
        async with app.run_test(size=(140, 40)) as pilot:
            view = await shown(pilot, app, "2", TransactionsView)
            # the first transaction that pulled a Read chunk: its timeline has an RDMA READ step
            row = next(i for i, t in enumerate(view.rows) if t.bytes_read)
            view.table.move_to(row)
            await pilot.pause()
            txn = view.rows[row]
            assert view.selected is txn
            assert "RDMA READ" in screen_text(app) and f"Timeline of 0x{txn.key:08x}" in screen_text(app)
            await pilot.press("enter")                    # into the timeline
            await pilot.pause()
            assert app.focused is view.timeline
            read = next(i for i, s in enumerate(view.steps) if s.kind.value == "read")
            view.timeline.move_to(read)
            await pilot.press("enter")                    # a step: its packet in the list
            await pilot.pause()
            assert app.current_view == "packets"
            assert app.selected_frame == view.steps[read].frames[0]
            frames = transaction_frames(txn)
            await pilot.press("n")
            await pilot.pause()
            assert app.selected_frame == frames[0]
            await pilot.press("n")
            await pilot.pause()
            assert app.selected_frame == frames[1]
            await pilot.press("N")
            await pilot.pause()
            assert app.selected_frame == frames[0]
    run(go())


def test_connections_view_shows_the_setup_and_focusing_one_filters_every_view():
    async def go():
        app = new_app(NFS_ROCE)
        async with app.run_test(size=(140, 40)) as pilot:
            await settle(pilot, app)
            await pilot.press("3")
            await pilot.pause()
            view = app.query_one(ConnectionsView)
            assert len(view.rows) == 1
            text = screen_text(app)
            assert "NFS/RDMA(20049)" in text and "0x000011" in text
            assert "private data: client v1 send=4096 recv=4096 R=1" in text
            await pilot.press("enter")
            await settle(pilot, app)
            assert view.focus_state.connection == view.rows[0].id
            assert app.filter_expr.startswith("((ip.src == 192.0.2.2")
            # the filter keeps every packet of the only connection
            assert app.status.displayed == app.status.packets
            await pilot.press("2")
            await pilot.pause()
            assert "on connection 1" in screen_text(app)
            await pilot.press("3")
            await pilot.press("enter")                    # again: every connection
            await settle(pilot, app)
            assert view.focus_state.connection is None and app.filter_expr == ""
    run(go())


def test_connection_focus_hides_other_connections_records():
    async def go():
        app = new_app(NFS_ROCE)
        async with app.run_test(size=(140, 40)) as pilot:
            await settle(pilot, app)
            view = app.query_one(TransactionsView)
            view.focus_state.connection = 999             # a connection this capture does not have
            view.refresh_view()
            assert view.rows == []
            view.focus_state.connection = None
            view.refresh_view()
            assert view.rows
    run(go())


def test_segments_view_lists_every_advertised_segment_with_its_state():
    want = [c for t in flows(NFS_ROCE)["transactions"] for c in t["chunks"]]

    async def go():
        app = new_app(NFS_ROCE)
        async with app.run_test(size=(140, 40)) as pilot:
            await settle(pilot, app)
            await pilot.press("5")
            await pilot.pause()
            view = app.query_one(SegmentsView)
            assert len(view.rows) == len(want) > 0
            assert [s.handle for s in view.rows] == [c["handle"] for c in want]
            assert f"Segments: {len(want)}" in screen_text(app)
            full = next(i for i, s in enumerate(view.rows) if s.state.value == "full")
            view.table.move_to(full)
            await pilot.press("enter")
            await pilot.pause()
            assert app.current_view == "packets" and app.selected_frame == view.rows[full].frames[0]
    run(go())


def test_credits_view_draws_each_series_and_lists_violations():
    async def go():
        app = new_app(NFS_ROCE)
        async with app.run_test(size=(100, 30)) as pilot:
            await settle(pilot, app)
            await pilot.press("4")
            await pilot.pause()
            view = app.query_one(CreditsView)
            assert view.series and view.current == view.series[0][0]
            text = screen_text(app)
            assert "granted 64..64" in text and "outstanding peak" in text
            assert "Violations: 0" in text
    run(go())


def test_credits_view_draws_each_nvme_queues_depth_against_its_size():
    """NVMe/RDMA's queues: commands outstanding against SQSIZE + 1, by the same records as the credits."""
    async def go():
        app = new_app(str(ROOT / "captures" / "rxe-nvme-rdma.pcap.gz"))
        async with app.run_test(size=(100, 30)) as pilot:
            await settle(pilot, app)
            await pilot.press("4")
            await pilot.pause()
            view = app.query_one(CreditsView)
            assert len(view.series) == 3
            text = screen_text(app)
            assert "granted 32..32" in text and "outstanding peak" in text
            assert "Violations: 0" in text
    run(go())


def test_credit_chart_marks_more_outstanding_than_granted():
    from rdmaspy.analysis.model import CallDirection, CreditSample
    samples = [CreditSample(1, CallDirection.FORWARD, t, t, 4, None, n) for t, n in enumerate([1, 2, 4, 6, 2])]
    lines = chart_lines(samples, 5, 5)
    assert len(lines) == 5
    red = [span for line in lines for span in line.spans if "red" in str(span.style)]
    assert red, "six calls outstanding against a grant of four is not drawn as a violation"
    assert chart_lines([], 10, 4)[0].plain == "no credit samples"


@pytest.mark.parametrize("path", [NFS_ROCE, NFS_IWARP, PERFTEST])
def test_expert_view_counts_what_expert_reports(path):
    want = expert_counts(path)

    async def go():
        app = new_app(path)
        async with app.run_test(size=(140, 40)) as pilot:
            await settle(pilot, app)
            await pilot.press("6")
            await pilot.pause()
            view = app.query_one(ExpertView)
            have: dict[str, int] = {}
            for e in view.entries():
                have[e.severity] = have.get(e.severity, 0) + 1
            assert have == want
    run(go())


def test_an_expert_finding_opens_its_frame():
    async def go():
        app = new_app(NFS_ROCE)
        async with app.run_test(size=(140, 40)) as pilot:
            view = await shown(pilot, app, "6", ExpertView)
            tree = view.findings_tree
            tree.focus()
            rule = tree.root.children[0].children[0]
            rule.expand()
            await pilot.pause()
            leaf = rule.children[0]
            tree.move_cursor(leaf)
            await pilot.press("enter")
            await pilot.pause()
            assert app.current_view == "packets" and app.selected_frame == leaf.data.frame
    run(go())


def test_transactions_export_writes_a_flows_document(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)

    async def go():
        app = new_app(NFS_ROCE)
        async with app.run_test(size=(140, 40)) as pilot:
            view = await shown(pilot, app, "2", TransactionsView)
            view.table.focus()
            await pilot.press("e")
            await pilot.pause()
            return len(view.rows)
    n = run(go())
    doc = json.loads((tmp_path / "rxe-nfsv3-rdma-transactions.json").read_text())
    assert doc["format"] == "rdmaspy-flows"
    assert sum(len(c["transactions"]) for c in doc["connections"]) == n


def test_views_work_at_80x24():
    async def go():
        app = new_app(NFS_IWARP)
        async with app.run_test(size=(80, 24)) as pilot:
            await settle(pilot, app)
            for key, words in (("2", "Transactions:"), ("3", "Connections:"), ("4", "Credits:"), ("5", "Segments:"),
                               ("6", "Expert information")):
                await pilot.press(key)
                await pilot.pause()
                assert words in screen_text(app), key
    run(go())


def test_the_timeline_shows_the_host_events_among_the_wire_steps():
    """tui --host-trace: a transaction's kernel events stand in its timeline in time order with its steps;
    the credits view says what the client took; a segment's row its registration's life."""
    from rdmaspy.output.hosttrace import prepare
    from rdmaspy.tui.app import RdmaspyApp
    from rdmaspy.tui.model import CaptureModel

    pcap = ROOT / "captures" / "nfs" / "rxe-nfsv3-full.pcap"
    host = prepare(str(pcap), [str(ROOT / "captures" / "nfs" / "rxe-nfsv3-full.trace.txt.xz")])

    async def go():
        app = RdmaspyApp(CaptureModel(str(pcap), host=host))
        async with app.run_test(size=(160, 40)) as pilot:
            view = await shown(pilot, app, "2", TransactionsView)
            row = next(i for i, t in enumerate(view.rows) if t.key == 0xE8E166D4)
            view.table.move_to(row)
            await pilot.pause()
            names = [getattr(s, "name", None) or s.kind.value for s in view.steps]
            assert names.index("xprtrdma_marshal") < names.index("call") < names.index("svcrdma_decode_rqst") \
                < names.index("read") < names.index("nfsd_write_start") < names.index("reply") \
                < names.index("xprtrdma_reply")
            assert [s.ts for s in view.steps] == sorted(s.ts for s in view.steps)
            assert "host events" in screen_text(app) and "c:marshal" in screen_text(app)
            call = view.steps[names.index("call")]
            assert view._step_cells(names.index("call"))[1] == "+0.0 µs"      # times from the call's packet
            assert view._step_cells(names.index("xprtrdma_marshal"))[1].startswith("-")
            assert call.ts == view.selected.request.ts
            await pilot.press("4")
            await pilot.pause()
            assert "the client took 64..64 (xprtrdma_reply)" in screen_text(app)
            await pilot.press("5")
            await pilot.pause()
            assert "remote invalidation" in screen_text(app)
    run(go())


def test_an_nfs_read_detail_leads_with_its_operation_file_and_range_at_80_columns():
    """The transaction's fact line names what an NFS user looks for first (after the operation its header
    names: the file, the offset and count), as RPC-over-RDMA's declaration leads with them, before the
    transport's words; at 80 columns the line's start is what shows."""
    from rdmaspy.analysis.rpcrdma_facts import MODEL

    async def go():
        app = new_app(NFS4)
        async with app.run_test(size=(80, 24)) as pilot:
            view = await shown(pilot, app, "2", TransactionsView)
            row = next(i for i, t in enumerate(view.rows)
                       if t.facts.nfs is not None and t.facts.nfs.op == "READ" and t.facts.nfs.offset)
            view.table.move_to(row)
            await pilot.pause()
            t = view.rows[row]
            detail = app.query_one("#transaction-detail").render().plain
            assert detail.index("COMPOUND(READ)") < detail.index(f"Full name {t.facts.nfs.full_name}") \
                < detail.index(f"Offset {t.facts.nfs.offset}") < detail.index(f"Count {t.facts.nfs.count}") \
                < detail.index("Call message type")
            assert f"Offset {t.facts.nfs.offset}" in screen_text(app)
    run(go())
    assert [f.name for f in MODEL.shown_facts()[:2]] == ["nfs_full_name", "nfs_offset"]


def test_a_rules_findings_are_listed_by_frame_page_after_page(monkeypatch):
    """On a lossy capture the lost segments are reported out of frame order; the expert view lists a rule's
    findings by frame (as `rdmaspy expert` does), and its "more" leaf goes on where the page stopped."""
    from rdmaspy.tui.views import expert
    monkeypatch.setattr(expert, "PAGE", 4)

    async def go():
        app = new_app(capture("rxe-nfsv41-loss.pcap"))
        async with app.run_test(size=(140, 40)) as pilot:
            view = await shown(pilot, app, "6", ExpertView)
            tree = view.findings_tree
            rule = next(n for top in tree.root.children for n in top.children
                        if n.data == ("warning", "ib.lost_segment"))
            rule.expand()
            await pilot.pause()
            while isinstance(rule.children[-1].data, expert.More):
                tree.move_cursor(rule.children[-1])
                tree.focus()
                await pilot.press("enter")
                await pilot.pause()
            return [leaf.data.frame for leaf in rule.children], [e.frame for e in view.entries()
                                                                 if e.rule == "ib.lost_segment"]
    listed, reported = run(go())
    assert listed == sorted(reported) and listed != reported
