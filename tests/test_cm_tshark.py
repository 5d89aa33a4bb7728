"""Differential test: every MAD / CM field rdmaspy decodes against tshark's ``infiniband.*`` fields.

For each frame with a MAD, every rdmaspy field that has a Wireshark counterpart
must carry the value tshark prints, and every ``infiniband.mad.*`` /
``infiniband.cm.*`` field tshark prints must have been compared (or be listed
below with the reason it differs).
"""
from __future__ import annotations

import functools
import ipaddress
import subprocess

import pytest

from conftest import capture, require_tshark, tshark_fields, tshark_int
from cm_build import ERF_FIXTURE, FIXTURE, build_cm_fixture, build_native_fixture
from rdmaspy.engine import Engine
from rdmaspy.fields import Field
from rdmaspy.fieldview import layer_nodes
from rdmaspy.readers import open_capture

PREFIXES = ("mad.", "cm.", "smplid.", "smpdirected.", "sa.", "rmpp.", "classportinfo.", "portcounters.",
            "portcounters_ext.", "nodeinfo.", "sminfo.", "nodedescription.", "pathrecord.", "mcmemberrecord.",
            "portinfo.")
# rdmaspy name -> Wireshark name where they are not simply "infiniband." + ours.
RENAMED = {
    "cm.req.localcommid": "infiniband.cm.req",
    "cm.rep.localcommid": "infiniband.cm.rep",
    "cm.dreq.remoteqpneecn": "infiniband.cm.req.remoteqpneecn",
    "smpdirected.mkey": "infiniband.smplid.mkey",
}
# Wireshark uses one name twice: (its name, which occurrence is ours).
OCCURRENCE = {
    "cm.req.alt_reserved1": ("infiniband.cm.req.alt_reserved1", 0),   # 2nd: the bits after the ACK timeout
    "classportinfo.reserved": ("infiniband.classportinfo.reserved", 0),
    "classportinfo.traphl": ("infiniband.classportinfo.reserved", 1),  # TrapHL, shown as "Reserved"
}
# Ours, never compared, and why.
NOT_IN_WIRESHARK = {
    "mad.reserved", "mad.attribute", "mad.class_data",           # Wireshark: infiniband.reserved / no field
    "cm.req.reserved", "cm.req.reserved2", "cm.req.sap_supported", "cm.req.alt_reserved2",
    "cm.rep.vendorid_h", "cm.rep.vendorid_m", "cm.rep.vendorid_l", "cm.dreq.reserved",
    # Wireshark 4.0 reads RRespTime as 4 bits and RMPPFlags as 4 (IBTA: 5 and 3), and names Data1/Data2
    # by RMPP type; only version, type and status are comparable.
    "rmpp.rresptime", "rmpp.rmppflags", "rmpp.data1", "rmpp.data2",
    # Wireshark shows the decoded attribute instead of the raw SMP data and the trailing reserved bytes.
    "smplid.reserved", "smplid.smpdata", "smplid.reserved2", "smpdirected.reserved", "smpdirected.smpdata",
    "sa.reserved", "sa.subnetadmindata",
    "pathrecord.serviceid", "pathrecord.reserved", "pathrecord.qosclass", "pathrecord.reserved2",
    "mcmemberrecord.reserved",
    "portinfo.reserved", "portinfo.reserved2", "portinfo.reserved3", "portinfo.reserved4", "portinfo.reserved5",
    # IBTA 1.2.1+ fields after LinkRoundTripLatency, unknown to Wireshark 4.0.
    "portinfo.capabilitymask2", "portinfo.linkspeedextactive", "portinfo.linkspeedextsupported",
    "portinfo.linkspeedextenabled",
    # Wireshark 4.0 reads the D bit with a 16-bit mask from an 8-byte field at the M_Key: always 0.
    "smpdirected.d",
    # Wireshark 4.0 omits these PortCounters fields.
    "portcounters.reserved", "portcounters.counterselect2", "portcounters.qp1dropped", "portcounters.portxmitwait",
    "portcounters_ext.reserved", "portcounters_ext.reserved2",
}
# Theirs, never compared, and why.
THEIRS_ONLY = {
    "infiniband.cm.req.ip_cm",        # the IP CM header as a byte string (we give its fields)
}


@functools.cache
def wireshark_names() -> frozenset[str]:
    out = subprocess.run([require_tshark(), "-G", "fields"], capture_output=True, text=True, check=True).stdout
    return frozenset(line.split("\t")[2] for line in out.splitlines() if line.startswith("F\t"))


def ws_names(name: str) -> list[str]:
    if name in RENAMED:
        return [RENAMED[name]]
    if name in OCCURRENCE:
        return [OCCURRENCE[name][0]]
    base = "infiniband." + name
    if name.endswith("gid"):          # Wireshark shows an IPv4-mapped GID as IPv4 when the packet is IPv4
        return [base, base + "_ipv4"]
    return [base]


def same(ours, field, theirs: str, ws: str) -> bool:
    if isinstance(ours, bool):
        ours = int(ours)
    if isinstance(ours, int):
        return tshark_int(theirs) == ours
    b = bytes(ours)
    if field.display == "str":
        return theirs == b.split(b"\0", 1)[0].decode()
    if ws.endswith("_ipv4") or field.display == "ipv4":
        return ipaddress.ip_address(theirs) == ipaddress.ip_address(b[-4:])
    if field.display in ("gid", "ipv6") and ":" in theirs:
        return ipaddress.ip_address(theirs) == ipaddress.ip_address(b)
    return theirs.replace(":", "") == b.hex()


def wireshark_quirk(name: str, fields: dict) -> list | None:
    """The value Wireshark 4.0 shows where it decodes a field differently from the IBTA layout.

    A REQ path's Flow Label (20) / Reserved (6) / Packet Rate (6) word: Wireshark reads the flow label
    as 3 bytes under a 32-bit mask (so it shows the flow label's top 12 bits) and reserved / packet rate
    from the word's FIRST byte (so both come from the flow label).  The spec reading is ours; the test
    checks that Wireshark's is what follows from it.
    """
    if name == "pathrecord.sl":
        # Wireshark reads QoSClass and SL as one 16-bit field under the mask 0x000f: the same 4 bits.
        return fields[name][1]
    if name == "smpdirected.smpstatus":
        # Wireshark shows the D bit inside the status word (IBTA: D is its own bit, status 15 bits).
        return [(d << 15) | st for d, st in zip(fields["smpdirected.d"][1], fields[name][1])]
    for path in ("prim", "alt"):
        if name.startswith(f"cm.req.{path}_") and name.rsplit("_", 1)[1] in ("flowlabel", "reserved0", "pktrate"):
            fl = fields[f"cm.req.{path}_flowlabel"][1]
            res = fields[f"cm.req.{path}_reserved0"][1]
            rate = fields[f"cm.req.{path}_pktrate"][1]
            out = []
            for f, r, p in zip(fl, res, rate):
                w = ((f << 12) | (r << 6) | p) >> 8
                b0 = f >> 12
                out.append({"flowlabel": (w & 0xFFFFF000) >> 12, "reserved0": (b0 & 0xFC0) >> 6,
                            "pktrate": b0 & 0x3F}[name.rsplit("_", 1)[1]])
            return out
    return None


def fields_of(pkt) -> dict[str, tuple[Field, list]]:
    """name -> (field, values in packet order) for the management fields of a packet."""
    out: dict[str, tuple[Field, list]] = {}
    for lay in pkt.layers:
        for _depth, item, value, _o, _l in layer_nodes(lay):
            if isinstance(item, Field) and item.name.startswith(PREFIXES):
                out.setdefault(item.name, (item, []))[1].append(value)
    return out


def ours_by_frame(path) -> dict[int, dict]:
    eng = Engine(strict=True)
    out = {}
    with open_capture(str(path)) as cap:
        for fr in cap:
            pkt = eng.dissect(fr)
            # a MAD of the packet's own, or of the RoCEv2 datagram an ICMP error quotes (test_icmp.py)
            if pkt.has("mad") or any(c.proto == "mad" for lay in pkt.layers for c in lay.children or ()
                                     if lay.proto == "icmp"):
                out[fr.num] = fields_of(pkt)
    return out


def compare(path) -> int:
    ours = ours_by_frame(path)
    assert ours, f"{path}: no MAD decoded"
    names = sorted({n for f in ours.values() for name in f for n in ws_names(name)} & wireshark_names())
    wanted = sorted(set(names) | {n for n in wireshark_names() if n.startswith(("infiniband.cm.", "infiniband.mad."))})
    rows = tshark_fields(path, wanted)
    compared = 0
    for num, fields in ours.items():
        theirs = rows[num - 1]
        seen: set[str] = set()
        for name, (field, values) in fields.items():
            if name in NOT_IN_WIRESHARK:
                continue
            hits = [n for n in ws_names(name) if theirs.get(n)]
            if not hits:
                continue
            ws = hits[0]
            seen.add(ws)
            tv = theirs[ws]
            quirk = wireshark_quirk(name, fields)
            if quirk is not None:
                values = quirk
            if name in OCCURRENCE:
                ws, k = OCCURRENCE[name]
                tv = theirs[ws][k:k + 1]
            assert len(tv) == len(values), f"frame {num} {name}: {values} vs tshark {ws} {tv}"
            for o, t in zip(values, tv):
                assert same(o, field, t, ws), f"frame {num} {name}={o!r} but tshark {ws}={t}"
                compared += 1
        missed = {n for n, v in theirs.items() if v and n.startswith(("infiniband.cm.", "infiniband.mad."))}
        missed -= seen | THEIRS_ONLY
        assert not missed, f"frame {num}: tshark decodes {sorted(missed)} and rdmaspy has no such field"
    return compared


@pytest.mark.parametrize("name", ["rxe-ucmatose.pcap", "rxe-rdma_server-client.pcap", "rxe-nfsv3-rdma.pcap",
                                  "rxe-nfsv42-rdma.pcap", "synth_rocev2_cm_rpcrdma.pcap", "rxe-read-retry-stall.pcap"])
def test_real_captures_match_tshark(name):
    assert compare(capture(name)) > 100


def test_fixture_with_every_message_matches_tshark(tmp_path):
    built = build_cm_fixture(tmp_path / "cm.pcap")
    assert built.read_bytes() == FIXTURE.read_bytes(), "tests/fixtures/cm_all_messages.pcap is stale: rebuild it"
    assert compare(FIXTURE) > 300


def test_native_infiniband_fixture_matches_tshark(tmp_path):
    """LRH-routed CM and SMPs in ERF records, as ibdump writes them (GIDs shown as IPv6 by Wireshark)."""
    built = build_native_fixture(tmp_path / "ib.pcap")
    assert built.read_bytes() == ERF_FIXTURE.read_bytes(), "tests/fixtures/cm_native_ib.erf.pcap is stale"
    assert compare(ERF_FIXTURE) > 100
