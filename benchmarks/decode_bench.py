#!/usr/bin/env python3
"""Decode benchmark: rdmaspy against tshark on the same large captures, in one run.

Two workloads, each at 100k and 1M frames (built once, cached in benchmarks/out/):
  real       the SoftRoCE and soft-iWARP captures shipped in captures/, cycled (real_mix.py)
  synthetic  the NFSv3-over-RDMA workload of traffic.py, made with the encoders
At each size it runs, side by side with tshark:
  rdmaspy decode FILE          vs  tshark -r FILE                  (summary lines)
  rdmaspy decode -T json FILE  vs  tshark -r FILE -T ek            (every field)
  rdmaspy decode -V FILE       vs  tshark -r FILE -V               (the full tree)
  rdmaspy stats FILE           vs  tshark -q -z conv,udp           (statistics)
  rdmaspy expert FILE          vs  tshark -q -z expert             (findings)
  rdmaspy flows FILE           (the transaction analysis; tshark has none)
and prints packets per second, the ratios against the targets, and peak memory (RSS) of each.

rdmaspy is measured as ``pip install .`` installs it: the per-packet path compiled with mypyc
(built from the working tree into benchmarks/out/compiled by scripts/compiled_tree.py), run by the
Python of a virtual environment that holds rdmaspy's dependencies alone (benchmarks/out/venv, made once
from pyproject.toml's list), as a user's venv would: not by this interpreter, whose site-packages may run
other packages' ``.pth`` files at every start (a checkout's editable install, the machine's own; some
100 M instructions a process here).  ``--python current`` runs this interpreter instead.
``--build pure`` measures the Python source instead, ``--build installed`` the rdmaspy on PATH.

``--kinds`` makes the per-kind table instead: every capture shipped in captures/ (and each capture
given with ``--lab``, of a kind not shipped yet) cycled alone to 20,000 frames (``--kind-frames``), its
summary, JSON and ``-V`` against tshark's, the two run by turns (tshark, rdmaspy, tshark, rdmaspy: the
best of ``--repeat``, 2 by default), and the weakest kind of each command: the figure the README quotes.

    python3 benchmarks/decode_bench.py [--workloads real,synthetic] [--sizes 100000,1000000]
                                       [--repeat 1] [--skip-slow-above N] [--build compiled|pure|installed]
                                       [--python venv|current]
                                       [--commands=summary,JSON,-V,stats,expert,flows]
    python3 benchmarks/decode_bench.py --kinds [--lab FILE|DIR,...] [--only NAME,...] [--kind-frames 20000]
                                       [--baseline DIR]
"""
from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

import real_mix  # noqa: E402
import traffic  # noqa: E402
from measure import Run, best_of, run  # noqa: E402

WORKLOADS = {
    "real": ("real_mix_{size}.pcapng", lambda path, size: real_mix.build(Path(path), size)),
    "synthetic": ("nfs_rocev2_{size}.pcap", lambda path, size: traffic.build(path, size)),
}


def capture_for(workload: str, size: int, out: Path) -> Path:
    pattern, build = WORKLOADS[workload]
    path = out / pattern.format(size=size)
    if not path.exists():
        tmp = path.with_name(path.name + ".tmp")
        print(f"building {path.name} ({size:,} frames) ...", flush=True)
        build(str(tmp), size)
        tmp.rename(path)
    return path


BUILD: dict[str, str | None] = {"tree": None,        # the directory whose rdmaspy runs (None: the installed one)
                                 "baseline": None,    # another tree run beside it (--baseline)
                                 "python": None}      # the interpreter that runs a tree (None: this one)


def runtime_dependencies() -> list[str]:
    """rdmaspy's dependencies as pyproject.toml lists them (what ``pip install .`` brings)."""
    import tomllib
    with open(HERE.parent / "pyproject.toml", "rb") as f:
        return list(tomllib.load(f)["project"]["dependencies"])


def use_python(kind: str, out: Path) -> str:
    """Choose the interpreter that runs a tree; returns a description."""
    if kind == "current":
        return f"{sys.executable} (this interpreter)"
    venv = out / "venv"
    python = venv / "bin" / "python3"
    deps = runtime_dependencies()
    stamp = venv / ".dependencies"
    if not (python.exists() and stamp.exists() and stamp.read_text() == "\n".join(deps)):
        shutil.rmtree(venv, ignore_errors=True)
        made = subprocess.run([sys.executable, "-m", "venv", str(venv)], capture_output=True, text=True)
        if made.returncode == 0:
            made = subprocess.run([str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check", *deps],
                                  capture_output=True, text=True)
        if made.returncode != 0:
            reason = (made.stderr.strip().splitlines() or ["failed"])[-1]
            print(f"warning: no venv for the benchmark ({reason}); this interpreter runs rdmaspy",
                  file=sys.stderr, flush=True)
            return f"{sys.executable} (this interpreter: the venv could not be made)"
        stamp.write_text("\n".join(deps))
    BUILD["python"] = str(python)
    return f"{python} (a venv of rdmaspy's dependencies alone)"


def use_build(kind: str, out: Path) -> str:
    """Choose what ``rdmaspy`` means in this run; returns a description."""
    if kind == "installed":
        BUILD["tree"] = None
        return f"installed: {shutil.which('rdmaspy') or 'python -m rdmaspy'}"
    if kind == "pure":
        BUILD["tree"] = str(HERE.parent)
        return f"pure Python from {HERE.parent}"
    res = subprocess.run([sys.executable, str(HERE.parent / "scripts" / "compiled_tree.py"), str(out / "compiled")],
                         capture_output=True, text=True)
    if res.returncode != 0:
        raise SystemExit(res.stderr.strip() or "the compiled build failed")
    BUILD["tree"] = res.stdout.strip()
    return f"compiled with mypyc (as pip install . builds it), in {BUILD['tree']}"


def rdmaspy_cmd(*args: str, tree: str | None = None) -> list[str]:
    tree = tree or BUILD["tree"]
    if tree is not None:
        # -P: the current directory (a checkout, pure Python) must not come before the tree
        return ["env", f"PYTHONPATH={tree}", BUILD["python"] or sys.executable, "-P", "-m", "rdmaspy", *args]
    exe = shutil.which("rdmaspy")
    return [exe, *args] if exe else [sys.executable, "-m", "rdmaspy", *args]


def has_command(name: str) -> bool:
    res = subprocess.run(rdmaspy_cmd("--help"), capture_output=True, text=True)
    return f" {name} " in res.stdout or f"{{{name}," in res.stdout or f",{name}," in res.stdout or \
        f",{name}}}" in res.stdout


def row(r: Run) -> str:
    return f"  {r.label:<28} {r.frames:>9,} frames {r.wall:8.2f} s {r.pps:>11,.0f} pkt/s " \
           f"cpu {r.cpu:7.2f} s  peak RSS {r.maxrss_mb:8.1f} MiB"


# (label, rdmaspy arguments ({file}: the capture), tshark arguments or None, target ratio rdmaspy/tshark, slow)
COMMANDS: list[tuple[str, list[str], list[str] | None, float | None, bool]] = [
    ("summary", ["decode", "{file}"], [], 3.0, False),
    ("JSON", ["decode", "-T", "json", "{file}"], ["-T", "ek"], 6.0, True),
    ("-V", ["decode", "-V", "{file}"], ["-V"], 1.5, True),
    ("stats", ["stats", "{file}"], ["-q", "-z", "conv,udp"], 2.0, False),
    ("expert", ["expert", "{file}"], ["-q", "-z", "expert"], 2.0, False),
    ("flows", ["flows", "{file}", "-o", os.devnull], None, None, False),
]


def measure(path: str, size: int, repeat: int, skip_slow: bool,
            only: set[str] | None = None) -> list[tuple[str, Run, Run | None, float | None]]:
    rows = []
    for label, ours, theirs, target, slow in COMMANDS:
        if (slow and skip_slow) or (only is not None and label not in only):
            continue
        if ours[0] != "decode" and not has_command(ours[0]):
            continue
        tshark_run = None
        if theirs is not None:
            # tshark's slow outputs once whatever --repeat says: minutes a run at 1M frames
            tshark_run = best_of(1 if slow else repeat, f"tshark {' '.join(theirs) or '-r'}",
                                 ["tshark", "-n", "-r", path, *theirs], size)
            print(row(tshark_run), flush=True)
        argv = [path if a == "{file}" else a for a in ours]
        name = " ".join(a for a in ours if a not in ("{file}", "-o", os.devnull))
        ours_run = best_of(repeat, f"rdmaspy {name}", rdmaspy_cmd(*argv), size)
        print(row(ours_run), flush=True)
        base_run = None
        if BUILD["baseline"] is not None:
            base_run = best_of(repeat, f"baseline {name}", rdmaspy_cmd(*argv, tree=BUILD["baseline"]), size)
            print(row(base_run), flush=True)
        if tshark_run is not None:
            ratio = ours_run.pps / tshark_run.pps
            goal = f" (target >= {target:.1f})" if target is not None else ""
            before = f", baseline {base_run.pps / tshark_run.pps:.2f}x" if base_run is not None else ""
            print(f"  {label}: rdmaspy/tshark = {ratio:.2f}x{goal}{before}", flush=True)
        rows.append((label, ours_run, tshark_run, target))
    return rows


def table(results: dict[tuple[str, int], list]) -> str:
    """The figures as a Markdown table (docs/performance.md keeps one)."""
    lines = ["| workload | frames | command | rdmaspy pkt/s | tshark pkt/s | ratio | target | rdmaspy peak MiB | "
             "tshark peak MiB |", "|---|---|---|---|---|---|---|---|---|"]
    for (workload, size), rows in results.items():
        for label, ours, theirs, target in rows:
            ratio = f"{ours.pps / theirs.pps:.2f}x" if theirs is not None else ""
            lines.append(f"| {workload} | {size:,} | {label} | {ours.pps:,.0f} | "
                         f"{'' if theirs is None else f'{theirs.pps:,.0f}'} | {ratio} | "
                         f"{'' if target is None else f'>= {target:.1f}x'} | {ours.maxrss_mb:.1f} | "
                         f"{'' if theirs is None else f'{theirs.maxrss_mb:.1f}'} |")
    return "\n".join(lines)


# -- the per-kind table ---------------------------------------------------------------------------
KIND_FRAMES = 20_000
# (label, rdmaspy arguments, tshark arguments, target ratio): what every kind of traffic must reach
KIND_COMMANDS: list[tuple[str, list[str], list[str], float]] = [
    ("summary", ["decode", "{file}"], [], 2.0),
    ("JSON", ["decode", "-T", "json", "{file}"], ["-T", "ek"], 4.0),
    ("-V", ["decode", "-V", "{file}"], ["-V"], 1.2),
]
CAPTURE_SUFFIXES = (".pcap", ".pcapng", ".cap", ".erf")


def is_capture(path: Path) -> bool:
    """A capture file by its name, plain or gzip-compressed (the NVMe/RDMA captures are shipped as .pcap.gz)."""
    name = path.name[:-3] if path.name.endswith(".gz") else path.name
    return name.endswith(CAPTURE_SUFFIXES)


def kind_captures(lab: list[str]) -> list[Path]:
    """Every capture shipped in captures/, then those named by ``lab`` (files, or directories of them)."""
    found = sorted(p for p in (HERE.parent / "captures").iterdir() if is_capture(p))
    for item in lab:
        p = Path(item)
        found += sorted(q for q in p.iterdir() if is_capture(q)) if p.is_dir() else [p]
    return found


def cycled_kind(capture: Path, frames: int, out: Path) -> Path:
    """``capture`` alone, cycled to ``frames`` frames (built once; named by its content)."""
    digest = hashlib.sha256(capture.read_bytes()).hexdigest()[:12]
    path = out / "kinds" / f"{capture.stem}-{digest}-{frames}.pcapng"
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.name + ".tmp")
        real_mix.build(tmp, frames, [capture])
        tmp.rename(path)
    return path


def by_turns(repeat: int, label: str, ours: list[list[str]], theirs: list[str], frames: int) -> tuple[list[Run], Run]:
    """tshark and each rdmaspy of ``ours`` run by turns, ``repeat`` times each: the fastest run of each."""
    mine: list[list[Run]] = [[] for _ in ours]
    tsharks: list[Run] = []
    for _ in range(repeat):
        tsharks.append(run(f"tshark {' '.join(theirs[4:]) or '-r'}", theirs, frames))
        for runs, cmd in zip(mine, ours):
            runs.append(run(f"rdmaspy {label}", cmd, frames))
    return [min(runs, key=lambda r: r.wall) for runs in mine], min(tsharks, key=lambda r: r.wall)


# capture, its own frames, label -> (ours, tshark's, the baseline's or None)
KindRow = tuple[str, int, dict[str, tuple[Run, Run, Run | None]]]


def measure_kinds(captures: list[Path], frames: int, repeat: int, out: Path,
                  only: set[str] | None, baseline: str | None) -> list[KindRow]:
    rows: list[KindRow] = []
    for capture in captures:
        own = sum(1 for _ in _frames_of(capture))
        path = str(cycled_kind(capture, frames, out))
        print(f"\n{capture.name}: {own:,} frames, cycled to {frames:,}", flush=True)
        results: dict[str, tuple[Run, Run, Run | None]] = {}
        for label, ours, theirs, target in KIND_COMMANDS:
            if only is not None and label not in only:
                continue
            argv = [path if a == "{file}" else a for a in ours]
            cmds = [rdmaspy_cmd(*argv)] + ([rdmaspy_cmd(*argv, tree=baseline)] if baseline else [])
            mine, tshark = by_turns(repeat, label, cmds, ["tshark", "-n", "-r", path, *theirs], frames)
            base = mine[1] if baseline else None
            results[label] = (mine[0], tshark, base)
            before = f"  (baseline {base.pps / tshark.pps:5.2f}x)" if base is not None else ""
            print(f"  {label:<8} rdmaspy {mine[0].pps:>10,.0f} pkt/s  tshark {tshark.pps:>10,.0f} pkt/s  "
                  f"{mine[0].pps / tshark.pps:5.2f}x (target >= {target:.1f}){before}", flush=True)
        rows.append((capture.name, own, results))
    return rows


def _frames_of(capture: Path):
    from rdmaspy.readers import open_capture
    with open_capture(str(capture)) as cap:
        yield from cap


def kinds_table(rows: list[KindRow]) -> str:
    """The per-kind figures as a Markdown table, then the weakest kind of each command (with a baseline:
    its ratio after each, in parentheses)."""
    labels = [c[0] for c in KIND_COMMANDS if any(c[0] in r[2] for r in rows)]
    head = " | ".join(f"{label} (rdmaspy / tshark pkt/s)" for label in labels)
    lines = [f"| capture | frames | {head} |", "|---|---:|" + "---|" * len(labels)]
    for name, own, results in rows:
        cells = []
        for label in labels:
            if label not in results:
                cells.append("")
                continue
            mine, tshark, base = results[label]
            before = f" ({base.pps / tshark.pps:.2f}x)" if base is not None else ""
            cells.append(f"{mine.pps / tshark.pps:.2f}x{before} ({mine.pps:,.0f} / {tshark.pps:,.0f})")
        lines.append(f"| `{name}` | {own:,} | " + " | ".join(cells) + " |")
    targets = {c[0]: c[3] for c in KIND_COMMANDS}
    lines.append("")
    for label in labels:
        ratios = [(r[2][label][0].pps / r[2][label][1].pps, r[0]) for r in rows if label in r[2]]
        worst, name = min(ratios)
        met = sum(1 for x, _ in ratios if x >= targets[label])
        bases = [r[2][label][2].pps / r[2][label][1].pps for r in rows if label in r[2] and r[2][label][2]]
        before = f" (baseline: weakest {min(bases):.2f}x)" if bases else ""
        lines.append(f"- weakest {label}: {worst:.2f}x (`{name}`); target >= {targets[label]:.1f}x, "
                     f"met by {met} of {len(ratios)} kinds{before}")
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workloads", default="real,synthetic", help="real, synthetic or both (comma-separated)")
    ap.add_argument("--sizes", default="100000,1000000")
    ap.add_argument("--repeat", type=int,
                    help="runs of each command (tshark's JSON and -V: one; with --kinds, every command: "
                         "default 2, else 1); the fastest is reported")
    ap.add_argument("--skip-slow-above", type=int, default=10**9,
                    help="skip the JSON and -V comparisons for captures larger than this (tshark takes minutes)")
    ap.add_argument("--commands", help="only these, comma-separated (--commands=-V,stats): " + ", ".join(c[0] for c in COMMANDS))
    ap.add_argument("--out", default=str(HERE / "out"))
    ap.add_argument("--build", choices=("compiled", "pure", "installed"), default="compiled",
                    help="which rdmaspy to measure (default: compiled, as pip install . builds it)")
    ap.add_argument("--python", choices=("venv", "current"), default="venv",
                    help="the interpreter that runs a compiled or pure tree (default: a venv of rdmaspy's "
                         "dependencies alone, as a user's; current: this one, its site-packages' .pth files too)")
    ap.add_argument("--kinds", action="store_true",
                    help="the per-kind table: each capture cycled alone to --kind-frames, against tshark")
    ap.add_argument("--kind-frames", type=int, default=KIND_FRAMES)
    ap.add_argument("--lab", default="", help="with --kinds: captures (files or directories, comma-separated) "
                                              "of kinds not shipped yet")
    ap.add_argument("--only", help="with --kinds: only the captures whose name holds one of these (comma-separated)")
    ap.add_argument("--baseline", metavar="DIR",
                    help="another rdmaspy (a tree made by scripts/compiled_tree.py DIR) run beside this one: with "
                         "--kinds by turns with the two others, its ratios in parentheses; else after it, each command")
    args = ap.parse_args()
    if not shutil.which("tshark"):
        print("tshark is needed: apt-get install -y tshark", file=sys.stderr)
        return 1
    workloads = [w for w in args.workloads.split(",") if w]
    unknown = [w for w in workloads if w not in WORKLOADS]
    if unknown:
        print(f"unknown workload {unknown[0]!r} (real, synthetic)", file=sys.stderr)
        return 1
    only = None if args.commands is None else set(args.commands.split(","))
    BUILD["baseline"] = args.baseline
    if args.kinds:
        return main_kinds(args, only)
    if only is not None and not only <= {c[0] for c in COMMANDS}:
        print(f"unknown command {sorted(only - {c[0] for c in COMMANDS})[0]!r} "
              f"({', '.join(c[0] for c in COMMANDS)})", file=sys.stderr)
        return 1
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    tshark_version = subprocess.run(["tshark", "--version"], capture_output=True, text=True).stdout.splitlines()[0]
    print("rdmaspy:", use_build(args.build, out), flush=True)
    if args.build != "installed":
        print("python:", use_python(args.python, out), flush=True)
    print("tshark:", tshark_version, flush=True)
    sizes = [int(s) for s in args.sizes.split(",")]
    results: dict[tuple[str, int], list] = {}
    for workload in workloads:
        for size in sizes:
            path = str(capture_for(workload, size, out))
            print(f"\n{workload}: {size:,} frames ({os.path.getsize(path) / 2**20:.0f} MiB)", flush=True)
            results[(workload, size)] = measure(path, size, args.repeat or 1, size > args.skip_slow_above, only)
    if len(sizes) > 1:
        for workload in workloads:
            small, large = results[(workload, sizes[0])], results[(workload, sizes[-1])]
            print(f"\n{workload}: peak memory, {sizes[0]:,} -> {sizes[-1]:,} frames:")
            # by command: the large size may have skipped the slow ones (--skip-slow-above)
            large_of = {row[0]: row for row in large}
            for label, ours, theirs, _t in small:
                if label not in large_of:
                    continue
                _l, ours_l, theirs_l, _t2 = large_of[label]
                print(f"  rdmaspy {label:<10} {ours.maxrss_mb:8.1f} -> {ours_l.maxrss_mb:8.1f} MiB")
                if theirs is not None and theirs_l is not None:
                    print(f"  tshark  {label:<10} {theirs.maxrss_mb:8.1f} -> {theirs_l.maxrss_mb:8.1f} MiB")
    print("\n" + table(results))
    return 0


def main_kinds(args: argparse.Namespace, only: set[str] | None) -> int:
    if only is not None and not only <= {c[0] for c in KIND_COMMANDS}:
        print(f"unknown command {sorted(only - {c[0] for c in KIND_COMMANDS})[0]!r} "
              f"({', '.join(c[0] for c in KIND_COMMANDS)})", file=sys.stderr)
        return 1
    captures = kind_captures([x for x in args.lab.split(",") if x])
    if args.only:
        names = args.only.split(",")
        captures = [c for c in captures if any(n in c.name for n in names)]
    missing = [c for c in captures if not c.exists()]
    if missing or not captures:
        print(f"no such capture: {missing[0]}" if missing else "no capture matches --only", file=sys.stderr)
        return 1
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    tshark_version = subprocess.run(["tshark", "--version"], capture_output=True, text=True).stdout.splitlines()[0]
    print("rdmaspy:", use_build(args.build, out), flush=True)
    if args.build != "installed":
        print("python:", use_python(args.python, out), flush=True)
    print("tshark:", tshark_version, flush=True)
    if args.baseline:
        print("baseline: rdmaspy in", args.baseline, flush=True)
    rows = measure_kinds(captures, args.kind_frames, args.repeat or 2, out, only, args.baseline)
    print("\n" + kinds_table(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
