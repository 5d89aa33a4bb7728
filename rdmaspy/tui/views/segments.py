"""View 5, the segments: every segment of memory a request advertised (an RPC-over-RDMA chunk's, an NVMe
command's keyed SGL data block: its list, handle, offset and length) and how much RDMA READ or WRITE
moved into or out of it, with its state (full, partial, unused, overrun).  Its transaction's key and its
list are named in the words of its upper layer's declaration (analysis.ulp).  Enter opens the first frame
that moved it (or the request that offered it)."""
from __future__ import annotations

from array import array
from itertools import islice
from typing import TYPE_CHECKING, Sequence

from rich.style import Style
from textual.app import ComposeResult
from textual.widgets import Static

from ...analysis.model import Segment, SegmentState
from ...analysis.ulp import model_of
from ..analysis_store import Rows
from ..messages import JumpToFrame
from . import register_view
from .common import AnalysisView, UlpTerms, duration_text
from .rows import ERROR_STYLE, WARNING_STYLE, Column, RowSource, RowTable

if TYPE_CHECKING:
    from ..model import CaptureModel



def columns_of(terms: UlpTerms) -> tuple[Column, ...]:
    """The columns in the words of the upper layers in view: their key's name, the List as wide as
    their lists' names."""
    lists = max((len(name) for m in terms.ulps for name in m.lists.values()), default=4)
    # what moved and the state before where the memory is: at 80 columns they show
    return (Column(terms.key, terms.key_width), Column("Conn", 4, True), Column("List", max(4, lists)),
            Column("Length", 9, True), Column("Moved", 9, True), Column("State", 10), Column("Handle", 10),
            Column("Offset", 18), Column("Chunk", 5, True), Column("Seg", 3, True), Column("Pos", 5, True),
            Column("Ops", 3, True), Column("Frames", 20))


def host_life(s: Segment) -> str:
    """With --host-trace, the life of the client's registration of the segment: registered, then invalidated
    (by the server's Send With Invalidate: remote, or locally), as the client traced it."""
    t = s.transaction
    host = t.host if t is not None else None
    if host is None:
        return ""
    r = next((r for r in host.registrations if r.handle == s.handle), None)
    if r is None:
        return ""
    life = "  registered" if r.registered_ts is not None else "  mapped"
    if r.invalidated_ts is not None and t is not None:
        life += f", {r.invalidation} invalidation +{duration_text(r.invalidated_ts - t.request.ts)}"
    return life


STATE_STYLES: dict[SegmentState, Style] = {SegmentState.OVERRUN: ERROR_STYLE, SegmentState.PARTIAL: WARNING_STYLE}


def frames_text(frames: list[int]) -> str:
    if not frames:
        return ""
    if len(frames) <= 3:
        return " ".join(str(f) for f in frames)
    return f"{frames[0]}..{frames[-1]} ({len(frames)})"


class SegmentsView(AnalysisView):
    DEFAULT_CSS = """
    SegmentsView > #segments-title { height: 1; background: $primary-darken-2; text-style: bold; padding: 0 1; }
    SegmentsView > RowTable { height: 1fr; }
    """

    def __init__(self, model: "CaptureModel", *, id: str | None = None) -> None:
        super().__init__(model, id=id)
        self.rows: Rows[Segment] = Rows(range(0), model.analysis.transactions.segment)
        self._seen: tuple[int, int | None] = (-1, None)
        self.terms = UlpTerms.of(())

    def compose(self) -> ComposeResult:
        yield Static("Segments", id="segments-title")
        yield RowTable(columns_of(self.terms), RowSource(lambda: len(self.rows), self._cells, self._style),
                       id="segments-table")

    @property
    def table(self) -> RowTable:
        return self.query_one("#segments-table", RowTable)

    def _cells(self, i: int) -> Sequence[str]:
        s = self.rows[i]
        t = s.transaction
        ulp = model_of(t.protocol) if t is not None else None
        return ("" if t is None else self.terms.key_of(t.protocol, t.key), "" if t is None else str(t.conn),
                str(s.kind) if ulp is None else ulp.lists.get(s.kind, str(s.kind)), str(s.length), str(s.used),
                s.state.value, f"0x{s.handle:08x}", f"0x{s.offset:016x}", str(s.chunk), str(s.index),
                "" if s.position is None else str(s.position), str(s.ops), frames_text(s.frames) + host_life(s))

    def _style(self, i: int) -> Style | None:
        return STATE_STYLES.get(self.rows[i].state)

    def refresh_view(self) -> None:
        txns = self.model.analysis.transactions
        n = txns.segments
        key = (n, self.focus_state.connection)
        if key == self._seen:
            return
        self._seen = key
        focus = self.focus_state
        if focus.connection is None:
            numbers: array | range = range(n)
        else:
            conns = txns.conns
            numbers = array("I", (i for i, t in enumerate(islice(txns.seg_txn, n)) if conns[t] == focus.connection))
        self.rows = Rows(numbers, txns.segment)
        terms = UlpTerms.of(txns.protocols_of(focus.connection))
        if terms != self.terms:
            self.terms = terms
            self.table.set_columns(columns_of(terms))
        states: dict[str, int] = {}
        for conn, counts in list(txns.seg_states.items()):
            if focus.admits(conn):
                for state, count in list(counts.items()):
                    states[state] = states.get(state, 0) + count
        parts = ", ".join(f"{k} {v}" for k, v in sorted(states.items()))
        title = f"Segments: {len(self.rows)}" + (f" ({parts})" if parts else "")
        summaries = [r for c, r in self.model.analysis.summaries() if focus.admits(c)]
        ops = sum(r.unadvertised_operations for r in summaries)
        if ops:
            title += f"; unadvertised R_Key/STag: {ops} operations, {sum(r.unadvertised_bytes for r in summaries)} bytes"
        self.query_one("#segments-title", Static).update(title)
        self.table.reload()

    def on_row_table_chosen(self, event: RowTable.Chosen) -> None:
        event.stop()
        s = self.rows[event.row]
        frame = s.frames[0] if s.frames else (s.transaction.request_frame if s.transaction is not None else 0)
        if frame > 0:
            self.post_message(JumpToFrame(frame))


register_view("5", lambda model: SegmentsView(model))
