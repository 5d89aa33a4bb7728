"""The package's layers run one way: no import circle, and no module importing a module of a higher layer.

The graph is built from the source of every module of the package (every import statement, wherever it
stands: at the top, inside a function or under ``if TYPE_CHECKING``), so an import moved to the bottom of a
file or into a function to dodge a circle is still seen.
"""
from __future__ import annotations

import ast
from pathlib import Path

from conftest import ROOT

PACKAGE = ROOT / "rdmaspy"

# Lowest first.  A module may import modules of its own rank or lower.  The longest matching prefix
# decides a module's rank.
RANKS: dict[str, int] = {
    "rdmaspy": 0, "rdmaspy.errors": 0,
    "rdmaspy.records": 0,           # repr, equality and hash by a class's fields: the declarations' and records'
    "rdmaspy.typenames": 0,         # typing's names without typing's import at run time
    # what everything stands on: declarations, frames and packets, sources and sinks of bytes, memory
    "rdmaspy.fields": 1, "rdmaspy.packet": 1, "rdmaspy.budget": 1, "rdmaspy.readers": 1, "rdmaspy.writers": 1,
    "rdmaspy.capture": 1, "rdmaspy.traffic": 1,
    "rdmaspy.scale.source": 1,      # several capture files read as one
    "rdmaspy.hosttrace": 1,         # kernel traces read beside a capture (--host-trace)
    # what the dissectors are given: the tables they register into, a capture's state and its connections,
    # the visitor of what they produce
    "rdmaspy.registry": 2, "rdmaspy.session": 2, "rdmaspy.conversation": 2, "rdmaspy.fieldview": 2,
    "rdmaspy.dissectors": 3,
    "rdmaspy.engine": 4, "rdmaspy.craft": 4,
    "rdmaspy.analysis": 5,
    "rdmaspy.pipeline": 6, "rdmaspy.filter": 6,
    "rdmaspy.output": 7,
    # the declarations as other libraries' packet classes: what the libraries share (stacking), scapy layers,
    # dpkt classes
    "rdmaspy.stacking": 7, "rdmaspy.scapy": 7, "rdmaspy.dpkt": 7,
    # the TUI presents the model; a command chooses a presentation (``rdmaspy tui`` starts the app)
    "rdmaspy.tui": 8,
    # parallel export runs the pipeline in shards and writes their tables: beside the TUI, below the commands
    "rdmaspy.scale": 8,
    "rdmaspy.commands": 9,
    "rdmaspy.cli": 10, "rdmaspy.__main__": 10,
}


def module_names() -> dict[str, Path]:
    out = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.with_suffix("").relative_to(ROOT).parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


def imports_of(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The package's modules that ``name`` imports (a ``from pkg import sub`` counts as importing ``sub``)."""
    is_package = path.name == "__init__.py"
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = name.split(".") if is_package else name.split(".")[:-1]
                base = base[:len(base) - (node.level - 1)]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            targets = [f"{mod}.{a.name}" if f"{mod}.{a.name}" in modules else mod for a in node.names]
        else:
            continue
        for t in targets:
            if t.startswith("rdmaspy") and t in modules and t != name:   # not in modules: a C extension
                found.add(t)
    return found


def rank(name: str) -> int:
    best = max((p for p in RANKS if name == p or name.startswith(p + ".")), key=len)
    return RANKS[best]


def graph() -> dict[str, set[str]]:
    modules = module_names()
    return {name: imports_of(name, path, modules) for name, path in modules.items()}


def test_every_module_has_a_rank():
    assert all(rank(name) >= 0 for name in module_names())
    assert "rdmaspy.dissectors.infiniband" in module_names() and rank("rdmaspy.dissectors.infiniband") == 3


def test_no_module_imports_a_higher_layer():
    upward = sorted(f"{a} ({rank(a)}) imports {b} ({rank(b)})" for a, deps in graph().items() for b in deps
                    if rank(b) > rank(a))
    assert not upward, "\n".join(upward)


def test_no_import_circle():
    g = graph()
    state: dict[str, int] = {}        # 1: on the current path, 2: done
    circles: list[list[str]] = []

    def visit(node: str, path: list[str]) -> None:
        state[node] = 1
        path.append(node)
        for dep in sorted(g.get(node, ())):
            if state.get(dep) == 1:
                circles.append(path[path.index(dep):] + [dep])
            elif dep not in state:
                visit(dep, path)
        path.pop()
        state[node] = 2

    for node in sorted(g):
        if node not in state:
            visit(node, [])
    assert not circles, "\n".join(" -> ".join(c) for c in circles)


def test_commands_never_import_cli():
    g = graph()
    assert not [a for a, deps in g.items() if a.startswith("rdmaspy.commands") and "rdmaspy.cli" in deps]


def test_no_module_of_the_package_parses_python_source():
    parsing = sorted(name for name, path in module_names().items()
                     if "import ast" in path.read_text() or "from ast import" in path.read_text())
    assert not parsing, parsing


def test_the_graph_sees_imports_inside_functions():
    """A check that cannot see what it checks proves nothing: this module's own kind of import is found."""
    g = graph()
    assert "rdmaspy.analysis.analyzer" in g["rdmaspy.filter"]     # imported inside known_fields()
    assert "rdmaspy.cli" in g["rdmaspy.__main__"]


def test_a_commands_start_imports_neither_typing_nor_threading():
    """typing and mypy_extensions cost some 12 M instructions of every start (the modules on it take the names
    from rdmaspy.typenames), threading 3 M (imported for a progress bar's thread alone)."""
    import subprocess
    import sys

    from conftest import capture
    env = {"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}
    # a small capture's -V prints in one process: the printing by turns (typing, threading) is not imported
    for command in (["decode"], ["stats"], ["expert"], ["decode", "-V"]):
        # -S: no site-packages' .pth files, which import typing themselves on some machines
        res = subprocess.run([sys.executable, "-S", "-X", "importtime", "-m", "rdmaspy", *command,
                              str(capture("rxe-rc-pingpong.pcap"))], env=env, capture_output=True, text=True)
        assert res.returncode == 0, res.stderr[-2000:]
        imported = {line.rsplit("|", 1)[-1].strip() for line in res.stderr.splitlines()
                    if line.startswith("import time:")}
        assert "rdmaspy.pipeline" in imported and not {"typing", "mypy_extensions", "threading"} & imported, command


def test_no_dataclass_takes_its_names_from_typenames():
    """``@dataclass`` tells a ``ClassVar`` from a field by ``typing.ClassVar``, and skips the test when
    ``typing`` is not imported: a dataclass in a module that takes ``ClassVar`` from rdmaspy.typenames would
    make its class variables fields on a command's start, and not once something imported ``typing``."""
    offenders = []
    for path in PACKAGE.rglob("*.py"):
        tree = ast.parse(path.read_text())
        names = {alias.name for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)
                 and (node.module or "").endswith("typenames") for alias in node.names}
        dataclass_used = any(isinstance(node, ast.Name) and node.id == "dataclass"
                             or isinstance(node, ast.Attribute) and node.attr == "dataclass"
                             or isinstance(node, ast.alias) and node.name == "dataclass"
                             for node in ast.walk(tree))
        if names and dataclass_used:
            offenders.append(str(path.relative_to(PACKAGE)))
    assert not offenders, offenders
