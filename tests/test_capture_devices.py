"""RDMA device -> netdev resolution and the interface listing, against fake sysfs trees."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from rdmaspy.capture import devices
from rdmaspy.errors import RdmaspyError


def _file(root, rel: str, text: str) -> None:
    p = root / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text + "\n")


def _gid(root, dev: str, port: int, idx: int, ndev: str | None) -> None:
    d = root / "class" / "infiniband" / dev / "ports" / str(port) / "gid_attrs" / "ndevs"
    d.mkdir(parents=True, exist_ok=True)
    # A real unused slot fails to read (EINVAL); a directory stands in for an unreadable entry here.
    if ndev is None:
        (d / str(idx)).mkdir()
    else:
        (d / str(idx)).write_text(ndev + "\n")


@pytest.fixture
def sysfs(tmp_path):
    root = tmp_path / "sys"
    # rxe0 on eth3: GIDs 0 and 1 (link-local and IPv4-mapped) both name eth3, 2 unused
    for i in (0, 1):
        _gid(root, "rxe0", 1, i, "eth3")
    _gid(root, "rxe0", 1, 2, None)
    _file(root, "class/infiniband/rxe0/ports/1/link_layer", "Ethernet")
    # mlx5_1: two ports, the first with a VLAN upper device after its own netdev
    _gid(root, "mlx5_1", 1, 0, "ens1f0")
    _gid(root, "mlx5_1", 1, 1, "ens1f0")
    _gid(root, "mlx5_1", 1, 2, "ens1f0.100")
    _gid(root, "mlx5_1", 2, 0, "ens1f1")
    for p in (1, 2):
        _file(root, f"class/infiniband/mlx5_1/ports/{p}/link_layer", "Ethernet")
    # mlx4_0: native InfiniBand, no netdev
    (root / "class/infiniband/mlx4_0/ports/1/gid_attrs/ndevs").mkdir(parents=True)
    _file(root, "class/infiniband/mlx4_0/ports/1/link_layer", "InfiniBand")
    # siw_lo: Ethernet link layer but its netdev is gone
    _file(root, "class/infiniband/siw_gone/ports/1/link_layer", "Ethernet")
    # a device publishing no GID names but linking its PCI function's netdev
    _file(root, "class/infiniband/bnxt_re0/ports/1/link_layer", "Ethernet")
    (root / "class/infiniband/bnxt_re0/device/net/enp3s0").mkdir(parents=True)
    return root


NETDEVS = {"eth3", "ens1f0", "ens1f0.100", "ens1f1", "enp3s0", "lo"}


def exists(name: str) -> bool:
    return name in NETDEVS


def test_rxe_resolves_to_its_netdev_and_says_so(sysfs):
    r = devices.resolve("rxe0", str(sysfs), exists)
    assert (r.netdev, r.rdma) == ("eth3", "rxe0")
    assert r.note == "RDMA device rxe0 port 1 runs on netdev eth3: capturing on eth3"


def test_first_port_own_netdev_is_chosen_and_the_others_named(sysfs):
    r = devices.resolve("mlx5_1", str(sysfs), exists)
    assert r.netdev == "ens1f0"
    assert "also uses ens1f0.100, ens1f1" in r.note


def test_netdev_named_by_the_pci_device_when_no_gid_names_one(sysfs):
    assert devices.resolve("bnxt_re0", str(sysfs), exists).netdev == "enp3s0"


def test_netdev_names_pass_through(sysfs):
    assert devices.resolve("ens1f1", str(sysfs), exists) == devices.Resolved("ens1f1")
    assert devices.resolve("any", str(sysfs), exists).netdev == "any"


@pytest.mark.parametrize("name, message", [
    ("mlx4_0", "RDMA device mlx4_0 is InfiniBand, which has no netdev"),
    ("siw_gone", "RDMA device siw_gone has no netdev"),
    ("rxe9", "no such interface: rxe9"),
])
def test_errors_name_the_problem(sysfs, name, message):
    with pytest.raises(RdmaspyError, match=message):
        devices.resolve(name, str(sysfs), exists)


def test_netdev_of_another_namespace(sysfs):
    with pytest.raises(RdmaspyError, match="eth3, which is not in this network namespace"):
        devices.resolve("rxe0", str(sysfs), lambda n: False)


def test_rdma_devices_reads_every_port(sysfs):
    devs = {d.name: d for d in devices.rdma_devices(str(sysfs))}
    assert devs["mlx5_1"].netdevs == {1: ["ens1f0", "ens1f0.100"], 2: ["ens1f1"]}
    assert devs["rxe0"].netdevs == {1: ["eth3"]}
    assert devs["mlx4_0"].netdevs == {} and devs["mlx4_0"].link_layers == {1: "InfiniBand"}
    assert devices.rdma_devices(str(sysfs / "nothing")) == []


def test_listing_shows_rdma_devices_with_their_netdevs(sysfs):
    lines = devices.listing(str(sysfs))
    assert lines[0].split(".", 1)[1].startswith("lo [Loopback")
    rdma = [ln.split(".", 1)[1] for ln in lines if "RDMA device" in ln]
    assert rdma == [
        "bnxt_re0 (RDMA device on port 1: enp3s0)",
        "mlx4_0 (RDMA device, InfiniBand, no netdev)",
        "mlx5_1 (RDMA device on port 1: ens1f0, ens1f0.100; port 2: ens1f1)",
        "rxe0 (RDMA device on port 1: eth3)",
        "siw_gone (RDMA device, Ethernet, no netdev)",
    ]
    assert [int(ln.split(".", 1)[0]) for ln in lines] == list(range(1, len(lines) + 1))
    assert any(ln.split(".", 1)[1].startswith("any (") for ln in lines)


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "rdmaspy", "capture", *args], capture_output=True, text=True,
                          env={**os.environ, "LC_ALL": "C"})


def test_cli_lists_devices_from_the_given_sysfs(sysfs):
    r = _cli("-D", "--sysfs", str(sysfs))
    assert r.returncode == 0
    assert "rxe0 (RDMA device on port 1: eth3)" in r.stdout


def test_cli_rdma_device_without_netdev_is_one_line(sysfs):
    r = _cli("-i", "mlx4_0", "--sysfs", str(sysfs))
    assert r.returncode == 1
    assert r.stderr.strip().splitlines() == [
        "rdmaspy: error: RDMA device mlx4_0 is InfiniBand, which has no netdev to capture on (capture native "
        "InfiniBand with a tool such as ibdump)"]


def test_cli_without_interface_and_several_devices_asks_for_one(sysfs):
    r = _cli("--sysfs", str(sysfs))
    assert r.returncode == 1 and "choose an interface with -i" in r.stderr and "Traceback" not in r.stderr
