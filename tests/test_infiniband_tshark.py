"""Every InfiniBand header field rdmaspy decodes equals tshark's, frame by frame.

One tshark run per capture: every capture shipped in captures/ and the ib_* fixtures built
by tests/fixtures/ib_make_fixtures.py (every opcode of every transport over RoCEv2, RoCEv1,
native IB in ERF records).  Where tshark 4.0 is wrong or silent the test says so and checks
the right value instead:

- CNP (0x81): tshark shows "Unknown (129)" and decodes nothing after the BTH; rdmaspy must
  show the CNP's 16 reserved bytes.
- XRC (0xA0-0xB7), FLUSH and ATOMIC WRITE (0x1C/0x1D, 0x5C/0x5D): unknown to tshark 4.0;
  only the BTH is compared, and rdmaspy must show the header plan of the opcode.
- RD (0x40-0x5D): tshark 4.0 reads RDETH 8 bytes after the BTH instead of right behind it
  (IBTA and Linux rxe put RDETH at BTH+12, then DETH); the BTH is compared, and tshark's
  E2E Context is checked to be the 24 bits at BTH+21..24, which shows the shift is tshark's.
- ICRC/VCRC: tshark reads them big-endian; the wire order is little-endian (the CRCs are
  bit-reflected), so tshark's value must be rdmaspy's byte-swapped.
"""
from __future__ import annotations

import ipaddress
from pathlib import Path

import pytest

from conftest import CAPTURES, FIXTURES, tshark_fields, tshark_int
from rdmaspy.dissectors import infiniband as ib
from rdmaspy.engine import Engine
from rdmaspy.fieldview import layer_nodes
from rdmaspy.packet import Frame, Layer
from rdmaspy.readers import open_capture

# (our layer, our field) -> tshark field
MAP: dict[tuple[str, str], str] = {}
for _f in ("vl", "lver", "sl", "reserved2", "lnh", "dlid", "reserved5", "pktlen", "slid"):
    MAP[("lrh", _f)] = f"infiniband.lrh.{_f}"
for _f in ("ipver", "tclass", "flowlabel", "paylen", "nxthdr", "hoplmt", "sgid", "dgid"):
    MAP[("grh", _f)] = f"infiniband.grh.{_f}"
for _f in ("opcode", "se", "m", "padcnt", "tver", "p_key", "destqp", "reserved7", "psn"):
    MAP[("bth", _f)] = f"infiniband.bth.{_f}"
MAP.update({
    ("bth", "ackreq"): "infiniband.bth.a",
    ("rdeth", "ee_context"): "infiniband.rdeth.eecnxt",
    ("deth", "q_key"): "infiniband.deth.q_key",
    ("deth", "src_qp"): "infiniband.deth.srcqp",
    ("reth", "va"): "infiniband.reth.va",
    ("reth", "r_key"): "infiniband.reth.r_key",
    ("reth", "dma_length"): "infiniband.reth.dmalen",
    # Wireshark shows the AtomicETH's address and key with the RETH's fields
    ("atomiceth", "va"): "infiniband.reth.va",
    ("atomiceth", "r_key"): "infiniband.reth.r_key",
    ("atomiceth", "swap_or_add_data"): "infiniband.atomiceth.swapdt",
    ("atomiceth", "compare_data"): "infiniband.atomiceth.cmpdt",
    ("aeth", "syndrome"): "infiniband.aeth.syndrome",
    ("aeth", "msn"): "infiniband.aeth.msn",
    ("aeth", "aeth.type"): "infiniband.aeth.syndrome.opcode",
    ("aeth", "aeth.credit"): "infiniband.aeth.syndrome.credit_count",
    ("aeth", "aeth.rnr_timer"): "infiniband.aeth.syndrome.timer",
    ("aeth", "aeth.nak"): "infiniband.aeth.syndrome.error_code",
    ("atomicacketh", "orig_rem_dt"): "infiniband.atomicacketh.origremdt",
    ("immdt", "imm"): "infiniband.immdt",
    ("ieth", "r_key"): "infiniband.ieth",
})
ICRC = "infiniband.invariant.crc"
VCRC = "infiniband.variant.crc"
TSHARK_FIELDS = sorted(set(MAP.values())) + [ICRC, VCRC]
BYTES_FIELDS = {"infiniband.immdt", "infiniband.ieth"}
GID_FIELDS = {"infiniband.grh.sgid", "infiniband.grh.dgid"}
LRH_GRH = {"lrh", "grh"}

CAPTURE_FILES = sorted(p.name for p in CAPTURES.glob("*.pcap"))
FIXTURE_FILES = ["ib_rocev2_all_opcodes.pcap", "ib_rocev1_opcodes.pcap", "ib_native_erf.pcap"]


def _tshark_unknown(opcode: int) -> bool:
    """Opcodes tshark 4.0 does not know: it decodes nothing after their BTH."""
    return opcode == 0x81 or opcode >> 5 == 5 or (opcode & 0x1F) in (0x1C, 0x1D)


def _norm_tshark(name: str, values: list[str]) -> list:
    if name in BYTES_FIELDS:
        # tshark adds the bytes item twice (header and value); one per header
        return [int(v.replace(":", ""), 16) for v in values[::2]]
    if name in GID_FIELDS:
        return [ipaddress.IPv6Address(v).packed for v in values]
    return [tshark_int(v) for v in values]


def _layers(pkt) -> list[Layer]:
    """The packet's layers, and after an ICMP layer the layers of the datagram its error quotes (tshark
    dissects the quote as it does a packet)."""
    out = []
    for lay in pkt.layers:
        out.append(lay)
        if lay.proto in ("icmp", "icmpv6"):
            out.extend(c for c in lay.children or () if c.proto not in ("ip", "ipv6", "udp"))
    return out


def _ours(pkt) -> tuple[dict[str, list], list[str]]:
    out: dict[str, list] = {}
    protos = []
    for lay in _layers(pkt):
        protos.append(lay.proto)
        quoting = lay.proto in ("icmp", "icmpv6")
        for _d, item, value, _o, _l in layer_nodes(lay):
            if quoting and _d > 0 or not hasattr(item, "bits"):
                continue
            short = item.name.rsplit(".", 1)[-1]
            key = MAP.get((lay.proto, short)) or MAP.get((lay.proto, item.name))
            if key is None:
                continue
            if isinstance(value, bool):
                value = int(value)
            out.setdefault(key, []).append(value)
    return out, protos


def _frames(path: Path):
    with open_capture(str(path)) as cap:
        for fr in cap:
            if fr.linktype == 197:
                # ERF record (16 bytes, type 21 INFINIBAND) around the packet: LINKTYPE_INFINIBAND starts at the LRH
                assert fr.data[8] == 21
                fr = Frame(fr.num, fr.ts, 247, fr.data[16:], fr.wirelen - 16)
            yield fr


@pytest.mark.parametrize("name", CAPTURE_FILES + FIXTURE_FILES)
def test_infiniband_fields_equal_tshark(name: str) -> None:
    path = (CAPTURES if name in CAPTURE_FILES else FIXTURES) / name
    rows = tshark_fields(path, TSHARK_FIELDS)
    engine = Engine()
    frames = list(_frames(path))
    assert len(rows) == len(frames)
    compared = 0
    for fr, row in zip(frames, rows):
        pkt = engine.dissect(fr)
        ours, protos = _ours(pkt)
        where = f"{name} frame {fr.num}"
        t_opcode = row["infiniband.bth.opcode"]
        # tshark dissects the RoCEv2 datagram an ICMP error quotes, and so does rdmaspy, as the ICMP
        # layer's sub-tree (test_icmp.py): the same fields, out of the analysis' sight
        assert (len(t_opcode) > 0) == ("bth" in protos), where
        if not t_opcode:
            continue
        opcode = ours["infiniband.bth.opcode"][0]
        skip_ext = _tshark_unknown(opcode) or opcode >> 5 == 2
        for tname in TSHARK_FIELDS:
            if tname in (ICRC, VCRC):
                continue
            if skip_ext and not tname.startswith(("infiniband.bth.", "infiniband.lrh.", "infiniband.grh.")):
                continue
            theirs = _norm_tshark(tname, row[tname])
            assert ours.get(tname, []) == theirs, f"{where}: {tname}"
            compared += len(theirs)
        # CRCs: tshark reads big-endian what is sent low byte first
        for tname, lname, size in ((ICRC, "icrc", 4), (VCRC, "vcrc", 2)):
            if row[tname]:
                lay = next((x for x in _layers(pkt) if x.proto == lname), None)
                if lay is None:
                    # only when an upper layer's dissector failed (caught by the engine) after the check
                    assert any("dissector error" in e.text for e in pkt.expert or ()), where
                    assert lname != "icrc" or pkt.ib.icrc_ok is True, where
                    continue
                swapped = int.from_bytes(lay[f"{lname}.value"].to_bytes(size, "little"), "big")
                assert tshark_int(row[tname][0]) == swapped, f"{where}: {tname}"
                assert lay[f"{lname}.valid"] is True, f"{where}: {lname} does not verify"
        plan = ib.PLANS[opcode]
        if _tshark_unknown(opcode):
            # tshark stops after the BTH: check that rdmaspy decoded the opcode's whole header plan
            assert [p for p in protos if p in {h.name for h in plan.exts}] == [h.name for h in plan.exts], where
            if opcode == 0x81:
                assert pkt.layer("cnp")["reserved"] == bytes(16), where
        elif opcode >> 5 == 2:
            bth = next(x for x in _layers(pkt) if x.proto == "bth")
            if row["infiniband.rdeth.eecnxt"]:
                shifted = int.from_bytes(fr.data[bth.off + 21:bth.off + 24], "big")
                assert tshark_int(row["infiniband.rdeth.eecnxt"][0]) == shifted, where
            assert protos[protos.index("bth") + 1] == "rdeth", where
    if name.startswith("ib_") or name.startswith("rxe-"):
        assert compared > 0


def test_fixture_covers_every_opcode() -> None:
    """The all-opcodes fixture really holds every valid opcode of every transport, twice."""
    engine = Engine()
    seen: dict[int, int] = {}
    for fr in _frames(FIXTURES / "ib_rocev2_all_opcodes.pcap"):
        pkt = engine.dissect(fr)
        seen[pkt.ib.opcode] = seen.get(pkt.ib.opcode, 0) + 1
    valid = [op for op in range(256) if ib.PLANS[op].valid]
    assert sorted(seen) == valid
    assert set(seen.values()) == {2}
    # the transports the issue names
    assert {ib.PLANS[op].transport for op in valid} == {"RC", "UC", "RD", "UD", "XRC", "CNP"}
