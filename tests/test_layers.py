"""Imports point downward between layers, with no circle and none hidden inside a function.

Every module of ``dagster_kstreams/`` is parsed with ``ast`` (nothing is imported), and every import
of a ``dagster_kstreams`` module becomes an edge: ``import a.b``, ``from a import b`` (to the module
``a.b`` if there is one, else to ``a``), relative imports, and ``importlib.import_module``/
``__import__`` of a literal name, at module level or inside a function. Checked:

* no import cycle among the modules (function-level imports count: they only delay the circle);
* no edge from a layer to a higher one (``RANKS``, lowest first; see ``../shared/DESIGN.md``);
* no ``dagster_kstreams`` import inside a function (third-party ones, e.g. pyspark, may be lazy);
* the processors layer imports no pyspark or py4j, neither in its source nor when imported.

The tests are parametrized by layer, so that a failure names the layer that breaks the rule.
"""

from __future__ import annotations

import ast
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Optional

import pytest

REPO = Path(__file__).resolve().parents[1]
PACKAGE = "dagster_kstreams"

# Lowest first. A module may import its own layer, a layer of lower rank, or a pair in SIDEWAYS.
RANKS = {
    "base": 0,          # where the project keeps its files, the JVM artifacts it needs
    "topology": 1,      # the DSL and the facts of a topology: pure Python
    "scaling": 1,       # pure functions over lag snapshots
    "kafka": 2,
    "processors": 3,    # the operators, engine-neutral (no pyspark)
    "spark": 4,
    "orchestration": 5,
    "local": 6,
    "top": 7,           # dagster_kstreams/__init__.py, cli.py, generator.py
}
SIDEWAYS = {("scaling", "topology")}  # same rank, one direction only
# (module, function) whose imports of dagster_kstreams modules may stay lazy: the package __init__
# loads its Dagster names on first use (PEP 562 __getattr__), so that the DSL needs no dagster.
LAZY_ALLOWED = {(PACKAGE, "__getattr__")}
ENGINE_MODULES = ("pyspark", "py4j")


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


class _Collector(ast.NodeVisitor):
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


def build_graph(root: Path = REPO, package: str = PACKAGE) -> ImportGraph:
    modules = find_modules(root, package)
    edges, external = [], []
    for name, (path, is_package) in modules.items():
        collector = _Collector(name, is_package, str(path.relative_to(root)), modules, package)
        collector.visit(ast.parse(path.read_text(), filename=str(path)))
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


def upward_edges(graph: ImportGraph) -> list[Edge]:
    wrong = []
    for edge in graph.edges:
        source, target = graph.layer(edge.source), graph.layer(edge.target)
        if source == target or (source, target) in SIDEWAYS:
            continue
        if RANKS[target] >= RANKS[source]:
            wrong.append(edge)
    return sorted(wrong, key=lambda e: (e.path, e.line))


def function_level_edges(graph: ImportGraph) -> list[Edge]:
    return sorted((e for e in graph.edges if e.function is not None and (e.source, e.function) not in LAZY_ALLOWED),
                  key=lambda e: (e.path, e.line))


def engine_imports(graph: ImportGraph, layer: str) -> list[ExternalImport]:
    return [imp for imp in graph.external
            if graph.layer(imp.source) == layer and imp.module.split(".")[0] in ENGINE_MODULES]


GRAPH = build_graph()
LAYERS = sorted({GRAPH.layer(module) for module in GRAPH.modules}, key=lambda layer: (RANKS.get(layer, -1), layer))


def test_every_layer_has_a_rank():
    unknown = [layer for layer in LAYERS if layer not in RANKS]
    assert not unknown, f"subpackages without a rank in RANKS (add them, lowest first): {unknown}"


def test_the_graph_sees_the_package():
    assert {"base", "topology", "spark", "top"} <= set(LAYERS)
    assert any(e.source == f"{PACKAGE}.spark.session" and e.target == f"{PACKAGE}.base.jars" for e in GRAPH.edges)


@pytest.mark.parametrize("layer", LAYERS)
def test_no_import_circle(layer):
    components = [c for c in strongly_connected(GRAPH.modules, GRAPH.edges)
                  if any(GRAPH.layer(module) == layer for module in c)]
    assert not components, f"import circles through {layer}/:\n" + describe_cycles(GRAPH, components)


@pytest.mark.parametrize("layer", LAYERS)
def test_imports_point_downward(layer):
    wrong = [e for e in upward_edges(GRAPH) if GRAPH.layer(e.source) == layer]
    assert not wrong, f"{layer} (rank {RANKS[layer]}) imports a layer that is not below it:\n" + "\n".join(
        f"    {e.where()}: {e.source} imports {e.target} "
        f"({GRAPH.layer(e.target)}, rank {RANKS[GRAPH.layer(e.target)]})" for e in wrong)


@pytest.mark.parametrize("layer", LAYERS)
def test_no_import_hidden_in_a_function(layer):
    hidden = [e for e in function_level_edges(GRAPH) if GRAPH.layer(e.source) == layer]
    assert not hidden, f"{layer} imports dagster_kstreams modules inside functions (move them to the top):\n" + \
        "\n".join(f"    {e.where()}: {e.source} imports {e.target}" for e in hidden)


def _processors_exist() -> None:
    assert "processors" in LAYERS, "dagster_kstreams/processors/ (the engine-neutral layer) is missing"


def test_processors_name_no_spark():
    _processors_exist()
    found = engine_imports(GRAPH, "processors")
    assert not found, "the processors layer is engine-neutral, yet imports:\n" + "\n".join(
        f"    {imp.path}:{imp.line}: {imp.source} imports {imp.module}" for imp in found)


ENGINE_BLOCKER = textwrap.dedent(
    """
    import importlib, pkgutil, sys

    BLOCKED = ("pyspark", "py4j")

    class Blocker:
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in BLOCKED:
                raise ImportError(f"blocked import of {name}")
            return None

    sys.meta_path.insert(0, Blocker())
    """
)


def test_processors_import_without_spark():
    _processors_exist()
    script = ENGINE_BLOCKER + textwrap.dedent(
        """
        import dagster_kstreams.processors as processors
        for info in pkgutil.walk_packages(processors.__path__, processors.__name__ + "."):
            importlib.import_module(info.name)
        loaded = sorted(m for m in sys.modules if m.split(".")[0] in BLOCKED)
        assert not loaded, loaded
        print("ok")
        """
    )
    result = subprocess.run([sys.executable, "-c", script], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0 and result.stdout.split() == ["ok"], result.stderr


# The checks above must be able to fail: run them on a small package written for the purpose.

def _write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))


def test_the_checks_find_circles_upward_and_hidden_imports(tmp_path):
    _write(tmp_path, {
        f"{PACKAGE}/__init__.py": "",
        f"{PACKAGE}/cli.py": "",
        f"{PACKAGE}/topology/__init__.py": "from .a import A\n",
        f"{PACKAGE}/topology/a.py": "from . import b\nA = 1\n",
        f"{PACKAGE}/topology/b.py": "def f():\n    from .a import A\n    return A\n",
        f"{PACKAGE}/base/__init__.py": "",
        f"{PACKAGE}/base/home.py": "import dagster_kstreams.cli\n",
        f"{PACKAGE}/processors/__init__.py": "from pyspark.sql import functions\n",
        f"{PACKAGE}/scaling/__init__.py": "from dagster_kstreams.topology import A\n",
    })
    graph = build_graph(tmp_path)
    assert strongly_connected(graph.modules, graph.edges) == [[f"{PACKAGE}.topology.a", f"{PACKAGE}.topology.b"]]
    assert [(e.source, e.target) for e in upward_edges(graph)] == [(f"{PACKAGE}.base.home", f"{PACKAGE}.cli")]
    assert [(e.source, e.function) for e in function_level_edges(graph)] == [(f"{PACKAGE}.topology.b", "f")]
    assert [imp.module for imp in engine_imports(graph, "processors")] == ["pyspark.sql"]
