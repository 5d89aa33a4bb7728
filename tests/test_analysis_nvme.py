"""NVMe/RDMA's transactions on the shared model: each command and its completion paired by CID on its queue, the
data of its keyed SGL accounted in the ledger, its findings; and the presentations showing them from the
upper layer's declaration (flows, stats, export)."""
from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path

import jsonschema
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

import nvme_build as B  # noqa: E402

from rdmaspy import cli, craft  # noqa: E402
from rdmaspy.analysis.model import CreditSeries, Finding, Record, Transaction, TransactionState, UlpSummary  # noqa: E402
from rdmaspy.analysis.nvme_facts import PROTOCOL, nvme_of  # noqa: E402
from rdmaspy.dissectors import nvme  # noqa: E402
from rdmaspy.pipeline import Options, Pipeline  # noqa: E402
from rdmaspy.readers import open_capture  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
CAPTURES = ("rxe-nvme-rdma.pcap.gz", "siw-nvme-rdma.pcap.gz", "rxe-nvme-rdma-loss-after.pcap.gz")
READ, WRITE, IDENTIFY = 0x02, 0x01, 0x06


class Records:
    reads_packets = False
    wants_psn_events = False

    def __init__(self) -> None:
        self.records: list[Record] = []
        self.findings: list[Finding] = []

    def on_record(self, rec: Record) -> None:
        self.records.append(rec)

    def on_finding(self, f: Finding) -> None:
        self.findings.append(f)

    def packet(self, pkt) -> None:
        pass

    def finish(self) -> None:
        pass

    @property
    def transactions(self) -> list[Transaction]:
        return [r for r in self.records if isinstance(r, Transaction) and r.protocol == PROTOCOL]

    def rules(self) -> Counter:
        return Counter(f.rule_def.id for f in self.findings if f.rule_def.id.startswith("nvme."))


def analyse(path: Path) -> Records:
    rec = Records()
    with open_capture(str(path)) as cap:
        Pipeline(cap, Options(analyze=True, packet_fields=False), [rec]).run()
    return rec


@pytest.fixture(scope="module", params=CAPTURES)
def shipped(request) -> Records:
    return analyse(ROOT / "captures" / request.param)


# --- the shipped lab captures -------------------------------------------------------------------------------
def test_every_command_of_the_lab_runs_is_paired_with_its_completion(shipped):
    txns = shipped.transactions
    assert len(txns) > 80
    open_ = [t for t in txns if t.state is not TransactionState.COMPLETE]
    # what stays outstanding is the Asynchronous Event Request of each controller's admin queue, by design
    assert open_ and all(nvme_of(t).name == "Asynchronous Event Request" for t in open_)
    assert "nvme.no_completion" not in shipped.rules()
    assert "nvme.completion_unmatched" not in shipped.rules()
    for t in txns:
        if t.response is not None:
            assert t.latency_ns is not None and t.latency_ns > 0
            assert t.response.frame > t.request.frame


def test_the_data_of_each_keyed_sgl_is_accounted_once_and_in_full(shipped):
    """Every byte the controller moved by RDMA READ or WRITE falls in the command's SGL, each byte once, even
    where the transport sent packets again (the loss run) or the target split the SGL into several operations."""
    keyed = [t for t in shipped.transactions if nvme_of(t).sgl_bytes and t.state is TransactionState.COMPLETE
             and nvme_of(t).status == 0]
    assert len(keyed) > 30
    for t in keyed:
        assert t.bytes_read + t.bytes_written == nvme_of(t).sgl_bytes == t.expected
        assert all(s.used == s.length for s in t.segments)
        assert t.data_first is not None and t.request.ts <= t.data_first <= t.data_last <= t.response.ts
    big = [t for t in keyed if nvme_of(t).sgl_bytes >= 128 * 1024]
    assert big, "the lab's 128 KiB / 1 MiB direct I/O"
    assert not {"nvme.data_length", "nvme.unadvertised", "nvme.sgl_overrun"} & set(shipped.rules())
    summaries = [r for r in shipped.records if isinstance(r, UlpSummary) and r.protocol == PROTOCOL]
    assert summaries and all(s.unadvertised_operations == 0 for s in summaries)


def test_reads_move_data_by_write_and_writes_by_read(shipped):
    for t in shipped.transactions:
        f = nvme_of(t)
        if f.qid and f.sgl_bytes and f.status == 0:
            if f.opcode == READ:
                assert t.bytes_written == f.sgl_bytes and t.bytes_read == 0
            elif f.opcode == WRITE:
                assert t.bytes_read == f.sgl_bytes and t.bytes_written == 0


def test_the_queues_name_their_controller_and_io_its_namespace(shipped):
    io = [t for t in shipped.transactions if nvme_of(t).opcode in (READ, WRITE) and nvme_of(t).qid]
    assert io and all(nvme_of(t).cntlid is not None and nvme_of(t).nsid == 1 for t in io)
    assert all(nvme_of(t).nlb for t in io)
    # the admin queue's Identify Namespace told the LBA size: each I/O's data is its blocks of it
    assert all(nvme_of(t).lba_size == 4096 and t.expected == nvme_of(t).nlb * 4096 for t in io)
    assert "nvme.blocks_length" not in shipped.rules()


def test_an_error_status_is_named(shipped):
    errors = [f for f in shipped.findings if f.rule_def.id == "nvme.error_status"]
    assert errors and all(f.args["status"] and "Success" not in f.args["status"] for f in errors)
    named = {nvme_of(t).status_name for t in shipped.transactions if nvme_of(t).status}
    assert None not in named


def test_siw_and_rxe_runs_agree_on_the_io_done():
    """The same scenario over SoftRoCE and soft-iWARP moves the same bytes by Read and Write (the host may split a
    1 MiB I/O differently: 256 blocks, or 255 and 1)."""
    def io(name: str) -> Counter:
        moved: Counter = Counter()
        for t in analyse(ROOT / "captures" / name).transactions:
            f = nvme_of(t)
            if f.qid and f.name in ("Read", "Write") and f.status == 0:
                moved[f.name] += t.bytes_read + t.bytes_written + f.in_capsule
        return moved
    rxe, siw = io("rxe-nvme-rdma.pcap.gz"), io("siw-nvme-rdma.pcap.gz")
    assert rxe["Read"] > 1 << 20 and rxe == siw


# --- built captures: each finding -----------------------------------------------------------------------------
def built(tmp_path: Path, c: B.Conversation) -> Records:
    path = tmp_path / "nvme.pcap"
    craft.write_pcap(str(path), c.frames)
    return analyse(path)


def io_queue() -> B.Conversation:
    c = B.Conversation()
    c.setup(qid=1)
    return c


def test_a_read_split_into_several_writes_is_accounted_by_address(tmp_path):
    c = io_queue()
    c.host_send(B.sqe(READ, 7, 1, B.keyed_sgl(0x10000, 8192, 0x55), (8, 0, 1)))
    c.ctrl_write(0x11000, 0x55, bytes(4096))         # the second half first
    c.ctrl_write(0x10000, 0x55, bytes(4096))
    c.ctrl_send(B.cqe(7, sqid=1), invalidate=0x55)
    rec = built(tmp_path, c)
    (t,) = rec.transactions
    assert t.state is TransactionState.COMPLETE and t.bytes_written == 8192 and t.segments[0].used == 8192
    assert nvme_of(t).nlb == 2 and t.response.invalidated == 0x55
    assert not rec.rules()


def test_an_sgl_other_than_the_blocks_is_found_once_the_lba_size_is_known(tmp_path):
    """The admin queue's Identify Namespace gives the LBA size (512 bytes here); a Read of 4 blocks on an I/O
    queue of the same controller whose SGL says 4096 bytes breaks it."""
    from rdmaspy.dissectors import nvme_data
    data = bytearray(4096)
    data[nvme_data.IDENTIFY_NS.size + 2] = 9                    # LBA format 0: 2^9 bytes
    admin = B.Conversation()
    admin.setup(qid=0)
    admin.host_send(B.sqe(IDENTIFY, 1, 1, B.keyed_sgl(0x8000, 4096, 0x10), (0,)))
    admin.ctrl_write(0x8000, 0x10, bytes(data))
    admin.ctrl_send(B.cqe(1), invalidate=0x10)
    io = B.Conversation(engine=admin.engine, host_qp=0x333, ctrl_qp=0x444)
    io.setup(qid=1)
    io.host_send(B.sqe(READ, 2, 1, B.keyed_sgl(0x20000, 4096, 0x20), (0, 0, 3)))
    io.ctrl_write(0x20000, 0x20, bytes(4096))
    io.ctrl_send(B.cqe(2, sqid=1), invalidate=0x20)
    path = tmp_path / "nvme.pcap"
    craft.write_pcap(str(path), admin.frames + io.frames)
    rec = analyse(path)
    read = next(t for t in rec.transactions if nvme_of(t).name == "Read")
    assert nvme_of(read).lba_size == 512 and read.expected == 2048
    (f,) = [f for f in rec.findings if f.rule_def.id == "nvme.blocks_length"]
    assert f.args["expected"] == 2048 and f.args["length"] == 4096
    assert "nvme.data_length" not in rec.rules()          # it moved what the SGL said


def test_a_short_transfer_a_stray_write_and_a_foreign_invalidate_are_found(tmp_path):
    c = io_queue()
    c.host_send(B.sqe(READ, 1, 1, B.keyed_sgl(0x20000, 8192, 0x66), (0, 0, 1)))
    c.ctrl_write(0x20000, 0x66, bytes(4096))
    c.ctrl_write(0x90000, 0x99, bytes(512))          # memory no command advertised
    c.ctrl_send(B.cqe(1, sqid=1), invalidate=0x77)
    rec = built(tmp_path, c)
    rules = rec.rules()
    assert rules["nvme.data_length"] == 1 and rules["nvme.unadvertised"] == 1
    assert rules["nvme.invalidate_other_key"] == 1
    (f,) = [f for f in rec.findings if f.rule_def.id == "nvme.data_length"]
    assert f.args["moved"] == 4096 and f.args["described"] == 8192


def test_a_write_past_the_sgl_is_an_overrun(tmp_path):
    c = io_queue()
    c.host_send(B.sqe(READ, 2, 1, B.keyed_sgl(0x30000, 4096, 0x11), (0, 0, 0)))
    c.ctrl_write(0x30000, 0x11, bytes(5120))
    c.ctrl_send(B.cqe(2, sqid=1))
    rules = built(tmp_path, c).rules()
    assert rules["nvme.sgl_overrun"] == 1


def test_a_key_used_after_its_invalidation_is_found(tmp_path):
    c = io_queue()
    c.host_send(B.sqe(READ, 3, 1, B.keyed_sgl(0x40000, 1024, 0x22), (0, 0, 0)))
    c.ctrl_write(0x40000, 0x22, bytes(1024))
    c.ctrl_send(B.cqe(3, sqid=1), invalidate=0x22)
    c.ctrl_write(0x40000, 0x22, bytes(1024))
    rules = built(tmp_path, c).rules()
    assert rules["nvme.after_invalidate"] == 1 and "nvme.unadvertised" not in rules


def test_a_completion_before_the_data_of_its_command_is_found(tmp_path):
    """A Read completed when half its data is written, the other half written after; a Write completed before
    the controller read its data: each is a completion before its data, and the late data is not taken for
    memory nobody advertised."""
    c = io_queue()
    c.host_send(B.sqe(READ, 1, 1, B.keyed_sgl(0x10000, 8192, 0x55), (0, 0, 1)))
    c.ctrl_write(0x10000, 0x55, bytes(4096))
    c.ctrl_send(B.cqe(1, sqid=1), invalidate=0x55)
    late = c.ctrl_write(0x11000, 0x55, bytes(4096))
    c.host_send(B.sqe(WRITE, 2, 1, B.keyed_sgl(0x20000, 1024, 0x66), (0, 0, 1)))
    c.ctrl_send(B.cqe(2, sqid=1, sqhd=2))
    c.ctrl_read(0x20000, 0x66, bytes(1024))
    rec = built(tmp_path, c)
    rules = rec.rules()
    assert rules["nvme.completion_before_data"] == 2
    assert "nvme.unadvertised" not in rules and "nvme.after_invalidate" not in rules
    read, write = [f for f in rec.findings if f.rule_def.id == "nvme.completion_before_data"]
    assert read.args["cid"] == 1 and read.args["missing"] == 4096 and read.frames[0] == late[0].frame.num
    assert write.args["cid"] == 2 and write.args["op"] == "READ"


def test_data_moved_in_full_before_the_completion_is_not_early(tmp_path):
    c = io_queue()
    c.host_send(B.sqe(READ, 1, 1, B.keyed_sgl(0x10000, 4096, 0x55), (0, 0, 0)))
    c.ctrl_write(0x10000, 0x55, bytes(4096))
    c.ctrl_send(B.cqe(1, sqid=1), invalidate=0x55)
    c.host_send(B.sqe(READ, 2, 1, B.keyed_sgl(0x10000, 4096, 0x55), (0, 0, 0)))   # the key again, a new command
    c.ctrl_write(0x10000, 0x55, bytes(4096))
    c.ctrl_send(B.cqe(2, sqid=1, sqhd=2), invalidate=0x55)
    assert not built(tmp_path, c).rules()


def connected(qid: int, sqsize: int, kato: int = 0, cattr: int = 0) -> B.Conversation:
    """A queue set up by the CM and a Connect (in-capsule data) of SQSIZE ``sqsize`` (0's based), completed
    with the SQ head at 1."""
    c = B.Conversation()
    c.setup(qid=qid)
    command = B.fabrics(nvme.FCTYPE_CONNECT, 0x40, B.offset_sgl(0, 1024),
                        nvme.CONNECT.encode(qid=qid, sqsize=sqsize, kato=kato, cattr=cattr))
    c.host_send(command + B.connect_data("nqn.s", "nqn.h"))
    c.ctrl_send(B.cqe(0x40, sqid=qid, sqhd=1, dw0=1))
    return c


def test_more_commands_outstanding_than_the_queue_holds(tmp_path):
    c = connected(1, 3)                                   # a queue of 4
    for cid in range(6):
        c.host_send(B.sqe(0x00, cid, 1))                  # Flush
    for cid in range(6):
        c.ctrl_send(B.cqe(cid, sqid=1, sqhd=(2 + cid) % 4))
    rec = built(tmp_path, c)
    (f,) = [f for f in rec.findings if f.rule_def.id == "nvme.queue_overflow"]
    assert f.args["outstanding"] == 5 and f.args["size"] == 4 and f.args["cid"] == 4
    assert rec.rules() == {"nvme.queue_overflow": 1}


def test_without_a_connect_the_cm_requests_hsqsize_is_the_queues_size(tmp_path):
    c = B.Conversation()
    c.setup(qid=1, hsqsize=1)                             # a queue of 2, its Connect not in the capture
    for cid in range(3):
        c.host_send(B.sqe(0x00, cid, 1))
    for cid in range(3):
        c.ctrl_send(B.cqe(cid, sqid=1, sqhd=cid % 2))
    rec = built(tmp_path, c)
    (f,) = [f for f in rec.findings if f.rule_def.id == "nvme.queue_overflow"]
    assert f.args["outstanding"] == 3 and f.args["size"] == 2
    (summary,) = [r for r in rec.records if isinstance(r, UlpSummary)]
    assert summary.credits[0].granted == 2 and summary.credits[0].grants == 1


def test_the_queue_depth_is_a_credit_series_against_the_queues_size(tmp_path):
    """Commands outstanding against the Connect's SQSIZE + 1 go out as credit samples and a credit summary,
    the records the credits view and the flows show for RPC-over-RDMA's credits."""
    c = connected(1, 3)
    for cid in range(3):
        c.host_send(B.sqe(0x00, cid, 1))
    for cid in range(3):
        c.ctrl_send(B.cqe(cid, sqid=1, sqhd=(2 + cid) % 4))
    c.host_send(B.sqe(0x00, 3, 1))                       # never completed: outstanding at the end
    rec = built(tmp_path, c)
    points = [(s.granted, s.outstanding) for r in rec.records if isinstance(r, CreditSeries) for s in r.samples]
    assert points == [(4, 1), (4, 0), (4, 1), (4, 2), (4, 3), (4, 2), (4, 1), (4, 0), (4, 1)]
    (summary,) = [r for r in rec.records if isinstance(r, UlpSummary)]
    (depth,) = summary.credits
    assert (depth.granted, depth.calls, depth.peak_outstanding, depth.outstanding_at_end) == (4, 5, 3, 1)


def test_the_sq_head_going_backwards_is_found_and_its_wrap_around_is_not(tmp_path):
    c = connected(1, 3)
    for cid in range(6):                                  # the head goes 2, 3, 0 (wraps), 1, 2, 3
        c.host_send(B.sqe(0x00, cid, 1))
        c.ctrl_send(B.cqe(cid, sqid=1, sqhd=(2 + cid) % 4))
    assert not built(tmp_path, c).rules()
    c.host_send(B.sqe(0x00, 6, 1))
    c.ctrl_send(B.cqe(6, sqid=1, sqhd=2))                 # back by one instead of on to 0
    rec = built(tmp_path, c)
    (f,) = [f for f in rec.findings if f.rule_def.id == "nvme.sqhd_backwards"]
    assert (f.args["sqhd"], f.args["previous"], f.args["back"], f.args["size"]) == (2, 3, 1, 4)
    assert rec.rules() == {"nvme.sqhd_backwards": 1}


def test_no_sq_head_rule_when_the_connect_disables_sq_flow_control(tmp_path):
    c = connected(1, 3, cattr=0x04)
    c.host_send(B.sqe(0x00, 1, 1))
    c.ctrl_send(B.cqe(1, sqid=1, sqhd=0))
    assert not built(tmp_path, c).rules()


def test_keep_alive_later_than_kato_is_found(tmp_path):
    c = connected(0, 31, kato=5)                          # frames are 1 us apart: 5 ms is 5,000 frames
    for _ in range(4000):
        c.frames.append(c.frames[0]); c.num += 1          # time passes (CM MADs, not the queue's)
    c.host_send(B.sqe(0x18, 1))
    c.ctrl_send(B.cqe(1, sqhd=2))
    assert not built(tmp_path, c).rules()                 # 4 ms after the Connect
    for _ in range(6000):
        c.frames.append(c.frames[0]); c.num += 1
    c.host_send(B.sqe(0x18, 2))
    c.ctrl_send(B.cqe(2, sqhd=3))
    rec = built(tmp_path, c)
    (f,) = [f for f in rec.findings if f.rule_def.id == "nvme.keep_alive_late"]
    assert f.args["kato"] == 5 and f.args["gap"] == 6 and "previous Keep Alive" in f.args["since"]
    assert rec.rules() == {"nvme.keep_alive_late": 1}


def test_keep_alive_is_not_checked_without_kato(tmp_path):
    c = connected(0, 31)
    for _ in range(6000):
        c.frames.append(c.frames[0]); c.num += 1
    c.host_send(B.sqe(0x18, 1))
    c.ctrl_send(B.cqe(1, sqhd=2))
    assert not built(tmp_path, c).rules()


def test_commands_without_completion_and_completions_without_command(tmp_path):
    c = io_queue()
    c.host_send(B.sqe(READ, 4, 1, B.keyed_sgl(0x50000, 512, 0x33), (0, 0, 0)))
    c.ctrl_send(B.cqe(9, sqid=1))
    c.host_send(B.sqe(0x0C, 5))                      # an Asynchronous Event Request on an I/O queue: not by design
    rec = built(tmp_path, c)
    assert rec.rules()["nvme.no_completion"] == 2 and rec.rules()["nvme.completion_unmatched"] == 1
    assert all(t.state is TransactionState.UNANSWERED for t in rec.transactions)


def test_the_admin_queues_async_event_request_stays_outstanding_without_a_finding(tmp_path):
    c = B.Conversation()
    c.setup(qid=0)
    c.host_send(B.sqe(0x0C, 5))
    rec = built(tmp_path, c)
    (t,) = rec.transactions
    assert t.state is TransactionState.UNANSWERED and not rec.rules()


def test_an_error_status_and_a_reused_cid(tmp_path):
    c = io_queue()
    c.host_send(B.sqe(READ, 6, 1, B.keyed_sgl(0x60000, 512, 0x44), (0, 0, 0)))
    c.host_send(B.sqe(READ, 6, 1, B.keyed_sgl(0x61000, 512, 0x45), (0, 0, 0)))
    c.ctrl_send(B.cqe(6, sqid=1, status=B.status(0x80, sct=0, dnr=True)))   # LBA Out of Range
    rec = built(tmp_path, c)
    txns = rec.transactions
    assert [t.state for t in txns] == [TransactionState.UNANSWERED, TransactionState.COMPLETE]
    assert nvme_of(txns[1]).dnr and nvme_of(txns[1]).sc == 0x80 and nvme_of(txns[1]).status_name
    assert rec.rules()["nvme.error_status"] == 1


# --- the presentations, from the declaration ----------------------------------------------------------------
def test_flows_carry_the_commands_valid_by_the_schema(tmp_path):
    out = tmp_path / "flows.json"
    assert cli.main(["flows", str(ROOT / "captures" / CAPTURES[0]), "-o", str(out)]) == 0
    doc = json.loads(out.read_text())
    schema = json.loads((ROOT / "rdmaspy" / "schemas" / "flows-1.json").read_text())
    jsonschema.Draft202012Validator(schema).validate(doc)
    txns = [t for c in doc["connections"] for t in c["transactions"]]
    assert txns and all(t["protocol"] == "nvme-rdma" and "xid" not in t and "rpc" not in t for t in txns)
    reads = [t for t in txns if t["nvme"]["command"] == "Read" and t["nvme"]["sgl_bytes"]]
    assert reads and all(t["bytes"]["rdma_write"] == t["nvme"]["sgl_bytes"] for t in reads)
    assert all(c["upper_layer"]["protocol"] == "nvme-rdma" and c["rpcrdma"] is None for c in doc["connections"])


def test_stats_group_the_commands_by_namespace_and_controller(capsys):
    assert cli.main(["stats", "-T", "json", str(ROOT / "captures" / CAPTURES[0])]) == 0
    doc = json.loads(capsys.readouterr().out)
    groups = {(g["dimension"], g["value"]): g for g in doc["overall"]["groups"]}
    ns = groups[("namespace", 1)]
    assert ns["count"] > 20 and ns["iops"] > 0 and ns["latency"]["p50"] <= ns["latency"]["p99"]
    assert ("controller", 1) in groups
    ops = {o["operation"] for o in doc["overall"]["operations"]}
    assert {"Read", "Write", "Identify", "Connect"} <= ops


def test_export_types_the_declared_facts(tmp_path):
    import pyarrow.parquet as pq
    out = tmp_path / "x"
    assert cli.main(["export", str(ROOT / "captures" / CAPTURES[0]), "-o", str(out)]) == 0
    table = pq.read_table(next(out.glob("transactions*.parquet")))
    rows = table.to_pylist()
    assert rows and all(r["protocol"] == "nvme-rdma" and r["xid"] is None for r in rows)
    assert {r["nvme_command"] for r in rows} >= {"Read", "Write"}
    assert all(r["nvme_cid"] == r["key"] for r in rows)


def test_extract_a_command_by_cid_with_or_without_the_index(tmp_path):
    cap = ROOT / "captures" / CAPTURES[0]
    t = next(t for t in analyse(cap).transactions if nvme_of(t).name == "Read" and t.bytes_written)
    a, b, tables = tmp_path / "a.pcap", tmp_path / "b.pcap", tmp_path / "x"
    args = ["extract", str(cap), "--connection", str(t.conn), "--command", hex(t.key)]
    assert cli.main([*args, "-w", str(a)]) == 0
    assert cli.main(["export", str(cap), "-o", str(tables)]) == 0
    assert cli.main([*args, "-w", str(b), "--index", str(tables)]) == 0
    assert a.read_bytes() == b.read_bytes()
    with open_capture(str(a)) as got:
        n = sum(1 for _ in got)
    assert n >= len(set(t.frames()))


def test_a_tight_memory_budget_gives_up_commands_and_keeps_the_analysis_going():
    """Hostile CIDs: thousands of commands never completed on one queue, under a small budget shared by the
    dissectors and the analysis: the oldest are given up as unanswered (their state let go, each a finding) and
    the budget holds."""
    from rdmaspy.analysis.analyzer import Analyzer
    from rdmaspy.budget import Budget
    from rdmaspy.engine import Engine
    from rdmaspy.packet import Frame
    from rdmaspy.session import Session
    engine = Engine(Session(budget=Budget(1 << 20)))
    rec = Records()
    an = Analyzer(on_finding=rec.on_finding, on_record=rec.on_record, budget=engine.session.budget,
                  packet_fields=False)
    c = B.Conversation(engine=engine)
    c.setup(qid=1)
    for cid in range(3000):
        for pkt in c.host_send(B.sqe(READ, cid, 1, B.keyed_sgl(0x100000 + cid * 4096, 4096, 0x1000 + cid),
                                     (0, 0, 0))):
            an.feed(pkt)
    budget = engine.session.budget
    given_up = [t for t in rec.transactions if t.state is TransactionState.UNANSWERED]
    assert given_up and budget.used <= budget.limit
    an.finish()
    assert len(rec.transactions) == 3000 and rec.rules()["nvme.no_completion"] == 3000
