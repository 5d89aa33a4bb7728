"""The time column of summary lines in tshark's ``-t`` formats.

r: seconds since the first frame (the default); d: since the previous captured frame; dd: since the
previous displayed frame; e: seconds since the epoch; a / ad: local time of day (with the date);
u / ud: the same in UTC.  Microseconds, as the summary lines print them.
"""
from __future__ import annotations

import time

from ..typenames import Final

FORMATS: Final = ("a", "ad", "d", "dd", "e", "r", "u", "ud")
HELP: Final = ("time format of the summary lines, as tshark -t: r since the first frame (default), d since the "
               "previous captured frame, dd since the previous displayed frame, e epoch seconds, a local time, "
               "ad local date and time, u UTC time, ud UTC date and time")


def _seconds(ns: int) -> str:
    """Nanoseconds as seconds with six decimals, rounded as %.6f rounds, for any size and sign."""
    us = (abs(ns) + 500) // 1000
    return f"{'-' if ns < 0 and us else ''}{us // 1_000_000}.{us % 1_000_000:06d}"


class Clock:
    """Makes the time column for each shown packet, in one of ``FORMATS``."""

    __slots__ = ("fmt", "_shown")

    def __init__(self, fmt: str) -> None:
        if fmt not in FORMATS:
            raise ValueError(f"time format {fmt!r}")
        self.fmt = fmt
        self._shown = -1               # timestamp of the previous displayed frame

    def column(self, ts: int, t0: int, t_prev: int) -> bytes:
        """The time of a frame at ``ts`` (ns); ``t0`` the first frame's, ``t_prev`` the previous captured
        frame's (-1: none).  Right-aligned in 12 columns, as the default column."""
        fmt = self.fmt
        if fmt == "r":
            text = _seconds(ts - t0)
        elif fmt == "d":
            text = _seconds(ts - t_prev if t_prev >= 0 else 0)
        elif fmt == "dd":
            text = _seconds(ts - self._shown if self._shown >= 0 else 0)
        elif fmt == "e":
            text = _seconds(ts)
        else:
            text = _wall(ts, fmt)
        self._shown = ts
        return b"%12s" % text.encode()


def _wall(ts: int, fmt: str) -> str:
    """The wall-clock time of ``ts`` (a, ad local; u, ud UTC); epoch seconds when the system calendar
    cannot place it (a timestamp centuries away)."""
    us = (ts + 500) // 1000
    sec, frac = divmod(us, 1_000_000)
    try:
        tm = time.gmtime(sec) if fmt.startswith("u") else time.localtime(sec)
    except (OverflowError, OSError, ValueError):
        return _seconds(ts)
    day = time.strftime("%Y-%m-%d ", tm) if fmt.endswith("d") else ""
    return f"{day}{time.strftime('%H:%M:%S', tm)}.{frac:06d}"
