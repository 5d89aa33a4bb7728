"""Every field of the pcap and pcapng file headers mutated, through every command that writes a capture:
no traceback, exit 0, 1 or 2 with a message, and whatever was written reads again as a whole capture."""
from __future__ import annotations

import struct
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from conftest import capture
from rdmaspy.cli import main
from rdmaspy.readers import open_capture

SOURCE = capture("rxe-ib_write_lat.pcap")

# (name, offset, size) of each field of the 24-byte pcap file header
PCAP_FIELDS = [("magic", 0, 4), ("version_major", 4, 2), ("version_minor", 6, 2), ("thiszone", 8, 4),
               ("sigfigs", 12, 4), ("snaplen", 16, 4), ("linktype", 20, 4)]
# (name, offset, size) in a pcapng file made by rdmaspy: the section header block, then the first
# interface description block (its offset is the section header's length)
SHB_FIELDS = [("block_type", 0, 4), ("block_length", 4, 4), ("byte_order_magic", 8, 4), ("major", 12, 2),
              ("minor", 14, 2), ("section_length", 16, 8)]
IDB_FIELDS = [("block_type", 0, 4), ("block_length", 4, 4), ("linktype", 8, 2), ("reserved", 10, 2),
              ("snaplen", 12, 4)]


def writing_commands(path: Path, out: Path) -> list[list[str]]:
    return [["decode", str(path), "-w", str(out / "decode.pcapng")],
            ["annotate", str(path), "-o", str(out / "annotate.pcapng")],
            ["extract", str(path), "-Y", "frame.number <= 5", "-w", str(out / "extract.pcapng")]]


def run(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    try:
        rc = main(args)
    except SystemExit as exc:           # argument errors leave through argparse
        rc = exc.code if isinstance(exc.code, int) else 1
    return rc, capsys.readouterr().err


def check_commands(path: Path, out: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for args in writing_commands(path, out):
        target = Path(args[-1])
        target.unlink(missing_ok=True)
        rc, err = run(args, capsys)
        assert rc in (0, 1, 2), (args, rc, err)
        assert all(line.startswith("rdmaspy: ") for line in err.splitlines()), (args, err)
        if rc != 0:
            assert err.strip(), (args, rc)
        if rc != 1 and target.exists():
            with open_capture(str(target)) as again:
                list(again)
                assert again.problems == [], (args, again.problems)


def mutate(data: bytes, offset: int, size: int, value: int, order: str) -> bytes:
    code = {2: "H", 4: "I", 8: "Q"}[size]
    return data[:offset] + struct.pack(order + code, value & ((1 << 8 * size) - 1)) + data[offset + size:]


def field_values(size: int) -> st.SearchStrategy[int]:
    top = (1 << 8 * size) - 1
    return st.one_of(st.integers(0, top), st.sampled_from([0, 1, top, top >> 1, 1 << (8 * size - 1)]),
                     st.integers(0, 8 * size - 1).map(lambda bit: 1 << bit))


HYPOTHESIS = settings(max_examples=40, deadline=None,
                      suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])


@HYPOTHESIS
@given(st.sampled_from(PCAP_FIELDS).flatmap(
    lambda f: st.tuples(st.just(f), field_values(f[2]), st.booleans())))
def test_a_mutated_pcap_header_never_breaks_a_writer(tmp_path_factory, capsys, case):
    (name, offset, size), value, xor = case
    data = SOURCE.read_bytes()
    order = "<" if data[:4] in (b"\xd4\xc3\xb2\xa1", b"\x4d\x3c\xb2\xa1") else ">"
    if xor:      # flip bits of the field as it is, so that most mutations keep a readable file
        old = int.from_bytes(data[offset:offset + size], "little" if order == "<" else "big")
        value ^= old
    tmp = tmp_path_factory.mktemp("pcap")
    path = tmp / f"{name}.pcap"
    path.write_bytes(mutate(data, offset, size, value, order))
    check_commands(path, tmp, capsys)


@pytest.fixture(scope="module")
def pcapng_source(tmp_path_factory) -> bytes:
    out = tmp_path_factory.mktemp("source") / "source.pcapng"
    assert main(["decode", str(SOURCE), "-w", str(out)]) in (0, None)
    return out.read_bytes()


@HYPOTHESIS
@given(st.sampled_from([("shb", f) for f in SHB_FIELDS] + [("idb", f) for f in IDB_FIELDS]).flatmap(
    lambda bf: st.tuples(st.just(bf), field_values(bf[1][2]), st.booleans())))
def test_a_mutated_pcapng_header_never_breaks_a_writer(tmp_path_factory, capsys, pcapng_source, case):
    (block, (name, offset, size)), value, xor = case
    data = pcapng_source
    order = "<" if data[8:12] == b"\x4d\x3c\x2b\x1a" else ">"
    if block == "idb":
        offset += struct.unpack_from(order + "I", data, 4)[0]
    if xor:
        value ^= int.from_bytes(data[offset:offset + size], "little" if order == "<" else "big")
    tmp = tmp_path_factory.mktemp("pcapng")
    path = tmp / f"{block}-{name}.pcapng"
    path.write_bytes(mutate(data, offset, size, value, order))
    check_commands(path, tmp, capsys)


@pytest.mark.parametrize("word", [0x00010001, 0x00800001, 0x08000001, 0x03FF0001])
def test_reserved_link_type_bits_are_ignored_with_one_warning(tmp_path, capsys, word):
    data = SOURCE.read_bytes()
    path = tmp_path / "reserved.pcap"
    path.write_bytes(mutate(data, 20, 4, word, "<"))
    with open_capture(str(path)) as cap:
        assert cap.linktype == 1 and set(cap.linktypes.values()) == {1}
        assert len(cap.warnings) == 1 and "reserved bits" in cap.warnings[0]
    out = tmp_path / "out.pcapng"
    rc, err = run(["decode", str(path), "-w", str(out)], capsys)
    assert rc == 0
    assert err.count("reserved bits set") == 1 and err.count("\n") == 1, err
    with open_capture(str(out)) as again:
        assert {f.linktype for f in again} == {1}


def test_the_fcs_bits_are_not_reserved_bits(tmp_path):
    path = tmp_path / "fcs.pcap"
    path.write_bytes(mutate(SOURCE.read_bytes(), 20, 4, 0x24000001, "<"))     # FCS of 2 × 16 bits present
    with open_capture(str(path)) as cap:
        assert cap.linktype == 1 and cap.fcs_len == 4 and cap.warnings == []


def test_a_link_type_no_writer_can_hold_is_refused_in_one_line(tmp_path):
    from rdmaspy.errors import RdmaspyError
    from rdmaspy.writers import PcapngWriter, PcapWriter
    with pytest.raises(RdmaspyError, match="link type 65537 cannot be written in pcapng"):
        PcapngWriter(str(tmp_path / "a.pcapng")).add_interface(65537)
    with pytest.raises(RdmaspyError, match="link type 65537 cannot be written in pcap"):
        PcapWriter(str(tmp_path / "a.pcap"), 65537)
