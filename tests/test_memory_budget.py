"""The one memory budget for state kept across packets: its limit, its accounting, what it gives up."""
from __future__ import annotations

import contextlib
import io
import sys
import tracemalloc

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import CAPTURES, FIXTURES

sys.path.insert(0, str(FIXTURES))
from rpcrdma_build import CLIENT, FH, NFS, NFSV3, SERVER, Wire, _cred  # noqa: E402

from rdmaspy import budget, craft  # noqa: E402
from rdmaspy.analysis.analyzer import Analyzer  # noqa: E402
from rdmaspy.cli import main  # noqa: E402
from rdmaspy.dissectors import onc_rpc, rpcrdma  # noqa: E402
from rdmaspy.dissectors.xdr import p32, p64, popaque  # noqa: E402
from rdmaspy.engine import Engine, Session  # noqa: E402
from rdmaspy.errors import RdmaspyError  # noqa: E402
from rdmaspy.output.jsonout import packet_json  # noqa: E402
from rdmaspy.packet import Frame  # noqa: E402
from rdmaspy.readers import open_capture  # noqa: E402


@pytest.mark.parametrize("text,size", [("256M", 256 << 20), ("1g", 1 << 30), ("512KiB", None), ("2048k", 2 << 20),
                                       ("1048576", 1 << 20), ("1.5G", 3 << 29)])
def test_sizes_are_read_with_binary_units(text, size):
    if size is None:
        with pytest.raises(RdmaspyError):
            budget.parse_size(text)        # below the 1 MiB floor
    else:
        assert budget.parse_size(text) == size


@pytest.mark.parametrize("text", ["", "lots", "12X", "nan", "-5M"])
def test_a_bad_size_is_a_clear_error(text):
    with pytest.raises(RdmaspyError):
        budget.parse_size(text)


def _run(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = main(argv)
    return rc, out.getvalue(), err.getvalue()


def test_the_option_is_accepted_before_or_after_the_command_and_set_back_after():
    path = str(FIXTURES / "rpcrdma_v1_shapes.pcap")
    for argv in (["--memory-budget", "64M", "stats", path], ["stats", path, "--memory-budget=64M"]):
        rc, out, err = _run(argv)
        assert rc == 0 and not err and "memory.budget" not in out
    assert budget.default_limit() == budget.DEFAULT_LIMIT


def test_a_bad_option_or_variable_is_one_line(monkeypatch):
    rc, _out, err = _run(["decode", str(FIXTURES / "rpcrdma_v1_shapes.pcap"), "--memory-budget", "much"])
    assert rc == 1 and err.startswith("rdmaspy: error: memory budget 'much'") and err.count("\n") == 1
    monkeypatch.setenv(budget.ENV, "x")
    rc, _out, err = _run(["decode", str(FIXTURES / "rpcrdma_v1_shapes.pcap")])
    assert rc == 1 and err.startswith(f"rdmaspy: error: {budget.ENV}") and err.count("\n") == 1


class _Holder(budget.Holder):
    def __init__(self, b: budget.Budget, name: str) -> None:
        self.name = name
        self.held = 0
        self.items: list[int] = []
        self.b = b
        b.join(self)

    def add(self, n: int) -> None:
        self.items.append(n)
        self.b.charge(self, n)

    def shed(self, need: int) -> int:
        gone = 0
        start = self.held
        while self.items and start - self.held < need:
            self.b.release(self, self.items.pop(0))
            gone += 1
        return gone


def test_past_the_limit_the_largest_holder_gives_up_its_oldest_first():
    b = budget.Budget(1000)
    small, large = _Holder(b, "small things"), _Holder(b, "large things")
    small.add(100)
    for _ in range(9):
        large.add(100)
    assert not b.notices
    large.add(100)                       # 1100 > 1000: down to 750, from the large holder
    assert b.used <= 750 and small.held == 100
    assert large.items == [100] * 6
    (n,) = b.take_notices()
    assert (n.what, n.entries, n.freed) == ("large things", 4, 400)
    assert b.used == small.held + large.held


def _send_first_flood(n: int, size: int) -> list[bytes]:
    """SEND First packets that never get their Last, each to its own queue pair."""
    return [craft.rocev2(0x00, 0x200 + i, i, bytes(size)) for i in range(n)]


def test_reassembly_past_the_budget_gives_up_the_oldest_with_a_finding_and_goes_on():
    session = Session(budget=budget.Budget(1 << 20))
    engine = Engine(session)
    data = _send_first_flood(3000, 1000)
    pkts = [engine.dissect(Frame(i + 1, i, 1, d, len(d))) for i, d in enumerate(data)]
    notes = [e for p in pkts for e in p.expert or () if e.group == "memory"]
    assert notes and "SEND fragments" in notes[0].text and notes[0].rule.startswith("memory.budget")
    assert session.budget.used <= session.budget.limit
    assert all(not p.malformed for p in pkts)


def test_with_the_analysis_the_budget_speaks_through_a_finding():
    engine = Engine(Session(budget=budget.Budget(1 << 20)))
    an = Analyzer(keep_findings=True, budget=engine.session.budget)
    for i, d in enumerate(_send_first_flood(3000, 1000)):
        an.feed(engine.dissect(Frame(i + 1, i, 1, d, len(d))))
    assert any(f.rule_def.id == "memory.budget" for f in an.findings)


def _state_cost(session: Session) -> dict[str, int]:
    """What each holder's state holds, recounted from the state itself."""
    from rdmaspy.dissectors import rdma_reassembly as R
    st = session.state.get("rdma_reassembly")
    if st is None:
        return {}
    charged = sum(len(s.parts[0]) + R._ENTRY + sum(len(p) for p in s.parts[1:]) for s in st.sends.values())
    charged += sum(R._ENTRY * len(r.items) for d in (st.read_reqs, st.write_reqs) for r in d.values())
    for job in {id(j): j for j in st.read_jobs.values()}.values():
        charged += len(job.reduced) + R._ENTRY + sum(len(d) + R._PIECE for ps in job.pieces for d in ps.values())
    kept = sum(len(d) + R._PIECE for placed in st.written.values() for d, _f in (placed.pieces or {}).values())
    assert kept == st.kept
    return {"held": st.held, "recounted": charged + kept}


@pytest.mark.parametrize("name", ["rpcrdma_v1_shapes.pcap", "rpcrdma_v2_all.pcap", "rxe-nfsv3-rdma.pcap",
                                  "rxe-nfsv42-rdma.pcap", "hostile_write_list.pcap", "hostile_reply_chunk.pcap"])
def test_what_reassembly_charges_is_what_it_holds(name):
    path = FIXTURES / name if (FIXTURES / name).exists() else CAPTURES / name
    engine = Engine()
    an = Analyzer(keep_findings=False, budget=engine.session.budget)
    with open_capture(str(path)) as cap:
        for frame in cap:
            an.feed(engine.dissect(frame))
            cost = _state_cost(engine.session)
            if cost:
                assert cost["held"] == cost["recounted"], frame.num
    an.finish()
    b = engine.session.budget
    assert b.used == sum(h.held for h in b.holders)


# --- no capture of N bytes makes the pipeline hold more than a constant times N -------------------------
HANDLES = st.sampled_from([0xA001, 0xB001, 0xC001, 0xD001])
BIG = st.sampled_from([0, 64, 4096, 1 << 20, 1 << 30, 1 << 32, 0xF0000000, 0xFFFFFFFF, 0x7FFFFFFF])


@st.composite
def hostile_traffic(draw) -> list[bytes]:
    """RPC-over-RDMA calls, replies and RDMA operations whose lengths, offsets and handles are hostile."""
    w = Wire()
    base = 0x7F0000000000
    for i in range(draw(st.integers(1, 12))):
        xid = 0x500 + i
        kind = draw(st.sampled_from(["write_list", "reply_chunk", "read_list", "sends"]))
        h, length, shift = draw(HANDLES), draw(BIG), draw(BIG)
        if kind == "write_list":
            call = onc_rpc.encode_call(xid, NFS, NFSV3, 6, popaque(FH) + p64(0) + p32(4096), _cred())
            w.send(CLIENT, rpcrdma.encode_v1(xid, 0, 128, writes=[[(h, draw(BIG), base)]], payload=call))
            w.rdma_write(SERVER, h, base + shift, bytes(draw(st.integers(1, 3000))))
            reply = onc_rpc.encode_reply(xid, p32(0, 0, 64, 1, 64))
            w.send(SERVER, rpcrdma.encode_v1(xid, 0, 64, writes=[[(h, length, base)]], payload=reply))
        elif kind == "reply_chunk":
            call = onc_rpc.encode_call(xid, NFS, NFSV3, 16, popaque(FH), _cred())
            w.send(CLIENT, rpcrdma.encode_v1(xid, 0, 128, reply=[(h, draw(BIG), base)], payload=call))
            w.rdma_write(SERVER, h, base + shift, bytes(draw(st.integers(1, 3000))))
            w.send(SERVER, rpcrdma.encode_v1(xid, 1, 64, reply=[(h, length, base)]))
        elif kind == "read_list":
            call = onc_rpc.encode_call(xid, NFS, NFSV3, 7, popaque(FH) + p64(0) + p32(8, 2, 8), _cred())
            w.send(CLIENT, rpcrdma.encode_v1(xid, 0, 128, reads=[(draw(BIG) & 0xFFFFFFFC, h, length, base)],
                                             payload=call))
            w.rdma_read(SERVER, h, base + shift, bytes(draw(st.integers(0, 3000))))
        else:
            w.send(CLIENT, bytes(draw(st.integers(1, 5000))))
    return w.frames


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(hostile_traffic())
def test_no_capture_of_n_bytes_makes_the_pipeline_hold_more_than_a_constant_times_n(frames):
    n = sum(len(f) for f in frames)
    engine = Engine()
    an = Analyzer(keep_findings=True, budget=engine.session.budget)
    tracemalloc.start()
    try:
        for i, data in enumerate(frames, 1):
            pkt = engine.dissect(Frame(i, i * 1000, 1, data, len(data)))
            an.feed(pkt)
            packet_json(pkt, 0)
        an.finish()
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 200 * n + (4 << 20), f"{peak >> 20} MiB for {n} bytes"


def test_outstanding_rpc_calls_are_charged_and_given_up_past_the_budget():
    sys.path.insert(0, str(FIXTURES))
    import hostile_build
    session = Session(budget=budget.Budget(1 << 20))
    engine = Engine(session)
    notes = []
    for i, d in enumerate(hostile_build.unanswered_calls(5000), 1):
        pkt = engine.dissect(Frame(i, i, 1, d, len(d)))
        notes += [e.text for e in pkt.expert or () if e.group == "memory"]
    assert notes and all("outstanding RPC calls" in n for n in notes)
    calls = session.state["rpc.calls"]
    assert calls.held == 512 * len(calls.by_key) and session.budget.used <= session.budget.limit
