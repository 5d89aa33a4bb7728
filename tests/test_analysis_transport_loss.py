"""The transport analysis under loss, reordering and duplication: each finding what the packets say.

Every capture here is built (rdmaspy.craft) as two rxe hosts make it: each numbers the packets it sends
to the other from one counter (the IPv4 identification), so a copy made on the way has its original's
number and bytes, a packet sent again a later number, and a delayed one a number below others already
captured.  Client 192.0.2.2 (QP 0x21) sends requests to server 192.0.2.1 (QP 0x11), which answers; the
path MTU is 1024.
"""
from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

from rdmaspy.analysis.analyzer import Analyzer
from rdmaspy.analysis.rules import Finding
from rdmaspy.craft import rocev2, rocev2_mad, write_pcap
from rdmaspy.engine import Engine
from rdmaspy.readers import open_capture

from conftest import ROOT

sys.path.insert(0, str(ROOT / "tests"))
from cm_build import cm_mad, rep, req, sid  # noqa: E402

CLIENT, SERVER = "192.0.2.2", "192.0.2.1"
CQP, SQP = 0x21, 0x11
MTU = 1024
SEND_ONLY, READ_REQ, ACK = 0x04, 0x0C, 0x11
FIRST, MIDDLE, LAST, ONLY = 0x0D, 0x0E, 0x0F, 0x10
VA, RKEY = 0x7F0000000000, 0x1234


class Hosts:
    """The two hosts: each packet built with its sender's next identification (``numbered``; else 0, as a
    sender that does not count them)."""

    def __init__(self, numbered: bool = True) -> None:
        self.next_id = {CLIENT: 0x1000, SERVER: 0x5000}
        self.numbered = numbered

    def _id(self, src: str) -> int:
        if not self.numbered:
            return 0
        ident = self.next_id[src]
        self.next_id[src] = (ident + 1) & 0xFFFF
        return ident

    def c(self, op: int, psn: int, payload: bytes = b"", **kw: object) -> bytes:
        return rocev2(op, SQP, psn, payload, src=CLIENT, dst=SERVER, smac="02:00:00:00:00:02",
                      dmac="02:00:00:00:00:01", ip_id=self._id(CLIENT), **kw)

    def s(self, op: int, psn: int, payload: bytes = b"", **kw: object) -> bytes:
        return rocev2(op, CQP, psn, payload, src=SERVER, dst=CLIENT, smac="02:00:00:00:00:01",
                      dmac="02:00:00:00:00:02", ip_id=self._id(SERVER), **kw)

    def send(self, psn: int) -> bytes:
        return self.c(SEND_ONLY, psn, b"\x20" * 64, ackreq=1)

    def ack(self, psn: int, syndrome: int = 0x1F) -> bytes:
        return self.s(ACK, psn, syndrome=syndrome, msn=1)

    def read(self, psn: int, length: int, offset: int = 0) -> bytes:
        return self.c(READ_REQ, psn, va=VA + offset, r_key=RKEY, dma_length=length)

    def answer(self, psn: int, count: int, first: int | None = None, last_bytes: int = MTU) -> list[bytes]:
        """The responses of a READ of ``count`` packets from PSN ``psn``, as the responder sends them; the
        first one at ``first`` (a READ asked again from a response PSN) is a Middle, as rxe sends it."""
        out = []
        for i in range(count):
            p = psn + i
            if count == 1:
                op = ONLY
            elif i == 0:
                op = FIRST if first is None else MIDDLE
            else:
                op = LAST if i == count - 1 else MIDDLE
            size = last_bytes if i == count - 1 else MTU
            kw = {"syndrome": 0x1F, "msn": 1} if op in (FIRST, LAST, ONLY) else {}
            out.append(self.s(op, p, bytes([p & 0xFF]) * size, **kw))
        return out

    def warm(self, psn: int, n: int = 5) -> list[bytes]:
        """``n`` SENDs from ``psn``, each ACKed: both counters seen counting."""
        out = []
        for i in range(n):
            out += [self.send(psn + i), self.ack(psn + i)]
        return out


def cm(path_mtu_code: int = 3) -> list[bytes]:
    """The CM exchange of the connection (path MTU 1024: code 3)."""
    tid = 0x77
    return [rocev2_mad(cm_mad(0x10, req(0x5001, sid(20049), CQP, 0x500, b"", src=CLIENT, dst=SERVER,
                                        mtu=path_mtu_code), tid), src=CLIENT, dst=SERVER),
            rocev2_mad(cm_mad(0x13, rep(0x6001, 0x5001, SQP, 0x700, b""), tid), src=SERVER, dst=CLIENT)]


def analyse(tmp_path: Path, frames: list[bytes], step_ns: int = 10_000) -> list[Finding]:
    path = tmp_path / "built.pcap"
    write_pcap(str(path), frames, step_ns=step_ns)
    an = Analyzer(strict=True)
    engine = Engine(strict=True)
    with open_capture(str(path)) as cap:
        for frame in cap:
            an.feed(engine.dissect(frame))
    an.finish()
    return an.findings


def ib(findings: list[Finding]) -> Counter:
    return Counter(f.rule_def.id for f in findings if f.rule_def.id.startswith("ib."))


def said(findings: list[Finding], rule: str) -> list[Finding]:
    return [f for f in findings if f.rule_def.id == rule]


# --- A: answers to READs sent again ---------------------------------------------------------------------------
def test_answers_to_reads_sent_again_while_the_first_answers_arrive_are_no_duplicates(tmp_path: Path) -> None:
    """READ A@100 and B@104 (4 KiB each) answered; READ C@108; A, B and C sent again; C's first answer, then
    the answers to A, B and C sent again: each answer is its READ's (before: 12 duplicates)."""
    h = Hosts()
    frames = h.warm(95)
    frames += [h.read(100, 4096)] + h.answer(100, 4)
    frames += [h.read(104, 4096, 4096)] + h.answer(104, 4)
    frames += [h.read(108, 4096, 8192), h.read(100, 4096), h.read(104, 4096, 4096), h.read(108, 4096, 8192)]
    frames += h.answer(108, 4) + h.answer(100, 4) + h.answer(104, 4) + h.answer(108, 4)
    findings = analyse(tmp_path, frames)
    assert ib(findings) == {"ib.retransmission": 3}


# --- B: a response ahead of its neighbour ---------------------------------------------------------------------
def test_a_response_overtaken_by_the_next_is_out_of_order_not_a_duplicate(tmp_path: Path) -> None:
    """READ@100 of 4 KiB answered 100 First, 102 Middle, 101 Middle, 103 Last: 101 was never seen before; 102
    overtook it (before: 101 "a duplicate of a response already received")."""
    h = Hosts()
    frames = h.warm(95) + [h.read(100, 4096)]
    first, second, third, last = h.answer(100, 4)
    findings = analyse(tmp_path, frames + [first, third, second, last])
    assert ib(findings) == {"ib.out_of_order": 1}
    (late,) = said(findings, "ib.out_of_order")
    assert late.args["psn"] == 102 and late.frames == (len(frames) + 2, len(frames) + 3)
    assert "overtook 1 earlier PSN(s) from 101" in late.text


# --- C: the READ window when the CM's path MTU is the wire's --------------------------------------------------
def test_a_cm_path_mtu_the_wire_confirms_sizes_the_read_window(tmp_path: Path) -> None:
    """The CM says 1024 and full packets of 1024 confirm it: READ X@100 (8 KiB) answered, READ Y@108, X sent
    again, Y's answers: they are Y's, 8 packets each (before: "8192 bytes answered in 16 packets" and a gap
    of 8 PSNs, Y's answers taken for the window of X sent again, four times too wide)."""
    h = Hosts()
    frames = cm() + h.warm(95)
    frames += [h.read(100, 8192)] + h.answer(100, 8)
    frames += [h.read(108, 8192, 8192), h.read(100, 8192)]
    frames += h.answer(108, 8) + h.answer(100, 8)
    findings = analyse(tmp_path, frames)
    assert ib(findings) == {"ib.retransmission": 1}


# --- D: a First after a later response of its READ ------------------------------------------------------------
def test_a_first_response_after_a_later_one_fills_its_gap(tmp_path: Path) -> None:
    """READ@100 answered 101 Middle, 100 First, 102 Middle, 103 Last: 100 came late; nothing is lost (before:
    the First reset the READ and 101 was forgotten: "1 earlier PSN(s) not captured" at 102)."""
    h = Hosts()
    frames = h.warm(95) + [h.read(100, 4096)]
    first, second, third, last = h.answer(100, 4)
    findings = analyse(tmp_path, frames + [second, first, third, last])
    assert ib(findings) == {"ib.out_of_order": 1}
    (late,) = said(findings, "ib.out_of_order")
    assert late.args["psn"] == 101 and late.frames == (len(frames) + 1, len(frames) + 2)


# --- E: answers in flight when a READ is sent again -----------------------------------------------------------
def test_answers_in_flight_when_a_read_is_sent_again_are_the_first_reads(tmp_path: Path) -> None:
    """READ A@100 (8 packets): 100..103 answered, A sent again, 104..107 of the first answer still arrive, then
    the whole answer again (before: 104 went to the READ sent again: "4 earlier PSN(s) not captured")."""
    h = Hosts()
    frames = cm() + h.warm(95) + [h.read(100, 8192)]
    answer = h.answer(100, 8)
    again = h.read(100, 8192)
    frames += answer[:4] + [again] + answer[4:] + h.answer(100, 8)
    findings = analyse(tmp_path, frames)
    assert ib(findings) == {"ib.retransmission": 1}


# --- F: go-back-N after the NAK, the delayed original before it -----------------------------------------------
def _nak_then_go_back(h: Hosts) -> list[bytes]:
    """SENDs 100..103; 101 and 102 delayed, the responder NAKs 101 after 103; 101 arrives, then the requester
    sends 101..103 again; 102's first sending never arrives."""
    frames = h.warm(95)
    s100, s101, s102, s103 = (h.send(p) for p in range(100, 104))
    nak = h.ack(101, syndrome=0x60)
    again = [h.send(p) for p in range(101, 104)]
    return frames + [s100, s103, nak, s101] + again + [h.ack(103)]


def test_go_back_n_after_a_nak_is_sent_again_through_the_last_psn(tmp_path: Path) -> None:
    """The delayed 101 (an earlier identification) came late, not sent again: 103 overtook it; 102 sent again
    fills the gap: a retransmission, the one PSN not captured (before: 101 "sent again", 102 out of order, 2
    lost)."""
    frames = _nak_then_go_back(Hosts())
    findings = analyse(tmp_path, frames)
    assert ib(findings) == {"ib.nak.psn_sequence": 1, "ib.out_of_order": 1, "ib.retransmission": 3,
                            "ib.lost_segment": 1}
    (late,) = said(findings, "ib.out_of_order")
    assert late.args["psn"] == 103 and "overtook 1 earlier PSN(s) from 101" in late.text
    assert sorted(f.args["psn"] for f in said(findings, "ib.retransmission")) == [101, 102, 103]
    (lost,) = said(findings, "ib.lost_segment")
    assert lost.args == {"psn": 103, "count": 1, "expected": 101}


def test_without_identifications_the_nak_state_lasts_through_go_back_n(tmp_path: Path) -> None:
    """A sender that does not number its packets: 101 after the NAK cannot be told from its sending again,
    but 102 sent again is a retransmission still, not out of order."""
    frames = _nak_then_go_back(Hosts(numbered=False))
    findings = analyse(tmp_path, frames)
    assert "ib.out_of_order" not in ib(findings)
    resent = [f.args["psn"] for f in said(findings, "ib.retransmission")]
    assert 102 in resent and ib(findings)["ib.nak.psn_sequence"] == 1


# --- missing findings -----------------------------------------------------------------------------------------
def test_a_read_asked_again_from_its_middle_and_answered_with_a_middle_is_reported(tmp_path: Path) -> None:
    """READ X@100 (4 packets): 100, 101 answered, 102 and 103 lost; X asked again from 102, then again whole;
    the responder answers the first with 102 Middle, 103 Last (before: taken for the whole READ's window: a
    gap of 2 PSNs, and the breach unsaid)."""
    h = Hosts()
    frames = h.warm(95) + [h.read(100, 4096)] + h.answer(100, 4)[:2]
    frames += [h.read(102, 2048, 2048), h.read(100, 4096)]
    frames += h.answer(102, 2, first=102) + h.answer(100, 4)
    findings = analyse(tmp_path, frames)
    assert ib(findings) == {"ib.retransmission": 2, "ib.read_response_sequence": 1}
    (breach,) = said(findings, "ib.read_response_sequence")
    assert breach.args["psn"] == 102 and breach.args["opcode"] == "READ Response Middle"
    assert breach.text.endswith("then the capture shows no later request from the requester")


def test_what_the_requester_does_after_a_read_answered_from_its_middle_is_said(tmp_path: Path) -> None:
    h = Hosts()
    frames = h.warm(95) + [h.read(100, 4096)] + h.answer(100, 4)[:2]
    frames += [h.read(102, 2048, 2048)] + h.answer(102, 2, first=102)
    asks = len(frames) + 1
    frames += [h.read(102, 2048, 2048)] + h.answer(102, 2, first=102)
    goes_on = len(frames) + 1
    frames += [h.send(104), h.ack(104)]
    findings = analyse(tmp_path, frames)
    first, second = said(findings, "ib.read_response_sequence")
    assert first.text.endswith(f"then the requester asks for it again (frame {asks})")
    assert second.text.endswith(f"then the requester goes on without asking for it again (frame {goes_on})")


def test_a_copy_made_on_the_way_is_a_duplicate_whenever_it_comes(tmp_path: Path) -> None:
    """SEND 101 and the READ response 104 each copied on the way (the same bytes and identification),
    the copies 300 us later, after other packets (before: "sent again", and "a response already received")."""
    h = Hosts()
    frames = h.warm(95)
    s100, s101, s102 = (h.send(p) for p in range(100, 103))
    read = h.read(103, 2048)
    r103, r104 = h.answer(103, 2)
    frames += [s100, s101, s102, h.ack(102), read, r103, r104, s101, r104]
    findings = analyse(tmp_path, frames, step_ns=100_000)
    assert ib(findings) == {"ib.duplicate": 2}
    request_copy, response_copy = said(findings, "ib.duplicate")
    assert request_copy.args["psn"] == 101 and request_copy.frames[1] == len(frames) - 7
    assert response_copy.args["psn"] == 104 and response_copy.frames[1] == len(frames) - 2


def test_a_packet_sent_again_with_the_same_bytes_late_is_a_retransmission(tmp_path: Path) -> None:
    """A sender that does not count its identifications: the same bytes 300 us later are sent again (a
    timeout), not a copy; 1 us later they are a copy."""
    h = Hosts(numbered=False)
    frames = h.warm(95) + [h.send(100), h.send(101), h.send(101)]
    late = analyse(tmp_path, frames, step_ns=300_000)
    assert ib(late) == {"ib.retransmission": 1}
    at_once = analyse(tmp_path, frames, step_ns=1000)
    assert ib(at_once) == {"ib.duplicate": 1}


def test_a_nak_then_only_the_naked_packet_sent_again_is_a_go_back_n_stall(tmp_path: Path) -> None:
    """SENDs 100..105; the responder NAKs 102; the requester sends 102 again, and nothing after."""
    h = Hosts()
    frames = h.warm(95) + [h.send(p) for p in range(100, 106)]
    nak = len(frames) + 1
    frames += [h.ack(102, syndrome=0x60), h.send(102), h.ack(102)]
    findings = analyse(tmp_path, frames)
    (stall,) = said(findings, "ib.go_back_n_stall")
    assert stall.frames == (nak, nak + 1)
    assert stall.args == {"psn": 102, "nak": nak, "resent": 102, "top": 105, "count": 4}
    assert stall.severity == "error"


def test_go_back_n_through_every_psn_is_no_stall(tmp_path: Path) -> None:
    h = Hosts()
    frames = h.warm(95) + [h.send(p) for p in range(100, 106)]
    frames += [h.ack(102, syndrome=0x60)] + [h.send(p) for p in range(102, 106)] + [h.ack(105)]
    assert "ib.go_back_n_stall" not in ib(analyse(tmp_path, frames))


def test_a_gap_no_packet_fills_is_lost_when_its_window_has_passed(tmp_path: Path) -> None:
    """PSN 101 never comes: its gap is said, with the frame after it, once no delayed 101 can come."""
    h = Hosts()
    frames = h.warm(95) + [h.send(100), h.send(102), h.ack(102)]
    findings = analyse(tmp_path, frames)
    (lost,) = said(findings, "ib.lost_segment")
    assert lost.args == {"psn": 102, "count": 1, "expected": 101} and lost.frames == (len(frames) - 1,)


# --- every presentation sees the packet with its findings final -----------------------------------------------
class Shown:
    """A pipeline sink: each packet as it reaches the sinks, with the rules of its expert items, and how many
    frames the pipeline had read by then."""

    def __init__(self) -> None:
        self.packets: list[tuple[int, list[str], int]] = []
        self.pipe = None

    def attach(self, pipe) -> None:
        self.pipe = pipe

    def packet(self, pkt) -> None:
        self.packets.append((pkt.frame.num, [getattr(e, "rule", "") for e in pkt.expert or ()], self.pipe.frames))

    def finish(self) -> None:
        pass


def shown(tmp_path: Path, frames: list[bytes], step_ns: int = 10_000) -> Shown:
    from rdmaspy.pipeline import Options, Pipeline
    path = tmp_path / "shown.pcap"
    write_pcap(str(path), frames, step_ns=step_ns)
    sink = Shown()
    with open_capture(str(path)) as cap:
        Pipeline(cap, Options(analyze=True), [sink]).run()
    return sink


def test_a_packet_after_a_gap_is_shown_once_its_gap_is_decided(tmp_path: Path) -> None:
    """SEND 102 skips 101, which never comes: 102 reaches the sinks with its ib.lost_segment, once the window
    that could refute it has passed (the frames after it wait too, in order)."""
    h = Hosts()
    frames = h.warm(95) + [h.send(100), h.send(102)] + [h.ack(102)] + h.warm(103, 3)
    sink = shown(tmp_path, frames)
    assert [n for n, _r, _f in sink.packets] == list(range(1, len(frames) + 1))
    gap = len(frames) - 7
    rules = {n: r for n, r, _f in sink.packets}
    assert rules[gap] == ["ib.lost_segment"]
    assert all(read == len(frames) for n, _r, read in sink.packets if n >= gap)   # decided at the end


def test_a_packet_whose_gap_a_late_packet_fills_is_shown_without_a_loss(tmp_path: Path) -> None:
    h = Hosts()
    frames = h.warm(95)
    s100, s101, s102 = (h.send(p) for p in range(100, 103))
    frames += [s100, s102, s101, h.ack(102)]
    sink = shown(tmp_path, frames)
    rules = {n: r for n, r, _f in sink.packets}
    ahead = len(frames) - 2
    assert rules[ahead] == ["ib.out_of_order"] and rules[ahead + 1] == []
    assert {n: read for n, _r, read in sink.packets}[ahead] == ahead + 1      # shown as soon as 101 came


def test_the_wait_for_a_gap_is_bounded_by_the_hold_window(tmp_path: Path) -> None:
    from rdmaspy.analysis.transport import HOLD_FRAMES
    h = Hosts()
    frames = h.warm(95) + [h.send(100), h.send(102)]
    frames += [p for i in range(HOLD_FRAMES // 2 + 10) for p in (h.send(103 + i), h.ack(103 + i))]
    sink = shown(tmp_path, frames)
    gap = 12
    (read,) = [read for n, _r, read in sink.packets if n == gap]
    assert read == gap + HOLD_FRAMES + 1
    assert {n: r for n, r, _f in sink.packets}[gap] == ["ib.lost_segment"]


def test_decode_json_and_the_tui_detail_show_the_finding_held(tmp_path: Path) -> None:
    import json
    import subprocess
    from rdmaspy.tui.detail import DetailSource
    h = Hosts()
    frames = h.warm(95) + [h.send(100), h.send(102), h.ack(102)] + h.warm(103, 2)
    path = tmp_path / "gap.pcap"
    write_pcap(str(path), frames)
    gap = 12
    out = subprocess.run([sys.executable, "-m", "rdmaspy", "decode", "-T", "json", str(path)], capture_output=True,
                         check=True, cwd=ROOT, env={**__import__("os").environ, "PYTHONPATH": str(ROOT)}).stdout
    lines = [json.loads(line) for line in out.splitlines()]          # JSON Lines: one object a packet
    assert len(lines) == len(frames)
    assert "PSN 102: 1 earlier PSN(s) not captured (expected 101)" in json.dumps(lines[gap - 1])
    detail = DetailSource(str(path)).detail(gap)
    assert detail is not None
    assert any("PSN 102: 1 earlier PSN(s) not captured" in n.text for n in detail.nodes)
