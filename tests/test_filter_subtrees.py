"""Every node of the tree is a filterable presence: ``-Y rpcrdma.write_chunk`` or ``-Y nfs.op`` selects the
packets whose tree (and JSON) has that sub-tree, also when the sub-tree is made on first use."""
from __future__ import annotations

import pytest

from conftest import capture
from test_filter_tshark import dissected, tshark_frames
from rdmaspy.engine import Engine
from rdmaspy.filter import compile_filter, known_fields
from rdmaspy.output.jsonout import packet_object
from rdmaspy.packet import Layer
from rdmaspy.readers import open_capture

CAPTURES = ["rxe-nfsv42-rdma.pcap", "rxe-nfsv3-rdma.pcap", "siw-nfsv3-rdma.pcap", "synth_rocev2_cm_rpcrdma.pcap",
            "rxe-ucmatose.pcap", "siw-rping.pcap"]
SUBTREES = ["rpcrdma.write_chunk", "rpcrdma.write_segment", "rpcrdma.reply_chunk", "rpcrdma.reply_segment",
            "rpcrdma.read_list", "rpcrdma.read_chunk", "rpcrdma.read_segment", "nfs.op", "nfs.ddp"]


def _tree_names(lay: Layer, out: set[str]) -> None:
    out.add(lay.proto)
    lay.items                              # a layer may make its sub-trees on first use
    for c in lay.children or ():
        _tree_names(c, out)


def _packets(name: str) -> tuple[list, int]:
    eng = Engine()
    with open_capture(str(capture(name))) as cap:
        frames = list(cap)
    return [eng.dissect(f) for f in frames], frames[0].ts


@pytest.mark.parametrize("name", CAPTURES)
def test_every_tree_node_is_a_presence_that_selects_what_json_shows(name):
    pkts, t0 = _packets(name)
    cat = known_fields()
    seen: set[str] = set()
    for pkt in pkts:
        for lay in pkt.layers:
            _tree_names(lay, seen)
    assert not seen - set(cat.protocols) - set(cat.fields), "layers made under names the catalog does not know"
    for proto in sorted(seen):
        match = compile_filter(proto)
        got = [p.frame.num for p in pkts if match(p, t0)]
        want = [p.frame.num for p in pkts if proto in packet_object(p, t0)]
        assert got == want, proto
        assert got, proto


def test_chunk_and_operation_subtrees_match_packets():
    """The sub-trees issue 13 found unmatched, each on a capture where they occur."""
    counts = {}
    for proto in SUBTREES:
        match = compile_filter(proto)
        counts[proto] = sum(1 for name in CAPTURES for pkts, t0 in [dissected(name)] for p in pkts if match(p, t0))
    assert all(counts.values()), counts


@pytest.mark.parametrize("name", ["rxe-nfsv42-rdma.pcap", "rxe-nfsv3-rdma.pcap", "siw-nfsv3-rdma.pcap"])
def test_read_list_presence_selects_the_frames_tshark_shows_read_segments_in(name):
    # Wireshark has no field for the list itself; its Read segments carry rpcordma.position.
    pkts, t0 = dissected(name)
    match = compile_filter("rpcrdma.read_list")
    got = [p.frame.num for p in pkts if match(p, t0)]
    assert got and got == tshark_frames(capture(name), "rpcordma.position")
