"""Facts read from a header as words (``Header.words`` / ``Header.spot``) equal the declaration's decode.

IBInfo takes where the BTH's opcode, SE, M, pad count, version, P_Key, FECN, BECN, destination QP,
AckReq and PSN are from the BTH declaration (as three 32-bit words); these tests hold those positions
to the generated decoder, for any bytes and for every BTH in the shipped captures.
"""
from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as st

from rdmaspy.dissectors import infiniband as ib
from rdmaspy.engine import Engine
from rdmaspy.fields import CATALOG, BitSpot, Header
from rdmaspy.readers import open_capture

from conftest import CAPTURES, FIXTURES

# IBInfo attribute -> BTH field it is read from
IBINFO_FIELDS = {"opcode": "opcode", "se": "se", "migreq": "m", "padcnt": "padcnt", "tver": "tver",
                 "pkey": "p_key", "fecn": "fecn", "becn": "becn", "destqp": "destqp", "ackreq": "ackreq",
                 "psn": "psn"}


def _word_fields(hdr: Header, width: int) -> list[tuple[int, BitSpot]]:
    """(index, spot) of every field of ``hdr`` that lies within one ``width``-bit word."""
    out = []
    for i, f in enumerate(hdr.fields):
        try:
            out.append((i, hdr.spot(f.name, width)))
        except ValueError:
            continue
    return out


@settings(max_examples=200, deadline=None)
@given(st.binary(min_size=64, max_size=64), st.sampled_from([8, 16, 32, 64]))
def test_spots_read_what_the_decoder_reads_in_every_declared_header(data, width):
    checked = 0
    for hdr in CATALOG.headers:
        if (hdr.size * 8) % width or hdr.size > len(data):
            continue
        words = hdr.words(width).unpack_from(data, 0)
        values = hdr.decode(data, 0)
        for i, spot in _word_fields(hdr, width):
            v = values[i]
            assert spot.of(words) == (int.from_bytes(v, hdr.byteorder) if isinstance(v, bytes) else v), \
                hdr.fields[i].name
            checked += 1
    assert checked


def test_a_field_across_two_words_has_no_spot():
    assert ib.RETH.spot("r_key", 32) == BitSpot(2, 0, 0xFFFFFFFF)
    assert ib.RETH.spot("va", 64) == BitSpot(0, 0, (1 << 64) - 1)
    with pytest.raises(ValueError, match="straddle"):
        ib.RETH.spot("va", 32)
    with pytest.raises(ValueError, match="not 64-bit words"):
        ib.AETH.words(64)


def test_every_bth_fact_ibinfo_gives_has_a_spot_in_one_word():
    for name in IBINFO_FIELDS.values():
        assert ib.BTH.spot(name, 32).word in (0, 1, 2)
    # the summary's [FECN]/[BECN] test reads one word for both bits
    assert ib.BTH.spot("fecn").word == ib.BTH.spot("becn").word


@pytest.mark.parametrize("path", sorted(CAPTURES.glob("*.pcap")) + sorted(FIXTURES.glob("*.pcap*")),
                         ids=lambda p: p.name)
def test_ibinfo_facts_equal_the_declared_bth_on_every_capture(path):
    engine = Engine()
    seen = 0
    with open_capture(str(path)) as cap:
        for frame in cap:
            pkt = engine.dissect(frame)
            info = pkt.ib
            if info is None:
                continue
            bth = pkt.layer("bth")
            declared = ib.BTH.as_dict(ib.BTH.decode(bth.buf, bth.off))
            got = {attr: getattr(info, attr) for attr in IBINFO_FIELDS}
            assert got == {attr: declared[f"bth.{name}"] for attr, name in IBINFO_FIELDS.items()}, frame.num
            seen += 1
    if path.name.startswith(("rxe-", "rocev2", "synth_rocev2")):
        assert seen


@pytest.mark.parametrize("path", sorted(CAPTURES.glob("siw-*.pcap")) + sorted(FIXTURES.glob("*.pcap*")),
                         ids=lambda p: p.name)
def test_iwarp_facts_equal_the_declared_ddp_and_rdmap_headers_on_every_capture(path):
    """IWarpInfo reads flags and versions at the declared bits and STag, TO, QN, MSN, MO at the declared
    bytes: the same values as the DDP and RDMAP headers' decoders."""
    from rdmaspy.dissectors import iwarp_ddp as ddp
    engine = Engine()
    seen = 0
    with open_capture(str(path)) as cap:
        for frame in cap:
            pkt = engine.dissect(frame)
            infos = pkt.noted(ddp.IWARP) or []
            layers = [lay for lay in pkt.layers if lay.proto == "ddp"]
            rdmaps = [lay for lay in pkt.layers if lay.proto == "rdmap"]
            assert len(infos) == len(layers) == len(rdmaps), frame.num
            for info, lay, rdmap in zip(infos, layers, rdmaps):
                d = lay.header.as_dict(lay.header.decode(lay.buf, lay.off))
                r = ddp.RDMAP_CTRL.as_dict(ddp.RDMAP_CTRL.decode(rdmap.buf, rdmap.off))
                assert (info.tagged, info.last, info.opcode) == \
                    (bool(d["ddp.tagged_flag"]), bool(d["ddp.last_flag"]), r["rdmap.opcode"]), frame.num
                if info.tagged:
                    assert (info.stag, info.to) == (d["ddp.stag"], d["ddp.tagged_offset"]), frame.num
                else:
                    assert (info.qn, info.msn, info.mo) == (d["ddp.qn"], d["ddp.msn"], d["ddp.mo"]), frame.num
                seen += 1
    if path.name.startswith("siw-"):
        assert seen
