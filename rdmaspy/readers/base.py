"""What every capture reader shares: the magic numbers, the ``Capture`` base class, the stream a file
(or a pipe, or a gzip stream) is read through, and the chunked reader over it."""
from __future__ import annotations

import os
import stat
import sys
import zlib

from ..errors import CaptureError
from ..packet import Frame
from ..typenames import Any, BinaryIO, Callable, Final, Iterator

try:        # built with the compiled decoder (setup.py); without it the C library's heap is left as it is
    from .._heap import keep_freed as _keep_freed  # type: ignore[import-not-found,import-untyped,unused-ignore]
except ImportError:
    _keep_freed = None

# The heap a process reading captures asks the C library for (keep_chunks_in_heap): chunks of the
# readers (a mebibyte, more for a block larger than that) come from it up to this size ...
HEAP_SERVES_BELOW = 4 << 20
# ... and this much of its free top stays with the process for the next chunk
HEAP_KEEPS_UP_TO = 16 << 20

PCAP_MAGICS = {
    b"\xd4\xc3\xb2\xa1": ("<", 1000),      # little-endian, microseconds
    b"\xa1\xb2\xc3\xd4": (">", 1000),
    b"\x4d\x3c\xb2\xa1": ("<", 1),         # little-endian, nanoseconds
    b"\xa1\xb2\x3c\x4d": (">", 1),
}
PCAPNG_MAGIC = b"\x0a\x0d\x0d\x0a"
GZIP_MAGIC = b"\x1f\x8b"


class Capture:
    """Base of the readers: an iterator of frames plus what went wrong on the way.

    ``interfaces`` holds one dict per interface (pcapng: in the order of their
    description blocks over all sections; pcap: one): name, description,
    linktype, snaplen, ns_per_tick, filter.  ``linktypes`` maps the interface
    index (``Frame.iface``) to its link type.  A capture is iterated once.
    """

    format = "capture"

    def __init__(self, stream: BinaryIO, path: str) -> None:
        self.stream = stream
        self.path = path
        self.problems: list[str] = []
        self.warnings: list[str] = []      # what is odd in the file but does not stop or change the reading
        self.clamped = 0               # frames whose time lies beyond 64-bit nanoseconds (clamped to the bound)
        self.linktypes: dict[int, int] = {}
        self.interfaces: list[dict] = []
        # Called before the reader waits for input that has not arrived (a pipe): the pipeline's flush.
        self.on_wait: Callable[[], None] | None = None

    def __iter__(self) -> Iterator[Frame]:
        raise TypeError(f"{type(self).__name__} is not a reader")

    def clamp(self, bound: int) -> int:
        """``bound``, counted as a clamped frame time.  Here rather than in a reader: mypyc cannot
        compile the update of an attribute of this (pure Python) base from a compiled subclass."""
        self.clamped += 1
        return bound

    def warn(self, message: str) -> None:
        """Something odd in the file that does not stop or change the reading (said once, on opening)."""
        self.warnings.append(message)

    def problem(self, message: str, offset: int) -> None:
        self.problems.append(f"{message} at byte offset {offset}")

    def ended(self, message: str | None, offset: int) -> None:
        """The data stopped at ``offset``: say why (a broken gzip stream explains a cut record)."""
        damage = getattr(self.stream, "damage", None)
        if damage:
            self.problem(f"{damage}; reading stopped", offset)
        elif message:
            self.problem(message, offset)

    def close(self) -> None:
        self.stream.close()

    def __enter__(self) -> "Capture":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


STDIN = "-"       # the path that names standard input, as tshark -r - does


def _open_raw(path: str) -> Any:
    """The binary file at ``path``; standard input for ``-`` (a copy of its descriptor, so that closing
    the capture leaves the process's standard input alone)."""
    if path == STDIN:
        try:
            return os.fdopen(os.dup(sys.stdin.fileno()), "rb")
        except (OSError, ValueError, AttributeError):
            raise CaptureError("-: standard input cannot be read") from None
    return open(path, "rb")


def _open_stream(path: str) -> tuple[Any, bytes]:           # a binary file, or a GzipStream over one
    if path != STDIN and os.path.isdir(path):
        raise CaptureError(f"{path}: is a directory, not a capture file")
    try:
        raw = _open_raw(path)
    except FileNotFoundError:
        raise CaptureError(f"{path}: no such file") from None
    except PermissionError:
        raise CaptureError(f"{path}: permission denied") from None
    except OSError as exc:
        raise CaptureError(f"{path}: cannot open: {exc.strerror or exc}") from None
    # A pipe (``tcpdump -w - | rdmaspy decode /dev/stdin``, a FIFO) cannot go back: its first bytes are
    # looked at without taking them.
    seekable = raw.seekable()
    try:
        head = raw.read(4) if seekable else raw.peek(4)[:4]
    except OSError as exc:
        raw.close()
        raise CaptureError(f"{path}: cannot read: {exc.strerror or exc}") from None
    if head[:2] == GZIP_MAGIC:
        if not seekable:
            raw.close()
            raise CaptureError(f"{path}: a gzip-compressed capture is read from a file, not a pipe "
                               f"(decompress it into the pipe with zcat)")
        raw.seek(0)
        gz = GzipStream(raw)
        head = gz.read(4)
        if len(head) < 4 and gz.damage:
            gz.close()
            raise CaptureError(f"{path}: {gz.damage}")
        raw.seek(0)            # start again: cheaper than keeping the peeked bytes in front of every read
        return GzipStream(raw), head
    if seekable:
        raw.seek(0)
    return raw, head


def keep_chunks_in_heap() -> bool:
    """For a process that reads captures (the command line): a chunk freed is kept by the C library's
    heap for the next one, instead of going back to the kernel and coming back a page fault at a time
    (rdmaspy/_heap.c says why).  False where that cannot be asked (not glibc, or the C helper not built)."""
    if _keep_freed is None:
        return False
    return bool(_keep_freed(HEAP_KEEPS_UP_TO, HEAP_SERVES_BELOW))


# Whether the main thread waits for input that may never come (a pipe, a terminal, a FIFO): there a
# signal's handler raises at once (``pipeline.defer_signal``), the wait being a call whose failure is checked.
WAITING_FOR_INPUT: Final[list[bool]] = [False]
# The signals that arrived while a run pulled frames, with the handlers they stand in for (``defer_signal``):
# delivered between two frames, or before a wait for input.  Compiled code must not be left by an exception
# a handler raises inside an operation mypyc holds infallible: a multiplication of big integers checks for
# signals (CPython's x_mul), and mypyc aborts the process ("fatal: out of memory") when one fails.
PENDING_SIGNALS: Final[list[tuple[int, Callable[[int, Any], Any]]]] = []


def defer_signal(handler: Callable[[int, Any], Any], signum: int, frame: Any) -> None:
    """A signal handler standing in for ``handler`` while a run pulls frames: ``handler`` runs before the
    next frame is fed; at once while the source waits for input (a pipe), or for a second signal before
    then (a second Ctrl-C)."""
    if PENDING_SIGNALS or WAITING_FOR_INPUT[0]:
        PENDING_SIGNALS.clear()
        handler(signum, frame)
        return
    PENDING_SIGNALS.append((signum, handler))


def drop_signals() -> None:
    """Forget the signals deferred so far (the run ended by another exception, which the command reports)."""
    PENDING_SIGNALS.clear()


def deliver_signals() -> None:
    """Run the handlers of the signals deferred so far (their exceptions end the run here)."""
    while PENDING_SIGNALS:
        signum, handler = PENDING_SIGNALS.pop(0)
        handler(signum, None)


def on_main_thread() -> bool:
    """Whether this is the interpreter's main thread.  Asked of ``threading`` only where it is imported:
    without it no other thread of ours runs, and its import was some 2 M instructions of every start."""
    threading = sys.modules.get("threading")
    return threading is None or threading.current_thread() is threading.main_thread()


def chunk_reader(stream: Any, cap: "Capture") -> Callable[[int], bytes]:
    """How a reader takes its next chunk: ``read`` from a file.  From a pipe or a terminal, ``read1``,
    which returns what has arrived instead of waiting for a whole chunk, so frames are decoded as
    they come; and before it waits for more, ``cap.on_wait()`` lets what was made from the frames so
    far go out (the pipeline flushes its output)."""
    read1 = getattr(stream, "read1", None)
    if read1 is None:
        return stream.read
    try:
        fd = stream.fileno()
        if stat.S_ISREG(os.fstat(fd).st_mode):
            return stream.read
    except (OSError, ValueError, AttributeError):
        return stream.read
    import select           # for a pipe's reads alone: a file's start does without the module

    def read_arrived(n: int) -> bytes:
        wait = cap.on_wait
        if wait is not None and not select.select([fd], [], [], 0)[0]:
            wait()
        if not on_main_thread():
            return read1(n)
        WAITING_FOR_INPUT[0] = True
        try:
            if PENDING_SIGNALS:     # deferred before the wait (it could be for input that never comes)
                deliver_signals()
            return read1(n)
        finally:
            WAITING_FOR_INPUT[0] = False
    return read_arrived


def chunk_seeker(stream: Any) -> Callable[[int], int] | None:
    """``seek`` of a regular file read as it is (not a pipe, not decompressed), else None.  A reader that
    needs more bytes than its chunk holds reads the chunk's unconsumed end again from the file with the
    next one (``next_chunk``): one read, where joining the two copied the whole new chunk once more."""
    if isinstance(stream, GzipStream):
        return None
    try:
        if not (stream.seekable() and stat.S_ISREG(os.fstat(stream.fileno()).st_mode)):
            return None
    except (OSError, ValueError, AttributeError):
        return None
    seek: Callable[[int], int] = stream.seek
    return seek


def next_chunk(read: Callable[[int], bytes], seek: Callable[[int], int] | None, buf: bytes, pos: int, at: int,
               n: int) -> bytes:
    """``buf[pos:]`` followed by up to ``n`` more bytes of the stream, where ``at`` is the file offset of
    ``buf[pos]`` and the stream stands at the end of ``buf``; ``buf[pos:]`` alone at the end of the data."""
    left = len(buf) - pos
    if seek is not None and left:
        seek(at)
        return read(left + n)
    more = read(n)
    if not left:
        return more
    return buf[pos:] + more if more else buf[pos:]


class GzipStream:
    """Decompressed gzip data as a plain stream that never raises.

    Damaged or cut compressed data ends the stream; everything decompressed
    before the damage is still returned, and ``damage`` says what went wrong, so
    a reader yields the frames before it and reports the problem.
    """

    __slots__ = ("raw", "inner", "damage")

    def __init__(self, raw: BinaryIO) -> None:
        import gzip         # here: only a compressed capture needs it
        self.raw = raw
        self.inner: gzip.GzipFile | None = gzip.GzipFile(fileobj=raw, mode="rb")
        self.damage: str | None = None

    def read(self, n: int) -> bytes:
        inner = self.inner
        if inner is None:
            return b""
        parts: list[bytes] = []
        need = n
        while need > 0:
            try:
                # read1: one decompression step at a time, so a failure loses nothing already inflated
                piece = inner.read1(min(need, 1 << 18))
            except (OSError, EOFError, ValueError, zlib.error) as exc:
                self.damage = f"damaged gzip data ({exc})"
                self.inner = None
                break
            if not piece:
                break
            parts.append(piece)
            need -= len(piece)
        return parts[0] if len(parts) == 1 else b"".join(parts)

    def close(self) -> None:
        if self.inner is not None:
            self.inner.close()
        self.raw.close()
