"""rdmaspy.scapy's NFS classes (one per procedure's call and reply, NFSv3, MOUNT, NLM, NFSACL), made from the
XDR declarations: they read every NFS body of a real capture to the values rdmaspy decodes, and build the
same bytes back."""
from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from conftest import capture
from rdmaspy.dissectors import nfs, xdrlang
from rdmaspy.dissectors.xdr import XdrError
from rdmaspy.engine import Engine
from rdmaspy.readers import open_capture

from xdr_strategies import values

import rdmaspy.scapy as rs  # noqa: E402
_PROGS = {nfs.NFS_PROG: "NFS", nfs.MOUNT_PROG: "MOUNT", nfs.NLM_PROG: "NLM", nfs.NFSACL_PROG: "NFSACL"}


def _class(info) -> type | None:
    prog = _PROGS.get(info.prog)
    if prog is None:
        return None
    names = nfs.PROC_TABLES.get((prog.lower(), info.vers)) or {2: nfs.NFS2_PROCS}.get(info.vers, nfs.NFS3_PROCS)
    side = "Call" if info.msgtype == 0 else "Reply"
    return rs.NFS_LAYERS.get(f"{prog}{info.vers}_{names.get(info.proc)}_{side}")


def test_the_classes_read_real_bodies_as_rdmaspy_does_and_build_them_back():
    checked = 0
    eng = Engine()
    with open_capture(str(capture("rxe-nfsv3-rdma.pcap"))) as cap:
        for frame in cap:
            pkt = eng.dissect(frame)
            info = (pkt.extra or {}).get("rpc")
            lay = pkt.layers[-2] if len(pkt.layers) > 1 else None
            if info is None or lay is None or lay.proto not in ("nfs", "nfsacl") or info.ddp:
                continue
            cls = _class(info)
            assert cls is not None, info
            body = bytes(lay.buf[lay.off:lay.off + lay.length])
            try:
                want, end = xdrlang.decode(cls.declaration, body)
            except XdrError:
                continue                  # a reply reduced into a Reply chunk: its rebuilt copy is checked
            p = cls(body)
            if isinstance(cls.declaration, xdrlang.Struct):
                assert {k: p.getfieldval(f.name) for (k, _t), f in zip(cls.declaration.members, p.fields_desc)} == want
            else:
                assert p.body == want
            assert bytes(p) == body[:end]
            checked += 1
    assert checked > 500


@pytest.mark.parametrize("name", sorted(rs.NFS_LAYERS))
def test_every_class_builds_what_it_reads(name):
    cls = rs.NFS_LAYERS[name]

    @settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(st.data())
    def build_read(data):
        value = data.draw(values(cls.declaration))
        raw = xdrlang.encode(cls.declaration, value)
        assert bytes(cls(raw)) == raw

    build_read()
