"""A long capture (or a live run) keeps no call for ever: a call left unanswered while its connection
makes CALL_WINDOW more calls is closed as unanswered (``transaction.reply_overdue``), and what one open
transaction keeps (steps, findings, resendings of its call) is capped, the rest counted in ``dropped``."""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent / "fixtures"))

import hostile_build  # noqa: E402
from analysis_run import analyse_frames  # noqa: E402
from rpcrdma_build import CLIENT, FH, NFS, NFSV3, SERVER, SQP, Wire, _cred  # noqa: E402

from rdmaspy import craft  # noqa: E402
from rdmaspy.analysis import transactions as tx  # noqa: E402
from rdmaspy.dissectors import onc_rpc, rpcrdma  # noqa: E402
from rdmaspy.dissectors.xdr import popaque  # noqa: E402


def _frames(packets) -> list[tuple[int, bytes]]:
    return [(1_000_000 * i, p) for i, p in enumerate(packets)]


def test_calls_unanswered_past_the_window_are_closed_as_overdue():
    n = tx.CALL_WINDOW + 300
    res = analyse_frames(_frames(hostile_build.unanswered_calls(n)))
    overdue = sorted(f.frames[0] for f in res.own if f.rule_def.id == "transaction.reply_overdue")
    at_end = [f.frames[0] for f in res.own if f.rule_def.id == "transaction.no_reply"]
    # the sweep runs every _SWEEP_EVERY calls: at the last one, the calls older than the window go
    last_sweep = n - n % tx._SWEEP_EVERY
    assert overdue == list(range(1, last_sweep - tx.CALL_WINDOW + 1))
    assert len(overdue) + len(at_end) == n and min(at_end) == len(overdue) + 1
    states = [t["state"] for t in res.transactions]
    assert states.count("unanswered") == n
    summary = res.records["rpcrdma.connection"]
    assert [s["unanswered"] for s in summary] == [n]


def test_a_call_answered_within_the_window_is_complete():
    # the first call is answered after CALL_WINDOW - 1 later calls: still inside the window
    cred = _cred()
    wire = Wire()
    for i in range(tx.CALL_WINDOW):
        wire.send(CLIENT, rpcrdma.encode_v1(i, 0, 128, payload=onc_rpc.encode_call(i, NFS, NFSV3, 1, popaque(FH),
                                                                                   cred)))
    wire.send(SERVER, rpcrdma.encode_v1(0, 0, 128, payload=onc_rpc.encode_reply(0, b"")))
    res = analyse_frames(_frames(wire.frames))
    first = [t for t in res.transactions if t["xid"] == 0]
    assert [t["state"] for t in first] == ["complete"]
    assert not [f for f in res.own if f.rule_def.id == "transaction.reply_overdue"]


def test_a_call_resent_without_end_keeps_a_bounded_record():
    cred = _cred()
    call = rpcrdma.encode_v1(7, 0, 128, payload=onc_rpc.encode_call(7, NFS, NFSV3, 1, popaque(FH), cred))
    sent = tx.RESENDINGS_KEPT + 40
    res = analyse_frames(_frames(craft.rocev2(0x04, SQP, i, call, src=CLIENT, dst=SERVER) for i in range(sent)))
    (t,) = res.transactions
    assert len(t["call"]["retransmissions"]) == tx.RESENDINGS_KEPT
    # every resending past the cap is counted; so is every finding of the call past FINDINGS_KEPT
    # (one a resending, and whatever else it broke)
    own = [f for f in res.own if f.xid == 7]
    assert len(t["findings"]) == tx.FINDINGS_KEPT < len(own)
    assert t["dropped"] == (sent - 1 - tx.RESENDINGS_KEPT) + (len(own) - tx.FINDINGS_KEPT)
    resent = [f for f in res.own if f.rule_def.id == "transaction.retransmitted_call"]
    assert len(resent) == sent - 1          # the findings themselves all go out


def test_a_transaction_within_the_caps_says_nothing_dropped():
    res = analyse_frames(_frames(hostile_build.unanswered_calls(3)))
    assert res.transactions and all("dropped" not in t for t in res.transactions)
