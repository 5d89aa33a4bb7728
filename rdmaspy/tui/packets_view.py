"""View 1, the packets: the list, the selected frame's detail tree and its bytes."""
from __future__ import annotations

from textual import events, work
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.widgets import Static
from textual.timer import Timer
from textual.worker import get_current_worker

from ..errors import RdmaspyError
from .detail import Detail
from .detail_tree import DetailTree
from .hex_pane import HexPane
from .model import CaptureModel
from .packet_list import HEADING, NARROW, NARROW_HEADING, PacketList


DETAIL_DELAY = 0.08      # seconds the cursor rests on a row before its detail is dissected


class PacketsView(Vertical):
    DEFAULT_CSS = """
    PacketsView > #heading { height: 1; background: $primary-darken-2; color: $text; text-style: bold; }
    PacketsView > PacketList { height: 1fr; min-height: 3; }
    PacketsView > #detail-panes { height: 1fr; min-height: 4; border-top: solid $primary-darken-2; }
    """

    def __init__(self, model: CaptureModel, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.model = model
        self._pending: Timer | None = None
        self._waiting = 0                    # the frame whose detail is being made (0: none)

    def on_mount(self) -> None:
        self.set_interval(0.5, self._progress)

    def compose(self) -> ComposeResult:
        yield Static(HEADING, id="heading")
        yield PacketList(self.model.index, follow=self.model.live, id="packet-list")
        with Horizontal(id="detail-panes"):
            yield DetailTree(id="detail-tree")
            yield HexPane(id="hex-pane")

    def on_resize(self, event: events.Resize) -> None:
        self.query_one("#heading", Static).update(NARROW_HEADING if event.size.width < NARROW else HEADING)

    @property
    def packet_list(self) -> PacketList:
        return self.query_one(PacketList)

    @property
    def detail_tree(self) -> DetailTree:
        return self.query_one(DetailTree)

    @property
    def hex_pane(self) -> HexPane:
        return self.query_one(HexPane)

    def on_packet_list_selected(self, event: PacketList.Selected) -> None:
        event.stop()
        frame = event.frame
        if frame <= 0:
            self.detail_tree.show(None)
            self.hex_pane.show(b"")
            return
        hit = self.model.details.cached(frame)
        if hit is not None:
            self._waiting = 0
            self._show(hit)
            return
        self.detail_tree.show(None, f"Dissecting frame {frame}...")
        self.hex_pane.show(b"")
        # Wait for the cursor to rest: holding a key down must not start a dissection per row.
        if self._pending is not None:
            self._pending.stop()
        self._pending = self.set_timer(DETAIL_DELAY, lambda: self._load(frame))
        self._waiting = frame

    def _progress(self) -> None:
        """While a far frame is replayed, say how far the replay has come."""
        frame = self._waiting
        if not frame or self.detail_tree.detail is not None:
            return
        done = self.model.details.position
        if done < frame - 1000:
            self.detail_tree.show(None, f"Dissecting frame {frame}: replayed {done}...")

    @work(thread=True, exclusive=True, group="detail")
    def _load(self, frame: int) -> None:
        plist = self.packet_list
        try:
            detail = self.model.details.detail(frame, lambda: plist.selected_frame() == frame)
            problem = "" if detail is not None else f"frame {frame} could not be read again"
        except (RdmaspyError, OSError) as exc:
            detail, problem = None, str(exc)
        if get_current_worker().is_cancelled:
            return
        self.app.call_from_thread(self._arrived, frame, detail, problem)

    def _arrived(self, frame: int, detail: Detail | None, problem: str) -> None:
        if self.packet_list.selected_frame() != frame:
            return          # the cursor moved on while this frame was dissected
        self._waiting = 0
        if detail is None:
            self.detail_tree.show(None, problem)
            self.hex_pane.show(b"")
        else:
            self._show(detail)

    def _show(self, detail: Detail) -> None:
        if self.detail_tree.detail is detail:
            return
        self.hex_pane.show(detail.data)
        self.detail_tree.show(detail)

    def on_packet_list_opened(self, event: PacketList.Opened) -> None:
        event.stop()
        self.detail_tree.focus()

    def on_detail_tree_field_chosen(self, event: DetailTree.FieldChosen) -> None:
        event.stop()
        self.hex_pane.highlight(event.node.start, event.node.length)

    def on_hex_pane_byte_selected(self, event: HexPane.ByteSelected) -> None:
        event.stop()
        self.detail_tree.select_offset(event.offset)
