"""View 6, the expert: every finding grouped by severity and rule with counts, as Wireshark's Expert
Information; a finding opens its frame in the packet list.

The analysis' findings come from ``model.analysis``; the dissectors' (malformed packets, bad
checksums, TCP holes) are gathered from the packets of the background pass as they go by.
"""
from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING

from textual.app import ComposeResult
from textual.widgets import Static, Tree
from textual.widgets.tree import TreeNode

from ...packet import Packet
from ..messages import JumpToFrame
from . import register_view
from .common import AnalysisView

if TYPE_CHECKING:
    from ..model import CaptureModel

SEVERITY_ORDER = ("error", "warning", "note", "chat")
SEVERITY_TITLES = {"error": "Errors", "warning": "Warnings", "note": "Notes", "chat": "Chats"}
SEVERITY_MARKUP = {"error": "bold white on dark_red", "warning": "bold black on yellow", "note": "cyan",
                   "chat": "dim"}


@dataclass(frozen=True, slots=True)
class Entry:
    """One finding as the view lists it."""
    severity: str
    rule: str           # the rule's id (dissector items without one: their group)
    group: str
    frame: int
    conn: int | None
    text: str


class DissectorFindings:
    """The dissectors' expert items of every packet of the background pass (called on its thread)."""

    def __init__(self) -> None:
        self.entries: list[Entry] = []
        self._lock = threading.Lock()

    def __call__(self, pkt: Packet) -> None:
        items = pkt.expert
        if not items:
            return
        conn = getattr(pkt.conv, "conn_id", None)
        for item in items:
            if hasattr(item, "rule_def"):
                continue            # an analysis finding: the AnalysisModel has it
            rule = item.rule or item.source or item.group
            entry = Entry(item.severity, rule, item.group, pkt.frame.num, conn, item.text)
            with self._lock:
                self.entries.append(entry)

    def snapshot(self) -> list[Entry]:
        with self._lock:
            return list(self.entries)


def analysis_entries(model: "CaptureModel") -> list[Entry]:
    found = model.analysis.findings
    return [Entry(f.severity, f.rule_def.id, f.group, f.frames[0] if f.frames else 0, f.conn, f.text)
            for f in found[:len(found)]]


class ExpertView(AnalysisView):
    DEFAULT_CSS = """
    ExpertView > #expert-summary { height: 1; background: $primary-darken-2; text-style: bold; padding: 0 1; }
    ExpertView > Tree { height: 1fr; }
    """

    def __init__(self, model: "CaptureModel", *, id: str | None = None) -> None:
        super().__init__(model, id=id)
        self.dissector = DissectorFindings()
        model.packet_listeners.append(self.dissector)
        self._shown: tuple[int, int, int | None] | None = None
        self._leaves: dict[tuple[str, str], list[Entry]] = {}

    def compose(self) -> ComposeResult:
        yield Static("Expert information", id="expert-summary")
        tree: Tree[Entry | tuple[str, str] | None] = Tree("Findings", id="expert-tree")
        tree.show_root = False
        yield tree

    @property
    def tree(self) -> "Tree[Entry | tuple[str, str] | None]":
        return self.query_one("#expert-tree", Tree)

    def entries(self) -> list[Entry]:
        focus = self.focus_state
        return [e for e in analysis_entries(self.model) + self.dissector.snapshot() if focus.admits(e.conn)]

    def refresh_view(self) -> None:
        entries = self.entries()
        key = (len(self.model.analysis.findings), len(self.dissector.entries), self.focus_state.connection)
        if key == self._shown:
            return
        self._shown = key
        groups: dict[str, dict[str, list[Entry]]] = {}
        for e in entries:
            groups.setdefault(e.severity, {}).setdefault(e.rule, []).append(e)
        tree = self.tree
        expanded = {n.data for n in _walk(tree.root) if n.is_expanded and isinstance(n.data, tuple)}
        tree.clear()
        self._leaves.clear()
        counts = []
        for severity in SEVERITY_ORDER:
            rules = groups.get(severity)
            if not rules:
                continue
            total = sum(len(v) for v in rules.values())
            counts.append(f"{SEVERITY_TITLES[severity]}: {total}")
            top = tree.root.add(f"[{SEVERITY_MARKUP[severity]}]{SEVERITY_TITLES[severity]}[/] ({total})",
                                data=None, expand=True)
            for rule, items in sorted(rules.items(), key=lambda kv: (-len(kv[1]), kv[0])):
                key2 = (severity, rule)
                self._leaves[key2] = sorted(items, key=lambda e: e.frame)
                node = top.add(f"{rule} [dim]({items[0].group})[/] — {len(items)}", data=key2)
                node.allow_expand = True
                if key2 in expanded:
                    self._fill(node)
                    node.expand()
        scope = "" if self.focus_state.connection is None else f" (connection {self.focus_state.connection})"
        summary = "   ".join(counts) if counts else "No findings"
        self.query_one("#expert-summary", Static).update(f"Expert information{scope}: {summary}")

    def _fill(self, node: TreeNode) -> None:
        if node.children or not isinstance(node.data, tuple):
            return
        for e in self._leaves.get(node.data, ()):
            node.add_leaf(f"frame {e.frame}: {e.text}", data=e)

    def on_tree_node_expanded(self, event: Tree.NodeExpanded) -> None:
        self._fill(event.node)

    def on_tree_node_selected(self, event: Tree.NodeSelected) -> None:
        data = event.node.data
        if isinstance(data, Entry) and data.frame > 0:
            event.stop()
            self.post_message(JumpToFrame(data.frame))


def _walk(node: TreeNode) -> list[TreeNode]:
    out = [node]
    for child in node.children:
        out.extend(_walk(child))
    return out


register_view("6", lambda model: ExpertView(model))
