"""The TUI's helper processes, as the app sees them: starting one, and the messages it sends.

A helper (``worker.py``) works on a capture file beside the app, on the machine's other core; it
tells the app what it has done on its standard output, as messages: a kind byte, the payload's length
(4 bytes, little-endian) and the payload.
"""
from __future__ import annotations

import os
import struct
import subprocess
import sys
from typing import IO, Iterable, Iterator

COUNT = b"C"        # rows: rows written (8 bytes) and how far into the file (a double), little-endian
PROTOCOL = b"N"     # rows: the name of the next protocol number
ROWS = b"R"         # filter: row numbers (0-based) shown, 4 bytes each
SCANNED = b"S"      # filter: the frames read (8 bytes, little-endian), at the end
ERROR = b"E"        # the capture cannot be read (a sentence)
END = b"D"          # the work is done; the helper's peak memory (VmHWM, KiB: 8 bytes, little-endian)

_HEAD = struct.Struct("<cI")
_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def start(*args: str, pass_fds: Iterable[int] = ()) -> subprocess.Popen[bytes]:
    """Start a helper on this interpreter and this rdmaspy; its messages come on its ``stdout``."""
    path = os.environ.get("PYTHONPATH")
    env = {**os.environ, "PYTHONPATH": _ROOT if not path else _ROOT + os.pathsep + path}
    # -P: not the current directory first (a checkout there would be imported in place of this rdmaspy,
    # the compiled one say); the directory this one comes from is first on PYTHONPATH instead
    return subprocess.Popen([sys.executable, "-P", "-m", "rdmaspy.tui.worker", *args], stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, pass_fds=tuple(pass_fds),
                            env=env)


def messages(stream: IO[bytes]) -> Iterator[tuple[bytes, bytes]]:
    """A helper's messages, (kind, payload), until its output ends."""
    while True:
        head = stream.read(_HEAD.size)
        if len(head) < _HEAD.size:
            return
        kind, length = _HEAD.unpack(head)
        payload = stream.read(length) if length else b""
        if len(payload) < length:
            return
        yield kind, payload


class Out:
    """The helper's side: sends messages on its standard output."""

    def __init__(self) -> None:
        self.stream = sys.stdout.buffer

    def send(self, kind: bytes, payload: bytes = b"") -> None:
        self.stream.write(_HEAD.pack(kind, len(payload)) + payload)
        self.stream.flush()
