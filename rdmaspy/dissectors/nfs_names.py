"""File names of NFS file handles, learnt from the capture (Wireshark's name snooping, on by default).

A handle carries no name; the operations that return one do, beside it: a LOOKUP's reply gives the handle
of the name its call asked for in a directory, a CREATE's (MKDIR, SYMLINK, MKNOD) the new object's,
a READDIRPLUS reply an entry's handle beside its name, a MOUNT reply the export's root.  ``NameMap`` keeps
handle -> (directory's handle, name), bound as the replies come, in capture order; a handle's full name
is its directories' names walked up to a root (a MOUNT's export, NFSv4's root "/").  The NFS layer
shows ``nfs.name`` and ``nfs.full_name`` beside every handle the map knows (nfs3.FileHandle).

What a call names is kept on the call (``RpcInfo.call_facts``, carried to the reply by the RPC call
table) as a plain tuple, the reply binds it: ``("dirop", dir, name)`` (the reply's handle is ``name``
in ``dir``), ``("dir", dir)`` (READDIRPLUS: each entry is in ``dir``), ``("link", file, dir, name)``,
``("rename", from dir, from name, to dir, to name)``, ``("root", path)`` (MOUNT), and for an NFSv4
COMPOUND its plan (``nfs4_plan``): the current handle followed through the operations.

The map is state across packets: bounded (``limit`` handles, the oldest forgotten first) and charged
to the memory budget.  A handle is named from the frame that bound it on (``of`` is given the frame
being shown, a handle keeps its last three names): a packet filled late shows what was known when it
went by.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

from mypy_extensions import mypyc_attr

from ..budget import Budget, Holder
from ..session import Session

_ENTRY_COST: Final = 160      # an entry's dict slots, tuple and key, beside its handle's and name's bytes
_MAX_DEPTH: Final = 256       # directories walked up for a full name at most (a loop is not followed)

Lookup = Callable[[bytes], "tuple[str | None, str | None]"]


# A handle's entry: (directory's handle or None for a root, name, frame bound, the entry it replaced or None)
Entry = tuple


@mypyc_attr(serializable=True, allow_interpreted_subclasses=True)
class NameMap(Holder):
    """handle -> its entry (``Entry``: the names it had, newest first, each with the frame that gave
    it); (directory, name) -> handle, for a RENAME."""

    __slots__ = ("by_fh", "by_name", "limit", "budget")

    def __init__(self, limit: int = 1 << 20, budget: Budget | None = None) -> None:
        self.by_fh: dict[bytes, Entry] = {}
        self.by_name: dict[tuple, bytes] = {}
        self.limit = limit
        self.name = "NFS file names"
        self.held = 0
        self.budget = budget
        if budget is not None:
            budget.join(self)

    def bind(self, fh: bytes, parent: bytes | None, name: str, frame: int, keep: bool = False) -> None:
        """``fh`` is ``name`` in ``parent`` (None: a root named ``name``) from ``frame`` on.  The last name
        a reply gives a handle is its name, as in Wireshark; ``keep``: unless it has one (a hard link's
        second name)."""
        if not fh:
            return
        old = self.by_fh.get(fh)
        if old is not None:
            if keep or (old[0] == parent and old[1] == name):
                return          # known since an earlier frame: named from there on
            if old[0] is not None and self.by_name.get((old[0], old[1])) == fh:
                del self.by_name[(old[0], old[1])]
            if old[3] is not None and old[3][3] is not None:     # three names of a handle kept at most
                old = (old[0], old[1], old[2], (old[3][0], old[3][1], old[3][2], None))
                self._release(_cost(fh, "") + len(name))
        self._put(fh, (parent, name, frame, old))

    def rename(self, from_dir: bytes, from_name: str, to_dir: bytes, to_name: str, frame: int) -> None:
        """The handle named ``from_name`` in ``from_dir`` is ``to_name`` in ``to_dir`` from ``frame`` on."""
        fh = self.by_name.get((from_dir, from_name))
        if fh is not None:
            self.bind(fh, to_dir, to_name, frame)

    def _put(self, fh: bytes, entry: Entry) -> None:
        by_fh = self.by_fh
        if fh in by_fh:
            del by_fh[fh]                # to the end: the oldest named is forgotten first
        by_fh[fh] = entry
        if entry[0] is not None:
            self.by_name[(entry[0], entry[1])] = fh
        if self.budget is not None:
            self.budget.charge(self, _cost(fh, entry[1]))
        if len(by_fh) > self.limit:
            self._drop(next(iter(by_fh)))

    def _drop(self, fh: bytes) -> None:
        entry = self.by_fh.pop(fh, None)
        if entry is None:
            return
        if entry[0] is not None and self.by_name.get((entry[0], entry[1])) == fh:
            del self.by_name[(entry[0], entry[1])]
        cost = 0
        while entry is not None:
            cost += _cost(fh, entry[1])
            entry = entry[3]
        self._release(cost)

    def _release(self, n: int) -> None:
        if self.budget is not None:
            self.budget.release(self, n)

    def shed(self, need: int) -> int:
        """Memory budget: forget the oldest names (their handles are shown without one)."""
        n = 0
        before = self.held
        for fh in list(self.by_fh):
            if before - self.held >= need:
                break
            self._drop(fh)
            n += 1
        return n

    def _at(self, fh: bytes, frame: int) -> Entry | None:
        entry = self.by_fh.get(fh)
        while entry is not None and entry[2] > frame:
            entry = entry[3]
        return entry

    def of(self, fh: bytes, frame: int) -> tuple[str | None, str | None]:
        """The name and full name of ``fh`` as known at ``frame`` (None where not known)."""
        entry = self._at(fh, frame)
        if entry is None:
            return None, None
        name = entry[1]
        parts = [name]
        seen = {fh}
        parent = entry[0]
        while parent is not None:
            up = self._at(parent, frame)
            if up is None or parent in seen or len(parts) > _MAX_DEPTH:
                return name, None      # a directory not named yet: no full name (as Wireshark)
            seen.add(parent)
            parts.append(up[1])
            parent = up[0]
        full = parts[-1]
        for part in reversed(parts[:-1]):
            full = full + part if full.endswith("/") else full + "/" + part
        return name, full

    def lookup(self, frame: int) -> Lookup:
        """``of`` for one frame (what a walk filling that frame's tree is given)."""
        def names(fh: bytes) -> tuple[str | None, str | None]:
            return self.of(fh, frame)
        return names


def _cost(fh: bytes, name: str) -> int:
    return _ENTRY_COST + 2 * len(fh) + len(name)


def names_of(ctx: Any) -> NameMap | None:
    """The session's name map, charged to its memory budget (None outside a session: bytes decoded
    alone)."""
    if not isinstance(ctx, Session):
        return None
    names: NameMap | None = ctx.state.get("nfs.names")
    if names is None:
        names = ctx.state["nfs.names"] = NameMap(budget=ctx.budget)
    return names


# --- what a call names, from its decoded arguments; what its reply binds, from its decoded results ------
def _dirop(d: Any) -> tuple:
    return ("dirop", d["dir"], d["name"])


def _where(key: str) -> Callable[[Any], tuple]:
    return lambda args: _dirop(args[key])


def _rename(args: Any) -> tuple:
    return ("rename", args["from"]["dir"], args["from"]["name"], args["to"]["dir"], args["to"]["name"])


def _link3(args: Any) -> tuple:
    return ("link", args["file"], args["link"]["dir"], args["link"]["name"])


def _link2(args: Any) -> tuple:
    return ("link", args["from"], args["to"]["dir"], args["to"]["name"])


# (version, procedure) -> what the call keeps from its arguments
V3_CALLS: Final[dict[int, Callable[[Any], tuple]]] = {
    3: _where("what"), 8: _where("where"), 9: _where("where"), 10: _where("where"), 11: _where("where"),
    14: _rename, 15: _link3, 17: lambda args: ("dir", args["dir"]),
}
V2_CALLS: Final[dict[int, Callable[[Any], tuple]]] = {
    4: _dirop, 9: _where("where"), 14: _where("where"), 11: _rename, 12: _link2,
}


def v3_object(res: Any) -> bytes | None:
    """The handle a successful LOOKUP3res or diropres3 (CREATE, MKDIR, SYMLINK, MKNOD) returns."""
    ok = res[1]
    return ok.get("object", ok.get("obj"))


def bind_reply(names: NameMap, kept: tuple, res: Any, frame: int, entries: str = "entries",
               handle: Callable[[Any], bytes | None] = v3_object) -> None:
    """A successful reply (``res``: its decoded union, status 0) binds what its call kept."""
    kind = kept[0]
    if kind == "dirop":
        fh = handle(res)
        if fh is not None:
            names.bind(fh, kept[1], kept[2], frame)
    elif kind == "dir":
        for entry in res[1][entries]:
            fh = entry.get("name_handle")
            if fh is not None and entry["name"] not in (".", ".."):
                names.bind(fh, kept[1], entry["name"], frame)
    elif kind == "link":
        names.bind(kept[1], kept[2], kept[3], frame, keep=True)
    elif kind == "rename":
        names.rename(kept[1], kept[2], kept[3], kept[4], frame)


def v2_object(res: Any) -> bytes | None:
    return res[1]["file"]


def mount_root(names: NameMap, kept: tuple, res: Any, frame: int) -> None:
    """A MOUNT MNT reply: its handle is the root of the export its call named (``server:path``, as
    Wireshark names it)."""
    ok = res[1]
    fh = ok["fhandle"] if isinstance(ok, dict) else ok
    if isinstance(fh, bytes):
        names.bind(fh, None, kept[1], frame)
