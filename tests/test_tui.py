"""The TUI driven by Textual's Pilot on the shipped captures: the packet list, the detail tree, the
bytes, the display filter, export, and captures that are empty, cut or not captures at all.
``rdmaspy decode`` is the reference for what the screen must say."""
from __future__ import annotations

import asyncio

import pytest

from rdmaspy.readers import open_capture
from rdmaspy.tui.detail import KEEP_BEHIND, indent_text
from rdmaspy.tui.detail_tree import DetailTree
from rdmaspy.tui.filter_bar import FilterInput, complete
from rdmaspy.tui.hex_pane import HexPane
from rdmaspy.tui.messages import JumpToFrame
from rdmaspy.tui.model import CaptureModel
from rdmaspy.tui.packet_list import PacketList

from conftest import ROOT, capture
from tui_helpers import decode, new_app, screen_text, settle, verbose_blocks

NFS_ROCE = capture("rxe-nfsv3-rdma.pcap")
NFS_IWARP = capture("siw-nfsv3-rdma.pcap")
PERFTEST = capture("rxe-ib_write_bw.pcap")
V2 = capture("rpcrdma_v2_all.pcap")
LOSS = capture("rxe-ib_write_bw-loss.pcap")
STALL = capture("rxe-read-retry-stall.pcap")      # ICMP errors quoting READ requests (test_icmp.py)


def run(coro):
    return asyncio.run(coro)


def tree_text(app) -> list[str]:
    detail = app.query_one(DetailTree).detail
    assert detail is not None
    return [indent_text(n) for n in detail.nodes]


@pytest.mark.parametrize("path", [NFS_ROCE, NFS_IWARP, PERFTEST, V2])
def test_packet_list_rows_and_counts_are_decode_lines(path):
    expected = decode(path)

    async def go():
        app = new_app(path)
        async with app.run_test(size=(140, 40)) as pilot:
            await settle(pilot, app)
            plist = app.query_one(PacketList)
            index = app.model.index
            assert index.count == len(expected)
            assert [index.row(i) for i in range(index.count)] == expected
            assert app.status.packets == app.status.displayed == len(expected)
            assert app.status.problem == ""
            text = screen_text(app)
            assert f"Packets: {len(expected)}" in text and f"Displayed: {len(expected)}" in text
            assert expected[0][:100] in text
            await pilot.press("G")
            assert plist.cursor == len(expected) - 1
            await pilot.pause()
            assert expected[-1][:100] in screen_text(app)
            await pilot.press("g")
            assert plist.cursor == 0
    run(go())


@pytest.mark.parametrize("path,frames", [(NFS_ROCE, (1, 4, 6, 40)), (NFS_IWARP, (3, 30, 31)),
                                         (PERFTEST, (2, 9)), (V2, (1, 5, 12))])
def test_selected_packet_tree_is_decode_V(path, frames):
    blocks = verbose_blocks(path)

    async def go():
        app = new_app(path)
        async with app.run_test(size=(140, 40)) as pilot:
            await settle(pilot, app)
            for frame in frames:
                app.show_frame(frame)
                await settle(pilot, app)
                assert app.selected_frame == frame
                assert tree_text(app) == blocks[frame]
            # back up one frame at a time: the kept details answer at once
            await pilot.press("up")
            await settle(pilot, app)
            assert tree_text(app) == blocks[frames[-1] - 1]
    run(go())


@pytest.mark.parametrize("path", sorted(p for p in (ROOT / "captures").glob("*.pcap*")), ids=lambda p: p.name)
def test_a_tree_made_from_a_checkpoint_is_decode_V(path):
    # The background pass keeps its state every 50 frames; going down the capture from its end, a
    # frame just after a checkpoint and one a whole spacing after it are made from that checkpoint.
    blocks = verbose_blocks(path)
    model = CaptureModel(str(path), checkpoint_every=50)
    model.checkpoints.bytes_per_frame = 0           # every 50 frames, however big the state
    model.checkpoints.keep = len(blocks)            # and however many (none dropped, the spacing kept)
    try:
        model.start()
        assert model.wait(60)
        assert model.checkpoints.failed is None
        assert model.checkpoints.frames() == list(range(50, len(blocks) + 1, 50))
        frames = sorted((f for f in blocks if f % 50 in (0, 1, 2, 49) or f == len(blocks)), reverse=True)
        for frame in frames:
            detail = model.details.detail(frame)
            assert detail is not None
            assert [indent_text(n) for n in detail.nodes] == blocks[frame], frame
            assert model.details.started_after == (frame - 1) // 50 * 50
    finally:
        model.close()


def test_checkpoints_stay_few_and_still_make_exact_trees():
    # Past ``keep`` checkpoints every other one goes and the spacing doubles; the last one stays.
    blocks = verbose_blocks(NFS_ROCE)
    model = CaptureModel(str(NFS_ROCE), checkpoint_every=50)
    cps = model.checkpoints
    cps.keep, cps.bytes_per_frame = 4, 0
    try:
        model.start()
        assert model.wait(60)
        kept = cps.frames()
        assert 2 <= len(kept) <= 4 and cps.every > 50
        assert kept == sorted(kept) and len(blocks) - kept[-1] <= cps.every
        for frame in (len(blocks), kept[0] + 1, kept[-1] - 3):
            detail = model.details.detail(frame)
            assert detail is not None and [indent_text(n) for n in detail.nodes] == blocks[frame]
            assert model.details.started_after == max(k for k in kept if k < frame)
    finally:
        model.close()


@pytest.mark.parametrize("path", [capture("rxe-nfsv41-loss.pcap"), LOSS, capture("siw-nfsv3-lossy.pcap")],
                         ids=lambda p: p.name)
def test_a_replay_from_a_checkpoint_shows_the_frames_it_keeps_as_decode_V(path):
    # From a checkpoint the replay runs as the pass did (no Info text, no analysis fields) up to the
    # frames whose detail it keeps: those, and the frames kept on the way, are decode -V's, packets held
    # by a gap in the PSNs included (lossy captures).
    blocks = verbose_blocks(path)
    model = CaptureModel(str(path), checkpoint_every=120)
    model.checkpoints.bytes_per_frame = 0
    model.checkpoints.keep = len(blocks)
    try:
        model.start()
        assert model.wait(60)
        assert model.checkpoints.failed is None
        frames = sorted((f for f in blocks if f % 120 in (40, 77, 119)), reverse=True)
        checked = 0
        for frame in frames:
            detail = model.details.detail(frame)
            assert detail is not None
            assert model.details.started_after == frame // 120 * 120
            assert [indent_text(n) for n in detail.nodes] == blocks[frame], frame
            # the frames before it shown on the way are kept (unless a long hold pushed them out)
            for behind in range(frame - KEEP_BEHIND, frame):
                d = model.details.cached(behind)
                if d is not None:
                    checked += 1
                    assert [indent_text(n) for n in d.nodes] == blocks[behind], behind
        assert checked >= len(frames) * KEEP_BEHIND // 2
    finally:
        model.close()


def _tree_node(app, name: str):
    tree = app.query_one(DetailTree)
    for tn in tree._lines:
        if tn.data is not None and tn.data.name == name:
            return tn
    raise AssertionError(f"no {name} in the tree")


def test_selecting_a_field_lights_its_bytes_and_a_byte_selects_its_field():
    async def go():
        app = new_app(NFS_ROCE)
        async with app.run_test(size=(140, 40)) as pilot:
            await settle(pilot, app)
            app.show_frame(4)
            await settle(pilot, app)
            tree, hexpane = app.query_one(DetailTree), app.query_one(HexPane)
            tn = _tree_node(app, "bth.destqp")
            tree.move_cursor(tn)
            await pilot.pause()
            start, length = hexpane.span
            assert length == 3
            assert int.from_bytes(hexpane.data[start:start + 3], "big") == 0x11      # QP 0x11 in decode -V
            assert tn.data.text == "Destination Queue Pair: 0x000011" and tn.data.filter == "bth.destqp == 0x11"
            # a byte of the UDP destination port selects that field
            port = _tree_node(app, "udp.dstport")
            hexpane.select_byte(port.data.start + 1)
            await pilot.pause()
            assert tree.cursor_node.data.name == "udp.dstport"
            assert hexpane.span == (port.data.start, 2)
            # clicking a byte in the pane does the same (the first byte of the frame: Ethernet destination)
            hexpane.focus()
            await pilot.click(HexPane, offset=(6, 0))
            await pilot.pause()
            assert tree.cursor_node.data.name == "eth.dst"
    run(go())


@pytest.mark.parametrize("path,expr", [
    (NFS_ROCE, "rpcrdma.xid == 0x7efff5fc"),
    (NFS_ROCE, "nfs"),
    (NFS_IWARP, "rpcrdma.proc == 0 and rpc.procedure > 0"),
    (LOSS, 'expert.severity == "warning"'),
    (V2, "rpcrdma2 and nfs"),
    (STALL, "bth.opcode == 12"),
])
def test_filter_displays_what_decode_Y_prints(path, expr):
    expected = decode(path, "-Y", expr)

    async def go():
        app = new_app(path)
        async with app.run_test(size=(140, 40)) as pilot:
            await settle(pilot, app)
            await pilot.press("slash")
            assert isinstance(app.focused, FilterInput)
            app.focused.value = expr
            await pilot.press("enter")
            await settle(pilot, app)
            assert app.status.displayed == len(expected) > 0
            plist = app.query_one(PacketList)
            rows = [app.model.index.row(plist.row_at(i)) for i in range(plist.rows)]
            assert rows == expected
            assert f"Displayed: {len(expected)}" in screen_text(app)
            # an empty filter shows every packet again
            await pilot.press("slash")
            app.focused.value = ""
            await pilot.press("enter")
            await settle(pilot, app)
            assert app.status.displayed == app.status.packets
    run(go())


def test_invalid_filter_is_shown_at_its_column_and_not_applied():
    async def go():
        app = new_app(NFS_ROCE)
        async with app.run_test(size=(140, 40)) as pilot:
            await settle(pilot, app)
            await pilot.press("slash")
            for ch in "bth.opcode == ":
                await pilot.press(ch if ch != " " else "space")
            await pilot.press("enter")
            await settle(pilot, app)
            text = screen_text(app)
            assert "column" in text and "^" in text
            assert app.status.displayed == app.status.packets
            assert app.filter_run is None
            app.focused.value = "bth.opcdoe == 1"
            await pilot.pause()
            assert "bth.opcdoe" in screen_text(app)
            assert app.query_one(FilterInput).has_class("-invalid")
    run(go())


def test_field_completion_and_history():
    names = ["bth", "bth.destqp", "bth.opcode", "rpcrdma.xid"]
    assert complete("bth.op", names) == "bth.opcode"
    assert complete("nfs and rpcrdma.x", names) == "nfs and rpcrdma.xid"
    assert complete("bth.opcode == 1", names) is None

    async def go():
        app = new_app(PERFTEST)
        async with app.run_test(size=(120, 30)) as pilot:
            await settle(pilot, app)
            await pilot.press("slash")
            for ch in "bth.dest":
                await pilot.press(ch)
            await pilot.pause(0.2)
            await pilot.press("right")          # takes the suggestion
            assert app.focused.value == "bth.destqp"
            await pilot.press("enter")
            await settle(pilot, app)
            await pilot.press("slash")
            app.focused.value = "reth"
            await pilot.press("enter")
            await settle(pilot, app)
            await pilot.press("slash")
            await pilot.press("up")
            assert app.focused.value == "reth"
            await pilot.press("up")
            assert app.focused.value == "bth.destqp"
    run(go())


def test_apply_and_prepare_the_selected_field_as_filter():
    async def go():
        app = new_app(NFS_ROCE)
        async with app.run_test(size=(140, 40)) as pilot:
            await settle(pilot, app)
            app.show_frame(4)
            await settle(pilot, app)
            tree = app.query_one(DetailTree)
            tree.focus()
            tree.move_cursor(_tree_node(app, "rpcrdma.xid"))
            await pilot.press("p")
            assert app.query_one(FilterInput).value == "rpcrdma.xid == 0x7efff5fc"
            assert isinstance(app.focused, FilterInput) and app.filter_run is None
            tree.focus()
            await pilot.press("a")
            await settle(pilot, app)
            assert app.filter_expr == "rpcrdma.xid == 0x7efff5fc"
            assert app.status.displayed == len(decode(NFS_ROCE, "-Y", "rpcrdma.xid == 0x7efff5fc"))
    run(go())


def _frames(path):
    with open_capture(str(path)) as cap:
        return [(f.ts, f.data, f.wirelen, f.linktype, f.comment) for f in cap]


def test_export_writes_the_displayed_packets(tmp_path):
    expr = "rpcrdma"

    async def go():
        app = new_app(NFS_IWARP)
        async with app.run_test(size=(140, 40)) as pilot:
            await settle(pilot, app)
            app.apply_filter(expr)
            await settle(pilot, app)
            shown = [app.query_one(PacketList).row_at(i) for i in range(app.status.displayed)]
            await pilot.press("e")
            await pilot.pause()
            target = tmp_path / "shown.pcapng"
            app.screen.query_one("#export-path").value = str(target)
            await pilot.press("enter")
            await settle(pilot, app)
            assert f"{len(shown)} packets exported" in app.status.note
            return shown, target

    shown, target = run(go())
    original = _frames(NFS_IWARP)
    assert _frames(target) == [original[i] for i in shown]


def test_export_of_everything_decodes_to_the_same_packets(tmp_path):
    async def go():
        app = new_app(NFS_ROCE)
        async with app.run_test(size=(140, 40)) as pilot:
            await settle(pilot, app)
            await pilot.press("e")
            await pilot.pause()
            app.screen.query_one("#export-path").value = str(tmp_path / "all.pcapng")
            await pilot.press("enter")
            await settle(pilot, app)
    run(go())
    assert decode(tmp_path / "all.pcapng") == decode(NFS_ROCE)


@pytest.mark.parametrize("content,words", [
    (b"", "empty"),
    (b"this is not a capture at all, only text\n" * 4, "not a pcap or pcapng file"),
    (None, "truncated"),
])
def test_bad_captures_open_and_say_what_is_wrong(tmp_path, content, words):
    path = tmp_path / "bad.pcap"
    if content is None:
        data = NFS_ROCE.read_bytes()
        path.write_bytes(data[:len(data) // 2 + 7])
    else:
        path.write_bytes(content)

    async def go():
        app = new_app(path)
        async with app.run_test(size=(80, 24)) as pilot:
            await settle(pilot, app)
            assert words in app.status.problem
            text = screen_text(app)
            assert "Packets:" in text
            await pilot.press("down", "enter", "G", "slash")
            await pilot.press("escape", "2", "1", "question_mark", "escape")
    run(go())


def test_80x24_shows_list_tree_bytes_status_and_footer():
    async def go():
        app = new_app(NFS_ROCE)
        async with app.run_test(size=(80, 24)) as pilot:
            await settle(pilot, app)
            await pilot.press("down")
            await settle(pilot, app)
            text = screen_text(app).splitlines()
            assert len(text) == 24
            assert any("CM ConnectReply" in line for line in text)
            assert any("Frame 2:" in line for line in text)
            assert any(line.lstrip().startswith("0000 ") or "│0000 " in line for line in text)
            assert "Packets: 2238" in text[-2]
            assert "Quit" in text[-1] or "q" in text[-1]
    run(go())


def test_views_switch_by_digit_and_escape_goes_back_and_jump_selects_a_frame():
    async def go():
        app = new_app(NFS_ROCE)
        async with app.run_test(size=(120, 30)) as pilot:
            await settle(pilot, app)
            for key, name in zip("23456", ("transactions", "connections", "credits", "segments", "expert")):
                await pilot.press(key)
                assert app.current_view == name
            await pilot.press("escape")
            assert app.current_view == "segments"
            app.post_message(JumpToFrame(40))
            await settle(pilot, app)
            assert app.current_view == "packets" and app.selected_frame == 40
    run(go())


def test_an_idle_tui_does_not_repaint_its_status_bar():
    # Users keep the TUI open all day: once the capture is loaded, the ten-a-second status tick must
    # not redraw an unchanged status bar (it cost 15% of a core while idle).
    from rdmaspy.tui.status_bar import StatusBar

    async def go():
        app = new_app(NFS_ROCE)
        async with app.run_test(size=(120, 30)) as pilot:
            await settle(pilot, app)
            bar = app.query_one(StatusBar)
            updates = []
            real_update = bar.update
            bar.update = lambda *a, **k: (updates.append(a), real_update(*a, **k))[1]
            await pilot.pause(1.0)
            assert updates == []
    run(go())


def test_a_live_filter_keeps_rows_in_order_across_the_run_and_new_frames():
    # Live mode: frames up to ``limit`` are matched by the run over the spool, later ones as they
    # arrive (offer), before and after the run ends; the rows come out in frame order either way.
    from rdmaspy.tui.display import FilterRun
    from rdmaspy.pipeline import Options, Pipeline
    from rdmaspy.tui.source import open_frames

    expr = "nfs"
    expected = [int(line.split()[0]) - 1 for line in decode(NFS_ROCE, "-Y", expr)]
    run = FilterRun(expr, limit=1000)
    run.compile()
    with open_frames(str(NFS_ROCE)) as cap:
        pipe = Pipeline(cap, Options(analyze=True))
        arrived = [(pkt.frame.num - 1, pkt, pipe.t0) for pkt in pipe.packets()]
    for row, pkt, t0 in arrived[1000:1500]:        # arrive while the run has not ended
        run.offer(row, pkt, t0)
    run.run(str(NFS_ROCE))
    assert run.done and run.scanned == 1000 and run.error is None
    for row, pkt, t0 in arrived[1500:]:            # arrive after it ended
        run.offer(row, pkt, t0)
    assert list(run.rows) == expected


def test_every_protocol_of_an_nvme_capture_list_has_a_colour():
    """The packet list colours a row by its Protocol column: NVMe/RDMA's rows, as decode names them, have
    one of their own, as RPC-over-RDMA's and NFS's do."""
    from rdmaspy.tui.packet_list import protocol_style

    protocols = {line.split()[5] for line in decode(capture("rxe-nvme-rdma.pcap.gz")) if len(line.split()) > 5}
    assert "NVMe" in protocols
    for proto in protocols:
        assert protocol_style(proto).color is not None, proto
    assert protocol_style("NVMe") not in (protocol_style("RoCEv2"), protocol_style("NFS"))
