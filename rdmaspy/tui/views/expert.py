"""View 6, the expert: every finding grouped by severity and rule with counts, as Wireshark's Expert
Information; a finding opens its frame in the packet list.

The findings (the analysis' and the dissectors': malformed packets, bad checksums, TCP holes) are
in the analysis store, counted in memory and spooled on disk: the counts come from the store, and
a rule's findings are read back when it is opened, a page at a time by frame, as the `expert` command
lists them (a capture can hold millions).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Iterator

from textual.app import ComposeResult
from textual.widgets import Static, Tree
from textual.widgets.tree import TreeNode

from ..analysis_store import Entry, FindingGroup
from ..messages import JumpToFrame
from . import register_view
from .common import AnalysisView

if TYPE_CHECKING:
    from ..model import CaptureModel

SEVERITY_ORDER = ("error", "warning", "note", "chat")
SEVERITY_TITLES = {"error": "Errors", "warning": "Warnings", "note": "Notes", "chat": "Chats"}
SEVERITY_MARKUP = {"error": "bold white on dark_red", "warning": "bold black on yellow", "note": "cyan",
                   "chat": "dim"}
PAGE = 500          # findings listed under a rule at a time; a last leaf shows the next page


class More:
    """The leaf after a page of findings: selecting it lists the next page, the findings after ``after``
    (the frame and the store's position of the last listed; ``listed`` of the rule's are listed above it)."""

    __slots__ = ("after", "listed")

    def __init__(self, after: tuple[int, int], listed: int) -> None:
        self.after = after
        self.listed = listed


FIRST_PAGE = More((-1, -1), 0)


class ExpertView(AnalysisView):
    DEFAULT_CSS = """
    ExpertView > #expert-summary { height: 1; background: $primary-darken-2; text-style: bold; padding: 0 1; }
    ExpertView > Tree { height: 1fr; }
    """

    def __init__(self, model: "CaptureModel", *, id: str | None = None) -> None:
        super().__init__(model, id=id)
        self._shown: tuple[int, int | None] | None = None
        self._groups: dict[tuple[str, str], list[FindingGroup]] = {}

    def compose(self) -> ComposeResult:
        yield Static("Expert information", id="expert-summary")
        tree: Tree[Entry | More | tuple[str, str] | None] = Tree("Findings", id="expert-tree")
        tree.show_root = False
        yield tree

    @property
    def findings_tree(self) -> "Tree[Entry | More | tuple[str, str] | None]":
        return self.query_one("#expert-tree", Tree)

    def entries(self) -> Iterator[Entry]:
        """Every finding in focus (read back from the spool)."""
        store = self.model.analysis
        numbers = {g.number for groups in self._admitted().values() for g in groups}
        for _pos, offset in store.findings_of(numbers):
            yield store.entry(offset)

    def _admitted(self) -> dict[tuple[str, str], list[FindingGroup]]:
        """The finding groups of the connection in focus, by severity and rule."""
        focus = self.focus_state
        out: dict[tuple[str, str], list[FindingGroup]] = {}
        for group in self.model.analysis.groups():
            if focus.admits(group.conn):
                out.setdefault((group.severity, group.rule), []).append(group)
        return out

    def refresh_view(self) -> None:
        key = (self.model.analysis.finding_count, self.focus_state.connection)
        if key == self._shown:
            return
        self._shown = key
        self._groups = self._admitted()
        by_severity: dict[str, list[tuple[str, int, str]]] = {}
        for (severity, rule), groups in self._groups.items():
            by_severity.setdefault(severity, []).append((rule, sum(g.count for g in groups), groups[0].group))
        tree = self.findings_tree
        expanded = {n.data for n in _walk(tree.root) if n.is_expanded and isinstance(n.data, tuple)}
        tree.clear()
        counts = []
        for severity in SEVERITY_ORDER:
            rules = by_severity.get(severity)
            if not rules:
                continue
            total = sum(n for _r, n, _g in rules)
            counts.append(f"{SEVERITY_TITLES[severity]}: {total}")
            top = tree.root.add(f"[{SEVERITY_MARKUP[severity]}]{SEVERITY_TITLES[severity]}[/] ({total})",
                                data=None, expand=True)
            for rule, n, group in sorted(rules, key=lambda r: (-r[1], r[0])):
                key2 = (severity, rule)
                node = top.add(f"{rule} [dim]({group})[/] — {n}", data=key2)
                node.allow_expand = True
                if key2 in expanded:
                    self._fill(node, FIRST_PAGE)
                    node.expand()
        scope = "" if self.focus_state.connection is None else f" (connection {self.focus_state.connection})"
        summary = "   ".join(counts) if counts else "No findings"
        self.query_one("#expert-summary", Static).update(f"Expert information{scope}: {summary}")

    def _fill(self, node: TreeNode, start: More) -> None:
        """List a page of the rule's findings under ``node`` from where ``start`` says."""
        key = node.data
        if not isinstance(key, tuple):
            return
        groups = self._groups.get(key, [])
        total = sum(g.count for g in groups)
        store = self.model.analysis
        listed = start.listed
        after = start.after
        for frame, pos, offset in store.findings_by_frame({g.number for g in groups}, start.after, PAGE):
            e = store.entry(offset)
            node.add_leaf(f"frame {e.frame}: {e.text}", data=e)
            listed += 1
            after = (frame, pos)
        if listed < total:
            node.add_leaf(f"[dim]{total - listed} more (Enter: the next {min(PAGE, total - listed)})[/]",
                          data=More(after, listed))

    def on_tree_node_expanded(self, event: Tree.NodeExpanded) -> None:
        if not event.node.children:
            self._fill(event.node, FIRST_PAGE)

    def on_tree_node_selected(self, event: Tree.NodeSelected) -> None:
        node = event.node
        data = node.data
        if isinstance(data, Entry) and data.frame > 0:
            event.stop()
            self.post_message(JumpToFrame(data.frame))
        elif isinstance(data, More) and node.parent is not None:
            event.stop()
            parent = node.parent
            node.remove()
            self._fill(parent, data)


def _walk(node: TreeNode) -> list[TreeNode]:
    out = [node]
    for child in node.children:
        out.extend(_walk(child))
    return out


register_view("6", lambda model: ExpertView(model))
