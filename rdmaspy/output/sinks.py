"""The per-packet text of ``rdmaspy decode`` as pipeline sinks: summary lines, the verbose tree and hex
dumps (coloured on a terminal).  JSON Lines are in rdmaspy.output.jsonlines (orjson is imported only
when they are asked for).

Each writes its lines to a ``LineWriter`` as the packets come; the times are relative to the
pipeline's first frame (``attach``).  Compiled with the dissectors (setup.py).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Callable

from ..analysis.rules import Finding
from ..packet import Packet
from ..pipeline import PacketSink
from .clock import Clock
from .lines import LineWriter
from .safe import safe_text
from .text import hex_lines, packet_style, summary_bytes, summary_line, tree_lines, tree_utf8

if TYPE_CHECKING:
    from ..pipeline import Pipeline

# A style name ("red", "bold yellow", None for none) to a function that paints a line in it.
Painter = Callable[[str | None], Callable[[str], str]]


def with_findings(line: str, pkt: Packet) -> str:
    """A summary line with the messages of the analysis findings on its packet (``-A``)."""
    notes = [e.text for e in pkt.expert or () if isinstance(e, Finding)]
    return f"{line} [{'; '.join(notes)}]" if notes else line


class TimedSink(PacketSink):
    """A sink whose lines show times since the first frame of its pipeline, or in the format of a
    ``clock`` (``-t``)."""

    __slots__ = ("out", "_pipe", "clock")

    def __init__(self, out: LineWriter, clock: Clock | None = None) -> None:
        self.out = out
        self._pipe: Pipeline | None = None
        self.clock = clock

    def attach(self, pipe: Pipeline) -> None:
        self._pipe = pipe

    def t0(self) -> int:
        pipe = self._pipe
        return pipe.t0 if pipe is not None else 0

    def when(self, pkt: Packet) -> bytes | None:
        """The time column of a summary line when a clock makes it (None: the default)."""
        clock = self.clock
        if clock is None:
            return None
        pipe = self._pipe
        if pipe is None:
            return clock.column(pkt.frame.ts, pkt.frame.ts, -1)
        return clock.column(pkt.frame.ts, pipe.t0, pipe.t_prev)

    def flush(self) -> None:
        self.out.flush()

    def finish(self) -> None:
        self.out.flush()


class SummarySink(TimedSink):
    """One summary line per packet (``findings``: with the analysis findings on it, ``-A``)."""

    __slots__ = ("findings",)

    def __init__(self, out: LineWriter, findings: bool = False, clock: Clock | None = None) -> None:
        super().__init__(out, clock)
        self.findings = findings

    def packet(self, pkt: Packet) -> None:
        line = summary_bytes(pkt, self.t0(), self.when(pkt))
        if self.findings and pkt.expert:
            line = with_findings(line.decode(), pkt).encode()
        self.out.line(line)


class TextSink(TimedSink):
    """The verbose tree (``-V``) and/or hex dump (``-x``) of each packet, or its summary line; with a
    ``painter`` (a terminal), coloured: malformed and bad checksums red, warnings yellow, titles bold."""

    __slots__ = ("verbose", "hexdump", "findings", "painter")

    def __init__(self, out: LineWriter, verbose: bool, hexdump: bool, findings: bool = False,
                 painter: Painter | None = None, clock: Clock | None = None) -> None:
        super().__init__(out, clock)
        self.verbose = verbose
        self.hexdump = hexdump
        self.findings = findings
        self.painter = painter

    def packet(self, pkt: Packet) -> None:
        if self.painter is not None:
            self._painted(pkt, self.painter)
            return
        # A packet's lines go to the writer as one block: one encode and one hand-over per packet
        # rather than per line (a tree has dozens), the same bytes out.
        if self.verbose:
            # the tree and the hex dump are safe for a terminal as they are made (tree_pieces, hex_lines)
            self.out.safe_block(tree_utf8(pkt, self.t0(), self.hexdump))
            return
        line = summary_line(pkt, self.t0(), self.when(pkt))
        lines = [with_findings(line, pkt) if self.findings else line]
        if self.hexdump:
            lines.append("")
            lines.extend(hex_lines(pkt.frame.data))
            lines.append("")
        self.out.block(lines)

    def _painted(self, pkt: Packet, painter: Painter) -> None:
        text = self.out.text              # each line made safe before it is painted (the output is not checked)
        style = packet_style(pkt)
        paint = painter(style)
        if self.verbose:
            head = painter(f"bold {style}" if style else "bold")
            bold, red, yellow = painter("bold"), painter("red"), painter("yellow")
            for line in tree_lines(pkt, self.t0()):
                if line.startswith("Frame "):
                    text(head(safe_text(line)))
                elif line.startswith("    [Error/"):
                    text(red(safe_text(line)))
                elif line.startswith("    [Warning/"):
                    text(yellow(safe_text(line)))
                elif not line.startswith(" "):
                    text(bold(safe_text(line)))
                else:
                    text(safe_text(line))
        else:
            line = summary_line(pkt, self.t0(), self.when(pkt))
            text(paint(safe_text(with_findings(line, pkt) if self.findings else line)))
        if self.hexdump:
            if not self.verbose:
                text("")
            hexpaint = painter("dim") if style is None else paint
            for line in hex_lines(pkt.frame.data):
                text(hexpaint(line))
        if self.verbose or self.hexdump:
            text("")
