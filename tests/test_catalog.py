"""The field catalog: declaring is registering, each name once, attributed to the module that declares it."""
from __future__ import annotations

import sys

import pytest

from rdmaspy.fields import CATALOG, Field, Header, declaring, protocol, repeatable
from rdmaspy.filter import FilterError, compile_filter, known_fields


def _declarations(module) -> list[tuple[str, object]]:
    """What a module declares at its top level (a test may look; the package itself never does)."""
    out: list[tuple[str, object]] = []
    for obj in vars(module).values():
        if isinstance(obj, Header):
            out.append((obj.name, obj))
            out.extend((f.name, f) for f in obj.fields)
        elif isinstance(obj, Field) and obj.catalogued:
            out.append((obj.name, obj))
    return out


def test_every_declaration_is_in_the_catalog_under_its_own_module():
    """A module that forgot ``declaring(__name__)`` would have its names attributed to another one."""
    known_fields()
    checked = 0
    for name, module in sorted(sys.modules.items()):
        if not name.startswith(("rdmaspy.dissectors.", "rdmaspy.analysis.")) or module is None:
            continue
        for fname, obj in _declarations(module):
            assert fname in CATALOG.fields or fname in CATALOG.protocols, fname
            if CATALOG.fields.get(fname) is not obj:
                continue
            origin = CATALOG.origin[fname]
            # the module it is attributed to holds it (a module that imports it holds it too)
            assert any(o is obj for _n, o in _declarations(sys.modules[origin])), (fname, origin, name)
            checked += origin == name
    assert checked > 500


def test_frame_and_expert_pseudo_fields_and_analysis_fields_are_declared_once():
    cat = known_fields()
    assert cat.origin["frame.number"] == cat.origin["expert.message"] == "rdmaspy.fieldview"
    assert cat.origin["rpcrdma.analysis.latency"] == "rdmaspy.analysis.rpcrdma_fields"
    assert cat.origin["ib.analysis.retransmission"] == "rdmaspy.analysis.transport"
    assert cat.protocols["frame"] == "Frame" and cat.protocols["nfs.op"] == "NFS operation"


def test_a_declared_field_is_filterable_and_forgotten_with_its_module():
    known_fields()
    module = "tests.catalog_probe"
    declaring(module)
    try:
        field = Field("catprobe.value", 8, "Value")
        protocol("catprobe.sub", "A sub-tree", repeats=True)
        repeatable("catprobe")
    finally:
        declaring("")
    assert CATALOG.fields["catprobe.value"] is field and CATALOG.origin["catprobe.value"] == module
    assert CATALOG.repeats("catprobe.value") and CATALOG.repeats("catprobe.sub")
    assert compile_filter("catprobe.value == 3 or catprobe.sub").names == {"catprobe.value", "catprobe.sub"}
    CATALOG.forget_module(module)
    assert "catprobe.value" not in CATALOG.fields and "catprobe.sub" not in CATALOG.protocols
    with pytest.raises(FilterError, match="unknown field 'catprobe.value'"):
        compile_filter("catprobe.value == 3")


def test_values_a_filter_derives_and_header_parts_stay_out_of_the_catalog():
    known_fields()
    before = dict(CATALOG.fields)
    compile_filter('len(eth.src) == 6 and eth.src[0:2] == 52:54 and frame contains "x"')
    assert CATALOG.fields == before
    assert "opcode" not in CATALOG.fields        # the relative names of a Header's declaration
