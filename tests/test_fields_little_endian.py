"""Little-endian header declarations (``Header(..., little=True)``) and the named bits of a word (``parts``):
decoding, building (``encode`` and craft's packers), spots and the parts' items agree, for a hand-made
example and, with hypothesis, for every little-endian structure the dissectors declare (NVMe's)."""
from __future__ import annotations

import keyword
import struct

import pytest
from hypothesis import given, settings, strategies as st

from rdmaspy import craft
from rdmaspy.engine import load_dissectors
from rdmaspy.fields import CATALOG, F, Header, declaring
from rdmaspy.packet import Layer, add_parts

load_dissectors()
LITTLE = [h for h in CATALOG.headers if h.little]

declaring(__name__)
EXAMPLE = Header("test.le", "Little-endian example", [
    F("opc", 8, display="hex"), F("fuse", 2), F("rsvd", 4, display="hex"), F("psdt", 2),
    F("cid", 16, display="hex"), F("addr", 64, display="hex"), F("len", 24), F("key", 32, display="hex"),
    F("subtype", 4), F("type", 4), F("status", 16, display="hex"), F("name", 32, display="str"),
], little=True, parts={"status": [F("status.p", 1), F("status.sc", 8), F("status.sct", 3), F("status.crd", 2),
                                  F("status.m", 1), F("status.dnr", 1)]})
CATALOG.forget_module(__name__)      # a test's declaration stays out of the catalog the other tests read


def test_bits_of_a_byte_are_declared_from_bit_zero_up():
    data = EXAMPLE.encode(opc=0x7F, fuse=1, psdt=2, cid=0x1234, addr=0x1122334455667788, len=0x0A0B0C,
                          key=0xDEADBEEF, subtype=0xF, type=4, status=0x8002, name=b"abcd")
    # byte 1: FUSE in bits 0-1, PSDT in bits 6-7; multi-byte integers least significant byte first
    assert data.hex() == "7f81341288776655443322110c0b0aefbeadde4f0280" + b"abcd".hex()
    assert EXAMPLE.decode(data) == (0x7F, 1, 0, 2, 0x1234, 0x1122334455667788, 0x0A0B0C, 0xDEADBEEF, 0xF, 4,
                                    0x8002, b"abcd")
    assert EXAMPLE.spans[EXAMPLE.index["psdt"]] == (1, 1, 6)
    assert EXAMPLE.spans[EXAMPLE.index["len"]] == (12, 3, 0)


def test_the_parts_of_a_word_become_items_over_its_bytes():
    data = EXAMPLE.encode(status=0x8002)
    lay = Layer("test.le", EXAMPLE, data, 0).lazy(add_parts)
    items = {f.name.rsplit(".", 1)[-1]: (v, o, n) for f, v, o, n in lay.items}
    at = EXAMPLE.spans[EXAMPLE.index["status"]][0]
    assert items["sc"] == (1, at, 2) and items["dnr"] == (1, at, 2) and items["sct"] == (0, at, 2)
    declaring(__name__)
    try:
        with pytest.raises(ValueError, match="parts are 7 bits"):
            Header("test.bad", "bad", [F("w", 8)], little=True, parts={"w": [F("w.a", 7)]})
    finally:
        CATALOG.forget_module(__name__)
    assert "test.bad" not in CATALOG.declared


@pytest.mark.parametrize("width", [8, 16, 32, 64])
def test_spots_of_a_little_endian_header_read_the_declared_values(width):
    data = EXAMPLE.encode(opc=0x7F, fuse=3, psdt=1, cid=0xBEEF, key=0x01020304, subtype=0xA, type=0x4, status=0xF00D)
    words = EXAMPLE.words(width).unpack_from(data.ljust(-(-len(data) // 8) * 8, b"\0"), 0) \
        if (EXAMPLE.size * 8) % width == 0 else None
    if words is None:
        pytest.skip("not a whole number of words")
    values = EXAMPLE.decode(data)
    for i, f in enumerate(EXAMPLE.fields):
        try:
            spot = EXAMPLE.spot(f.name, width)
        except ValueError:
            continue
        v = values[i]
        assert spot.of(words) == (int.from_bytes(v, "little") if isinstance(v, bytes) else v), f.name


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_every_little_endian_structure_round_trips(data):
    """bytes -> decode -> encode gives the bytes back, craft's packer builds what encode builds, and each
    word's parts are its bits."""
    hdr = data.draw(st.sampled_from(LITTLE))
    raw = data.draw(st.binary(min_size=hdr.size, max_size=hdr.size))
    values = hdr.decode(raw)
    named = hdr.as_dict(values)
    assert hdr.encode(named) == raw, hdr
    short = {f.name.rsplit(".", 1)[-1]: v for f, v in zip(hdr.fields, values)}
    if len(short) == len(hdr.fields) and all(n.isidentifier() and not keyword.iskeyword(n) for n in short):
        # craft's packer takes unique short names that are identifiers (tshark's "data.4B" is none)
        assert craft.packer(hdr)(**short) == raw, hdr
    for i, at, bits in hdr.parts:
        word = int.from_bytes(raw[at:at + bits.size], "little")
        assert word == values[i]
        shift = 0
        for f, v in zip(bits.fields, bits.decode(raw, at)):
            assert v == (word >> shift) & ((1 << f.bits) - 1), f.name
            shift += f.bits


def test_nvme_structures_are_declared_little_endian_at_their_specified_sizes():
    from rdmaspy.dissectors import nvme, nvme_data, nvme_rdma
    assert all(h in LITTLE for h in (nvme.CQE, nvme.ADMIN_SQE, nvme.SGL_KEYED, nvme_rdma.CM_REQ, nvme_data.SMART))
    assert (nvme.ADMIN_SQE.size + nvme.SGL_KEYED.size + nvme.IDENTIFY.size, nvme.CQE.size) == (64, 16)
    assert (nvme_rdma.CM_REQ.size, nvme_rdma.CM_REP.size, nvme_rdma.CM_REJ.size) == (32, 32, 4)
    assert sum(h.size * n for _at, h, n in nvme_data.IDENTIFY_CONTROLLER) == 4096
    assert all(at == sum(h.size * n for a, h, n in nvme_data.IDENTIFY_CONTROLLER if a < at)
               for at, _h, _n in nvme_data.IDENTIFY_CONTROLLER)
    assert (nvme_data.SMART.size, nvme_data.FW_SLOT.size, nvme_data.ERROR_INFO.size) == (512, 512, 64)
    assert nvme_data.DISCOVERY_ENTRY.size + nvme_data.TSAS_RDMA.size == 1024
    assert nvme_data.CONNECT_DATA.size == 1024 and struct.calcsize("<Q") == 8
