"""``rdmaspy serve`` and ``rdmaspy load``: live RPC-over-RDMA traffic on a real RDMA device.

serve is the responder, load the requester, of the generator's own small RPC
program (see rdmaspy.traffic.protocol). Both need an RDMA device, pyverbs and the
native hot path; where any is missing they say so in one line and point to the lab.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import dataclass
from typing import ClassVar, Iterator

from ..errors import RdmaspyError

DEFAULT_PORT = 20049      # NFS/RDMA's port: analyzers tie RPC-over-RDMA to it through the CM
STALL_SECONDS = 30.0      # load gives up when calls wait this long with nothing arriving


class TrafficUsage(RdmaspyError):
    """A bad option value of serve/load."""


def _size(text: str) -> int:
    t = text.strip().lower()
    mult = 1
    for suffix, m in (("k", 1024), ("m", 1 << 20)):
        if t.endswith(suffix):
            t, mult = t[:-1], m
    try:
        v = int(t, 0) * mult
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a size (e.g. 4096, 64k, 1m)") from None
    if v < 0:
        raise argparse.ArgumentTypeError(f"{text!r} is negative")
    return v


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"RDMA-CM port (default {DEFAULT_PORT})")
    p.add_argument("--credits", type=int, default=32, help="credits to request (load) or grant (serve)")
    p.add_argument("--send-size", type=_size, default=4096,
                   help="RFC 8797 Send Size in the private data: the largest message this side sends inline")
    p.add_argument("--recv-size", type=_size, default=4096,
                   help="RFC 8797 Receive Size: the largest message this side receives inline")
    p.add_argument("--remote-invalidate", action="store_true",
                   help="set the R bit of the private data (Send With Invalidate accepted)")
    p.add_argument("--no-pdata", action="store_true", help="leave the RFC 8797 private data out of REQ/REP")
    p.add_argument("--max-seg", type=_size, default=1 << 20, help="largest RDMA segment (default 1m)")
    p.add_argument("--bench", choices=("native", "pyverbs", "native-cm"),
                   help="run the Send/Receive ping-pong benchmark instead of RPC traffic: native and pyverbs "
                        "drive the same pyverbs-made QP and CQ; native-cm runs the native loop on the QP "
                        "RDMA-CM creates for serve/load")
    p.add_argument("--bench-size", type=_size, default=64, help="message size of --bench (default 64)")
    p.add_argument("--bench-op", choices=("send", "write", "read"), default="send",
                   help="what --bench native/pyverbs does: a Send/Receive ping-pong (default), or RDMA WRITEs "
                        "or READs of the responder's buffer")
    p.add_argument("--bench-depth", type=int, default=1, choices=range(1, 17), metavar="1..16",
                   help="WRITEs or READs posted together, behind one doorbell, before waiting (default 1)")
    p.add_argument("--json", metavar="FILE", help="write the summary as JSON to FILE")


def register(sub) -> None:
    s = sub.add_parser("serve", help="answer RPC-over-RDMA v1/v2 traffic from `rdmaspy load` (needs RDMA)")
    s.add_argument("--addr", required=True, help="local IP address of the RDMA device to listen on")
    s.add_argument("--version", choices=("1", "2"), default="2",
                   help="highest RPC-over-RDMA version spoken: 1 answers v2 with ERR_VERS (default 2)")
    s.add_argument("--max-size", type=_size, default=1 << 20, help="largest reply (default 1m)")
    s.add_argument("--fault", action="append", default=[], choices=("overrun-reply", "xid-mismatch"),
                   help="misbehave on purpose, for testing analyzers (repeatable)")
    s.add_argument("--connections", type=int, default=1, help="serve this many connections, then exit")
    s.add_argument("--hold", type=int, default=0, metavar="N",
                   help="for analyzer tests: answer only once N messages are waiting (or after 1 s), so that "
                        "a client's burst is all on the wire before the first reply")
    _common(s)
    s.set_defaults(func=cmd_serve)

    ld = sub.add_parser("load", help="drive RPC-over-RDMA v1/v2 traffic to `rdmaspy serve` (needs RDMA)")
    ld.add_argument("--src", required=True, help="local IP address of the RDMA device to use")
    ld.add_argument("--dst", required=True, help="address of the server")
    ld.add_argument("--version", choices=("1", "2"), default="1",
                    help="RPC-over-RDMA version to try (2 falls back to 1 on RDMA2_ERR_VERS)")
    ld.add_argument("--mix", default="null,echo,read,write,bigreply,pullreply",
                    help="operations with optional weights, e.g. 'null=4,read=1' (procedures: null, echo, "
                         "read [Write chunk], write [Read chunk], bigreply [Reply chunk], "
                         "pullreply [responder-provided Read chunk + RDMA_DONE, v1])")
    ld.add_argument("--size", type=_size, default=8192, help="data size of each operation (default 8k)")
    ld.add_argument("--sizes", default="", help="per-operation sizes, e.g. 'read=64k,echo=100'")
    ld.add_argument("--concurrency", type=int, default=8, help="calls in flight, up to the credit grant")
    ld.add_argument("--count", type=int, default=0, help="stop after this many calls")
    ld.add_argument("--duration", type=float, default=0.0, help="stop after this many seconds")
    ld.add_argument("--rate", type=float, default=0.0, help="calls per second (default: as fast as possible)")
    ld.add_argument("--fault", action="append", default=[],
                    choices=("exceed-credits", "xid-mismatch", "skip-done"),
                    help="misbehave on purpose, for testing analyzers (repeatable)")
    ld.add_argument("--iterations", type=int, default=10000, help="messages of --bench")
    ld.add_argument("--quiet", action="store_true", help="no progress bar")
    ld.add_argument("-T", choices=("text", "json"), default="text", dest="format",
                    help="final report as text (default) or JSON on stdout, for scripts")
    _common(ld)
    ld.set_defaults(func=cmd_load)
    s.add_argument("--iterations", type=int, default=10000, help="messages of --bench")


def _check_bench(args) -> None:
    if args.bench == "native-cm" and args.bench_op != "send":
        raise TrafficUsage("--bench native-cm runs the Send/Receive ping-pong only (--bench-op send)")


def _pdata(args):
    from ..traffic.protocol import PrivateData
    if args.no_pdata:
        return None
    try:
        pd = PrivateData(args.send_size, args.recv_size, args.remote_invalidate)
        pd.encode()
    except ValueError as exc:
        raise TrafficUsage(str(exc)) from None
    return pd


def _layout(msg_size: int, recv_slots: int, send_slots: int, staging: int, chunks: int):
    from ..traffic.verbs import Layout
    return Layout(recv_slots, send_slots, msg_size, staging, chunks)


def _pdata_text(raw: bytes) -> str:
    # The CM pads private data to its fixed size with zeros.
    return raw.rstrip(b"\0").hex() or "-"


def _write_json(path: str | None, obj: dict) -> None:
    if path:
        with open(path, "w") as f:
            json.dump(obj, f, indent=1, sort_keys=True)


# ---------------------------------------------------------------- serve

def cmd_serve(args: argparse.Namespace) -> int:
    from ..traffic import verbs
    from ..traffic.protocol import Inline, V1_INLINE_DEFAULT
    from ..traffic.session import Server, REGION_SLACK
    verbs.require_rdma()
    pdata = _pdata(args)
    msg = max(args.send_size, args.recv_size, V1_INLINE_DEFAULT)
    pull_slots = 16
    layout = _layout(msg, args.credits + 8, 16, args.max_size + 4096,
                     pull_slots * (args.max_size + 4096 + REGION_SLACK))
    versions = (1,) if args.version == "1" else (1, 2)
    _check_bench(args)
    summary = []
    announce = lambda: print(f"rdmaspy serve: listening on {args.addr}:{args.port}",  # noqa: E731
                             file=sys.stderr, flush=True)
    for _ in range(args.connections):
        if args.bench in ("native", "pyverbs"):
            pair, listener = verbs.pyverbs_bench_accept(args.addr, args.port, args.bench_size, announce)
            summary.append(_bench_result(args, *verbs.run_bench(pair, args.bench, args.iterations, False,
                                                                args.bench_op, args.bench_depth),
                                         initiator=False))
            time.sleep(0.5)
            pair.cmid.close()
            listener.close()
            continue
        conn = verbs.accept(args.addr, args.port, layout, pdata, on_listen=announce)
        print(f"rdmaspy serve: connection on {args.addr}:{args.port}; client private data "
              f"{_pdata_text(conn.raw_peer_pdata)}", file=sys.stderr)
        if args.bench:
            summary.append(_bench(args, conn, initiator=False))
            conn.close()
            continue
        inline = Inline.negotiate(conn.peer_pdata, pdata)
        srv = Server(conn.link, versions=versions, credits=args.credits, inline=inline, max_seg=args.max_seg,
                     pull_slots=pull_slots, pull_size=args.max_size + 4096, faults=args.fault)
        try:
            with verbs.counted_by_callgrind():
                _serve_loop(args, conn, srv)
        except ConnectionError as exc:
            print(f"rdmaspy serve: connection ended: {exc}", file=sys.stderr)
        st = srv.stats
        summary.append({"calls": st.calls, "errors": st.errors, "dones": st.dones,
                        "vers_errors": st.vers_errors, "version": srv.vers,
                        "by_proc": {str(k): v for k, v in st.by_proc.items()},
                        "inline": [inline.call, inline.reply], "counters": dict(conn.link.counters)})
        print(f"rdmaspy serve: {st.calls} calls, {st.errors} transport errors, {st.dones} RDMA_DONE, "
              f"version {srv.vers}", file=sys.stderr)
        conn.close()
    _write_json(args.json, {"connections": summary})
    return 0


def _serve_loop(args, conn, srv) -> None:
    """Answer calls until the client disconnects; --hold N answers N messages at a time."""
    held: list[bytes] = []
    held_since = 0.0
    while True:
        data = conn.link.recv(timeout=0.2)
        if data is not None:
            if not held:
                held_since = time.monotonic()
            held.append(data)
        if held and (len(held) >= args.hold or time.monotonic() - held_since > 1.0):
            for msg in held:
                srv.handle(msg)
            held.clear()
        elif data is None and not held and conn.link.ep.cm_event_pending():
            break            # the client disconnected


# ---------------------------------------------------------------- load

def _parse_mix(text: str, version: int) -> list[int]:
    from ..traffic import protocol as P
    seq: list[int] = []
    for item in filter(None, (x.strip() for x in text.split(","))):
        name, _, w = item.partition("=")
        if name not in P.OPS:
            raise TrafficUsage(f"unknown operation {name!r} (choose from {', '.join(P.OPS)})")
        try:
            weight = int(w) if w else 1
        except ValueError:
            raise TrafficUsage(f"bad weight in {item!r}") from None
        if P.OPS[name] == P.PROC_PULLREPLY and version != 1:
            continue         # RDMA_DONE is version 1 only; v2 runs the rest of the mix
        seq += [P.OPS[name]] * weight
    if not seq:
        raise TrafficUsage("the operation mix is empty")
    return seq


def _parse_sizes(text: str, default: int) -> dict[int, int]:
    from ..traffic import protocol as P
    out = {p: default for p in P.PROC_NAMES}
    out[P.PROC_NULL] = 0
    for item in filter(None, (x.strip() for x in text.split(","))):
        name, _, v = item.partition("=")
        if name not in P.OPS:
            raise TrafficUsage(f"unknown operation {name!r}")
        try:
            out[P.OPS[name]] = _size(v)
        except argparse.ArgumentTypeError as exc:
            raise TrafficUsage(str(exc)) from None
    return out


def _ops(seq: list[int]) -> Iterator[int]:
    i = 0
    while True:
        yield seq[i % len(seq)]
        i += 1


def percentile(sorted_vals: list[float], q: float) -> float:
    if not sorted_vals:
        return 0.0
    k = min(len(sorted_vals) - 1, max(0, round(q / 100 * (len(sorted_vals) - 1))))
    return sorted_vals[k]


PERCENTILES = (50, 90, 99, 99.9)


def latency_us(latencies: list[float]) -> dict[str, float]:
    """p50, p90, p99, p99.9 and max of latencies (seconds), in microseconds."""
    lat = sorted(latencies)
    return {f"p{q:g}": percentile(lat, q) * 1e6 for q in PERCENTILES} | {"max": lat[-1] * 1e6 if lat else 0.0}


def _rates(results: list, elapsed: float) -> dict:
    """Calls, operations per second, data moved and latency percentiles of results."""
    moved = sum(r.size for r in results if r.ok)
    return {"calls": len(results), "ok": sum(r.ok for r in results), "failed": sum(not r.ok for r in results),
            "ops_per_s": len(results) / elapsed if elapsed > 0 else 0.0,
            "bytes": moved, "mb_per_s": moved / elapsed / 1e6 if elapsed > 0 else 0.0,
            "latency_us": latency_us([r.latency for r in results])}


def summarize(results: list, elapsed: float) -> dict:
    from ..traffic import protocol as P
    by_op: dict[str, dict[str, int]] = {}
    kinds: dict[str, list] = {}
    hows: dict[str, int] = {}
    for r in results:
        d = by_op.setdefault(P.PROC_NAMES[r.proc], {"ok": 0, "failed": 0})
        d["ok" if r.ok else "failed"] += 1
        kinds.setdefault(P.PROC_NAMES[r.proc], []).append(r)
        hows[r.how] = hows.get(r.how, 0) + 1
    # Each kind's rate is over the whole run: the kinds ran interleaved, sharing its time.
    return _rates(results, elapsed) | {
        "seconds": elapsed, "by_op": by_op, "transfers": hows,
        "per_op": {name: _rates(rs, elapsed) for name, rs in kinds.items()},
        "failures": [f"{r.xid:#x} {P.PROC_NAMES[r.proc]}: {r.detail}" for r in results if not r.ok][:20]}


def cmd_load(args: argparse.Namespace) -> int:
    from ..traffic import verbs
    from ..traffic import protocol as P
    from ..traffic.session import Client, REGION_SLACK
    if args.count <= 0 and args.duration <= 0 and not args.bench:
        args.count = 100
    version = int(args.version)
    seq = _parse_mix(args.mix, 1)      # validated for v1; v2 drops pullreply below
    sizes = _parse_sizes(args.sizes, args.size)
    _check_bench(args)
    verbs.require_rdma()
    pdata = _pdata(args)
    max_size = max(sizes.values())
    slot_size = 2 * P.pad4(max_size) + 8192 + REGION_SLACK
    slots = max(1, min(args.concurrency, args.credits + (1 if "exceed-credits" in args.fault else 0)))
    if "exceed-credits" in args.fault:
        slots = max(slots, args.credits + 1)
    msg = max(args.send_size, args.recv_size, P.V1_INLINE_DEFAULT)
    layout = _layout(msg, args.credits + 8, slots + 8, max_size + 8192, slots * (slot_size + REGION_SLACK))
    if args.bench in ("native", "pyverbs"):
        pair = verbs.pyverbs_bench_connect(args.src, args.dst, args.port, args.bench_size)
        out = _bench_result(args, *verbs.run_bench(pair, args.bench, args.iterations, True, args.bench_op,
                                                   args.bench_depth), initiator=True)
        time.sleep(0.5)
        pair.cmid.close()
        _write_json(args.json, out)
        return 0
    conn = verbs.connect(args.src, args.dst, args.port, layout, pdata)
    print(f"rdmaspy load: connected {args.src} -> {args.dst}:{args.port}; server private data "
          f"{_pdata_text(conn.raw_peer_pdata)}", file=sys.stderr)
    if args.bench:
        out = _bench(args, conn, initiator=True)
        conn.close()
        _write_json(args.json, out)
        return 0
    inline = P.Inline.negotiate(pdata, conn.peer_pdata)
    if version == 2 and pdata is None:
        inline = P.Inline(P.V2_INLINE_DEFAULT, P.V2_INLINE_DEFAULT)
    cli = Client(conn.link, version=version, credits=args.credits, inline=inline, max_seg=args.max_seg,
                 slots=slots, slot_size=slot_size, faults=args.fault)
    results: list = []
    elapsed = 0.0
    try:
        cli.start()
        deadline = time.monotonic() + 30
        while not cli.ready:
            data = conn.link.recv(timeout=1.0)
            if data is not None:
                cli.on_message(data)
            elif time.monotonic() > deadline:
                raise ConnectionError("the server did not answer the version exchange")
        if cli.vers != 1:
            seq = [p for p in seq if p != P.PROC_PULLREPLY] or [P.PROC_NULL]
        with verbs.counted_by_callgrind():
            results, elapsed = _run(args, cli, conn, seq, sizes)
    finally:
        conn.close()
    summary = summarize(results, elapsed)
    summary.update(version=cli.vers, fell_back=cli.fell_back, inline=[cli.inline.call, cli.inline.reply],
                   credits_granted=cli.credits.granted, max_outstanding=cli.credits.high_water,
                   private_data={"sent": pdata.encode().hex() if pdata else "",
                                 "received": conn.raw_peer_pdata.rstrip(b"\0").hex()},
                   faults=list(args.fault))
    _report(summary, args.format)
    _write_json(args.json, summary)
    if summary["failed"] and not args.fault:
        return 1
    return 0


@dataclass(slots=True)
class LiveRate:
    """The rate of the last quarter second or so, for the progress bar: what the load does now,
    not its average since the start."""
    since: float
    calls: int = 0
    moved: int = 0
    ops_per_s: float = 0.0
    mb_per_s: float = 0.0
    PERIOD: ClassVar[float] = 0.25

    def add(self, size: int, now: float) -> bool:
        """Count one finished call; True when a new rate is out."""
        self.calls += 1
        self.moved += size
        span = now - self.since
        if span < self.PERIOD:
            return False
        self.ops_per_s, self.mb_per_s = self.calls / span, self.moved / span / 1e6
        self.since, self.calls, self.moved = now, 0, 0
        return True


def _run(args, cli, conn, seq: list[int], sizes: dict[int, int]) -> tuple[list, float]:
    from rich.console import Console
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn
    results: list = []
    ops = _ops(seq)
    issued = 0
    t0 = time.perf_counter()
    end = t0 + args.duration if args.duration > 0 else None
    interval = 1.0 / args.rate if args.rate > 0 else 0.0
    next_at = t0
    total = args.count if args.count > 0 else None
    quiet = args.quiet or not sys.stderr.isatty()
    burst = "exceed-credits" in args.fault
    # A reply (or a call sent) is progress; 30 s without any while calls wait means the
    # connection is stuck (a peer gone, a QP wedged), not slow.
    last_progress = time.perf_counter()
    live = LiveRate(t0)
    with Progress(TextColumn("[bold]{task.description}"), BarColumn(), TextColumn("{task.completed} calls"),
                  TextColumn("{task.fields[rate]:>8.0f} ops/s"), TextColumn("{task.fields[mbps]:>8.2f} MB/s"),
                  TimeElapsedColumn(), console=Console(stderr=True), disable=quiet, transient=True) as bar:
        task = bar.add_task(f"RPC-over-RDMA v{cli.vers}", total=total, rate=0.0, mbps=0.0)
        while True:
            now = time.perf_counter()
            more = (total is None or issued < total) and (end is None or now < end)
            if not more and not cli.pending:
                break
            while more and cli.can_call() and len(cli.pending) < args.concurrency + (
                    1 if "exceed-credits" in args.fault else 0):
                if interval and now < next_at:
                    break
                proc = next(ops)
                # Exceeding the grant shows on the wire only if the whole burst leaves
                # before the first reply: one chain of Sends.
                cli.call(proc, sizes[proc], defer=burst)
                issued += 1
                last_progress = now
                next_at = max(next_at + interval, now) if interval else now
                more = (total is None or issued < total) and (end is None or now < end)
            cli.flush()
            data = conn.link.recv(timeout=0.05 if cli.pending else 0.0)
            if data is None:
                if cli.pending and time.perf_counter() - last_progress > STALL_SECONDS:
                    raise ConnectionError(f"no reply in {STALL_SECONDS:g} s with {len(cli.pending)} call(s) waiting")
                continue
            last_progress = time.perf_counter()
            res = cli.on_message(data)
            if res is not None:
                results.append(res)
                if not quiet and live.add(res.size if res.ok else 0, time.perf_counter()):
                    bar.update(task, completed=len(results), rate=live.ops_per_s, mbps=live.mb_per_s)
    return results, time.perf_counter() - t0


def _report(summary: dict, fmt: str) -> None:
    """The final report on stdout: text for people, JSON (-T json) for scripts."""
    if fmt == "json":
        json.dump(summary, sys.stdout, indent=1, sort_keys=True)
        print()
    else:
        _print_summary(summary)


def _print_summary(s: dict) -> None:
    lat = s["latency_us"]
    print(f"RPC-over-RDMA v{s['version']}{' (fell back from v2)' if s['fell_back'] else ''}: "
          f"{s['calls']} calls ({s['ok']} ok, {s['failed']} failed) in {s['seconds']:.3f} s")
    print(f"  {s['ops_per_s']:.1f} ops/s, {s['mb_per_s']:.2f} MB/s of data; latency p50 {lat['p50']:.0f} us, "
          f"p90 {lat['p90']:.0f} us, p99 {lat['p99']:.0f} us, p99.9 {lat['p99.9']:.0f} us, max {lat['max']:.0f} us")
    print(f"  {'operation':10} {'calls':>8} {'ops/s':>10} {'MB/s':>9} {'p50 us':>9} {'p99 us':>9} "
          f"{'p99.9 us':>9} {'max us':>9}")
    for name, k in sorted(s["per_op"].items()):
        kl = k["latency_us"]
        print(f"  {name:10} {k['calls']:8} {k['ops_per_s']:10.1f} {k['mb_per_s']:9.2f} {kl['p50']:9.0f} "
              f"{kl['p99']:9.0f} {kl['p99.9']:9.0f} {kl['max']:9.0f}")
    print(f"  inline {s['inline'][0]}/{s['inline'][1]} bytes, credits granted {s['credits_granted']}, "
          f"most outstanding {s['max_outstanding']}")
    print("  " + ", ".join(f"{k} {v['ok']}/{v['ok'] + v['failed']}" for k, v in sorted(s["by_op"].items())))
    print("  transfers: " + ", ".join(f"{k} {v}" for k, v in sorted(s["transfers"].items())))
    for f in s["failures"]:
        print(f"  failed: {f}")


# ---------------------------------------------------------------- benchmark

def _bench(args, conn, initiator: bool) -> dict:
    from ..traffic import verbs
    return _bench_result(args, *verbs.native_pingpong(conn.link, args.iterations, args.bench_size, initiator),
                         initiator=initiator)


def _bench_result(args, secs: float, done: int, initiator: bool) -> dict:
    size = args.bench_size
    op = getattr(args, "bench_op", "send") if args.bench != "native-cm" else "send"
    out = {"mode": args.bench, "op": op, "iterations": done, "size": size, "seconds": secs,
           "round_trips_per_s": done / secs if secs else 0.0,
           "half_round_trip_us": secs / done / 2 * 1e6 if done else 0.0}
    if initiator and getattr(args, "format", "text") == "json":
        _report(out, "json")
    elif initiator:
        what = "round trips" if op == "send" else f"RDMA {op.upper()}s"
        print(f"bench {args.bench} {op}: {done} {what} of {size} bytes in {secs:.3f} s: "
              f"{out['round_trips_per_s']:.0f}/s, {out['half_round_trip_us']:.1f} us one way")
    return out
