"""AF_PACKET socket with a TPACKET_V3 receive ring (PACKET_MMAP).

The kernel fills fixed-size blocks with packets and hands a whole block over at once
(when it is full or when its retire timer fires); user space walks the block and gives it
back.  One poll() per block, not per packet, is what lets Python keep up with the wire.

Why V3 and not V2: V2 slots are snaplen-sized, so a large snap length leaves a ring of
few slots that a burst overflows (../shared/lab/README.md, "Capturing without losing
packets"); V3 packs packets back to back.  V3's trap — the last, partly filled block is
still the kernel's when the capture stops — is handled by ``close_gate`` + ``drain``: a
drop-all filter closes the ring to new packets, then the reader waits for the kernel to
retire the block until it has seen every packet the kernel counted.
"""
from __future__ import annotations

import ctypes
import errno
import mmap
import os
import select
import socket
import struct
import time

from ..errors import RdmaspyError
from . import bpf

SOL_PACKET = 263
PACKET_ADD_MEMBERSHIP = 1
PACKET_RX_RING = 5
PACKET_STATISTICS = 6
PACKET_VERSION = 10
PACKET_MR_PROMISC = 1
TPACKET_V3 = 2
ETH_P_ALL = 0x0003

TP_STATUS_KERNEL = 0
TP_STATUS_USER = 1
TP_STATUS_VLAN_VALID = 0x10
TP_STATUS_VLAN_TPID_VALID = 0x40

ARPHRD_ETHER = 1
ARPHRD_LOOPBACK = 772

BLOCK_DESC = struct.Struct("=III")           # block_status, num_pkts, offset_to_first_pkt (at offset 8)
PKT_HDR = struct.Struct("=IIIIIIHHIIH")       # next, sec, nsec, snaplen, len, status, mac, net, rxhash, tci, tpid
PKT_HDR_SHORT = struct.Struct("=IIIIIIH")     # the same up to mac: all the hot path needs
PKT_VLAN = struct.Struct("=IH")               # tci, tpid at offset 32
SOCKADDR_LL = struct.Struct("=HHiHBB8s")      # family, protocol (network order), ifindex, hatype, pkttype, halen, addr
SLL_OFFSET = 48                               # TPACKET_ALIGN(sizeof(struct tpacket3_hdr))
_STATUS_OFF = 8
_U32 = struct.Struct("=I")


class Ring:
    """An open capture: ``fileno()`` for poll, ``blocks()`` to walk ready blocks, ``stats()``."""

    def __init__(self, ifname: str, *, snaplen: int = 262144, program: bpf.Program | None = None,
                 buffer_kib: int = 32768, block_kib: int = 1024, retire_ms: int = 50, promisc: bool = True) -> None:
        self.ifname = ifname
        self.snaplen = snaplen
        self.recv_total = 0          # packets the filter passed (including those the ring had no room for)
        self.drop_total = 0          # of those, packets the kernel dropped for want of ring space
        self.ifindex = 0
        if ifname != "any":
            try:
                self.ifindex = socket.if_nametoindex(ifname)
            except OSError:
                raise RdmaspyError(f"no such interface: {ifname}") from None
        self.cooked = is_cooked(ifname)
        self.linktype = bpf.LINKTYPE_LINUX_SLL if self.cooked else bpf.LINKTYPE_ETHERNET
        try:
            # Protocol 0: nothing arrives before bind(), so no packet slips past the filter.
            self.sock = socket.socket(socket.AF_PACKET, socket.SOCK_DGRAM if self.cooked else socket.SOCK_RAW, 0)
        except PermissionError:
            raise _no_permission(ifname) from None
        self._map: mmap.mmap | None = None
        try:
            self._setup(program, buffer_kib, block_kib, retire_ms, promisc)
        except BaseException:
            self.close()
            raise

    def _setup(self, program: bpf.Program | None, buffer_kib: int, block_kib: int, retire_ms: int,
               promisc: bool) -> None:
        s = self.sock
        program = program if program is not None else bpf.accept_all(self.snaplen)
        lo = loopback_index()
        if lo and (self.ifindex in (0, lo)):        # 'any' (index 0) or the loopback interface itself
            program = bpf.without_loopback_echo(program, lo)
        bpf.attach(s, program)
        s.setsockopt(SOL_PACKET, PACKET_VERSION, TPACKET_V3)
        page = mmap.PAGESIZE
        block = max(page, (block_kib * 1024 + page - 1) // page * page)
        # A block must hold the largest packet; below 64 KiB, GRO/TSO frames would be cut short.
        while block < min(self.snaplen, 65536) + 4096:
            block *= 2
        nblocks = max(2, buffer_kib * 1024 // block)
        frame = 2048
        req = struct.pack("=7I", block, nblocks, frame, block // frame * nblocks, retire_ms, 0, 0)
        try:
            s.setsockopt(SOL_PACKET, PACKET_RX_RING, req)
        except OSError as exc:
            raise RdmaspyError(f"cannot set up a {nblocks * block >> 20} MiB capture ring: "
                               f"{exc.strerror or exc}") from None
        self.block_size = block
        self.nblocks = nblocks
        self._map = mmap.mmap(s.fileno(), block * nblocks, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
        self.view = memoryview(self._map)
        if promisc and self.ifindex:
            mreq = struct.pack("=iHH8s", self.ifindex, PACKET_MR_PROMISC, 0, b"")
            try:
                s.setsockopt(SOL_PACKET, PACKET_ADD_MEMBERSHIP, mreq)
            except OSError:
                pass          # promiscuous mode is a nicety: the interface's own traffic is still seen
        err = _bind(s.fileno(), self.ifindex)
        if err == errno.ENETDOWN:
            raise RdmaspyError(f"interface {self.ifname} is down")
        if err:
            raise RdmaspyError(f"cannot capture on {self.ifname}: {os.strerror(err)}")
        self.next_block = 0
        self.start_ns = time.time_ns()

    def fileno(self) -> int:
        return self.sock.fileno()

    def ready(self) -> int | None:
        """Index of the next block if user space owns it, else None."""
        i = self.next_block
        if self._map is None:
            return None
        if BLOCK_DESC.unpack_from(self._map, i * self.block_size + _STATUS_OFF)[0] & TP_STATUS_USER:
            return i
        return None

    def block(self, i: int) -> tuple[int, int, int]:
        """(offset of the block in ``view``, packet count, offset of the first packet within the block)."""
        base = i * self.block_size
        _status, n, first = BLOCK_DESC.unpack_from(self.view, base + _STATUS_OFF)
        return base, n, first

    def release(self, i: int) -> None:
        _U32.pack_into(self.view, i * self.block_size + _STATUS_OFF, TP_STATUS_KERNEL)
        self.next_block = (i + 1) % self.nblocks

    def wait(self, timeout_s: float | None, extra_fds: tuple[int, ...] = ()) -> list[int]:
        """poll() the ring (and extra fds); returns the fds that are ready.

        An error on the socket (the interface went down or was deleted, its namespace with it)
        raises instead of waking the loop again and again.
        """
        p = select.poll()
        me = self.sock.fileno()
        p.register(me, select.POLLIN | select.POLLERR)
        for fd in extra_fds:
            p.register(fd, select.POLLIN)
        ms = None if timeout_s is None else max(0, int(timeout_s * 1000))
        ready = []
        for fd, ev in p.poll(ms):
            if fd == me and ev & (select.POLLERR | select.POLLHUP | select.POLLNVAL):
                err = self.sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
                why = "it went down" if err == errno.ENETDOWN else os.strerror(err) if err else "socket error"
                raise RdmaspyError(f"capture on {self.ifname} ended: {why}")
            ready.append(fd)
        return ready

    def stats(self) -> tuple[int, int]:
        """Totals since the start: (received by the filter, dropped by the kernel for want of ring space).

        PACKET_STATISTICS resets the kernel's counters on every read, so they are summed here.
        """
        raw = self.sock.getsockopt(SOL_PACKET, PACKET_STATISTICS, 12)
        packets, drops, _freeze = struct.unpack("=III", raw)
        self.recv_total += packets          # the kernel reports packets including the drops
        self.drop_total += drops
        return self.recv_total, self.drop_total

    def close_gate(self) -> None:
        """Stop new packets from entering the ring (a drop-all filter); what is in it stays readable."""
        bpf.attach(self.sock, bpf.DROP_ALL)

    def close(self) -> None:
        if self._map is not None:
            try:
                self.view.release()
            except (AttributeError, BufferError):
                pass
            try:
                self._map.close()
            except BufferError:
                pass
            self._map = None
        self.sock.close()


_LIBC = None


def _bind(fd: int, ifindex: int) -> int:
    """bind() to an ifindex through libc: Python's AF_PACKET addresses need a name, and 'any' is index 0."""
    global _LIBC
    if _LIBC is None:
        _LIBC = ctypes.CDLL(None, use_errno=True)
    sll = ctypes.create_string_buffer(SOCKADDR_LL.pack(socket.AF_PACKET, socket.htons(ETH_P_ALL), ifindex,
                                                       0, 0, 0, b""))
    if _LIBC.bind(fd, sll, ctypes.c_uint32(SOCKADDR_LL.size)) != 0:
        return ctypes.get_errno()
    return 0


def loopback_index() -> int:
    """The loopback interface's index in this network namespace (0 if it has none)."""
    for index, name in socket.if_nameindex():
        if name == "lo":
            return index
        try:
            with open(f"/sys/class/net/{name}/type") as f:
                if int(f.read()) == ARPHRD_LOOPBACK:
                    return index
        except (OSError, ValueError):
            continue
    return 0


def _no_permission(ifname: str) -> RdmaspyError:
    return RdmaspyError(f"no permission to capture on {ifname}: capturing needs CAP_NET_RAW (and CAP_NET_ADMIN for "
                        f"promiscuous mode); run as root or grant them")


def is_cooked(ifname: str) -> bool:
    """True when the interface's packets come without an Ethernet header (``any``, tun, IPoIB...).

    Those are captured with SOCK_DGRAM as LINKTYPE_LINUX_SLL; Ethernet and loopback keep their header.
    """
    if ifname == "any":
        return True
    try:
        probe = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, 0)
    except PermissionError:
        raise _no_permission(ifname) from None
    try:
        probe.bind((ifname, 0))
        return probe.getsockname()[3] not in (ARPHRD_ETHER, ARPHRD_LOOPBACK)
    except OSError:
        raise RdmaspyError(f"no such interface: {ifname}") from None
    finally:
        probe.close()


def sll_header(view: memoryview, hdr_off: int) -> bytes:
    """The 16-byte Linux cooked header (LINKTYPE_LINUX_SLL) from the sockaddr_ll after a packet's header."""
    _fam, proto, _ifi, hatype, pkttype, halen, addr = SOCKADDR_LL.unpack_from(view, hdr_off + SLL_OFFSET)
    return struct.pack(">HHH8sH", pkttype, hatype, halen, addr, socket.ntohs(proto))


def netdev_rx_dropped(ifname: str) -> int | None:
    """The interface's receive drop counter from /proc/net/dev (this network namespace's view)."""
    try:
        with open("/proc/net/dev") as f:
            for line in f:
                name, sep, rest = line.partition(":")
                if sep and name.strip() == ifname:
                    return int(rest.split()[3])
    except (OSError, ValueError, IndexError):
        return None
    return None


