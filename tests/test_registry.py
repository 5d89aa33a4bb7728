"""Dispatch tables hold Dissector objects: plain functions are wrapped on registration, heuristics are
tried in order, and the per-packet dissectors are subclasses whose call the compiled build makes directly."""
from __future__ import annotations

from pathlib import Path

import pytest

from rdmaspy.engine import load_dissectors
from rdmaspy.packet import Frame, Packet
from rdmaspy.registry import Dissector, DissectorTable, dissect_with, table, try_heuristics


def _packet() -> Packet:
    return Packet(Frame(1, 0, 1, b"abcdef", 6))


def test_a_registered_function_is_called_with_the_bytes_and_context_and_wrapped_once():
    seen = []

    def dissect(pkt, buf, off, end, ctx):
        seen.append((bytes(buf[off:end]), ctx))

    tab = DissectorTable("test.plain")
    tab.register(7, dissect)
    tab.register(7, dissect)                   # the same function again: allowed, nothing changes
    assert type(tab.by_key[7]) is Dissector and tab.by_key[7].fn is dissect
    pkt = _packet()
    assert dissect_with(tab, 7, pkt, pkt.frame.data, 1, 4, "ctx") is True
    assert seen == [(b"bcd", "ctx")]
    with pytest.raises(ValueError, match="registered already"):
        tab.register(7, lambda *a: None)


def test_heuristics_are_tried_in_order_first_ones_before_and_the_rest_becomes_data():
    load_dissectors()                          # the data dissector takes what nothing else does
    order = []

    def declines(pkt, buf, off, end, ctx):
        order.append("declines")
        return False

    def takes(pkt, buf, off, end, ctx):
        order.append("takes")
        return True

    tab = DissectorTable("test.heuristics")
    tab.add_heuristic("takes", takes)
    tab.add_heuristic("declines", declines, first=True)
    assert [name for name, _ in tab.heuristics] == ["declines", "takes"]
    pkt = _packet()
    assert dissect_with(tab, "no such key", pkt, pkt.frame.data, 0, 6, None) is True
    assert order == ["declines", "takes"]
    tab.heuristics.pop()                       # only the one that declines is left
    pkt = _packet()
    assert try_heuristics(tab, pkt, pkt.frame.data, 0, 6, None) is False
    assert dissect_with(tab, "no such key", pkt, pkt.frame.data, 2, 6, None) is False
    assert [lay.proto for lay in pkt.layers] == ["data"] and pkt.layers[0].length == 4


def test_unregister_takes_the_dissector_out_and_gives_it_back():
    tab = DissectorTable("test.unregister")
    tab.register(1, lambda *a: None)
    old = tab.unregister(1)
    assert isinstance(old, Dissector) and tab.get(1) is None and tab.unregister(1) is None
    tab.register(1, old)                       # a Dissector goes back in as it is
    assert tab.by_key[1] is old


# The dissectors every frame of the real traffic goes through: each must be a subclass calling its function
# by name (compiled, a direct call); a plain function registered here would be a generic call a frame.
PER_PACKET = [("linktype.fast", 1), ("linktype", 1), ("ethertype", 0x0800), ("ip.proto", 6), ("ip.proto", 17),
              ("udp.port", 4791), ("ib.payload", "send"), ("ib.payload", "read_response"), ("ib.payload", "write"),
              ("rdmacm.port", 20049), ("rpc.program", 100003), ("data", "data")]


@pytest.mark.parametrize("name,key", PER_PACKET, ids=[f"{n}-{k}" for n, k in PER_PACKET])
def test_the_per_packet_dissectors_are_called_directly(name, key):
    load_dissectors()
    d = table(name).by_key[key]
    assert isinstance(d, Dissector) and type(d) is not Dissector and type(d).dissect is not Dissector.dissect


@pytest.mark.parametrize("name,heuristic", [("ib.payload", "rdmacm.port"), ("ib.payload", "rpcrdma"),
                                            ("tcp.port", "iwarp_mpa"), ("eth.fast", "rocev2"),
                                            ("eth.fast", "tcp_ipv4")])
def test_the_per_packet_heuristics_are_called_directly(name, heuristic):
    load_dissectors()
    found = dict(table(name).heuristics)[heuristic]
    assert type(found) is not Dissector and type(found).dissect is not Dissector.dissect


def test_module_names_are_what_pkgutil_finds_in_every_package(tmp_path):
    """import_all lists a package's modules itself (pkgutil's import cost every start): the same names, in
    the same order, for every package of rdmaspy, and for a directory holding the odd cases."""
    import pkgutil

    import rdmaspy
    from rdmaspy.registry import module_names

    def pkgutil_names(paths):
        return sorted(m.name for m in pkgutil.iter_modules(paths))

    packages = [Path(rdmaspy.__file__).parent]
    packages += [p.parent for p in packages[0].rglob("__init__.py")]
    for directory in packages:
        assert module_names([str(directory)]) == pkgutil_names([str(directory)]), directory
    for name in ("plain.py", "native.cpython-311-x86_64-linux-gnu.so", "bytecode.pyc", "notes.txt",
                 "__init__.py", "two.dots.py"):
        (tmp_path / name).write_text("")
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "empty_dir").mkdir()
    (tmp_path / "__pycache__").mkdir()
    assert module_names([str(tmp_path)]) == pkgutil_names([str(tmp_path)])
    assert module_names([str(tmp_path / "missing")]) == []


def _names_imported_in(path: Path, function: str, package: str) -> list[str]:
    """The modules of ``package`` that ``function`` of the module at ``path`` imports, in its order."""
    import ast
    tree = ast.parse(path.read_text())
    body = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == function)
    return [a.name for n in ast.walk(body) if isinstance(n, ast.ImportFrom) and n.module == package
            for a in n.names]


def test_the_modules_imported_natively_are_every_module_import_all_imports():
    """``engine.load_dissectors`` and ``pipeline.import_analysis_modules`` name the modules ``import_all`` finds,
    in its order, so that the compiled build imports them without importlib: a module added to the directory
    is added there."""
    import rdmaspy
    from rdmaspy import analysis, dissectors
    from rdmaspy.analysis.analyzer import HOST_TRACE_MODULES
    from rdmaspy.registry import module_names

    root = Path(rdmaspy.__file__).parent

    def python_modules(package: Path) -> list[str]:
        """``import_all``'s modules with a Python source: not the C helpers a compiled build adds (``_hex``)."""
        return [name for name in module_names([str(package)]) if (package / f"{name}.py").exists()]

    assert _names_imported_in(root / "engine.py", "load_dissectors", "dissectors") == \
        python_modules(Path(dissectors.__file__).parent)
    skipped = ("analyzer", "rules") + HOST_TRACE_MODULES
    assert _names_imported_in(root / "pipeline.py", "import_analysis_modules", "analysis") == [
        name for name in python_modules(Path(analysis.__file__).parent) if name not in skipped]
