"""The XDR declaration engine (rdmaspy.dissectors.xdrlang): one declaration decodes, builds, names and
places; every count and length is a claim checked before use."""
from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from rdmaspy.dissectors import nfs, nfs3, nfs4, nfs4_attrs as A, nfs_names, xdrlang as x  # nfs: every declaring module (NFSv2-v4, MOUNT, NLM, NFSACL)
from rdmaspy.dissectors.xdr import Cursor, XdrError, XdrInvalid, p32, p64, popaque
from rdmaspy.fields import CATALOG, declaring
from rdmaspy.packet import Layer
from rdmaspy.fieldview import layer_nodes

from xdr_strategies import values

# A small declaration exercising every kind (names under xdrtest.*, registered like any other while this
# module's tests run, and withdrawn when they are done: declared at collection, they would stand in the
# catalog while other modules' tests compare it with docs/fields.md).
_COLOR: x.XdrType
_ITEM: x.XdrType
ALL_KINDS: x.XdrType


def _declare() -> None:
    global _COLOR, _ITEM, ALL_KINDS
    declaring(__name__)
    _COLOR = x.enum("xdrtest.color", "Color", {0: "RED", 1: "GREEN"})
    _ITEM = x.tree(x.struct("xdrtest_item", ("id", x.uint32("xdrtest.id", "id")),
                            ("name", x.string("xdrtest.name", "name", bound=8, length="xdrtest.name_len"))),
                   "xdrtest.item", "item")
    ALL_KINDS = x.struct(
        "xdrtest_all",
        ("u32", x.uint32("xdrtest.u32", "u32", flags=[("xdrtest.u32.low", "low bit", 1)])),
        ("i32", x.int32("xdrtest.i32")), ("u64", x.uint64("xdrtest.u64")), ("i64", x.int64("xdrtest.i64")),
        ("flag", x.boolean("xdrtest.flag")), ("color", _COLOR),
        ("fixed", x.opaque("xdrtest.fixed", fixed=6)),
        ("var", x.opaque("xdrtest.var", bound=16, length="xdrtest.var_len")),
        ("pick", x.union("xdrtest_pick", x.uint32("xdrtest.arm"), {0: None, 1: x.uint32("xdrtest.one"),
                                                                  2: _ITEM}, x.uint64("xdrtest.other"))),
        ("maybe", x.optional(_ITEM, "xdrtest.follows")),
        ("items", x.array(_ITEM, bound=4, count="xdrtest.count")),
        ("pair", x.fixed_array(x.uint32("xdrtest.word"), 2)),
        ("chain", x.chain(_ITEM, "xdrtest.more")),
        ("data", x.ddp("test_data", "xdrtest.data", length="xdrtest.data_len")),
    )
    declaring("")


@pytest.fixture(scope="module", autouse=True)
def _withdrawn():
    _declare()
    yield
    CATALOG.forget_module(__name__)


@settings(max_examples=200, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_every_kind_builds_and_decodes_to_the_same_value(data):
    v = data.draw(values(ALL_KINDS))
    raw = x.encode(ALL_KINDS, v)
    assert len(raw) % 4 == 0
    got, end = x.decode(ALL_KINDS, raw)
    assert got == v and end == len(raw)


@pytest.mark.parametrize("name", sorted(x.DECLARED))
def test_every_declared_structure_round_trips(name):
    t = x.DECLARED[name]

    @settings(max_examples=40, suppress_health_check=[HealthCheck.too_slow], deadline=None)
    @given(values(t))
    def round_trip(v):
        raw = x.encode(t, v)
        got, end = x.decode(t, raw)
        assert got == v and end == len(raw)

    round_trip()


@pytest.mark.parametrize("name", sorted(x.DECLARED))
def test_hostile_bytes_raise_only_xdr_errors(name):
    t = x.DECLARED[name]

    @settings(max_examples=40, deadline=None)
    @given(st.binary(max_size=200))
    def hostile(raw):
        lay = Layer("nfs", None, raw, 0, len(raw))
        try:
            x.decode(t, raw, lay=lay)
        except XdrError:
            pass
        for _d, item, _v, off, length in layer_nodes(lay):      # whatever was shown lies in the bytes
            assert off == -1 or 0 <= off and off + length <= len(raw)

    hostile()


def test_a_huge_count_is_a_claim_not_an_allocation():
    with pytest.raises(XdrError, match="xdrtest.count"):
        x.decode(x.array(_ITEM, count="xdrtest.count"), p32(0xFFFFFFFF) + b"\0" * 12)
    with pytest.raises(XdrError, match="xdrtest.var"):
        x.decode(x.opaque("xdrtest.var", length="xdrtest.var_len"), p32(0xFFFFFFF0) + b"\0" * 8)


def test_bounds_booleans_and_arms_are_checked():
    with pytest.raises(XdrInvalid, match="over its bound 16"):
        x.decode(x.opaque("xdrtest.var", bound=16), popaque(b"x" * 17))
    with pytest.raises(XdrInvalid, match="over its bound 4"):
        x.decode(x.array(_ITEM, bound=4, count="xdrtest.count"), p32(5) + b"\0" * 80)
    with pytest.raises(XdrInvalid, match="boolean 2"):
        x.decode(x.boolean("xdrtest.flag"), p32(2))
    with pytest.raises(XdrInvalid, match="xdrtest_strict: no arm for discriminant 3"):
        x.decode(x.union("xdrtest_strict", x.uint32("xdrtest.arm"), {0: None}), p32(3))
    with pytest.raises(XdrInvalid, match="xdrtest.follows: discriminant 7"):
        x.decode(x.optional(_ITEM, "xdrtest.follows"), p32(7))


def test_a_signed_integer_reads_negative():
    assert x.decode(x.int32("xdrtest.i32"), p32(0xFFFFFFFE))[0] == -2
    assert x.decode(x.int64("xdrtest.i64"), p64(-3))[0] == -3


def test_the_tree_places_every_item_at_its_bytes():
    v = {"u32": 5, "i32": -1, "u64": 7, "i64": 8, "flag": True, "color": 1, "fixed": b"abcdef",
         "var": b"xyz", "pick": (2, {"id": 3, "name": "ab"}), "maybe": None,
         "items": [{"id": 9, "name": "n"}], "pair": [1, 2], "chain": [{"id": 4, "name": ""}], "data": b"DATA"}
    raw = x.encode(ALL_KINDS, v)
    lay = Layer("xdrtest", None, raw, 0, len(raw))
    x.decode(ALL_KINDS, raw, lay=lay)
    seen = {}
    for depth, item, value, off, length in layer_nodes(lay):
        if isinstance(item, Layer):
            assert item.proto == "xdrtest.item" and raw[off:off + 8][4:8] in (p32(2), p32(1), p32(0))
            continue
        seen.setdefault(item.name, []).append((value, raw[off:off + length]))
    assert seen["xdrtest.u32"] == [(5, p32(5))]
    assert seen["xdrtest.u32.low"] == [(True, p32(5))]
    assert seen["xdrtest.i32"] == [(-1, p32(0xFFFFFFFF))]
    assert seen["xdrtest.var_len"] == [(3, p32(3))] and seen["xdrtest.var"] == [(b"xyz", b"xyz")]
    assert seen["xdrtest.name"] == [("ab", b"ab"), ("n", b"n"), ("", b"")]
    assert seen["xdrtest.id"] == [(3, p32(3)), (9, p32(9)), (4, p32(4))]
    assert seen["xdrtest.more"] == [(1, p32(1)), (0, p32(0))]
    assert seen["xdrtest.data"] == [(b"DATA", b"DATA")]
    assert [it.name for _d, it, *_r in layer_nodes(lay) if not isinstance(it, Layer)].count("xdrtest.word") == 2


def test_every_named_item_is_a_catalogued_field():
    for name in ("xdrtest.u32", "xdrtest.u32.low", "xdrtest.name_len", "xdrtest.data"):
        assert name in CATALOG.fields
    assert "xdrtest.item" in CATALOG.protocols
    assert [f.name for f in x.DECLARED["xdrtest_item"].fields()] == ["xdrtest.id", "xdrtest.name_len",
                                                                     "xdrtest.name"]


class _Reducing(x.PlainWalk):
    """A walk that finds every DDP-eligible item reduced (its bytes in a chunk)."""

    def ddp(self, cur: Cursor, kind: str, lay):
        n = cur.u32(kind)
        return cur.pos, n, False


def test_a_reduced_ddp_item_keeps_its_length_and_has_no_bytes():
    t = x.struct("xdrtest_ddp", ("data", x.ddp("test_data", "xdrtest.data", length="xdrtest.data_len")),
                 ("after", x.uint32("xdrtest.u32")))
    v = {"data": b"12345", "after": 6}
    reduced = x.encode(t, v, reduce=True)
    assert reduced == p32(5) + p32(6)
    lay = Layer("xdrtest", None, reduced, 0, len(reduced))
    got, end = x.decode(t, reduced, w=_Reducing(), lay=lay)
    assert got == {"data": None, "after": 6} and end == 8
    names = [it.name for _d, it, *_r in layer_nodes(lay)]
    assert "xdrtest.data" not in names and "xdrtest.data_len" in names


def test_the_nfs_handle_hash_is_zlibs_crc32():
    raw = popaque(bytes.fromhex("0100010000000000"))
    lay = Layer("nfs", None, raw, 0, len(raw))
    x.decode(nfs3.fh3("object"), raw, lay=lay)
    got = {it.name: v for _d, it, v, _o, _l in layer_nodes(lay) if not isinstance(it, Layer)}
    assert got["nfs.fh.hash"] == 0x62D40C52 and got["nfs.fh.length"] == 8      # tshark's, frame 24 of rxe-nfsv3


@pytest.mark.parametrize("name", sorted(x.DECLARED))
def test_skipping_ends_where_decoding_ends(name):
    """The summary path's skip, derived from the declaration, agrees with the decode: same end on good
    input, an XdrError wherever the decode finds a short count or length."""
    t = x.DECLARED[name]

    @settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(values(t), st.integers(0, 12))
    def agree(v, cut):
        raw = x.encode(t, v)
        assert x.skip(t, raw) == len(raw)
        short = raw[:max(len(raw) - cut, 0)]
        try:
            end = x.decode(t, short)[1]
        except XdrError:
            with pytest.raises(XdrError):
                x.skip(t, short)
        else:
            assert x.skip(t, short) == end

    agree()


def _member_names(t, seen=None) -> set[str]:
    """Every member name under a declaration (struct members, fattr4 attributes), at every depth."""
    seen = set() if seen is None else seen
    if id(t) in seen:
        return set()
    seen.add(id(t))
    names: set[str] = set()
    if isinstance(t, x.Struct):
        for key, m in t.members:
            names |= {key} | _member_names(m, seen)
    elif isinstance(t, A.AttrSet):
        for a in t.table.values():
            names |= {a.name} | _member_names(a.decl, seen)
    elif isinstance(t, x.Union):
        for arm in [*t.arms.values(), *([t.default] if t.default is not None else [])]:
            names |= _member_names(arm, seen)
    elif isinstance(t, (x.Optional, x.Array, x.Chain, x.Tree)):
        names |= _member_names(t.item, seen)
    return names


def _within(picked, whole, keys, t) -> None:
    """``picked`` is ``whole`` with only the members named in ``keys`` kept, at every depth."""
    if isinstance(picked, dict) and isinstance(whole, dict) and isinstance(t, (x.Struct, A.AttrSet)):
        assert set(picked) == {k for k in whole if k in keys}
        members = dict(t.members) if isinstance(t, x.Struct) else {a.name: a.decl for a in t.table.values()}
        for k, v in picked.items():
            _within(v, whole[k], keys, members[k])
    elif isinstance(t, x.Tree):
        _within(picked, whole, keys, t.item)
    elif isinstance(t, x.Union) and isinstance(whole, tuple):
        assert picked[0] == whole[0]
        _within(picked[1], whole[1], keys, t.arm(whole[0]))
    elif isinstance(t, x.Optional) and whole is not None:
        _within(picked, whole, keys, t.item)
    elif isinstance(t, (x.Array, x.Chain)):
        assert len(picked) == len(whole)
        for p, w in zip(picked, whole):
            _within(p, w, keys, t.item)
    else:
        assert picked == whole


@pytest.mark.parametrize("name", sorted(x.DECLARED))
def test_picking_reads_the_named_members_as_decoding_does(name):
    """``pick`` (the walk for NFS file names) gives the decoded value of every member it is asked for,
    leaves out the others, ends where the decode ends, and fails on short input where the decode does."""
    t = x.DECLARED[name]
    every = sorted(_member_names(t))

    @settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(values(t), st.sets(st.sampled_from(every)) if every else st.just(set()), st.integers(0, 12))
    def agree(v, keys, cut):
        raw = x.encode(t, v)
        whole, end = x.decode(t, raw)
        cur = Cursor(raw, 0, len(raw))
        assert t.pick(cur, x.PLAIN, frozenset(every)) == whole and cur.pos == end
        cur = Cursor(raw, 0, len(raw))
        _within(t.pick(cur, x.PLAIN, frozenset(keys)), whole, frozenset(keys), t)
        assert cur.pos == end
        short = raw[:max(len(raw) - cut, 0)]
        try:
            x.decode(t, short)
        except XdrError:
            with pytest.raises(XdrError):
                t.pick(Cursor(short, 0, len(short)), x.PLAIN, frozenset(keys))

    agree()


@pytest.mark.parametrize("decl", [*(nfs4.ARGS[op] for op in sorted(nfs._V4_CALL_PICKED)), nfs4.RES[10], nfs4.RES[26]],
                         ids=lambda t: t.name)
def test_a_picked_operation_fails_as_its_skip_fails(decl):
    """The NFSv4 operations the summary walk picks in one pass (the names) stop a malformed COMPOUND
    where skip stops it, with the same reason."""
    @settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(values(decl), st.integers(0, 40), st.binary(max_size=8))
    def agree(v, cut, junk):
        raw = x.encode(decl, v)
        for bad in (raw[:max(len(raw) - cut, 0)], raw[:max(len(raw) - cut, 0)] + junk):
            outcomes = []
            for walk in (lambda c: decl.skip(c, x.PLAIN), lambda c: decl.pick(c, x.PLAIN, nfs_names.V4_REPLY_KEYS
                                                                               | nfs_names.V4_CALL_KEYS)):
                cur = Cursor(bad, 0, len(bad))
                try:
                    walk(cur)
                    outcomes.append(cur.pos)
                except XdrError as e:
                    outcomes.append(str(e))
            assert outcomes[0] == outcomes[1]

    agree()


def test_struct_derived_fields_cover_its_bytes():
    declaring(__name__)
    t = x.struct("xdrtest_derived", ("a", x.uint32("xdrtest.u32")), ("b", x.opaque("xdrtest.fixed", fixed=6)),
                 derived=[(x.field("xdrtest.whole_len", "whole length"), len)])
    declaring("")
    raw = x.encode(t, {"a": 1, "b": b"abcdef"})
    lay = Layer("xdrtest", None, raw, 0, len(raw))
    x.decode(t, raw, lay=lay)
    got = [(v, o, ln) for _d, it, v, o, ln in layer_nodes(lay) if it.name == "xdrtest.whole_len"]
    assert got == [(12, 0, 12)]
