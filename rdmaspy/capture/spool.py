"""A file written by a background thread, so that a slow disk never stalls the ring.

The capture loop hands over chunks and goes back to the ring at once; the thread does the
write() calls (which release the GIL).  Memory is bounded: past ``limit`` bytes in flight,
``write`` waits for the disk, and the kernel ring takes up the slack (its drops are counted
by the kernel, never hidden).  A write error is raised at the next write or at close.
"""
from __future__ import annotations

import collections
import ctypes
import threading

HANDOFF = 1 << 20        # small writes gather up to this size before the hand-over


M_TRIM_THRESHOLD = -1
M_MMAP_THRESHOLD = -3
_HEAP_TUNED = False


def keep_chunks_on_the_heap() -> None:
    """Let glibc serve the ~1 MiB chunks from its heap and keep freed ones for reuse.

    By default each chunk is a fresh mmap() that is unmapped once written: 256 page faults a
    chunk, and a TLB shootdown that interrupts the CPU the sender runs on.
    """
    global _HEAP_TUNED
    if _HEAP_TUNED:
        return
    _HEAP_TUNED = True
    try:
        libc = ctypes.CDLL(None)
        libc.mallopt(M_MMAP_THRESHOLD, 32 << 20)
        libc.mallopt(M_TRIM_THRESHOLD, 512 << 20)
    except (OSError, AttributeError):     # not glibc: the defaults only cost some speed
        pass


class SpoolFile:
    def __init__(self, path: str, limit: int = 256 << 20) -> None:
        keep_chunks_on_the_heap()
        self.name = path
        self._f = open(path, "wb", buffering=0)
        self._pending = bytearray()
        self._q: collections.deque = collections.deque()
        self._queued = 0
        self._limit = limit
        self._cv = threading.Condition()
        self._done = False
        self._error: OSError | None = None
        self._thread = threading.Thread(target=self._run, name="rdmaspy-writer", daemon=True)
        self._thread.start()

    def write(self, data) -> int:
        n = len(data)
        if not self._pending and n >= HANDOFF // 4 and not isinstance(data, memoryview):
            self._handoff(data)           # a whole block's chunk: no copy
            return n
        self._pending += data
        if len(self._pending) >= HANDOFF:
            self._handoff(self._pending)
            self._pending = bytearray()
        return n

    def _handoff(self, chunk) -> None:
        with self._cv:
            while self._queued > self._limit and self._error is None:
                self._cv.wait()
            if self._error is not None:
                raise self._error
            self._q.append(chunk)
            self._queued += len(chunk)
            self._cv.notify_all()

    def flush(self) -> None:
        if self._pending:
            self._handoff(self._pending)
            self._pending = bytearray()

    def _run(self) -> None:
        q, cv = self._q, self._cv
        while True:
            with cv:
                while not q and not self._done:
                    cv.wait()
                if not q:
                    return
                chunk = q[0]
            try:
                view = memoryview(chunk)
                while view:
                    view = view[self._f.write(view):]
            except OSError as exc:
                with cv:
                    self._error = exc
                    q.clear()
                    self._queued = 0
                    cv.notify_all()
                return
            with cv:
                q.popleft()
                self._queued -= len(chunk)
                cv.notify_all()

    def abandon(self) -> None:
        """After an error: stop the thread and close the file without writing more."""
        with self._cv:
            self._done = True
            self._q.clear()
            self._queued = 0
            self._cv.notify_all()
        self._pending = bytearray()
        self._thread.join()
        try:
            self._f.close()
        except OSError:
            pass

    def close(self) -> None:
        """Write everything still queued, then close; raises the first write error."""
        try:
            self.flush()
        finally:
            with self._cv:
                self._done = True
                self._cv.notify_all()
            self._thread.join()
            self._f.close()
        if self._error is not None:
            raise self._error
