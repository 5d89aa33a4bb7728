"""Dispatch tables through which dissectors find each other.

As in Wireshark, a dissector registers itself into a named table under a key
(``udp.port`` 4791, ``ethertype`` 0x8915, ``linktype`` 247); the dissector below
looks the key up and hands over the rest of the bytes.  Tables may also hold
heuristic dissectors, tried in order when no key matches.  A new protocol is a
new module in ``rdmaspy.dissectors`` that registers itself on import.
"""
from __future__ import annotations

from .packet import Packet
from .typenames import Any, Callable, Final, Iterable, mypyc_attr

# The function a dissector is: (pkt, buf, off, end, ctx); a heuristic's or a fast path's result says
# whether it took the bytes.  Plain callables: some take further keyword arguments.
DissectorFunction = Callable[..., object]


@mypyc_attr(serializable=True, allow_interpreted_subclasses=True)
class Dissector:
    """What a table holds: a dissector function, called through ``dissect``.

    Compiled, a function taken from a table is called generically (its arguments boxed and parsed
    again, some 400 instructions a call); a method of this compiled class is called directly.  A
    module whose dissector is on the per-packet path registers a subclass whose ``dissect`` calls its
    function by name, so that the call is direct too; any other function is wrapped in this class.
    The result says whether the bytes were taken (heuristics, fast paths); a dissector's is ignored.
    """

    __slots__ = ("fn",)

    def __init__(self, fn: DissectorFunction) -> None:
        self.fn = fn

    def dissect(self, pkt: Packet, buf: bytes, off: int, end: int, ctx: Any) -> bool:
        return bool(self.fn(pkt, buf, off, end, ctx))

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {getattr(self.fn, '__qualname__', self.fn)!r}>"


def as_dissector(fn: Dissector | DissectorFunction) -> Dissector:
    """``fn`` as a table holds it."""
    return fn if isinstance(fn, Dissector) else Dissector(fn)


@mypyc_attr(serializable=True, allow_interpreted_subclasses=True)
class DissectorTable:
    __slots__ = ("name", "label", "by_key", "heuristics")

    def __init__(self, name: str, label: str = "") -> None:
        self.name = name
        self.label = label or name
        self.by_key: dict[Any, Dissector] = {}
        self.heuristics: list[tuple[str, Dissector]] = []

    def register(self, key: Any, dissector: Dissector | DissectorFunction) -> None:
        d = as_dissector(dissector)
        old = self.by_key.get(key)
        if old is not None and old.fn is not d.fn:
            raise ValueError(f"{self.name}: {key!r} is registered already")
        self.by_key[key] = d

    def unregister(self, key: Any) -> Dissector | None:
        """Take the dissector under ``key`` out of the table (tests put their own in its place)."""
        return self.by_key.pop(key, None)

    def add_heuristic(self, name: str, heuristic: Dissector | DissectorFunction, first: bool = False) -> None:
        """Try ``heuristic`` after the others, or before them with ``first``."""
        entry = (name, as_dissector(heuristic))
        if first:
            self.heuristics.insert(0, entry)
        else:
            self.heuristics.append(entry)

    def get(self, key: Any) -> Dissector | None:
        return self.by_key.get(key)

    def __repr__(self) -> str:
        return f"<DissectorTable {self.name}: {len(self.by_key)} keys, {len(self.heuristics)} heuristics>"


TABLES: Final[dict[str, DissectorTable]] = {}


def table(name: str, label: str = "") -> DissectorTable:
    """The table called ``name``, created on first use."""
    t = TABLES.get(name)
    if t is None:
        t = TABLES[name] = DissectorTable(name, label)
    return t


def dissect_with(tab: DissectorTable, key: Any, pkt: Packet, buf: bytes, off: int, end: int, ctx: Any) -> bool:
    """Hand ``buf[off:end]`` to the dissector registered under ``key``, else to the heuristics.

    Returns False (and records the bytes as ``data``) when nothing took them.
    """
    fn = tab.by_key.get(key)
    if fn is not None:
        fn.dissect(pkt, buf, off, end, ctx)
        return True
    for _name, heur in tab.heuristics:
        if heur.dissect(pkt, buf, off, end, ctx):
            return True
    if end > off:
        add_data(pkt, buf, off, end)
    return False


def try_heuristics(tab: DissectorTable, pkt: Packet, buf: bytes, off: int, end: int, ctx: Any) -> bool:
    for _name, heur in tab.heuristics:
        if heur.dissect(pkt, buf, off, end, ctx):
            return True
    return False


# --- decode as: upper layers bound to a key (an RDMA-CM port) by the user ----------------------------------
# Upper layer name -> the (table, dissector) pairs that bind it: its payloads and its connection setup data.
ULPS: Final[dict[str, list[tuple[str, Dissector]]]] = {}
# (table, key) -> what held the key before the user bound it (None: nothing), to undo decode_as
_REBOUND: Final[dict[tuple[str, Any], Dissector | None]] = {}


def declare_ulp(name: str, bindings: list[tuple[str, Dissector]]) -> None:
    """Declare an upper layer a user may bind to another key (``--decode-as PORT=name``): the tables it sits
    in by key and its dissector in each."""
    ULPS[name] = bindings


def decode_as(key: Any, name: str) -> None:
    """Bind the upper layer ``name`` to ``key`` in each of its tables, in place of what held it (KeyError for
    a name never declared)."""
    for tab_name, dissector in ULPS[name]:
        tab = table(tab_name)
        if (tab_name, key) not in _REBOUND:
            _REBOUND[(tab_name, key)] = tab.by_key.get(key)
        tab.by_key[key] = dissector


def reset_decode_as() -> None:
    """Undo every ``decode_as``: the tables as the dissectors registered them."""
    for (tab_name, key), old in _REBOUND.items():
        tab = table(tab_name)
        if old is None:
            tab.by_key.pop(key, None)
        else:
            tab.by_key[key] = old
    _REBOUND.clear()


# The dissector of bytes nothing else takes, registered under "data" by dissectors/data.py (which the
# dissectors package loads first).
fallback: Final = table("data", "Undissected bytes")


def add_data(pkt: Packet, buf: bytes, off: int, end: int) -> None:
    """Record undissected bytes as a ``data`` layer (the data "protocol" is a dissector like any other)."""
    fallback.by_key["data"].dissect(pkt, buf, off, end, None)


def import_all(package: Any, skip: tuple[str, ...] = ()) -> None:
    """Import every module of ``package`` in name order: for dissectors and analysis modules,
    importing is registering."""
    import importlib
    import sys
    loaded = sys.modules
    for name in module_names(package.__path__):
        module = f"{package.__name__}.{name}"
        # one already imported (those engine.load_dissectors names) is not looked up by importlib's Python
        if name not in skip and module not in loaded:
            importlib.import_module(module)


def module_names(paths: Iterable[str]) -> list[str]:
    """The modules in the directories ``paths``, in name order, as ``pkgutil.iter_modules`` finds them: each
    file's module name (``inspect.getmodulename``), each directory holding an ``__init__`` module.  Without
    pkgutil's import, and a stat for a directory's ``__init__`` where pkgutil lists the directory (the
    ``__pycache__``): a third of the cost, paid at every start."""
    import os
    from importlib.machinery import all_suffixes
    suffixes = sorted(all_suffixes(), key=len, reverse=True)     # the longest first, as getmodulename tries them
    found: set[str] = set()
    for path in paths:
        try:
            entries = os.listdir(path)
        except OSError:
            continue
        for entry in entries:
            name = _module_name(entry, suffixes)
            if name is None:
                if "." in entry or not _is_package(os.path.join(path, entry), suffixes):
                    continue
                name = entry
            if name and name != "__init__" and "." not in name:
                found.add(name)
    return sorted(found)


def _module_name(filename: str, suffixes: list[str]) -> str | None:
    """The module a file is (its name without the first of ``suffixes`` it ends with), None: none."""
    for suffix in suffixes:
        if filename.endswith(suffix):
            return filename[:-len(suffix)]
    return None


def _is_package(path: str, suffixes: list[str]) -> bool:
    """Whether the directory ``path`` holds an ``__init__`` module (False: not a directory)."""
    import os
    for suffix in suffixes:
        if os.path.exists(os.path.join(path, "__init__" + suffix)):
            return True
    return False
