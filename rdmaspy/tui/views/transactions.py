"""View 2, the transactions: every request of an upper layer with its response (an RPC call and its
reply, an NVMe command and its completion) — key, operation, connection, latency, state, findings — and,
for the one under the cursor, the facts its upper layer declares and its timeline: the request's Sends,
each RDMA READ against the advertised segment it pulled, each RDMA WRITE into its segment, the
response's Sends, invalidation and a Send ending it (RPC-over-RDMA's RDMA_DONE), with bytes and times;
with ``--host-trace``, the kernel events of its client and server among them, in time order.

The view has no words of its own for a protocol: the columns' titles, the key's name and digits, the
operation, the request's and the response's words and the facts are those of each transaction's
``UlpModel`` (analysis.ulp).  With several upper layers in view, the titles are neutral and each row
says its protocol and its key's name.

Enter on a transaction moves into its timeline; Enter on a step opens its packet.  ``n``/``N``
(anywhere in the app) go to the next/previous packet of the selected transaction; ``e`` here
exports the transactions shown as a JSON flows document.
"""
from __future__ import annotations

import os
from array import array
from itertools import islice
from typing import TYPE_CHECKING, Sequence

from rich.style import Style
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.widgets import Static

from ...analysis.model import Step, StepKind, Transaction, TransactionState
from ...analysis.ulp import UlpModel, model_of
from ...hosttrace.parse import HostEvent
from ..analysis_store import NO_LATENCY, Rows
from ..messages import JumpToFrame
from . import register_view
from .common import AnalysisView, UlpTerms, bytes_text, duration_text, facts_of, groups_of, key_text
from .rows import SEVERITY_STYLES, WARNING_STYLE, Column, RowSource, RowTable

if TYPE_CHECKING:
    from ..model import CaptureModel

STATE_STYLES: dict[TransactionState, Style] = {TransactionState.UNANSWERED: WARNING_STYLE}
BAR_WIDTH = 40


def columns_of(terms: UlpTerms) -> tuple[Column, ...]:
    """The list's columns in the words of the upper layers in view (a Protocol column when several are)."""
    request, response = terms.request, terms.response
    head: tuple[Column, ...] = (Column(terms.key, terms.key_width), Column("Conn", 4, True), Column("Dir", 4))
    if terms.mixed:
        head = (Column("Protocol", terms.label_width), *head)
    # latency and state before the frames: at 80 columns they show, the frames are one Enter away
    return (*head, Column(terms.operation, 24), Column("Latency", 11, True), Column("State", 10),
            Column(request, max(7, len(request)), True), Column(response, max(7, len(response)), True),
            Column("Read", 9, True), Column("Written", 9, True), Column("Findings", 30))


def step_columns_of(terms: UlpTerms) -> tuple[Column, ...]:
    """The timeline's columns: the Step column as wide as the longest step title of the layers in view."""
    width = max(10, *(len(step_title(m, StepKind.RESPONSE, True)) for m in terms.ulps),
                *(len(step_title(m, StepKind.REQUEST, False)) for m in terms.ulps))
    return (Column("Step", width), Column("+Time", 11, True), Column("Frames", 18), Column("Bytes", 9, True),
            Column("Segment", 48), Column("Timeline", 40))


def step_title(ulp: UlpModel, kind: StepKind, invalidates: bool) -> str:
    """A step as its upper layer says it: "call Send", "completion SendInv", "RDMA READ", "RDMA_DONE"."""
    if kind is StepKind.REQUEST:
        return f"{ulp.request} Send"
    if kind is StepKind.RESPONSE:
        return f"{ulp.response} {'SendInv' if invalidates else 'Send'}"
    if kind is StepKind.RDMA_READ:
        return "RDMA READ"
    if kind is StepKind.RDMA_WRITE:
        return "RDMA WRITE"
    if kind is StepKind.DONE and ulp.done:
        return ulp.done
    return kind.value


def operation_text(t: Transaction) -> str:
    """What the transaction did, as its upper layer names it ("NFSv3 READ", "Identify")."""
    return model_of(t.protocol).operation(t)


def detail_text(t: Transaction) -> Text:
    """The transaction's facts as its upper layer declares them, and the groups it falls in."""
    ulp = model_of(t.protocol)
    text = Text()
    text.append(f"{ulp.label} {ulp.key} {key_text(ulp, t.key)} {operation_text(t)}", style="bold")
    for label, value in facts_of(t):
        text.append(f"  {label} ", style="dim")
        text.append(value)
    groups = groups_of(t)
    if groups:
        text.append("  grouped by ", style="dim")
        text.append(", ".join(f"{name} {value}" for name, value in groups))
    return text


def findings_text(t: Transaction) -> str:
    return ", ".join(sorted({f.rule_def.id for f in t.findings}))


def transaction_frames(t: Transaction) -> list[int]:
    """Every frame of the transaction, in capture order."""
    frames = set(t.request.frames)
    for step in t.steps:
        frames.update(step.frames)
        if step.response_frames:
            frames.update(step.response_frames)
    rep = t.response
    if rep is not None:
        frames.update(rep.frames)     # a Send ending it after the response (RDMA_DONE) is one of its steps
    return sorted(frames)


def segment_text(ulp: UlpModel, step: Step) -> str:
    seg = step.segment
    if seg is not None:
        return (f"{ulp.lists.get(seg.kind, str(seg.kind))} {seg.chunk}.{seg.index} "
                f"0x{seg.handle:08x}@0x{seg.offset:x}+{seg.length} {seg.state.value}")
    if step.handle is not None:
        return f"unadvertised 0x{step.handle:08x}@0x{(step.offset or 0):x}+{step.length or 0}"
    if step.invalidated is not None:
        return f"invalidates 0x{step.invalidated:08x}"
    return ""


def host_title(ev: HostEvent) -> str:
    """A kernel event's row title: whose (client, server, CM) and the stage it marks."""
    return f"{ev.side.value[0]}:{ev.decl.stage.value}"


def bar(start: int, end: int, t0: int, span: int, width: int = BAR_WIDTH) -> str:
    """Where a step falls in its transaction's time, as a bar ``width`` characters wide."""
    if span <= 0:
        return "█".ljust(width, "·")
    a = min(width - 1, (start - t0) * width // span)
    b = max(a + 1, min(width, (end - t0) * width // span + 1))
    return "·" * a + "█" * (b - a) + "·" * (width - b)


class TransactionsView(AnalysisView):
    BINDINGS = [Binding("e", "export_flows", "Export flows")]
    DEFAULT_CSS = """
    TransactionsView > .title { height: 1; background: $primary-darken-2; text-style: bold; padding: 0 1; }
    TransactionsView > #transactions-table { height: 2fr; min-height: 4; }
    TransactionsView > #transaction-detail { height: auto; max-height: 3; padding: 0 1; background: $boost; }
    TransactionsView > #timeline-table { height: 1fr; min-height: 4; border-top: solid $primary-darken-2; }
    """

    def __init__(self, model: "CaptureModel", *, id: str | None = None) -> None:
        super().__init__(model, id=id)
        self.rows: Rows[Transaction] = Rows(range(0), model.analysis.transactions.get)
        self.steps: list[Step | HostEvent] = []
        self.selected: Transaction | None = None
        self._selected_number = -1    # the selected transaction's number in the store
        self._seen: tuple[int, int | None] = (-1, None)
        self._frame_pos = -1          # where n/N stand among the selected transaction's frames
        self.terms = UlpTerms.of(())

    def compose(self) -> ComposeResult:
        yield Static("Transactions", id="transactions-title", classes="title")
        yield RowTable(columns_of(self.terms), RowSource(lambda: len(self.rows), self._cells, self._style),
                       id="transactions-table")
        yield Static("", id="transaction-detail")
        yield Static("Timeline", id="timeline-title", classes="title")
        yield RowTable(step_columns_of(self.terms), RowSource(lambda: len(self.steps), self._step_cells),
                       id="timeline-table")

    @property
    def table(self) -> RowTable:
        return self.query_one("#transactions-table", RowTable)

    @property
    def timeline(self) -> RowTable:
        return self.query_one("#timeline-table", RowTable)

    # -- the list ---------------------------------------------------------------------------------
    def _cells(self, i: int) -> Sequence[str]:
        t = self.rows[i]
        rep = t.response
        cells = (self.terms.key_of(t.protocol, t.key), str(t.conn),
                 "fwd" if t.request_direction.value == "c2s" else "back",
                 operation_text(t), duration_text(t.latency_ns), t.state.value, str(t.request_frame),
                 "" if rep is None else str(rep.frame), bytes_text(t.bytes_read) if t.bytes_read else "",
                 bytes_text(t.bytes_written) if t.bytes_written else "", findings_text(t))
        return (model_of(t.protocol).label, *cells) if self.terms.mixed else cells

    def _style(self, i: int) -> Style | None:
        t = self.rows[i]
        if t.findings:
            worst = min((f.severity for f in t.findings), key=("error", "warning", "note", "chat").index)
            return SEVERITY_STYLES.get(worst)
        return STATE_STYLES.get(t.state)

    def refresh_view(self) -> None:
        txns = self.model.analysis.transactions
        n = len(txns)
        key = (n, self.focus_state.connection)
        if key == self._seen:
            return
        self._seen = key
        focus = self.focus_state
        lats = islice(txns.latencies, n)
        if focus.connection is None:
            numbers: array | range = range(n)
            lat = sorted(v for v in lats if v != NO_LATENCY)
        else:
            numbers = array("I")
            lat = []
            for i, (conn, v) in enumerate(zip(islice(txns.conns, n), lats)):
                if conn == focus.connection:
                    numbers.append(i)
                    if v != NO_LATENCY:
                        lat.append(v)
            lat.sort()
        self.rows = Rows(numbers, txns.get)
        terms = UlpTerms.of(txns.protocols_of(focus.connection))
        if terms != self.terms:
            self.terms = terms
            self.table.set_columns(columns_of(terms))
            self.timeline.set_columns(step_columns_of(terms))
        median = f", median latency {duration_text(lat[len(lat) // 2])}" if lat else ""
        scope = "" if focus.connection is None else f" on connection {focus.connection}"
        self.query_one("#transactions-title", Static).update(
            f"Transactions{scope}: {len(self.rows)} ({len(lat)} answered{median})")
        self.table.reload()
        self._select(self.table.cursor)

    # -- the timeline -----------------------------------------------------------------------------
    def _select(self, row: int) -> None:
        number = self.rows.numbers[row] if 0 <= row < len(self.rows) else -1
        if number == self._selected_number and number >= 0:
            return
        self._selected_number = number
        t = self.rows[row] if number >= 0 else None
        self.selected = t
        self._frame_pos = -1
        steps: list[Step | HostEvent] = list(t.steps) if t is not None else []
        host = t.host if t is not None else None
        if host is not None:
            steps = sorted(steps + list(host.events), key=lambda s: s.ts)
        self.steps = steps
        title = "Timeline"
        self.query_one("#transaction-detail", Static).update(detail_text(t) if t is not None else "")
        if t is not None:
            ulp = model_of(t.protocol)
            title = (f"Timeline of {key_text(ulp, t.key)} {operation_text(t)}: {len(t.steps)} steps, "
                     f"latency {duration_text(t.latency_ns) or 'none (unanswered)'}")
            if host is not None:
                share = host.host_share
                title += f"; {len(host.events)} host events" + (f", hosts {share:.0%} of the time"
                                                                 if share is not None else "")
        self.query_one("#timeline-title", Static).update(title)
        self.timeline.move_to(0)
        self.timeline.reload()

    def _step_cells(self, i: int) -> Sequence[str]:
        step = self.steps[i]
        t = self.selected
        assert t is not None
        t0 = min(t.request.ts, self.steps[0].ts) if self.steps else t.request.ts
        t_end = max([t.response.ts if t.response is not None else t0] + [s.ts for s in self.steps])
        if isinstance(step, HostEvent):
            sign = "+" if step.ts >= t.request.ts else "-"
            return (host_title(step), sign + duration_text(abs(step.ts - t.request.ts)),
                    "", "", step.name, bar(step.ts, step.ts, t0, t_end - t0))
        frames = list(step.frames)
        if step.response_frames:
            frames += step.response_frames
        ulp = model_of(t.protocol)
        title = step_title(ulp, step.kind, step.invalidated is not None)
        return (title, "+" + duration_text(step.ts - t.request.ts), _frames(frames), bytes_text(step.bytes),
                segment_text(ulp, step), bar(step.ts, step.ts, t0, t_end - t0))

    def on_row_table_highlighted(self, event: RowTable.Highlighted) -> None:
        if event.table is self.table:
            event.stop()
            self._select(event.row)

    def on_row_table_chosen(self, event: RowTable.Chosen) -> None:
        event.stop()
        if event.table is self.table:
            self._select(event.row)
            self.timeline.focus()
            return
        step = self.steps[event.row]
        if isinstance(step, Step) and step.frames:
            self.post_message(JumpToFrame(step.frames[0]))

    # -- n / N and export -------------------------------------------------------------------------
    def step_frame(self, direction: int) -> int | None:
        """The next (1) or previous (-1) frame of the selected transaction, or None."""
        t = self.selected
        if t is None:
            return None
        frames = transaction_frames(t)
        if not frames:
            return None
        pos = self._frame_pos + direction
        if self._frame_pos < 0:
            pos = 0 if direction > 0 else len(frames) - 1
        self._frame_pos = pos % len(frames)
        return frames[self._frame_pos]

    def action_export_flows(self) -> None:
        from ...output.flows import FlowBuilder

        stem = os.path.splitext(self.model.name)[0] or "capture"
        target = os.path.abspath(f"{stem}-transactions.json")
        conns = self.model.analysis.connections
        wanted = {t.conn for t in self.rows}
        try:
            with FlowBuilder(os.path.dirname(target)) as builder, open(target, "wb") as out:
                if self.model.host is not None:
                    builder.host_clocks = self.model.host.clocks      # the transactions carry host events
                for t in self.rows:
                    builder.on_record(t)
                builder.write_document(out, [conns[c] for c in sorted(wanted) if c in conns], self.model.path,
                                       self.rows[0].request.ts if self.rows else None, self.model.index.count)
            self.notify(f"{len(self.rows)} transactions exported to {target}", title="Export")
        except OSError as exc:
            self.notify(f"export failed: {exc.strerror or exc}", severity="error", title="Export")


def _frames(frames: list[int]) -> str:
    if len(frames) <= 4:
        return " ".join(str(f) for f in frames)
    return f"{frames[0]}..{frames[-1]} ({len(frames)})"


register_view("2", lambda model: TransactionsView(model))
