"""The detail of one frame, as ``rdmaspy decode -V`` shows it, dissected again when it is asked for.

What ``-V`` prints for a frame depends on the frames before it (the connection learnt from the CM,
the calls a reply answers, the Sends a message was reassembled from, the analysis so far).  So the
frame is replayed through a fresh pipeline from the start of the capture, and its tree is taken at
the moment it comes out of the pipeline, as ``decode -V`` would print it.  The replay keeps its place:
the next frame down continues from there, and the frames just before the one asked for are kept
(a small LRU), so moving through the list costs one frame a step.  A jump far ahead or back starts
from the background pass's last checkpoint before the frame (``checkpoints.py``): the state of the
pipeline after some frame k, from which the replay dissects only the frames after k.
"""
from __future__ import annotations

import json
import pickle
import threading
from collections import OrderedDict, deque
from itertools import islice
from dataclasses import dataclass
from typing import Any, Callable, Iterator

from ..errors import RdmaspyError
from ..fields import Field
from ..fieldview import EVERY_FIELD, FRAME_COMMENT, FRAME_PROTOCOLS, FRAME_RELATIVE, FRAME_TIME, Plan, Sink, own_fields
from ..output.text import citation, tree_lines
from ..output.values import json_value, text_value
from ..packet import Item, Layer, Packet
from ..pipeline import Options, Pipeline
from ..readers import Capture
from .checkpoints import Checkpoints, show_packets
from .source import open_frames

KEEP_BEHIND = 32      # frames before the one asked for whose detail is kept on the way


@dataclass(frozen=True, slots=True)
class Node:
    """One line of the tree: its text, where its bytes stand in the frame (-1: not in the frame's bytes),
    and the filter that selects packets with this field's value ('' for lines that are no field)."""
    depth: int
    text: str
    start: int
    length: int
    name: str = ""
    filter: str = ""


@dataclass(frozen=True, slots=True)
class Detail:
    frame: int
    data: bytes
    nodes: tuple[Node, ...]


def filter_literal(field: Field, value: Any) -> str:
    """``value`` written so that the display filter language reads it back."""
    v = json_value(field, value)
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int) and field.display == "hex" and v >= 0:
        return f"{v:#x}"
    if isinstance(v, (int, float)):
        return repr(v)
    if isinstance(v, str):
        if field.display in ("ipv4", "ipv6", "gid", "mac"):
            return v
        if isinstance(value, (bytes, bytearray, memoryview)) and field.display != "str":
            b = bytes(value)
            return ":".join(f"{x:02x}" for x in b) if b else '""'
        return json.dumps(v)
    return json.dumps(str(v))


def field_filter(field: Field, value: Any) -> str:
    if value is None:
        return field.name
    return f"{field.name} == {filter_literal(field, value)}"


def detail_of(pkt: Packet, t0: int) -> Detail:
    """The tree of ``pkt``, line for line the text of ``tree_lines`` (``decode -V``), with byte spans."""
    data = pkt.frame.data
    lines = iter(tree_lines(pkt, t0))
    nodes: list[Node] = []
    f = pkt.frame
    # The frame's own lines, as tree_lines writes them.
    nodes.append(Node(0, next(lines), 0, len(data), "frame", f"frame.number == {f.num}"))
    nodes.append(Node(1, next(lines)[4:], -1, 0, FRAME_TIME.name))
    nodes.append(Node(1, next(lines)[4:], -1, 0, FRAME_RELATIVE.name))
    if f.comment:
        nodes.append(Node(1, next(lines)[4:], -1, 0, FRAME_COMMENT.name, field_filter(FRAME_COMMENT, f.comment)))
    nodes.append(Node(1, next(lines)[4:], -1, 0, FRAME_PROTOCOLS.name))
    EVERY_FIELD.layers(pkt, _DetailNodes(data, nodes))
    if pkt.expert:
        nodes.append(Node(0, "Expert Info", -1, 0, "expert", "expert"))
        for e in pkt.expert:
            cited = citation(e.rule, e.source)
            rule = f" [{cited}]" if cited else ""
            nodes.append(Node(1, f"[{e.severity.capitalize()}/{e.group}] {e.text}{rule}", -1, 0,
                              "expert.severity", f'expert.severity == "{e.severity}"'))
    return Detail(f.num, data, tuple(nodes))


class _DetailNodes(Sink):
    """Nodes of the layers, in the visit's (and ``decode -V``'s) order, each with where its bytes stand in
    the frame: a field of a message rebuilt from several frames stands in none of this frame's bytes."""

    __slots__ = ("data", "out")

    def __init__(self, data: bytes, out: list[Node]) -> None:
        self.data = data
        self.out = out

    def layer(self, lay: Layer, present: bool, plan: Plan, items: list[Item] | None, depth: int) -> None:
        own = lay.buf is self.data
        out = self.out
        out.append(Node(depth, lay.label, lay.off if own else -1, lay.length if own else 0, lay.proto, lay.proto))
        for f, v, start, length in own_fields(lay, plan, items):
            out.append(_field_node(f, v, depth + 1, start if own and start >= 0 else -1, length))


def _field_node(f: Field, v: Any, depth: int, start: int, length: int) -> Node:
    return Node(depth, f"{f.label}: {text_value(f, v)}", start, length if start >= 0 else 0, f.name,
                field_filter(f, v))


def indent_text(node: Node) -> str:
    """The node as ``decode -V`` prints its line."""
    return "    " * node.depth + node.text


class DetailSource:
    """Details of frames of one capture file, by frame number; safe to call from one worker at a time."""

    def __init__(self, path: str, keep: int = 256, checkpoints: Checkpoints | None = None) -> None:
        self.path = path
        self.keep = keep
        self.checkpoints = checkpoints
        self._cache: OrderedDict[int, Detail] = OrderedDict()
        self._lock = threading.Lock()
        self._cap: Capture | None = None
        self._frames: Iterator[Any] | None = None
        self._pipe: Pipeline | None = None
        self._last = 0          # number of the last frame fed to the replay pipeline
        self.started_after = 0  # the frame after which the replay started (a checkpoint's, or 0)
        # A replay from a checkpoint runs as the pass did (no Info text, no analysis fields) until the
        # frames it keeps: the packets fed from ``_shown_from`` on are as ``decode -V`` shows them.
        self._quiet = False
        self._shown_from = 0

    def cached(self, frame: int) -> Detail | None:
        with self._lock:
            d = self._cache.get(frame)
            if d is not None:
                self._cache.move_to_end(frame)
            return d

    def detail(self, frame: int, wanted: Callable[[], bool] | None = None) -> Detail | None:
        """The detail of frame ``frame`` (1-based), None if the capture has no such frame or if
        ``wanted()`` turns false on the way (the user moved on: the replay keeps its place)."""
        hit = self.cached(frame)
        if hit is not None:
            return hit
        with self._lock:
            start = self._start_for(frame)
            if start is not None:
                self._restart(*start)
            found = self._replay_to(frame, wanted)
            if found is None and self._frames is None and (wanted is None or wanted()):
                # the capture may have grown (live mode): read it again from the start
                self._restart()
                found = self._replay_to(frame, wanted)
            return found

    @property
    def position(self) -> int:
        """The last frame the replay has reached (its progress, while a detail is being made)."""
        return self._last

    def _start_for(self, frame: int) -> tuple[int, int | None] | None:
        """Where the replay to ``frame`` starts: None to go on from where it is, else (the frame
        after which it starts, the offset of the checkpoint of that state; None: the file's start)."""
        here = self._last if self._frames is not None and frame > self._last else -1
        point = self.checkpoints.before(frame) if self.checkpoints is not None else None
        # Reading a frame without dissecting it costs a few percent of dissecting it: a checkpoint
        # far behind is worth it only when it saves more than that.
        if point is not None and (here < 0 or (point[0] - here) * 32 > point[0]):
            return point
        return (0, None) if here < 0 else None

    def _restart(self, after: int = 0, checkpoint: int | None = None) -> None:
        self.close()
        self._cap = open_frames(self.path)
        self._frames = iter(self._cap)
        self._last = self.started_after = self._shown_from = 0
        self._quiet = False
        if checkpoint is not None and self.checkpoints is not None:
            try:
                self._pipe = self.checkpoints.load(checkpoint, shown=False)
            except (pickle.UnpicklingError, EOFError, OSError, ValueError, TypeError, AttributeError):
                checkpoint = None
            else:
                deque(islice(self._frames, after), maxlen=0)      # the frames the checkpoint has seen
                self._last = self.started_after = after
                self._quiet = True
        if checkpoint is None:
            self._pipe = Pipeline(None, Options(analyze=True))     # as ``decode -V`` runs it

    def _replay_to(self, frame: int, wanted: Callable[[], bool] | None = None) -> Detail | None:
        assert self._frames is not None and self._pipe is not None
        pipe = self._pipe
        feed = pipe.feed
        # The packets as the pipeline shows them: a packet a held finding is about comes a few frames later,
        # with its findings final.
        shown: list[Any] = []
        pipe.shown_now = shown
        found: Detail | None = None
        if self._quiet:
            # the frames no detail is kept of go through as in the pass, some 1.6 times as fast
            for f in islice(self._frames, max(0, frame - KEEP_BEHIND - 1 - self._last)):
                feed(f)
                self._last = f.num
                shown.clear()
                if wanted is not None and f.num & 255 == 0 and not wanted():
                    return None
            show_packets(pipe)
            self._quiet = False
            self._shown_from = self._last + 1
        for f in self._frames:
            feed(f)
            self._last = f.num
            if shown:
                found = self._keep(shown, frame, pipe.t0)
                shown.clear()
                if found is not None:
                    return found
            if wanted is not None and f.num & 255 == 0 and not wanted():
                return None         # the replay keeps its place: the next request may be further on
        pipe.finish()               # the end of the file: what waits is shown, its findings decided
        found = self._keep(shown, frame, pipe.t0)
        shown.clear()
        self._frames = None
        return found

    def _keep(self, shown: list[Any], frame: int, t0: int) -> Detail | None:
        """Cache the details of the packets shown near ``frame``; the detail of ``frame`` if among them."""
        found = None
        for pkt in shown:
            num = pkt.frame.num
            if num >= frame - KEEP_BEHIND and num >= self._shown_from:
                d = detail_of(pkt, t0)
                self._cache[num] = d
                self._cache.move_to_end(num)
                while len(self._cache) > self.keep:
                    self._cache.popitem(last=False)
                if num == frame:
                    found = d
        return found

    def close(self) -> None:
        if self._cap is not None:
            try:
                self._cap.close()
            except (OSError, RdmaspyError):
                pass
        self._cap = None
        self._frames = None
