"""One memory budget for the state kept across packets: reassembly in the dissectors, analysis.

A capture decides how much state rdmaspy keeps (open transactions, SEND fragments, chunk data,
queue pairs), so a hostile or merely huge capture could take all memory.  Each holder of such
state charges the budget as it adds and releases as it removes (byte counts kept on the way,
never a walk over the state); past the limit the budget asks the largest holders to give up their
oldest state until a quarter of the limit is free again, and keeps a notice of what went, which
the engine (or the analysis, when it runs) turns into a finding on the packet that crossed the
limit.  Decoding goes on.

The limit: ``--memory-budget`` on the command line, else ``RDMASPY_MEMORY_BUDGET``, else 256 MiB.
"""
from __future__ import annotations

import os

from .errors import RdmaspyError
from .records import record_eq, record_hash, record_repr
from .typenames import ClassVar, Final, mypyc_attr

DEFAULT_LIMIT: Final = 256 << 20
ENV: Final = "RDMASPY_MEMORY_BUDGET"
RULE: Final = "memory.budget"
SOURCE: Final = "rdmaspy --memory-budget (state kept across packets is bounded)"

_UNITS: Final = {"": 1, "b": 1, "k": 1 << 10, "kb": 1 << 10, "kib": 1 << 10, "m": 1 << 20, "mb": 1 << 20,
                 "mib": 1 << 20, "g": 1 << 30, "gb": 1 << 30, "gib": 1 << 30, "t": 1 << 40, "tb": 1 << 40,
                 "tib": 1 << 40}
_MINIMUM: Final = 1 << 20

_configured: int | None = None
# Memory kept back for the way out when an allocation fails: released at the first MemoryError so that
# what runs while the stack unwinds (generators closing, files flushing) has room to finish quietly.
# ``bytes(n)`` comes zeroed from calloc, pages the kernel maps when touched (never): charged to the address
# space and to the commit limit as a bytearray is, without a bytearray's zeroing (most of a millisecond).
_RESERVE_SIZE: Final = 2 << 20
_reserve: bytes | None = None


def arm_reserve() -> None:
    global _reserve
    if _reserve is None:
        _reserve = bytes(_RESERVE_SIZE)


def out_of_memory() -> None:
    """An allocation failed: give the reserve back (the caller raises the MemoryError on)."""
    global _reserve
    _reserve = None


def parse_size(text: str) -> int:
    """``"256M"``, ``"1g"``, ``"512KiB"``, ``"1048576"`` as a byte count (binary units)."""
    t = text.strip().lower().replace("_", "")
    num = t.rstrip("abcdefghijklmnopqrstuvwxyz")
    unit = t[len(num):]
    try:
        value = float(num)
    except ValueError:
        raise RdmaspyError(f"memory budget {text!r}: give a size such as 256M or 2G") from None
    if unit not in _UNITS or value != value:
        raise RdmaspyError(f"memory budget {text!r}: give a size such as 256M or 2G")
    size = int(value * _UNITS[unit])
    if size < _MINIMUM:
        raise RdmaspyError(f"memory budget {text!r}: at least 1M")
    return size


def configure(limit: int | None) -> None:
    """Set the limit for the budgets made from now on (the command line's ``--memory-budget``)."""
    global _configured
    _configured = limit


def default_limit() -> int:
    if _configured is not None:
        return _configured
    env = os.environ.get(ENV)
    if env:
        try:
            return parse_size(env)
        except RdmaspyError as exc:
            raise RdmaspyError(f"{ENV}: {exc}") from None
    return DEFAULT_LIMIT


@mypyc_attr(serializable=True, allow_interpreted_subclasses=True)
class Holder:
    """Something that keeps state across packets and can give up its oldest part.  A base class rather
    than a protocol: compiled, the budget then reads and updates ``held`` directly (through a protocol,
    each charge and release was generic attribute reads and writes, some 600 instructions)."""

    __slots__ = ("name", "held")

    name: str         # what the state is, for the finding: "SEND reassembly", "open RPC transactions"
    held: int         # bytes charged to the budget and not yet released

    def shed(self, need: int) -> int:
        """Give up the oldest state, at least ``need`` bytes' worth if there is that much (releasing
        it with ``Budget.release`` as always), and return the number of entries given up."""
        return 0


# Its ``__init__`` spelled out: mypyc 2.4 runs the standard ``@dataclass`` decorator on a compiled class at
# import (some 3 M instructions) and leaves it that decorator's ``__init__``, a Python function.  A budget's
# notices are in its state (the TUI's checkpoints): serializable, and so allowing interpreted subclasses (a
# class mypyc 2.4 makes serializable without it, made by interpreted code, runs no ``__init__``).
@mypyc_attr(serializable=True, allow_interpreted_subclasses=True)
class Notice:
    """State given up to stay within the budget.  Equal, and hashed, by its values."""

    _FIELDS: ClassVar[tuple[str, ...]] = ("what", "entries", "freed", "limit")
    __slots__ = _FIELDS

    def __init__(self, what: str, entries: int, freed: int, limit: int) -> None:
        self.what = what
        self.entries = entries
        self.freed = freed
        self.limit = limit

    def __repr__(self) -> str:
        return record_repr(self, self._FIELDS)

    def __eq__(self, other: object) -> bool:
        return record_eq(self, other, self._FIELDS)

    def __hash__(self) -> int:
        return record_hash(self, self._FIELDS)

    @property
    def text(self) -> str:
        return (f"memory budget of {self.limit >> 20} MiB reached: {self.entries} of the oldest {self.what} "
                f"given up ({self.freed >> 10} KiB); raise it with --memory-budget")


@mypyc_attr(serializable=True, allow_interpreted_subclasses=True)
class Budget:
    """The bytes all holders keep, against the limit."""

    __slots__ = ("limit", "used", "holders", "notices", "analysis_reports", "shed_count", "_shedding")

    def __init__(self, limit: int | None = None) -> None:
        self.limit = limit if limit is not None else default_limit()
        self.used = 0
        self.holders: list[Holder] = []
        self.notices: list[Notice] = []
        self.analysis_reports = False    # the analysis turns notices into findings (else the engine does)
        self.shed_count = 0
        self._shedding = False

    def join(self, holder: Holder) -> None:
        self.holders.append(holder)

    def charge(self, holder: Holder, n: int) -> None:
        holder.held += n
        self.used += n
        if self.used > self.limit and not self._shedding:
            self.shed()

    def release(self, holder: Holder, n: int) -> None:
        if n > holder.held:
            n = holder.held
        holder.held -= n
        self.used -= n

    def shed(self) -> None:
        """Give up the oldest state, largest holders first, until a quarter of the limit is free."""
        target = self.limit - self.limit // 4
        self._shedding = True
        try:
            for holder in sorted(self.holders, key=lambda h: h.held, reverse=True):
                if self.used <= target:
                    break
                before = holder.held
                entries = holder.shed(self.used - target)
                if entries:
                    self.shed_count += 1
                    self.notices.append(Notice(holder.name, entries, before - holder.held, self.limit))
        finally:
            self._shedding = False

    def take_notices(self) -> list[Notice]:
        out = self.notices
        self.notices = []
        return out
