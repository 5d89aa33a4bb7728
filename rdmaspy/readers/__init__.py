"""Capture file readers.

``open_capture(path)`` recognises pcap (either byte order, micro- or nanosecond)
and pcapng, plain or gzip-compressed, and returns a ``Capture``: an iterator of
``Frame`` that reads the file as a stream (memory does not grow with the file).
Damage found part-way (a truncated last record, a bad block) ends the iteration
and is recorded in ``Capture.problems`` with its byte offset; a file that is not
a capture at all raises ``CaptureError`` at once.
"""
from __future__ import annotations

import gzip
import io
import os
from typing import BinaryIO, Iterator

from ..errors import CaptureError
from ..packet import Frame

PCAP_MAGICS = {
    b"\xd4\xc3\xb2\xa1": ("<", 1000),      # little-endian, microseconds
    b"\xa1\xb2\xc3\xd4": (">", 1000),
    b"\x4d\x3c\xb2\xa1": ("<", 1),         # little-endian, nanoseconds
    b"\xa1\xb2\x3c\x4d": (">", 1),
}
PCAPNG_MAGIC = b"\x0a\x0d\x0d\x0a"
GZIP_MAGIC = b"\x1f\x8b"


class Capture:
    """Base of the readers: an iterator of frames plus what went wrong on the way."""

    format = "capture"

    def __init__(self, stream: BinaryIO, path: str) -> None:
        self.stream = stream
        self.path = path
        self.problems: list[str] = []
        self.linktypes: dict[int, int] = {}     # interface index -> link type
        self.interfaces: list[dict] = []        # per interface: name, linktype, snaplen, tsresol (ns per tick)

    def __iter__(self) -> Iterator[Frame]:
        raise TypeError("abstract")

    def problem(self, message: str, offset: int) -> None:
        self.problems.append(f"{message} at byte offset {offset}")

    def close(self) -> None:
        self.stream.close()

    def __enter__(self) -> "Capture":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _open_stream(path: str) -> tuple[BinaryIO, bytes]:
    if os.path.isdir(path):
        raise CaptureError(f"{path}: is a directory, not a capture file")
    try:
        raw = open(path, "rb")
    except FileNotFoundError:
        raise CaptureError(f"{path}: no such file") from None
    except PermissionError:
        raise CaptureError(f"{path}: permission denied") from None
    except OSError as exc:
        raise CaptureError(f"{path}: cannot open: {exc.strerror or exc}") from None
    head = raw.read(4)
    if head[:2] == GZIP_MAGIC:
        raw.seek(0)
        stream: BinaryIO = gzip.GzipFile(fileobj=raw, mode="rb")  # type: ignore[assignment]
        try:
            head = stream.read(4)
        except (OSError, EOFError) as exc:
            raw.close()
            raise CaptureError(f"{path}: damaged gzip data: {exc}") from None
        return _Rewound(stream, head), head
    raw.seek(0)
    return io.BufferedReader(raw, 1 << 20) if not isinstance(raw, io.BufferedReader) else raw, head


class _Rewound(io.RawIOBase):
    """A stream whose first bytes were already read (gzip cannot seek back cheaply)."""

    def __init__(self, inner: BinaryIO, head: bytes) -> None:
        self.inner = inner
        self.head = head

    def readable(self) -> bool:
        return True

    def read(self, n: int = -1) -> bytes:
        head = self.head
        if head:
            if n < 0:
                self.head = b""
                return head + self.inner.read()
            take = head[:n]
            self.head = head[n:]
            if len(take) < n:
                take += self.inner.read(n - len(take))
            return take
        return self.inner.read(n)

    def readinto(self, b) -> int:  # type: ignore[override]
        data = self.read(len(b))
        b[:len(data)] = data
        return len(data)

    def close(self) -> None:
        self.inner.close()
        super().close()


def open_capture(path: str) -> Capture:
    stream, head = _open_stream(path)
    if len(head) < 4:
        stream.close()
        raise CaptureError(f"{path}: not a capture file (only {len(head)} bytes)")
    if head in PCAP_MAGICS:
        from .pcap import PcapReader
        return PcapReader(stream, path)
    if head == PCAPNG_MAGIC:
        from .pcapng import PcapngReader
        return PcapngReader(stream, path)
    stream.close()
    raise CaptureError(f"{path}: not a pcap or pcapng file (magic {head.hex()})", 0)
