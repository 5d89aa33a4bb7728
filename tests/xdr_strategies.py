"""Hypothesis strategies made from XDR declarations (rdmaspy.dissectors.xdrlang): a value of any
declared type, as ``decode`` returns it and ``encode`` takes it."""
from __future__ import annotations

from hypothesis import strategies as st

from rdmaspy.dissectors import nfs4, nfs4_attrs, nfs41, xdrlang as x

_SMALL = 6          # items of a variable-length array or list, bytes of an unbounded opaque (kept small)


def values(t: x.XdrType) -> st.SearchStrategy:
    # kinds of a protocol's own (subclasses of XdrType with a value of their own shape) first
    if isinstance(t, (nfs4_attrs.Bitmap4, nfs41.Bits)):
        return st.lists(st.integers(0, (1 << 32) - 1), max_size=3)
    if isinstance(t, nfs4_attrs.AttrSet):
        return attr_sets(t)
    if isinstance(t, nfs4.Access4Result):
        word = st.integers(0, (1 << 32) - 1)
        return st.fixed_dictionaries({"supported": word, "access": word})
    if isinstance(t, (nfs41.Body, nfs41.UniversalAddress)):
        return values(t.item)
    if isinstance(t, nfs41.Indexed):
        return st.lists(values(t.item), max_size=min(t.bound if t.bound is not None else _SMALL, _SMALL))
    if isinstance(t, nfs41.NotifyList):
        arms = sorted(t.arms.items())
        return st.lists(st.sampled_from(range(len(arms))), unique=True, max_size=3).flatmap(
            lambda picks: st.tuples(*[st.tuples(st.just(arms[i][0]), values(arms[i][1])) for i in sorted(picks)])
        ).map(list)
    if isinstance(t, x.Tree):
        return values(t.item)
    if isinstance(t, x.Void):
        return st.none()
    if isinstance(t, x.Bool):
        return st.booleans()
    if isinstance(t, x.Int):
        bits = t.bits
        if t.signed:
            return st.integers(-(1 << (bits - 1)), (1 << (bits - 1)) - 1)
        names = t.field.names if t.field is not None else None
        if names:
            return st.sampled_from(sorted(names)) | st.integers(0, (1 << bits) - 1)
        return st.integers(0, (1 << bits) - 1)
    if isinstance(t, x.Opaque):
        if t.fixed is not None:
            raw = st.binary(min_size=t.fixed, max_size=t.fixed)
        else:
            raw = st.binary(max_size=min(t.bound if t.bound is not None else 40, 40))
        if t.text:
            top = t.fixed if t.fixed is not None else min(t.bound if t.bound is not None else 20, 20)
            return st.text(st.characters(min_codepoint=32, max_codepoint=126), max_size=top).filter(
                lambda s: t.fixed is None or len(s.encode()) == t.fixed)
        return raw
    if isinstance(t, x.Ddp):
        top = min(t.bound if t.bound is not None else 40, 40)
        if t.text:
            return st.text(st.characters(min_codepoint=32, max_codepoint=126), max_size=top)
        return st.binary(max_size=top)
    if isinstance(t, x.Struct):
        return st.fixed_dictionaries({k: values(m) for k, m in t.members})
    if isinstance(t, x.Union):
        cases = [st.tuples(st.just(d), values(arm)) for d, arm in sorted(t.arms.items())]
        if t.default is not None:
            taken = set(t.arms)
            bits = t.disc.bits if isinstance(t.disc, x.Int) else 1
            cases.append(st.tuples(st.integers(0, (1 << bits) - 1).filter(lambda d: d not in taken),
                                   values(t.default)))
        return st.one_of(cases)
    if isinstance(t, x.Optional):
        return st.none() | values(t.item)
    if isinstance(t, x.Array):
        if t.fixed is not None:
            return st.lists(values(t.item), min_size=t.fixed, max_size=t.fixed)
        return st.lists(values(t.item), max_size=min(t.bound if t.bound is not None else _SMALL, _SMALL))
    if isinstance(t, x.Chain):
        return st.lists(values(t.item), max_size=3)
    raise TypeError(f"no strategy for {t!r}")


def attr_sets(t: nfs4_attrs.AttrSet, max_size: int = 8) -> st.SearchStrategy:
    """A value of a fattr4 (or a hint set): a random set of its table's entries, each with a value of its
    declaration, as a dict by name."""
    return st.sets(st.sampled_from(sorted(t.table)), max_size=max_size).flatmap(
        lambda numbers: st.fixed_dictionaries({t.table[n].name: values(t.table[n].decl) for n in sorted(numbers)}))
