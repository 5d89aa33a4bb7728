"""View 4, the credits: per connection and direction, the credits granted and the calls outstanding
over time, drawn as one chart (``credit_chart``), and the violations (more calls outstanding than
granted, a zero grant, ...) listed below it; Enter on a violation opens its frame.

The chart is drawn with Textual's own means (a widget rendering block characters): it needs no
extra package, puts both series on one scale so that "outstanding above granted" is visible as
such, and stays legible at 80x24, where a plotted chart with axes and legend has no room left for
the data.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Sequence

from textual.app import ComposeResult
from textual.widgets import Static

from ...analysis.model import CallDirection, CreditSample, Finding
from ..messages import JumpToFrame
from . import register_view
from .common import AnalysisView, duration_text
from .credit_chart import CreditChart
from .rows import SEVERITY_STYLES, Column, RowSource, RowTable

if TYPE_CHECKING:
    from rich.style import Style

    from ..model import CaptureModel

SERIES_COLUMNS = (Column("Conn", 4, True), Column("Direction", 11), Column("Samples", 8, True),
                  Column("Granted", 11), Column("Peak outstanding", 16, True), Column("Violations", 10, True))
VIOLATION_COLUMNS = (Column("Frame", 7, True), Column("Time", 12, True), Column("Rule", 22), Column("Finding", 60))
DIRECTION_TEXT = {"c2s": "forward", "s2c": "backchannel"}


class CreditsView(AnalysisView):
    DEFAULT_CSS = """
    CreditsView > .title { height: 1; background: $primary-darken-2; text-style: bold; padding: 0 1; }
    CreditsView > #series-table { height: 5; min-height: 3; }
    CreditsView > .chart-label { height: 1; padding: 0 1; }
    CreditsView > CreditChart { height: 1fr; min-height: 4; max-height: 12; }
    CreditsView > #violations-table { height: 1fr; min-height: 3; }
    """

    def __init__(self, model: "CaptureModel", *, id: str | None = None) -> None:
        super().__init__(model, id=id)
        self.series: list[tuple[int, CallDirection]] = []
        self.violations: list[Finding] = []
        self.current: tuple[int, CallDirection] | None = None
        self._seen: tuple[int, int, int | None] = (-1, -1, None)

    def compose(self) -> ComposeResult:
        yield Static("Credits", id="credits-title", classes="title")
        yield RowTable(SERIES_COLUMNS, RowSource(lambda: len(self.series), self._series_cells), id="series-table")
        yield Static("", id="chart-label", classes="chart-label")
        yield CreditChart(id="credit-chart")
        yield Static("Violations", id="violations-title", classes="title")
        yield RowTable(VIOLATION_COLUMNS, RowSource(lambda: len(self.violations), self._violation_cells,
                                                     self._violation_style), id="violations-table")

    def samples(self, key: tuple[int, CallDirection]) -> list[CreditSample]:
        series = self.model.analysis.credits.get(key)
        return [] if series is None else series[:len(series)]

    def _series_cells(self, i: int) -> Sequence[str]:
        key = self.series[i]
        samples = self.samples(key)
        grants = [s.granted for s in samples if s.granted is not None]
        granted = f"{min(grants)}..{max(grants)}" if grants else "none seen"
        peak = max((s.outstanding for s in samples), default=0)
        bad = sum(1 for f in self._findings() if f.conn == key[0])
        return (str(key[0]), DIRECTION_TEXT.get(key[1].value, key[1].value), str(len(samples)), granted, str(peak),
                str(bad))

    def _findings(self) -> list[Finding]:
        found = self.model.analysis.findings
        return [f for f in found[:len(found)] if f.group == "credits" and self.focus_state.admits(f.conn)]

    def _violation_cells(self, i: int) -> Sequence[str]:
        f = self.violations[i]
        t0 = self._t0()
        return (str(f.frames[0]) if f.frames else "", duration_text(f.ts - t0) if t0 is not None else "",
                f.rule_def.id, f.text)

    def _violation_style(self, i: int) -> "Style | None":
        return SEVERITY_STYLES.get(self.violations[i].severity)

    def _t0(self) -> int | None:
        if self.current is None:
            return None
        samples = self.samples(self.current)
        return samples[0].ts if samples else None

    def refresh_view(self) -> None:
        credits = self.model.analysis.credits
        total = sum(len(v) for v in list(credits.values()))
        key = (total, len(self.model.analysis.findings), self.focus_state.connection)
        if key == self._seen:
            return
        self._seen = key
        self.series = sorted((k for k in list(credits) if self.focus_state.admits(k[0])),
                             key=lambda k: (k[0], k[1].value))
        self.query_one("#credits-title", Static).update(
            f"Credits: {len(self.series)} series (granted and outstanding over time)")
        table = self.query_one("#series-table", RowTable)
        table.reload()
        self._show(table.cursor)

    def _show(self, row: int) -> None:
        self.current = self.series[row] if 0 <= row < len(self.series) else None
        chart = self.query_one(CreditChart)
        label = self.query_one("#chart-label", Static)
        if self.current is None:
            chart.show(())
            label.update("No RPC-over-RDMA credits in this capture.")
            self.violations = self._findings()
        else:
            conn, direction = self.current
            samples = self.samples(self.current)
            grants = [s.granted for s in samples if s.granted is not None]
            span = samples[-1].ts - samples[0].ts if samples else 0
            chart.show(samples)
            label.update(f"connection {conn} {DIRECTION_TEXT.get(direction.value, direction.value)}: granted "
                         f"{min(grants, default=0)}..{max(grants, default=0)}, outstanding peak "
                         f"{max((s.outstanding for s in samples), default=0)}, over {duration_text(span)}")
            self.violations = [f for f in self._findings() if f.conn == conn]
        self.query_one("#violations-title", Static).update(f"Violations: {len(self.violations)}")
        self.query_one("#violations-table", RowTable).reload()

    def on_row_table_highlighted(self, event: RowTable.Highlighted) -> None:
        if event.table.id == "series-table":
            event.stop()
            self._show(event.row)

    def on_row_table_chosen(self, event: RowTable.Chosen) -> None:
        event.stop()
        if event.table.id == "violations-table":
            f = self.violations[event.row]
            if f.frames:
                self.post_message(JumpToFrame(f.frames[0]))
        else:
            self.query_one("#violations-table", RowTable).focus()


register_view("4", lambda model: CreditsView(model))
