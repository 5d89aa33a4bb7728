"""The host pair a parallel export shards by: both ways of a conversation give one key, other pairs
another; frames that name no hosts give None; hostile bytes never raise."""
from __future__ import annotations

import ipaddress

from hypothesis import given
from hypothesis import strategies as st

from rdmaspy import craft
from rdmaspy.dissectors.hostpair import LINKTYPE_ETHERNET, LINKTYPE_INFINIBAND, host_pair


def _ip(a: str) -> bytes:
    return ipaddress.ip_address(a).packed


def test_rocev2_ipv4_both_ways_one_key():
    there = craft.rocev2(0x04, 0x11, 1, b"x", src="10.0.0.1", dst="10.0.0.2")
    back = craft.rocev2(0x11, 0x12, 1, src="10.0.0.2", dst="10.0.0.1", syndrome=0x1F, msn=1)
    other = craft.rocev2(0x04, 0x11, 1, b"x", src="10.0.0.1", dst="10.0.0.3")
    key = host_pair(LINKTYPE_ETHERNET, there)
    assert key == host_pair(LINKTYPE_ETHERNET, back) == _ip("10.0.0.1") + _ip("10.0.0.2")
    assert host_pair(LINKTYPE_ETHERNET, other) != key


def test_vlan_ipv6_and_rocev1_give_their_addresses():
    v6 = craft.rocev2(0x04, 0x11, 1, b"x", ip=6, src="2001:db8::9", dst="2001:db8::1", vlan=5)
    assert host_pair(LINKTYPE_ETHERNET, v6) == _ip("2001:db8::1") + _ip("2001:db8::9")
    v1 = craft.rocev1(0x04, 0x11, 1, b"x", sgid="fe80::2", dgid="fe80::1")
    assert host_pair(LINKTYPE_ETHERNET, v1) == _ip("fe80::1") + _ip("fe80::2")


def test_native_infiniband_by_lids():
    a = craft.native_ib(0x04, 0x11, 1, b"x", slid=0x12, dlid=0x34)
    b = craft.native_ib(0x11, 0x11, 1, slid=0x34, dlid=0x12, syndrome=0x1F, msn=1)
    assert host_pair(LINKTYPE_INFINIBAND, a) == host_pair(LINKTYPE_INFINIBAND, b) == b"\x00\x12\x00\x34"


def test_frames_without_hosts_give_none():
    arp = bytes(12) + b"\x08\x06" + bytes(28)
    assert host_pair(LINKTYPE_ETHERNET, arp) is None
    assert host_pair(LINKTYPE_ETHERNET, craft.rocev2(0x04)[:30]) is None      # cut inside the IP header
    assert host_pair(276, craft.rocev2(0x04)) is None                           # a link type without addresses


@given(st.integers(0, 300), st.binary(max_size=80))
def test_hostile_bytes_never_raise(linktype, data):
    key = host_pair(linktype, data)
    assert key is None or isinstance(key, bytes)
