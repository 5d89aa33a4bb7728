"""NVMe/RDMA's own facts about a transaction, and its declaration as an upper layer (analysis.ulp).

A transaction of NVMe/RDMA is a command capsule and its response capsule, paired by CID (the transaction's
key) on one queue: one RDMA connection is one queue, so the connection and the CID name it.  Beside what
every upper layer's transaction holds (model.Transaction) it keeps the command (queue, controller,
opcode, Fabrics type, its name, namespace, first block and block count, the data its SGL describes and
what came in the capsule) and the completion's status.  Its segments are the command's keyed SGL data
blocks (``SGL`` for SGL1, ``SGL_LIST`` for a descriptor of a Last Segment list): the memory of the host
the controller reads (a write's data) or writes (a read's) with RDMA READ and WRITE.
"""
from __future__ import annotations

from ..records import record_eq, record_repr
from ..typenames import Callable, ClassVar, Final, mypyc_attr
from .model import Facts, FactsRecord, Transaction, declare_facts_maker
from .ulp import Fact, Group, UlpModel, declare

PROTOCOL: Final = "nvme-rdma"
SGL: Final = "sgl"                  # the command's SGL1, a keyed data block
SGL_LIST: Final = "sgl_list"        # a keyed data block of the Last Segment list SGL1 points at


@mypyc_attr(serializable=True, allow_interpreted_subclasses=True)
class NvmeFacts(Facts):
    """An NVMe/RDMA transaction's own facts: the command and the completion's status."""

    _FIELDS: ClassVar[tuple[str, ...]] = ("qid", "cntlid", "opcode", "fctype", "name", "nsid", "slba", "nlb",
                                          "lba_size", "sgl_bytes", "in_capsule", "status", "status_name", "sct", "sc",
                                          "dnr")
    __slots__ = _FIELDS

    def __init__(self, qid: int | None, cntlid: int | None, opcode: int, fctype: int | None, name: str, nsid: int,
                 slba: int | None, nlb: int | None, sgl_bytes: int, in_capsule: int) -> None:
        self.qid = qid                          # the queue (None: not learnt)
        self.cntlid = cntlid                    # its controller (from the Connect's completion)
        self.opcode = opcode
        self.fctype = fctype                    # a Fabrics command's type
        self.name = name                        # the command's name, from the dissector's tables
        self.nsid = nsid
        self.slba = slba                        # NVM commands: the first block, the block count (1's based)
        self.nlb = nlb
        self.lba_size: int | None = None       # the namespace's LBA size, when an Identify Namespace showed it
        self.sgl_bytes = sgl_bytes              # the bytes its keyed SGL data blocks describe
        self.in_capsule = in_capsule            # the bytes of data in the capsule
        self.status: int | None = None         # the completion's 15-bit status (phase left out), once it came
        self.status_name: str | None = None
        self.sct: int | None = None
        self.sc: int | None = None
        self.dnr: bool | None = None

    def __repr__(self) -> str:
        return record_repr(self, self._FIELDS)

    def __reduce__(self) -> tuple[Callable[[NvmeFactsValues], NvmeFacts], tuple[NvmeFactsValues]]:
        """Pickled as its fields' values (the TUI's spool of transactions, checkpoints): pickle's C code
        takes a tuple alone, where an object goes through a dict of its attributes."""
        return nvme_facts_from, (self.values(),)

    def values(self) -> NvmeFactsValues:
        """Its fields' values, in order (``nvme_facts_from`` makes it again of them)."""
        return (self.qid, self.cntlid, self.opcode, self.fctype, self.name, self.nsid, self.slba, self.nlb,
                self.lba_size, self.sgl_bytes, self.in_capsule, self.status, self.status_name, self.sct, self.sc,
                self.dnr)

    def record(self) -> FactsRecord:
        """Its values (``nvme_facts_from``)."""
        return PROTOCOL, self.values()

    def __eq__(self, other: object) -> bool:
        return record_eq(self, other, self._FIELDS)


NvmeFactsValues = tuple[int | None, int | None, int, int | None, str, int, int | None, int | None, int | None, int,
                        int, int | None, str | None, int | None, int | None, bool | None]


def nvme_facts_from(v: NvmeFactsValues) -> NvmeFacts:
    """The facts ``NvmeFacts.__reduce__`` pickled as ``v``."""
    f = NvmeFacts(v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7], v[9], v[10])
    f.lba_size = v[8]
    f.status = v[11]
    f.status_name = v[12]
    f.sct = v[13]
    f.sc = v[14]
    f.dnr = v[15]
    return f


declare_facts_maker(PROTOCOL, nvme_facts_from)


def nvme_of(t: Transaction) -> NvmeFacts:
    f = t.facts
    assert isinstance(f, NvmeFacts)
    return f


def operation_name(t: Transaction) -> str:
    """The command a transaction stands for, by name ("Read", "Identify", "Connect")."""
    return nvme_of(t).name


def _namespace(t: Transaction) -> object:
    f = nvme_of(t)
    return f.nsid if f.nsid and f.nsid != 0xFFFFFFFF and f.fctype is None else None   # not "every namespace"


MODEL: Final = declare(UlpModel(
    protocol=PROTOCOL, rank=1, label="NVMe/RDMA", key="CID", key_digits=4, request="command", response="completion",
    lists={SGL: "SGL", SGL_LIST: "SGL list"},
    done="",
    facts=(
        Fact("nvme_cid", "u16", "CID", lambda t: t.key, "nvme.cid"),
        Fact("nvme_qid", "u16", "Queue", lambda t: nvme_of(t).qid, "nvme.qid"),
        Fact("nvme_cntlid", "u16", "Controller", lambda t: nvme_of(t).cntlid, "nvme.cntlid"),
        Fact("nvme_opcode", "u8", "Opcode", lambda t: nvme_of(t).opcode, "nvme.opcode"),
        Fact("nvme_fctype", "u8", "Fabrics command type", lambda t: nvme_of(t).fctype, "nvme.fctype"),
        Fact("nvme_command", "str", "Command", lambda t: nvme_of(t).name, "nvme.command"),
        Fact("nvme_nsid", "u32", "Namespace", lambda t: nvme_of(t).nsid, "nvme.nsid"),
        Fact("nvme_slba", "u64", "Starting LBA", lambda t: nvme_of(t).slba, "nvme.slba"),
        Fact("nvme_nlb", "u32", "Blocks", lambda t: nvme_of(t).nlb, "nvme.nlb"),
        Fact("nvme_lba_size", "u32", "LBA size", lambda t: nvme_of(t).lba_size, "nvme.lba_size"),
        Fact("nvme_sgl_bytes", "u64", "SGL bytes", lambda t: nvme_of(t).sgl_bytes, "nvme.sgl_bytes"),
        Fact("nvme_in_capsule", "u32", "In-capsule data", lambda t: nvme_of(t).in_capsule, "nvme.in_capsule"),
        Fact("nvme_status", "u16", "Status", lambda t: nvme_of(t).status, "nvme.status"),
        Fact("nvme_status_name", "str", "Status name", lambda t: nvme_of(t).status_name, "nvme.status_name",
             tell="status"),
        Fact("nvme_sct", "u8", "Status code type", lambda t: nvme_of(t).sct, "nvme.sct"),
        Fact("nvme_sc", "u8", "Status code", lambda t: nvme_of(t).sc, "nvme.sc"),
        Fact("nvme_dnr", "bool", "Do not retry", lambda t: nvme_of(t).dnr, "nvme.dnr"),
    ),
    operation=operation_name,
    groups=(Group("namespace", _namespace), Group("controller", lambda t: nvme_of(t).cntlid)),
))
