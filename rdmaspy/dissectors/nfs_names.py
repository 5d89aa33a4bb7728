"""File names of NFS file handles, learnt from the capture (Wireshark's name snooping, on by default).

A handle carries no name; the operations that return one do, beside it: a LOOKUP's reply gives the handle
of the name its call asked for in a directory, a CREATE's (MKDIR, SYMLINK, MKNOD) the new object's,
a READDIRPLUS reply an entry's handle beside its name, a MOUNT reply the export's root, an NFSv4
COMPOUND's GETFH the handle of the name its LOOKUP, OPEN or CREATE gave.  ``NameMap`` keeps
handle -> (directory's handle, name), bound as the replies come, in capture order; a handle's full name
is its directories' names walked up to a root (a MOUNT's export, NFSv4's root "/").  The NFS layer
shows ``nfs.name`` and ``nfs.full_name`` beside every handle the map knows (nfs3.FileHandle).

What a call names is kept on the call (``RpcInfo.call_facts``, carried to the reply by the RPC call
table) as a plain tuple, the reply binds it: ``("dirop", dir, name)`` (the reply's handle is ``name``
in ``dir``), ``("dir", dir)`` (READDIRPLUS: each entry is in ``dir``), ``("link", file, dir, name)``,
``("rename", from dir, from name, to dir, to name)``, ``("root", path)`` (MOUNT), and for an NFSv4
COMPOUND its plan (``V4Call``: the current handle followed through the operations, the names bound when
the reply's GETFHs give the handles, ``v4_bind``).

The map is state across packets: bounded (``limit`` handles, the oldest forgotten first) and charged
to the memory budget.  A handle is named from the frame that bound it on (``of`` is given the frame
being shown, a handle keeps its last three names): a packet filled late shows what was known when it
went by.
"""
from __future__ import annotations

from collections.abc import Callable

from ..budget import Budget, Holder
from ..session import Session
from ..typenames import Any, Final, mypyc_attr

_ENTRY_COST: Final = 160      # an entry's dict slots, tuple and key, beside its handle's and name's bytes
_MAX_DEPTH: Final = 256       # directories walked up for a full name at most (a loop is not followed)

Lookup = Callable[[bytes], "tuple[str | None, str | None]"]


# A handle's entry: (directory's handle or None for a root, name, frame bound, the entry it replaced or None)
Entry = tuple


@mypyc_attr(serializable=True, allow_interpreted_subclasses=True)
class NameMap(Holder):
    """handle -> its entry (``Entry``: the names it had, newest first, each with the frame that gave
    it); (directory, name) -> handle, for a RENAME."""

    __slots__ = ("by_fh", "by_name", "root", "limit", "budget")

    def __init__(self, limit: int = 1 << 20, budget: Budget | None = None) -> None:
        self.by_fh: dict[bytes, Entry] = {}
        self.by_name: dict[tuple, bytes] = {}
        self.root: bytes | None = None       # NFSv4's root handle, once a PUTROOTFH's GETFH gave it
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
        name: str = entry[1]
        parts: list[str] = [name]
        seen = {fh}
        parent = entry[0]
        while parent is not None:
            up = self._at(parent, frame)
            if up is None or parent in seen or len(parts) > _MAX_DEPTH:
                return name, None      # a directory not named yet: no full name (as Wireshark)
            seen.add(parent)
            up_name: str = up[1]
            parts.append(up_name)
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
    alone; and where no sink fills a layer nor a filter reads one: summary lines)."""
    if not isinstance(ctx, Session) or not ctx.names:
        return None     # outside a session, or nothing will show a name (Session.names)
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


# The members the readers here take from an NFSv3 call's or reply's value (V3_CALLS, bind_reply): the walk
# for the names reads these alone and steps over the rest (xdrlang's ``pick``)
V3_KEYS: Final = frozenset(("what", "where", "from", "to", "file", "link", "dir", "name", "object", "obj",
                            "entries", "name_handle"))

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


# --- NFSv4: the current handle followed through a COMPOUND ---------------------------------------------
# Operations whose arguments the call's plan reads (the others count by their number alone)
V4_CALL_VALUES: Final = frozenset((6, 11, 15, 18, 22, 26, 29))
# Operations that make the current handle one the plan cannot name: LOOKUPP, OPENATTR, PUTPUBFH, SECINFO,
# SECINFO_NO_NAME (these two consume it)
_V4_UNKNOWN: Final = frozenset((16, 19, 23, 33, 52))
# OPEN's claims that name a file in the current directory: CLAIM_NULL, CLAIM_DELEGATE_CUR, _PREV
_NAMED_CLAIMS: Final = frozenset((0, 2, 3))
_FATTR4_FILEHANDLE_BIT: Final = 1 << 19
# The members V4Call.op reads from a call's operations, and v4_bind from the replies' GETFH and READDIR
# (a READDIR entry's attributes read up to its filehandle, xdrlang's and AttrSet's ``pick``)
V4_CALL_KEYS: Final = frozenset(("object", "objname", "claim", "file", "attr_request", "newname", "oldname"))
V4_REPLY_KEYS: Final = frozenset(("object", "reply", "entries", "name", "attrs", "filehandle"))


class V4Call:
    """A COMPOUND call's operations in order: which handle is current after each (a node: a handle a
    PUTFH gives, the root, a name in the node before it, ``nodes``), and what the reply will tell
    (``actions``, by operation index: a GETFH's handle for the current node, a READDIR's entries in it,
    a LINK, a RENAME).  ``plan()`` is what the call keeps for its reply."""

    __slots__ = ("nodes", "actions", "cur", "saved", "named")

    def __init__(self) -> None:
        self.nodes: list[tuple] = []
        self.actions: list[tuple] = []
        self.cur = -1           # the current handle's node; -1: none the plan can name
        self.saved = -1
        self.named = False      # a name, a root, a link or a rename is in it (else nothing to keep)

    def _node(self, node: tuple) -> int:
        self.nodes.append(node)
        return len(self.nodes) - 1

    def _name(self, name: str) -> None:
        self.cur = self._node(("name", self.cur, name)) if self.cur >= 0 else -1
        self.named = self.named or self.cur >= 0

    def op(self, i: int, op: int, v: Any) -> None:
        """Operation ``i``, number ``op``, its arguments ``v`` (for V4_CALL_VALUES, None if they could
        not be read; else None)."""
        if v is None and op in V4_CALL_VALUES:
            self.cur = -1
            return
        if op == 22:                                    # PUTFH
            self.cur = self._node(("fh", v["object"]))
        elif op == 24:                                  # PUTROOTFH
            self.cur = self._node(("root",))
            self.named = True
        elif op == 15 or op == 6:                       # LOOKUP, CREATE
            self._name(v["objname"])
        elif op == 18:                                  # OPEN
            d, claim = v["claim"]
            if d in _NAMED_CLAIMS:
                self._name(claim["file"] if isinstance(claim, dict) else claim)
        elif op == 10:                                  # GETFH
            if self.cur >= 0:
                self.actions.append((i, "getfh", self.cur))
        elif op == 32:                                  # SAVEFH
            self.saved = self.cur
        elif op == 31:                                  # RESTOREFH
            self.cur = self.saved
        elif op == 26:                                  # READDIR: its entries' handles, if asked for
            words = v["attr_request"]
            if self.cur >= 0 and words and words[0] & _FATTR4_FILEHANDLE_BIT:
                self.actions.append((i, "readdir", self.cur))
                self.named = True
        elif op == 11:                                  # LINK: the saved file, named in the current dir
            if self.saved >= 0 and self.cur >= 0:
                self.actions.append((i, "link", self.saved, self.cur, v["newname"]))
                self.named = True
        elif op == 29:                                  # RENAME: saved dir's old name, current dir's new
            if self.saved >= 0 and self.cur >= 0:
                self.actions.append((i, "rename", self.saved, v["oldname"], self.cur, v["newname"]))
                self.named = True
        elif op in _V4_UNKNOWN:
            self.cur = -1

    def plan(self) -> tuple | None:
        if not self.named:
            return None
        return ("v4", tuple(self.nodes), tuple(self.actions))


def v4_wanted(plan: tuple) -> frozenset[int]:
    """The operations of the reply whose results the plan reads (GETFH, READDIR)."""
    return frozenset(a[0] for a in plan[2] if a[1] == "getfh" or a[1] == "readdir")


def v4_bind(names: NameMap, plan: tuple, results: dict[int, Any], ok: int, frame: int) -> None:
    """A COMPOUND's reply: ``results`` of the wanted operations by index, ``ok`` operations done.
    Each node gets its handle (a PUTFH's, a GETFH's, the root's); each name whose handle and
    directory's handle are known is bound; then the READDIR entries, LINKs and RENAMEs done."""
    nodes: tuple = plan[1]
    actions: tuple = plan[2]
    fh_of: dict[int, bytes] = {}
    for i, node in enumerate(nodes):
        if node[0] == "fh":
            fh_of[i] = node[1]
    for act in actions:
        if act[0] < ok and act[1] == "getfh":
            got = results.get(act[0])
            if got is not None:
                fh_of[act[2]] = got["object"]
    for i, node in enumerate(nodes):
        kind = node[0]
        if kind == "root":
            fh = fh_of.get(i)
            if fh is not None:
                names.bind(fh, None, "/", frame)
                names.root = fh
            elif names.root is not None:
                fh_of[i] = names.root
        elif kind == "name":
            fh = fh_of.get(i)
            parent = fh_of.get(node[1])
            if fh is not None and parent is not None:
                names.bind(fh, parent, node[2], frame)
    for act in actions:
        if act[0] >= ok:
            break
        kind = act[1]
        if kind == "readdir":
            d = fh_of.get(act[2])
            res = results.get(act[0])
            if d is not None and res is not None:
                for entry in res["reply"]["entries"]:
                    fh = entry["attrs"].get("filehandle")
                    if fh is not None:
                        names.bind(fh, d, entry["name"], frame)
        elif kind == "link":
            fh, d = fh_of.get(act[2]), fh_of.get(act[3])
            if fh is not None and d is not None:
                names.bind(fh, d, act[4], frame, keep=True)
        elif kind == "rename":
            src, dst = fh_of.get(act[2]), fh_of.get(act[4])
            if src is not None and dst is not None:
                names.rename(src, act[3], dst, act[5], frame)
