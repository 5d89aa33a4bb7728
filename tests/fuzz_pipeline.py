#!/usr/bin/env python3
"""In-process fuzzing of what the commands run: mutated frames of the real captures, fed in order.

Each round takes one shipped capture (captures/ and tests/fixtures/) and feeds its frames in order
through the engine and the analyzer, with the flows builder as the analysis sink (what ``flows``
does), and every packet through the summary line, the JSON object and (one in four) the ``-V`` tree
(what ``decode`` does).  A frame is mutated with probability ``rate``: bits flipped, bytes set to
0x00/0xFF/random, a 32-bit word set to a hostile value (0xFFFFFFFF, 0x7FFFFFFF, 0x80000000, 0),
cut short, grown, or sent twice; so state builds up over mutated and intact frames alike.

Watched: exceptions escaping (a defect), packets the engine marks "dissector error" and analysis
findings "analysis.error" (defects caught on the way), the memory budget (never above its limit)
and the process's resident memory (growth over the run).

    python3 tests/fuzz_pipeline.py --seconds 180 --seed 7     # the long run (docs/robustness.md)

``tests/test_fuzz_pipeline.py`` runs it for a few seconds in the suite.
"""
from __future__ import annotations

import argparse
import io
import random
import sys
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from rdmaspy.analysis.analyzer import Analyzer  # noqa: E402
from rdmaspy.analysis.model import Connection  # noqa: E402
from rdmaspy.conversation import connections  # noqa: E402
from rdmaspy.engine import Engine  # noqa: E402
from rdmaspy.output.flows import FlowBuilder  # noqa: E402
from rdmaspy.output.jsonout import packet_json  # noqa: E402
from rdmaspy.output.text import summary_bytes, tree_lines  # noqa: E402
from rdmaspy.packet import Frame  # noqa: E402
from rdmaspy.readers import open_capture  # noqa: E402

HOSTILE_WORDS = (b"\xff\xff\xff\xff", b"\x7f\xff\xff\xff", b"\x80\x00\x00\x00", b"\x00\x00\x00\x00",
                 b"\xf0\x00\x00\x00", b"\x00\x10\x00\x00")


@dataclass
class Report:
    frames: int = 0
    mutated: int = 0
    captures: int = 0
    seconds: float = 0.0
    exceptions: list[str] = field(default_factory=list)
    dissector_errors: dict[str, int] = field(default_factory=dict)
    analysis_errors: dict[str, int] = field(default_factory=dict)
    budget_over: int = 0
    rss_start: int = 0
    rss_peak: int = 0

    @property
    def rate(self) -> float:
        return self.frames / self.seconds if self.seconds else 0.0

    def clean(self) -> bool:
        return not (self.exceptions or self.dissector_errors or self.analysis_errors or self.budget_over)

    def text(self) -> str:
        lines = [f"{self.frames} frames fed ({self.mutated} mutated) from {self.captures} capture runs in "
                 f"{self.seconds:.1f} s: {self.rate:,.0f} frames/s",
                 f"resident memory {self.rss_start >> 20} MiB at the start, {self.rss_peak >> 20} MiB at the most"]
        lines += [f"exception: {e}" for e in self.exceptions[:20]]
        lines += [f"dissector error x{n}: {t}" for t, n in sorted(self.dissector_errors.items())[:20]]
        lines += [f"analysis error x{n}: {t}" for t, n in sorted(self.analysis_errors.items())[:20]]
        if self.budget_over:
            lines.append(f"memory budget above its limit {self.budget_over} times")
        if self.clean():
            lines.append("nothing raised, no dissector or analysis error, the budget held")
        return "\n".join(lines)


def rss() -> int:
    try:
        with open("/proc/self/statm") as fh:
            return int(fh.read().split()[1]) * 4096
    except OSError:
        return 0


def captures() -> list[Path]:
    found = sorted((ROOT / "captures").glob("*.pcap*")) + sorted((ROOT / "tests" / "fixtures").glob("*.pcap*"))
    return [p for p in found if p.stat().st_size < 8 << 20]


def load(path: Path) -> list[Frame]:
    try:
        with open_capture(str(path)) as cap:
            return list(cap)
    except Exception:          # a fixture that is damaged on purpose: what could be read
        return []


def mutate(data: bytes, rnd: random.Random) -> bytes:
    b = bytearray(data)
    if not b:
        return bytes(rnd.randbytes(rnd.randint(1, 64)))
    for _ in range(rnd.randint(1, 4)):
        if not b:
            break
        op = rnd.randrange(7)
        i = rnd.randrange(len(b))
        if op == 0:
            b[i] ^= 1 << rnd.randrange(8)
        elif op == 1:
            b[i] = rnd.choice((0, 0xFF, rnd.randrange(256)))
        elif op == 2 and len(b) >= 4:
            i = rnd.randrange(len(b) - 3) & ~3 if len(b) > 4 else 0
            b[i:i + 4] = rnd.choice(HOSTILE_WORDS)
        elif op == 3:
            del b[rnd.randint(1, len(b)):]
        elif op == 4:
            b[i:i] = rnd.randbytes(rnd.randint(1, 32))
        elif op == 5:
            del b[i:i + rnd.randint(1, 16)]
        else:
            j = rnd.randrange(len(b))
            b[i], b[j] = b[j], b[i]
    return bytes(b)


def feed_capture(frames: list[Frame], rnd: random.Random, rate: float, report: Report, name: str,
                 deadline: float) -> None:
    engine = Engine()
    budget = engine.session.budget
    t0 = frames[0].ts if frames else 0
    with FlowBuilder() as builder:
        an = Analyzer(on_finding=builder.on_finding, on_record=builder.on_record, keep_findings=False,
                      budget=budget)
        num = 0
        for fr in frames:
            copies = 1
            data = fr.data
            if rnd.random() < rate:
                data = mutate(data, rnd)
                report.mutated += 1
                copies = 2 if rnd.random() < 0.1 else 1
            for _ in range(copies):
                num += 1
                frame = Frame(num, fr.ts, fr.linktype, data, max(fr.wirelen, len(data)), fr.iface, fr.comment)
                try:
                    pkt = engine.dissect(frame)
                    an.feed(pkt)
                    summary_bytes(pkt, t0)
                    packet_json(pkt, t0)
                    if num % 4 == 0:
                        for _line in tree_lines(pkt, t0):
                            pass
                except Exception:
                    report.exceptions.append(f"{name} frame {num}: {traceback.format_exc(limit=3)}")
                    continue
                report.frames += 1
                if pkt.malformed and "dissector error" in pkt.malformed:
                    key = pkt.malformed.split(": ", 1)[-1][:160]
                    report.dissector_errors[key] = report.dissector_errors.get(key, 0) + 1
                for e in pkt.expert or ():
                    if getattr(e, "rule", "").startswith("analysis.error"):
                        key = e.text[:160]
                        report.analysis_errors[key] = report.analysis_errors.get(key, 0) + 1
                if budget.used > budget.limit:
                    report.budget_over += 1
            if num % 512 == 0 and time.monotonic() > deadline:
                break
        try:
            an.finish()
            conns = [Connection.of(c) for c in connections(engine.session)]
            builder.write_document(io.BytesIO(), conns, name, t0, num)
        except Exception:
            report.exceptions.append(f"{name} at the end: {traceback.format_exc(limit=3)}")
    report.captures += 1
    report.rss_peak = max(report.rss_peak, rss())


def run(seconds: float, seed: int = 0, rate: float = 0.25, paths: list[Path] | None = None) -> Report:
    rnd = random.Random(seed)
    loaded = [(p.name, load(p)) for p in (paths or captures())]
    loaded = [(n, f) for n, f in loaded if f]
    report = Report(rss_start=rss())
    start = time.monotonic()
    deadline = start + seconds
    while time.monotonic() < deadline:
        name, frames = rnd.choice(loaded)
        feed_capture(frames, rnd, rate, report, name, deadline)
    report.seconds = time.monotonic() - start
    return report


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seconds", type=float, default=60.0)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--rate", type=float, default=0.25, help="share of frames mutated")
    args = ap.parse_args()
    report = run(args.seconds, args.seed, args.rate)
    print(report.text())
    return 0 if report.clean() else 1


if __name__ == "__main__":
    sys.exit(main())
