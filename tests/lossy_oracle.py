"""What the packets of a lossy capture say, from their bytes alone: the oracle of the transport findings.

rxe numbers every packet it sends to a host from one counter, the IPv4 identification, so on a capture
of rxe traffic a packet tells what it is without any analysis: the same identification and bytes as an
earlier packet, a copy made on the way; a later identification with a PSN already used, a packet sent
again by its sender; an identification below one already captured from its sender, a delayed original.
``Oracle(path).verdict(finding)`` says why a finding is false (None when the packets bear it out), for
the rules of the InfiniBand transport analysis, of TCP under MPA, and of RPC transactions (with tshark's
RPC decoding for the XIDs).  The headers are read here by hand, independently of rdmaspy's dissectors.

    python3 tests/lossy_oracle.py CAPTURE...     the findings of each capture, true and false, by rule
"""
from __future__ import annotations

import struct
import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.append(str(ROOT))          # after any rdmaspy already on the path (another tree's, to compare)

from rdmaspy.readers import open_capture  # noqa: E402

_MASK = 0xFFFFFF
_REQUESTS = frozenset({0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09, 0x0A, 0x0B, 0x0C, 0x13, 0x14,
                       0x16, 0x17})
_READ_RESPONSES = frozenset({0x0D, 0x0E, 0x0F, 0x10})
_WITH_AETH = frozenset({0x0D, 0x0F, 0x10, 0x11, 0x12})
# Findings that say what one packet shows by itself: a NAK, an RNR NAK, a congestion mark are on the wire.
_ON_THE_WIRE = ("ib.nak.", "ib.rnr_nak", "ib.cnp", "ib.ecn_ce", "ib.bad_icrc", "memory.budget")
# Findings about one RPC-over-RDMA message: they stand when said of its first sending.
_ONE_MESSAGE = ("rpcrdma.", "rpcrdma2.", "chunk.", "credits.")


def _before(a: int, b: int) -> bool:
    """Identification ``a`` was given before ``b`` (16-bit, modulo)."""
    return 0 < ((b - a) & 0xFFFF) < 0x8000


@dataclass(slots=True)
class Roce:
    """One RoCEv2 packet over IPv4, as its bytes say."""
    frame: int
    src: str
    dst: str
    ident: int
    opcode: int
    destqp: int
    psn: int
    payload: int
    data: bytes
    read_length: int = 0           # a READ request's DMA length
    syndrome: int = -1             # AETH syndrome (-1: none)


@dataclass(slots=True)
class Segment:
    """One TCP segment with a payload."""
    frame: int
    key: tuple[str, int, str, int]
    seq: int
    length: int


def _addr(b: bytes) -> str:
    return ".".join(str(x) for x in b)


@dataclass
class Oracle:
    path: Path
    roce: dict[int, Roce] = field(default_factory=dict)
    tcp: dict[int, Segment] = field(default_factory=dict)
    _rpc: tuple[dict[int, list[int]], dict[int, list[int]]] | None = None
    _said: dict[tuple, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        with open_capture(str(self.path)) as cap:
            for f in cap:
                self._parse(f.num, bytes(f.data))
        self.frames = sorted(self.roce)
        self._first_copy: dict[int, int] = {}      # frame -> the earlier frame it is a copy of
        seen: dict[bytes, int] = {}
        for n in sorted(set(self.roce) | set(self.tcp)):
            data = self.roce[n].data if n in self.roce else None
            if data is None:
                continue
            if data in seen:
                self._first_copy[n] = seen[data]
            else:
                seen[data] = n

    # -- reading ---------------------------------------------------------------------------------------
    def _parse(self, num: int, d: bytes) -> None:
        if len(d) < 34 or d[12:14] != b"\x08\x00" or d[14] >> 4 != 4:
            return
        ihl = (d[14] & 15) * 4
        ip = 14
        total = struct.unpack_from("!H", d, ip + 2)[0]
        end = min(len(d), ip + total)
        src, dst = _addr(d[ip + 12:ip + 16]), _addr(d[ip + 16:ip + 20])
        ident = struct.unpack_from("!H", d, ip + 4)[0]
        l4 = ip + ihl
        if d[ip + 9] == 17 and end - l4 >= 8 + 12 + 4 and struct.unpack_from("!H", d, l4 + 2)[0] == 4791:
            bth = l4 + 8
            opcode = d[bth]
            pad = (d[bth + 1] >> 4) & 3
            destqp = int.from_bytes(d[bth + 5:bth + 8], "big")
            psn = int.from_bytes(d[bth + 9:bth + 12], "big")
            if opcode >> 5:                      # UC/UD/other transports: not followed here
                return
            pos = bth + 12
            read_length = 0
            syndrome = -1
            if opcode in (0x06, 0x0A, 0x0B, 0x0C):
                if opcode == 0x0C:
                    read_length = struct.unpack_from("!I", d, pos + 12)[0]
                pos += 16
            elif opcode in (0x13, 0x14):
                pos += 28
            if opcode in (0x03, 0x05, 0x09, 0x0B):
                pos += 4                         # immediate data
            elif opcode in (0x16, 0x17):
                pos += 4                         # invalidated R_Key
            if opcode in _WITH_AETH:
                syndrome = d[pos]
                pos += 4
            if opcode == 0x12:
                pos += 8
            payload = max(0, end - 4 - pad - pos)
            self.roce[num] = Roce(num, src, dst, ident, opcode, destqp, psn, payload, d[:end], read_length,
                                  syndrome)
        elif d[ip + 9] == 6 and end - l4 >= 20:
            off = (d[l4 + 12] >> 4) * 4
            n = end - l4 - off
            if n > 0:
                sport, dport = struct.unpack_from("!HH", d, l4)
                seq = struct.unpack_from("!I", d, l4 + 4)[0]
                self.tcp[num] = Segment(num, (src, sport, dst, dport), seq, n)

    # -- what a packet is ------------------------------------------------------------------------------
    def copy_of(self, n: int) -> int | None:
        """The earlier frame frame ``n`` is a byte-for-byte copy of (same identification), if any."""
        return self._first_copy.get(n)

    def _from_same_sender(self, p: Roce) -> Iterable[Roce]:
        return (q for q in self.roce.values() if q.src == p.src and q.dst == p.dst)

    def delayed(self, n: int) -> bool:
        """Sent before a packet of the same sender captured before it: a delayed original."""
        p = self.roce[n]
        return any(q.frame < n and _before(p.ident, q.ident) for q in self._from_same_sender(p))

    def _same_stream(self, p: Roce, requests: bool) -> list[Roce]:
        kinds = _REQUESTS if requests else _READ_RESPONSES
        return [q for q in self._from_same_sender(p) if q.destqp == p.destqp and q.opcode in kinds]

    # -- verdicts --------------------------------------------------------------------------------------
    def verdict(self, rule: str, frames: tuple[int, ...], args: dict[str, Any]) -> str | None:
        """None when the packets bear the finding out, else why not; "unchecked" for a rule not known here."""
        if rule.startswith(_ON_THE_WIRE):
            return None
        check = getattr(self, "_" + rule.replace(".", "_"), None)
        if check is not None:
            return check(frames, args)
        if rule.startswith(_ONE_MESSAGE):
            return self._said_once(rule, frames)
        return "unchecked"

    def _said_once(self, rule: str, frames: tuple[int, ...]) -> str | None:
        """A finding about one RPC-over-RDMA message stands when it is said once of it, on a packet its sender
        sent (not a copy made on the way), whichever of its sendings: the one its receiver took."""
        n = frames[0]
        if n in self.roce:
            if self.copy_of(n) is not None:
                return f"frame {n} is a copy made on the way of frame {self.copy_of(n)}"
            p = self.roce[n]
            message: tuple = (rule, p.src, p.dst, p.destqp, p.psn)
        elif n in self.tcp:
            t = self.tcp[n]
            message = (rule, t.key, t.seq)
        else:
            return None
        if message in self._said:
            return f"frame {n}: said again of the message of frame {self._said[message]}"
        self._said[message] = n
        return None

    def _ib_duplicate(self, frames: tuple[int, ...], args: dict[str, Any]) -> str | None:
        n = frames[0]
        if self.copy_of(n) is None:
            return f"frame {n} has bytes of its own (no earlier packet with its identification and bytes)"
        return None

    def _ib_retransmission(self, frames: tuple[int, ...], args: dict[str, Any]) -> str | None:
        n = frames[0]
        p = self.roce[n]
        if self.copy_of(n) is not None:
            return f"frame {n} is a copy made on the way of frame {self.copy_of(n)}"
        if self.delayed(n):
            return f"frame {n} is a delayed original (identification {p.ident:#06x} below one captured before)"
        earlier = [q for q in self._same_stream(p, True) if q.frame < n]
        # its PSN sent before it, or passed by a later PSN already (its first sending not captured)
        if not any(((q.psn - p.psn) & _MASK) < 0x800000 for q in earlier):
            return f"frame {n}: PSN {p.psn} is beyond every PSN its requester sent before it"
        return None

    def _ib_out_of_order(self, frames: tuple[int, ...], args: dict[str, Any]) -> str | None:
        """Either frames[0] overtook frames[1] (a packet with a lower PSN, sent before it), or frames[0] is
        an earlier sending of frames[1]'s PSN that arrives after it."""
        if len(frames) == 1:            # (rdmaspy before issue 30: the late packet alone)
            n = frames[0]
            if self.copy_of(n) is not None:
                return f"frame {n} is a copy made on the way of frame {self.copy_of(n)}"
            if not self.delayed(n):
                return f"frame {n} was sent after every packet captured before it (not delayed)"
            return None
        first, other = frames[0], frames[1]
        p, q = self.roce[first], self.roce[other]
        if "overtook" in str(args.get("what", "")):
            late, ahead = q, p
            if not 0 < ((ahead.psn - late.psn) & _MASK) < 0x800000:
                return f"frame {other} (PSN {late.psn}) is not below frame {first}'s PSN {ahead.psn}"
        else:
            late, ahead = p, q
            if late.psn != ahead.psn:
                return f"frames {first} and {other} carry other PSNs"
        if self.copy_of(late.frame) is not None:
            return f"frame {late.frame} is a copy made on the way of frame {self.copy_of(late.frame)}"
        if late.frame < ahead.frame or not _before(late.ident, ahead.ident):
            return f"frame {late.frame} was not sent before frame {ahead.frame}, which it follows"
        return None

    def _ib_lost_segment(self, frames: tuple[int, ...], args: dict[str, Any]) -> str | None:
        n = frames[0]
        p = self.roce[n]
        count, expected = int(args["count"]), int(args["expected"])
        span = (p.psn - expected) & _MASK
        stream = self._same_stream(p, p.opcode in _REQUESTS)
        # Its sender sent the PSNs of the gap in the same burst as frame n, just before it: PSN q with the
        # identification (x - q) before frame n's (a few more where other queue pairs' packets came between).
        # A packet of that burst anywhere in the capture came (late); none, and that PSN was lost.
        # A READ request's PSN stands for all the PSNs its responses take.
        mtu = self._mtu_of(p.dst)
        reserved = {r.frame: (max(1, -(-r.read_length // mtu)) if r.opcode == 0x0C else 1) for r in stream}
        lost = 0
        late: list[int] = []
        k = 0
        while k < span:
            q = (expected + k) & _MASK
            behind = (p.psn - q) & _MASK
            if p.opcode in _REQUESTS:
                # a request takes one identification, and a READ request's PSNs too: not more than its PSNs
                came = [r for r in stream if r.psn == q and 0 < ((p.ident - r.ident) & 0xFFFF) <= behind + 8]
            else:
                # a response takes one identification and one PSN: as many of each, but the other queue pairs'
                came = [r for r in stream if r.psn == q and behind <= ((p.ident - r.ident) & 0xFFFF) < behind + 4]
            if came:
                late.append(min(r.frame for r in came))
                k += reserved[came[0].frame]
            else:
                lost += 1
                k += 1
        if lost == 0:
            return f"frame {n}: every PSN from {expected} before it came, delayed (first in frame {min(late)})"
        if lost != count:
            return f"frame {n}: {lost} PSN(s) of {expected}..{p.psn - 1} not captured, not {count}"
        return None

    def _previous_response(self, p: Roce) -> Roce | None:
        """The packet its sender sent last before ``p`` to the same queue pair, by identification."""
        best = None
        for q in self._from_same_sender(p):
            if q.destqp == p.destqp and q is not p and _before(q.ident, p.ident) and self.copy_of(q.frame) is None:
                if best is None or _before(best.ident, q.ident):
                    best = q
        return best

    def _ib_read_response_sequence(self, frames: tuple[int, ...], args: dict[str, Any]) -> str | None:
        n, request = frames[0], frames[1]
        p = self.roce[n]
        if p.opcode not in (0x0E, 0x0F):
            return f"frame {n} is no READ Response Middle or Last"
        if self.copy_of(n) is not None:
            return f"frame {n} is a copy made on the way of frame {self.copy_of(n)}"
        req = self.roce.get(request)
        if req is None or req.opcode != 0x0C or req.psn != p.psn:
            return f"frame {request} is no READ request at PSN {p.psn}"
        prev = self._previous_response(p)
        if prev is not None and prev.opcode in (0x0D, 0x0E) and prev.psn == (p.psn - 1) & _MASK:
            return (f"frame {n} goes on with the answer of frame {prev.frame} (PSN {prev.psn}): it opens no "
                    f"answer to the READ of frame {request}")
        return None

    def _run(self, p: Roce) -> list[Roce]:
        """The answer ``p`` ends: the responses its sender sent just before it, PSN by PSN."""
        run = [p]
        while run[0].opcode not in (0x0D, 0x10):
            prev = self._previous_response(run[0])
            if prev is None or prev.opcode not in (0x0D, 0x0E) or prev.psn != (run[0].psn - 1) & _MASK:
                break
            run.insert(0, prev)
        return run

    def _asked(self, p: Roce, psn: int) -> Roce | None:
        """The last READ request at ``psn`` to ``p``'s sender before ``p``."""
        reqs = [q for q in self.roce.values() if q.src == p.dst and q.dst == p.src and q.opcode == 0x0C
                and q.psn == psn and q.frame < p.frame]
        return reqs[-1] if reqs else None

    def _mtu_of(self, responder: str) -> int:
        """The path MTU: the size of the full READ response (and SEND, WRITE) packets ``responder`` sends."""
        return max((q.payload for q in self.roce.values() if q.src == responder
                    and q.opcode in (0x0D, 0x0E, 0x00, 0x01, 0x06, 0x07)), default=1024)

    def _mtu(self, p: Roce) -> int:
        return max((q.payload for q in self.roce.values() if q.src == p.src and q.opcode in (0x0D, 0x0E)),
                   default=1024)

    def _ib_read_response_count(self, frames: tuple[int, ...], args: dict[str, Any]) -> str | None:
        p = self.roce[frames[0]]
        run = self._run(p)
        req = self._asked(p, run[0].psn)
        if req is None:
            return f"frame {p.frame}: no READ request at PSN {run[0].psn}, where its answer starts"
        mtu = self._mtu(p)
        want = max(1, -(-req.read_length // mtu))
        if len(run) == want:
            return f"frame {p.frame}: the answer from PSN {run[0].psn} has the {want} packets its READ asks"
        return None

    def _ib_read_response_length(self, frames: tuple[int, ...], args: dict[str, Any]) -> str | None:
        p = self.roce[frames[0]]
        run = self._run(p)
        req = self._asked(p, run[0].psn)
        if req is None:
            return f"frame {p.frame}: no READ request at PSN {run[0].psn}, where its answer starts"
        got = sum(q.payload for q in run)
        if got == req.read_length:
            return f"frame {p.frame}: the answer from PSN {run[0].psn} has the {got} bytes its READ asks"
        return None

    def _ib_acked_unseen(self, frames: tuple[int, ...], args: dict[str, Any]) -> str | None:
        p = self.roce[frames[0]]
        reqs = [q for q in self.roce.values() if q.src == p.dst and q.dst == p.src and q.opcode in _REQUESTS
                and q.frame < p.frame]
        for q in reqs:
            span = max(1, -(-q.read_length // self._mtu(p))) if q.opcode == 0x0C else 1
            if ((p.psn - q.psn) & _MASK) < span:
                return f"frame {p.frame}: PSN {p.psn} was sent in frame {q.frame}"
        return None

    def _ib_go_back_n_stall(self, frames: tuple[int, ...], args: dict[str, Any]) -> str | None:
        nak = self.roce[frames[0]]
        resent = int(args["resent"])
        after = [q for q in self.roce.values() if q.src == nak.dst and q.dst == nak.src and q.opcode in _REQUESTS
                 and q.frame > frames[1] and 0 < ((q.psn - resent) & _MASK) < 0x800000]
        if after:
            return f"the requester sends PSN {after[0].psn} after its resend (frame {after[0].frame})"
        return None

    # -- TCP (iWARP) -------------------------------------------------------------------------------------
    def _tcp_held(self, frames: tuple[int, ...], args: dict[str, Any]) -> str | None:
        s = self.tcp.get(frames[0])
        if s is None:
            return f"frame {frames[0]} has no TCP payload"
        covered: list[tuple[int, int]] = []
        for o in self.tcp.values():
            if o.key == s.key and o.frame < s.frame:
                covered.append((o.seq, o.seq + o.length))
        if not covered:
            return None
        low = min(c[0] for c in covered)
        reach = low
        for a, b in sorted(covered, key=lambda c: (c[0] - low) & 0xFFFFFFFF):
            if ((a - reach) & 0xFFFFFFFF) < 0x80000000 and a != reach:
                break
            if ((b - reach) & 0xFFFFFFFF) < 0x80000000:
                reach = b
        if ((s.seq - reach) & 0xFFFFFFFF) in range(1, 0x80000000):
            return None
        return f"frame {s.frame}: every byte before it was captured before it"

    def _tcp_missing(self, frames: tuple[int, ...], args: dict[str, Any]) -> str | None:
        s = self.tcp.get(frames[0])
        if s is None:
            return f"frame {frames[0]} has no TCP payload"
        spans = sorted(((o.seq - s.seq) & 0xFFFFFFFF, o.length) for o in self.tcp.values() if o.key == s.key)
        # relative to this segment: the bytes before it (offsets from 2**31 up) are they all in the capture?
        before = sorted((off - (1 << 32), n) for off, n in spans if off >= 0x80000000)
        if not before:
            return f"frame {s.frame}: no byte before it in the capture"
        reach = before[0][0]
        for off, n in before:
            if off > reach:
                return None             # a hole before it, never filled
            reach = max(reach, off + n)
        if reach >= 0:
            return f"frame {s.frame}: every byte before it is in the capture"
        return None

    # -- RPC transactions (tshark's XIDs) -----------------------------------------------------------------
    def _rpc_messages(self) -> tuple[dict[int, list[int]], dict[int, list[int]]]:
        if self._rpc is None:
            sys.path.insert(0, str(ROOT / "tests"))
            from conftest import tshark_fields, tshark_int
            calls: dict[int, list[int]] = {}
            replies: dict[int, list[int]] = {}
            for row in tshark_fields(self.path, ["frame.number", "rpc.xid", "rpc.msgtyp"]):
                for xid, kind in zip(row["rpc.xid"], row["rpc.msgtyp"]):
                    (calls if kind == "0" else replies).setdefault(tshark_int(xid), []).append(
                        int(row["frame.number"][0]))
            self._rpc = (calls, replies)
        return self._rpc

    def _transaction_no_reply(self, frames: tuple[int, ...], args: dict[str, Any]) -> str | None:
        xid = int(args["rxid"])
        _calls, replies = self._rpc_messages()
        later = [r for r in replies.get(xid, []) if r > frames[0]]
        if later:
            return f"call XID {xid:#010x} is answered in frame {later[0]}"
        return None

    def _transaction_reply_without_call(self, frames: tuple[int, ...], args: dict[str, Any]) -> str | None:
        xid = int(args["rxid"])
        calls, _replies = self._rpc_messages()
        earlier = [c for c in calls.get(xid, []) if c < frames[0]]
        if earlier:
            return f"reply XID {xid:#010x} answers the call of frame {earlier[0]}"
        return None


def findings_of(path: Path) -> list[tuple[str, str, tuple[int, ...], dict[str, Any], str]]:
    """(rule, severity, frames, args, text) of every finding of rdmaspy's analysis of ``path``, and of
    every dissector item that names a rule."""
    from rdmaspy.analysis.analyzer import Analyzer
    from rdmaspy.analysis.rules import Finding
    from rdmaspy.engine import Engine
    an = Analyzer()
    engine = Engine()
    items = []
    with open_capture(str(path)) as cap:
        for frame in cap:
            pkt = engine.dissect(frame)
            an.feed(pkt)
            for e in pkt.expert or ():
                if not isinstance(e, Finding) and getattr(e, "rule", ""):
                    items.append((e.rule, e.severity, (frame.num,), {}, e.text))
    an.finish()
    return items + [(f.rule_def.id, f.severity, f.frames, dict(f.args), f.text) for f in an.findings]


def judged(path: Path) -> Counter:
    """(rule, "true" | "false" | "unchecked") counts of the error and warning findings of ``path``."""
    oracle = Oracle(path)
    out: Counter = Counter()
    for rule, severity, frames, args, _text in findings_of(path):
        if severity not in ("error", "warning"):
            continue
        v = oracle.verdict(rule, frames, args)
        out[(rule, "true" if v is None else "unchecked" if v == "unchecked" else "false")] += 1
    return out


if __name__ == "__main__":
    for name in sys.argv[1:]:
        print(name)
        for (rule, how), n in sorted(judged(Path(name)).items()):
            print(f"  {n:6}  {how:9}  {rule}")
