"""``rdmaspy capture``: live capture from a netdev or an RDMA device's netdev, to pcapng or to the screen."""
from __future__ import annotations

import argparse
import sys
from typing import Callable

from ..errors import RdmaspyError
from ..pipeline import Options
from .common import pipeline_options, positive_int, stdout_lines

DEFAULT_SNAPLEN = 262144
ROCE_FILTER = "udp port 4791 or ether proto 0x8915"


def default_filter(iwarp_ports: list[int], cooked: bool) -> str:
    """RoCEv2 and RoCEv1 (also inside an 802.1Q tag the kernel left in place), plus iWARP's TCP ports."""
    parts = ["udp port 4791", "ether proto 0x8915"] + [f"tcp port {p}" for p in iwarp_ports]
    expr = " or ".join(parts)
    if cooked:
        return expr
    return f"{expr} or (vlan and ({expr}))"


def _kv(text: str, keys: tuple[str, ...], opt: str) -> tuple[str, float]:
    key, sep, value = text.partition(":")
    if not sep or key not in keys:
        raise argparse.ArgumentTypeError(f"{opt} takes {' / '.join(k + ':N' for k in keys)}, not {text!r}")
    try:
        v = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{opt} {key}: {value!r} is not a number") from None
    if v <= 0:
        raise argparse.ArgumentTypeError(f"{opt} {key}: must be more than 0")
    return key, v


def _autostop(text: str) -> tuple[str, float]:
    return _kv(text, ("duration", "filesize", "files", "packets"), "-a")


def _ringbuf(text: str) -> tuple[str, float]:
    return _kv(text, ("filesize", "files", "duration"), "-b")


def _port(text: str) -> int:
    try:
        v = int(text, 0)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port number") from None
    if not 0 < v < 65536:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port number (1-65535)")
    return v


def _snaplen(text: str) -> int:
    try:
        v = int(text, 0)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if v < 0:
        raise argparse.ArgumentTypeError("the snap length cannot be negative")
    return v if 0 < v <= DEFAULT_SNAPLEN else DEFAULT_SNAPLEN


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("capture", help="capture live RDMA traffic (like tcpdump/dumpcap)",
                       description="Capture RoCEv2/RoCEv1 (and iWARP with --iwarp) from a network interface or an "
                                   "RDMA device's netdev, into pcapng or decoded on the screen.")
    p.add_argument("-i", dest="iface", metavar="IFACE",
                   help="netdev (eth0, veth0, any) or RDMA device (rxe0, siw0, mlx5_0); default: the only RDMA "
                        "device's netdev")
    p.add_argument("-D", dest="list", action="store_true", help="list interfaces and RDMA devices, then exit")
    p.add_argument("-f", dest="bpf", metavar="BPF", help="capture filter (tcpdump syntax), replaces the default "
                   f"'{ROCE_FILTER}'")
    p.add_argument("--iwarp", dest="iwarp", type=_port, action="append", default=[], metavar="PORT",
                   help="also capture iWARP on this TCP port (repeatable)")
    p.add_argument("-w", dest="write", metavar="FILE",
                   help="write pcapng to FILE ('-' for standard output); a symbolic link is not followed")
    p.add_argument("-c", dest="count", type=positive_int, metavar="N", help="stop after N packets")
    p.add_argument("-a", dest="autostop", type=_autostop, action="append", default=[], metavar="COND",
                   help="stop after duration:S seconds, filesize:KB (1 kB = 1000 bytes), files:N (ring buffer) or "
                        "packets:N")
    p.add_argument("-b", dest="ringbuf", type=_ringbuf, action="append", default=[], metavar="COND",
                   help="ring buffer: filesize:KB per file, files:N kept, duration:S per file")
    p.add_argument("-s", dest="snaplen", type=_snaplen, default=DEFAULT_SNAPLEN, metavar="SNAPLEN",
                   help=f"bytes kept of each packet (0: {DEFAULT_SNAPLEN})")
    p.add_argument("-B", dest="buffer", type=positive_int, default=32768, metavar="KIB",
                   help="kernel ring size in KiB (default 32768)")
    p.add_argument("-Z", dest="user", metavar="USER",
                   help="once the capture socket is open, run as USER (its group too): the output files are "
                        "opened as USER and belong to it (default: keep running as started, as dumpcap)")
    p.add_argument("-p", dest="no_promisc", action="store_true", help="do not put the interface in promiscuous mode")
    p.add_argument("-q", dest="quiet", action="store_true", help="print no packet lines (notices and the summary stay)")
    p.add_argument("-P", dest="print_too", action="store_true", help="print packet lines even when writing a file")
    p.add_argument("-Y", dest="display_filter", metavar="EXPR", help="display filter for the printed lines")
    p.add_argument("--tui", action="store_true",
                   help="show the capture in the terminal interface as it arrives (the file is written as "
                        "without it; q stops the capture)")
    p.add_argument("--sysfs", default="/sys", help=argparse.SUPPRESS)
    p.add_argument("--display-queue", type=positive_int, default=20000, help=argparse.SUPPRESS)
    p.set_defaults(func=cmd_capture)


def _note(msg: str) -> None:
    print(f"rdmaspy: {msg}", file=sys.stderr, flush=True)


def cmd_capture(args: argparse.Namespace) -> int:
    from ..capture import devices
    if args.list:
        for line in devices.listing(args.sysfs):
            print(line)
        return 0
    from ..capture import bpf
    from ..capture.live import FileSet, LiveCapture, Limits, RingBuffer
    from ..capture.ring import Ring

    name = args.iface
    if name is None:
        withnet = [d for d in devices.rdma_devices(args.sysfs) if d.netdevs]
        if len(withnet) != 1:
            raise RdmaspyError("choose an interface with -i (list them with 'rdmaspy capture -D')")
        name = withnet[0].name
    res = devices.resolve(name, args.sysfs)
    if res.note:
        _note(res.note)

    limits = Limits(count=args.count)
    for key, v in args.autostop:
        if key == "duration":
            limits.duration = v
        elif key == "filesize":
            limits.filesize = int(v * 1000)
        elif key == "files":
            limits.files = int(v)
        else:
            limits.count = min(limits.count or int(v), int(v))
    rb = RingBuffer()
    for key, v in args.ringbuf:
        if key == "filesize":
            rb.filesize = int(v * 1000)
        elif key == "files":
            rb.files = int(v)
        else:
            rb.duration = v
    if not args.write and (rb.filesize or rb.files or rb.duration or limits.filesize or limits.files):
        raise RdmaspyError("-b and -a filesize/files need -w FILE")
    if (rb.files or limits.files) and not (rb.filesize or rb.duration):
        raise RdmaspyError(f"{'-b' if rb.files else '-a'} files:N needs -b filesize:KB or -b duration:S to know when "
                           f"to switch files")

    options = pipeline_options(args.display_filter)
    if args.tui and not (sys.stdin.isatty() and sys.stdout.isatty()):
        raise RdmaspyError("--tui needs a terminal")

    from ..capture.ring import is_cooked
    cooked = is_cooked(res.netdev)
    expr = args.bpf if args.bpf is not None else default_filter(args.iwarp, cooked)
    snap = args.snaplen
    program = bpf.kernel_program(expr, cooked, snap)
    ring = Ring(res.netdev, snaplen=snap, program=program, buffer_kib=args.buffer, promisc=not args.no_promisc)
    try:
        desc = f"RDMA device {res.rdma}" if res.rdma else None
        display: Callable[[int, int, bytes, int], None] | None = None
        flush: Callable[[], None] | None = None
        if args.tui:
            from ..tui.live import LiveModel
            model = LiveModel(res.netdev, ring.linktype, snap)
            display, flush = model.show, model.flush
        elif (not args.write or args.print_too) and not args.quiet:
            display, flush = _display(options, ring.linktype)
        if args.user is not None:
            from ..capture.privileges import drop_to
            drop_to(args.user)
        files = FileSet(args.write, ring, desc, expr, rb, limits) if args.write else None
        lt = "EN10MB (Ethernet)" if ring.linktype == bpf.LINKTYPE_ETHERNET else "LINUX_SLL (Linux cooked v1)"
        where = f", writing to {args.write}" if args.write and args.write != "-" else ""
        _note(f"listening on {res.netdev}, link-type {lt}, snapshot length {snap} bytes, "
              f"filter: {expr or '(none)'}{where}")
        live = LiveCapture(ring, files, limits, display, flush, args.display_queue)
        if args.tui:
            s = _run_tui(model, live, args.display_filter or "")
        else:
            s = live.run()
    finally:
        ring.close()
    out = sys.stderr
    print(f"{s.captured} packets captured", file=out)
    print(f"{s.received} packets received by filter", file=out)
    print(f"{s.kernel_dropped} packets dropped by kernel", file=out)
    print(f"{s.rdmaspy_dropped} packets dropped by rdmaspy", file=out)
    if args.write:
        where = args.write if len(s.files) <= 1 else f"{len(s.files)} files"
        print(f"{s.written} packets written to {where}", file=out)
    if s.display_dropped:
        print(f"{s.display_dropped} packets not displayed (the display fell behind; none lost from the capture)",
              file=out)
    out.flush()
    if s.error:
        raise RdmaspyError(s.error)
    return 0


def _run_tui(model, live, display_filter: str):
    """The capture on a thread of its own, the TUI in front; quitting stops the capture cleanly."""
    from ..tui.app import RdmaspyApp
    model.capture = live
    try:
        RdmaspyApp(model, initial_filter=display_filter).run()
    finally:
        s = model.stop()
        model.close()
    if s is None:
        raise RdmaspyError(model.error or "the capture ended without a summary")
    return s


def _display(options: Options, linktype: int) -> tuple[Callable[[int, int, bytes, int], None], Callable[[], None]]:
    """(show, flush): decode one frame and print its summary line, as ``rdmaspy decode`` does."""
    from ..output.sinks import SummarySink
    from ..packet import Frame
    from ..pipeline import Pipeline

    out = stdout_lines()
    pipe = Pipeline(None, options, [SummarySink(out)])

    def show(num: int, ts: int, data: bytes, wirelen: int) -> None:
        pipe.feed(Frame(num, ts, linktype, data, wirelen))

    return show, out.flush
