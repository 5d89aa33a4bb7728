"""Driving the TUI in tests: open a capture in the app under Textual's Pilot, wait for what it does in
the background, and ask ``rdmaspy decode`` (the reference) what the screen should say."""
from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path
from typing import TypeVar

from textual.widget import Widget

from rdmaspy.tui.app import RdmaspyApp
from rdmaspy.tui.model import CaptureModel

ROOT = Path(__file__).resolve().parent.parent
W = TypeVar("W", bound=Widget)


def decode(path: os.PathLike | str, *args: str) -> list[str]:
    """``rdmaspy decode`` of ``path``: its lines."""
    out = subprocess.run([sys.executable, "-m", "rdmaspy", "decode", str(path), *args], capture_output=True,
                         text=True, stdin=subprocess.DEVNULL, env={**os.environ, "PYTHONPATH": str(ROOT)},
                         cwd=ROOT)
    assert out.returncode in (0, 2), out.stderr
    return out.stdout.splitlines()


def verbose_blocks(path: os.PathLike | str) -> dict[int, list[str]]:
    """``decode -V``: frame number -> the lines of its tree."""
    blocks: dict[int, list[str]] = {}
    current: list[str] = []
    for line in decode(path, "-V"):
        if not line:
            if current:
                num = int(current[0].split(":", 1)[0].split()[1])
                blocks[num] = current
            current = []
        else:
            current.append(line)
    return blocks


def new_app(path: os.PathLike | str, **kw) -> RdmaspyApp:
    return RdmaspyApp(CaptureModel(str(path)), **kw)


async def settle(pilot, app: RdmaspyApp, timeout: float = 30.0) -> None:
    """Wait until the index, any filter and any detail being dissected are done, and the screen shows it."""
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout
    while loop.time() < end:
        run = app.filter_run
        busy = not app.model.index.done or (run is not None and not run.done) or \
            any(w.is_running for w in app.workers)
        if not busy:
            break
        await pilot.pause(0.05)
    await pilot.pause(0.15)         # one more tick of the app's timer takes what the threads left
    await pilot.pause()


async def shown(pilot, app: RdmaspyApp, key: str, view: type[W]) -> W:
    """Wait for the app to settle, press a view's key (``"2"``: transactions) and return that view."""
    await settle(pilot, app)
    await pilot.press(key)
    await pilot.pause()
    return app.query_one(view)


def screen_text(app: RdmaspyApp) -> str:
    """What the terminal shows, as plain text lines."""
    return "\n".join(strip.text for strip in app.screen._compositor.render_strips())


def concatenated(out: Path, *paths: Path) -> Path:
    """One pcap of the captures' frames, one capture after the other (a capture of two upper layers, say).
    Each must be a pcap of the first one's byte order, resolution and link type (gzip-compressed or not)."""
    import gzip

    def read(path: Path) -> bytes:
        data = path.read_bytes()
        return gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data

    first, *rest = (read(p) for p in paths)
    body = [first]
    for data in rest:
        # same magic, version, link type; the snap length may differ and the first's is kept
        if data[:8] != first[:8] or data[20:24] != first[20:24]:
            raise ValueError("captures of different formats cannot be concatenated")
        body.append(data[24:])
    out.write_bytes(b"".join(body))
    return out
