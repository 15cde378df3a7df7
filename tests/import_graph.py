"""The imports of a package's modules, read with ``ast`` (nothing is imported): every import of one of
its modules becomes an edge (``import a.b``, ``from a import b`` (to the module ``a.b`` if there is one,
else to ``a``), relative imports, and ``importlib.import_module``/``__import__`` of a literal name, at
module level or inside a function, which the edge names); imports of anything else are kept apart.
Also: the import circles (strongly connected modules) and an account of them that names each line.

tests/test_layers.py checks the library's layers with it, tests/test_imports_at_top.py the modules
around the library (bench/, tests/, assets/)."""

from __future__ import annotations

import ast
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Optional

REPO = Path(__file__).resolve().parents[1]
PACKAGE = "dagster_kstreams"


@dataclass(frozen=True)
class Edge:
    source: str            # importing module
    target: str            # imported module (a known module of the package)
    path: str              # file of the importing module, relative to the root
    line: int
    function: Optional[str]  # enclosing function, None at module level

    def where(self) -> str:
        inside = f" (inside {self.function}())" if self.function else ""
        return f"{self.path}:{self.line}{inside}"


@dataclass(frozen=True)
class ExternalImport:
    module: str            # the imported name, e.g. "pyspark.sql"
    source: str
    path: str
    line: int


def _module_name(root: Path, path: Path) -> tuple[str, bool]:
    parts = list(path.relative_to(root).with_suffix("").parts)
    is_package = parts[-1] == "__init__"
    if is_package:
        parts = parts[:-1]
    return ".".join(parts), is_package


def find_modules(root: Path, package: str = PACKAGE) -> dict[str, tuple[Path, bool]]:
    """module name -> (file, is_package) for every .py file under ``root/package``."""
    modules = {}
    for path in sorted((root / package).rglob("*.py")):
        if "__pycache__" in path.parts:
            continue
        name, is_package = _module_name(root, path)
        modules[name] = (path, is_package)
    return modules


def _known(name: str, modules: dict) -> Optional[str]:
    """The longest prefix of ``name`` that is a module of the package (``a.b.C`` -> ``a.b``)."""
    parts = name.split(".")
    for end in range(len(parts), 0, -1):
        candidate = ".".join(parts[:end])
        if candidate in modules:
            return candidate
    return None


class ImportCollector(ast.NodeVisitor):
    def __init__(self, module: str, is_package: bool, path: str, modules: dict, package: str):
        self.module, self.is_package, self.path = module, is_package, path
        self.modules, self.package = modules, package
        self.functions: list[str] = []
        self.edges: list[Edge] = []
        self.external: list[ExternalImport] = []

    def _function(self) -> Optional[str]:
        return self.functions[-1] if self.functions else None

    def _visit_function(self, node) -> None:
        self.functions.append(getattr(node, "name", "<lambda>"))
        self.generic_visit(node)
        self.functions.pop()

    visit_FunctionDef = visit_AsyncFunctionDef = visit_Lambda = _visit_function

    def _add(self, name: str, line: int) -> None:
        if name == self.package or name.startswith(self.package + "."):
            edge = Edge(self.module, _known(name, self.modules) or name, self.path, line, self._function())
            if edge.target in self.modules and edge.target != self.module and edge not in self.edges:
                self.edges.append(edge)  # once per statement, not once per imported name
        else:
            self.external.append(ExternalImport(name, self.module, self.path, line))

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            self._add(alias.name, node.lineno)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        if node.level:
            package = self.module.split(".")
            if not self.is_package:
                package = package[:-1]
            package = package[: len(package) - (node.level - 1)]
            base = ".".join(package + ([node.module] if node.module else []))
        else:
            base = node.module or ""
        if base == "__future__":
            return
        for alias in node.names:
            submodule = f"{base}.{alias.name}"
            self._add(submodule if submodule in self.modules else base, node.lineno)

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
        if (name in ("import_module", "__import__") and node.args and isinstance(node.args[0], ast.Constant)
                and isinstance(node.args[0].value, str)):
            self._add(node.args[0].value, node.lineno)
        self.generic_visit(node)


@dataclass
class ImportGraph:
    root: Path
    modules: dict[str, tuple[Path, bool]]
    edges: list[Edge]
    external: list[ExternalImport]

    def layer(self, module: str) -> str:
        """The subpackage (directory) a module lives in; "top" for the package's own files."""
        path = self.modules[module][0]
        parts = path.relative_to(self.root).parts  # ("dagster_kstreams", ["spark",] "x.py")
        return parts[1] if len(parts) > 2 else "top"


def collect_imports(root: Path, path: Path, modules: dict, package: str = PACKAGE) -> ImportCollector:
    """The imports of one file, inside the package or not (then named by its path: ``bench.latency``)."""
    name, is_package = _module_name(root, path)
    collector = ImportCollector(name, is_package, str(path.relative_to(root)), modules, package)
    collector.visit(ast.parse(path.read_text(), filename=str(path)))
    return collector


def build_graph(root: Path = REPO, package: str = PACKAGE) -> ImportGraph:
    modules = find_modules(root, package)
    edges, external = [], []
    for path, _ in modules.values():
        collector = collect_imports(root, path, modules, package)
        edges += collector.edges
        external += collector.external
    return ImportGraph(root, modules, edges, external)


def strongly_connected(nodes: Iterable[str], edges: Iterable[Edge]) -> list[list[str]]:
    """Tarjan's algorithm; only the components with a circle (two or more modules)."""
    successors: dict[str, list[str]] = {node: [] for node in nodes}
    for edge in edges:
        successors.setdefault(edge.source, []).append(edge.target)
        successors.setdefault(edge.target, [])
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for successor in successors[node]:
            if successor not in index:
                visit(successor)
                low[node] = min(low[node], low[successor])
            elif successor in on_stack:
                low[node] = min(low[node], index[successor])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                components.append(sorted(component))

    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 10 * len(successors) + 100))
    try:
        for node in sorted(successors):
            if node not in index:
                visit(node)
    finally:
        sys.setrecursionlimit(limit)
    return sorted(components)


def _shortest_cycle(component: list[str], edges: list[Edge]) -> list[str]:
    """A shortest circle through the first module of ``component`` (breadth first)."""
    members = set(component)
    successors: dict[str, list[str]] = {}
    for edge in edges:
        if edge.source in members and edge.target in members:
            successors.setdefault(edge.source, []).append(edge.target)
    start = component[0]
    paths = {start: [start]}
    frontier = [start]
    while frontier:
        following = []
        for node in frontier:
            for successor in sorted(set(successors.get(node, []))):
                if successor == start:
                    return paths[node] + [start]
                if successor not in paths:
                    paths[successor] = paths[node] + [successor]
                    following.append(successor)
        frontier = following
    return component


def describe_cycles(graph: ImportGraph, components: list[list[str]]) -> str:
    lines = []
    for number, component in enumerate(components, 1):
        members = set(component)
        inside = sorted((e for e in graph.edges if e.source in members and e.target in members),
                        key=lambda e: (e.path, e.line))
        lines.append(f"circle {number} ({len(component)} modules): "
                     + " -> ".join(_shortest_cycle(component, graph.edges)))
        lines += [f"    {edge.where()}: {edge.source} imports {edge.target}" for edge in inside]
    return "\n".join(lines)
