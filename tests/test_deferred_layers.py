"""InfiniBand's layers (the BTH, its extended headers, the data of an RDMA WRITE or READ response, the ICRC,
and the RoCEv2 fast path's Ethernet, IPv4 and UDP) are made when somebody reads ``pkt.layers``, not while the packet is dissected: a summary line
and the analysis never pay for them.  Made late, or early by an upper dissector that reads the layers in
the middle of the dissection, they are the layers, in the places, that making them at once would give."""
from __future__ import annotations

import pytest

from rdmaspy.dissectors import infiniband
from rdmaspy.engine import Engine
from rdmaspy.output.jsonout import packet_object
from rdmaspy.output.text import summary_line
from rdmaspy.packet import Layer, Packet
from rdmaspy.readers import open_capture

from conftest import CAPTURES, FIXTURES

ROCE = sorted(p for p in CAPTURES.glob("*.pcap") if not p.name.startswith("siw-")) + \
    sorted(FIXTURES.glob("*rocev2*.pcap*")) + sorted(FIXTURES.glob("*ib*.pcap*"))


def _shape(layers: list[Layer]) -> list:
    """What a layer is and holds, to the items and children (made by reading them)."""
    out = []
    for lay in layers:
        items = [(f.name, v, o, n) for f, v, o, n in lay.items or ()]
        values = lay.values if lay.header is not None else None     # a header-less layer's are its fill's
        out.append((lay.proto, lay.header.name if lay.header else None, lay.off, lay.length, lay.label,
                    values, items, _shape(lay.children or [])))
    return out


def _read_at_the_bth(pkt: Packet, ib: object, ctx: object) -> None:
    pkt.layers          # an upper layer looking at the layers before the payload is dissected


@pytest.fixture
def reading_early():
    infiniband.bth_observers.append(_read_at_the_bth)
    try:
        yield
    finally:
        infiniband.bth_observers.remove(_read_at_the_bth)


def _decode(path) -> list[Packet]:
    engine = Engine(strict=True)
    with open_capture(str(path)) as cap:
        return [engine.dissect(f) for f in cap]


@pytest.mark.parametrize("path", ROCE, ids=lambda p: p.name)
def test_a_summary_makes_no_infiniband_layer_of_a_connected_transport(path):
    """RC, UC and XRC packets: what nearly every packet of a capture is (a MAD's dissector reads the
    layers it sits on: it may make them)."""
    pkts = _decode(path)
    connected = [p for p in pkts if p.ib is not None and p.ib.plan.transport in ("RC", "UC", "XRC")]
    if not connected:
        pytest.skip("no packet of a connected transport")
    for pkt in connected:
        summary_line(pkt, 0)
        made = [lay.proto for lay in pkt.made_layers()]
        assert "bth" not in made and "icrc" not in made, (pkt.frame.num, made)
        if pkt.ib.plan.kind in ("write", "read_response"):
            assert "data" not in made, (pkt.frame.num, made)      # the payload's bytes: made with the BTH's


@pytest.mark.parametrize("path", ROCE, ids=lambda p: p.name)
def test_layers_made_early_by_an_upper_reader_are_the_layers_made_late(path, request):
    late = _decode(path)
    request.getfixturevalue("reading_early")
    early = _decode(path)
    assert len(early) == len(late)
    for a, b in zip(late, early):
        assert _shape(a.layers) == _shape(b.layers), a.frame.num
        assert packet_object(a, 0) == packet_object(b, 0), a.frame.num


def test_every_roce_packet_has_its_headers_in_order_once_read():
    pkts = _decode(CAPTURES / "rxe-nfsv3-rdma.pcap")
    for pkt in pkts:
        if pkt.ib is None or pkt.frame.linktype != 1:
            continue
        names = [lay.proto for lay in pkt.layers]
        assert names[:4] == ["eth", "ip", "udp", "bth"], (pkt.frame.num, names)
        assert names.count("bth") == 1 and names[-1] == "icrc", (pkt.frame.num, names)
        assert pkt.layers is pkt.made_layers()         # made once, kept
