"""Which interface to open: netdevs, RDMA devices and the netdevs they run on.

An RDMA device of the Ethernet link layer (rxe, siw, RoCE NICs) sends its packets
through a netdev; sysfs names it for every GID in
``/sys/class/infiniband/<dev>/ports/<port>/gid_attrs/ndevs/<index>``.  The sysfs root
is a parameter so that tests can build a fake tree.
"""
from __future__ import annotations

import fcntl
import os
import socket
import struct
from dataclasses import dataclass, field

from ..errors import RdmaspyError

ANY = "any"
IFF_UP = 0x1
IFF_LOOPBACK = 0x8
IFF_RUNNING = 0x40
SIOCGIFFLAGS = 0x8913


@dataclass
class RdmaDevice:
    name: str
    netdevs: dict[int, list[str]] = field(default_factory=dict)   # port -> netdevs, GID index order
    link_layers: dict[int, str] = field(default_factory=dict)     # port -> "Ethernet" / "InfiniBand"

    def all_netdevs(self) -> list[str]:
        seen: list[str] = []
        for port in sorted(self.netdevs):
            for n in self.netdevs[port]:
                if n not in seen:
                    seen.append(n)
        return seen


def _read(path: str) -> str | None:
    try:
        with open(path) as f:
            return f.read().strip()
    except OSError:        # an unused GID slot answers EINVAL; a missing file ENOENT
        return None


def rdma_devices(sysfs: str = "/sys") -> list[RdmaDevice]:
    base = os.path.join(sysfs, "class", "infiniband")
    try:
        names = sorted(os.listdir(base))
    except OSError:
        return []
    devs = []
    for name in names:
        dev = RdmaDevice(name)
        ports_dir = os.path.join(base, name, "ports")
        try:
            ports = sorted(int(p) for p in os.listdir(ports_dir) if p.isdigit())
        except OSError:
            ports = []
        for port in ports:
            pdir = os.path.join(ports_dir, str(port))
            dev.link_layers[port] = _read(os.path.join(pdir, "link_layer")) or ""
            ndir = os.path.join(pdir, "gid_attrs", "ndevs")
            try:
                idx = sorted(int(i) for i in os.listdir(ndir) if i.isdigit())
            except OSError:
                idx = []
            found: list[str] = []
            for i in idx:
                n = _read(os.path.join(ndir, str(i)))
                if n and n not in found:
                    found.append(n)
            if not found:
                # Devices that publish no GID table yet still link their PCI function's netdevs.
                try:
                    found = sorted(os.listdir(os.path.join(base, name, "device", "net")))
                except OSError:
                    pass
            if found:
                dev.netdevs[port] = found
        devs.append(dev)
    return devs


def netdev_names() -> list[tuple[int, str]]:
    """(ifindex, name) of the network interfaces of this network namespace."""
    return sorted(socket.if_nameindex())


def netdev_exists(name: str) -> bool:
    try:
        socket.if_nametoindex(name)
        return True
    except OSError:
        return False


@dataclass
class Resolved:
    netdev: str
    rdma: str | None = None           # the RDMA device asked for, when one was
    note: str | None = None           # what the user should know about the choice


def resolve(name: str, sysfs: str = "/sys", exists=netdev_exists) -> Resolved:
    """Map what the user typed after ``-i`` to the netdev to open."""
    if name == ANY or exists(name):
        return Resolved(name)
    for dev in rdma_devices(sysfs):
        if dev.name != name:
            continue
        if not dev.netdevs:
            layers = {v for v in dev.link_layers.values() if v}
            if layers == {"InfiniBand"}:
                raise RdmaspyError(f"RDMA device {name} is InfiniBand, which has no netdev to capture on "
                                   f"(capture native InfiniBand with a tool such as ibdump)")
            raise RdmaspyError(f"RDMA device {name} has no netdev (no GID names one in "
                               f"{sysfs}/class/infiniband/{name}/ports/*/gid_attrs/ndevs)")
        # The first GID of the lowest port is the port's own netdev (upper devices such as VLANs come later).
        port = min(dev.netdevs)
        chosen = dev.netdevs[port][0]
        others = [n for n in dev.all_netdevs() if n != chosen]
        note = f"RDMA device {name} port {port} runs on netdev {chosen}: capturing on {chosen}"
        if others:
            note += f" (it also uses {', '.join(others)})"
        if not exists(chosen):
            raise RdmaspyError(f"RDMA device {name} runs on netdev {chosen}, which is not in this network namespace")
        return Resolved(chosen, name, note)
    raise RdmaspyError(f"no such interface: {name} (neither a netdev nor an RDMA device; list them with "
                       f"'rdmaspy capture -D')")


def _flags(name: str) -> int:
    """SIOCGIFFLAGS: the kernel's view in this network namespace (sysfs may show another one)."""
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            req = fcntl.ioctl(s.fileno(), SIOCGIFFLAGS, struct.pack("16sH14x", name.encode()[:15], 0))
        return struct.unpack_from("16xH", req)[0]
    except OSError:
        return 0


def listing(sysfs: str = "/sys") -> list[str]:
    """Lines in the manner of ``tcpdump -D``: numbered interfaces, then RDMA devices with their netdevs."""
    rdma = rdma_devices(sysfs)
    users: dict[str, list[str]] = {}
    for dev in rdma:
        for n in dev.all_netdevs():
            users.setdefault(n, []).append(dev.name)
    lines = []
    i = 0
    for _idx, name in netdev_names():
        i += 1
        fl = _flags(name)
        tags = []
        if fl & IFF_LOOPBACK:
            tags.append("Loopback")
        tags.append("Up" if fl & IFF_UP else "Down")
        if fl & IFF_RUNNING:
            tags.append("Running")
        if name in users:
            tags.append("RDMA " + ",".join(users[name]))
        lines.append(f"{i}.{name} [{', '.join(tags)}]")
    i += 1
    lines.append(f"{i}.any (Pseudo-device that captures on all interfaces) [Up, Running]")
    for dev in rdma:
        i += 1
        if dev.netdevs:
            ports = "; ".join(f"port {p}: {', '.join(n)}" for p, n in sorted(dev.netdevs.items()))
            lines.append(f"{i}.{dev.name} (RDMA device on {ports})")
        else:
            layers = ",".join(sorted({v for v in dev.link_layers.values() if v})) or "unknown link layer"
            lines.append(f"{i}.{dev.name} (RDMA device, {layers}, no netdev)")
    return lines
