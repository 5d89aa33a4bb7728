"""Builders of MAD / CM packets for the tests, from the dissectors' own declarations.

``build_cm_fixture(path)`` writes tests/fixtures/cm_all_messages.pcap: every CM
message type, RDMA-CM REQs over IPv4 and IPv6, RFC 8797 private data in the
shapes the RFC allows, RC traffic between them, and MADs of the other classes.
Run ``python3 tests/cm_build.py`` to rebuild the committed file.
"""
from __future__ import annotations

import ipaddress
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from rdmaspy import craft  # noqa: E402
from rdmaspy.dissectors import ib_cm, mad, rdma_cm  # noqa: E402

CLIENT, SERVER = "192.0.2.10", "192.0.2.20"
CLIENT6, SERVER6 = "2001:db8::10", "2001:db8::20"
FIXTURE = ROOT / "tests" / "fixtures" / "cm_all_messages.pcap"
MAGIC = bytes.fromhex("f6ab0e18")


def pdata(version: int = 1, r: int = 0, send: int = 4096, recv: int = 4096) -> bytes:
    """RFC 8797 private data: sizes in bytes, encoded as size / 1024 - 1."""
    return MAGIC + bytes((version, r & 1, send // 1024 - 1, recv // 1024 - 1))


def mad_header(mgmtclass: int, method: int, attr: int, tid: int, classversion: int = 2, status: int = 0,
               classspecific: int = 0, modifier: int = 0) -> bytes:
    return mad.MAD.encode(baseversion=1, mgmtclass=mgmtclass, classversion=classversion, method=method,
                          status=status, classspecific=classspecific, transactionid=tid, attributeid=attr,
                          attributemodifier=modifier)


def cm_mad(attr: int, body: bytes, tid: int, method: int = 0x03) -> bytes:
    data = body.ljust(ib_cm.CM_DATA_SIZE, b"\0")[:ib_cm.CM_DATA_SIZE]
    return mad_header(0x07, method, attr, tid) + data


def sid(port: int, ps: int = 0x06) -> int:
    return (rdma_cm.SID_PREFIX << 24) | (ps << 16) | port


def ip_cm_header(src: str, dst: str, sport: int) -> bytes:
    a, b = ipaddress.ip_address(src), ipaddress.ip_address(dst)
    if a.version == 4:
        return bytes((0x00, 0x40)) + sport.to_bytes(2, "big") + bytes(12) + a.packed + bytes(12) + b.packed
    return bytes((0x00, 0x60)) + sport.to_bytes(2, "big") + a.packed + b.packed


def gid(addr: str) -> bytes:
    a = ipaddress.ip_address(addr)
    return (b"\0" * 10 + b"\xff\xff" + a.packed) if a.version == 4 else a.packed


def req(comm: int, service_id: int, qpn: int, psn: int, private: bytes, src: str = CLIENT, dst: str = SERVER,
        mtu: int = 5) -> bytes:
    return ib_cm.REQ.encode(
        localcommid=comm, serviceid=service_id, localcaguid=0x0002C90300001111, localqkey=0, localqpn=qpn,
        responderres=4, initdepth=4, remoteresptout=20, transpsvctype=0, e2eflowctrl=1, startpsn=psn,
        localresptout=20, retrcount=7, pkey=0xFFFF, pppmtu=mtu, rnrretrcount=7, maxcmretr=15, srq=1,
        prim_locallid=0xFFFF, prim_remotelid=0xFFFF, prim_localgid=gid(src), prim_remotegid=gid(dst),
        prim_flowlabel=0x12345, prim_pktrate=0x2D, prim_tfcclass=0x68, prim_hoplim=64, prim_sl=3,
        prim_subnetlocal=1, prim_localacktout=19, alt_locallid=0x0102, alt_remotelid=0x0304,
        alt_localgid=gid("fe80::1"), alt_remotegid=gid("fe80::2"), alt_flowlabel=0xABCDE, alt_pktrate=3,
        alt_tfcclass=0x10, alt_hoplim=2, alt_sl=1, alt_localacktout=18, sap_supported=1,
    ) + private.ljust(92, b"\0")[:92]


def rep(local: int, remote: int, qpn: int, psn: int, private: bytes) -> bytes:
    return ib_cm.REP.encode(
        localcommid=local, remotecommid=remote, localqkey=0x11223344, localqpn=qpn, localeecn=0, startpsn=psn,
        respres=4, initdepth=4, tgtackdelay=15, failoveracc=1, e2eflowctrl=1, rnrretrcount=7, srq=0,
        localcaguid=0x0002C90300002222,
    ) + private.ljust(196, b"\0")[:196]


def frames() -> list[tuple[int, bytes]]:
    out: list[tuple[int, bytes]] = []
    t = [1_700_000_000_000_000_000]

    def put(frame: bytes, dt: int = 1_000_000) -> None:
        t[0] += dt
        out.append((t[0], frame))

    def c2s(m: bytes, **kw) -> None:
        put(craft.rocev2_mad(m, src=kw.pop("src", CLIENT), dst=kw.pop("dst", SERVER), **kw))

    def s2c(m: bytes, **kw) -> None:
        put(craft.rocev2_mad(m, src=kw.pop("src", SERVER), dst=kw.pop("dst", CLIENT), **kw))

    # Connection 1: NFS/RDMA over RDMA-CM, IPv4, every step of a connection's life.
    tid = 0x0000000400001001
    client_pd = pdata(1, 1, send=262144, recv=1024)
    server_pd = b"\xaa\xbb\xcc" + pdata(1, 1, send=4096, recv=262144)       # unaligned, offset 3
    c2s(cm_mad(0x10, req(0x1001, sid(20049), 0x000101, 0x100000,
                          ip_cm_header(CLIENT, SERVER, 0x03FF) + client_pd), tid))
    s2c(cm_mad(0x11, ib_cm.MRA.encode(localcommid=0x2001, remotecommid=0x1001, msgmraed=0, servicetimeout=17)
               + b"mra-private", tid))
    s2c(cm_mad(0x13, rep(0x2001, 0x1001, 0x000202, 0x200000, server_pd), tid))
    c2s(cm_mad(0x14, ib_cm.RTU.encode(localcommid=0x1001, remotecommid=0x2001) + b"rtu", tid))
    put(craft.rocev2(0x04, 0x000202, 0x200000, b"c" * 100, src=CLIENT, dst=SERVER, ackreq=1))
    put(craft.rocev2(0x11, 0x000101, 0x200000, src=SERVER, dst=CLIENT, syndrome=0x1F, msn=1))
    put(craft.rocev2(0x04, 0x000101, 0x100000, b"s" * 60, src=SERVER, dst=CLIENT, ackreq=1))
    put(craft.rocev2(0x11, 0x000202, 0x100000, src=CLIENT, dst=SERVER, syndrome=0x1F, msn=1))
    lap = ib_cm.LAP.encode(localcommid=0x1001, remotecommid=0x2001, remoteqpneecn=0x000202, remoteresptout=20,
                           alt_locallid=7, alt_remotelid=8, alt_localgid=gid("fe80::7"), alt_remotegid=gid("fe80::8"),
                           alt_flowlabel=0x54321, alt_tfcclass=0x20, alt_hoplim=3, alt_pktrate=6, alt_sl=2,
                           alt_subnetlocal=1, alt_localacktout=14)
    c2s(cm_mad(0x19, lap, tid + 1))
    s2c(cm_mad(0x1A, ib_cm.APR.encode(localcommid=0x2001, remotecommid=0x1001, addinfolen=0, apstatus=2), tid + 1))
    s2c(cm_mad(0x15, ib_cm.DREQ.encode(localcommid=0x2001, remotecommid=0x1001, remoteqpneecn=0x000101), tid + 2))
    c2s(cm_mad(0x16, ib_cm.DREP.encode(localcommid=0x1001, remotecommid=0x2001), tid + 2))

    # Connection 2: a service ID outside RDMA-CM, version-2 private data at offset 0, rejected.
    tid2 = 0x0000000400002002
    c2s(cm_mad(0x10, req(0x3003, 0x0002C90300ABCDEF, 0x000303, 0x000777, pdata(2, 1, 8192, 8192), mtu=4), tid2))
    ari = bytes(range(1, 73))
    s2c(cm_mad(0x12, ib_cm.REJ.encode(localcommid=0, remotecommid=0x3003, msgrej=0, rejinfolen=72, reason=28,
                                      ari=ari) + b"go away", tid2))

    # Connection 3: RDMA-CM over IPv6 with the identifier cut short at the end of the private data, on a
    # port no upper layer is bound to (the RFC 8797 search runs there; 4420 would be NVMe/RDMA).
    tid3 = 0x0000000400003003
    c3 = dict(src=CLIENT6, dst=SERVER6, ip="6")
    s3 = dict(src=SERVER6, dst=CLIENT6, ip="6")
    c2s(cm_mad(0x10, req(0x4004, sid(9999), 0x000404, 0x000001,
                          ip_cm_header(CLIENT6, SERVER6, 0x1234) + bytes(51) + MAGIC + b"\x01",
                          src=CLIENT6, dst=SERVER6), tid3), **c3)
    s2c(cm_mad(0x13, rep(0x5005, 0x4004, 0x000505, 0x000002, b""), tid3), **s3)
    c2s(cm_mad(0x14, ib_cm.RTU.encode(localcommid=0x4004, remotecommid=0x5005), tid3), **c3)

    # SIDR and ClassPortInfo of the CM.
    c2s(cm_mad(0x17, ib_cm.SIDR_REQ.encode(requestid=0x77, pkey=0xFFFF, serviceid=sid(5555, 0x11)), 0x501))
    s2c(cm_mad(0x18, ib_cm.SIDR_REP.encode(requestid=0x77, status=0, qpn=0x000606, serviceid=sid(5555, 0x11),
                                           qkey=0x01234567), 0x501))
    cpi = mad.CLASSPORTINFO.encode(baseversion=1, classversion=2, capabilitymask=0x0100, capabilitymask2=0x12345,
                                   resptimevalue=18, redirectgid=gid("fe80::9"), redirecttc=1, redirectsl=2,
                                   redirectfl=0x12345, redirectlid=9, redirectpkey=0xFFFF, redirectqp=1,
                                   redirectqkey=0x80010000, trapgid=gid("fe80::a"), traptc=3, trapsl=4,
                                   trapfl=0x54321, traplid=10, trappkey=0x7FFF, traphl=64, trapqp=1,
                                   trapqkey=0x80010000)
    c2s(cm_mad(0x01, b"", 0x601, method=0x01))
    s2c(cm_mad(0x01, cpi, 0x601, method=0x81))

    # Other management classes.
    smp_body = mad.SMP_LID.encode(mkey=0x1122334455667788, smpdata=bytes(range(64)))
    c2s(mad_header(0x01, 0x01, 0x0011, 0x701) + smp_body, destqp=0, src_qp=0, q_key=0)
    dr = mad_header(0x81, 0x81, 0x0020, 0x702, classversion=1, status=0x8000, classspecific=0x0102)
    dr = dr + mad.SMP_DR_BODY.encode(mkey=0, drslid=0xFFFF, drdlid=0xFFFF, smpdata=bytes(range(64, 128)),
                                     initialpath=b"\0\x01\x02", returnpath=b"\0\x03")
    s2c(dr, destqp=0, src_qp=0, q_key=0)
    sa = mad_header(0x03, 0x81, 0x0035, 0x703) + mad.RMPP.encode(rmppversion=1, rmpptype=1, rresptime=0x1F,
                                                                  rmppflags=7, data1=1, data2=200)
    sa += mad.SA.encode(smkey=0, attributeoffset=8, componentmask=0x0000000000000C00) + bytes(range(200))
    s2c(sa)
    pc = mad.PORTCOUNTERS.encode(portselect=1, counterselect=0xFFFF, symbolerrorcounter=3,
                                 linkerrorrecoverycounter=1, linkdownedcounter=2, portrcverrors=4,
                                 portrcvremotephysicalerrors=5, portrcvswitchrelayerrors=6, portxmitdiscards=7,
                                 portxmitconstrainterrors=8, portrcvconstrainterrors=9, locallinkintegrityerrors=10,
                                 excessivebufferoverrunerrors=11, vl15dropped=12, portxmitdata=1000,
                                 portrcvdata=2000, portxmitpkts=30, portrcvpkts=40, portxmitwait=5)
    s2c(mad_header(0x04, 0x81, 0x0012, 0x704, classversion=1) + bytes(40) + pc.ljust(192, b"\0"))
    pce = mad.PORTCOUNTERS_EXT.encode(portselect=1, counterselect=0xFF, portxmitdata=10**12, portrcvdata=2 * 10**12,
                                      portxmitpkts=3 * 10**9, portrcvpkts=4 * 10**9, portunicastxmitpkts=5,
                                      portunicastrcvpkts=6, portmulticastxmitpkts=7, portmulticastrcvpkts=8)
    s2c(mad_header(0x04, 0x81, 0x001D, 0x705, classversion=1) + bytes(40) + pce.ljust(192, b"\0"))
    s2c(mad_header(0x04, 0x81, 0x0001, 0x707, classversion=1) + bytes(40) + cpi.ljust(192, b"\0"))
    ni = mad.NODEINFO.encode(baseversion=1, classversion=1, nodetype=1, numports=2, systemimageguid=0x0002C90300001234,
                             nodeguid=0x0002C90300001234, portguid=0x0002C90300001235, partitioncap=128,
                             deviceid=0x1017, revision=0, localportnum=1, vendorid=0x0002C9)
    s2c(mad_header(0x01, 0x81, 0x0011, 0x708, classversion=1) + mad.SMP_LID.encode(smpdata=ni), destqp=0, src_qp=0,
        q_key=0)
    nd = mad.NODEDESCRIPTION.encode(nodestring=b"host-a mlx5_0")
    dr = mad_header(0x81, 0x81, 0x0010, 0x709, classversion=1, status=0x8000, classspecific=0x0101)
    s2c(dr + mad.SMP_DR_BODY.encode(smpdata=nd), destqp=0, src_qp=0, q_key=0)
    s2c(mad_header(0x03, 0x81, 0x0035, 0x70A, status=0x000C) + bytes(232))
    mc = mad.MCMEMBERRECORD.encode(mgid=gid("ff12:401b:ffff::1"), portgid=gid("fe80::2:c903:0:4"), q_key=0x0B1B,
                                   mlid=0xC001, mtuselector=2, mtu=4, tclass=0, p_key=0xFFFF, rateselector=2, rate=3,
                                   packetlifetimeselector=2, packetlifetime=18, sl=0, flowlabel=0xABCDE, hoplimit=0,
                                   scope=2, joinstate=1, proxyjoin=0)
    c2s(mad_header(0x03, 0x02, 0x0038, 0x70B) + bytes(12) + mad.SA.encode(componentmask=0x10083) + mc)
    s2c(mad_header(0x0A, 0x01, 0x0042, 0x706, classversion=1) + bytes(range(232)))
    return out


ERF_FIXTURE = ROOT / "tests" / "fixtures" / "cm_native_ib.erf.pcap"


def native_frames() -> list[tuple[int, bytes]]:
    """Native InfiniBand in ERF records (as ibdump writes): CM over QP1 between LIDs 4 and 1, the RC traffic
    of the connection, and SMPs on QP0 (directed route and LID routed)."""
    out: list[tuple[int, bytes]] = []
    t = 1_700_000_100_000_000_000

    def put(pkt: bytes) -> None:
        nonlocal t
        t += 1_000_000
        out.append((t, craft.erf_record(pkt, t)))

    def mad_ud(m: bytes, slid: int, dlid: int, qp: int = 1) -> bytes:
        return craft.native_ib(0x64, qp, 0, m, slid=slid, dlid=dlid, sl=0 if qp else 0, vl=15 if qp == 0 else 0,
                               q_key=0 if qp == 0 else craft.CM_QKEY, src_qp=qp)

    sgid, dgid = "fe80::2:c903:0:4", "fe80::2:c903:0:1"
    tid = 0x0000000100000042
    put(mad_ud(cm_mad(0x10, req(0x7007, 0x1000000000000404, 0x870408, 0, b"\0" * 92, src=sgid, dst=dgid), tid), 4, 1))
    put(mad_ud(cm_mad(0x13, rep(0x8008, 0x7007, 0xFC0407, 0xD40B55, pdata(1, 1, 32768, 32768)), tid), 1, 4))
    put(mad_ud(cm_mad(0x14, ib_cm.RTU.encode(localcommid=0x7007, remotecommid=0x8008), tid), 4, 1))
    put(craft.native_ib(0x04, 0xFC0407, 0xD40B55, b"ping" * 20, slid=4, dlid=1, ackreq=1))
    put(craft.native_ib(0x11, 0x870408, 0xD40B55, slid=1, dlid=4, syndrome=0x1F, msn=1))
    put(mad_ud(cm_mad(0x15, ib_cm.DREQ.encode(localcommid=0x7007, remotecommid=0x8008, remoteqpneecn=0xFC0407),
                      tid + 1), 4, 1))
    put(mad_ud(cm_mad(0x16, ib_cm.DREP.encode(localcommid=0x8008, remotecommid=0x7007), tid + 1), 1, 4))
    dr = mad_header(0x81, 0x01, 0x0020, 0x900, classversion=1, classspecific=0x0001)
    put(mad_ud(dr + mad.SMP_DR_BODY.encode(drslid=0xFFFF, drdlid=0xFFFF), 0xFFFF, 0xFFFF, qp=0))
    lid = mad_header(0x01, 0x81, 0x0015, 0x901, classversion=1)
    put(mad_ud(lid + mad.SMP_LID.encode(mkey=0, smpdata=bytes(range(100, 164))), 1, 4, qp=0))
    return out


def build_native_fixture(path: Path = ERF_FIXTURE) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    craft.write_pcap(str(path), native_frames(), linktype=craft.LINKTYPE_ERF)
    return path


def build_cm_fixture(path: Path = FIXTURE) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    craft.write_pcap(str(path), frames())
    return path


if __name__ == "__main__":
    print(build_cm_fixture())
    print(build_native_fixture())
