"""`rdmaspy serve` / `rdmaspy load` outside the lab: one-line refusals, option parsing, the summary."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from rdmaspy.commands import traffic as T
from rdmaspy.traffic import protocol as P
from rdmaspy.traffic import verbs
from rdmaspy.traffic.session import Result


@pytest.mark.parametrize("argv", [["serve", "--addr", "192.0.2.2"],
                                  ["load", "--src", "192.0.2.1", "--dst", "192.0.2.2"]])
def test_without_rdma_one_line_pointing_to_the_lab(argv):
    if verbs.rdma_devices() and verbs.native_available():
        pytest.skip("this machine has RDMA and the native path")
    r = subprocess.run([sys.executable, "-m", "rdmaspy", *argv], capture_output=True, text=True, timeout=60)
    assert r.returncode == 1 and r.stdout == ""
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("rdmaspy: error: ") and "lab/run test" in lines[0]


def test_bad_mix_is_a_usage_error():
    r = subprocess.run([sys.executable, "-m", "rdmaspy", "load", "--src", "a", "--dst", "b", "--mix", "nope"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 1 and "unknown operation 'nope'" in r.stderr and "Traceback" not in r.stderr


def test_mix_weights_and_pull_reply_only_in_v1():
    assert T._parse_mix("null=3,read", 1) == [P.PROC_NULL] * 3 + [P.PROC_READ]
    assert T._parse_mix("null,pullreply", 2) == [P.PROC_NULL]
    with pytest.raises(T.TrafficUsage):
        T._parse_mix("pullreply", 2)


def test_sizes_with_units():
    sizes = T._parse_sizes("read=64k,echo=100", 8192)
    assert (sizes[P.PROC_READ], sizes[P.PROC_ECHO], sizes[P.PROC_WRITE], sizes[P.PROC_NULL]) == (65536, 100, 8192, 0)


def test_summary_rates_and_percentiles():
    res = [Result(i, P.PROC_READ, 1000, True, (i + 1) / 1000, "write-chunk") for i in range(100)]
    res.append(Result(999, P.PROC_NULL, 0, False, 0.5, "inline", "bad"))
    s = T.summarize(res, 2.0)
    assert (s["calls"], s["ok"], s["failed"], s["bytes"]) == (101, 100, 1, 100_000)
    assert s["ops_per_s"] == pytest.approx(50.5) and s["mb_per_s"] == pytest.approx(0.05)
    assert s["latency_us"]["p50"] == pytest.approx(51_000) and s["latency_us"]["max"] == pytest.approx(500_000)
    assert s["by_op"] == {"read": {"ok": 100, "failed": 0}, "null": {"ok": 0, "failed": 1}}
    assert s["failures"] == ["0x3e7 null: bad"]


class _SilentConn:
    """A connection whose peer took the calls and then went quiet (a wedged QP, a dead server)."""

    def __init__(self, link):
        self.link = link

    def __getattr__(self, name):
        return getattr(self.link, name)


def test_load_gives_up_when_calls_wait_with_nothing_arriving(monkeypatch):
    from argparse import Namespace

    from rdmaspy.traffic.session import Client, LoopLink

    a, _b, _log = LoopLink.pair()
    a.recv = lambda timeout=0.0: None          # nothing ever comes back
    cli = Client(a, version=1, credits=4, inline=P.Inline(1024, 1024), slots=2, slot_size=1 << 16)
    cli.ready = True
    monkeypatch.setattr(T, "STALL_SECONDS", 0.3)
    args = Namespace(duration=0, rate=0, count=3, quiet=True, fault=[], concurrency=2)
    with pytest.raises(ConnectionError, match=r"no reply in 0.3 s with 1 call\(s\) waiting"):
        T._run(args, cli, _SilentConn(a), [P.PROC_NULL], {P.PROC_NULL: 0})


def _results(latencies_us: dict[int, list[float]], size: int = 4096) -> list[Result]:
    """Recorded calls: per procedure, one call of each latency (microseconds)."""
    out, xid = [], 0
    for proc, lats in latencies_us.items():
        for us in lats:
            out.append(Result(xid, proc, size if proc != P.PROC_NULL else 0, True, us / 1e6, "inline"))
            xid += 1
    return out


def test_report_percentiles_per_operation_kind():
    res = _results({P.PROC_READ: [float(i) for i in range(1, 1001)], P.PROC_NULL: [5.0] * 99 + [900.0]})
    s = T.summarize(res, 2.0)
    read, null = s["per_op"]["read"], s["per_op"]["null"]
    assert (read["calls"], null["calls"]) == (1000, 100)
    # nearest rank over 1..1000 us: p50 at rank 500, p99 at 990, p99.9 at 999
    assert read["latency_us"] == pytest.approx({"p50": 501, "p90": 900, "p99": 990, "p99.9": 999, "max": 1000})
    assert null["latency_us"]["p99"] == pytest.approx(5) and null["latency_us"]["max"] == pytest.approx(900)
    assert read["ops_per_s"] == pytest.approx(500) and null["ops_per_s"] == pytest.approx(50)
    assert read["mb_per_s"] == pytest.approx(1000 * 4096 / 2.0 / 1e6) and null["mb_per_s"] == 0
    assert s["latency_us"]["p99.9"] == pytest.approx(999) and s["ops_per_s"] == pytest.approx(550)


def _summary(res: list[Result], elapsed: float) -> dict:
    s = T.summarize(res, elapsed)
    s.update(version=1, fell_back=False, inline=[1024, 1024], credits_granted=8, max_outstanding=1)
    return s


def test_report_text_has_a_row_per_operation_kind(capsys):
    T._report(_summary(_results({P.PROC_READ: [10.0, 20.0], P.PROC_ECHO: [30.0]}), 1.0), "text")
    out = capsys.readouterr().out
    rows = {line.split()[0]: line.split() for line in out.splitlines()[3:6]}
    assert out.splitlines()[2].split()[:3] == ["operation", "calls", "ops/s"]
    assert rows["echo"][1:3] == ["1", "1.0"] and rows["read"][1:3] == ["2", "2.0"]
    assert "p99.9" in out.splitlines()[1]


def test_report_json_is_the_whole_summary_on_stdout(capsys):
    s = _summary(_results({P.PROC_WRITE: [7.0, 9.0]}), 0.5)
    T._report(s, "json")
    got = json.loads(capsys.readouterr().out)
    assert got["per_op"]["write"]["latency_us"]["max"] == pytest.approx(9)
    assert got["per_op"]["write"]["ops_per_s"] == pytest.approx(4) and got["calls"] == 2


def test_live_rate_is_the_recent_rate_not_the_average():
    live = T.LiveRate(since=0.0)
    assert not live.add(1000, 0.1)
    assert live.add(1000, 0.25) and live.ops_per_s == pytest.approx(8) and live.mb_per_s == pytest.approx(0.008)
    for k in range(1, 100):            # then 100 calls in the next quarter second
        live.add(0, 0.25 + k * 0.0025)
    assert live.add(0, 0.5) and live.ops_per_s == pytest.approx(400)


class _ServedLink:
    """The client's end of a LoopLink pair whose server answers every call as it is received."""

    def __init__(self, a, b, srv):
        self.a, self.b, self.srv = a, b, srv

    def recv(self, timeout=0.0):
        while self.b.inbox:
            self.srv.handle(self.b.inbox.popleft())
        return self.a.inbox.popleft() if self.a.inbox else None


def test_load_loop_to_report_over_an_in_memory_link(capsys):
    from argparse import Namespace

    from rdmaspy.traffic.session import Client, LoopLink, Server

    a, b, _log = LoopLink.pair()
    srv = Server(b, versions=(1,), credits=8, inline=P.Inline(1024, 1024))
    cli = Client(a, version=1, credits=8, inline=P.Inline(1024, 1024), slots=4, slot_size=1 << 17)
    link = _ServedLink(a, b, srv)
    cli.start()
    while not cli.ready:
        cli.on_message(link.recv())
    args = Namespace(duration=0, rate=0, count=30, quiet=True, fault=[], concurrency=4)
    conn = Namespace(link=link)
    results, elapsed = T._run(args, cli, conn, [P.PROC_NULL, P.PROC_READ, P.PROC_ECHO],
                              {P.PROC_NULL: 0, P.PROC_READ: 9000, P.PROC_ECHO: 100})
    s = T.summarize(results, elapsed)
    assert {k: v["calls"] for k, v in s["per_op"].items()} == {"null": 10, "read": 10, "echo": 10}
    assert s["per_op"]["read"]["bytes"] == 90_000 and s["ok"] == 30
    assert all(v["latency_us"]["p50"] > 0 for v in s["per_op"].values())
    assert capsys.readouterr().out == ""          # nothing on stdout before the report
