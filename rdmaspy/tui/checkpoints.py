"""Checkpoints of the background pass: how a far frame's detail is made without replaying the file.

What ``decode -V`` prints for a frame depends on every frame before it, so a detail is made by
running frames through a pipeline up to it (``detail.py``).  Every ``every`` frames the background
pass pickles its pipeline's state (the engine's session: connections, reassembly, outstanding
calls; the analysis: open transactions, credits, PSN spaces) to the spool; a detail then starts
from the last checkpoint before its frame, reading the frames before it without dissecting them,
and dissects at most ``every`` frames.  The state after frame k is the state any pipeline has after
frame k: a frame's tree made from a checkpoint is the tree ``decode -V`` prints (tests check it).

At most ``keep`` checkpoints are kept: past that, every other one is dropped and the spacing
doubles, so a file of any size costs a bounded index.  A big state is kept less often (at most
``BYTES_PER_FRAME`` bytes of checkpoint for each frame between two), so that pickling it costs
the pass little time and the spool little disk.
A state that cannot be pickled, or read back (the first checkpoint is tried at once), turns
checkpoints off (``failed`` says why); details are then made from the start of the file.  The
compiled build keeps them too: every class of the state compiled by mypyc is declared
``@mypyc_attr(serializable=True)`` (those that are not dataclasses with
``allow_interpreted_subclasses=True`` as well: mypyc 2.4 then calls ``__init__`` when interpreted
code makes one, and not when one is unpickled), and declarations (headers, rules) are pickled as
references to themselves.
"""
from __future__ import annotations

import pickle
import threading
from array import array

from ..analysis.analyzer import Analyzer
from ..engine import Engine
from ..pipeline import Options, Pipeline
from .spool import RecordSpool, SpoolDir

EVERY = 8192            # frames between checkpoints at first
KEEP = 128              # checkpoints kept at most
BYTES_PER_FRAME = 16    # a big state is kept less often: at most this many bytes of checkpoint a frame


class Checkpoints:
    def __init__(self, directory: SpoolDir, every: int = EVERY, keep: int = KEEP) -> None:
        self.spool = RecordSpool(directory, "rdmaspy-checkpoints-")
        self.every = every
        self.keep = max(keep, 2)
        self.bytes_per_frame = BYTES_PER_FRAME
        self.next_at = every             # the frame after which the next checkpoint is taken
        self.failed: str | None = None
        self._frames = array("Q")        # checkpoint i holds the state after frame _frames[i] ...
        self._offsets = array("Q")       # ... at this offset of the spool
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._frames)

    def frames(self) -> list[int]:
        """The frames after which the checkpoints kept were taken."""
        with self._lock:
            return list(self._frames)

    # -- the background pass's thread ---------------------------------------------------------------
    def take(self, pipe: Pipeline, frame: int) -> None:
        """Keep the state of ``pipe`` after frame ``frame`` (it has fed frames 1..frame)."""
        self.next_at = frame + self.every
        if self.failed is not None:
            return
        an = pipe.analyzer
        hooks = (an.on_record, an.on_finding) if an is not None else None
        try:
            if an is not None:
                # the hooks are the sinks' (files, locks): the state is what the pipeline holds
                an.on_record = an.on_finding = None
            state = (pipe.engine, an, pipe.t0, pipe.t_last, pipe.frames)
            offset = self.spool.add_streamed(state)
        except (pickle.PicklingError, TypeError, AttributeError, RecursionError, ValueError) as exc:
            self.failed = f"the pipeline's state cannot be kept ({exc})"
            return
        finally:
            if an is not None and hooks is not None:
                an.on_record, an.on_finding = hooks
        if not self._frames and not self._loads(offset):
            return
        size = self.spool.size - offset
        self.next_at = frame + max(self.every, size // self.bytes_per_frame if self.bytes_per_frame else 0)
        with self._lock:
            self._frames.append(frame)
            self._offsets.append(offset)
            if len(self._frames) > self.keep:
                self._thin()

    def _loads(self, offset: int) -> bool:
        """Whether the first checkpoint can be read back; checkpoints are turned off if not (a class
        of the state compiled by mypyc without ``serializable``: it calls ``__init__`` on unpickling)."""
        try:
            self.load(offset)
        except (pickle.UnpicklingError, TypeError, AttributeError, ValueError, EOFError, AssertionError) as exc:
            self.failed = f"the pipeline's state cannot be read back ({exc})"
            return False
        return True

    def _thin(self) -> None:
        """Drop every other checkpoint (the last one stays) and double the spacing."""
        self.every *= 2
        n = len(self._frames)
        keep = [i for i in range(n) if (n - 1 - i) % 2 == 0]
        self._frames = array("Q", (self._frames[i] for i in keep))
        self._offsets = array("Q", (self._offsets[i] for i in keep))
        self.next_at = max(self.next_at, self._frames[-1] + self.every)

    # -- the detail's thread ------------------------------------------------------------------------
    def before(self, frame: int) -> tuple[int, int] | None:
        """The last checkpoint before frame ``frame``: (the frame it follows, its spool offset)."""
        with self._lock:
            frames, offsets = self._frames, self._offsets
            lo, hi = 0, len(frames)
            while lo < hi:
                mid = (lo + hi) // 2
                if frames[mid] < frame:
                    lo = mid + 1
                else:
                    hi = mid
            return (frames[lo - 1], offsets[lo - 1]) if lo else None

    def load(self, offset: int, shown: bool = True) -> Pipeline:
        """A pipeline in the state of the checkpoint at ``offset``, as ``decode -V`` runs it (no sinks).
        ``shown=False``: still as the pass ran it, without the Info text and the analysis fields, on which
        no state depends (a replay runs so up to the frames it shows: ``show_packets``)."""
        state = self.spool.get(offset)
        assert isinstance(state, tuple) and len(state) == 5
        engine, an, t0, t_last, frames = state
        assert isinstance(engine, Engine) and (an is None or isinstance(an, Analyzer))
        if shown:
            engine.session.info = True
            if an is not None:
                an.show_fields()
        pipe = Pipeline(None, Options(analyze=False), engine=engine)
        pipe.analyzer = an
        pipe.t0, pipe.t_last, pipe.frames = int(t0), int(t_last), int(frames)
        return pipe

    def close(self) -> None:
        self.spool.close()


def show_packets(pipe: Pipeline) -> None:
    """Turn on what ``load(shown=False)`` left off: the packets fed from now on are as ``decode -V`` shows
    them."""
    pipe.engine.session.info = True
    if pipe.analyzer is not None:
        pipe.analyzer.show_fields()
