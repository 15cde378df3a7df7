"""Imports point downward between layers, with no circle and none hidden inside a function.

Every module of ``dagster_kstreams/`` is parsed with ``ast`` (nothing is imported), and every import
of a ``dagster_kstreams`` module becomes an edge (``import_graph.py`` says which imports count), at
module level or inside a function. Checked:

* no import cycle among the modules (function-level imports count: they only delay the circle);
* no edge from a layer to a higher one (``RANKS``, lowest first; see ``../shared/DESIGN.md``);
* no ``dagster_kstreams`` import inside a function (third-party ones, e.g. pyspark, may be lazy);
* the processors layer imports no pyspark or py4j, neither in its source nor when imported.

The tests are parametrized by layer, so that a failure names the layer that breaks the rule.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from import_graph import (PACKAGE, REPO, Edge, ExternalImport, ImportGraph, build_graph, describe_cycles,
                          strongly_connected)


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
