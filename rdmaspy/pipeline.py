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
    # What is loaded by now (modules, declarations, tables) lives as long as the process: keep the
    # cycle collector off it, and let it run less often: packets are freed by their reference counts.
    gc.freeze()
    gc.set_threshold(10_000, 20, 100)
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


def write_summaries(pairs: Iterable[tuple[Packet, int]], write: Callable[[bytes], Any],
                    annotate: Callable[[bytes, Packet], bytes] | None = None) -> None:
    """One summary line per packet in UTF-8, written in blocks (``annotate`` adds the analysis findings)."""
    buf: list[bytes] = []
    for pkt, t0 in pairs:
        line = summary_bytes(pkt, t0)
        buf.append(line if annotate is None else annotate(line, pkt))
        if len(buf) >= 2048:
            buf.append(b"")
            write(b"\n".join(buf))
            buf.clear()
    if buf:
        buf.append(b"")
        write(b"\n".join(buf))


def write_json_lines(pairs: Iterable[tuple[Packet, int]], write: Callable[[bytes], Any]) -> None:
    """One JSON object per packet and line (``-T json``), written in blocks."""
    from .output.jsonout import packet_json
    buf: list[bytes] = []
    for pkt, t0 in pairs:
        buf.append(packet_json(pkt, t0))
        if len(buf) >= 1024:
            buf.append(b"")
            write(b"\n".join(buf))
            buf.clear()
    if buf:
        buf.append(b"")
        write(b"\n".join(buf))
