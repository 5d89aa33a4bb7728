"""The pcapng reader takes runs of plain Enhanced Packet Blocks in a plain function (rdmaspy/readers/pcapng.py,
_plain_epbs) and everything else block by block: the frames are those of the block-by-block loop alone,
whatever the mix of options, interfaces, resolutions, time stamps and damage."""
from __future__ import annotations

from hypothesis import given, settings, strategies as st

from rdmaspy.readers import open_capture, pcapng
from rdmaspy.writers.pcapng import PcapngWriter

_block = st.tuples(st.integers(0, 2),                                  # interface
                   st.integers(0, 1 << 40),                           # time, ns
                   st.binary(min_size=0, max_size=70),                # data
                   st.one_of(st.none(), st.text(max_size=12)))        # comment


def _frames(path: str) -> list[tuple]:
    with open_capture(path) as cap:
        return [(f.num, f.ts, f.linktype, f.data, f.wirelen, f.iface, f.comment, f.offset) for f in cap]


@settings(max_examples=60, deadline=None)
@given(st.lists(_block, min_size=1, max_size=600), st.integers(0, 31))   # a cut within the last block (32+ bytes)
def test_runs_of_plain_blocks_give_the_frames_of_the_block_by_block_loop(tmp_path_factory, blocks, cut):
    path = str(tmp_path_factory.mktemp("batches") / "mix.pcapng")
    with PcapngWriter(path) as w:
        ifaces = [w.add_interface(1, tsresol=9), w.add_interface(1, tsresol=6), w.add_interface(147, tsresol=9)]
        for iface, ts, data, comment in blocks:
            w.write_packet(ifaces[iface], ts, data, comment=comment)
    with open(path, "rb") as f:
        raw = f.read()
    if cut:
        with open(path, "wb") as f:
            f.write(raw[:len(raw) - cut])          # the last block cut short: the reader says so, frames stay
    batched = _frames(path)
    saved = pcapng._plain_epbs
    try:
        pcapng._plain_epbs = lambda buf, pos, *rest: pos        # no run: every block by the loop
        one_by_one = _frames(path)
    finally:
        pcapng._plain_epbs = saved
    assert batched == one_by_one
    assert len(batched) >= len(blocks) - 1
