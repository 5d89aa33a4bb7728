"""The upper layers over RDMA as the analysis' presentations know them, each declared once.

Every upper layer whose transactions the analysis follows (RPC-over-RDMA, NVMe/RDMA; iSER and SMB
Direct would be the same) fills the same records (``model.Transaction``, ``Segment``, ``Step``,
``CreditSample``) and keeps what is its own in its ``Facts``.  Here it declares, in a ``UlpModel``,
what a presentation needs to show them without a line of its own per protocol:

- its name and label, the name of its key (XID, CID) and how many hexadecimal digits it takes;
- its words for the request and the response ("call"/"reply", "command"/"completion"), for the places
  memory is advertised in ("Read chunk", "SGL") and for a Send ending a transaction after its response
  (RPC-over-RDMA's RDMA_DONE);
- its facts (``Fact``): each typed (the export's column type), labelled, where it stands in a
  transaction's JSON object (``path``, dotted: ``"call.proc"``, ``"nvme.opcode"``) and under which
  column name the export's transactions table carries it;
- the name of a transaction's operation ("NFSv3 READ", "Read"), what a view titles it ("Procedure",
  "Operation"), the dimensions ``stats`` groups its transactions by beside the connection (NVMe: the
  namespace and the controller; NFS: the file) and where a transaction stands in a service response time
  table (RPC: program, version and procedure).

The values are the facts' own (numbers, names from the dissectors' tables); how they are written is
the presentations'.  A module declaring an upper layer's analysis calls ``declare``; the analyzer
imports every analysis module, so that ``model_of`` knows them all.
"""
from __future__ import annotations

from ..records import record_eq, record_hash, record_repr
from ..typenames import Any, Callable, ClassVar
from .analyzer import load_modules
from .model import Transaction

# The kinds a fact may take: how the export types its column and JSON writes it.
KINDS = frozenset({"u8", "u16", "u32", "u64", "i64", "f64", "str", "bool", "strs", "ts"})


# The declarations' classes are plain (their equality and hash by their values, as frozen dataclasses'):
# the ``dataclasses`` module and what it imports (``inspect``, ``ast``, ``dis``: some 20 M instructions), and
# the decorator's work on each class (some 3 M), were a part of every analysis command's start.
class _Declared:
    """A declaration's values as its fields name them: equality, hash and repr by them."""

    __slots__ = ()
    _FIELDS: ClassVar[tuple[str, ...]] = ()

    def __eq__(self, other: object) -> bool:
        return record_eq(self, other, self._FIELDS)

    def __hash__(self) -> int:
        return record_hash(self, self._FIELDS)

    def __repr__(self) -> str:
        return record_repr(self, self._FIELDS)


class Fact(_Declared):
    """One typed fact of an upper layer's transactions."""

    __slots__ = ("name", "kind", "label", "get", "path", "when", "tell")
    _FIELDS = __slots__

    def __init__(self, name: str, kind: str, label: str, get: Callable[[Any], object], path: str | None = None,
                 when: Callable[[Any], bool] | None = None, tell: str | None = None) -> None:
        self.name = name                        # its export column ("xid", "call_proc", "nvme_opcode")
        self.kind = kind                        # one of KINDS
        self.label = label                      # how a view names it
        self.get = get                          # its value, from the transaction's facts (None: not known)
        self.path = path                        # where it stands in a transaction's JSON object; None: not there
        self.when = when                        # JSON: there only when this holds of the facts
        self.tell = tell                        # a line on the transaction's response tells it under this
                                                # name when it is known (RPC-over-RDMA's RDMA_ERROR code)


class Group(_Declared):
    """A dimension ``stats`` groups an upper layer's transactions by (a namespace, a controller, a file).
    A dimension that says which bytes a transaction read from and wrote to its value (a file's READ data
    and WRITE count) has them summed per value beside the RDMA bytes."""

    __slots__ = ("name", "get", "read", "written")
    _FIELDS = __slots__

    def __init__(self, name: str, get: Callable[[Transaction], object],
                 read: Callable[[Transaction], int | None] | None = None,
                 written: Callable[[Transaction], int | None] | None = None) -> None:
        self.name = name                        # "namespace"
        self.get = get                          # the transaction's value of it (None: not in any)
        self.read = read                        # bytes read from the value (None: none)
        self.written = written                  # bytes written to it


# Where a transaction stands in a service response time table (tshark's ``-z rpc,srt``): (the table, "NFS v3";
# the procedure's number; its name, "READ"; when the request was whole at its responder, ns: its last Read
# chunk byte in, or its Send).  A plain tuple: one is made for each transaction stats reads.
Service = tuple[str, int, str, int]


class UlpModel(_Declared):
    """An upper layer's transactions as the presentations show them (the module's text)."""

    __slots__ = ("protocol", "rank", "label", "key", "key_digits", "request", "response", "lists", "done", "facts",
                 "operation", "operation_label", "objects", "groups", "service", "lead")
    _FIELDS = __slots__

    def __init__(self, protocol: str, rank: int, label: str, key: str, key_digits: int, request: str, response: str,
                 lists: dict[str, str], done: str, facts: tuple[Fact, ...], operation: Callable[[Transaction], str],
                 operation_label: str = "Operation", objects: dict[str, Callable[[Any], bool]] | None = None,
                 groups: tuple[Group, ...] = (), service: Callable[[Transaction], Service | None] | None = None,
                 lead: tuple[str, ...] = ()) -> None:
        self.protocol = protocol                # as the connection's ``ulp`` names it ("rpcrdma", "nvme-rdma")
        self.rank = rank                        # its place among the upper layers (the export's columns)
        self.label = label                      # "RPC-over-RDMA", "NVMe/RDMA"
        self.key = key                          # the name of the key that pairs a request and its response
        self.key_digits = key_digits            # the key in hexadecimal, this many digits
        self.request = request                  # its words for the request and the response
        self.response = response
        self.lists = lists                      # the segments' kinds, by their names for a user
        self.done = done                        # its name of a Send that ends a transaction after its response
        self.facts = facts
        self.operation = operation              # the name of what the transaction did
        self.operation_label = operation_label  # what a view titles it ("Procedure")
        # JSON objects of the facts (their paths' first part) that stand as null unless this holds of the facts
        self.objects: dict[str, Callable[[Any], bool]] = {} if objects is None else objects
        self.groups = groups
        # Its service response time table's row for a transaction (None: none); None: no such table
        self.service = service
        # The facts a user looks for first (NFS's operation, file and range before the transport's words), by
        # name: a view that has room for a few shows these, then the others in their declared order
        self.lead = lead

    def shown_facts(self) -> tuple[Fact, ...]:
        """The facts in the order a view shows them: the lead ones first."""
        first = [f for name in self.lead for f in self.facts if f.name == name]
        return (*first, *(f for f in self.facts if f.name not in self.lead))


ULPS: dict[str, UlpModel] = {}


def declare(model: UlpModel) -> UlpModel:
    """Register an upper layer; its facts' kinds are checked, their columns must be new."""
    if model.protocol in ULPS:
        raise ValueError(f"upper layer {model.protocol} declared twice")
    taken = {f.name for m in ULPS.values() for f in m.facts}
    for f in model.facts:
        if f.kind not in KINDS:
            raise ValueError(f"{model.protocol}: fact {f.name} of unknown kind {f.kind}")
        if f.name in taken:
            raise ValueError(f"{model.protocol}: fact {f.name} declared by another upper layer")
        taken.add(f.name)
    own = {f.name for f in model.facts}
    for name in model.lead:
        if name not in own:
            raise ValueError(f"{model.protocol}: lead fact {name} is not one of its facts")
    ULPS[model.protocol] = model
    return model


def model_of(protocol: str) -> UlpModel:
    """The declaration of ``protocol``'s transactions."""
    load_modules()
    return ULPS[protocol]


def models() -> list[UlpModel]:
    """Every upper layer declared, by rank."""
    load_modules()
    return sorted(ULPS.values(), key=lambda m: m.rank)

