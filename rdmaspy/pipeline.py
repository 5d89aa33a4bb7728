"""The per-packet loop of ``rdmaspy decode``: frames → dissection → analysis → filter → output.

Kept apart from the command line so that it can be compiled with the dissectors (setup.py): the
loop runs once per packet, and at a few hundred thousand packets a second its own overhead counts.
"""
from __future__ import annotations

import gc
from typing import Any, Callable, Iterable, Iterator

from .engine import Engine
from .packet import Frame, Packet
from .output.text import summary_bytes


def packets(frames: Iterable[Frame], engine: Engine, feed: Callable[[Packet], Any] | None,
            finish: Callable[[], Any] | None, matcher: Any, count: int) -> Iterator[tuple[Packet, int]]:
    """(packet, ts of the first frame) for each packet shown; ``count`` 0 means all."""
    # What is loaded by now (modules, declarations, tables) outlives the decode: keep the cycle
    # collector off it, and let it run less often, since packets are freed by their reference
    # counts.  Both are undone when the decode ends (main() may run inside another program).
    thresholds = gc.get_threshold()
    gc.freeze()
    gc.set_threshold(10_000, 20, 100)
    try:
        t0 = -1
        shown = 0
        dissect = engine.dissect
        for frame in frames:
            if t0 < 0:
                t0 = frame.ts
            pkt = dissect(frame)
            if feed is not None:
                feed(pkt)
            if matcher is not None and not matcher(pkt, t0):
                continue
            yield pkt, t0
            shown += 1
            if shown == count:
                return
        if finish is not None:
            finish()
    finally:
        gc.set_threshold(*thresholds)
        gc.unfreeze()


def _write_blocks(lines: Iterator[bytes], write: Callable[[bytes], Any], block: int) -> None:
    """Lines joined and written ``block`` at a time: one write per block, not per line."""
    buf: list[bytes] = []
    for line in lines:
        buf.append(line)
        if len(buf) >= block:
            buf.append(b"")
            write(b"\n".join(buf))
            buf.clear()
    if buf:
        buf.append(b"")
        write(b"\n".join(buf))


def write_summaries(pairs: Iterable[tuple[Packet, int]], write: Callable[[bytes], Any],
                    annotate: Callable[[bytes, Packet], bytes] | None = None) -> None:
    """One summary line per packet in UTF-8 (``annotate`` adds the analysis findings)."""
    if annotate is None:
        _write_blocks((summary_bytes(pkt, t0) for pkt, t0 in pairs), write, 2048)
    else:
        _write_blocks((annotate(summary_bytes(pkt, t0), pkt) for pkt, t0 in pairs), write, 2048)


def write_json_lines(pairs: Iterable[tuple[Packet, int]], write: Callable[[bytes], Any]) -> None:
    """One JSON object per packet and line (``-T json``)."""
    from .output.jsonout import packet_json
    _write_blocks((packet_json(pkt, t0) for pkt, t0 in pairs), write, 1024)
