"""Export (``e``): the frames on display written to a pcapng file, with their comments.

Frames are read again from the capture and written as they were captured (interfaces, timestamps,
lengths, comments), so the exported file decodes to the same packets.
"""
from __future__ import annotations

from array import array

from .. import __version__
from ..writers.outfile import OutputFile
from ..writers.pcapng import PcapngWriter
from .source import open_frames


def export_pcapng(source: str, target: str, rows: array | None) -> int:
    """Write the frames of ``source`` whose rows (0-based) are in ``rows`` (None: all) to ``target``;
    returns how many were written.  ``rows`` is in increasing order, as a display filter leaves it."""
    output = OutputFile(target, [source])            # never over the capture; whole or not at all
    cap = open_frames(source)
    written = 0
    with cap, output as stream, PcapngWriter(stream, application=f"rdmaspy {__version__} (tui export)") as out:
        ifaces: dict[int, int] = {}
        want = iter(rows) if rows is not None else None
        next_row = next(want, -1) if want is not None else -1
        for frame in cap:
            row = frame.num - 1
            if want is not None:
                if next_row < 0:
                    break
                if row != next_row:
                    continue
                next_row = next(want, -1)
            out.copy_frame(frame, cap.interfaces, ifaces)
            written += 1
    return written
