"""Live capture across a veth pair between two network namespaces (root only).

The test network is built per module with tests/netns/veth-pair.sh; real SoftRoCE frames are
replayed from one namespace (tests/netns/replay.py, raw AF_PACKET sends) and ``rdmaspy capture``
listens in the other.  The file must hold the sent frames byte for byte and in order.
"""
from __future__ import annotations

import os
import pwd
import re
import secrets
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from conftest import ROOT, capture, require_tshark, tshark_fields
from rdmaspy.readers import open_capture
from rdmaspy.writers import PcapWriter

pytestmark = [pytest.mark.netns,
              pytest.mark.skipif(os.geteuid() != 0, reason="needs root: network namespaces and raw sockets")]

NETNS = ROOT / "tests" / "netns"
ROCE = ["rxe-nfsv3-rdma.pcap", "rxe-ib_write_bw-loss.pcap", "rxe-ib_send_bw-rnr.pcap", "rxe-ucmatose.pcap",
        "rxe-pyverbs-rc-verbs.pcap", "rocev2_cnp_cx4lx.pcap", "synth_rocev2_cm_rpcrdma.pcap"]


class Net:
    def __init__(self, tag: str) -> None:
        self.tag = tag
        self.ns_a, self.ns_b = f"rs-{tag}-a", f"rs-{tag}-b"
        self.dev_a, self.dev_b = f"va-{tag}", f"vb-{tag}"


@pytest.fixture(scope="module")
def net():
    tag = "t" + secrets.token_hex(4)
    subprocess.run([str(NETNS / "veth-pair.sh"), "up", tag], check=True)
    try:
        yield Net(tag)
    finally:
        subprocess.run([str(NETNS / "veth-pair.sh"), "down", tag])


def frames_of(*names: str | Path) -> list[bytes]:
    out = []
    for n in names:
        with open_capture(str(n if isinstance(n, Path) else capture(n))) as cap:
            out.extend(bytes(f.data) for f in cap)
    return out


_RUNNING: list[subprocess.Popen] = []


@pytest.fixture(autouse=True)
def _no_capture_outlives_its_test():
    yield
    while _RUNNING:
        p = _RUNNING.pop()
        if p.poll() is None:
            p.kill()
            p.wait()


class Capturer:
    """``rdmaspy capture`` running in the receiving namespace."""

    def __init__(self, net: Net, tmp: Path, *args: str, iface: str | None = None) -> None:
        self.err = tmp / "capture.err"
        self.out = tmp / "capture.out"
        with open(self.err, "w") as e, open(self.out, "w") as o:
            self.proc = subprocess.Popen(
                ["ip", "netns", "exec", net.ns_b, sys.executable, "-m", "rdmaspy", "capture",
                 "-i", iface or net.dev_b, *args], stdout=o, stderr=e, cwd=str(ROOT))
        _RUNNING.append(self.proc)
        end = time.monotonic() + 20
        while "listening on" not in self.err.read_text():
            if self.proc.poll() is not None or time.monotonic() > end:
                self.proc.kill()
                raise AssertionError(f"capture did not start: {self.err.read_text()}")
            time.sleep(0.05)

    def wait(self, timeout: float = 30) -> int:
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            raise AssertionError(f"capture did not stop: {self.err.read_text()}") from None

    def summary(self) -> dict[str, int]:
        text = self.err.read_text()
        return {k: int(v) for v, k in re.findall(
            r"^(\d+) packets (captured|received by filter|dropped by kernel|dropped by rdmaspy|written)", text, re.M)}


def replay(net: Net, files: list[str | Path], rate: int = 20000, loops: int = 1,
           background: bool = False) -> subprocess.Popen | int:
    cmd = ["ip", "netns", "exec", net.ns_a, sys.executable, str(NETNS / "replay.py"), "-i", net.dev_a,
           "-r", str(rate), "-l", str(loops), *[str(f if isinstance(f, Path) else capture(f)) for f in files]]
    if background:
        return subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
    return int(subprocess.run(cmd, capture_output=True, text=True, check=True).stdout)


def noise_pcap(tmp: Path) -> Path:
    """Frames the default filter must leave in the kernel: ARP, DNS over UDP, TCP to port 4791, IPv6."""
    p = tmp / "noise.pcap"
    eth = bytes.fromhex("020000000002020000000001")
    arp = eth + bytes.fromhex("0806 0001 0800 0604 0001 020000000001 c0000201 000000000000 c0000202") + bytes(18)
    udp53 = eth + bytes.fromhex("08004500001c000040004011b7cdc0000201c0000202d431003500080000") + bytes(18)
    tcp = eth + bytes.fromhex("0800450000280000400040060000c0000201c0000202"
                              "12b712b7000000000000000050020000 00000000") + bytes(6)   # TCP port 4791
    v6 = eth + bytes.fromhex("86dd6000000000083a40") + bytes(32) + bytes.fromhex("8000000000000000")
    with PcapWriter(p, 1) as w:
        for fr in (arp, udp53, tcp, v6, arp):
            w.write_packet(0, fr)
    return p


def test_file_equals_sent_frames_and_the_kernel_drops_the_rest(net, tmp_path):
    noise = noise_pcap(tmp_path)
    sent = frames_of(*ROCE)
    out = tmp_path / "roce.pcapng"
    cap = Capturer(net, tmp_path, "-w", str(out), "-c", str(len(sent)))
    n = replay(net, [noise] + ROCE[:3] + [noise] + ROCE[3:] + [noise], rate=25000)
    assert n == len(sent) + 15
    assert cap.wait() == 0, cap.err.read_text()
    got = frames_of(out)
    assert len(got) == len(sent) == 3264
    assert got == sent                     # byte for byte, in order
    s = cap.summary()
    # the noise never reached the ring: the kernel filter counted only the RDMA frames
    assert s == {"captured": len(sent), "received by filter": len(sent), "dropped by kernel": 0,
                 "dropped by rdmaspy": 0, "written": len(sent)}
    assert len(tshark_fields(out, ["frame.number"])) == len(sent)
    info = subprocess.run(["capinfos", str(out)], capture_output=True, text=True, check=True).stdout
    assert f"Name = {net.dev_b}" in info
    assert "Filter string = udp port 4791 or ether proto 0x8915" in info
    assert "Number of stat entries = 1" in info
    assert "Encapsulation = Ethernet (1 - ether)" in info


def test_iwarp_ports_join_the_default_filter_and_f_overrides_it(net, tmp_path):
    noise = noise_pcap(tmp_path)
    rping, roce = frames_of("siw-rping.pcap"), frames_of("rxe-ucmatose.pcap")
    out = tmp_path / "a.pcapng"
    cap = Capturer(net, tmp_path, "-w", str(out), "-c", str(len(roce)), "-q")
    replay(net, ["siw-rping.pcap", "rxe-ucmatose.pcap"])
    assert cap.wait() == 0
    assert frames_of(out) == roce

    out = tmp_path / "b.pcapng"
    cap = Capturer(net, tmp_path, "-w", str(out), "-c", str(len(rping) + len(roce)), "--iwarp", "7174")
    replay(net, ["siw-rping.pcap", noise, "rxe-ucmatose.pcap"])
    assert cap.wait() == 0
    assert frames_of(out) == rping + roce

    out = tmp_path / "c.pcapng"
    cap = Capturer(net, tmp_path, "-w", str(out), "-c", "2", "-f", "arp")
    replay(net, ["rxe-ucmatose.pcap", noise])
    assert cap.wait() == 0
    assert [fr[12:14] for fr in frames_of(out)] == [b"\x08\x06"] * 2


def _columns(lines: list[str]) -> list[list[str]]:
    """Summary lines without the time column (live times are the replay's, not the file's)."""
    return [ln.split(None, 2)[:1] + ln.split(None, 2)[2:] for ln in lines]


def test_live_decode_prints_what_decode_prints(net, tmp_path):
    sent = frames_of("rxe-rc-pingpong.pcap", "rxe-ucmatose.pcap")
    cap = Capturer(net, tmp_path, "-c", str(len(sent)))
    replay(net, ["rxe-rc-pingpong.pcap", "rxe-ucmatose.pcap"], rate=3000)
    assert cap.wait() == 0
    live = cap.out.read_text().splitlines()
    joined = tmp_path / "joined.pcap"
    with PcapWriter(joined, 1) as w:
        for i, fr in enumerate(sent):
            w.write_packet(i * 1000, fr)
    ref = subprocess.run([sys.executable, "-m", "rdmaspy", "decode", str(joined)], capture_output=True, text=True,
                         check=True).stdout.splitlines()
    assert len(live) == len(sent) == 63
    assert _columns(live) == _columns(ref)
    assert "0 packets dropped by rdmaspy" in cap.err.read_text()


def test_display_filter_selects_printed_lines(net, tmp_path):
    cap = Capturer(net, tmp_path, "-c", "50", "-Y", "bth.opcode == 0x11")
    replay(net, ["rxe-rc-pingpong.pcap"], rate=3000)
    assert cap.wait() == 0
    lines = cap.out.read_text().splitlines()
    assert len(lines) == 10 and all("RC Acknowledge" in ln for ln in lines)


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_stop_by_signal_mid_stream_keeps_every_received_packet(net, tmp_path, sig):
    require_tshark()
    sent = frames_of("rxe-nfsv3-concurrent.pcap")
    out = tmp_path / "sig.pcapng"
    cap = Capturer(net, tmp_path, "-w", str(out))
    sender = replay(net, ["rxe-nfsv3-concurrent.pcap"], rate=4000, loops=2, background=True)
    time.sleep(1.0)
    cap.proc.send_signal(sig)
    assert cap.wait() == 0, cap.err.read_text()
    sender.wait(60)
    s = cap.summary()
    assert 0 < s["captured"] < 2 * len(sent), s        # stopped mid-stream
    assert s["captured"] == s["written"] == s["received by filter"], s
    assert s["dropped by kernel"] == 0 and s["dropped by rdmaspy"] == 0
    rows = tshark_fields(out, ["frame.number"])        # tshark opens it: the file is complete
    assert len(rows) == s["captured"]
    assert frames_of(out) == (sent * 2)[:s["captured"]]
    assert "Number of stat entries = 1" in subprocess.run(["capinfos", str(out)], capture_output=True, text=True,
                                                          check=True).stdout


def test_ring_buffer_keeps_the_last_files_each_valid(net, tmp_path):
    sent = frames_of("rxe-nfsv3-rdma.pcap")
    d = tmp_path / "ring"
    d.mkdir()
    cap = Capturer(net, tmp_path, "-w", str(d / "rb.pcapng"), "-b", "filesize:100", "-b", "files:3",
                   "-c", str(len(sent)))
    replay(net, ["rxe-nfsv3-rdma.pcap"])
    assert cap.wait() == 0, cap.err.read_text()
    files = sorted(d.iterdir())
    assert len(files) == 3
    seqs = [int(re.fullmatch(r"rb_(\d{5})_\d{14}\.pcapng", f.name).group(1)) for f in files]
    total_files = seqs[-1]
    assert seqs == [total_files - 2, total_files - 1, total_files]
    # the files together held every packet: one file per 100 kB of Enhanced Packet Blocks
    epb = sum(32 + len(fr) + (-len(fr) & 3) for fr in sent)
    assert abs(total_files - epb / 100_000) < 1.5 and total_files >= 6
    kept: list[bytes] = []
    for f in files:
        assert len(tshark_fields(f, ["frame.number"])) == len(frames_of(f))
        kept.extend(frames_of(f))
    for f in files[:-1]:
        size = f.stat().st_size
        assert 100_000 <= size < 100_000 + 1200, size  # switched right after the packet that crossed the size
    assert kept == sent[-len(kept):]


def test_autostop_after_n_files(net, tmp_path):
    d = tmp_path / "files"
    d.mkdir()
    cap = Capturer(net, tmp_path, "-w", str(d / "a.pcapng"), "-b", "filesize:50", "-a", "files:4")
    replay(net, ["rxe-nfsv3-rdma.pcap"], rate=25000)
    assert cap.wait() == 0
    files = sorted(d.iterdir())
    assert len(files) == 4
    got = [fr for f in files for fr in frames_of(f)]
    assert got == frames_of("rxe-nfsv3-rdma.pcap")[:len(got)]
    assert all(f.stat().st_size >= 50_000 for f in files)


def test_autostop_duration_with_no_traffic_leaves_a_valid_empty_file(net, tmp_path):
    out = tmp_path / "empty.pcapng"
    t0 = time.monotonic()
    cap = Capturer(net, tmp_path, "-w", str(out), "-a", "duration:1")
    assert cap.wait() == 0
    assert time.monotonic() - t0 < 15
    assert tshark_fields(out, ["frame.number"]) == []
    assert cap.summary()["captured"] == 0


def test_vlan_tag_moved_to_metadata_is_put_back(net, tmp_path):
    plain = frames_of("rxe-ucmatose.pcap")
    tagged = [fr[:12] + bytes.fromhex("81002064") + fr[12:] for fr in plain]   # PCP 1, VID 100
    src = tmp_path / "vlan.pcap"
    with PcapWriter(src, 1) as w:
        for fr in tagged:
            w.write_packet(0, fr)
    out = tmp_path / "vlan.pcapng"
    cap = Capturer(net, tmp_path, "-w", str(out), "-c", str(len(tagged)))
    replay(net, [src])
    assert cap.wait() == 0
    assert frames_of(out) == tagged
    assert tshark_fields(out, ["vlan.id"])[0]["vlan.id"] == ["100"]


def test_any_captures_cooked_frames_with_the_kernel_filter(net, tmp_path):
    noise = noise_pcap(tmp_path)
    sent = frames_of("rxe-ib_write_bw.pcap")
    out = tmp_path / "any.pcapng"
    cap = Capturer(net, tmp_path, "-w", str(out), "-c", str(len(sent)), iface="any")
    replay(net, [noise, "rxe-ib_write_bw.pcap"])
    assert cap.wait() == 0, cap.err.read_text()
    got = frames_of(out)
    assert [g[16:] for g in got] == [s[14:] for s in sent]
    assert {g[14:16] for g in got} == {b"\x08\x00"}               # protocol: IPv4
    assert {g[0:2] for g in got} == {b"\x00\x03"}                 # packet type: to another host
    assert [g[6:12] for g in got] == [s[6:12] for s in sent]      # link-layer source address
    rows = tshark_fields(out, ["sll.pkttype", "infiniband.bth.opcode"])
    assert len(rows) == len(sent) and all(r["infiniband.bth.opcode"] for r in rows)


def test_rdmaspy_dropped_nothing_under_a_fast_burst(net, tmp_path):
    """Thousands of frames as fast as Python sends them: whatever the kernel queued is in the file."""
    sent = frames_of("rxe-nfsv3-concurrent.pcap")
    out = tmp_path / "burst.pcapng"
    cap = Capturer(net, tmp_path, "-w", str(out), "-c", str(len(sent)))
    replay(net, ["rxe-nfsv3-concurrent.pcap"], rate=0)
    assert cap.wait() == 0
    assert frames_of(out) == sent


def test_a_slow_display_skips_lines_but_the_file_loses_nothing(net, tmp_path):
    sent = frames_of("rxe-nfsv3-concurrent.pcap")
    out = tmp_path / "slow.pcapng"
    cap = Capturer(net, tmp_path, "-w", str(out), "-P", "--display-queue", "16", "-c", str(len(sent)))
    replay(net, ["rxe-nfsv3-concurrent.pcap"], rate=0)
    assert cap.wait() == 0
    assert frames_of(out) == sent
    err = cap.err.read_text()
    skipped = int(re.search(r"^(\d+) packets not displayed", err, re.M).group(1))
    lines = cap.out.read_text().splitlines()
    assert skipped > 0 and len(lines) + skipped == len(sent)
    nums = [int(ln.split()[0]) for ln in lines]
    assert nums == sorted(nums) and nums[-1] <= len(sent)     # lines keep the file's frame numbers
    assert cap.summary()["dropped by rdmaspy"] == 0


def test_benchmark_workload_at_full_python_speed_arrives_whole(net, tmp_path):
    """20,000 frames of the benchmark's NFS-over-RDMA workload (benchmarks/traffic.py), sent flat out."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        import traffic
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    src = tmp_path / "bench.pcap"
    traffic.build(str(src), 20000)
    sent = frames_of(src)
    out = tmp_path / "bench.pcapng"
    cap = Capturer(net, tmp_path, "-w", str(out), "-c", str(len(sent)))
    replay(net, [src], rate=0)
    assert cap.wait() == 0, cap.err.read_text()
    s = cap.summary()
    assert s["dropped by kernel"] == 0 and s["written"] == len(sent) == 20000
    assert frames_of(out) == sent


def test_rdma_device_name_opens_its_netdev(net, tmp_path):
    sysfs = tmp_path / "sys"
    ndevs = sysfs / "class/infiniband/rxe0/ports/1/gid_attrs/ndevs"
    ndevs.mkdir(parents=True)
    for i in (0, 1):
        (ndevs / str(i)).write_text(net.dev_b + "\n")
    (sysfs / "class/infiniband/rxe0/ports/1/link_layer").write_text("Ethernet\n")
    sent = frames_of("rxe-ib_read_bw.pcap")
    out = tmp_path / "rxe0.pcapng"
    cap = Capturer(net, tmp_path, "-w", str(out), "-c", str(len(sent)), "--sysfs", str(sysfs), iface="rxe0")
    replay(net, ["rxe-ib_read_bw.pcap"])
    assert cap.wait() == 0
    assert f"RDMA device rxe0 port 1 runs on netdev {net.dev_b}: capturing on {net.dev_b}" in cap.err.read_text()
    assert frames_of(out) == sent
    info = subprocess.run(["capinfos", str(out)], capture_output=True, text=True, check=True).stdout
    assert "Description = RDMA device rxe0" in info and f"Name = {net.dev_b}" in info


def test_snaplen_cuts_packets_and_keeps_their_length(net, tmp_path):
    sent = frames_of("rxe-ib_write_bw.pcap")
    out = tmp_path / "snap.pcapng"
    cap = Capturer(net, tmp_path, "-w", str(out), "-s", "96", "-c", str(len(sent)))
    replay(net, ["rxe-ib_write_bw.pcap"])
    assert cap.wait() == 0
    with open_capture(str(out)) as c:
        got = [(bytes(f.data), f.wirelen) for f in c]
    assert got == [(fr[:96], len(fr)) for fr in sent]
    assert "Capture length = 96" in subprocess.run(["capinfos", str(out)], capture_output=True, text=True,
                                                   check=True).stdout


def test_autostop_filesize_and_standard_output(net, tmp_path):
    out = tmp_path / "fs.pcapng"
    cap = Capturer(net, tmp_path, "-w", str(out), "-a", "filesize:20")
    replay(net, ["rxe-nfsv3-rdma.pcap"], rate=25000)
    assert cap.wait() == 0
    size = out.stat().st_size
    assert 20_000 <= size < 20_000 + 1300
    got = frames_of(out)
    assert got == frames_of("rxe-nfsv3-rdma.pcap")[:len(got)]

    cap = Capturer(net, tmp_path, "-w", "-", "-c", "13")
    replay(net, ["rxe-ucmatose.pcap"])
    assert cap.wait() == 0
    assert frames_of(cap.out) == frames_of("rxe-ucmatose.pcap")


def test_full_disk_is_a_clear_error(net, tmp_path):
    mnt = tmp_path / "small"
    mnt.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(mnt)], check=True)
    try:
        cap = Capturer(net, tmp_path, "-w", str(mnt / "x.pcapng"), "-c", "2238")
        replay(net, ["rxe-nfsv3-rdma.pcap"], rate=25000)
        assert cap.wait() == 1
        err = cap.err.read_text()
        assert "Traceback" not in err
        assert err.strip().splitlines()[-1] == f"rdmaspy: error: {mnt / 'x.pcapng'}: write failed: " \
                                               f"No space left on device"
        s = cap.summary()
        on_disk = len(frames_of(mnt / "x.pcapng"))
        assert 0 < on_disk < 200
        assert s["written"] == on_disk                       # the summary says what the file holds
        assert s["dropped by rdmaspy"] == s["captured"] - on_disk > 0
        # the file ends on a whole block: every packet in it is the packet sent, and nothing is cut short
        assert block_types(mnt / "x.pcapng")[-1] == 6
        assert frames_of(mnt / "x.pcapng") == frames_of("rxe-nfsv3-rdma.pcap")[:on_disk]
        info = subprocess.run(["capinfos", str(mnt / "x.pcapng")], capture_output=True, text=True)
        assert info.returncode == 0 and "cut short" not in info.stderr + info.stdout, info.stderr
    finally:
        subprocess.run(["umount", str(mnt)])


def block_types(path: Path) -> list[int]:
    """The pcapng file's block types, asserting that its blocks fill it exactly (none cut short)."""
    data = path.read_bytes()
    types, pos = [], 0
    while pos < len(data):
        btype, total = struct.unpack_from("=II", data, pos)
        assert total >= 12 and pos + total <= len(data), f"block at {pos} is cut short"
        types.append(btype)
        pos += total
    return types


def test_sigkill_after_traffic_loses_nothing_older_than_100_ms(net, tmp_path):
    """Blocks reach the disk at least every 50 ms and the kernel hands a block over within 50 ms: a capture
    killed hard 200 ms after the last packet has written every packet, and its file ends on a whole block."""
    sent = frames_of("rxe-nfsv3-rdma.pcap")
    out = tmp_path / "killed.pcapng"
    cap = Capturer(net, tmp_path, "-w", str(out), "-q")
    assert replay(net, ["rxe-nfsv3-rdma.pcap"], rate=20000) == len(sent)
    time.sleep(0.2)
    cap.proc.send_signal(signal.SIGKILL)
    cap.wait()
    types = block_types(out)
    assert types[:2] == [0x0A0D0D0A, 1] and set(types[2:]) == {6}    # no statistics: it was killed
    assert frames_of(out) == sent


def _loopback_sender(net: Net, count: int, dport: int = 4791) -> None:
    """``count`` UDP datagrams to 127.0.0.1 sent from the capturing namespace."""
    code = ("import socket, time\n"
            "s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n"
            f"for i in range({count}):\n"
            f"    s.sendto(i.to_bytes(4, 'big') * 8, ('127.0.0.1', {dport}))\n"
            "    time.sleep(0.001)\n")
    subprocess.run(["ip", "netns", "exec", net.ns_b, sys.executable, "-c", code], check=True)


@pytest.mark.parametrize("iface", ["lo", "any"])
def test_loopback_packets_are_captured_once(net, tmp_path, iface):
    """The kernel shows a loopback packet leaving and arriving; like dumpcap, capture keeps it once."""
    out = tmp_path / "lo.pcapng"
    cap = Capturer(net, tmp_path, "-w", str(out), "-q", "-f", "udp port 4791", iface=iface)
    _loopback_sender(net, 50)
    time.sleep(0.3)
    cap.proc.send_signal(signal.SIGINT)
    assert cap.wait() == 0, cap.err.read_text()
    got = frames_of(out)
    payloads = [g[-32:] for g in got]
    assert payloads == [i.to_bytes(4, "big") * 8 for i in range(50)]
    s = cap.summary()
    assert s["captured"] == s["received by filter"] == s["written"] == 50


def test_z_drops_root_after_opening_the_socket(net, tmp_path):
    """-Z USER: the capture runs as USER once its socket is open, and its file belongs to USER."""
    user = pwd.getpwnam("nobody")
    d = Path(tempfile.mkdtemp(prefix="rdmaspy-z-"))       # a directory the user can reach and write
    try:
        d.chmod(0o777)
        out = d / "z.pcapng"
        sent = frames_of("rxe-ucmatose.pcap")
        cap = Capturer(net, tmp_path, "-w", str(out), "-q", "-Z", "nobody")
        status = Path(f"/proc/{cap.proc.pid}/status").read_text()
        uids = re.search(r"^Uid:\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)", status, re.M).groups()
        gids = re.search(r"^Gid:\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)", status, re.M).groups()
        assert set(map(int, uids)) == {user.pw_uid} and set(map(int, gids)) == {user.pw_gid}
        replay(net, ["rxe-ucmatose.pcap"])
        time.sleep(0.3)
        cap.proc.send_signal(signal.SIGINT)
        assert cap.wait() == 0, cap.err.read_text()
        assert (out.stat().st_uid, out.stat().st_gid) == (user.pw_uid, user.pw_gid)
        assert frames_of(out) == sent
    finally:
        shutil.rmtree(d)


def test_z_with_an_unknown_user_is_a_clear_error(net):
    r = subprocess.run(["ip", "netns", "exec", net.ns_b, sys.executable, "-m", "rdmaspy", "capture", "-i", net.dev_b,
                        "-Z", "no-such-user-here", "-c", "1"], capture_output=True, text=True, cwd=str(ROOT),
                       timeout=60)
    assert r.returncode == 1
    assert r.stderr.strip().splitlines()[-1] == "rdmaspy: error: -Z no-such-user-here: no such user"


def test_ring_buffer_by_duration_switches_under_steady_traffic(net, tmp_path):
    d = tmp_path / "dur"
    d.mkdir()
    cap = Capturer(net, tmp_path, "-w", str(d / "t.pcapng"), "-b", "duration:1", "-a", "files:3")
    sender = replay(net, ["rxe-nfsv3-concurrent.pcap"], rate=2000, loops=3, background=True)
    assert cap.wait() == 0, cap.err.read_text()
    sender.kill()
    sender.wait()
    files = sorted(d.iterdir())
    assert len(files) == 3
    counts = [len(tshark_fields(f, ["frame.number"])) for f in files]
    assert all(1000 <= c <= 3000 for c in counts), counts      # about a second of 2,000 frames/s each
    got = [fr for f in files for fr in frames_of(f)]
    assert got == (frames_of("rxe-nfsv3-concurrent.pcap") * 3)[:len(got)]


def test_interface_deleted_mid_capture_ends_it_with_a_valid_file(net, tmp_path):
    extra = f"x{net.tag}"[:15]
    subprocess.run(["ip", "-n", net.ns_b, "link", "add", extra, "type", "veth", "peer", "name", extra[:-1] + "y"],
                   check=True)
    subprocess.run(["ip", "-n", net.ns_b, "link", "set", extra, "up"], check=True)
    out = tmp_path / "gone.pcapng"
    cap = Capturer(net, tmp_path, "-w", str(out), iface=extra)
    subprocess.run(["ip", "-n", net.ns_b, "link", "del", extra], check=True)
    assert cap.wait(timeout=15) == 1
    err = cap.err.read_text().strip().splitlines()
    assert err[-1] == f"rdmaspy: error: capture on {extra} ended: it went down"
    assert "0 packets captured" in err
    assert tshark_fields(out, ["frame.number"]) == []
