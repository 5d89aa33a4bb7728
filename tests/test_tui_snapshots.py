"""Snapshot tests of the TUI: the screen, as Textual exports it (SVG), compared with the one committed in
tests/snapshots/.  After a deliberate change of the screen, record them again with
``RDMASPY_UPDATE_SNAPSHOTS=1 python3 -m pytest tests/test_tui_snapshots.py`` and look at the SVGs.

(pytest-textual-snapshot does the same, but it pins syrupy 4.8, which refuses the pytest this project
pins; these tests compare Textual's own export the same way.)"""
from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest

from rdmaspy.tui.detail_tree import DetailTree
from rdmaspy.tui.filter_bar import FilterInput

from conftest import capture
from tui_helpers import concatenated, new_app, settle

SNAPSHOTS = Path(__file__).resolve().parent / "snapshots"
UPDATE = os.environ.get("RDMASPY_UPDATE_SNAPSHOTS") == "1"


def _compare(name: str, svg: str, tmp_path: Path) -> None:
    path = SNAPSHOTS / f"{name}.svg"
    if UPDATE:
        SNAPSHOTS.mkdir(exist_ok=True)
        path.write_text(svg)
        return
    if not path.exists():
        pytest.fail(f"no snapshot {path.name}: record it with RDMASPY_UPDATE_SNAPSHOTS=1")
    if path.read_text() != svg:
        got = tmp_path / f"{name}.svg"
        got.write_text(svg)
        pytest.fail(f"the screen differs from {path}: see {got}")


async def _shot(path, size, steps) -> str:
    app = new_app(path)
    async with app.run_test(size=size) as pilot:
        app.query_one(FilterInput).cursor_blink = False
        await settle(pilot, app)
        await steps(app, pilot)
        await settle(pilot, app)
        return app.export_screenshot()


def test_snapshot_packets_with_a_field_selected(tmp_path):
    async def steps(app, pilot):
        app.show_frame(4)
        await settle(pilot, app)
        tree = app.query_one(DetailTree)
        tree.focus()
        for tn in tree._lines:
            if tn.data is not None and tn.data.name == "rpcrdma.xid":
                tree.move_cursor(tn)
                break

    _compare("packets_field_selected", asyncio.run(_shot(capture("rxe-nfsv3-rdma.pcap"), (130, 40), steps)),
             tmp_path)


def test_snapshot_invalid_filter_80x24(tmp_path):
    async def steps(app, pilot):
        await pilot.press("slash")
        app.focused.value = "rpcrdma.xid == 0x7efff5fc and"

    _compare("invalid_filter_80x24", asyncio.run(_shot(capture("rpcrdma_v2_all.pcap"), (80, 24), steps)), tmp_path)


def test_snapshot_filtered_iwarp(tmp_path):
    async def steps(app, pilot):
        app.apply_filter("rpcrdma.proc == 0")
        await settle(pilot, app)
        await pilot.press("down", "down")

    _compare("filtered_iwarp", asyncio.run(_shot(capture("siw-nfsv3-rdma.pcap"), (130, 40), steps)), tmp_path)


def test_snapshot_help(tmp_path):
    async def steps(app, pilot):
        await pilot.press("question_mark")

    _compare("help", asyncio.run(_shot(capture("rxe-ib_write_bw.pcap"), (100, 30), steps)), tmp_path)


def _view_steps(key: str, *moves: str):
    async def steps(app, pilot):
        await pilot.press(key)
        await settle(pilot, app)
        if moves:
            await pilot.press(*moves)
    return steps


@pytest.mark.parametrize("name,path,key,moves", [
    ("transactions_timeline", "rxe-nfsv3-rdma.pcap", "2", ("down",) * 24),
    ("connections", "siw-nfsv3-rdma.pcap", "3", ()),
    ("credits", "rxe-nfsv42-rdma.pcap", "4", ()),
    ("segments", "rxe-nfsv3-rdma.pcap", "5", ()),
    ("expert", "rxe-ib_write_bw-loss.pcap", "6", ()),
    ("transactions_v2_80x24", "rpcrdma_v2_all.pcap", "2", ()),
    ("transactions_nvme_80x24", "rxe-nvme-rdma.pcap.gz", "2", ("down",) * 8),
    ("segments_nvme_80x24", "siw-nvme-rdma.pcap.gz", "5", ()),
])
def test_snapshot_analysis_view(tmp_path, name, path, key, moves):
    size = (80, 24) if name.endswith("80x24") else (130, 40)
    _compare(name, asyncio.run(_shot(capture(path), size, _view_steps(key, *moves))), tmp_path)


def test_snapshot_transactions_of_two_upper_layers(tmp_path):
    """A capture of RPC-over-RDMA then NVMe/RDMA: a Protocol column, neutral titles, each key named."""
    mixed = concatenated(tmp_path / "mixed.pcap", capture("rxe-nfsv3-rdma.pcap"), capture("rxe-nvme-rdma.pcap.gz"))
    _compare("transactions_two_upper_layers", asyncio.run(_shot(mixed, (130, 40), _view_steps("2", "end"))),
             tmp_path)
