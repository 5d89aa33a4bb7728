"""Where the TUI keeps what would not fit in memory: records on disk, read back by their offset.

Every temporary file of one opened capture is made in one private directory (``SpoolDir``: mode
0700) and unlinked as soon as it is made; the directory is removed once the files are made (and,
failing that, when the process exits), so nothing stays behind even when the process is killed.

A ``RecordSpool`` is append-only: one writer thread (the background pass) adds pickled records,
any thread reads one back by the offset ``add`` returned.  Records are buffered and written in
blocks; a read of a record still in the buffer writes the buffer first.  A record of plain values
(``add_plain``) is written by ``marshal``, which takes some 40 % fewer instructions than pickle for
them; ``get`` tells the two apart by the first byte (a pickle's PROTO opcode, never a marshal type).
"""
from __future__ import annotations

import atexit
import marshal
import os
import pickle
import shutil
import struct
import tempfile
import threading
from array import array
from collections import OrderedDict
from typing import IO, Any, Iterator

_LENGTH = struct.Struct("<I")
_FLUSH_BYTES = 1 << 16          # the buffer is written when it holds this much
_READ_AHEAD = 4096              # most records are read in one call
_PICKLED = 0x80                 # the first byte of a pickle (PROTO); a marshal's is its first value's type


class SpoolDir:
    """A private temporary directory for one capture's spools."""

    def __init__(self) -> None:
        self.path = tempfile.mkdtemp(prefix="rdmaspy-tui-")
        atexit.register(self.remove)

    def file(self, prefix: str) -> IO[bytes]:
        """A new temporary file in the directory (already unlinked: it goes when it is closed)."""
        return tempfile.TemporaryFile(prefix=prefix, dir=self.path)

    def remove(self) -> None:
        shutil.rmtree(self.path, ignore_errors=True)
        atexit.unregister(self.remove)


class RecordSpool:
    """Pickled records on a temporary file: ``add(obj)`` gives the offset that ``get`` reads it at."""

    def __init__(self, directory: SpoolDir, prefix: str) -> None:
        self._file = directory.file(prefix)
        self._fd = self._file.fileno()
        self._pending = bytearray()
        self._flushed = 0               # bytes on the file; records past it are in ``_pending``
        self._lock = threading.Lock()
        self.closed = False

    @property
    def size(self) -> int:
        return self._flushed + len(self._pending)

    def add(self, obj: object) -> int:
        return self._add(pickle.dumps(obj, pickle.HIGHEST_PROTOCOL))

    def add_plain(self, items: list[Any]) -> int:
        """``add`` for a list of plain values (lists, tuples, dicts, strings, numbers, None): marshalled, or
        pickled when it holds anything else."""
        try:
            data = marshal.dumps(items)
        except ValueError:
            data = pickle.dumps(items, pickle.HIGHEST_PROTOCOL)
        return self._add(data)

    def _add(self, data: bytes) -> int:
        with self._lock:
            offset = self._flushed + len(self._pending)
            self._pending += _LENGTH.pack(len(data))
            self._pending += data
            if len(self._pending) >= _FLUSH_BYTES:
                self._flush()
        return offset

    def add_streamed(self, obj: object) -> int:
        """``add`` for a big record (a checkpoint): pickled straight to the file, a frame of the
        pickle at a time, instead of whole into memory first."""
        with self._lock:
            self._flush()
            offset = self._flushed
            out = _FileAt(self._fd, offset + _LENGTH.size)
            pickle.dump(obj, out, pickle.HIGHEST_PROTOCOL)
            os.pwrite(self._fd, _LENGTH.pack(out.at - offset - _LENGTH.size), offset)
            self._flushed = out.at
        return offset

    def flush(self) -> None:
        with self._lock:
            self._flush()

    def _flush(self) -> None:
        if self._pending and not self.closed:
            os.pwrite(self._fd, self._pending, self._flushed)
            self._flushed += len(self._pending)
            self._pending.clear()

    def get(self, offset: int) -> object:
        if offset + _LENGTH.size > self._flushed:
            self.flush()
        head = os.pread(self._fd, _READ_AHEAD, offset)
        (length,) = _LENGTH.unpack_from(head)
        end = _LENGTH.size + length
        data = head[_LENGTH.size:end] if end <= len(head) else \
            head[_LENGTH.size:] + os.pread(self._fd, end - len(head), offset + len(head))
        return pickle.loads(data) if data[0] == _PICKLED else marshal.loads(data)

    def close(self) -> None:
        with self._lock:
            self.closed = True
            self._pending.clear()
            self._file.close()


class _FileAt:
    """A file descriptor written from an offset on, as a file object for ``pickle.dump``."""

    __slots__ = ("fd", "at")

    def __init__(self, fd: int, at: int) -> None:
        self.fd = fd
        self.at = at

    def write(self, data: bytes) -> int:
        view = memoryview(data)
        while view:
            n = os.pwrite(self.fd, view, self.at)
            self.at += n
            view = view[n:]
        return len(data)


class SpooledArray:
    """An append-only array of numbers of one type (``array`` type codes) whose older items wait on
    disk: the last ``block`` items are in memory, the rest on a temporary file, read back a block
    at a time (the last few blocks read are kept).  Memory stays the same however long it grows.

    One thread appends; any thread reads.  The count on disk and the block in memory change
    together (one attribute), so a reader always sees a pair that belongs together.
    """

    def __init__(self, directory: SpoolDir, typecode: str, block: int = 4096, cached: int = 4) -> None:
        self._file = directory.file("rdmaspy-array-")
        self._fd = self._file.fileno()
        self.typecode = typecode
        self.block = block
        self._itemsize = array(typecode).itemsize
        self._state: tuple[int, array] = (0, array(typecode))    # (items on disk, the items after them)
        self._cache: OrderedDict[int, array] = OrderedDict()
        self._cached = cached
        self._lock = threading.Lock()

    def __len__(self) -> int:
        on_disk, tail = self._state
        return on_disk + len(tail)

    def append(self, value: int) -> None:
        on_disk, tail = self._state
        tail.append(value)
        if len(tail) >= self.block:
            os.pwrite(self._fd, tail.tobytes(), on_disk * self._itemsize)
            self._state = (on_disk + len(tail), array(self.typecode))

    def extend_bytes(self, data: bytes) -> None:
        """Append the items ``data`` holds (machine values of the type code, as ``tobytes`` gives them)."""
        on_disk, tail = self._state
        tail.frombytes(data)
        if len(tail) >= self.block:
            full = len(tail) // self.block * self.block
            os.pwrite(self._fd, tail[:full].tobytes(), on_disk * self._itemsize)
            self._state = (on_disk + full, tail[full:])

    def __getitem__(self, i: int) -> int:
        on_disk, tail = self._state
        if i < 0:
            i += on_disk + len(tail)
        if i >= on_disk:
            return tail[i - on_disk]
        if i < 0:
            raise IndexError(i)
        n, at = divmod(i, self.block)
        return self._block(n)[at]

    def _block(self, n: int) -> array:
        with self._lock:
            data = self._cache.get(n)
            if data is not None:
                self._cache.move_to_end(n)
                return data
        data = array(self.typecode)
        size = self.block * self._itemsize
        data.frombytes(os.pread(self._fd, size, n * size))
        with self._lock:
            self._cache[n] = data
            while len(self._cache) > self._cached:
                self._cache.popitem(last=False)
        return data

    def __iter__(self) -> Iterator[int]:
        """The items there are now, in order (a block read at a time, bypassing the cache)."""
        on_disk, tail = self._state
        size = self.block * self._itemsize
        for n in range(on_disk // self.block):
            data = array(self.typecode)
            data.frombytes(os.pread(self._fd, size, n * size))
            yield from data
        yield from tail[:]

    def close(self) -> None:
        self._file.close()
