#!/usr/bin/env python3
"""The NFS operations a capture holds, as tshark (the reference decoder) names them.

    python3 lab/nfs_ops.py CAPTURE...            a Markdown table: calls per program and operation
    python3 lab/nfs_ops.py --io CAPTURE          every READ and WRITE call: op, offset, count

Operations are named "PROGRAM:OP" as the lab's NFS workload log (lab/guest/nfs_workload.py) names
what it expects: NFS3:WRITE, NFS4:OPEN (each operation of a COMPOUND), NFSCB:CB_RECALL (each
operation of a CB_COMPOUND), MOUNT:MNT, NLM:LOCK, NFSACL:SETACL, and RPCRDMA:RDMA_ERROR (an
RPC-over-RDMA message type, in either direction). Only calls are counted (replies repeat them);
names come from tshark's own tables (`tshark -G values`).
"""
from __future__ import annotations

import os
import subprocess
import sys
from collections import Counter
from functools import lru_cache

NFS, MOUNT, NLM, NFSACL, NFS_CB = 100003, 100005, 100021, 100227, 0x40000000
CALL = "0"

# tshark fields that name an RPC call's procedure or operations, per (program, version)
PROC_FIELDS = {(NFS, 3): "nfs.procedure_v3", (MOUNT, 3): "mount.procedure_v3", (NLM, 4): "nlm.procedure_v4",
               (NFSACL, 3): "nfsacl.procedure_v3"}
PREFIX = {NFS: "NFS", MOUNT: "MOUNT", NLM: "NLM", NFSACL: "NFSACL"}
FIELDS = ["rpc.xid", "rpc.msgtyp", "rpc.program", "rpc.programversion", "rpc.procedure", "nfs.opcode",
          "nfs.cb.operation",
          *PROC_FIELDS.values(), "rpcordma.msg_type",
          "nfs.offset3", "nfs.count3", "nfs.offset4", "nfs.count4", "nfs.write.data_length"]
NAMED = ["nfs.opcode", "nfs.cb.operation", "rpcordma.msg_type", *PROC_FIELDS.values()]


def tshark() -> str:
    return os.environ.get("TSHARK", "tshark")


@lru_cache(maxsize=1)
def names() -> dict[str, dict[int, str]]:
    """tshark's value names of the fields that name procedures and operations."""
    out = subprocess.run([tshark(), "-G", "values"], capture_output=True, text=True, check=True).stdout
    table: dict[str, dict[int, str]] = {f: {} for f in NAMED}
    for line in out.splitlines():
        cols = line.split("\t")
        if len(cols) >= 4 and cols[0] == "V" and cols[1] in table:
            table[cols[1]][int(cols[2])] = cols[3]
    return table


def frames(pcap: str) -> list[dict[str, list[str]]]:
    """One dict per frame: field -> every value tshark shows for it.

    MOUNT, NLM and the NFSv4.0 callback go over TCP between ports chosen at run time; by default
    tshark names a TCP payload by its lower port first, and a client's reserved port (say 862,
    TWAMP-Control's) can hide an RPC record: the RPC heuristic is tried first instead. And a
    soft-iWARP stream that lost a segment before the capture point goes on past the hole only
    when tshark reassembles out-of-order segments (off by default in tshark 4.0).
    """
    cmd = [tshark(), "-n", "-o", "tcp.try_heuristic_first:TRUE", "-o", "tcp.reassemble_out_of_order:TRUE",
           "-r", pcap, "-T", "fields",
           "-E", "separator=\t", "-E", "occurrence=a", "-E", "aggregator=\x1f"]
    for f in FIELDS:
        cmd += ["-e", f]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True, env={**os.environ, "LC_ALL": "C"}).stdout
    rows = []
    for line in out.splitlines():
        cols = line.split("\t") + [""] * len(FIELDS)
        rows.append({f: (c.split("\x1f") if c else []) for f, c in zip(FIELDS, cols)})
    return rows


def _name(field: str, value: str) -> str:
    return names()[field].get(int(value), value)


def call_ops(row: dict[str, list[str]]) -> list[str]:
    """The operations of the RPC calls in one frame."""
    ops: list[str] = []
    if CALL not in row["rpc.msgtyp"]:
        return ops
    calls = {(int(p), int(v), int(c)) for p, v, c, t in
             zip(row["rpc.program"], row["rpc.programversion"], row["rpc.procedure"], row["rpc.msgtyp"]) if t == CALL}
    for prog, vers, proc in sorted(calls):
        if prog == NFS and vers == 4:
            ops += [f"NFS4:{_name('nfs.opcode', v)}" for v in row["nfs.opcode"]] if proc == 1 else ["NFS4:NULL"]
        elif prog == NFS_CB:
            ops += [f"NFSCB:{_name('nfs.cb.operation', v)}" for v in row["nfs.cb.operation"]] if proc == 1 \
                else ["NFSCB:CB_NULL"]
        elif (prog, vers) in PROC_FIELDS:
            field = PROC_FIELDS[prog, vers]
            prefix = PREFIX[prog] + ("3" if prog == NFS else "")
            ops += [f"{prefix}:{_name(field, v)}" for v in row[field]]
    return ops


Rows = list[dict[str, list[str]]]


def count_ops(rows: Rows) -> Counter[str]:
    """How many times each operation is called in a capture's frames (and each RPC-over-RDMA message type
    sent)."""
    counts: Counter[str] = Counter()
    for row in rows:
        counts.update(call_ops(row))
        counts.update(f"RPCRDMA:{_name('rpcordma.msg_type', v)}" for v in row["rpcordma.msg_type"])
    return counts


def io_calls(rows: Rows) -> set[tuple[str, int, int]]:
    """(op, offset, count) of every READ and WRITE call (a WRITE's count is the length of its data)."""
    found: set[tuple[str, int, int]] = set()
    for row in rows:
        ops = call_ops(row)
        v3 = [op.split(":")[1] for op in ops if op in ("NFS3:READ", "NFS3:WRITE")]
        for op, off, cnt in zip(v3, row["nfs.offset3"], row["nfs.count3"]):
            found.add((op, int(off), int(cnt)))
        reads = [op for op in ops if op == "NFS4:READ"]
        writes = [op for op in ops if op == "NFS4:WRITE"]
        if reads and not writes:
            found.update(("READ", int(o), int(c)) for o, c in zip(row["nfs.offset4"], row["nfs.count4"]))
        elif writes and not reads:
            found.update(("WRITE", int(o), int(c)) for o, c in zip(row["nfs.offset4"], row["nfs.write.data_length"]))
    return found


def table(pcaps: list[str]) -> str:
    """A Markdown table: one row per operation, one column per capture."""
    counts = {os.path.basename(p).removesuffix(".pcap"): count_ops(frames(p)) for p in pcaps}
    ops = sorted({op for c in counts.values() for op in c})
    head = "| operation | " + " | ".join(n.replace("-full", "").replace("nfsv", "v") for n in counts) + " |"
    lines = [head, "|---|" + "---:|" * len(counts)]
    for op in ops:
        lines.append(f"| {op} | " + " | ".join(str(c.get(op, "")) for c in counts.values()) + " |")
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    if argv[:1] == ["--io"]:
        for op, off, cnt in sorted(io_calls(frames(argv[1]))):
            print(op, off, cnt)
        return 0
    if not argv:
        print(__doc__, file=sys.stderr)
        return 2
    print(table(argv))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
