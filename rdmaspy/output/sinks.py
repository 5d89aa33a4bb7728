"""The per-packet text of ``rdmaspy decode`` as pipeline sinks: summary lines, the verbose tree and hex
dumps (coloured on a terminal).  JSON Lines are in rdmaspy.output.jsonlines (orjson is imported only
when they are asked for).

Each writes its lines to a ``LineWriter`` as the packets come; the times are relative to the
pipeline's first frame (``attach``).  Compiled with the dissectors (setup.py).
"""
from __future__ import annotations

import time

from ..packet import Expert, Packet
from ..pipeline import PacketSink
from ..typenames import TYPE_CHECKING, Callable, ClassVar, Final
from .clock import Clock
from .lines import LineWriter
from .safe import safe_text
from .text import hex_lines, packet_style, summary_bytes, summary_line, tree_lines, tree_utf8

if TYPE_CHECKING:
    from ..analysis.rules import Finding
    from ..pipeline import Pipeline

# A style name ("red", "bold yellow", None for none) to a function that paints a line in it.
Painter = Callable[[str | None], Callable[[str], str]]


def with_findings(line: str, pkt: Packet) -> str:
    """A summary line with the messages of the analysis findings on its packet (``-A``)."""
    # a packet's expert list holds the dissectors' Expert items and the analysis' Findings: a Finding is what
    # is not an Expert (the analysis' model, imported by the analysis alone: the summary's start spares it)
    notes = [e.text for e in pkt.expert or () if not isinstance(e, Expert)]
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
    fills_layers: ClassVar[bool] = False    # a line is the Info text: no layer filled (Pipeline: Session.names)

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


# A packet list's colour byte: bits 0-5 the protocol's number (in the order the protocols first came),
# bits 6-7 the severity of what the packet says (malformed, an error or a warning of the expert).
SEVERITY_NONE: Final = 0
SEVERITY_WARNING: Final = 1
SEVERITY_ERROR: Final = 2
MAX_PROTOCOLS: Final = 63          # protocol numbers past this share the last one (drawn uncoloured)


def packet_severity(pkt: Packet) -> int:
    """The severity of a packet's colour (``packet_style``'s red and yellow)."""
    style = packet_style(pkt)
    if style is None:
        return SEVERITY_NONE
    return SEVERITY_ERROR if style == "red" else SEVERITY_WARNING


# What a RowSink hands out: the block's lines, the end offset of each in the text of every line so far,
# and their colour bytes.
RowBlock = Callable[[list[bytes], list[int], bytes], None]


class RowSink(PacketSink):
    """The rows of a packet list: each packet's summary line (``decode``'s, without its newline), where it
    ends in the text of all the lines before it, and its colour byte, handed to ``emit`` a block at a time:
    every ``rows`` lines, or every ``seconds`` while they come slower, and at ``flush`` and ``finish``.
    ``protocols`` names the protocol numbers of the colour bytes."""

    __slots__ = ("emit", "rows", "seconds", "protocols", "_ids", "_pipe", "_lines", "_ends", "_codes",
                 "_written", "_last")

    def __init__(self, emit: RowBlock, rows: int = 4096, seconds: float = 0.1) -> None:
        self.emit = emit
        self.rows = rows
        self.seconds = seconds
        self.protocols: list[str] = []
        self._ids: dict[str, int] = {}
        self._pipe: Pipeline | None = None
        self._lines: list[bytes] = []
        self._ends: list[int] = []
        self._codes: list[int] = []
        self._written = 0
        self._last = time.monotonic()

    def attach(self, pipe: Pipeline) -> None:
        self._pipe = pipe

    def packet(self, pkt: Packet) -> None:
        pipe = self._pipe
        line = summary_bytes(pkt, pipe.t0 if pipe is not None else 0)
        self._written += len(line)
        self._lines.append(line)
        self._ends.append(self._written)
        self._codes.append(self._protocol_id(pkt.proto) | (packet_severity(pkt) << 6))
        n = len(self._lines)
        if n >= self.rows or (n & 63 == 0 and time.monotonic() - self._last >= self.seconds):
            self.publish()

    def _protocol_id(self, proto: str) -> int:
        pid = self._ids.get(proto)
        if pid is None:
            if len(self.protocols) >= MAX_PROTOCOLS:
                return MAX_PROTOCOLS
            pid = self._ids[proto] = len(self.protocols)
            self.protocols.append(proto)
        return pid

    def publish(self) -> None:
        """Hand out the rows made since the last block."""
        self._last = time.monotonic()
        if not self._lines:
            return
        lines, ends, codes = self._lines, self._ends, bytes(self._codes)
        self._lines, self._ends, self._codes = [], [], []
        self.emit(lines, ends, codes)

    def flush(self) -> None:
        self.publish()

    def finish(self) -> None:
        self.publish()


class SeveritySink(PacketSink):
    """Each packet's colour severity (``packet_severity``), a byte a packet, handed to ``emit`` a block at
    a time: every ``rows`` packets, or every ``seconds`` while they come slower, and at ``flush`` and
    ``finish``.  A packet whose dissectors put items in its expert list (the analysis' findings apart)
    goes to ``items`` as it comes."""

    __slots__ = ("emit", "items", "rows", "seconds", "_pending", "_last")
    # A packet's colour waits for the findings about it still held (``Pipeline``), as its row would.
    colours_by_findings: ClassVar[bool] = True

    def __init__(self, emit: Callable[[bytes], None], items: Callable[[Packet], None], rows: int = 4096,
                 seconds: float = 0.1) -> None:
        self.emit = emit
        self.items = items
        self.rows = rows
        self.seconds = seconds
        # a list (its append compiled; a bytearray's is a method call by name), made bytes a block at a time
        self._pending: list[int] = []
        self._last = time.monotonic()

    def packet(self, pkt: Packet) -> None:
        expert = pkt.expert
        pending = self._pending
        if expert or pkt.malformed:
            pending.append(packet_severity(pkt))
            if expert:
                for e in expert:
                    if isinstance(e, Expert):        # not a Finding of the analysis
                        self.items(pkt)
                        break
        else:
            pending.append(SEVERITY_NONE)
        n = len(pending)
        if n >= self.rows or (n & 63 == 0 and time.monotonic() - self._last >= self.seconds):
            self.publish()

    def publish(self) -> None:
        self._last = time.monotonic()
        if self._pending:
            block = bytes(self._pending)
            self._pending = []
            self.emit(block)

    def flush(self) -> None:
        self.publish()

    def finish(self) -> None:
        self.publish()


# One finding as the TUI's store spools it: severity, rule id (a dissector's item without one: its group),
# group, first frame, connection, the text as made (a dissector item's text, or the values an analysis rule's
# message is made from), timestamp.
FindingRow = tuple[str, str, str, int, "int | None", "str | dict[str, object]", int]
NO_CONNECTION: Final = -1       # a finding's connection as a group's key and a credit finding's, when it has none


class FindingRows:
    """Findings as rows of plain values (``FindingRow``), each with the number of its group (severity, rule,
    connection; ``new_group`` numbers a new one), handed to ``emit`` a block at a time: every ``rows``
    findings, or at the first after ``seconds``, and at ``flush``.  Compiled: the analysis reports a finding
    every few frames, which the TUI's store (Python) took some 11,000 instructions each to keep."""

    __slots__ = ("emit", "new_group", "rows", "seconds", "_heads", "_groups", "_pending", "_numbers",
                 "_credit_places", "_credit_conns", "_last")

    def __init__(self, emit: Callable[[list[FindingRow], list[int], list[int], list[int]], None],
                 new_group: Callable[[str, str, "int | None", str], int], rows: int = 256,
                 seconds: float = 0.25) -> None:
        self.emit = emit                # (rows, their groups' numbers, the credit findings' places, connections)
        self.new_group = new_group
        self.rows = rows
        self.seconds = seconds
        # by rule id: its severity, id and group, the same strings each time (the pickle of a block keeps one)
        self._heads: dict[str, tuple[str, str, str]] = {}
        self._groups: dict[tuple[str, str, int], int] = {}
        self._pending: list[FindingRow] = []
        self._numbers: list[int] = []
        self._credit_places: list[int] = []
        self._credit_conns: list[int] = []
        self._last = time.monotonic()

    def on_finding(self, f: Finding) -> None:
        """An analysis finding (a pipeline's ``on_finding``): its values, not its text, which is made when
        it is read back, far less often."""
        rule = f.rule_def
        head = self._heads.get(rule.id)
        if head is None:
            head = self._heads[rule.id] = (str(rule.severity), rule.id, rule.group)
        frames = f.frames
        self.add(head[0], head[1], head[2], frames[0] if frames else 0, f.conn, f.args, f.ts)

    def add(self, severity: str, rule: str, group: str, frame: int, conn: int | None,
            text: str | dict[str, object], ts: int) -> None:
        conn_key = NO_CONNECTION if conn is None else conn
        key = (severity, rule, conn_key)
        number = self._groups.get(key)
        if number is None:
            number = self._groups[key] = self.new_group(severity, rule, conn, group)
        pending = self._pending
        if group == "credits":
            self._credit_places.append(len(pending))
            self._credit_conns.append(conn_key)
        pending.append((severity, rule, group, frame, conn, text, ts))
        self._numbers.append(number)
        if len(pending) >= self.rows or time.monotonic() - self._last >= self.seconds:
            self.flush()

    def flush(self) -> None:
        self._last = time.monotonic()
        pending = self._pending
        if not pending:
            return
        numbers, places, conns = self._numbers, self._credit_places, self._credit_conns
        self._pending = []
        self._numbers = []
        self._credit_places = []
        self._credit_conns = []
        self.emit(pending, numbers, places, conns)
