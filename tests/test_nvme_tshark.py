"""Differential test: every NVMe field tshark decodes on the shipped NVMe/RDMA capture, against rdmaspy.

tshark 4.0 decodes NVMe/RDMA only on InfiniBand/RoCE and only where the CM exchange is in the capture
(``packet-nvme-rdma.c`` binds by the CM's service ID): the soft-iWARP capture gets no NVMe from it at all,
so only ``rxe-nvme-rdma.pcap.gz`` is compared.  Capsules are compared frame by frame, value by value.
tshark decodes a command's data (Identify, log pages, Connect data) in each RDMA WRITE or READ response
packet matched to the command, from that packet's bytes alone (the fields a packet holds whole, or the part
of a byte string it holds); rdmaspy decodes it once, in the packet that completes it (``nvme.data_req``
names the command): each of tshark's values for the command must be among rdmaspy's for the same field
(a byte string: within one of them).  Every ``nvme.*``/``nvme-rdma.*`` field tshark prints is compared, or
listed below with the reason it is not.
"""
from __future__ import annotations

import functools
import subprocess
import xml.etree.ElementTree as ET
from collections import defaultdict

from conftest import capture, require_tshark
from rdmaspy.dissectors.nvme import NVME_COMMANDS
from rdmaspy.engine import Engine
from rdmaspy.fieldview import packet_fields
from rdmaspy.readers import open_capture

CAPTURE = capture("rxe-nvme-rdma.pcap.gz")
# tshark's name -> rdmaspy's, where the value is the same under another name
RENAMED = {
    "nvme.cmd.nlb": "nvme.cmd.nlb_count",        # tshark shows NLB + 1 ("Absolute Number"); rdmaspy both
}
# tshark's, never compared, and why
THEIRS_ONLY = {
    # transfer links: tshark ties each RDMA READ/WRITE packet to a command by an exact (address, key,
    # length) match; rdmaspy's transaction model accounts the data by address range (the analysis)
    "nvme-rdma.read_to_host_req", "nvme-rdma.read_from_host_resp", "nvme-rdma.read_from_host_prev",
    "nvme-rdma.write_to_host_req", "nvme-rdma.write_to_host_prev", "nvme.fabrics.data_req",
    # "Dissection unsupported": the SEND First/Middle/Last capsules tshark does not reassemble (rdmaspy does)
    "nvme-rdma.unknown_data",
    # a transfer packet's raw payload (rdmaspy shows the data structure, and the bytes as data)
    "nvme.data",
    # a whole byte string whose fields rdmaspy gives (and compares) one by one
    "nvme.cmd.identify.ctrl.mi", "nvme.cmd.identify.ctrl.nvmeof", "nvme.cmd.identify.ctrl.fguid",
    "nvme.cmd.identify.ctrl.psds",
    "nvme.cmd.identify.ctrl.psds.psd", "nvme.cmd.get_logpage.identify.rcrd", "nvme.cmd.get_logpage.identify.rcrd.tsas",
    "nvme.cmd.get_logpage.ana.grp", "nvme.cmd.get_logpage.fw_slot.frs", "nvme.cmd.get_logpage.smart.ts",
    "nvme.cmd.get_logpage.cmd_and_eff.cs",
    # tshark 4.0's masks that read other bits than NVMe's: PRINFO is the 4 bits 26-29 of CDW12 (tshark
    # masks only bit 26); LPA is a flag byte (tshark shows it as one boolean); TREQ's secure channel is
    # bits 1:0 and SQ flow control disable bit 2 (tshark: bit 0 and bit 1, NVMe-oF 1.1 Figure 38)
    "nvme.cmd.prinfo", "nvme.cmd.identify.ctrl.lpa", "nvme.cmd.get_logpage.identify.rcrd.treq.secch",
    "nvme.cmd.get_logpage.identify.rcrd.treq.sqfc",
    # the Error Information entry's last reserved bytes: NVMe 2.0 Figure 206 has 22 (42-63), tshark 24
    "nvme.cmd.get_logpage.errinf.rsvd1",
    # tshark shows DWORD13 again after the Log Page Offset, which covers dwords 12 and 13
    "nvme.cmd.dword13",
    # tshark shows each later packet of Identify Namespace data whole as Vendor Specific (1024 bytes); the
    # vendor specific area is bytes 3840-4095 (NVMe 2.0 Figure 245)
    "nvme.cmd.identify.ns.vs",
}
# tshark fields that only link frames: compared on completions (the command's frame), not on data frames
LINKS = {"nvme.cmd_pkt", "nvme.fabrics.cmd_pkt"}
# What makes a frame a capsule's (or a CM message's) for tshark; in any other (RDMA READ/WRITE, SEND fragments)
# it shows the queue ID and links, and the data it matched to a command
CAPSULE_MARKS = ("nvme.cmd.opc", "nvme.fabrics.cmd.opc", "nvme.cqe.cid")
# tshark shows a command's dwords 10-15 as words where rdmaspy decodes them by field (Write Zeroes, Dataset
# Management): compared with the command's dwords in rdmaspy's facts (the nvme.commands note)
DWORDS = {f"nvme.cmd.dword{i}": f"cdw{i}" for i in range(10, 16)}


@functools.cache
def tshark_types() -> dict[str, str]:
    out = subprocess.run([require_tshark(), "-G", "fields"], capture_output=True, text=True, check=True).stdout
    return {cols[2]: cols[3] for cols in (line.split("\t") for line in out.splitlines()) if cols[0] == "F"}


@functools.cache
def theirs() -> dict[int, dict[str, list[tuple[str, str]]]]:
    """frame -> tshark field -> [(show, value)] of every nvme* field, in tree order."""
    proc = subprocess.Popen([require_tshark(), "-r", str(CAPTURE), "-T", "pdml", "-Y", "nvme || nvme-rdma"],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    out: dict[int, dict[str, list[tuple[str, str]]]] = {}
    assert proc.stdout is not None
    for _ev, el in ET.iterparse(proc.stdout, events=("end",)):
        if el.tag != "packet":
            continue
        fields = list(el.iter("field"))
        num = int(next(f for f in fields if f.get("name") == "frame.number").get("show", "0"))
        got: dict[str, list[tuple[str, str]]] = defaultdict(list)
        for f in fields:
            name = f.get("name") or ""
            if name.startswith("nvme"):
                got[name].append((f.get("show") or "", f.get("value") or ""))
        out[num] = got
        el.clear()
    proc.wait()
    return out


@functools.cache
def ours() -> tuple[dict[int, dict[str, list]], dict[int, int]]:
    """frame -> rdmaspy field -> values; and command frame -> the frame its data was decoded in."""
    frames: dict[int, dict[str, list]] = {}
    data_of: dict[int, int] = {}
    eng = Engine()
    with open_capture(str(CAPTURE)) as cap:
        for f in cap:
            pkt = eng.dissect(f)
            vals = {n: v for n, (_fld, v) in packet_fields(pkt, 0).items() if n.startswith("nvme")}
            for cmd in pkt.noted(NVME_COMMANDS) or []:
                for name, attr in DWORDS.items():
                    vals.setdefault(name, [getattr(cmd, attr)])
            frames[f.num] = vals
            for cmd_frame in vals.get("nvme.data_req", []):
                data_of[cmd_frame] = f.num
    return frames, data_of


def tshark_value(ftype: str, show: str, value: str) -> object:
    if ftype.startswith(("FT_UINT", "FT_INT", "FT_BOOLEAN", "FT_FRAMENUM")):
        return int(show, 0) if show not in ("True", "False") else int(show == "True")
    if ftype.startswith("FT_STRING"):
        return show
    if ftype == "FT_BYTES":
        return bytes.fromhex(value)
    if ftype == "FT_DOUBLE":
        return float(show)
    return show


def same(ftype: str, theirs_v: object, ours_v: object, within: bool = False) -> bool:
    if isinstance(ours_v, bool):
        ours_v = int(ours_v)
    if isinstance(theirs_v, str):
        text = ours_v.decode("utf-8", "replace") if isinstance(ours_v, (bytes, bytearray)) else str(ours_v)
        return text.rstrip("\0").rstrip() == theirs_v.rstrip("\0").rstrip()
    if isinstance(theirs_v, float):
        return isinstance(ours_v, float) and abs(ours_v - theirs_v) < 0.0015
    if isinstance(theirs_v, bytes):
        if isinstance(ours_v, int):          # an opcode tshark shows as bytes
            return int.from_bytes(theirs_v, "little") == ours_v
        assert isinstance(ours_v, (bytes, bytearray))
        return theirs_v in ours_v if within else ours_v == theirs_v
    if isinstance(ours_v, (bytes, bytearray)):   # a reserved or revision field rdmaspy keeps as bytes
        return int.from_bytes(ours_v, "little") == theirs_v
    return ours_v == theirs_v


def _comparisons():
    """(tshark frame, field, tshark values, rdmaspy values, prefix) for every tshark field to compare."""
    frames, data_of = ours()
    types = tshark_types()
    data: dict[int, dict[str, list]] = defaultdict(lambda: defaultdict(list))     # command frame -> values
    for num, fields in sorted(theirs().items()):
        is_data = not any(m in fields for m in CAPSULE_MARKS) and not any(n.startswith("nvme-rdma.cm.") for n in fields)
        cmd = None
        if is_data:
            links = fields.get("nvme.fabrics.cmd_pkt", []) + fields.get("nvme.cmd_pkt", [])
            cmd = int(links[0][0]) if links else None
        for name, values in fields.items():
            ftype = types.get(name, "FT_NONE")
            if name in THEIRS_ONLY or ftype == "FT_NONE" or name == "nvme-rdma.cmd.qid" and is_data:
                continue
            if is_data and name in LINKS:
                continue
            parsed = [tshark_value(ftype, s, v) for s, v in values]
            if is_data:
                if cmd is not None:
                    data[cmd][name].extend(parsed)
                continue
            mine = RENAMED.get(name, name)
            yield num, name, ftype, parsed, frames.get(num, {}).get(mine, []), False
    for cmd, fields in sorted(data.items()):
        at = data_of.get(cmd)
        for name, parsed in fields.items():
            mine = RENAMED.get(name, name)
            yield cmd, name, types[name], parsed, frames.get(at, {}).get(mine, []) if at else [], True


def _short(values: list) -> str:
    return repr([v[:24] + b"..." if isinstance(v, bytes) and len(v) > 24 else v for v in values[:3]])


def test_every_nvme_field_tshark_decodes_has_rdmaspy_s_value():
    wrong = []
    compared: set[str] = set()
    for num, name, ftype, want, have, data in _comparisons():
        if data:      # each of tshark's values among rdmaspy's (see the module's docstring)
            ok = bool(have) and all(any(same(ftype, t, o, True) for o in have) for t in want)
        else:
            ok = len(have) == len(want) and all(same(ftype, t, o) for t, o in zip(want, have))
        if not ok:
            wrong.append(f"{'data of command in ' if data else ''}frame {num} {name}: tshark {_short(want)} "
                         f"rdmaspy {_short(have)}")
        compared.add(name)
    assert not wrong, f"{len(wrong)} values differ:\n" + "\n".join(wrong[:40])
    # Nothing tshark decodes is left out unnoticed, and the comparison is not a small one.
    printed = {n for fields in theirs().values() for n in fields}
    types = tshark_types()
    unexplained = {n for n in printed if n not in compared and n not in THEIRS_ONLY and n not in LINKS
                   and types.get(n, "FT_NONE") != "FT_NONE"}
    assert not unexplained, sorted(unexplained)
    assert len(compared) > 500, len(compared)


def test_tshark_decodes_nothing_of_nvme_over_iwarp():
    """The soft-iWARP capture: rdmaspy decodes its capsules, tshark none (the reason it is not compared)."""
    siw = capture("siw-nvme-rdma.pcap.gz")
    out = subprocess.run([require_tshark(), "-r", str(siw), "-Y", "nvme || nvme-rdma"], capture_output=True,
                         text=True, check=True).stdout
    assert out == ""
    eng = Engine()
    with open_capture(str(siw)) as cap:
        commands = [c for f in cap for c in eng.dissect(f).noted(NVME_COMMANDS) or []]
    assert len(commands) > 80 and {c.name for c in commands} >= {"Connect", "Identify", "Read", "Write"}
