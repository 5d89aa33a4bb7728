"""The detail tree of the selected frame: every layer and field as ``decode -V`` shows them, expandable."""
from __future__ import annotations

from rich.text import Text
from textual.binding import Binding
from textual.message import Message
from textual.widgets import Tree
from textual.widgets.tree import TreeNode

from .detail import Detail, Node


class DetailTree(Tree[Node]):
    BINDINGS = [
        Binding("a", "apply_filter", "Apply as filter"),
        Binding("p", "prepare_filter", "Prepare as filter"),
    ]
    DEFAULT_CSS = """
    DetailTree { width: 1fr; }
    """

    class FieldChosen(Message):
        """A field became the selected one: its bytes in the frame (start -1: none)."""

        def __init__(self, node: Node) -> None:
            super().__init__()
            self.node = node

    class FilterFromField(Message):
        """'Apply as filter' (``apply`` True) or 'Prepare as filter' on the selected field."""

        def __init__(self, expr: str, apply: bool) -> None:
            super().__init__()
            self.expr = expr
            self.apply = apply

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__("No packet selected", id=id)
        self.show_root = False
        self.guide_depth = 2
        self.detail: Detail | None = None
        self._lines: list[TreeNode[Node]] = []

    def show(self, detail: Detail | None, message: str = "") -> None:
        """Show a frame's tree (all open, as -V prints it), or a message when there is none."""
        line = self.cursor_line
        self.clear()
        self.detail = detail
        self._lines = []
        if detail is None:
            self.root.add_leaf(message or "No packet selected")
            return
        parents: list[TreeNode[Node]] = [self.root]
        nodes = detail.nodes
        for i, node in enumerate(nodes):
            has_children = i + 1 < len(nodes) and nodes[i + 1].depth > node.depth
            del parents[node.depth + 1:]
            parent = parents[min(node.depth, len(parents) - 1)]
            label = Text(node.text, style="bold" if node.depth == 0 else "")
            if has_children:
                tn = parent.add(label, data=node, expand=True)
                parents.append(tn)
            else:
                tn = parent.add_leaf(label, data=node)
            self._lines.append(tn)
        if 0 <= line < len(self._lines):
            self.move_cursor(self._lines[line])

    def on_tree_node_highlighted(self, event: Tree.NodeHighlighted[Node]) -> None:
        event.stop()
        node = event.node.data
        if node is not None:
            self.post_message(self.FieldChosen(node))

    def select_offset(self, offset: int) -> None:
        """Move to the narrowest field whose bytes hold ``offset`` (the hex pane's byte)."""
        best: TreeNode[Node] | None = None
        best_len = 1 << 30
        for tn in self._lines:
            n = tn.data
            if n is not None and n.start >= 0 and n.start <= offset < n.start + n.length and n.length <= best_len:
                best, best_len = tn, n.length
        if best is not None:
            parent = best.parent
            while parent is not None:
                parent.expand()
                parent = parent.parent
            self.move_cursor(best)

    def selected_filter(self) -> str:
        tn = self.cursor_node
        node = tn.data if tn is not None else None
        return node.filter if node is not None else ""

    def action_apply_filter(self) -> None:
        expr = self.selected_filter()
        if expr:
            self.post_message(self.FilterFromField(expr, True))

    def action_prepare_filter(self) -> None:
        expr = self.selected_filter()
        if expr:
            self.post_message(self.FilterFromField(expr, False))
