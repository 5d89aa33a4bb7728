"""The rdmaspy TUI: ``rdmaspy tui FILE`` and ``rdmaspy capture -i IFACE --tui``.

One capture (``CaptureModel``), six views on it switched by the digit keys (``views.VIEW_NAMES``:
1 packets, 2 transactions, 3 connections, 4 credits, 5 segments, 6 expert), a display filter bar on
top, a status bar and a footer of keys below.  The app only presents: packets, trees and analysis
come from the pipeline through the model.
"""
from __future__ import annotations

import os
import time
from array import array

from textual import work
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widget import Widget
from textual.widgets import ContentSwitcher, Footer, Input, Label, Static

from ..errors import RdmaspyError
from .display import FilterRun
from .detail_tree import DetailTree
from .export import export_pcapng
from .filter_bar import FilterBar, FilterInput
from .messages import ApplyFilter, JumpToFrame, ModelUpdated
from .model import CaptureModel
from .packet_list import PacketList
from .packets_view import PacketsView
from .status_bar import Status, StatusBar
from .views import VIEW_NAMES, load_views

TICK_SECONDS = 0.1     # how often the app looks at the index and the filter growing
MODEL_UPDATE_SECONDS = 0.5   # how often the analysis view on screen is told the model grew

HELP = """\
[b]Keys[/b]
  1 Packets   2 Transactions   3 Connections   4 Credits   5 Segments   6 Expert
  /           focus the display filter; Enter applies it (an empty filter clears it)
              Up/Down in the filter: earlier filters; Right: take the completed field name
  Tab         next pane (filter, packet list, detail tree, bytes); Shift+Tab back
  Enter       open (the selected packet's detail)
  Escape      back (to the packet list, or to the view shown before)
  g / G       top / bottom of the list (Home / End too)
  n / N       next / previous packet of the selected transaction
  a           in the detail tree: apply the selected field as the filter
  p           in the detail tree: prepare the selected field as the filter (edit, then Enter)
  e           export the displayed packets as pcapng (in Transactions: the transactions shown as JSON flows)
  ?           this help
  q           quit

[b]Analysis views[/b]  Enter on a transaction moves into its timeline, Enter on a step, segment, violation or
finding opens its packet; Enter on a connection focuses every view on it (again: all connections).
[b]Bytes[/b]  Selecting a field lights its bytes; clicking a byte (or moving with the arrows in the
bytes pane) selects the field it belongs to.
[b]Colours[/b]  red: errors (bad ICRC, malformed, error findings); yellow: warnings (NAKs, retransmissions...)."""


class HelpScreen(ModalScreen[None]):
    BINDINGS = [Binding("escape,q,question_mark", "close", "Close")]
    DEFAULT_CSS = """
    HelpScreen { align: center middle; }
    HelpScreen > VerticalScroll { width: 92; max-width: 100%; height: auto; max-height: 100%;
                                  border: thick $primary; background: $surface; padding: 0 1; }
    """

    def compose(self) -> ComposeResult:
        with VerticalScroll():
            yield Static(HELP)

    def action_close(self) -> None:
        self.dismiss(None)


class ExportScreen(ModalScreen[str | None]):
    """Asks where to write the displayed packets."""
    BINDINGS = [Binding("escape", "cancel", "Cancel")]
    DEFAULT_CSS = """
    ExportScreen { align: center middle; }
    ExportScreen > Vertical { width: 80; max-width: 100%; height: auto; border: thick $primary;
                              background: $surface; padding: 0 1; }
    """

    def __init__(self, default: str, count: int) -> None:
        super().__init__()
        self.default = default
        self.count = count

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label(f"Export the {self.count} displayed packets as pcapng to:")
            yield Input(self.default, id="export-path")
            yield Label("Enter writes, Escape cancels.")

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.dismiss(event.value.strip() or None)

    def action_cancel(self) -> None:
        self.dismiss(None)


class Placeholder(Static):
    """Shown for a view key whose view module is not in this build."""


class RdmaspyApp(App[None]):
    TITLE = "rdmaspy"
    ENABLE_COMMAND_PALETTE = False
    CSS = """
    Screen { layout: vertical; }
    #views { height: 1fr; }
    """
    BINDINGS = [
        Binding("1", "view('1')", "Pkts"),
        Binding("2", "view('2')", "Trans"),
        Binding("3", "view('3')", "Conns"),
        Binding("4", "view('4')", "Credit"),
        Binding("5", "view('5')", "Segs"),
        Binding("6", "view('6')", "Expert"),
        Binding("slash", "focus_filter", "Filter", key_display="/"),
        Binding("e", "export", "Export"),
        Binding("n", "transaction_frame(1)", "Next of txn", show=False),
        Binding("N", "transaction_frame(-1)", "Prev of txn", show=False),
        Binding("escape", "go_back", "Back", show=False),
        Binding("question_mark", "help", "Help", key_display="?"),
        Binding("q", "quit", "Quit"),
        # The packet list handles g/G itself; these show them in the footer and reach views without them.
        Binding("g", "top", "Top"),
        Binding("G", "bottom", "Bottom"),
    ]

    def __init__(self, model: CaptureModel, initial_filter: str = "") -> None:
        super().__init__()
        self.model = model
        self.initial_filter = initial_filter
        self.status = Status(name=model.name, loading=0.0)
        self.filter_run: FilterRun | None = None
        self.filter_expr = ""
        self._history: list[str] = []        # views shown before, for Escape
        self._views = load_views()
        self._told_done = False
        self._views_told = 0.0

    # -- layout ---------------------------------------------------------------------------------
    def compose(self) -> ComposeResult:
        yield FilterBar(id="filter-bar")
        with ContentSwitcher(initial="packets", id="views"):
            yield PacketsView(self.model, id="packets")
            for key in "23456":
                name, title = VIEW_NAMES[key]
                spec = self._views.get(key)
                view: Widget
                if spec is not None:
                    view = spec.factory(self.model)
                    view.id = name
                else:
                    view = Placeholder(f"{title}: this view is not part of this build.", id=name)
                yield view
        yield StatusBar(id="status")
        yield Footer(compact=True)

    def on_mount(self) -> None:
        # Kept, not queried: a query looks at the screen on top, which may be the help or export dialog.
        main = self.screen
        self._packet_list = main.query_one(PacketList)
        self._status_bar = main.query_one(StatusBar)
        self._filter_bar = main.query_one(FilterBar)
        self._switcher = main.query_one(ContentSwitcher)
        self.model.start()
        self.packet_list.focus()
        self.set_interval(TICK_SECONDS, self._tick)
        if self.initial_filter:
            self._filter_bar.set_expr(self.initial_filter)
            self._filter_bar.input.remember(self.initial_filter)
            self.apply_filter(self.initial_filter)
        self._tick()

    @property
    def packet_list(self) -> PacketList:
        return self._packet_list

    @property
    def selected_frame(self) -> int:
        """The frame selected in the packet list (1-based; 0 when none)."""
        return self.packet_list.selected_frame()

    @property
    def current_view(self) -> str:
        return self._switcher.current or "packets"

    # -- the index and the filter growing -------------------------------------------------------
    def _tick(self) -> None:
        index = self.model.index
        plist = self.packet_list
        run = self.filter_run
        if run is not None and run.done and run.error:
            self.status.problem = run.error
        plist.refresh_rows()
        st = self.status
        st.packets = index.count
        st.displayed = plist.available
        st.filtering = run is not None and not run.done
        st.loading = None if index.done or self.model.live else index.progress
        problem = index.error or "; ".join(index.problems)
        if problem:
            st.problem = problem
        st.live = self.model.live_status()
        self._status_bar.show(st)
        self._update_views(index.count, index.done)

    def _update_views(self, packets: int, done: bool) -> None:
        """Tell the analysis views the model grew: the one on screen twice a second while the capture
        is read (a hidden view catches up when shown), every view once when it has been read.  Views
        redrawing ten times a second over a growing model took more time than indexing it."""
        if self._told_done:
            return
        now = time.monotonic()
        if not done and now - self._views_told < MODEL_UPDATE_SECONDS:
            return
        self._views_told = now
        self._told_done = done
        current = self.current_view
        for key in "23456":
            name = VIEW_NAMES[key][0]
            if done or name == current:
                for view in self._switcher.query(f"#{name}"):
                    view.post_message(ModelUpdated(packets, done))

    # -- views ----------------------------------------------------------------------------------
    def action_view(self, key: str) -> None:
        name = VIEW_NAMES[key][0]
        switcher = self._switcher
        if switcher.current != name:
            self._history.append(switcher.current or "packets")
            del self._history[:-16]
            switcher.current = name
        target = switcher.query_one(f"#{name}")
        if name == "packets":
            self.packet_list.focus()
        elif target.focusable:
            target.focus()
        else:
            for w in target.query("*"):
                if w.focusable:
                    w.focus()
                    break

    def action_top(self) -> None:
        self._to_end("top")

    def action_bottom(self) -> None:
        self._to_end("bottom")

    def _to_end(self, which: str) -> None:
        view = self._switcher.query_one(f"#{self.current_view}")
        target = view if hasattr(view, f"action_{which}") else self.packet_list
        if target is self.packet_list and self.current_view != "packets":
            return
        getattr(target, f"action_{which}")()

    def action_go_back(self) -> None:
        focused = self.focused
        if isinstance(focused, FilterInput) or (focused is not None and self.current_view == "packets"
                                                 and not isinstance(focused, PacketList)):
            self.packet_list.focus()
            return
        if self._history:
            name = self._history.pop()
            key = next(k for k, (n, _t) in VIEW_NAMES.items() if n == name)
            self.action_view(key)
            self._history.pop()

    def action_transaction_frame(self, direction: int) -> None:
        """``n``/``N``: the next/previous packet of the transaction selected in the transactions view."""
        for view in self._switcher.query("#transactions"):
            step_frame = getattr(view, "step_frame", None)
            frame = step_frame(direction) if step_frame is not None else None
            if frame:
                self.show_frame(frame)
            else:
                self.status.note = "no transaction selected (2: transactions)"

    def show_frame(self, frame: int) -> None:
        """Switch to the packet list and select frame ``frame`` (1-based)."""
        if self.current_view != "packets":
            self.action_view("1")
        if not self.packet_list.go_to_frame(frame):
            self.status.note = f"frame {frame} is not displayed (clear the filter to see it)"
        self.packet_list.focus()

    def on_jump_to_frame(self, event: JumpToFrame) -> None:
        event.stop()
        self.show_frame(event.frame)

    def on_apply_filter(self, event: ApplyFilter) -> None:
        event.stop()
        self._filter_bar.set_expr(event.expr)
        self.apply_filter(event.expr)

    # -- filter ---------------------------------------------------------------------------------
    def action_focus_filter(self) -> None:
        # at once, not on the next turn of the loop: the keys typed right after '/' go to the bar
        self.screen.set_focus(self._filter_bar.input)

    def on_filter_bar_applied(self, event: FilterBar.Applied) -> None:
        event.stop()
        self.apply_filter(event.expr)
        self.packet_list.focus()

    def on_detail_tree_filter_from_field(self, event: DetailTree.FilterFromField) -> None:
        event.stop()
        bar = self._filter_bar
        bar.set_expr(event.expr, focus=not event.apply)
        if event.apply:
            bar.input.remember(event.expr)
            self.apply_filter(event.expr)

    def apply_filter(self, expr: str) -> None:
        """Show only the frames ``expr`` matches (as ``decode -Y``); an empty filter shows them all."""
        if self.filter_run is not None:
            self.filter_run.stop.set()
        self.status.problem = ""
        self.status.note = ""
        self.filter_expr = expr
        if not expr:
            self.filter_run = None
            self.model.live_filter = None
            self.packet_list.set_displayed(None)
        else:
            run = self.filter_run = FilterRun(expr)
            run.compile()
            if self.model.live:
                run.limit = self.model.index.count
            self.model.live_filter = run
            self.packet_list.set_displayed(run.rows)
            self._filter(run)
        self._tick()

    @work(thread=True, group="filter")
    def _filter(self, run: FilterRun) -> None:
        run.run(self.model.path)

    # -- export, help, quit ---------------------------------------------------------------------
    def action_export(self) -> None:
        if self.filter_run is not None and not self.filter_run.done:
            self.status.note = "the filter is still being applied: export when Displayed is final"
            self._tick()
            return
        stem = os.path.splitext(self.model.name)[0] or "capture"
        default = f"{stem}-displayed.pcapng"
        self.push_screen(ExportScreen(default, self.status.displayed), self._export_to)

    def _export_to(self, target: str | None) -> None:
        if not target:
            return
        rows: array | None = None
        if self.filter_run is not None:
            rows = array("I", self.filter_run.rows)
        self.status.note = f"exporting to {target}..."
        self._export(target, rows)

    @work(thread=True, group="export")
    def _export(self, target: str, rows: array | None) -> None:
        try:
            n = export_pcapng(self.model.path, target, rows)
            note, problem = f"{n} packets exported to {target}", ""
        except (RdmaspyError, OSError) as exc:
            note, problem = "", f"export failed: {getattr(exc, 'strerror', None) or exc}"
        self.call_from_thread(self._exported, note, problem)

    def _exported(self, note: str, problem: str) -> None:
        self.status.note = note
        if problem:
            self.status.problem = problem
        self._tick()

    def action_help(self) -> None:
        self.push_screen(HelpScreen())

    async def action_quit(self) -> None:
        self.exit()

    def on_unmount(self) -> None:
        if self.filter_run is not None:
            self.filter_run.stop.set()
        self.model.close()



