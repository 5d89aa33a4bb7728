"""Credits: requested, granted, outstanding over time, and the violations."""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent / "fixtures"))

import analysis_build as ab  # noqa: E402
from analysis_run import analyse, analyse_frames  # noqa: E402

from rdmaspy.analysis.credits import SERIES_CHUNK, CreditLedger  # noqa: E402
from rdmaspy.analysis.model import CallDirection  # noqa: E402


def _series(res, direction="forward"):
    pts = []
    for r in res.records["credits"]:
        if r["direction"] == direction:
            pts.extend(r["points"])
    return pts


def test_concurrent_capture_fills_exactly_the_servers_grant():
    """captures/README: up to 64 calls outstanding at once, exactly the server's grant; the client asks 128."""
    res = analyse("rxe-nfsv3-concurrent.pcap")
    (led,) = res.records["rpcrdma.connection"][0]["credits"]
    assert led["direction"] == "forward"
    assert led["requested"] == 128 and led["granted"] == 64 and led["granted_min"] == led["granted_max"] == 64
    assert led["peak_outstanding"] == 64 and led["exceeded"] == 0 and led["zero_grants"] == 0
    assert led["calls"] == 568 and led["outstanding_at_end"] == 0
    assert not [f for f in res.own if f.rule_def.id.startswith("credits.")]


def test_series_follows_the_transactions():
    """Outstanding calls at each instant, recomputed from the calls and replies, equal the series."""
    res = analyse("rxe-nfsv3-concurrent.pcap")
    events = {}
    for t in res.transactions:
        events.setdefault(t["call"]["ts"], 0)
        events[t["call"]["ts"]] += 1
        events.setdefault(t["reply"]["ts"], 0)
        events[t["reply"]["ts"]] -= 1
    n = 0
    expect = []
    for ts in sorted(events):
        n += events[ts]
        expect.append((ts, n))
    pts = _series(res)
    assert [(p[0], p[1]) for p in pts] == expect
    assert max(p[1] for p in pts) == 64
    assert all(p[2] in (None, 64) for p in pts)


def test_sequential_capture_has_one_call_at_a_time():
    res = analyse("rxe-nfsv3-rdma.pcap")
    (led,) = res.records["rpcrdma.connection"][0]["credits"]
    assert led["peak_outstanding"] == 1 and led["granted"] == 64 and led["requested"] == 128


def test_clean_conversation_stays_within_its_grant():
    res = analyse_frames(ab.scenario_v1())
    assert res.rules() == []
    (led,) = res.records["rpcrdma.connection"][0]["credits"]
    assert led["peak_outstanding"] == 2 and led["granted"] == 8


def test_exceeding_the_grant():
    res = analyse_frames(ab.scenario_v1(credit_exceeded=True))
    assert res.rules() == ["credits.exceeded"]
    f = res.own[0]
    assert f.args == {"outstanding": 2, "granted": 1, "direction": "forward"} and f.xid == 0x1008


def test_a_zero_grant():
    res = analyse_frames(ab.scenario_v1(zero_grant=True))
    assert res.rules() == ["credits.zero_grant"]
    assert res.own[0].xid == 0x1008


def test_version_2_zero_grant():
    res = analyse_frames(ab.scenario_v2(zero_grant=True))
    assert res.rules() == ["credits.zero_grant"]


def test_version_2_client_sends_one_message_before_the_first_grant():
    res = analyse_frames(ab.scenario_v2(initial_two=True))
    assert res.rules() == ["credits.initial_single"]


def test_version_2_credit_refresh_is_noted_with_both_halves():
    res = analyse_frames(ab.scenario_v2(refresh_xid=True))
    assert res.rules() == ["credits.refresh", "rpcrdma2.refresh_xid"]
    refresh = next(f for f in res.own if f.rule_def.id == "credits.refresh")
    assert refresh.args == {"granted": 8, "max_outstanding": 32}
    # The server's refresh grants the client credits: it counts in the client's (forward) direction.
    led = next(c for c in res.records["rpcrdma.connection"][0]["credits"] if c["direction"] == "forward")
    assert led["refreshes"] == 1 and led["max_outstanding"] == 32 and led["granted"] == 8


def test_series_goes_out_in_pieces():
    out = []
    led = CreditLedger(1, CallDirection.FORWARD, out.append)
    for i in range(SERIES_CHUNK + 10):
        led.call(i * 10, 2 * i + 1, 4)
        led.answered(i * 10 + 5, 2 * i + 2)
    led.flush()
    pts = [p for r in out for p in r.samples]
    assert len(out) == 3 and len(pts) == 2 * (SERIES_CHUNK + 10)
    assert all(len(r.samples) <= SERIES_CHUNK for r in out)
    assert [p.frame for p in pts] == list(range(1, 2 * (SERIES_CHUNK + 10) + 1))
    assert [p.outstanding for p in pts[:4]] == [1, 0, 1, 0] and pts[0].requested == 4
    assert led.samples == []


def test_version_1_client_has_one_credit_until_the_first_reply():
    """RFC 8166 §3.3.3: the credit grant is one when the connection starts."""
    from analysis_build import CLIENT, SERVER, Wire

    from rdmaspy.dissectors import onc_rpc, rpcrdma
    from rdmaspy.dissectors.xdr import p32, popaque
    w = Wire()
    w.cm()
    for x in (0x1, 0x2):
        w.send(CLIENT, rpcrdma.encode_v1(x, 0, 32, payload=onc_rpc.encode_call(x, 100003, 3, 1, popaque(ab.FH))))
    for x in (0x1, 0x2):
        w.send(SERVER, rpcrdma.encode_v1(x, 0, 8, payload=onc_rpc.encode_reply(x, p32(0) + bytes(84))))
    res = analyse_frames(w.out())
    assert res.rules() == ["credits.initial_single"]
    assert res.own[0].xid == 0x2 and res.own[0].args == {"outstanding": 2}
