"""The scaling layer is pure: standard library only, so a sensor can import it cheaply and
every decision is testable without a broker, Spark or Dagster."""

from __future__ import annotations

import ast
import pathlib
import subprocess
import sys

import dagster_kstreams.scaling

SCALING_DIR = pathlib.Path(dagster_kstreams.scaling.__file__).parent


def test_scaling_modules_import_only_the_standard_library_and_each_other():
    outside = []
    for path in sorted(SCALING_DIR.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0:
                names = [node.module or ""]
            else:
                continue
            for name in names:
                top = name.split(".")[0]
                if top not in sys.stdlib_module_names and top != "__future__":
                    outside.append(f"{path.name}: {name}")
    assert outside == []


def test_importing_scaling_loads_no_spark_dagster_or_kafka():
    code = (
        "import sys, dagster_kstreams.scaling;"
        "heavy = {'pyspark', 'dagster', 'confluent_kafka', 'pandas', 'pyarrow'};"
        "print(sorted({m.split('.')[0] for m in sys.modules} & heavy))"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "[]"
