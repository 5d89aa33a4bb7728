"""Build whole RDMA packets from field values, for tests, fixtures and benchmarks.

Every header is built from the same ``Header`` declaration the dissectors decode
with, so a field means the same thing both ways.  ``Header.encode`` takes a dict
and is the general path; for the packet builders below each header's declaration
is compiled once more into a positional packer (one ``struct.pack`` of shifted
fields), and the masked IP/UDP part of the ICRC is computed once per distinct
prefix, which lets a benchmark build a million frames in a few seconds.

    rocev2(0x0A, destqp=0x11, psn=5, va=0x7f0000001000, r_key=0x1234, dma_length=8, payload=b"x" * 8)
    rocev1(0x04, destqp=0x11, psn=1, payload=b"hello")
    native_ib(0x64, dlid=4, slid=1, destqp=1, q_key=0x80010000, src_qp=1, payload=mad, grh=True)
    rocev2_mad(mad_bytes, src="192.0.2.1", dst="192.0.2.2")
    icmp_error(rocev2(0x0C, ...)[14:42], code=1)    # Host Unreachable quoting a datagram's first 28 bytes
    write_pcap("out.pcap", frames, linktype=1)

Extended-header fields are given by name: either flat (``va=...``: the first
extended header of the opcode's plan that has a field of that name takes it) or
per header (``reth={"va": ...}``).  The pad count is chosen to align the payload
unless given; ``icrc`` / ``vcrc`` are ``"auto"`` (correct), ``"bad"`` (the correct
value with every bit flipped) or an integer written as is.
"""
from __future__ import annotations

import ipaddress
import struct
import zlib
from functools import lru_cache
from typing import Any, Callable, Iterable, Mapping

from .dissectors import ethernet as _eth
from .dissectors import icmp as _icmp
from .dissectors import infiniband as ib
from .dissectors import ip as _ip
from .dissectors import transport as _tr
from .fields import Header

ROCEV2_PORT = 4791
ETHERTYPE_IPV4 = 0x0800
ETHERTYPE_IPV6 = 0x86DD
ETHERTYPE_ROCEV1 = 0x8915
LINKTYPE_ETHERNET = 1
LINKTYPE_ERF = 197
LINKTYPE_INFINIBAND = 247
ERF_TYPE_INFINIBAND = 21
CM_QKEY = 0x80010000          # the well-known Q_Key of QP1 (GSI), IBTA 13.5.4
DEFAULT_PKEY = 0xFFFF

_FF8 = b"\xff" * 8
_CRC_FF8 = zlib.crc32(_FF8)
_BYTE_DISPLAYS = ("bytes", "gid", "ipv4", "ipv6", "mac", "str")


# --- header packers compiled from the declarations ---------------------------------------------------
def _as_bytes(v: Any, n: int, order: str = "big") -> bytes:
    if isinstance(v, int):
        return v.to_bytes(n, "little" if order == "little" else "big")
    b = bytes(v)
    return b if len(b) == n else b.ljust(n, b"\0")[:n]


def compile_packer(header: Header) -> Callable[..., bytes]:
    """A function ``pack(**fields)`` that builds ``header`` exactly as ``header.encode`` does.

    Arguments are the last part of each field name (``opcode``, ``psn``; ``dscp`` for
    ``ip.dsfield.dscp``); missing ones are 0 (zero bytes for byte fields).
    """
    params: list[str] = []
    exprs: list[str] = []
    for g in header.groups:         # the same byte grouping the decoder was compiled from
        members = g.members
        if len(members) == 1 and members[0][1] == -1:
            idx = members[0][0]
            name = header.fields[idx].name.rsplit(".", 1)[-1]
            params.append(f"{name}=b''")
            exprs.append(f"_b({name}, {g.nbytes}, {header.byteorder!r})")
            continue
        parts = []
        for idx, shift, w in members:
            name = header.fields[idx].name.rsplit(".", 1)[-1]
            params.append(f"{name}=0")
            e = f"({name} & {(1 << w) - 1:#x})"
            if shift:
                e = f"({e} << {shift})"
            parts.append(e)
        e = " | ".join(parts)
        if g.nbytes not in (1, 2, 4, 8):
            e = f"({e}).to_bytes({g.nbytes}, {header.byteorder!r})"
        exprs.append(e)
    seen: set[str] = set()
    for p in params:
        n = p.split("=", 1)[0]
        if n in seen:
            raise ValueError(f"{header.name}: short field name {n!r} is not unique")
        seen.add(n)
    src = (f"def pack(*, {', '.join(params)}, _p=_pack, _b=_as_bytes):\n"
           f"    return _p({', '.join(exprs)})\n")
    ns: dict[str, Any] = {"_pack": header.struct.pack, "_as_bytes": _as_bytes}
    exec(src, ns)
    fn = ns["pack"]
    fn.header = header   # type: ignore[attr-defined]
    return fn


_PACKERS: dict[str, Callable[..., bytes]] = {}


def packer(header: Header) -> Callable[..., bytes]:
    fn = _PACKERS.get(header.name)
    if fn is None or fn.header is not header:   # type: ignore[attr-defined]
        fn = _PACKERS[header.name] = compile_packer(header)
    return fn


_pack_bth = packer(ib.BTH)
_pack_lrh = packer(ib.LRH)
_pack_grh = packer(ib.GRH)
_pack_eth = packer(_eth.ETH)
_pack_ip4 = packer(_ip.IPV4)
_pack_ip6 = packer(_ip.IPV6)
_pack_udp = packer(_tr.UDP)
_pack_icmp = packer(_icmp.ICMP)
_pack_icmpv6 = packer(_icmp.ICMPV6)

# Per extended header: the short names of its fields, to place flat keyword arguments.
_EXT_FIELDS: dict[str, frozenset[str]] = {}


def _fields_of(h: Header) -> frozenset[str]:
    s = _EXT_FIELDS.get(h.name)
    if s is None:
        s = _EXT_FIELDS[h.name] = frozenset(f.name.rsplit(".", 1)[-1] for f in h.fields)
    return s


# --- addresses ------------------------------------------------------------------------------------------
@lru_cache(maxsize=4096)
def ip_bytes(addr: Any, version: int) -> bytes:
    """An address as 4 or 16 bytes: text, int, bytes or an ipaddress object."""
    if isinstance(addr, (bytes, bytearray)):
        return bytes(addr)
    if isinstance(addr, int):
        return addr.to_bytes(4 if version == 4 else 16, "big")
    a = ipaddress.ip_address(addr)
    if version == 4 or a.version == 6:
        return a.packed
    return b"\0" * 10 + b"\xff\xff" + a.packed      # IPv4 text for an IPv6 packet: IPv4-mapped


@lru_cache(maxsize=4096)
def gid_bytes(gid: Any) -> bytes:
    """A GID from IPv6 text, IPv4 text (IPv4-mapped, as RoCE uses), int or 16 bytes."""
    if isinstance(gid, (bytes, bytearray)):
        if len(gid) != 16:
            raise ValueError("a GID has 16 bytes")
        return bytes(gid)
    if isinstance(gid, int):
        return gid.to_bytes(16, "big")
    a = ipaddress.ip_address(gid)
    if a.version == 4:
        return b"\0" * 10 + b"\xff\xff" + a.packed
    return a.packed


@lru_cache(maxsize=1024)
def mac_bytes(mac: Any) -> bytes:
    if isinstance(mac, (bytes, bytearray)):
        return bytes(mac)
    if isinstance(mac, int):
        return mac.to_bytes(6, "big")
    return bytes(int(x, 16) for x in mac.replace("-", ":").split(":"))


# --- the InfiniBand transport part ------------------------------------------------------------------------
_BTH_NAMES = frozenset(("se", "m", "padcnt", "tver", "p_key", "fecn", "becn", "reserved6", "ackreq", "reserved7"))


def transport(opcode: int, destqp: int = 0, psn: int = 0, payload: bytes = b"", *, se: int = 0, m: int = 0,
              padcnt: int | None = None, tver: int = 0, p_key: int = DEFAULT_PKEY, fecn: int = 0, becn: int = 0,
              reserved6: int = 0, ackreq: int = 0, reserved7: int = 0, **ext: Any) -> bytes:
    """BTH, the extended headers the opcode calls for, the payload and its pad (no ICRC).

    ``ext`` holds extended-header fields, flat (``va=...``) or per header (``reth={...}``);
    a name that no header of the plan has is an error, so typos do not go unnoticed.
    """
    plan = ib.PLANS[opcode & 0xFF]
    parts: list[bytes] = []
    if ext:
        per: dict[str, dict[str, Any]] = {}
        for key, val in ext.items():
            if isinstance(val, Mapping):
                if not any(h.name == key for h in plan.exts):
                    raise KeyError(f"{plan.name} has no {key} header")
                per.setdefault(key, {}).update(val)
                continue
            for h in plan.exts:
                if key in _fields_of(h):
                    per.setdefault(h.name, {})[key] = val
                    break
            else:
                raise KeyError(f"no extended header of {plan.name} has a field {key!r}")
        for h in plan.exts:
            vals = per.get(h.name)
            parts.append(packer(h)(**vals) if vals else b"\0" * h.size)
    else:
        for h in plan.exts:
            parts.append(b"\0" * h.size)
    n = len(payload)
    if padcnt is None:
        padcnt = -n & 3
    bth = _pack_bth(opcode=opcode, se=se, m=m, padcnt=padcnt, tver=tver, p_key=p_key, fecn=fecn, becn=becn,
                    reserved6=reserved6, destqp=destqp, ackreq=ackreq, reserved7=reserved7, psn=psn)
    return b"".join((bth, *parts, payload, b"\0" * padcnt))


def _finish_icrc(crc: int, icrc: Any) -> bytes:
    crc &= 0xFFFFFFFF
    if icrc == "auto" or icrc is None:
        v = crc
    elif icrc == "bad":
        v = crc ^ 0xFFFFFFFF
    else:
        v = int(icrc) & 0xFFFFFFFF
    return v.to_bytes(4, "little")


def _crc_bth_on(crc: int, t: bytes) -> int:
    """Continue an ICRC over BTH..payload: BTH byte 4 (FECN, BECN, Resv6) counts as ones."""
    crc = zlib.crc32(t[:4], crc)
    crc = zlib.crc32(b"\xff", crc)
    return zlib.crc32(t[5:], crc)


# --- RoCEv2 -----------------------------------------------------------------------------------------------
@lru_cache(maxsize=8192)
def inet_checksum(data: bytes) -> int:
    """The Internet checksum (RFC 1071): ones' complement of the ones' complement sum of 16-bit words."""
    if len(data) % 2:
        data += b"\0"
    s = sum(struct.unpack(f">{len(data) // 2}H", data))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


def _rocev2_prefix(version: int, src: Any, dst: Any, smac: Any, dmac: Any, sport: int, dport: int, tlen: int,
                   dscp: int, ecn: int, ttl: int, ip_id: int, df: int, flow: int, udp_checksum: int,
                   vlan: int | None) -> tuple[bytes, int]:
    """Ethernet/IP/UDP bytes for a transport part of ``tlen`` bytes (ICRC included), and the ICRC so far."""
    udp_len = 8 + tlen
    if version == 4:
        iph = bytearray(_pack_ip4(version=4, hdr_len=5, dscp=dscp, ecn=ecn, len=20 + udp_len, id=ip_id, df=df,
                                  ttl=ttl, proto=17, src=ip_bytes(src, 4), dst=ip_bytes(dst, 4)))
        iph[10:12] = inet_checksum(bytes(iph)).to_bytes(2, "big")
        etype = ETHERTYPE_IPV4
        masked = bytearray(iph)
        masked[1] = 0xFF
        masked[8] = 0xFF
        masked[10] = masked[11] = 0xFF
    else:
        iph = bytearray(_pack_ip6(version=6, dscp=dscp, ecn=ecn, flow=flow, plen=udp_len, nxt=17, hlim=ttl,
                                  src=ip_bytes(src, 6), dst=ip_bytes(dst, 6)))
        etype = ETHERTYPE_IPV6
        masked = bytearray(iph)
        masked[0] |= 0x0F
        masked[1] = masked[2] = masked[3] = 0xFF
        masked[7] = 0xFF
    udp = _pack_udp(srcport=sport, dstport=dport, length=udp_len, checksum=udp_checksum)
    crc = zlib.crc32(bytes(masked), _CRC_FF8)
    crc = zlib.crc32(udp[:6] + b"\xff\xff", crc)
    eth = _l2(smac, dmac, etype, vlan)
    return eth + bytes(iph) + udp, crc


def _l2(smac: Any, dmac: Any, etype: int, vlan: int | None) -> bytes:
    if vlan is None:
        return _pack_eth(dst=mac_bytes(dmac), src=mac_bytes(smac), type=etype)
    return (_pack_eth(dst=mac_bytes(dmac), src=mac_bytes(smac), type=0x8100)
            + packer(_eth.VLAN)(priority=(vlan >> 13) & 7, dei=(vlan >> 12) & 1, id=vlan & 0xFFF, etype=etype))


def rocev2(opcode: int, destqp: int = 0, psn: int = 0, payload: bytes = b"", *, ip: str | int = "4",
           src: Any = None, dst: Any = None, smac: Any = "02:00:00:00:00:01",
           dmac: Any = "02:00:00:00:00:02", sport: int = 49152, dport: int = ROCEV2_PORT, dscp: int = 0,
           ecn: int = 0, ttl: int = 64, ip_id: int = 0, df: int = 1, flow: int = 0, udp_checksum: int = 0,
           vlan: int | None = None, icrc: Any = "auto", **bth_ext: Any) -> bytes:
    """An Ethernet frame carrying RoCEv2 (IPv4 or IPv6, UDP port 4791) with its ICRC.

    ``src``/``dst`` default to 192.0.2.1/.2 (IPv4) or 2001:db8::1/::2 (IPv6).  ``vlan`` is the 16-bit
    TCI of an 802.1Q tag (none by default); ``ttl`` is the hop limit for IPv6.
    Remaining keywords are BTH fields (``se``, ``ackreq``, ``p_key``, ``becn`` ...) and extended-header fields.
    """
    version = 4 if str(ip) == "4" else 6
    if src is None:
        src = "192.0.2.1" if version == 4 else "2001:db8::1"
    if dst is None:
        dst = "192.0.2.2" if version == 4 else "2001:db8::2"
    t = transport(opcode, destqp, psn, payload, **bth_ext)
    prefix, crc = _rocev2_prefix(version, src, dst, smac, dmac, sport, dport, len(t) + 4, dscp, ecn, ttl,
                                 ip_id, df, flow, udp_checksum, vlan)
    return b"".join((prefix, t, _finish_icrc(_crc_bth_on(crc, t), icrc)))


def rocev2_mad(mad: bytes, *, destqp: int = 1, src_qp: int = 1, q_key: int = CM_QKEY, psn: int = 0,
               **kw: Any) -> bytes:
    """A management datagram (for instance a CM MAD) as RoCEv2 UD SEND Only to QP1 with a DETH."""
    return rocev2(0x64, destqp, psn, mad, q_key=q_key, src_qp=src_qp, **kw)


# --- ICMP errors ------------------------------------------------------------------------------------------
def icmp_error(quoted: bytes, *, itype: int | None = None, code: int | None = None, rest: bytes = bytes(4),
               ip: str | int = "4", src: Any = None, dst: Any = None, smac: Any = "02:00:00:00:00:02",
               dmac: Any = "02:00:00:00:00:01", ttl: int = 64) -> bytes:
    """An Ethernet frame carrying an ICMP error (ICMPv6 for ``ip=6``) that quotes ``quoted``: the start of
    the datagram it answers, as much of it as given (``rocev2(...)[14:]`` cut where the sender cut it:
    RFC 792 quotes the IP header and 8 bytes, RFC 1812 and RFC 4443 as much as fits).

    ``itype``/``code`` default to Destination Unreachable, port unreachable (3/3; 1/4 for ICMPv6);
    ``rest`` is the message's second word (unused, the next-hop MTU, a pointer).  ``src``/``dst`` are the
    reporting host and the quoted datagram's sender (192.0.2.2/.1 or 2001:db8::2/::1).  Checksums are right.
    """
    version = 4 if str(ip) == "4" else 6
    if src is None:
        src = "192.0.2.2" if version == 4 else "2001:db8::2"
    if dst is None:
        dst = "192.0.2.1" if version == 4 else "2001:db8::1"
    if itype is None:
        itype = 3 if version == 4 else 1
    if code is None:
        code = 3 if version == 4 else 4
    body = bytes(rest) + bytes(quoted)
    if version == 4:
        msg = _pack_icmp(type=itype, code=code, checksum=0) + body
        msg = msg[:2] + inet_checksum(msg).to_bytes(2, "big") + msg[4:]
        iph = bytearray(_pack_ip4(version=4, hdr_len=5, len=20 + len(msg), id=0, df=0, ttl=ttl, proto=1,
                                  src=ip_bytes(src, 4), dst=ip_bytes(dst, 4)))
        iph[10:12] = inet_checksum(bytes(iph)).to_bytes(2, "big")
        return _l2(smac, dmac, ETHERTYPE_IPV4, None) + bytes(iph) + msg
    s6, d6 = ip_bytes(src, 6), ip_bytes(dst, 6)
    msg = _pack_icmpv6(type=itype, code=code, checksum=0) + body
    pseudo = s6 + d6 + struct.pack(">IxxxB", len(msg), 58)
    msg = msg[:2] + inet_checksum(pseudo + msg).to_bytes(2, "big") + msg[4:]
    return _l2(smac, dmac, ETHERTYPE_IPV6, None) + bytes(_pack_ip6(version=6, plen=len(msg), nxt=58, hlim=ttl,
                                                                      src=s6, dst=d6)) + msg


# --- RoCEv1 -----------------------------------------------------------------------------------------------
def _grh_bytes(t_len: int, sgid: Any, dgid: Any, tclass: int, flowlabel: int, hoplmt: int, nxthdr: int = 0x1B,
               ipver: int = 6) -> bytes:
    return _pack_grh(ipver=ipver, tclass=tclass, flowlabel=flowlabel, paylen=t_len, nxthdr=nxthdr, hoplmt=hoplmt,
                     sgid=gid_bytes(sgid), dgid=gid_bytes(dgid))


def _crc_grh(grh: bytes) -> int:
    g = bytearray(grh)
    g[0] |= 0x0F
    g[1] = g[2] = g[3] = 0xFF
    g[7] = 0xFF
    return zlib.crc32(g, _CRC_FF8)


def rocev1(opcode: int, destqp: int = 0, psn: int = 0, payload: bytes = b"", *, sgid: Any = "192.0.2.1",
           dgid: Any = "192.0.2.2", smac: Any = "02:00:00:00:00:01", dmac: Any = "02:00:00:00:00:02",
           tclass: int = 0, flowlabel: int = 0, hoplmt: int = 64, vlan: int | None = None, icrc: Any = "auto",
           **bth_ext: Any) -> bytes:
    """An Ethernet frame (type 0x8915) carrying GRH, BTH ... ICRC."""
    t = transport(opcode, destqp, psn, payload, **bth_ext)
    grh = _grh_bytes(len(t) + 4, sgid, dgid, tclass, flowlabel, hoplmt)
    crc = _crc_bth_on(_crc_grh(grh), t)
    return b"".join((_l2(smac, dmac, ETHERTYPE_ROCEV1, vlan), grh, t, _finish_icrc(crc, icrc)))


# --- native InfiniBand --------------------------------------------------------------------------------------
def native_ib(opcode: int, destqp: int = 0, psn: int = 0, payload: bytes = b"", *, dlid: int = 0xFFFF,
              slid: int = 0xFFFF, vl: int = 0, lver: int = 0, sl: int = 0, reserved2: int = 0, reserved5: int = 0,
              grh: bool | Mapping[str, Any] = False, sgid: Any = "fe80::1", dgid: Any = "fe80::2",
              tclass: int = 0, flowlabel: int = 0, hoplmt: int = 255, icrc: Any = "auto", vcrc: Any = "auto",
              **bth_ext: Any) -> bytes:
    """An InfiniBand packet as LINKTYPE_INFINIBAND holds it: LRH [GRH] BTH ... ICRC VCRC.

    ``grh=True`` (or a dict of GRH fields) adds a GRH and sets LNH to 3.  The ICRC covers
    the LRH with VL as ones on a local packet, and 8 bytes of ones in place of the LRH on
    a global one; the VCRC covers everything before it.
    """
    t = transport(opcode, destqp, psn, payload, **bth_ext)
    if grh:
        g = dict(grh) if isinstance(grh, Mapping) else {}
        gh = _grh_bytes(len(t) + 4, g.get("sgid", sgid), g.get("dgid", dgid), g.get("tclass", tclass),
                        g.get("flowlabel", flowlabel), g.get("hoplmt", hoplmt), g.get("nxthdr", 0x1B),
                        g.get("ipver", 6))
        crc = _crc_grh(gh)
        lnh = 3
    else:
        gh = b""
        crc = -1
        lnh = 2
    total = 8 + len(gh) + len(t) + 4
    lrh = _pack_lrh(vl=vl, lver=lver, sl=sl, reserved2=reserved2, lnh=lnh, dlid=dlid, reserved5=reserved5,
                    pktlen=total // 4, slid=slid)
    if crc < 0:
        crc = zlib.crc32(bytes((lrh[0] | 0xF0,)) + lrh[1:])
    body = b"".join((lrh, gh, t, _finish_icrc(_crc_bth_on(crc, t), icrc)))
    v = ib.vcrc(body)
    if vcrc == "bad":
        v ^= 0xFFFF
    elif vcrc not in ("auto", None):
        v = int(vcrc) & 0xFFFF
    return body + v.to_bytes(2, "little")


def erf_record(data: bytes, ts_ns: int = 0, erf_type: int = ERF_TYPE_INFINIBAND, iface: int = 0) -> bytes:
    """``data`` inside an ERF record header (16 bytes), as LINKTYPE_ERF captures (ibdump) hold it."""
    sec, ns = divmod(ts_ns, 1_000_000_000)
    frac = (ns << 32) // 1_000_000_000
    # timestamp: 64-bit little-endian fixed point; then type, flags (varying length), rlen, lctr, wlen (big-endian)
    return struct.pack("<Q", (sec << 32) | frac) + struct.pack(
        ">BBHHH", erf_type, 0x04 | (iface & 3), 16 + len(data), 0, len(data)) + data


# --- pcap ------------------------------------------------------------------------------------------------
_REC = struct.Struct("<IIII")


def write_pcap(path: str, frames: Iterable[bytes | tuple[int, bytes]], linktype: int = LINKTYPE_ETHERNET, *,
               nanosecond: bool = True, start_ns: int = 1_700_000_000_000_000_000, step_ns: int = 1000,
               snaplen: int = 262144) -> int:
    """Write a classic little-endian pcap; ``frames`` are bytes (timestamps ``start_ns + i * step_ns``)
    or ``(ts_ns, bytes)`` pairs.  Returns the number of records written."""
    magic = 0xA1B23C4D if nanosecond else 0xA1B2C3D4
    div = 1 if nanosecond else 1000
    n = 0
    pack = _REC.pack
    with open(path, "wb", buffering=1 << 20) as fh:
        fh.write(struct.pack("<IHHiIII", magic, 2, 4, 0, 0, snaplen, linktype))
        w = fh.write
        ts = start_ns
        for fr in frames:
            if isinstance(fr, tuple):
                ts, data = fr
            else:
                data = fr
            sec, sub = divmod(ts, 1_000_000_000)
            ln = len(data)
            w(pack(sec, sub // div, min(ln, snaplen), ln))
            w(data if ln <= snaplen else data[:snaplen])
            n += 1
            ts += step_ns
    return n
