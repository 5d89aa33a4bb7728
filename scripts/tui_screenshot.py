#!/usr/bin/env python3
"""The README's screenshot (docs/tui.svg): ``rdmaspy tui`` on a shipped capture, a display filter applied,
a packet and one of its fields selected, saved with Textual's own SVG screenshot.

    python3 scripts/tui_screenshot.py
"""
from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from rdmaspy.tui.detail_tree import DetailTree  # noqa: E402
from rdmaspy.tui.filter_bar import FilterInput  # noqa: E402
from tui_helpers import new_app, settle  # noqa: E402

FILTER = "nfs.procedure_v3 == 3 or rpcrdma.xid == 0x7efff5fc"


async def shoot(target: Path) -> None:
    app = new_app(ROOT / "captures" / "rxe-nfsv3-rdma.pcap")
    async with app.run_test(size=(132, 42)) as pilot:
        app.query_one(FilterInput).cursor_blink = False
        await settle(pilot, app)
        await pilot.press("slash")
        app.query_one(FilterInput).value = FILTER
        await pilot.press("enter")
        await settle(pilot, app)
        await pilot.press("down", "down", "down", "down")
        await settle(pilot, app)
        tree = app.query_one(DetailTree)
        tree.focus()
        for node in tree._lines:
            if node.data is not None and node.data.name == "rpcrdma.xid":
                tree.move_cursor(node)
                break
        await settle(pilot, app)
        app.save_screenshot(str(target.name), path=str(target.parent))


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description="Save the README's screenshot of rdmaspy tui.")
    ap.add_argument("--out", type=Path, default=ROOT / "docs" / "tui.svg", help="where (default: docs/tui.svg)")
    asyncio.run(shoot(ap.parse_args().out.resolve()))
