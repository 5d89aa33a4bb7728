"""Capture file readers.

``open_capture(path)`` recognises pcap (either byte order, micro- or nanosecond)
and pcapng, plain or gzip-compressed, and returns a ``Capture``: an iterator of
``Frame`` that reads the file as a stream (memory does not grow with the file).
Damage found part-way (a truncated last record, a bad block) ends the iteration
and is recorded in ``Capture.problems`` with its byte offset; a file that is not
a capture at all raises ``CaptureError`` at once.  Offsets in a gzip-compressed
capture count bytes of the decompressed data.
"""
from __future__ import annotations

from ..errors import CaptureError
from .base import GZIP_MAGIC, PCAP_MAGICS, PCAPNG_MAGIC, STDIN, Capture, GzipStream, _open_stream, chunk_reader
from .pcap import PcapReader
from .pcapng import PcapngReader

__all__ = ["Capture", "CaptureError", "GZIP_MAGIC", "GzipStream", "PCAPNG_MAGIC", "PCAP_MAGICS", "STDIN",
           "chunk_reader", "open_capture"]


def open_capture(path: str) -> Capture:
    """Open a pcap or pcapng file (optionally gzip-compressed); CaptureError if it is none."""
    stream, head = _open_stream(path)
    if len(head) < 4:
        stream.close()
        if not head:
            raise CaptureError(f"{path}: the file is empty")
        raise CaptureError(f"{path}: not a capture file (only {len(head)} bytes)")
    if head in PCAP_MAGICS:
        return PcapReader(stream, path)
    if head == PCAPNG_MAGIC:
        return PcapngReader(stream, path)
    stream.close()
    raise CaptureError(f"{path}: not a pcap or pcapng file (magic {head.hex()})", 0)
