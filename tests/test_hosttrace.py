"""Kernel traces joined to captures (--host-trace): reading every form, the join, the clock, the findings,
hostile traces, and nothing changed without one.  The lab's NFS runs (captures/nfs/) carry the
`trace-cmd report -t` of the same run beside each capture; one guest is client and server, on the TAI
clock, which is the capture's: the offset measured must be near 0."""
from __future__ import annotations

import gzip
import json
import lzma
import os
import re
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import CAPTURES, ROOT
from rdmaspy.analysis.hostjoin import HostJoin, measure_clock
from rdmaspy.analysis.model import Transaction
from rdmaspy.hosttrace.events import DECLARATIONS, EVENTS, FIELDS
from rdmaspy.hosttrace.parse import parse_body, split_line
from rdmaspy.hosttrace.source import TraceError, TraceFile
from rdmaspy.output.hosttrace import prepare, wire_samples
from rdmaspy.pipeline import Options, Pipeline
from rdmaspy.readers import open_capture

NFS = CAPTURES / "nfs"
PAIRS = sorted(p.with_suffix("") for p in NFS.glob("*.pcap"))


def trace_of(stem: Path) -> Path:
    return stem.parent / (stem.name + ".trace.txt.xz")


class Records:
    reads_packets = False

    def __init__(self) -> None:
        self.transactions: list[Transaction] = []
        self.findings: list = []

    def on_record(self, rec: object) -> None:
        if isinstance(rec, Transaction):
            self.transactions.append(rec)

    def on_finding(self, f: object) -> None:
        self.findings.append(f)

    def packet(self, pkt: object) -> None:
        pass

    def finish(self) -> None:
        pass


def joined(capture: Path, traces: list[Path], budget: int = 256 << 20) -> tuple[HostJoin, Records]:
    join = prepare(str(capture), [str(t) for t in traces], budget)
    rec = Records()
    with open_capture(str(capture)) as cap:
        Pipeline(cap, Options(analyze=True, packet_fields=False), [join, rec]).run()
    return join, rec


def rules(rec: Records) -> Counter:
    return Counter(f.rule_def.id for f in rec.findings if f.rule_def.id.startswith("host."))


def run_cli(*args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, "-m", "rdmaspy", *args], capture_output=True, text=True, env=env,
                          stdin=subprocess.DEVNULL, timeout=600)


# --- the declarations ---------------------------------------------------------------------------------
def test_every_declared_field_has_a_meaning_and_every_event_a_side():
    for d in DECLARATIONS:
        assert d.name in EVENTS and d.side and d.stage
        assert all(f in FIELDS for f in d.fields)


# --- every XID of the lab's runs joined, the clock within a bound ----------------------------------------
@pytest.mark.parametrize("stem", PAIRS, ids=lambda p: p.name)
def test_every_transaction_of_the_lab_runs_is_joined(stem: Path):
    join, rec = joined(stem.with_suffix(".pcap"), [trace_of(stem)])
    assert rec.transactions
    missing = [hex(t.key) for t in rec.transactions if t.host is None]
    assert missing == []
    clock = join.clocks[0]
    assert clock.host_only == 0 and clock.wire_only == 0
    # Every forward call has its marshal and post_send, every answered one its reply handled.
    for t in rec.transactions:
        names = {e.name for e in t.host.events}
        if t.direction.value == "forward":
            assert {"xprtrdma_marshal", "xprtrdma_post_send", "svcrdma_decode_rqst"} <= names, hex(t.key)
            if t.response is not None and t.facts.reply_error is None:
                assert "xprtrdma_reply" in names, hex(t.key)


@pytest.mark.parametrize("stem", PAIRS, ids=lambda p: p.name)
def test_the_measured_offset_of_one_clock_is_near_zero(stem: Path):
    """Trace and capture share the guest's TAI clock: the offset is the delay from the post to the wire,
    at most 200 us under TCG, and its range holds 0."""
    join, _rec = joined(stem.with_suffix(".pcap"), [trace_of(stem)])
    c = join.clocks[0]
    assert c.matched >= 100
    assert 0 <= c.offset_ns < 200_000
    assert c.low_ns is not None and c.low_ns <= 0 <= c.high_ns


def test_a_shifted_trace_is_measured_back_to_the_capture():
    """A trace on another clock (here: its times 5 s, 123 us earlier) gets its own offset."""
    stem = NFS / "rxe-nfsv3-full"
    tmp = shifted_trace(trace_of(stem), -5_000_123_000)
    join, rec = joined(stem.with_suffix(".pcap"), [tmp])
    c = join.clocks[0]
    assert abs(c.offset_ns - 5_000_123_000) < 200_000
    assert all(t.host is not None for t in rec.transactions)


def shifted_trace(path: Path, shift_ns: int) -> Path:
    out = Path(os.environ.get("PYTEST_TMP", "/tmp")) / f"shifted-{os.getpid()}-{path.name}"

    def shift(m: re.Match) -> str:
        ns = int(m.group(1)) * 10**9 + int(m.group(2)) + shift_ns
        return f"{ns // 10**9}.{ns % 10**9:09d}:"
    with lzma.open(path, "rt") as src, lzma.open(out, "wt") as dst:
        for line in src:
            dst.write(re.sub(r"(\d+)\.(\d{9}):", shift, line, count=1))
    return out


# --- the forms -------------------------------------------------------------------------------------------
def events_of(path: Path) -> list[tuple[str, int, dict]]:
    return [(e.name, e.host_ts, e.fields) for e in TraceFile(str(path)).events()]


def test_gzip_and_plain_text_read_as_xz(tmp_path: Path):
    src = trace_of(NFS / "rxe-nfsv3-full")
    text = lzma.decompress(src.read_bytes())
    (tmp_path / "t.txt").write_bytes(text)
    (tmp_path / "t.gz").write_bytes(gzip.compress(text))
    want = events_of(src)
    assert events_of(tmp_path / "t.txt") == want == events_of(tmp_path / "t.gz")


def test_ftrace_text_joins_as_the_report(tmp_path: Path):
    """/sys/kernel/tracing/trace: a flags column after the CPU, microseconds, '#' headers."""
    src = trace_of(NFS / "rxe-nfsv3-full")
    out = ["# tracer: nop", "#", "#           TASK-PID     CPU#  |||||  TIMESTAMP  FUNCTION"]
    with lzma.open(src, "rt") as f:
        for line in f:
            m = re.match(r"(\s*.+?-\d+\s+)\[(\d+)\] (\d+)\.(\d{6})\d{3}: (.*)", line.rstrip("\n"))
            if m:
                out.append(f"{m.group(1)}[{m.group(2)}] d..1. {m.group(3)}.{m.group(4)}: {m.group(5)}")
    path = tmp_path / "trace"
    path.write_text("\n".join(out) + "\n")
    join, rec = joined(NFS / "rxe-nfsv3-full.pcap", [path])
    assert all(t.host is not None for t in rec.transactions)
    assert join.clocks[0].skipped == 0


RAW = NFS / "rxe-nfsv3-full.trace-raw.txt.xz"


def test_raw_fields_join_as_the_printed_ones():
    """`trace-cmd report -R`: the raw fields (task_id=%08x, completion_id, mr_id, numeric status) give the
    same join as the TP_printk text."""
    join, rec = joined(NFS / "rxe-nfsv3-full.pcap", [RAW])
    _j, printed = joined(NFS / "rxe-nfsv3-full.pcap", [trace_of(NFS / "rxe-nfsv3-full")])
    assert all(t.host is not None for t in rec.transactions)
    for a, b in zip(rec.transactions, printed.transactions):
        assert [e.name for e in a.host.events] == [e.name for e in b.host.events]
        assert [(r.handle, r.offset, r.length, r.chunk, r.invalidation) for r in a.host.registrations] == \
               [(r.handle, r.offset, r.length, r.chunk, r.invalidation) for r in b.host.registrations]


def test_old_kernels_decimal_task_ids_and_cq_id_spellings():
    decl = EVENTS["xprtrdma_marshal"]
    old = parse_body(decl, "task:37@5 xid=0x1234abcd: hdr=28 xdr=40/0/0 pullup/inline")
    assert (old["task"], old["client"], old["xid"], old["hdrlen"]) == (37, 5, 0x1234ABCD, 28)
    reply = parse_body(EVENTS["xprtrdma_reply"], "task:37@5 xid=0x1234abcd, 64 credits, rep=00000000deadbeef -> 1")
    assert (reply["xid"], reply["credits"]) == (0x1234ABCD, 64)
    assert parse_body(decl, "task:00000025@00000005 xid=0x1234abcd hdr=28")["task"] == 0x25
    seg = EVENTS["svcrdma_decode_wseg"]
    for body in ("cq_id=2 cid=52 segno=0 256@0xe3e166d45130c000:0x00000c8d",
                 "cq.id=2 cid=52 segno=0 256@0xe3e166d45130c000:0x00000c8d"):
        f = parse_body(seg, body)
        assert (f["cq_id"], f["cid"], f["handle"], f["length"], f["offset"]) == (2, 52, 0xC8D, 256,
                                                                               0xE3E166D45130C000)
    wc = parse_body(EVENTS["xprtrdma_wc_receive"], "cq_id=2 completion_id=206 received=0 status=5 vendor_err=0")
    assert wc["status"] == "WR_FLUSH_ERR"


def test_a_comm_with_spaces_and_dashes():
    line = split_line("  NFSv4 callback-347   [000] 1795776099.889991217: svcsock_accept_err:   addr=listener")
    assert line is not None and (line.comm, line.pid, line.event) == ("NFSv4 callback", 347, "svcsock_accept_err")
    line = split_line("    192.0.2.2-manag-348   [000] 12.5: xprt_connect: peer=[192.0.2.2]:20049 state=BOUND")
    assert line is not None and (line.comm, line.pid, line.ts) == ("192.0.2.2-manag", 348, 12_500_000_000)


def test_trace_dat_is_read_through_trace_cmd(tmp_path: Path):
    if shutil.which("trace-cmd") is None:
        pytest.fail("trace-cmd is not installed: run scripts/test, which installs it")
    dat = tmp_path / "t.dat"
    dat.write_bytes(lzma.decompress((NFS / "rxe-nfsv3-full.trace.dat.xz").read_bytes()))
    assert TraceFile(str(dat)).form == "dat"
    assert events_of(dat) == events_of(trace_of(NFS / "rxe-nfsv3-full"))


def test_trace_dat_without_trace_cmd_is_one_line(tmp_path: Path):
    dat = tmp_path / "t.dat"
    dat.write_bytes(b"\x17\x08\x44tracing6\0" + b"\0" * 64)
    env = dict(os.environ, PYTHONPATH=str(ROOT), PATH=str(tmp_path))   # no trace-cmd on this PATH
    r = subprocess.run([sys.executable, "-m", "rdmaspy", "stats", str(NFS / "rxe-nfsv3-full.pcap"),
                        "--host-trace", str(dat)], capture_output=True, text=True, env=env,
                       stdin=subprocess.DEVNULL, timeout=300)
    assert r.returncode != 0 and "Traceback" not in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and "trace-cmd is not installed" in r.stderr


# --- the findings, each from the run that makes it --------------------------------------------------------
def test_a_reconnect_and_a_retransmission_each_with_the_wire_event_behind_it():
    """rxe-nfsv42-full: the server answered a GETXATTR with RDMA_ERROR ERR_CHUNK; the client disconnected,
    connected again on a new QP and sent the call again."""
    stem = NFS / "rxe-nfsv42-full"
    _join, rec = joined(stem.with_suffix(".pcap"), [trace_of(stem)])
    by = {f.rule_def.id: f for f in rec.findings}
    rc = by["host.reconnect"]
    assert "new QP 21" in rc.text and "RDMA_ERROR reply to XID 0x44e13e66" in rc.text
    rt = by["host.retransmission"]
    assert rt.xid == 0x44E13E66 and "RDMA_ERROR reply to XID 0x44e13e66" in rt.text and rt.frames
    assert "connection 1 closed" in rt.text


def test_a_blackout_breaks_the_connection_and_the_call_in_flight_is_sent_again():
    """lab/run nfs-restart rxe 3 blackout: the server's NIC dropped everything for 20 s; its Send of a reply
    exhausted its retries (RETRY_EXC_ERR), the connection broke, the client reconnected on QP 18 and sent
    the WRITE in flight (XID 0x07516c28) again; the wire shows the retransmissions behind each."""
    stem = NFS / "rxe-nfsv3-blackout"
    join, rec = joined(stem.with_suffix(".pcap"), [trace_of(stem)])
    assert all(t.host is not None for t in rec.transactions)
    found = rules(rec)
    assert found["host.reconnect"] == 1 and found["host.retransmission"] == 1
    by = {f.rule_def.id: f for f in rec.findings}
    rt = by["host.retransmission"]
    assert rt.xid == 0x07516C28 and "ib.retransmission" in rt.text and rt.frames
    assert "new QP 18" in by["host.reconnect"].text
    retry = [f for f in rec.findings if f.rule_def.id == "host.completion_error" and f.args["status"] == "RETRY_EXC_ERR"]
    assert {f.args["event"] for f in retry} == {"svcrdma_wc_send_err", "xprtrdma_wc_send"}
    assert all("ib.retransmission" in f.text for f in retry)
    # the call in flight is two transactions on the wire (unanswered, then answered on the new connection),
    # each with its own sending's events
    calls = [t for t in rec.transactions if t.key == 0x07516C28]
    assert len(calls) == 2 and all(t.host is not None for t in calls)
    assert sum(e.name == "xprtrdma_marshal" for t in calls for e in t.host.events) == 2
    # and the wire says what the host does: the call left on connection 1 was sent again on connection 2 and
    # answered there (a note), not a call without reply
    first, again = sorted(calls, key=lambda t: t.request_frame)
    assert first.state.value == "unanswered" and again.state.value == "complete" and first.conn != again.conn
    assert found["transaction.no_reply"] == 0
    (note,) = [f for f in rec.findings if f.rule_def.id == "transaction.answered_after_reconnect"]
    assert note.xid == 0x07516C28 and note.frames == (first.request_frame, again.request_frame, again.response.frame)
    c = join.clocks[0]
    assert c.host_only == 0 and c.wire_only == 0 and c.low_ns <= 0 <= c.high_ns


def test_a_server_restarted_is_reconnected_to_until_it_listens():
    """lab/run nfs-restart rxe 3 restart: the server stopped (its DREQ closed connection 1) and started 3 s
    later; the client's reconnects were rejected until it listened again (new QPs 18, 19, 20)."""
    stem = NFS / "rxe-nfsv3-restart"
    _join, rec = joined(stem.with_suffix(".pcap"), [trace_of(stem)])
    assert all(t.host is not None for t in rec.transactions)
    reconnects = sorted(f.text for f in rec.findings if f.rule_def.id == "host.reconnect")
    assert len(reconnects) == 3
    assert "new QP 18), connection 2 on the wire (rejected)" in reconnects[0]
    assert "new QP 20), connection 4 on the wire (closed)" in reconnects[2]


def test_flushed_completions_are_found_with_the_close_behind_them():
    stem = NFS / "rxe-nfsv3-full"
    _join, rec = joined(stem.with_suffix(".pcap"), [trace_of(stem)])
    errs = [f for f in rec.findings if f.rule_def.id == "host.completion_error"]
    assert any(f.args["status"] == "WR_FLUSH_ERR" and f.args["count"] >= 60 for f in errs)
    assert all("connection 1 closed" in f.text for f in errs)


def test_registrations_and_their_life():
    """A Read chunk registered, read by the server's RDMA READ, invalidated by its Send With Invalidate."""
    stem = NFS / "rxe-nfsv3-full"
    _join, rec = joined(stem.with_suffix(".pcap"), [trace_of(stem)])
    t = next(t for t in rec.transactions if t.key == 0xE8E166D4)
    (r,) = t.host.registrations
    assert (r.handle, r.length, r.chunk, r.invalidation, r.advertised, r.operations, r.bytes) == \
           (0xC8E, 4096, "read", "remote", True, 1, 4096)
    assert r.registered_ts < t.request.ts < r.invalidated_ts
    assert t.response.invalidated == r.handle
    lat = t.host.latency
    assert lat["total"] == lat["client_send"] + lat["server"] + lat["wire"] + lat["client_reply"]
    unused = [f for f in rec.findings if f.rule_def.id == "host.registration_unused"]
    assert unused and all(f.args["chunk"] in ("write", "reply", "read") for f in unused)


def edited_trace(tmp: Path, edit) -> Path:
    src = trace_of(NFS / "rxe-nfsv3-full")
    with lzma.open(src, "rt") as f:
        lines = f.read().splitlines()
    out = tmp / "edited.txt"
    out.write_text("\n".join(edit(lines)) + "\n")
    return out


def test_credits_the_host_and_the_wire_disagree_on(tmp_path: Path):
    def edit(lines):
        for ln in lines:
            yield ln.replace("xid=0xe8e166d4 credits=64", "xid=0xe8e166d4 credits=32")
    _join, rec = joined(NFS / "rxe-nfsv3-full.pcap", [edited_trace(tmp_path, edit)])
    (f,) = [f for f in rec.findings if f.rule_def.id == "host.credits_disagree"]
    assert f.xid == 0xE8E166D4 and f.args["host"] == 32 and f.args["wire"] == 64


def test_a_wire_access_after_the_invalidation(tmp_path: Path):
    """The client's trace says it invalidated R_Key 0xc8e before the server's RDMA READ of it."""
    def edit(lines):
        for ln in lines:
            if "xprtrdma_mr_reminv:" in ln and ":0x00000c8e" in ln:
                ln = ln.replace("1795776077.251730538", "1795776077.236000000")
            yield ln
    _join, rec = joined(NFS / "rxe-nfsv3-full.pcap", [edited_trace(tmp_path, edit)])
    (f,) = [f for f in rec.findings if f.rule_def.id == "host.access_after_invalidation"]
    assert f.args["handle"] == 0xC8E and f.args["op"] == "READ" and f.frames == (104,)


def test_a_call_the_capture_lost(tmp_path: Path):
    """The capture without one call and its reply: the host traced it, the capture has no such transaction."""
    cut = tmp_path / "cut.pcapng"
    r = run_cli("decode", str(NFS / "rxe-nfsv3-full.pcap"), "-Y", "not rpcrdma.xid == 0xeae166d4", "-w", str(cut))
    assert r.returncode == 0, r.stderr
    join, rec = joined(cut, [trace_of(NFS / "rxe-nfsv3-full")])
    lost = [f for f in rec.findings if f.rule_def.id == "host.not_captured"]
    assert {f.xid for f in lost} == {0xEAE166D4}
    assert join.clocks[0].host_only == 1


def test_a_trace_that_matches_nothing_says_so_in_one_line():
    r = run_cli("expert", str(CAPTURES / "rxe-nfsv3-rdma.pcap"), "--host-trace", str(trace_of(NFS / "rxe-nfsv3-full")))
    assert r.returncode == 0, r.stderr
    assert "no XID of the trace is in the capture" in r.stdout
    (line,) = r.stderr.strip().splitlines()
    assert line.startswith("rdmaspy: warning: ") and "its events are not joined" in line


# --- hostile and truncated traces --------------------------------------------------------------------------
LINE_PARTS = st.sampled_from(["xprtrdma_marshal", "xprtrdma_reply", "svcrdma_decode_rqst", "xprtrdma_mr_map",
                              "xprtrdma_wc_receive", "rpc_stats_latency", "cm_qp_create", "bogus_event"])


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(event=LINE_PARTS, body=st.text(max_size=200), comm=st.text(max_size=20),
       ts=st.integers(min_value=0, max_value=10**12))
def test_any_line_parses_or_is_counted(event: str, body: str, comm: str, ts: int):
    line = split_line(f"{comm}-12 [000] {ts}.000001: {event}: {body}")
    if line is not None and line.event in EVENTS:
        fields = parse_body(EVENTS[line.event], line.body)
        assert len(fields) <= 60


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                   HealthCheck.function_scoped_fixture])
@given(data=st.binary(max_size=3000), cut=st.integers(min_value=0, max_value=20000))
def test_garbage_and_cut_traces_never_raise_but_trace_errors(tmp_path: Path, data: bytes, cut: int):
    text = lzma.decompress(trace_of(NFS / "rxe-nfsv3-full").read_bytes())[:cut] + data
    for name, blob in (("t.txt", text), ("t.xz", lzma.compress(text)[: max(8, len(text) // 3)])):
        path = tmp_path / name
        path.write_bytes(blob)
        try:
            tf = TraceFile(str(path))
            n = sum(1 for _ in tf.events())
            assert n <= tf.stats.lines
        except TraceError as exc:
            assert "\n" not in str(exc)


def test_hostile_trace_on_the_command_line_is_a_warning_or_a_line(tmp_path: Path):
    bad = tmp_path / "bad.txt"
    bad.write_bytes(b"\x00\xff" * 1000 + b"x" * 100_000 + b"\nnot a trace line\n" + b"a-1 [0] 1.0: xprtrdma_marshal:"
                    + b" task:zz@@ xid=0xqq\n")
    r = run_cli("stats", str(NFS / "rxe-nfsv3-full.pcap"), "--host-trace", str(bad))
    assert r.returncode == 0 and "Traceback" not in r.stderr, r.stderr
    assert "no XID in common" in r.stdout
    cut = tmp_path / "cut.xz"
    cut.write_bytes(trace_of(NFS / "rxe-nfsv3-full").read_bytes()[:5000])
    r = run_cli("flows", str(NFS / "rxe-nfsv3-full.pcap"), "--host-trace", str(cut), "-o", str(tmp_path / "f.json"))
    assert "Traceback" not in r.stderr
    assert r.returncode != 0 and len(r.stderr.strip().splitlines()) == 1 and "damaged" in r.stderr
    r = run_cli("flows", str(NFS / "rxe-nfsv3-full.pcap"), "--host-trace", str(tmp_path / "none.txt"), "-o",
                str(tmp_path / "f.json"))
    assert r.returncode != 0 and r.stderr.strip().endswith("no such file")


def test_memory_stays_within_the_window_for_any_trace(tmp_path: Path):
    """A trace of a million events of one RPC, over a short capture: the join keeps at most its bound."""
    stem = NFS / "rxe-nfsv3-full"
    with lzma.open(trace_of(stem), "rt") as f:
        head = f.read()
    big = tmp_path / "big.txt"
    with open(big, "w") as out:
        out.write(head)
        t = 1795776077_000_000_000
        for i in range(200_000):
            t += 1000
            out.write(f" kworker/0:1H-37 [000] {t // 10**9}.{t % 10**9:09d}: xprtrdma_wc_send: cq.id=1 cid={i} "
                      f"status=SUCCESS (0/0x0)\n")
    wire = wire_samples(str(stem.with_suffix(".pcap")))
    clock = measure_clock(TraceFile(str(big)), wire)
    join = HostJoin([TraceFile(str(big))], [clock], budget_limit=1 << 20)
    most = 0
    rec = Records()

    class Watch(Records):
        def on_record(self, r: object) -> None:
            nonlocal most
            most = max(most, len(join.window))
    with open_capture(str(stem.with_suffix(".pcap"))) as cap:
        Pipeline(cap, Options(analyze=True, packet_fields=False), [join, Watch(), rec]).run()
    assert most <= join.max_events == 4096
    assert join.let_go > 0


# --- the outputs --------------------------------------------------------------------------------------------
def test_flows_carry_host_events_and_the_clock_valid_by_the_schema(tmp_path: Path):
    import jsonschema
    from importlib import resources
    schema = json.loads(resources.files("rdmaspy").joinpath("schemas/flows-1.json").read_text())
    stem = NFS / "rxe-nfsv42-full"
    out = tmp_path / "f.json"
    r = run_cli("flows", str(stem.with_suffix(".pcap")), "--host-trace", str(trace_of(stem)), "-o", str(out))
    assert r.returncode == 0, r.stderr
    doc = json.loads(out.read_text())
    jsonschema.validate(doc, schema)
    (clock,) = doc["host_clock"]
    assert clock["file"] == str(trace_of(stem)) and 0 <= clock["offset_ns"] < 200_000 and clock["joined"] == 211
    txns = [t for c in doc["connections"] for t in c["transactions"]]
    assert all(t["host_events"] for t in txns)
    ev = txns[5]["host_events"][0]
    assert set(ev) == {"event", "ts", "side", "stage", "trace", "fields"}
    r = run_cli("flows", str(stem.with_suffix(".pcap")), "--host-trace", str(trace_of(stem)), "-T", "jsonl")
    for line in r.stdout.splitlines():
        jsonschema.validate(json.loads(line), schema)


def test_export_has_a_host_events_table_with_the_trace_only(tmp_path: Path):
    pq = pytest.importorskip("pyarrow.parquet")
    stem = NFS / "rxe-nfsv3-full"
    r = run_cli("export", str(stem.with_suffix(".pcap")), "--host-trace", str(trace_of(stem)), "-o",
                str(tmp_path / "with"), "-q")
    assert r.returncode == 0, r.stderr
    t = pq.read_table(tmp_path / "with" / "host_events.parquet")
    assert t.num_rows > 2000 and {"xprtrdma_marshal", "svcrdma_decode_rqst"} <= set(t.column("event").to_pylist())
    r = run_cli("export", str(stem.with_suffix(".pcap")), "-o", str(tmp_path / "without"), "-q")
    assert not (tmp_path / "without" / "host_events.parquet").exists()


def test_decode_interleaves_the_host_events_with_the_packets():
    stem = NFS / "rxe-nfsv3-full"
    r = run_cli("decode", str(stem.with_suffix(".pcap")), "--host-trace", str(trace_of(stem)), "-Y",
                "rpcrdma.analysis.xid == 0xe8e166d4")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    kinds = [ln.split()[3].rstrip(":") if ln.startswith("host ") else "frame " + ln.split()[0] for ln in lines]
    order = ["xprtrdma_marshal", "xprtrdma_post_send", "frame 102", "svcrdma_decode_rqst", "frame 104",
             "svcrdma_wc_read", "nfsd_write_start", "svcrdma_post_send", "frame 109", "xprtrdma_reply",
             "xprtrdma_mr_reminv"]
    assert [k for k in kinds if k in order] == order


def test_stats_show_the_clock_and_the_shares():
    stem = NFS / "rxe-nfsv3-full"
    r = run_cli("stats", str(stem.with_suffix(".pcap")), "--host-trace", str(trace_of(stem)), "-T", "json")
    doc = json.loads(r.stdout)
    host = doc["host"]
    assert host["transactions"] == 124 and host["latency_ns"]["total"]["count"] == 124
    r = run_cli("stats", str(stem.with_suffix(".pcap")), "--host-trace", str(trace_of(stem)))
    assert "Host traces (1): 124 transactions joined" in r.stdout


def test_nothing_changes_without_a_trace():
    """The join is a sink given only with --host-trace: a transaction without it has no host."""
    _join, rec = joined(NFS / "rxe-nfsv3-full.pcap", [])
    assert rec.transactions and all(t.host is None for t in rec.transactions)


def test_lost_events_headers_and_the_tgid_column_are_counted_not_events(tmp_path: Path):
    text = "\n".join([
        "# tracer: nop",
        "cpus=2",
        "CPU:1 [LOST 120 EVENTS]",
        "CPU:0 [7 EVENTS DROPPED]",
        "  kworker/0:1H-37    (     37) [000] d..1. 100.000001: xprtrdma_reply: task:00000004@00000004 "
        "xid=0x1db6175a credits=64",
        "a line that is nothing",
        "  mount.nfs-289   [000] 100.000002: some_other_event: x=1",
    ]) + "\n"
    path = tmp_path / "t.txt"
    path.write_text(text)
    tf = TraceFile(str(path))
    (ev,) = list(tf.events())
    assert (ev.name, ev.pid, ev.host_ts, ev.fields["xid"], ev.fields["credits"]) == \
           ("xprtrdma_reply", 37, 100_000_001_000, 0x1DB6175A, 64)
    s = tf.stats
    assert (s.lost, s.skipped, s.events, s.kept, s.unknown) == (127, 1, 2, 1, {"some_other_event": 1})


def test_the_raw_forms_addresses_and_the_inline_thresholds():
    raw = parse_body(EVENTS["cm_qp_create"], "cm_id=2 qp_num=17 rc=0 srcaddr=ARRAY[02, 00, d1, 1e, c0, 00, 02, 01, "
                     "00, 00, 00, 00] dstaddr=ARRAY[02, 00, 4e, 51, c0, 00, 02, 02, 00, 00, 00, 00]")
    assert (raw["src"], raw["dst"], raw["qp_num"]) == ("192.0.2.1:53534", "192.0.2.2:20049", 17)
    assert parse_body(EVENTS["xprtrdma_op_connect"], "delay=0 addr=192.0.2.2 port=20049")["peer"] == "192.0.2.2:20049"
    text = parse_body(EVENTS["xprtrdma_inline_thresh"],
                      "192.0.2.1:53534 -> 192.0.2.2:20049 neg send/recv=4096/4096, calc send/recv=3780/3884")
    assert text == parse_body(EVENTS["xprtrdma_inline_thresh"], "inline_send=4096 inline_recv=4096 max_send=3780 "
                              "max_recv=3884 srcaddr=ARRAY[02, 00, d1, 1e, c0, 00, 02, 01] "
                              "dstaddr=ARRAY[02, 00, 4e, 51, c0, 00, 02, 02]")


def test_a_client_and_a_server_trace_each_get_their_own_clock(tmp_path: Path):
    """Two hosts: the client's events in one file, the server's in another on a clock 3 s ahead; each file
    is measured on its own, and every transaction gets both sides' events."""
    client, server = tmp_path / "client.txt", tmp_path / "server.txt"
    shift = 3_000_000_000

    def later(m: re.Match) -> str:
        ns = int(m.group(1)) * 10**9 + int(m.group(2)) + shift
        return f"{ns // 10**9}.{ns % 10**9:09d}:"
    with lzma.open(trace_of(NFS / "rxe-nfsv3-full"), "rt") as src, open(client, "w") as c, open(server, "w") as s:
        for line in src:
            line_ = split_line(line.rstrip("\n"))
            if line_ is None or line_.event not in EVENTS:
                continue
            if EVENTS[line_.event].side.value == "server":
                s.write(re.sub(r"(\d+)\.(\d{9}):", later, line, count=1))
            elif EVENTS[line_.event].side.value == "client":
                c.write(line)
    join, rec = joined(NFS / "rxe-nfsv3-full.pcap", [client, server])
    cc, sc = join.clocks
    assert 0 <= cc.offset_ns < 200_000 and abs(sc.offset_ns + shift) < 2_000_000
    assert cc.low_ns <= 0 <= cc.high_ns and sc.low_ns <= -shift <= sc.high_ns
    for t in rec.transactions:
        sides = {e.side.value for e in t.host.events}
        assert sides == {"client", "server"}, hex(t.key)
        assert [e.ts for e in t.host.events] == sorted(e.ts for e in t.host.events)


@pytest.mark.parametrize("stem", [NFS / "rxe-nfsv3-full", NFS / "rxe-nfsv42-full"], ids=lambda p: p.name)
def test_the_clients_file_events_join_by_file_handle_hash_offset_and_count(stem: Path):
    """nfs_initiate_read/write (and NFSv4's nfs4_read/write) carry no XID: the file handle's hash
    (nfs.fh.hash), offset and count of the call tie each to its transaction, every one of the trace."""
    v4 = "v42" in stem.name
    r = run_cli("decode", str(stem.with_suffix(".pcap")), "-A", "-T", "fields", "-e", "rpcrdma.analysis.xid",
                "-e", "nfs.fh.hash", "-e", "nfs.offset4" if v4 else "nfs.offset3", "-e",
                "nfs.count4" if v4 else "nfs.count3", "-Y",
                f"{'nfs.offset4' if v4 else 'nfs.offset3'} and rpcrdma.analysis.role == \"call\"")
    wire = {}
    for line in r.stdout.splitlines():
        xid, fhs, off, cnt = line.split("\t")
        count = int(cnt.split(",")[0]) if cnt else None          # NFSv4 WRITE: tshark names no count field
        wire[int(xid, 16)] = ({int(f, 16) for f in fhs.split(",")}, int(off.split(",")[0]), count)
    _join, rec = joined(stem.with_suffix(".pcap"), [trace_of(stem)])
    names = ("nfs_initiate_read", "nfs_initiate_write", "nfs4_read", "nfs4_write")
    found = Counter()
    for t in rec.transactions:
        for e in t.host.events:
            if e.name in names:
                found[e.name] += 1
                fhs, off, cnt = wire[t.key]
                assert e.fields["fhandle"] in fhs and e.fields["offset"] == off, hex(t.key)
                assert cnt is None or e.fields["count"] == cnt, hex(t.key)
    with lzma.open(trace_of(stem), "rt") as f:
        traced = Counter(m.group(1) for m in re.finditer(r" (nfs_initiate_read|nfs_initiate_write|nfs4_read|"
                                                         r"nfs4_write): ", f.read()))
    assert found == traced
