"""The shipped NVMe/RDMA lab captures decoded against what the scenario did (its ``.ops`` log beside each):
the I/O commands and bytes of the dd steps, the admin and Fabrics commands it ran, the refused ones by
their status, the data structures the host read, in-capsule writes over SEND First..Last (rxe) and
several FPDUs (siw), Send with Invalidate of each command's key, and under loss every capsule the
transport sent again known as a copy (no CID taken for reused, no completion left unmatched)."""
from __future__ import annotations

import functools
import re
from collections import Counter
from pathlib import Path

import pytest

from conftest import capture
from rdmaspy.dissectors.nvme import NVME_COMMANDS, NVME_COMPLETIONS, NvmeCommand, NvmeCompletion
from rdmaspy.dissectors.nvme_rdma import NVME_RDMA_CM
from rdmaspy.engine import Engine
from rdmaspy.fieldview import packet_fields
from rdmaspy.readers import open_capture

CAPTURES = ["rxe-nvme-rdma.pcap.gz", "siw-nvme-rdma.pcap.gz", "rxe-nvme-rdma-loss-after.pcap.gz"]
NQN = "nqn.2026-11.io.rdmaspy:lab"
HOSTNQN = "nqn.2014-08.org.nvmexpress:uuid:2f0e6b1c-7d3a-4c59-9a51-6c2d3b4e5f60"
BLOCK = 4096          # the namespace's LBA size (a file on ext4)


def ops(name: str) -> list[dict[str, str]]:
    path = Path(capture(name)).with_suffix("").with_suffix(".ops")
    return [dict(re.findall(r'(\w+)=("[^"]*"|\S+)', line)) for line in path.read_text().splitlines()]


@functools.cache
def decoded(name: str) -> tuple[list[NvmeCommand], list[NvmeCompletion], list, list[dict]]:
    """The commands, completions, CM private data facts and the fields of every NVMe data layer."""
    cmds: list[NvmeCommand] = []
    cqes: list[NvmeCompletion] = []
    cm: list = []
    data: list[dict] = []
    eng = Engine(strict=True)
    with open_capture(str(capture(name))) as cap:
        for f in cap:
            pkt = eng.dissect(f)
            cmds += pkt.noted(NVME_COMMANDS) or []
            cqes += pkt.noted(NVME_COMPLETIONS) or []
            if pkt.noted(NVME_RDMA_CM) is not None:
                cm.append(pkt.noted(NVME_RDMA_CM))
            if any(lay.proto == "nvme.data" for lay in pkt.layers):
                data.append({n: v for n, (_f, v) in packet_fields(pkt, 0).items()})
            assert pkt.malformed is None, (f.num, pkt.malformed)
    return cmds, cqes, cm, data


@pytest.mark.parametrize("name", CAPTURES)
def test_the_io_commands_move_what_the_dd_steps_moved(name):
    cmds, _cqes, _cm, _data = decoded(name)
    firsts = [c for c in cmds if c.retransmission_of is None]
    steps = [s for s in ops(name) if "dir" in s]
    writes = [c for c in firsts if c.name == "Write"]
    reads = [c for c in firsts if c.name == "Read"]
    # every byte written came from a dd step (the kernel writes nothing else to the namespace)
    assert sum(c.blocks * BLOCK for c in writes) == sum(int(s["bytes"]) for s in steps if s["dir"] == "write")
    # the dd reads, and the kernel's partition scan at connect time
    assert sum(c.blocks * BLOCK for c in reads) >= sum(int(s["bytes"]) for s in steps if s["dir"] == "read")
    for s in steps:      # each step's bytes are covered by commands of its direction (a large one may be split)
        kind = writes if s["dir"] == "write" else reads
        start, end = int(s["offset"]), int(s["offset"]) + int(s["bytes"])
        covered = sorted((c.slba * BLOCK, (c.slba + c.blocks) * BLOCK) for c in kind)
        reach = start
        for lo, hi in covered:
            if lo <= reach < hi:
                reach = hi
        assert reach >= end, s
    # the SGL says as much: a keyed SGL for the target's RDMA, or the data in the capsule
    for c in writes + reads:
        length = c.sgls[0].length if c.sgls[0].keyed else c.icd
        assert length == c.blocks * BLOCK, c
    small = [c for c in writes if c.blocks * BLOCK == 4096]
    assert small and all(c.sgls[0].in_capsule and c.icd == 4096 for c in small)
    if name.startswith("rxe"):        # 4 KiB + 64 over a 1024-byte path MTU: SEND First, Middle..., Last
        assert all(len(c.frames) == 5 for c in small)
    assert 131072 in {c.sgls[0].length for c in writes + reads if c.sgls[0].keyed}
    assert max(c.sgls[0].length for c in writes + reads) > 512 << 10      # the 1 MiB steps (siw: in two)


@pytest.mark.parametrize("name", CAPTURES)
def test_admin_and_fabrics_commands_and_refusals_are_named(name):
    cmds, cqes, cm, _data = decoded(name)
    names = Counter(c.name for c in cmds if c.retransmission_of is None)
    assert names["Connect"] == 3 and names["Flush"] == names["Write Zeroes"] == names["Dataset Management"] == 1
    assert names["Identify"] >= 10 and names["Get Log Page"] >= 6 and names["Keep Alive"] >= 1
    assert names["Property Get"] >= 5 and names["Property Set"] >= 3 and names["Asynchronous Event Request"] == 2
    connects = [c.connect for c in cmds if c.connect is not None and c.retransmission_of is None]
    assert sorted(c.qid for c in connects) == [0, 0, 1] and all(c.hostnqn == HOSTNQN for c in connects)
    assert {c.subnqn for c in connects} == {"nqn.2014-08.org.nvmexpress.discovery", NQN}
    zeroes = next(c for c in cmds if c.name == "Write Zeroes")
    assert (zeroes.slba, zeroes.blocks) == (64, 8)          # --start-block=64 --block-count=7 (0's based)
    refused = {(c.command.name, c.sct, c.sc, c.dnr) for c in cqes if not c.ok and c.retransmission_of is None}
    # the Compare the file back end does not do, Software Progress Marker, an I/O command set CNS
    assert refused == {("Compare", 0, 0x01, True), ("Get Features", 0, 0x02, True), ("Identify", 0, 0x02, True)}
    # the CM private data of each of the three queues (REQ and REP); the connect's QID matches
    reqs = [f for f in cm if f.kind == "req"]
    assert sorted(f.qid for f in reqs) == [0, 0, 1] and all(f.kind in ("req", "rep") for f in cm)
    assert {f.crqsize for f in cm if f.kind == "rep"} == {32, 128}


@pytest.mark.parametrize("name", CAPTURES)
def test_completions_match_commands_and_send_with_invalidate_names_their_key(name):
    cmds, cqes, _cm, _data = decoded(name)
    firsts = [c for c in cqes if c.retransmission_of is None]
    assert all(c.command is not None for c in cqes)
    # every command answered but the two Asynchronous Event Requests, outstanding by design
    open_ = [c for c in cmds if c.retransmission_of is None and c.completion is None]
    assert sorted(c.name for c in open_) == ["Asynchronous Event Request"] * 2
    inv = [c for c in firsts if c.invalidated is not None]
    assert len(inv) > 40 and all(c.command.sgls[0].invalidate and c.invalidated == c.command.sgls[0].key
                                 for c in inv)
    assert all(c.sqid == c.command.qid for c in firsts)


@pytest.mark.parametrize("name", CAPTURES)
def test_the_data_the_host_read_is_decoded(name):
    _cmds, _cqes, _cm, data = decoded(name)
    kinds = Counter(d["nvme.data.cmd"][0] for d in data)
    assert kinds["Identify Controller"] >= 4 and kinds["Identify Namespace"] >= 4 and kinds["Connect data"] == 3
    assert kinds["Discovery log page"] == 2 and kinds["SMART / Health Information log page"] >= 2
    ctrl = next(d for d in data if d["nvme.data.cmd"][0] == "Identify Controller"
                and d.get("nvme.cmd.identify.ctrl.subnqn", [b""])[0].rstrip(b"\0") == NQN.encode())
    assert ctrl["nvme.cmd.identify.ctrl.nvmeof.ioccsz"] == [(64 + 4096) // 16]     # in-capsule data 4 KiB
    ns = next(d for d in data if d["nvme.data.cmd"][0] == "Identify Namespace")
    assert ns["nvme.cmd.identify.ns.nsze"] == [32 << 20 >> 12] and ns["nvme.cmd.identify.ns.lba_size"] == [BLOCK]
    disc = [d for d in data if d["nvme.data.cmd"][0] == "Discovery log page"][-1]
    subs = [s.rstrip(b"\0") for s in disc["nvme.cmd.get_logpage.identify.rcrd.subnqn"]]
    assert subs == [b"nqn.2014-08.org.nvmexpress.discovery", NQN.encode()]
    assert disc["nvme.cmd.get_logpage.identify.rcrd.tsas.rdma_cms"] == [1, 1]


def test_capsules_the_transport_sent_again_are_copies_not_new_commands():
    cmds, cqes, _cm, _data = decoded("rxe-nvme-rdma-loss-after.pcap.gz")
    copies = [c for c in cmds + cqes if c.retransmission_of is not None]
    assert copies
    for c in copies:
        assert isinstance(c, (NvmeCommand, NvmeCompletion)) and c.retransmission_of < c.frame
    eng = Engine()
    with open_capture(str(capture("rxe-nvme-rdma-loss-after.pcap.gz"))) as cap:
        rules = Counter(x.rule for f in cap for x in eng.dissect(f).expert or [] if x.rule.startswith("nvme"))
    assert rules["nvme.cid_reused"] == 0


@pytest.mark.parametrize("name", ["rxe-nvme-rdma.pcap.gz", "siw-nvme-rdma.pcap.gz"])
def test_the_connection_table_shows_the_nvme_queues_and_no_inline_thresholds(name, capsys):
    from rdmaspy.cli import main
    assert main(["conversations", str(capture(name))]) == 0
    rows = capsys.readouterr().out.splitlines()[1:]
    assert [r.split()[5:8] if name.startswith("rxe") else r.split()[5:10] for r in rows] == (
        [["NVMe/RDMA(4420)", "QID", "0"], ["NVMe/RDMA(4420)", "QID", "0"], ["NVMe/RDMA(4420)", "QID", "1"]]
        if name.startswith("rxe") else
        [["iWARP", "TCP(4420)", "NVMe/RDMA", "QID", "0"]] * 2 + [["iWARP", "TCP(4420)", "NVMe/RDMA", "QID", "1"]])
    assert all(r.split()[-3:] == ["-", "-", "-"] for r in rows)       # RPC-over-RDMA's thresholds: not theirs
    assert main(["conversations", "-T", "json", str(capture(name))]) == 0
    import json
    conns = json.loads(capsys.readouterr().out)["connections"]
    assert [c["ulp"]["qid"] for c in conns] == [0, 0, 1] and {c["ulp"]["crqsize"] for c in conns} == {32, 128}
    assert all(c["inline_c2s"] is None and c["ulp"]["protocol"] == "nvme-rdma" for c in conns)
