"""``rdmaspy decode -T json``: JSON Lines whose values are tshark's, under the names of docs/fields.md."""
from __future__ import annotations

import json
import subprocess

import pytest

from conftest import CAPTURES, FIXTURES, capture, tshark_fields, tshark_int
from rdmaspy.cli import main
from rdmaspy.filter import known_fields
from rdmaspy.output.jsonout import packet_object
from rdmaspy.pipeline import Options, Pipeline
from rdmaspy.readers import open_capture

# our name(s) -> (tshark's name, how to read tshark's text)
INT = tshark_int


def _bool(text: str) -> bool:
    return text.lower() in ("1", "true")


MAPPED = {
    "frame.number": ("frame.number", INT),
    "frame.len": ("frame.len", INT),
    "frame.cap_len": ("frame.cap_len", INT),
    "eth.src": ("eth.src", str),
    "eth.dst": ("eth.dst", str),
    "ip.src": ("ip.src", str),
    "ip.dst": ("ip.dst", str),
    "ip.ttl": ("ip.ttl", INT),
    "ip.id": ("ip.id", INT),
    "ip.len": ("ip.len", INT),
    "ip.proto": ("ip.proto", INT),
    "ip.checksum": ("ip.checksum", INT),
    "ip.flags.df": ("ip.flags.df", _bool),
    "ip.dsfield.ecn": ("ip.dsfield.ecn", INT),
    "udp.srcport": ("udp.srcport", INT),
    "udp.dstport": ("udp.dstport", INT),
    "udp.length": ("udp.length", INT),
    "udp.checksum": ("udp.checksum", INT),
    "bth.opcode": ("infiniband.bth.opcode", INT),
    "bth.se": ("infiniband.bth.se", _bool),
    "bth.m": ("infiniband.bth.m", _bool),
    "bth.padcnt": ("infiniband.bth.padcnt", INT),
    "bth.tver": ("infiniband.bth.tver", INT),
    "bth.p_key": ("infiniband.bth.p_key", INT),
    "bth.destqp": ("infiniband.bth.destqp", INT),
    "bth.ackreq": ("infiniband.bth.a", _bool),
    "bth.psn": ("infiniband.bth.psn", INT),
    # Wireshark shows the AtomicETH's VA and R_Key under the RETH's names
    "reth.va atomiceth.va": ("infiniband.reth.va", INT),
    "reth.r_key atomiceth.r_key": ("infiniband.reth.r_key", INT),
    "reth.dma_length": ("infiniband.reth.dmalen", INT),
    "aeth.syndrome": ("infiniband.aeth.syndrome", INT),
    "aeth.msn": ("infiniband.aeth.msn", INT),
    "atomiceth.swap_or_add_data": ("infiniband.atomiceth.swapdt", INT),
    "atomiceth.compare_data": ("infiniband.atomiceth.cmpdt", INT),
}


def json_lines(path, *extra: str, capsysbinary=None) -> list[dict]:
    if capsysbinary is None:
        out = subprocess.run(["rdmaspy", "decode", str(path), "-T", "json", *extra], capture_output=True,
                             check=True).stdout
    else:
        assert main(["decode", str(path), "-T", "json", *extra]) == 0
        out = capsysbinary.readouterr().out
    assert out.endswith(b"\n")
    return [json.loads(line) for line in out.decode().splitlines()]


@pytest.mark.parametrize("name", ["rxe-ib_read_bw.pcap", "rxe-pyverbs-rc-verbs.pcap", "rxe-ib_write_bw-loss.pcap"])
def test_json_values_equal_tshark(name, capsysbinary):
    objs = json_lines(capture(name), capsysbinary=capsysbinary)
    rows = tshark_fields(capture(name), [theirs for theirs, _ in MAPPED.values()])
    assert len(objs) == len(rows)
    compared = 0
    for obj, row in zip(objs, rows):
        for ours, (theirs, conv) in MAPPED.items():
            want = [conv(v) for v in row[theirs]]
            got = []
            for name in ours.split():
                v = obj.get(name)
                got += [] if v is None else v if isinstance(v, list) else [v]
            assert got == want, (obj["frame.number"], ours)
            compared += len(want)
    assert compared > 500


def test_json_lines_from_the_command_parse_and_hold_every_declared_name():
    objs = json_lines(capture("rxe-ib_read_bw.pcap"), "-c", "5")
    assert [o["frame.number"] for o in objs] == [1, 2, 3, 4, 5]
    known = known_fields()
    for o in objs:
        assert o["_summary"]["protocol"] == "RoCEv2" and o["_summary"]["info"]
        for key in o:
            if key != "_summary":
                assert key in known.fields or key in known.protocols, key
    first = objs[0]
    # the value conventions of docs/json.md
    assert first["ip.src"] == ["192.0.2.2"] and first["eth.src"] == "52:54:00:00:00:02"   # ip repeats (ICMP)
    assert first["bth.ackreq"] is True and first["reth"] is True and first["icrc.valid"] is True
    assert isinstance(first["frame.time_epoch"], float) and first["frame.time_relative"] == 0.0
    assert first["frame.protocols"] == "eth:ip:udp:bth:reth:icrc"


def test_json_with_a_filter_and_a_count(capsysbinary):
    objs = json_lines(capture("rxe-ib_write_bw-loss.pcap"), "-Y", "aeth.syndrome == 0x60", "-c", "3",
                      capsysbinary=capsysbinary)
    assert len(objs) == 3 and all(o["aeth.syndrome"] == 0x60 and o["aeth.type"] == 3 for o in objs)


def test_json_bytes_become_hex(capsysbinary):
    objs = json_lines(capture("rocev2_cnp_cx4lx.pcap"), capsysbinary=capsysbinary)
    cnp = objs[0]
    assert cnp["bth.opcode"] == 0x81 and cnp["bth.becn"] is True
    assert cnp["cnp.reserved"] == "00" * 16        # bytes: lower-case hex without separators
    assert cnp["icrc.value"] == int.from_bytes(bytes.fromhex("82fd002a"), "little")


def _every_file() -> list:
    return sorted(CAPTURES.glob("*.pcap*")) + sorted(FIXTURES.glob("*.pcap*"))


@pytest.mark.parametrize("path", _every_file(), ids=lambda p: p.name)
def test_a_name_is_an_array_exactly_when_its_declaration_says_it_repeats(path):
    """Never a value in one packet and an array in another: the catalog decides, per name, for every packet
    of every shipped capture and fixture (with the analysis fields)."""
    cat = known_fields()
    arrays: set[str] = set()
    values: set[str] = set()
    try:
        cap = open_capture(str(path))
    except Exception:          # the fixtures that are not captures at all are other tests' business
        pytest.skip("not a capture")
    with cap:
        t0 = None
        for pkt in Pipeline(cap, Options(analyze=True)).packets():
            t0 = pkt.frame.ts if t0 is None else t0
            for key, v in packet_object(pkt, t0).items():
                if key != "_summary":
                    (arrays if isinstance(v, list) else values).add(key)
    assert not {k for k in arrays if not cat.repeats(k)}, "arrays of names declared single"
    assert not {k for k in values if cat.repeats(k)}, "single values of names declared to repeat"


def test_names_that_repeat_are_arrays_even_of_one(capsysbinary):
    objs = json_lines(capture("rxe-nfsv42-rdma.pcap"), "-Y", "nfs.op", "-c", "8", capsysbinary=capsysbinary)
    assert objs and all(isinstance(o["nfs.opcode"], list) and isinstance(o["rpc.xid"], list) for o in objs)
    assert all(isinstance(o["bth.opcode"], int) and o["bth"] is True for o in objs)
    assert any(len(o["nfs.opcode"]) > 1 for o in objs)
