"""The capture loop: drain the ring into pcapng files, feed the live display beside it.

The loop owns the ring and the files and never waits for the display: packets for
display go into a bounded queue that a separate thread decodes and prints; when the
display falls behind, packets are left out of the display (and counted), never out of
the file.  Stopping (signal, -c, -a) always ends with every received packet written
and an Interface Statistics Block in the file.
"""
from __future__ import annotations

import collections
import errno
import os
import signal
import socket
import struct
import sys
import threading
import time
from dataclasses import dataclass, field
from typing import Callable

from ..errors import RdmaspyError
from ..writers.pcapng import EPB_HEAD, PcapngWriter
from .ring import (PKT_HDR, PKT_HDR_SHORT, PKT_VLAN, TP_STATUS_VLAN_TPID_VALID, TP_STATUS_VLAN_VALID, Ring,
                   netdev_rx_dropped, sll_header)

_TAIL = tuple(struct.Struct(f"={pad}xI").pack for pad in range(4))    # padding, then the block's total length
_VLAN = struct.Struct(">HH")
DISPLAY_QUEUE = 20000
# Packets go to the file in chunks of this size, written by the loop itself: a chunk still in the
# CPU's cache is copied to the page cache at a fraction of the cost of a cold one, and a second
# thread would make the ring wait for the GIL on a busy machine.  (Below glibc's mmap threshold,
# so chunks come from the heap, not from a fresh mmap each.)
CHUNK = 64 << 10
# What reaches the disk is at most this old: a capture killed hard (SIGKILL, power) loses no more than
# the last FLUSH_EVERY of packets, plus those in the kernel's block not yet retired (Ring's retire_ms).
FLUSH_EVERY = 0.05


_BLOCK_HEAD = struct.Struct("=II")        # block type, total length (this host's byte order)


def _whole_blocks(blocks: memoryview, written: int) -> tuple[int, int]:
    """(bytes, Enhanced Packet Blocks) of the blocks that lie whole in the first ``written`` bytes."""
    pos = epbs = 0
    while pos + 8 <= written:
        btype, total = _BLOCK_HEAD.unpack_from(blocks, pos)
        if total < 12 or pos + total > written:
            break
        pos += total
        epbs += btype == 6
    return pos, epbs


class BlockFile:
    """The output file: blocks are gathered here and written whole, so the file on disk always ends on a
    block boundary.  A write that fails (a full disk) cuts the file back to the last block written whole.

    Opened without following a final symbolic link (O_NOFOLLOW): run as root, ``-w`` must not overwrite
    whatever a link planted in a shared directory points to.
    """

    def __init__(self, name: str) -> None:
        self.name = name
        if name == "-":
            self.fd = sys.stdout.fileno()
            self.owned = False
        else:
            flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC
            try:
                self.fd = os.open(name, flags, 0o644)
            except OSError as exc:
                if exc.errno == errno.ELOOP:
                    raise RdmaspyError(f"{name}: cannot write: it is a symbolic link, which capture does not "
                                       f"follow (name the file itself)") from None
                raise RdmaspyError(f"{name}: cannot write: {exc.strerror or exc}") from None
            self.owned = True
        self.parts: list[bytes | bytearray] = []     # gathered blocks, written in one go
        self.pending = 0               # their bytes
        self.on_disk = 0               # bytes written whole
        self.kept_epbs = 0             # after a failed write: the packets of it that are on disk whole
        self.flushed_at = time.monotonic()

    def write(self, data: bytes | bytearray | memoryview) -> None:
        # Kept as given, not copied (a batch of blocks is written as it came); a view into the capture
        # ring is copied, since the ring's block goes back to the kernel before the write.
        self.parts.append(bytes(data) if isinstance(data, memoryview) else data)
        self.pending += len(data)

    def flush(self) -> None:
        """Write what is gathered; on failure the file is cut back to its last whole block, then the error."""
        self.flushed_at = time.monotonic()
        if not self.parts:
            return
        data = self.parts[0] if len(self.parts) == 1 else b"".join(self.parts)
        self.parts = []
        self.pending = 0
        view = memoryview(data)
        done = 0
        try:
            while done < len(view):
                done += os.write(self.fd, view[done:])
        except OSError:
            whole, self.kept_epbs = _whole_blocks(view, done)
            view.release()
            if self.owned:
                try:
                    os.ftruncate(self.fd, self.on_disk + whole)
                except OSError:
                    pass
            self.on_disk += whole
            raise
        view.release()
        self.on_disk += done

    def close(self) -> None:
        try:
            self.flush()
        finally:
            if self.owned:
                os.close(self.fd)


@dataclass
class Limits:
    count: int | None = None          # -c: packets
    duration: float | None = None     # -a duration:S
    filesize: int | None = None       # -a filesize: bytes of one file
    files: int | None = None          # -a files:N (with a ring buffer)


@dataclass
class RingBuffer:
    filesize: int | None = None       # -b filesize: bytes per file
    files: int | None = None          # -b files:N kept on disk
    duration: float | None = None     # -b duration:S per file


@dataclass
class Summary:
    captured: int = 0                 # taken from the ring
    written: int = 0
    received: int = 0                 # passed the filter (kernel count, drops included)
    kernel_dropped: int = 0
    display_dropped: int = 0
    files: list[str] = field(default_factory=list)
    error: str | None = None

    @property
    def rdmaspy_dropped(self) -> int:
        return self.captured - self.written if self.files else 0


class FileSet:
    """-w FILE, optionally as a ring buffer of files named like dumpcap's (``out_00001_20260101120000.pcapng``)."""

    def __init__(self, path: str, ring: Ring, iface_desc: str | None, filter_text: str | None,
                 rb: RingBuffer, limits: Limits) -> None:
        self.path = path
        self.ring = ring
        self.desc = iface_desc
        self.filter_text = filter_text
        self.rb = rb
        self.limits = limits
        self.rotating = bool(rb.filesize or rb.files or rb.duration)
        if path == "-" and self.rotating:
            raise RdmaspyError("a ring buffer (-b) needs a file name, not '-'")
        self.seq = 0
        self.kept: collections.deque[str] = collections.deque()
        self.all_files: list[str] = []
        self.writer: PcapngWriter | None = None
        self.file: BlockFile | None = None
        self.file_packets = 0          # handed to the current file
        self.disk_packets = 0          # of those, in blocks written whole
        self.lost = 0                  # handed over but never on disk (write errors)
        self.opened_at = 0.0
        self.written_total = 0
        self.ifdrop0 = netdev_rx_dropped(ring.ifname)
        base, ext = os.path.splitext(path)
        self._base, self._ext = base, ext or ".pcapng"
        if path != "-":
            d = os.path.dirname(os.path.abspath(path))
            if not os.path.isdir(d):
                raise RdmaspyError(f"{path}: cannot write: no such directory {d}")
            if os.path.isdir(path):
                raise RdmaspyError(f"{path}: cannot write: is a directory")
        self.open_next()

    @property
    def size_limit(self) -> int | None:
        """Bytes after which the current file ends (rotation, or the end of the capture)."""
        a, b = self.limits.filesize, self.rb.filesize
        return min(x for x in (a, b) if x) if (a or b) else None

    def open_next(self) -> None:
        self.seq += 1
        name = self.path
        if self.rotating:
            name = f"{self._base}_{self.seq:05d}_{time.strftime('%Y%m%d%H%M%S')}{self._ext}"
        target = self.file = BlockFile(name)
        w = PcapngWriter(target)  # type: ignore[arg-type]
        w.add_interface(self.ring.linktype, self.ring.snaplen, name=self.ring.ifname, description=self.desc,
                        filter=self.filter_text, tsresol=9, os_name=None)
        self.writer = w
        self.opened_at = time.monotonic()
        try:
            self.flush()
        except OSError as exc:
            raise RdmaspyError(f"{name}: write failed: {exc.strerror or exc}") from None
        if name != "-":
            self.all_files.append(name)
            self.kept.append(name)
            if self.rb.files:
                while len(self.kept) > self.rb.files:
                    old = self.kept.popleft()
                    try:
                        os.unlink(old)
                    except OSError:
                        pass

    def close_current(self) -> None:
        w = self.writer
        if w is None:
            return
        recv, drops = self.ring.stats()
        ifdrop = None
        if self.ifdrop0 is not None:
            now = netdev_rx_dropped(self.ring.ifname)
            ifdrop = None if now is None else max(0, now - self.ifdrop0)
        end = time.time_ns()
        self.writer = None
        f, self.file = self.file, None
        try:
            self.flush(f)
            w.write_stats(0, end, ifrecv=recv, ifdrop=ifdrop, filteraccept=recv, osdrop=drops,
                          usrdeliv=self.written_total, starttime_ns=self.ring.start_ns, endtime_ns=end)
            w.close()
            if f is not None:
                f.close()
        except OSError as exc:
            if f is not None and f.owned:
                try:
                    os.close(f.fd)
                except OSError:
                    pass
            raise RdmaspyError(f"{w.path}: write failed: {exc.strerror or exc}") from None
        finally:
            # packets given to the file but not in it are rdmaspy's drops
            self.lost += self.file_packets - self.disk_packets
            self.file_packets = self.disk_packets = 0

    def flush(self, f: BlockFile | None = None) -> None:
        """Write the gathered blocks (raises OSError when the disk refuses them)."""
        f = f or self.file
        if f is None:
            return
        try:
            f.flush()
        except OSError:
            # what the failed write held beyond its whole blocks is gone: rdmaspy's drops
            self.disk_packets += f.kept_epbs
            self.lost += self.file_packets - self.disk_packets
            self.file_packets = self.disk_packets
            raise
        self.disk_packets = self.file_packets

    def flush_due(self) -> bool:
        f = self.file
        return f is not None and f.pending > 0 and time.monotonic() - f.flushed_at >= FLUSH_EVERY


class LiveCapture:
    def __init__(self, ring: Ring, files: FileSet | None, limits: Limits,
                 display: Callable[[int, int, bytes, int], None] | None = None,
                 display_flush: Callable[[], None] | None = None, display_queue: int = DISPLAY_QUEUE) -> None:
        self.ring = ring
        self.files = files
        self.limits = limits
        self.display = display
        self.display_flush = display_flush
        self.summary = Summary()
        self._stop = False
        self._limit_hit = False
        self._queue: collections.deque = collections.deque()
        self._wake = threading.Event()
        self._display_done = threading.Event()
        self.display_queue = display_queue

    # -- signals ---------------------------------------------------------------------------------------------
    def request_stop(self, *_a: object) -> None:
        self._stop = True

    # -- display thread --------------------------------------------------------------------------------------
    def _display_loop(self) -> None:
        q, wake, show = self._queue, self._wake, self.display
        assert show is not None
        try:
            while True:
                if not q:
                    if self._display_done.is_set():
                        return
                    if self.display_flush:
                        self.display_flush()
                    wake.wait(0.1)
                    wake.clear()
                    continue
                num, ts, data, wirelen = q.popleft()
                show(num, ts, data, wirelen)
        finally:
            if self.display_flush:
                try:
                    self.display_flush()
                except (BrokenPipeError, OSError):
                    pass

    # -- main loop ---------------------------------------------------------------------------------------------
    def run(self) -> Summary:
        ring, lim, s = self.ring, self.limits, self.summary
        rfd, wfd = socket.socketpair()
        rfd.setblocking(False)
        wfd.setblocking(False)
        # Signals reach only the main thread: run elsewhere (under the TUI), the caller stops the
        # capture with request_stop() and the loop sees it within one wait of the ring.
        in_main = threading.current_thread() is threading.main_thread()
        old_handlers = {sig: signal.signal(sig, self.request_stop)
                        for sig in (signal.SIGINT, signal.SIGTERM)} if in_main else {}
        old_wakeup = signal.set_wakeup_fd(wfd.fileno()) if in_main else -1
        old_switch = sys.getswitchinterval()
        # The display thread takes the GIL when this loop sleeps in poll(); a short forced switch
        # would leave the ring waiting for that thread's turn on a busy CPU.
        sys.setswitchinterval(0.05)
        thread = None
        if self.display is not None:
            thread = threading.Thread(target=self._display_loop, name="rdmaspy-display", daemon=True)
            thread.start()
        deadline = time.monotonic() + lim.duration if lim.duration else None
        per_file = self.files.rb.duration if self.files is not None else None
        try:
            while not self._stop:
                now = time.monotonic()
                if deadline is not None and now >= deadline:
                    break
                if per_file and self.files is not None and now >= self.files.opened_at + per_file:
                    try:
                        self._rotate()
                    except RdmaspyError as exc:
                        s.error = str(exc)
                        break
                    continue
                i = ring.ready()
                if i is None:
                    if not self._flush_file():     # idle: what is gathered goes to disk before the wait
                        break
                    timeout = 0.5
                    if deadline is not None:
                        timeout = min(timeout, deadline - now)
                    if per_file and self.files is not None:
                        timeout = min(timeout, self.files.opened_at + per_file - now)
                    try:
                        woken = ring.wait(max(timeout, 0.001), (rfd.fileno(),))
                    except RdmaspyError as exc:
                        s.error = str(exc)
                        self._take_ready()           # what the ring still holds goes into the file
                        break
                    if rfd.fileno() in woken:
                        try:
                            rfd.recv(64)
                        except BlockingIOError:
                            pass
                    continue
                self._consume(i)
            # A stop request or the duration: every packet the kernel took in goes into the file.
            # A -c/-a limit or a write error ended the capture where it stands.
            if not self._limit_hit and s.error is None:
                self._drain()
        finally:
            if in_main:
                signal.set_wakeup_fd(old_wakeup)
            sys.setswitchinterval(old_switch)
            for sig, h in old_handlers.items():
                signal.signal(sig, h)
            rfd.close()
            wfd.close()
            try:
                s.received, s.kernel_dropped = ring.stats()
                if self.files is not None:
                    self.files.close_current()
            except RdmaspyError as exc:
                s.error = s.error or str(exc)
            except OSError as exc:
                s.error = s.error or f"write failed: {exc.strerror or exc}"
            if thread is not None:
                self._display_done.set()
                self._wake.set()
                thread.join()
            if self.files is not None:
                s.files = list(self.files.kept)
                s.written -= self.files.lost
        return s

    def _drain(self) -> None:
        """Close the ring to new packets, then read until every packet the kernel counted has been taken."""
        ring, s = self.ring, self.summary
        ring.close_gate()
        give_up = time.monotonic() + 5.0
        while True:
            recv, drops = ring.stats()
            if s.captured >= recv - drops:
                # a packet in flight on another CPU when the gate closed shows in the next read
                time.sleep(0.002)
                recv2, drops2 = ring.stats()
                if s.captured >= recv2 - drops2:
                    return
                continue
            i = ring.ready()
            if i is None:
                if time.monotonic() > give_up:
                    return
                try:
                    ring.wait(0.2)
                except RdmaspyError as exc:
                    s.error = s.error or str(exc)
                    return
                continue
            if not self._consume(i, ignore_limits=True):
                return

    def _take_ready(self) -> None:
        while (i := self.ring.ready()) is not None:
            if not self._consume(i, ignore_limits=True):
                return

    def _rotate(self, ignore: bool = False) -> bool:
        """Next file of the ring buffer; False when -a files:N ends the capture instead."""
        f = self.files
        assert f is not None
        f.close_current()
        if not ignore and f.limits.files and f.seq >= f.limits.files:
            self._stop = self._limit_hit = True
            return False
        f.open_next()
        return True

    def _consume(self, i: int, ignore_limits: bool = False) -> bool:
        """Take one ready block; False when a limit ends the capture inside it."""
        ring, s = self.ring, self.summary
        base, n, first = ring.block(i)
        try:
            if self.files is not None and self.display is None and not ring.cooked:
                ok = self._block_to_file(base + first, n, ignore_limits)
            else:
                ok = self._block_general(base + first, n, ignore_limits)
        except OSError as exc:
            s.error = f"{self.files.writer.path if self.files and self.files.writer else 'output'}: " \
                      f"write failed: {exc.strerror or exc}"
            self._stop = True
            ok = False
        except RdmaspyError as exc:          # closing a full file of the ring buffer failed
            s.error = str(exc)
            self._stop = True
            ok = False
        ring.release(i)
        if ok and self.files is not None and self.files.flush_due():
            ok = self._flush_file()
        if self.display is not None:
            self._wake.set()
        return ok

    def _flush_file(self) -> bool:
        """Write the gathered blocks to disk; False (the capture ends) when the disk refuses them."""
        f = self.files
        if f is None or f.file is None or not f.file.pending:
            return True
        try:
            f.flush()
        except OSError as exc:
            self.summary.error = f"{f.file.name}: write failed: {exc.strerror or exc}"
            self._stop = True
            return False
        return True

    def _limits(self, ignore: bool) -> tuple[int, int]:
        """(packets left before -c, bytes left in the current file) — huge when unlimited."""
        big = 1 << 62
        left = big if ignore or not self.limits.count else self.limits.count - self.summary.captured
        f = self.files
        room = big
        if f is not None and f.writer is not None:
            lim = f.rb.filesize if ignore else f.size_limit
            if lim:
                room = lim - f.writer.bytes_written
        return left, room

    def _file_full(self, ignore: bool) -> bool:
        """The current file reached a size limit: rotate (True) or end the capture (False).

        While draining after a stop request nothing ends the capture: every packet the kernel
        counted goes into a file.
        """
        f = self.files
        assert f is not None and f.writer is not None
        stop_size = self.limits.filesize
        if stop_size and f.writer.bytes_written >= stop_size and not ignore:
            self._stop = self._limit_hit = True
            return False
        if f.rb.filesize:
            return self._rotate(ignore)
        if ignore:
            return True
        self._stop = self._limit_hit = True
        return False

    def _block_to_file(self, pos: int, n: int, ignore: bool) -> bool:
        """The hot path: Ethernet packets straight from the ring into Enhanced Packet Blocks."""
        view = self.ring.view
        unpack = PKT_HDR_SHORT.unpack_from
        pack = EPB_HEAD.pack
        tail = _TAIL
        s = self.summary
        left, room = self._limits(ignore)
        cut = min(room, CHUNK)
        buf = bytearray()
        k = 0
        while n:
            nxt, sec, nsec, snap, wlen, status, mac = unpack(view, pos)
            ts = sec * 1_000_000_000 + nsec
            start = pos + mac
            if status & TP_STATUS_VLAN_VALID:
                tci, tpid = PKT_VLAN.unpack_from(view, pos + 32)
                data: bytes | memoryview = _with_vlan(view, start, snap, status, tci, tpid)
                snap += 4
                wlen += 4
            else:
                data = view[start:start + snap]
            pos += nxt
            n -= 1
            k += 1
            pad = -snap & 3
            total = 32 + snap + pad
            buf += pack(6, total, 0, ts >> 32, ts & 0xFFFFFFFF, snap, wlen)
            buf += data
            buf += tail[pad](total)
            if k >= left or len(buf) >= cut:
                full = len(buf) >= room
                s.captured += k
                self._flush(buf, k)
                k = 0
                buf = bytearray()
                if not ignore and self.limits.count and s.captured >= self.limits.count:
                    self._stop = self._limit_hit = True
                    return False
                if full and not self._file_full(ignore):
                    return False
                left, room = self._limits(ignore)
                cut = min(room, CHUNK)
        if k:
            s.captured += k
            self._flush(buf, k)
        return True

    def _flush(self, buf: bytearray, k: int) -> None:
        f = self.files
        assert f is not None and f.writer is not None
        f.writer.write_epb_bytes(buf, k)
        f.written_total += k
        f.file_packets += k
        self.summary.written += k
        if f.file is not None and f.file.pending >= CHUNK:
            f.flush()

    def _block_general(self, pos: int, n: int, ignore: bool) -> bool:
        """Every other case: cooked (``any``) frames, the live display, or both with a file."""
        view = self.ring.view
        unpack = PKT_HDR.unpack_from
        cooked = self.ring.cooked
        s = self.summary
        f = self.files
        q = self._queue if self.display is not None else None
        qmax = self.display_queue
        left, room = self._limits(ignore)
        limit = f.writer.bytes_written + room if f is not None and f.writer is not None else 1 << 62
        for _ in range(n):
            nxt, sec, nsec, snap, wlen, status, mac, _net, _rx, tci, tpid = unpack(view, pos)
            ts = sec * 1_000_000_000 + nsec
            start = pos + mac
            if cooked:
                data: bytes | memoryview = sll_header(view, pos) + view[start:start + snap]
                snap += 16
                wlen += 16
            elif status & TP_STATUS_VLAN_VALID:
                data = _with_vlan(view, start, snap, status, tci, tpid)
                snap += 4
                wlen += 4
            else:
                data = view[start:start + snap]
            pos += nxt
            s.captured += 1
            if f is not None and f.writer is not None:
                f.writer.write_packet(0, ts, data, wlen)
                f.written_total += 1
                f.file_packets += 1
                s.written += 1
                if f.file is not None and f.file.pending >= CHUNK:
                    f.flush()
            if q is not None:
                if len(q) < qmax:
                    q.append((s.captured, ts, bytes(data), wlen))
                else:
                    s.display_dropped += 1
            left -= 1
            if left <= 0:
                self._stop = self._limit_hit = True
                return False
            if f is not None and f.writer is not None and f.writer.bytes_written >= limit:
                if not self._file_full(ignore):
                    return False
                left, room = self._limits(ignore)
                limit = f.writer.bytes_written + room if f.writer is not None else 1 << 62
        return True


def _with_vlan(view: memoryview, start: int, snap: int, status: int, tci: int, tpid: int) -> bytes:
    """Put back the 802.1Q tag the NIC (or the kernel) took off into the packet's metadata."""
    tag = _VLAN.pack(tpid if status & TP_STATUS_VLAN_TPID_VALID else 0x8100, tci)
    return bytes(view[start:start + 12]) + tag + bytes(view[start + 12:start + snap])
