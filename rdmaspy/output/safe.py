"""Text from a capture made safe for a terminal: control characters shown, never obeyed.

A capture is written by whoever sent its packets: an NFS file name, a CM private data string or a pcapng
comment may hold escape sequences (which recolour, move the cursor, retitle the window or worse), a
bell, a carriage return that overwrites the line, or a newline that forges one.  Every C0 control,
DEL and C1 control is printed as an escape (``\\x1b``, ``\\n``, ``\\x9b``) instead.  JSON escapes them
by itself; this is for text.
"""
from __future__ import annotations

import re
from typing import Final

# Bytes of UTF-8 text that may start something unsafe: C0 controls, DEL, and 0xC2, the lead byte of the
# C1 controls U+0080-U+009F (and of harmless characters such as "§", which the slow path lets through).
_SUSPECT: Final = bytes(range(32)) + b"\x7f\xc2"
_UNSAFE_BYTES: Final = re.compile(rb"[\x00-\x1f\x7f]|\xc2[\x80-\x9f]")
_UNSAFE_TEXT: Final = re.compile(r"[\x00-\x1f\x7f-\x9f]")
_NAMED: Final = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _text_escape(m: re.Match[str]) -> str:
    c = m.group()
    return _NAMED.get(c) or f"\\x{ord(c):02x}"


def _bytes_escape(m: re.Match[bytes]) -> bytes:
    raw = m.group()
    c = raw.decode("utf-8")
    return (_NAMED.get(c) or f"\\x{ord(c):02x}").encode()


def safe_text(text: str) -> str:
    """``text`` with every control character shown as an escape."""
    return _UNSAFE_TEXT.sub(_text_escape, text) if _UNSAFE_TEXT.search(text) else text


def safe_lines(lines: list[bytes]) -> list[bytes]:
    """Lines of UTF-8 (without their newlines) made safe; the same list when nothing in them is unsafe.
    One pass over all of them in C for the common case, a regular expression only when it finds a
    suspect byte."""
    joined = b"".join(lines)
    if len(joined.translate(None, _SUSPECT)) == len(joined):
        return lines
    sub = _UNSAFE_BYTES.sub
    return [sub(_bytes_escape, line) if _UNSAFE_BYTES.search(line) else line for line in lines]
