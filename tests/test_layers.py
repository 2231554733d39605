"""The layers point one way: no import cycle between yewpy's modules, and the runtime knows
nothing of the coordinations, the apps or the command line (imports read with ``ast``, the
function-level ones included)."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: Source folder -> the package it installs as (setup.py's package_dir).
FOLDERS = {"yewpy": "yewpy", "skeletons": "yewpy.skeletons", "apps": "yewpy.apps"}


def modules() -> dict[str, tuple[Path, bool]]:
    out = {}
    for folder, package in FOLDERS.items():
        for path in (ROOT / folder).rglob("*.py"):
            parts = path.relative_to(ROOT / folder).with_suffix("").parts
            is_package = parts[-1] == "__init__"
            name = ".".join((package, *(parts[:-1] if is_package else parts)))
            out[name] = (path, is_package)
    return out


def imports() -> dict[str, set[str]]:
    """Module -> the yewpy modules it imports (``from package import module`` counts as the
    module; an import of a package from inside it does not count)."""
    mods = modules()

    def known(name: str) -> str | None:
        while name and name not in mods:
            name = name.rpartition(".")[0]
        return name or None

    edges: dict[str, set[str]] = {name: set() for name in mods}
    for name, (path, is_package) in mods.items():
        here = name if is_package else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            targets: list = []
            if isinstance(node, ast.Import):
                targets = [known(a.name) for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parts = here.split(".")[:len(here.split(".")) - node.level + 1]
                    base = ".".join(parts + ([base] if base else []))
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in mods else known(base)
                           for a in node.names]
            for target in targets:
                if target and target != name and not name.startswith(target + "."):
                    edges[name].add(target)
    return edges


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in edges[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    for v in edges:
        if v not in index:
            visit(v)
    return out


def test_the_import_graph_is_read():
    edges = imports()
    assert "yewpy.skeletons.coordination" in edges["yewpy.skeletons.ordered"]
    assert "yewpy.runtime.loop" in edges["yewpy.skeletons.coordination"]
    assert cycles({"a": {"b"}, "b": {"a"}, "c": set()}) == [["a", "b"]]


def test_no_import_cycles():
    assert cycles(imports()) == []


RUNTIME = ("yewpy.runtime", "yewpy._engine", "yewpy._jitcore", "yewpy.core", "yewpy.operations")


def test_the_runtime_knows_no_coordination_app_or_command():
    for name, targets in imports().items():
        if name.startswith(RUNTIME):
            bad = {t for t in targets if t.startswith(("yewpy.skeletons", "yewpy.apps", "yewpy.tools"))}
            assert not bad, f"{name} imports {sorted(bad)}"


def test_coordinations_know_no_app_or_command():
    for name, targets in imports().items():
        if name.startswith("yewpy.skeletons"):
            bad = {t for t in targets if t.startswith(("yewpy.apps", "yewpy.tools"))}
            assert not bad, f"{name} imports {sorted(bad)}"
