"""View 4, the credits: per connection and direction, the credits granted and the calls outstanding
over time, drawn as one chart (``credit_chart``), and the violations (more calls outstanding than
granted, a zero grant, ...) listed below it; Enter on a violation opens its frame.

The chart is drawn with Textual's own means (a widget rendering block characters): it needs no
extra package, puts both series on one scale so that "outstanding above granted" is visible as
such, and stays legible at 80x24, where a plotted chart with axes and legend has no room left for
the data.  A series' samples are read back from the analysis store's spool when it is shown.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Sequence

from textual.app import ComposeResult
from textual.widgets import Static

from ...analysis.model import CallDirection
from ..analysis_store import CreditTrack, Entry, Rows
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
Key = tuple[int, CallDirection]


def granted_text(track: CreditTrack) -> str:
    if track.granted_min is None:
        return "none seen"
    return f"{track.granted_min}..{track.granted_max}"


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
        self.series: list[tuple[Key, CreditTrack]] = []
        self.violations: Rows[Entry] = Rows(range(0), model.analysis.entry)
        self.current: Key | None = None
        self._seen: tuple[int, int, int | None] = (-1, -1, None)
        self._violations_of: dict[int, int] = {}      # connection -> credit findings

    def compose(self) -> ComposeResult:
        yield Static("Credits", id="credits-title", classes="title")
        yield RowTable(SERIES_COLUMNS, RowSource(lambda: len(self.series), self._series_cells), id="series-table")
        yield Static("", id="chart-label", classes="chart-label")
        yield CreditChart(id="credit-chart")
        yield Static("Violations", id="violations-title", classes="title")
        yield RowTable(VIOLATION_COLUMNS, RowSource(lambda: len(self.violations), self._violation_cells,
                                                     self._violation_style), id="violations-table")

    def _series_cells(self, i: int) -> Sequence[str]:
        (conn, direction), track = self.series[i]
        return (str(conn), DIRECTION_TEXT.get(direction.value, direction.value), str(track.count),
                granted_text(track), str(track.peak), str(self._violations_of.get(conn, 0)))

    def _credit_findings(self, conn: int | None) -> Rows[Entry]:
        """The credit findings of connection ``conn`` (None: of every connection in focus)."""
        focus = self.focus_state
        offsets = self.model.analysis.credit_findings(
            lambda c: focus.admits(c) and (conn is None or c == conn))
        return Rows(offsets, self.model.analysis.entry)

    def _violation_cells(self, i: int) -> Sequence[str]:
        e = self.violations[i]
        t0 = self._t0()
        return (str(e.frame) if e.frame else "", duration_text(e.ts - t0) if t0 is not None else "", e.rule, e.text)

    def _violation_style(self, i: int) -> "Style | None":
        return SEVERITY_STYLES.get(self.violations[i].severity)

    def _t0(self) -> int | None:
        track = self._track()
        return track.first_ts if track is not None else None

    def _track(self) -> CreditTrack | None:
        return next((t for k, t in self.series if k == self.current), None)

    def refresh_view(self) -> None:
        tracks = self.model.analysis.credit_tracks()
        total = sum(t.count for _k, t in tracks)
        key = (total, self.model.analysis.finding_count, self.focus_state.connection)
        if key == self._seen:
            return
        self._seen = key
        self.series = sorted(((k, t) for k, t in tracks if self.focus_state.admits(k[0])),
                             key=lambda kt: (kt[0][0], kt[0][1].value))
        self._violations_of = {}
        for group in self.model.analysis.groups():
            if group.group == "credits" and group.conn is not None:
                self._violations_of[group.conn] = self._violations_of.get(group.conn, 0) + group.count
        self.query_one("#credits-title", Static).update(
            f"Credits: {len(self.series)} series (granted and outstanding over time)")
        table = self.query_one("#series-table", RowTable)
        table.reload()
        self._show(table.cursor)

    def _show(self, row: int) -> None:
        self.current = self.series[row][0] if 0 <= row < len(self.series) else None
        chart = self.query_one(CreditChart)
        label = self.query_one("#chart-label", Static)
        track = self._track()
        if self.current is None or track is None:
            chart.show(None)
            label.update("No credits or queue depths in this capture.")
            self.violations = self._credit_findings(None)
        else:
            conn, direction = self.current
            store = self.model.analysis
            chart.show((self.current, track.count), lambda: store.samples(track), track.first_ts, track.last_ts)
            host = store.host_credits.get(conn) if direction is CallDirection.FORWARD else None
            seen = f"; the client took {host[0]}..{host[1]} (xprtrdma_reply)" if host is not None else ""
            waits = store.credit_waits.get(conn, 0) if direction is CallDirection.FORWARD else 0
            if waits:
                seen += f", {waits} calls waited for its window"
            label.update(f"connection {conn} {DIRECTION_TEXT.get(direction.value, direction.value)}: granted "
                         f"{track.granted_min or 0}..{track.granted_max or 0}{seen}, outstanding peak {track.peak}, "
                         f"over {duration_text(track.last_ts - track.first_ts)}")
            self.violations = self._credit_findings(conn)
        self.query_one("#violations-title", Static).update(f"Violations: {len(self.violations)}")
        self.query_one("#violations-table", RowTable).reload()

    def on_row_table_highlighted(self, event: RowTable.Highlighted) -> None:
        if event.table.id == "series-table":
            event.stop()
            self._show(event.row)

    def on_row_table_chosen(self, event: RowTable.Chosen) -> None:
        event.stop()
        if event.table.id == "violations-table":
            e = self.violations[event.row]
            if e.frame:
                self.post_message(JumpToFrame(e.frame))
        else:
            self.query_one("#violations-table", RowTable).focus()


register_view("4", lambda model: CreditsView(model))
