"""Capture filters: BPF expressions compiled by libpcap, attached to the socket as a kernel filter.

``pcap_compile`` runs against a "dead" pcap handle of the capture's link type and snap
length, so the program ends in ``ret #snaplen`` and the kernel both filters and truncates.
The program is then handed to ``SO_ATTACH_FILTER``: packets the filter rejects never
reach the ring.  For the Linux cooked link type (``any``) the socket delivers packets
without a link header, so loads are moved the way libpcap moves them (see ``_cook``).
"""
from __future__ import annotations

import ctypes
import ctypes.util
import socket
import struct

from ..errors import RdmaspyError

SO_ATTACH_FILTER = 26
SO_LOCK_FILTER = 44
PCAP_NETMASK_UNKNOWN = 0xFFFFFFFF
LINKTYPE_ETHERNET = 1
LINKTYPE_LINUX_SLL = 113

_INSN = struct.Struct("=HBBI")        # struct sock_filter: code, jt, jf, k


class _BpfInsn(ctypes.Structure):
    _fields_ = [("code", ctypes.c_ushort), ("jt", ctypes.c_ubyte), ("jf", ctypes.c_ubyte), ("k", ctypes.c_uint)]


class _BpfProgram(ctypes.Structure):
    _fields_ = [("bf_len", ctypes.c_uint), ("bf_insns", ctypes.POINTER(_BpfInsn))]


_LIB: ctypes.CDLL | None = None


def _libpcap() -> ctypes.CDLL:
    global _LIB
    if _LIB is not None:
        return _LIB
    names = [n for n in (ctypes.util.find_library("pcap"),) if n] + ["libpcap.so.0.8", "libpcap.so.1", "libpcap.so"]
    for name in names:
        try:
            lib = ctypes.CDLL(name)
            break
        except OSError:
            continue
    else:
        raise RdmaspyError("libpcap is needed to compile capture filters: install it (Debian: apt-get install "
                           "libpcap0.8)")
    lib.pcap_open_dead.restype = ctypes.c_void_p
    lib.pcap_open_dead.argtypes = [ctypes.c_int, ctypes.c_int]
    lib.pcap_compile.restype = ctypes.c_int
    lib.pcap_compile.argtypes = [ctypes.c_void_p, ctypes.POINTER(_BpfProgram), ctypes.c_char_p, ctypes.c_int,
                                 ctypes.c_uint32]
    lib.pcap_geterr.restype = ctypes.c_char_p
    lib.pcap_geterr.argtypes = [ctypes.c_void_p]
    lib.pcap_freecode.argtypes = [ctypes.POINTER(_BpfProgram)]
    lib.pcap_close.argtypes = [ctypes.c_void_p]
    _LIB = lib
    return lib


Program = list[tuple[int, int, int, int]]     # (code, jt, jf, k) per instruction


def compile_bpf(expr: str, linktype: int = LINKTYPE_ETHERNET, snaplen: int = 262144) -> Program:
    """Compile a tcpdump-style filter expression into classic BPF instructions."""
    lib = _libpcap()
    handle = lib.pcap_open_dead(linktype, snaplen)
    if not handle:
        raise RdmaspyError("libpcap could not open a handle to compile the filter")
    prog = _BpfProgram()
    try:
        if lib.pcap_compile(handle, ctypes.byref(prog), expr.encode(), 1, PCAP_NETMASK_UNKNOWN) != 0:
            msg = (lib.pcap_geterr(handle) or b"syntax error").decode(errors="replace")
            raise RdmaspyError(f"bad capture filter {expr!r}: {msg}")
        insns = [(prog.bf_insns[i].code, prog.bf_insns[i].jt, prog.bf_insns[i].jf, prog.bf_insns[i].k)
                 for i in range(prog.bf_len)]
        lib.pcap_freecode(ctypes.byref(prog))
    finally:
        lib.pcap_close(handle)
    return insns


def accept_all(snaplen: int) -> Program:
    """``ret #snaplen``: no filtering, but the kernel still truncates to the snap length."""
    return [(BPF_RET | BPF_K, 0, 0, snaplen)]


DROP_ALL: Program = [(0x06, 0, 0, 0)]      # ret #0

# Classic BPF opcode pieces (linux/bpf_common.h).
BPF_LD, BPF_LDX, BPF_ST, BPF_STX, BPF_ALU, BPF_JMP, BPF_RET, BPF_MISC = range(8)
BPF_W, BPF_H, BPF_B = 0x00, 0x08, 0x10
BPF_ABS, BPF_IND, BPF_MSH = 0x20, 0x40, 0xA0
BPF_K = 0x00
BPF_JEQ = 0x10
SKF_AD_OFF = -0x1000
SKF_AD_PROTOCOL = 0
SKF_AD_PKTTYPE = 4
SKF_AD_IFINDEX = 8
SKF_AD_HATYPE = 28
SKF_LL_OFF = -0x200000
SLL_HDR_LEN = 16


def cook(prog: Program) -> Program:
    """Rewrite a program compiled for LINKTYPE_LINUX_SLL to run on a SOCK_DGRAM socket.

    The kernel runs the filter on the packet from its network header, so loads past
    the 16-byte cooked header move back by 16; the cooked header's packet type, ARP
    hardware type and protocol become the kernel's ancillary loads; any other load
    inside it (the link-layer address) reads the real link header through SKF_LL_OFF.
    """
    out: Program = []
    for code, jt, jf, k in prog:
        cls, mode = code & 0x07, code & 0xE0
        if cls in (BPF_LD, BPF_LDX) and mode in (BPF_ABS, BPF_IND, BPF_MSH):
            if mode == BPF_ABS and k < SLL_HDR_LEN:
                size = code & 0x18
                if k == 14 and size == BPF_H:
                    k = (SKF_AD_OFF + SKF_AD_PROTOCOL) & 0xFFFFFFFF
                elif k == 0 and size == BPF_H:
                    k = (SKF_AD_OFF + SKF_AD_PKTTYPE) & 0xFFFFFFFF
                elif k == 2 and size == BPF_H:
                    k = (SKF_AD_OFF + SKF_AD_HATYPE) & 0xFFFFFFFF
                elif k >= 6:
                    k = (SKF_LL_OFF + k - 6) & 0xFFFFFFFF
                else:
                    raise RdmaspyError("this capture filter reads a part of the cooked header the kernel cannot "
                                       "filter on; capture on a named interface instead of 'any'")
            elif mode in (BPF_ABS, BPF_IND) or (mode == BPF_MSH and cls == BPF_LDX):
                if mode == BPF_ABS or k >= SLL_HDR_LEN:
                    k -= SLL_HDR_LEN
                else:
                    raise RdmaspyError("this capture filter uses an indexed load into the cooked header; capture on "
                                       "a named interface instead of 'any'")
        out.append((code, jt, jf, k))
    return out


def kernel_program(expr: str, cooked: bool, snaplen: int) -> Program:
    """The program to attach for a filter expression (empty: keep everything, cut to the snap length)."""
    if not expr.strip():
        return accept_all(snaplen)
    if cooked:
        return cook(compile_bpf(expr, LINKTYPE_LINUX_SLL, snaplen))
    return compile_bpf(expr, LINKTYPE_ETHERNET, snaplen)


PACKET_OUTGOING = 4


def without_loopback_echo(prog: Program, lo_ifindex: int) -> Program:
    """``prog`` preceded by a test that drops what the loopback interface sends.

    On loopback the kernel shows every packet twice, as it leaves and as it arrives; libpcap (and so
    dumpcap and tcpdump) keeps the arriving copy only, on ``lo`` and on ``any``.  Dropped in the kernel,
    the copy costs no ring space and counts in no statistic.  Classic BPF jumps are relative, so the
    program runs unchanged after the test.
    """
    ifindex = (SKF_AD_OFF + SKF_AD_IFINDEX) & 0xFFFFFFFF
    pkttype = (SKF_AD_OFF + SKF_AD_PKTTYPE) & 0xFFFFFFFF
    head: Program = [
        (BPF_LD | BPF_W | BPF_ABS, 0, 0, ifindex),
        (BPF_JMP | BPF_JEQ | BPF_K, 0, 3, lo_ifindex),         # another interface: to the program
        (BPF_LD | BPF_W | BPF_ABS, 0, 0, pkttype),
        (BPF_JMP | BPF_JEQ | BPF_K, 0, 1, PACKET_OUTGOING),    # arriving: to the program
        (BPF_RET | BPF_K, 0, 0, 0),
    ]
    return head + prog


def attach(sock: socket.socket, prog: Program) -> None:
    """SO_ATTACH_FILTER: the kernel copies the program during the call, so a local buffer suffices."""
    buf = ctypes.create_string_buffer(b"".join(_INSN.pack(*i) for i in prog))
    fprog = struct.pack("HL", len(prog), ctypes.addressof(buf))
    try:
        sock.setsockopt(socket.SOL_SOCKET, SO_ATTACH_FILTER, fprog)
    except OSError as exc:
        raise RdmaspyError(f"the kernel refused the capture filter: {exc.strerror or exc}") from None
