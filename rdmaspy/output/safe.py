"""Text from a capture made safe for a terminal: control characters shown, never obeyed.

A capture is written by whoever sent its packets: an NFS file name, a CM private data string or a pcapng
comment may hold escape sequences (which recolour, move the cursor, retitle the window or worse), a
bell, a carriage return that overwrites the line, or a newline that forges one.  Every C0 control,
DEL and C1 control is printed as an escape (``\\x1b``, ``\\n``, ``\\x9b``) instead.  JSON escapes them
by itself; this is for text.
"""
from __future__ import annotations

import re

from ..typenames import Final

# The unsafe in UTF-8 text: C0 controls and DEL (single bytes), and the C1 controls U+0080-U+009F (0xC2 and
# a second byte 0x80-0x9F; "§" is 0xC2 0xA7).  A block is checked by deleting the first and searching for the
# second, both in C at a few instructions a byte (one alternation of both costs ten times as much).
_C0_DEL: Final = bytes(range(32)) + b"\x7f"
# The patterns are compiled where they are used, the first time by re (some 270,000 instructions each: re's
# parser is Python), then found in re's own cache: most runs meet no unsafe character and compile none.
_C1_BYTES: Final = rb"\xc2[\x80-\x9f]"
_UNSAFE_BYTES: Final = rb"[\x00-\x1f\x7f]|\xc2[\x80-\x9f]"
_UNSAFE_TEXT: Final = r"[\x00-\x1f\x7f-\x9f]"
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
    if text.isprintable():          # C0 controls, DEL and C1 controls are not printable
        return text
    unsafe = re.compile(_UNSAFE_TEXT)
    return unsafe.sub(_text_escape, text) if unsafe.search(text) else text


def safe_lines(lines: list[bytes]) -> list[bytes]:
    """Lines of UTF-8 (without their newlines) made safe; the same list when nothing in them is unsafe.
    Two passes over all of them in C for the common case, a regular expression a line only when one of
    them holds something unsafe."""
    joined = b"".join(lines)
    if len(joined.translate(None, _C0_DEL)) == len(joined) and (
            b"\xc2" not in joined or re.compile(_C1_BYTES).search(joined) is None):   # "in": memchr, then the search
        return lines
    unsafe = re.compile(_UNSAFE_BYTES)
    sub = unsafe.sub
    return [sub(_bytes_escape, line) if unsafe.search(line) else line for line in lines]


def safe_block(data: bytes, lines: list[str]) -> bytes:
    """``lines`` joined by newlines and encoded (``data``), made safe: ``data`` itself when no line holds a
    control character, else each line made safe alone.  One pass: deleting every C0 control and DEL takes
    exactly the joins away when nothing else is there (a line's own newline is one more)."""
    if (len(data.translate(None, _C0_DEL)) == len(data) - len(lines) + 1
            and (b"\xc2" not in data or re.compile(_C1_BYTES).search(data) is None)):
        return data
    return b"\n".join(safe_lines([line.encode() for line in lines]))
