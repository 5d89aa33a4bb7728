"""``rdmaspy expert FILE``: every finding of the capture, grouped like Wireshark's Expert Information.

By severity (errors first), then by rule: the count, the rule with its source, a few of the
messages with their frames, and the list of frames.  The dissectors' own expert items stand beside
the analysis findings: by their rule where they declare one (``tcp.retransmission``), else by their
text (malformed packets, bad checksums).  ``-T json`` gives the same groups as one JSON document.
The analysis itself runs in rdmaspy.analysis, the grouping in rdmaspy.output.expert_groups (compiled);
this module runs them and presents the groups.
"""
from __future__ import annotations

import argparse
import sys

# first: compiled, it imports analysis.rules and analysis.model natively (through importlib from here, each
# cost some 0.2 M more); they are found imported below, their bodies run in the same order
from ..output.expert_groups import Group  # isort: skip
from ..analysis.model import Record
from ..analysis.rules import SEVERITIES, Finding
from ..typenames import Any, Callable
from .common import add_capture_argument, add_host_trace_argument, host_join, print_text, report_problems, run_capture

SEVERITY_TITLES = {"error": "Errors", "warning": "Warnings", "note": "Notes", "chat": "Chats"}


def analyse(path: str, on_packet: Callable[[Any], None] | None = None,
            on_record: Callable[[Record], None] | None = None,
            on_finding: Callable[[Finding], None] | None = None, progress: str | None = None,
            packet_fields: bool = True, host: Any = None):
    """Decode and analyse a whole capture; returns (capture, analyzer, frames, t0).

    ``on_packet(pkt)`` sees each packet after the analysis has; ``on_record`` gets the analysis
    records (``analysis.model``: transactions, connection and transport summaries) as they become final;
    ``on_finding`` each finding as it is made (the analyzer keeps no list of them); ``progress``: the
    label of the progress bar on a terminal's stderr; ``packet_fields``: False when ``on_packet`` reads
    no analysis field (``rpcrdma.analysis.*``), which are then not made; ``host``: the join of host traces
    (``common.host_join``), whose findings come with the others.
    """
    from ..pipeline import Options

    hooks = _Hooks(on_packet, on_record, on_finding)
    cap, pipe = run_capture(path, [hooks], Options(analyze=True, packet_fields=packet_fields), progress=progress,
                            host=host)
    an = pipe.analyzer
    assert an is not None
    return cap, an, pipe.frames, pipe.t0 if pipe.frames else None


class _Hooks:
    """The pipeline's sink for ``analyse``: each packet, record and finding to the callers' functions."""

    def __init__(self, on_packet: Callable[[Any], None] | None, on_record: Callable[[Record], None] | None,
                 on_finding: Callable[[Finding], None] | None) -> None:
        self._packet, self._record, self._finding = on_packet, on_record, on_finding
        if on_record is None:
            self.on_record = None       # type: ignore[assignment]  # no records wanted: none handed on
        # The pipeline takes ``packet`` when it starts: the caller's function itself (a call a packet
        # fewer), or none to call when nobody reads the packets.
        self.reads_packets = on_packet is not None
        if on_packet is not None:
            self.packet = on_packet     # type: ignore[method-assign,assignment]

    def packet(self, pkt: Any) -> None:
        if self._packet is not None:
            self._packet(pkt)

    def on_record(self, rec: Record) -> None:
        if self._record is not None:
            self._record(rec)

    def on_finding(self, f: Finding) -> None:
        if self._finding is not None:
            self._finding(f)

    def finish(self) -> None:
        pass


def collect(path: str, keep: int | None = None, host: Any = None) -> tuple[Any, int, list[Group]]:
    """(capture, frames, groups in presentation order) of a capture; ``keep``: the items kept per group
    (None: all); ``host``: the join of host traces, whose findings are grouped with the others."""
    from ..output.expert_groups import Grouping
    from ..pipeline import Options

    grouping = Grouping(keep)
    # only the dissectors' items are read of the packets: the analysis adds none of its fields
    cap, pipe = run_capture(path, [grouping], Options(analyze=True, packet_fields=False), progress="expert",
                            host=host)
    order = {s: i for i, s in enumerate(SEVERITIES)}
    out = sorted(grouping.groups.values(), key=lambda g: (order.get(g.severity, 9), -g.count, g.rule or g.items[0][1]))
    return cap, pipe.frames, out


def text_lines(path: str, frames: int, groups: list[Group], shown: int) -> list[str]:
    lines = [f"Expert Information: {path} ({frames} frames)"]
    if not groups:
        lines.append("  no findings")
        return lines
    for sev in SEVERITIES:
        gs = [g for g in groups if g.severity == sev]
        if not gs:
            continue
        lines.append("")
        lines.append(f"{SEVERITY_TITLES[sev]} ({sum(g.count for g in gs)})")
        for g in gs:
            name = g.rule if g.rule is not None else g.items[0][1]
            source = f" — {g.source}" if g.source else ""
            lines.append(f"  {g.count:>6}  [{g.group}] {name}{source}")
            if g.rule is not None:
                kept = g.items
                items = kept if shown == 0 else kept[:shown]
                for fr, text, conn, xid in items:
                    where = f"frame {fr[0]}" if fr else "capture"
                    if len(fr) > 1:
                        where += f" (with {', '.join(map(str, fr[1:]))})"
                    extra = "".join((f", conn {conn}" if conn is not None else "",
                                     f", XID 0x{xid:08x}" if xid is not None else ""))
                    lines.append(f"          {where}{extra}: {text}")
                if len(items) < g.count:
                    lines.append(f"          ... {g.count - len(items)} more")
            lines.append(f"          frames: {g.frame_ranges(40)}")
    return lines


def cmd_expert(args: argparse.Namespace) -> int:
    # JSON and -n 0 show every finding; otherwise a group keeps only the items it shows
    cap, frames, groups = collect(args.file, None if args.T == "json" or args.n == 0 else args.n, host_join(args))
    if args.severity:
        keep = SEVERITIES[:SEVERITIES.index(args.severity) + 1]
        groups = [g for g in groups if g.severity in keep]
    if args.T == "json":
        import orjson      # here, not at import: every command module is imported to build the parser
        counts = {s: sum(g.count for g in groups if g.severity == s) for s in SEVERITIES}
        doc = {"file": args.file, "frames": frames, "counts": counts, "groups": [g.record() for g in groups]}
        sys.stdout.buffer.write(orjson.dumps(doc, option=orjson.OPT_INDENT_2) + b"\n")
        sys.stdout.buffer.flush()
    else:
        print_text(text_lines(args.file, frames, groups, args.n))
    return report_problems(cap)


def _count(text: str) -> int:
    try:
        v = int(text, 10)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if v < 0:
        raise argparse.ArgumentTypeError(f"{text!r} must be 0 or more")
    return v


def register(sub: Any) -> None:
    p = sub.add_parser("expert", help="findings of the analysis grouped by severity and rule (like Wireshark's "
                                      "Expert Information)")
    add_capture_argument(p)
    p.add_argument("-T", choices=("text", "json"), default="text", help="text (default) or json")
    p.add_argument("-n", type=_count, default=3, metavar="N",
                   help="messages shown per rule in text (default 3; 0: all)")
    p.add_argument("--severity", choices=SEVERITIES, help="show this severity and the more severe ones only")
    add_host_trace_argument(p)
    p.set_defaults(func=cmd_expert)
