"""NFSv4 attributes (rdmaspy.dissectors.nfs4_attrs): fattr4 decoded attribute by attribute, held to tshark
4.0 on every shipped NFSv4 capture and on a capture built with every declared attribute; hostile masks and
lengths stay claims; values round-trip.

On the real captures the fields only a fattr4 or an attribute bitmap shows are compared in every NFSv4
frame, whether or not every operation of the frame is declared yet (``test_nfs_tshark.py`` compares the
frames whose operations are all declared in full); the fields other operations show too (a LOOKUP's name is
an ``nfs.pathname.component``, EXCHANGE_ID's date an ``nfs.nfstime4``...) are held to be among tshark's.

Where tshark 4.0 is wrong the test names it and checks rdmaspy's value instead (``TSHARK_UNDECODED``,
``test_tshark_shows_each_fh_expire_type_flag_as_bit_0``).
"""
from __future__ import annotations

import importlib.util
import subprocess
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from conftest import CAPTURES, FIXTURES, require_tshark, tshark_fields
from rdmaspy import craft
from rdmaspy.dissectors import nfs4, nfs4_attrs as A, onc_rpc, rpcrdma, xdrlang as x
from rdmaspy.dissectors.xdr import XdrError, XdrInvalid, p32, popaque
from rdmaspy.engine import Engine
from rdmaspy.fieldview import layer_nodes
from rdmaspy.packet import Layer
from rdmaspy.readers import open_capture

import test_nfs_tshark as T
from xdr_strategies import attr_sets, values

V4_CAPTURES = ["rxe-nfsv42-rdma.pcap", "siw-nfsv41-rdma.pcap"] + sorted(
    f"nfs/{p.name}" for p in (CAPTURES / "nfs").glob("*-nfsv4*.pcap"))

# Fields a fattr4 or an attribute bitmap shows that operations not yet declared show too: compared as a
# subset (what rdmaspy shows, tshark shows), the others for equality.
# (An OPEN's delegation carries an nfsace4, CREATE a type and specdata4, LOOKUP and OPEN component4 names,
# EXCHANGE_ID an nfstime4, the pNFS operations layout types and lengths.)
SHARED = {"nfs.nfstime4.seconds", "nfs.nfstime4.nseconds", "nfs.pathname.component", "nfs.pathname.component.count",
          "nfs.nfs_ftype4", "nfs.specdata1", "nfs.specdata2", "nfs.layouttype", "nfs.length4", "nfs.fhandle",
          "nfs.fh.hash", "nfs.fh.length", "nfs.nfsstat4", "nfs.status", "nfs.server"} | {
    f.name for f in A.NFSACE4.fields()}

# Attributes tshark 4.0 has no dissector for ("Unknown dissector for bitmap attribute"): it shows their
# bytes and every byte after them in the fattr4 as nfs.bitmap_data and decodes nothing more of it.
TSHARK_UNDECODED = {60: "change_policy", 61: "fs_status", 63: "layout_hint", 64: "layout_type",
                    66: "layout_alignment", 67: "fs_locations_info", 69: "retention_get", 70: "retention_set",
                    71: "retentevt_get", 72: "retentevt_set", 73: "retention_hold", 74: "mode_set_masked"}


def attr_fields() -> set[str]:
    """The compared fields a fattr4 or a bitmap of attributes shows."""
    names = {f.name for f in A.FATTR4.fields()} | {f.name for f in A.BITMAP4.fields()}
    # less the names a filehandle attribute's handle is shown with: learnt from other frames, compared
    # with their own rules in test_nfs_tshark.py (_names_differ_as_named)
    return names & set(T.compared_fields()) - {"nfs.name", "nfs.full_name"}


def _their_values(row: dict[str, list[str]], names: set[str]) -> dict[str, set]:
    out = {k: {T._theirs(k, v) for v in vals} - {None, ""} for k, vals in row.items() if k in names and vals}
    return {k: v for k, v in out.items() if v}


@pytest.mark.parametrize("name", V4_CAPTURES)
def test_every_attribute_tshark_shows_rdmaspy_shows_in_every_v4_frame(name):
    theirs, ours, pkts = T.decoded(name)
    names = attr_fields()
    compared = 0
    seen: set[str] = set()
    for num, (row, mine, pkt) in enumerate(zip(theirs, ours, pkts), 1):
        info = (pkt.extra or {}).get("rpc")
        if info is None or info.prog != 100003 or info.vers != 4:
            continue
        if not any(row.get(k) for k in T.V4_COMPOUND):
            continue        # a call reduced by a Read list: tshark shows it where the RDMA READ completes it
        tv = _their_values(row, names)
        mv = {k: v for k, v in mine.items() if k in names}
        assert {k: v for k, v in mv.items() if k not in SHARED} == {k: v for k, v in tv.items() if k not in SHARED}, \
            f"{name} frame {num}"
        for k, v in mv.items():
            if k in SHARED:
                assert v <= tv.get(k, set()), f"{name} frame {num}: {k}"
        compared += bool(tv)
        seen |= set(mv)
    assert compared > 30
    # GETATTR replies, READDIR entries, SETATTR's times, OPEN's and CREATE's attributes, the ACLs
    assert {"nfs.attr", "nfs.fattr4.size", "nfs.mode", "nfs.fattr4_owner", "nfs.nfstime4.seconds",
            "nfs.fsid4.major", "nfs.fattr4.mounted_on_fileid"} <= seen, name
    if "full" in name:
        assert {"nfs.who", "nfs.acemask4", "nfs.ace_perm4", "nfs.set_it", "nfs.fhandle"} <= seen, name
    if "nfsv42" in name:
        assert {"nfs.fattr4.umask", "nfs.fattr4_xattr_support"} <= seen, name


# --- every attribute, built, against tshark -----------------------------------------------------------------
def _build_module():
    spec = importlib.util.spec_from_file_location("nfs_procs_build", FIXTURES / "nfs_procs_build.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


BUILD = _build_module()


def example(t: x.XdrType, variant: int) -> Any:
    """A value of an attribute's declaration, the same at every run (nfs_procs_build's, and the kinds of
    NFSv4's own)."""
    if isinstance(t, x.Tree):
        return example(t.item, variant)
    if isinstance(t, A.Bitmap4):
        return [0xFDFFBFFF, 0x40FDBE3E, 0x00060803][:variant + 2]
    if isinstance(t, A.AttrSet):
        return {a.name: example(a.decl, variant) for a in t.table.values()}
    if isinstance(t, x.Struct):
        return {k: example(m, variant) for k, m in t.members}
    if isinstance(t, x.Array):
        n = t.fixed if t.fixed is not None else min(2, t.bound if t.bound is not None else 2)
        return [example(t.item, variant + i) for i in range(n)]
    if isinstance(t, x.Union):
        d, arm = sorted(t.arms.items())[0] if variant % 2 == 0 else (0, t.default)
        return d, None if arm is None else example(arm, variant)
    return BUILD.example(t, variant)


def _frames(replies: list[dict[str, Any]]) -> list[tuple[int, bytes]]:
    """A GETATTR call and its reply carrying each fattr4 value, over one RPC-over-RDMA connection."""
    w = BUILD.Wire()
    w.cm()
    cred = onc_rpc.encode_auth_sys(0, "client", 0, 0)
    for i, value in enumerate(replies):
        xid = 0x46415400 + i
        mask = x.encode(A.BITMAP4, A._mask(sorted(A.FATTR4_BODY.by_name[k].number for k in value)))
        call = popaque(b"") + p32(2, 2, 24, 9) + mask                 # PUTROOTFH, GETATTR
        w.send(BUILD.CLIENT, rpcrdma.encode_v1(xid, 0, 32, payload=onc_rpc.encode_call(xid, 100003, 4, 1, call, cred)))
        res = p32(0) + popaque(b"") + p32(2, 24, 0, 9, 0) + x.encode(A.FATTR4, value)
        w.send(BUILD.SERVER, rpcrdma.encode_v1(xid, 0, 32, payload=onc_rpc.encode_reply(xid, res)))
    return w.out()


def _compare(path: Path) -> tuple[list[dict[str, set]], list[dict[str, set]]]:
    fields = T.compared_fields()
    rows = tshark_fields(path, fields)
    engine = Engine(strict=True)
    ours = []
    with open_capture(str(path)) as cap:
        for frame in cap:
            ours.append(T.our_values(engine.dissect(frame), set(fields)))
    return [_their_values(r, set(fields)) for r in rows], ours


@pytest.fixture(scope="module")
def every_attribute(tmp_path_factory):
    """Each attribute alone in two replies (values of two variants: both arms of settime4, true and false),
    then every attribute tshark decodes in one reply; tshark's values and rdmaspy's, frame by frame."""
    replies = [{a.name: example(a.decl, v)} for a in A.ATTRS.values() for v in (0, 1)]
    replies.append({a.name: example(a.decl, 0) for n, a in A.ATTRS.items() if n not in TSHARK_UNDECODED})
    path = tmp_path_factory.mktemp("attrs") / "nfs4_attrs.pcap"
    craft.write_pcap(str(path), _frames(replies))
    theirs, ours = _compare(path)
    return replies, [(t, o) for t, o in zip(theirs, ours) if "nfs.procedure_v4" in o]


def test_every_declared_attribute_has_tsharks_values(every_attribute):
    replies, frames = every_attribute
    assert len(frames) == 2 * len(replies)            # a GETATTR call and its reply for each
    checked = undecoded = 0
    for i, (tv, mine) in enumerate(frames):
        value = replies[i // 2]
        numbers = sorted(A.FATTR4_BODY.by_name[k].number for k in value)
        if i % 2 and len(numbers) == 1 and numbers[0] in TSHARK_UNDECODED:
            # tshark: "Unknown dissector for bitmap attribute", the value's bytes as nfs.bitmap_data;
            # rdmaspy decodes the value and leaves no byte undecoded
            attr = A.ATTRS[numbers[0]]
            assert tv["nfs.bitmap_data"] == {x.encode(attr.decl, value[attr.name])}, attr.name
            assert "nfs.bitmap_data" not in mine and mine["nfs.attr"] == {numbers[0]}, attr.name
            undecoded += 1
            continue
        assert mine == tv, (i, sorted(value))
        checked += i % 2
    assert undecoded == 2 * len(TSHARK_UNDECODED) and checked == len(replies) - undecoded


def test_the_table_names_what_tshark_names():
    """nfs.attr's names and the enumerations' are tshark's (``tshark -G values``)."""
    out = subprocess.run([require_tshark(), "-G", "values"], capture_output=True, text=True, check=True).stdout
    names: dict[str, dict[int, str]] = {}
    for line in out.splitlines():
        cols = line.split("\t")
        if cols[0] == "V" and len(cols) > 3 and cols[1].startswith("nfs."):
            names.setdefault(cols[1], {})[int(cols[2], 0)] = cols[3]
    assert A.ATTR_NAMES == names["nfs.attr"]
    for f in ("nfs.acetype4", "nfs.layouttype", "nfs.nfs_ftype4", "nfs.fattr4.change_attr_type",
              "nfs.fattr4.threshold_item.hint"):
        ours = {f_.name: f_ for f_ in A.FATTR4.fields()}[f].names
        assert ours == names[f], f
    # every attribute RFC 7530, 8881, 7862, 8275 and 8276 define, and those tshark 4.0 knows past them
    assert sorted(A.ATTRS) == list(range(86)) and all(n in A.ATTR_NAMES for n in A.ATTRS if n != 57)


def test_tshark_shows_each_fh_expire_type_flag_as_bit_0(tmp_path):
    """tshark 4.0 is wrong here: it shows each of fh_expire_type's four flags as the value's bit 0
    (FH4_VOLATILE_ANY, 0x2, comes out as four falses); rdmaspy shows each flag's own bit."""
    path = tmp_path / "expire.pcap"
    craft.write_pcap(str(path), _frames([{"fh_expire_type": 0x2}, {"fh_expire_type": 0x1}]))
    theirs, ours = _compare(path)
    flags = [f"nfs.fattr4_fh_expire_type.{n}" for n in ("noexpire_with_open", "volatile_any", "vol_migration",
                                                        "vol_rename")]
    replies = [(t, o) for t, o in zip(theirs, ours) if "nfs.fattr4_fh_expire_type" in o]
    (t2, o2), (t1, o1) = replies
    assert [t2[f] for f in flags] == [{0}] * 4 and [o2[f] for f in flags] == [{0}, {1}, {0}, {0}]
    assert [t1[f] for f in flags] == [{1}] * 4 and [o1[f] for f in flags] == [{1}, {0}, {0}, {0}]


# --- hostile masks and lengths --------------------------------------------------------------------------------
def _shown(t: x.XdrType, raw: bytes) -> tuple[Any, int, dict[str, list], Layer]:
    lay = Layer("nfs", None, raw, 0, len(raw))
    value, end = x.decode(t, raw, lay=lay)
    seen: dict[str, list] = {}
    for _d, item, v, off, length in layer_nodes(lay):
        if not isinstance(item, Layer):
            seen.setdefault(item.name, []).append((v, off, length))
    return value, end, seen, lay


AFTER = x.struct("fattr4_then", ("attrs", A.FATTR4), ("next", x.uint32("nfs.count4")))


def test_an_undeclared_attribute_ends_the_walk_with_a_reason_and_decoding_goes_on():
    vals = p32(2) + p32(7, 7)                       # type, then attribute 90 (no declaration)
    raw = p32(3, 0x2, 0, 1 << 26) + popaque(vals) + p32(99)
    value, end, seen, _ = _shown(AFTER, raw)
    assert value == {"attrs": {"type": 2}, "next": 99} and end == len(raw)
    assert [v for v, *_ in seen["nfs.attr"]] == [1, 90]
    assert seen["nfs.fattr4.undecoded"][0][0] == "attribute 90 is not declared: 8 bytes not decoded"
    assert seen["nfs.bitmap_data"] == [(p32(7, 7), 24, 8)]


def test_a_value_past_attr_vals_is_malformed_there_and_decoding_goes_on():
    raw = p32(1, 0x12) + popaque(p32(2, 0)) + p32(5)       # type, then size: 8 bytes wanted, 4 left
    value, end, seen, _ = _shown(AFTER, raw)
    assert value == {"attrs": {"type": 2}, "next": 5} and end == len(raw)
    assert "size" in seen["nfs.malformed"][0][0] and seen["nfs.bitmap_data"][0][0] == p32(0)
    assert "nfs.fattr4.size" not in seen


def test_a_count_inside_a_value_is_a_claim():
    raw = p32(1, 1 << 12) + popaque(p32(0x7FFFFFFF)) + p32(5)   # an ACL of 2**31 ACEs in 4 bytes
    value, end, seen, _ = _shown(AFTER, raw)
    assert value == {"attrs": {}, "next": 5} and end == len(raw) and "nfs.num_aces" in seen["nfs.malformed"][0][0]


def test_attr_vals_longer_than_the_message_is_refused():
    with pytest.raises(XdrError):
        x.decode(A.FATTR4, p32(1, 2) + p32(0xFFFFFFF0) + p32(1))
    with pytest.raises(XdrError):
        x.skip(A.FATTR4, p32(1, 2) + p32(0xFFFFFFF0) + p32(1))


def test_bytes_after_the_last_attribute_are_shown_undecoded():
    value, end, seen, _ = _shown(A.FATTR4, p32(1, 2) + popaque(p32(1, 0xAB)))
    assert value == {"type": 1} and seen["nfs.bitmap_data"][0][0] == p32(0xAB)
    assert seen["nfs.fattr4.undecoded"][0][0] == "4 bytes after the last attribute"


def test_a_mask_of_more_than_100_words_is_refused_as_tshark_refuses_it():
    x.decode(A.BITMAP4, p32(100) + b"\0" * 400)
    for t in (A.BITMAP4, A.FATTR4):
        with pytest.raises(XdrInvalid, match="over its bound 100"):
            x.decode(t, p32(101) + b"\0" * 404 + p32(0))
        with pytest.raises(XdrInvalid, match="over its bound 100"):
            x.skip(t, p32(101) + b"\0" * 404 + p32(0))


def test_the_summary_path_steps_over_attr_vals_by_its_length():
    """Skipping reads the mask's count and attr_vals' length, none of the values: garbage there costs nothing."""
    raw = p32(2, 0xFFFFFFFF, 0xFFFFFFFF) + popaque(b"\xff" * 64) + p32(7)
    assert x.skip(A.FATTR4, raw) == len(raw) - 4


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.integers(0, (1 << 32) - 1), max_size=4), st.binary(max_size=120), st.integers(0, 7))
def test_any_mask_over_any_attr_vals_stays_inside_them(words, vals, tail):
    """A hostile mask and values: the walk never reads past attr_vals, never raises, and the next item is
    where the length says."""
    raw = x.encode(A.BITMAP4, words) + popaque(vals) + p32(tail)
    value, end, seen, lay = _shown(AFTER, raw)
    assert end == len(raw) and value["next"] == tail
    start, stop = 4 + 4 * len(words) + 4, 4 + 4 * len(words) + 4 + len(vals)
    (attrs,) = [c for c in lay.children or () if c.proto == "nfs.fattr4"]
    for _d, item, _v, off, length in layer_nodes(attrs):
        if off >= start and not isinstance(item, Layer):
            assert off + length <= stop, item.name
    assert set(value["attrs"]) <= set(A.FATTR4_BODY.by_name)


# --- round trips -----------------------------------------------------------------------------------------------
@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_random_attribute_sets_build_and_decode_to_the_same_values(data):
    value = data.draw(attr_sets(A.FATTR4_BODY, max_size=24))
    raw = x.encode(A.FATTR4, value)
    got, end, seen, lay = _shown(A.FATTR4, raw)
    assert got == value and end == len(raw)
    numbers = sorted(A.FATTR4_BODY.by_name[k].number for k in value)
    assert list(got) == [A.ATTRS[n].name for n in numbers]           # in attribute order
    (tree,) = lay.children or ()
    subtrees = [c for c in tree.children or () if c.proto == "nfs.fattr4.attr"]
    assert [(c.items or [])[0][1] for c in subtrees] == numbers       # each under its number
    assert "nfs.fattr4.undecoded" not in seen and "nfs.malformed" not in seen


@pytest.mark.parametrize("number", sorted(A.ATTRS))
def test_every_attribute_value_round_trips_alone(number):
    attr = A.ATTRS[number]

    @settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(values(attr.decl))
    def one(v):
        raw = x.encode(A.FATTR4, {attr.name: v})
        assert x.decode(A.FATTR4, raw) == ({attr.name: v}, len(raw))

    one()


def test_getattr_results_are_declared_in_full():
    assert 9 not in nfs4.PARTIAL and nfs4.RES[9].members[0][1] is A.FATTR4
