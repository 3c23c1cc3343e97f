"""The project's import graph: no module imports itself back through others, and
each package imports only those below it (strategies, oracle, conformance,
reports). Every import counts, one inside a function too; those under
`if TYPE_CHECKING:` run at no time and do not."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LAYERS = ("strategies", "oracle", "conformance", "reports")  # each imports only those before it


def _modules(root: Path, packages: tuple[str, ...]) -> dict[str, Path]:
    mods = {}
    for package in packages:
        for path in sorted((root / package).rglob("*.py")):
            parts = path.relative_to(root).with_suffix("").parts
            mods[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return mods


def _runtime_imports(tree: ast.AST) -> list[ast.Import | ast.ImportFrom]:
    found, stack = [], [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            stack.extend(node.orelse)
            continue
        if isinstance(node, ast.Import | ast.ImportFrom):
            found.append(node)
        stack.extend(ast.iter_child_nodes(node))
    return found


def import_graph(root: Path, packages: tuple[str, ...]) -> dict[str, dict[str, int]]:
    """module -> {module it imports: the line}, among the packages' own modules;
    `from package import name` is an edge to package.name where that is a module."""
    mods = _modules(root, packages)

    def owner(name: str) -> str | None:
        while name and name not in mods:
            name = name.rpartition(".")[0]
        return name or None

    graph: dict[str, dict[str, int]] = {m: {} for m in mods}
    for mod, path in mods.items():
        here = mod.split(".") if path.name == "__init__.py" else mod.split(".")[:-1]
        for node in _runtime_imports(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            else:
                base = node.module or ""
                if node.level:
                    base = ".".join(here[: len(here) - node.level + 1] + ([base] if base else []))
                full = [f"{base}.{a.name}" for a in node.names]
                names = [name if name in mods else base for name in full]
            for name in names:
                target = owner(name)
                if target is not None and target != mod:
                    graph[mod].setdefault(target, node.lineno)
    return graph


def cycles(graph: dict[str, dict[str, int]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in graph:
        if v not in index:
            visit(v)
    return found


def _describe(graph: dict[str, dict[str, int]], component: list[str]) -> str:
    return "; ".join(
        f"{a} -> {b} (line {line})"
        for a in component
        for b, line in graph[a].items()
        if b in component
    )


def test_no_module_imports_itself_back():
    graph = import_graph(ROOT, LAYERS)
    assert len(graph) > 100  # (the packages were found)
    assert not (found := cycles(graph)), "\n".join(_describe(graph, c) for c in found)


def test_each_package_imports_only_the_packages_below_it():
    graph = import_graph(ROOT, LAYERS)
    upward = [
        f"{a} -> {b} (line {line})"
        for a, targets in graph.items()
        for b, line in targets.items()
        if LAYERS.index(b.split(".")[0]) > LAYERS.index(a.split(".")[0])
    ]
    assert not upward, upward


def test_a_cycle_through_a_function_level_import_is_found(tmp_path):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "a.py").write_text("from . import b\n")
    (tmp_path / "pkg" / "b.py").write_text("def f():\n    from .a import thing\n")
    (tmp_path / "pkg" / "c.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg import a\n"
    )
    graph = import_graph(tmp_path, ("pkg",))
    assert graph["pkg.b"] == {"pkg.a": 2}
    assert graph["pkg.c"] == {}  # (under TYPE_CHECKING: never run)
    assert cycles(graph) == [["pkg.a", "pkg.b"]]


# The reports read the report's data model and nothing else of the suite, so
# they can be read, and changed, without the pytest plugin.
DATA_MODEL = "conformance.results"


def test_reports_import_only_the_data_model_from_the_suite():
    graph = import_graph(ROOT, LAYERS)
    reaching = [
        f"{a} -> {b} (line {line})"
        for a, targets in graph.items()
        if a.split(".")[0] == "reports"
        for b, line in targets.items()
        if b.split(".")[0] == "conformance" and b != DATA_MODEL
    ]
    assert any(b == DATA_MODEL for b in graph["reports"])  # (the rule is checked on real edges)
    assert not reaching, reaching


def test_the_data_model_imports_only_the_standard_library():
    path = ROOT / "conformance" / "results.py"
    found = _runtime_imports(ast.parse(path.read_text(), str(path)))
    names = [a.name for n in found if isinstance(n, ast.Import) for a in n.names]
    names += [n.module or "" for n in found if isinstance(n, ast.ImportFrom)]
    outside = [name for name in names if name.split(".")[0] not in sys.stdlib_module_names]
    assert not outside, outside
