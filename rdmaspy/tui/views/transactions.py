"""View 2, the transactions: every RPC-over-RDMA call with its reply — XID, procedure and NFS
operation, connection, latency, state, findings — and, for the one under the cursor, its timeline:
the call's Sends, each RDMA READ against the Read chunk segment it pulled, each RDMA WRITE into its
Write or Reply chunk segment, the reply's Sends, invalidation and RDMA_DONE, with bytes and times; with
``--host-trace``, the kernel events of its client and server among them, in time order.

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
from textual.app import ComposeResult
from textual.binding import Binding
from textual.widgets import Static

from ...analysis.model import Step, StepKind, Transaction, TransactionState
from ...hosttrace.parse import HostEvent
from ...analysis.rpcrdma_facts import RpcRdmaFacts, facts_of, rpc_of
from ...analysis.ulp import model_of
from ..analysis_store import NO_LATENCY, Rows
from ..messages import JumpToFrame
from . import register_view
from .common import AnalysisView, bytes_text, duration_text, xid_text
from .rows import SEVERITY_STYLES, WARNING_STYLE, Column, RowSource, RowTable

if TYPE_CHECKING:
    from ..model import CaptureModel

COLUMNS = (Column("XID", 10), Column("Conn", 4, True), Column("Dir", 4), Column("Procedure", 24),
           Column("Call", 7, True), Column("Reply", 7, True), Column("Latency", 11, True), Column("State", 10),
           Column("Read", 9, True), Column("Written", 9, True), Column("Findings", 30))
STEP_COLUMNS = (Column("Step", 10), Column("+Time", 11, True), Column("Frames", 18), Column("Bytes", 9, True),
                Column("Segment", 34), Column("Timeline", 40))
STEP_TITLES = {StepKind.REQUEST: "call Send", StepKind.RDMA_READ: "RDMA READ", StepKind.RDMA_WRITE: "RDMA WRITE",
               StepKind.RESPONSE: "reply Send", StepKind.DONE: "RDMA_DONE"}
STATE_STYLES: dict[TransactionState, Style] = {TransactionState.UNANSWERED: WARNING_STYLE}
BAR_WIDTH = 40


def procedure_text(t: Transaction) -> str:
    if not isinstance(t.facts, RpcRdmaFacts):
        return model_of(t.protocol).operation(t)     # as its upper layer names it
    rpc = rpc_of(t)
    if rpc is None:
        return facts_of(t).call_proc
    name = " ".join(p for p in (rpc.label, rpc.name) if p) or f"program {rpc.program}"
    if rpc.ops:
        ops = [o for o in rpc.ops if o not in ("SEQUENCE", "PUTFH")] or rpc.ops
        name += " " + ",".join(ops)
    return name


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
        frames.update(rep.frames)
        done = t.facts.done_frame if isinstance(t.facts, RpcRdmaFacts) else None
        if done is not None:
            frames.add(done)
    return sorted(frames)


def segment_text(step: Step) -> str:
    seg = step.segment
    if seg is not None:
        return (f"{seg.kind} {seg.chunk}.{seg.index} 0x{seg.handle:08x}@0x{seg.offset:x}+{seg.length} "
                f"{seg.state.value}")
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

    def compose(self) -> ComposeResult:
        yield Static("Transactions", id="transactions-title", classes="title")
        yield RowTable(COLUMNS, RowSource(lambda: len(self.rows), self._cells, self._style),
                       id="transactions-table")
        yield Static("Timeline", id="timeline-title", classes="title")
        yield RowTable(STEP_COLUMNS, RowSource(lambda: len(self.steps), self._step_cells), id="timeline-table")

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
        return (xid_text(t.key), str(t.conn), "fwd" if t.request_direction.value == "c2s" else "back",
                procedure_text(t), str(t.request_frame), "" if rep is None else str(rep.frame),
                duration_text(t.latency_ns), t.state.value, bytes_text(t.bytes_read) if t.bytes_read else "",
                bytes_text(t.bytes_written) if t.bytes_written else "", findings_text(t))

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
        if t is not None:
            title = (f"Timeline of {xid_text(t.key)} {procedure_text(t)}: {len(t.steps)} steps, "
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
        title = STEP_TITLES.get(step.kind, step.kind.value)
        if step.kind is StepKind.RESPONSE and step.invalidated is not None:
            title = "reply SendInv"
        return (title, "+" + duration_text(step.ts - t.request.ts), _frames(frames), bytes_text(step.bytes),
                segment_text(step), bar(step.ts, step.ts, t0, t_end - t0))

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
