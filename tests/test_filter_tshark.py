"""``rdmaspy decode -Y`` selects the same frames as ``tshark -Y`` with the equivalent Wireshark filter."""
from __future__ import annotations

import os
import subprocess

import pytest

from conftest import capture, require_tshark
from rdmaspy.engine import Engine
from rdmaspy.filter import compile_filter
from rdmaspy.readers import open_capture

# (capture, rdmaspy filter, Wireshark 4.0 filter): names map bth.opcode <-> infiniband.bth.opcode,
# reth.dma_length <-> infiniband.reth.dmalen, bth.ackreq <-> infiniband.bth.a ...
CASES = [
    ("rxe-ib_read_bw.pcap", "bth.opcode == 12", "infiniband.bth.opcode == 12"),
    ("rxe-ib_read_bw.pcap", 'bth.opcode == "RC RDMA READ Response Middle"', "infiniband.bth.opcode == 14"),
    ("rxe-ib_read_bw.pcap", "reth.dma_length >= 4096 && bth.psn > 0", "infiniband.reth.dmalen >= 4096 && infiniband.bth.psn > 0"),
    ("rxe-ib_read_bw.pcap", "not reth and ip.src == 192.0.2.1", "not infiniband.reth and ip.src == 192.0.2.1"),
    ("rxe-ib_read_bw.pcap", "frame.time_relative > 0.0015 and aeth", "frame.time_relative > 0.0015 and infiniband.aeth"),
    ("rxe-ib_read_bw.pcap", "eth.src == 52:54:00:00:00:02 || frame.number in {2 3}",
     "eth.src == 52:54:00:00:00:02 || frame.number in {2, 3}"),
    ("rxe-ib_read_bw.pcap", "eth.src[5] == 02 and ip.dst[2:2] == 02:01 and len(eth.dst) == 6",
     "eth.src[5] == 02 and ip.dst[2:2] == 02:01 and len(eth.dst) == 6"),
    ("rxe-ib_read_bw.pcap", 'frame[12:2] == 08:00 and frame contains 00:00:09:8b and frame matches "^RT"',
     'frame[12:2] == 08:00 and frame contains 00:00:09:8b and frame matches "^RT"'),
    ("rxe-ib_write_bw-loss.pcap", "aeth.syndrome == 0x60", "infiniband.aeth.syndrome == 0x60"),
    ("rxe-ib_write_bw-loss.pcap", "bth.opcode in {6 7 8} and bth.ackreq == 1",
     "infiniband.bth.opcode in {6, 7, 8} and infiniband.bth.a == 1"),
    ("rxe-ib_write_bw-loss.pcap", "reth.dma_length != 65536", "infiniband.reth.dmalen != 65536"),
    ("rxe-ib_send_bw-rnr.pcap", "aeth.syndrome >= 0x20 and aeth.syndrome < 0x40",
     "infiniband.aeth.syndrome >= 0x20 and infiniband.aeth.syndrome < 0x40"),
    ("rxe-ib_send_bw-rnr.pcap", "aeth.msn ~= 0 or bth.se == true", "infiniband.aeth.msn ~= 0 or infiniband.bth.se == 1"),
    ("rxe-nfsv3-rdma.pcap", "bth.opcode == 0x17", "infiniband.bth.opcode == 23"),
    ("rxe-nfsv3-rdma.pcap", "reth.dma_length > 4096 or deth.src_qp == 1",
     "infiniband.reth.dmalen > 4096 or infiniband.deth.srcqp == 1"),
    ("rxe-nfsv3-rdma.pcap", "bth.destqp == 0x1 xor frame.len > 1000",     # tshark 4.0 has no xor
     "(infiniband.bth.destqp == 1 and not frame.len > 1000) or (not infiniband.bth.destqp == 1 and frame.len > 1000)"),
    ("rxe-nfsv3-rdma.pcap", "frame.number <= 10 or frame.number == 20 and bth", "frame.number <= 10 or frame.number == 20 and infiniband"),
    ("rxe-nfsv3-rdma.pcap", "ip.dst == 192.0.2.0/24 and ip.ttl == 64 and udp.length < 100 and (ieth or aeth.msn > 5)",
     "ip.dst == 192.0.2.0/24 and ip.ttl == 64 and udp.length < 100 and (infiniband.ieth or infiniband.aeth.msn > 5)"),
    ("rxe-pyverbs-rc-verbs.pcap", "atomiceth or atomicacketh or ieth", "infiniband.atomiceth or infiniband.atomicacketh or infiniband.ieth"),
    ("rxe-pyverbs-rc-verbs.pcap", "atomiceth.compare_data == 0 and atomiceth.swap_or_add_data > 0",
     "infiniband.atomiceth.cmpdt == 0 and infiniband.atomiceth.swapdt > 0"),
    ("rxe-pyverbs-rc-verbs.pcap", "aeth.msn < bth.destqp and bth.p_key == 0xffff",
     "infiniband.aeth.msn < infiniband.bth.destqp and infiniband.bth.p_key == 0xffff"),
    # NFS and its side programs: tshark's names, the same filter on both sides
    ("rxe-nfsv3-rdma.pcap", "nfs.fh.hash == 0x38631e3b", "nfs.fh.hash == 0x38631e3b"),
    ("rxe-nfsv3-rdma.pcap", 'nfs.name contains "data" and nfs.procedure_v3 == 3',
     'nfs.name contains "data" and nfs.procedure_v3 == 3'),
    ("rxe-nfsv3-rdma.pcap", "nfs.status3 == 2 or nfs.fsinfo.rtmax", "nfs.status3 == 2 or nfs.fsinfo.rtmax"),
    ("rxe-nfsv3-rdma.pcap", "nfs.fattr3.size > 10000 and nfs.mode3.rusr == 1",
     "nfs.fattr3.size > 10000 and nfs.mode3.rusr == 1"),
    ("rxe-nfsv42-rdma.pcap", "nfs.stateid.hash == 0xd34d or nfs.slotid > 0",
     "nfs.stateid.hash == 0xd34d or nfs.slotid > 0"),
    ("nfs_all_procs.pcap", "nlm.lock.l_offset64 > 0 or mount.path or nfsacl.aclent.perm.read == 1",
     "nlm.lock.l_offset64 > 0 or mount.path or nfsacl.aclent.perm.read == 1"),
    # ICMP errors quoting RoCEv2 datagrams: the quote's headers are matched as tshark matches them
    ("rxe-read-retry-stall.pcap", "bth.opcode == 12", "infiniband.bth.opcode == 12"),
    ("rxe-read-retry-stall.pcap", "icmp and reth.dma_length == 5164 and udp.srcport == 54161",
     "icmp and infiniband.reth.dmalen == 5164 and udp.srcport == 54161"),
    ("rxe-read-retry-stall.pcap", "icmp.code == 1 and deth.src_qp == 1 and mad.mgmtclass == 7",
     "icmp.code == 1 and infiniband.deth.srcqp == 1 and infiniband.mad.mgmtclass == 7"),
    ("rxe-read-retry-stall.pcap", "bth.psn > 1431218 or ip.len == 308", "infiniband.bth.psn > 1431218 or ip.len == 308"),
    ("siw-rping.pcap", "tcp.flags.syn == 1 or tcp.flags.fin == true", "tcp.flags.syn == 1 or tcp.flags.fin == 1"),
    ("siw-rping.pcap", "tcp.srcport == tcp.dstport or ip.src == 192.0.2.2 and tcp.window_size_value < 600",
     "tcp.srcport == tcp.dstport or ip.src == 192.0.2.2 and tcp.window_size_value < 600"),
]


def tshark_frames(path, wireshark_filter: str) -> list[int]:
    exe = require_tshark()
    out = subprocess.run([exe, "-n", "-r", str(path), "-Y", wireshark_filter, "-T", "fields", "-e", "frame.number"],
                         capture_output=True, text=True, check=True, env={**os.environ, "LC_ALL": "C"}).stdout
    return [int(x) for x in out.split()]


_DISSECTED: dict[str, tuple[list, int]] = {}


def dissected(name: str):
    if name not in _DISSECTED:
        eng = Engine(strict=True)
        with open_capture(str(capture(name))) as cap:
            frames = list(cap)
        _DISSECTED[name] = ([eng.dissect(f) for f in frames], frames[0].ts)
    return _DISSECTED[name]


@pytest.mark.parametrize("name, ours, theirs", CASES, ids=[f"{c[0]}:{c[1]}" for c in CASES])
def test_filter_selects_the_frames_tshark_selects(name, ours, theirs):
    pkts, t0 = dissected(name)
    match = compile_filter(ours)
    got = [p.frame.num for p in pkts if match(p, t0)]
    want = tshark_frames(capture(name), theirs)
    assert got == want
    assert got and len(got) < len(pkts), "a filter that selects nothing (or everything) proves little"


def test_decode_cli_prints_the_frames_tshark_selects():
    name = "rxe-ib_write_bw-loss.pcap"
    out = subprocess.run(["rdmaspy", "decode", str(capture(name)), "-Y", "aeth.syndrome == 0x60"],
                         capture_output=True, text=True, check=True).stdout
    got = [int(line.split()[0]) for line in out.splitlines()]
    assert got == tshark_frames(capture(name), "infiniband.aeth.syndrome == 0x60")
    assert len(got) == 14      # the capture's README: 14 NAKs (PSN sequence error)
