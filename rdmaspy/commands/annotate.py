"""``rdmaspy annotate FILE -o out.pcapng``: the capture again, with rdmaspy's analysis as packet comments.

Every packet that has something to say gets comments (pcapng ``opt_comment``, which Wireshark shows
and filters as ``frame.comment``): the transaction it belongs to, in its upper layer's words (an
RPC-over-RDMA XID and procedure, an NVMe command's CID and name; the request or the response or the
RDMA operation, the segment it reads or writes, the latency) and each
finding that names it first, with its rule and source: the analysis' and the dissectors' (a
malformed packet, a bad checksum, a CM reject, a hole in a TCP stream), as ``rdmaspy expert`` lists
them.  The frames themselves are copied unchanged, with their timestamps (nanoseconds), original
lengths, interfaces and comments.

Two passes: the first decodes and analyses (a transaction is complete only when its reply is seen,
and some findings come only at the end), the second copies the frames with the comments.
"""
from __future__ import annotations

import argparse
import heapq
import os
import struct
import tempfile
from typing import IO, Any, BinaryIO, Iterator

from ..analysis.model import CallDirection, Finding, Record, StepKind, Transaction
from ..analysis.ulp import model_of
from ..errors import RdmaspyError
from ..writers.outfile import OutputFile
from .common import add_capture_argument, report_problems, report_writer

_RUN = 65536          # comments held in memory before a sorted run of them goes to a temporary file
_ENTRY = struct.Struct("<IBII")   # frame, kind (0 transaction, 1 finding), arrival, text length


class Notes:
    """The comments of a capture, built from the analysis records and findings as they come.

    They come in no frame order (a transaction is complete at its reply, findings come at the end),
    and a capture may need millions: past ``_RUN`` they are sorted by (frame, kind, arrival) and
    spooled to a temporary file as a run, and the second pass merges the runs in frame order, so
    memory stays bounded whatever the number of comments.  A frame's transaction comments come before
    its findings, each in the order made, each text once."""

    def __init__(self) -> None:
        self._held: list[tuple[int, int, int, str]] = []
        self._runs: list[IO[bytes]] = []
        self._seq = 0

    def add(self, frame: int | None, text: str, kind: int = 0) -> None:
        if frame is None:
            return
        self._seq += 1
        self._held.append((frame, kind, self._seq, text))
        if len(self._held) >= _RUN:
            self._spill()

    def _spill(self) -> None:
        self._held.sort()
        fh = tempfile.TemporaryFile()
        pack = _ENTRY.pack
        for frame, kind, seq, text in self._held:
            b = text.encode("utf-8", "surrogatepass")
            fh.write(pack(frame, kind, seq, len(b)))
            fh.write(b)
        fh.seek(0)
        self._runs.append(fh)
        self._held = []

    @staticmethod
    def _read_run(fh: IO[bytes]) -> Iterator[tuple[int, int, int, str]]:
        size = _ENTRY.size
        unpack = _ENTRY.unpack
        read = fh.read          # a buffered file: small reads cost no system call each
        while True:
            head = read(size)
            if len(head) < size:
                return
            frame, kind, seq, n = unpack(head)
            yield frame, kind, seq, read(n).decode("utf-8", "surrogatepass")

    def by_frame(self) -> Iterator[tuple[int, list[str]]]:
        """(frame, its comments) in frame order, once for each frame that has any."""
        self._held.sort()
        merged = heapq.merge(self._held, *(self._read_run(fh) for fh in self._runs))
        frame = -1
        texts: list[str] = []
        for f, _kind, _seq, text in merged:
            if f != frame:
                if texts:
                    yield frame, texts
                frame = f
                texts = [text]
            elif text not in texts:
                texts.append(text)
        if texts:
            yield frame, texts

    def close(self) -> None:
        for fh in self._runs:
            fh.close()
        self._runs = []
        self._held = []

    def on_record(self, rec: Record) -> None:
        if isinstance(rec, Transaction):
            self.transaction(rec)

    def transaction(self, t: Transaction) -> None:
        ulp = model_of(t.protocol)
        name = ulp.operation(t)
        head = f"rdmaspy: {name} {ulp.key} 0x{t.key:0{ulp.key_digits}x}"
        if t.direction is CallDirection.BACKCHANNEL:
            head += " (backchannel)"
        asked, answer = ulp.request, ulp.response
        call = t.request
        reply = t.response
        lat = t.latency_ns
        lat_text = f"{lat / 1e9 * 1e3:.3f} ms" if lat is not None else None
        if reply is not None:
            call_text = f"{head}: {asked}; {answer} in frame {reply.frame} after {lat_text}"
        else:
            call_text = f"{head}: {asked}; no {answer} in the capture"
        for fr in call.frames or [call.frame]:
            self.add(fr, call_text)
        for retrans in call.retransmissions:
            for fr in retrans:
                self.add(fr, f"{head}: {asked} sent again (first in frame {call.frame})")
        if reply is not None:
            text = f"{head}: {answer} to the {asked} in frame {call.frame} after {lat_text}"
            for fact in ulp.facts:
                if fact.tell is not None:
                    value = fact.get(t)
                    if value is not None:
                        text += f"; {fact.tell} {value}"
            if reply.invalidated is not None:
                text += f"; invalidates R_Key 0x{reply.invalidated:08x}"
            for fr in reply.frames or [reply.frame]:
                self.add(fr, text)
        for step in t.steps:
            kind = step.kind
            if kind is StepKind.DONE:
                if reply is not None:
                    for fr in step.frames:
                        self.add(fr, f"{head}: {ulp.done} for the {answer} in frame {reply.frame}")
                continue
            if kind is not StepKind.RDMA_READ and kind is not StepKind.RDMA_WRITE:
                continue
            seg = step.segment
            where = ""
            if seg is not None:
                where = f" {ulp.lists.get(seg.kind, str(seg.kind))} {seg.chunk} segment {seg.index}"
            verb = "RDMA READ of" if kind is StepKind.RDMA_READ else "RDMA WRITE into"
            text = (f"{head}: {verb}{where} (R_Key 0x{step.handle or 0:08x}, {step.length} bytes at "
                    f"0x{step.offset or 0:x}); {asked} in frame {call.frame}")
            for fr in step.frames:
                self.add(fr, text)
            for fr in step.response_frames or ():
                self.add(fr, f"{head}: RDMA READ response for{where} (request in frame {step.frames[0]})")

    def finding(self, f: Finding) -> None:
        r = f.rule_def
        if f.frames:
            self.add(f.frames[0], finding_comment(r.severity, f.text, r.id, r.source), 1)

    def dissector_items(self, pkt: Any) -> None:
        """The dissectors' expert items of a packet (malformed, checksums, CM rejects, TCP holes...),
        each a comment on it as ``rdmaspy expert`` lists them."""
        for e in pkt.expert or ():
            if isinstance(e, Finding):
                continue
            if e.rule:
                text = finding_comment(e.severity, e.text, e.rule, e.source)
            else:
                text = finding_comment(e.severity, e.text, None, e.source)
            self.add(pkt.frame.num, text, 1)


def finding_comment(severity: str, text: str, rule: str | None, source: str) -> str:
    """The comment of one finding: ``rdmaspy warning: TEXT [RULE: SOURCE]`` (a dissector's item without a
    rule id: ``[SOURCE]``, or nothing when it names none)."""
    if rule is not None:
        return f"rdmaspy {severity}: {text} [{rule}: {source}]"
    return f"rdmaspy {severity}: {text} [{source}]" if source else f"rdmaspy {severity}: {text}"


def annotate(path: str, out_path: str) -> tuple[Any, int, int]:
    """Write ``out_path``; returns (the capture of the first pass, frames, frames commented)."""
    from .expert import analyse

    output = OutputFile(out_path, [path])          # refuses the input capture, before any work
    notes = Notes()
    try:
        cap, _an, frames, _t0 = analyse(path, on_packet=notes.dissector_items, on_record=notes.on_record,
                                        on_finding=notes.finding, progress="annotate: analysis")
        # Written whole or not at all: under a temporary name beside the output, renamed at the end.
        with output as stream:
            commented = _write(path, stream, notes, out_path)
    finally:
        notes.close()
    return cap, frames, commented


def _write(path: str, out: BinaryIO, notes: Notes, out_path: str) -> int:
    """The second pass: every frame copied, with its comments; returns the frames commented."""
    from ..output.progress import Progress
    from ..readers import open_capture
    from ..writers.pcapng import PcapngWriter

    commented = 0
    pending = notes.by_frame()
    nxt = next(pending, None)
    with PcapngWriter(out, comment=f"annotated by rdmaspy from {os.path.basename(path)}") as w:
        ifaces: dict[tuple[int, int], int] = {}
        with open_capture(path) as again, Progress("annotate: writing", again, lambda: w.packets):
            for frame in again:
                key = (frame.iface, frame.linktype)
                idx = ifaces.get(key)
                if idx is None:
                    info = again.interfaces[frame.iface] if frame.iface < len(again.interfaces) else {}
                    idx = ifaces[key] = w.add_interface(frame.linktype, tsresol=9, tsoffset=info.get("tsoffset", 0))
                while nxt is not None and nxt[0] < frame.num:
                    nxt = next(pending, None)
                ours = nxt[1] if nxt is not None and nxt[0] == frame.num else None
                comments: list[str] | None = None
                if ours:
                    commented += 1
                    comments = ([frame.comment] if frame.comment else []) + ours
                elif frame.comment:
                    comments = [frame.comment]
                w.write_packet(idx, frame.ts, frame.data, frame.wirelen, comment=comments)
    report_writer(out_path, w)
    return commented


def cmd_annotate(args: argparse.Namespace) -> int:
    if args.file == "-":
        raise RdmaspyError("annotate reads the capture twice (analysis, then copy): give a file, not -")
    cap, _frames, _n = annotate(args.file, args.output)
    return report_problems(cap)


def register(sub: Any) -> None:
    p = sub.add_parser("annotate", help="rewrite the capture as pcapng with the analysis as packet comments "
                                        "(Wireshark shows them; filter with frame.comment)")
    add_capture_argument(p)
    p.add_argument("-o", dest="output", metavar="OUT.pcapng", required=True, help="the annotated pcapng to write")
    p.set_defaults(func=cmd_annotate)
