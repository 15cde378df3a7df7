"""The modules around the library (the benchmarks, the tests, the example project) import
``dagster_kstreams`` at their top, never inside a function: an import hidden in a function hides a
dependency from the reader and, in the library itself, a circle (tests/test_layers.py).

Every ``.py`` file of ``SCRIPT_DIRECTORIES`` is parsed with ``ast`` (``import_graph.py``: nothing is
imported); source text a test writes to a file or runs in a subprocess is a string, not an import,
and third-party imports are not checked here (the few that stay lazy say why where they are).
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from import_graph import PACKAGE, REPO, Edge, collect_imports, find_modules

SCRIPT_DIRECTORIES = ("assets", "bench", "tests")


def script_files(root: Path, directory: str) -> list[Path]:
    return sorted(path for path in (root / directory).rglob("*.py") if "__pycache__" not in path.parts)


def hidden_imports(root: Path, directory: str) -> list[Edge]:
    """Imports of ``dagster_kstreams`` modules inside a function, in the files of ``root/directory``."""
    modules = find_modules(root, PACKAGE)
    hidden = []
    for path in script_files(root, directory):
        hidden += [edge for edge in collect_imports(root, path, modules).edges if edge.function is not None]
    return sorted(hidden, key=lambda edge: (edge.path, edge.line))


@pytest.mark.parametrize("directory", SCRIPT_DIRECTORIES)
def test_no_dagster_kstreams_import_hidden_in_a_function(directory):
    assert script_files(REPO, directory), f"{directory}/ has no Python files: is SCRIPT_DIRECTORIES current?"
    hidden = hidden_imports(REPO, directory)
    assert not hidden, f"{directory}/ imports dagster_kstreams inside functions (move them to the top):\n" + \
        "\n".join(f"    {edge.where()}: imports {edge.target}" for edge in hidden)


def test_the_check_finds_imports_in_functions_and_only_there(tmp_path):
    files = {
        f"{PACKAGE}/__init__.py": "",
        f"{PACKAGE}/topology/__init__.py": "A = 1\n",
        "bench/run.py": """\
            import json
            from dagster_kstreams.topology import A

            SOURCE = '''
            def build():
                from dagster_kstreams.topology import A
            '''


            def run():
                import csv
                from dagster_kstreams.topology import A
                return A


            class Runner:
                def start(self):
                    import dagster_kstreams
            """,
        "bench/tools/load.py": """\
            import importlib


            def load():
                return importlib.import_module("dagster_kstreams.topology")
            """,
    }
    for name, text in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    found = [(edge.path, edge.line, edge.function, edge.target) for edge in hidden_imports(tmp_path, "bench")]
    assert found == [
        ("bench/run.py", 12, "run", f"{PACKAGE}.topology"),
        ("bench/run.py", 18, "start", PACKAGE),
        ("bench/tools/load.py", 5, "load", f"{PACKAGE}.topology"),
    ]
