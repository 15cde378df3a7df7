"""`dg` (dagster-dg-cli, a dev dependency) finds KStreamsComponent through the package's
``dagster_dg_cli.registry_modules`` entry point and scaffolds a ``defs.yaml`` that loads as it is."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import dagster as dg
import yaml
from dagster.components.testing import create_defs_folder_sandbox

from dagster_kstreams.orchestration.component import KStreamsComponent

REPO_ROOT = Path(__file__).resolve().parent.parent
COMPONENT = "dagster_kstreams.orchestration.component.KStreamsComponent"
PYPROJECT = """\
[project]
name = "streams_project"
version = "0.1.0"
requires-python = ">=3.11"

[tool.dg]
directory_type = "project"

[tool.dg.project]
root_module = "streams_project"
"""


def _dg(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    dg_command = shutil.which("dg", path=os.pathsep.join([str(Path(sys.executable).parent), os.environ["PATH"]]))
    assert dg_command, "no `dg`: dagster-dg-cli is a dev dependency (pip install -e '.[dev]')"
    paths = [str(project / "src"), str(REPO_ROOT), os.environ.get("PYTHONPATH", "")]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(path for path in paths if path), "COLUMNS": "200",
           "DAGSTER_HOME": str(project / "dagster_home")}
    return subprocess.run([dg_command, *args], cwd=project, env=env, capture_output=True, text=True, timeout=180,
                          stdin=subprocess.DEVNULL)


def test_dg_lists_and_scaffolds_the_component(tmp_path):
    project = tmp_path / "streams_project"
    (project / "src" / "streams_project" / "defs").mkdir(parents=True)
    (project / "dagster_home").mkdir()
    (project / "pyproject.toml").write_text(PYPROJECT)  # no registry_modules: the entry point must do
    (project / "src" / "streams_project" / "__init__.py").write_text("")
    (project / "src" / "streams_project" / "defs" / "__init__.py").write_text("")

    listed = _dg(project, "list", "components")
    assert listed.returncode == 0, listed.stderr
    assert COMPONENT in listed.stdout

    scaffolded = _dg(project, "scaffold", "defs", COMPONENT, "top_words", "--topology",
                     "assets.top_words:build_topology", "--app-id", "top-words", "--partitions", "2")
    assert scaffolded.returncode == 0, scaffolded.stdout + scaffolded.stderr
    written = yaml.safe_load((project / "src" / "streams_project" / "defs" / "top_words" / "defs.yaml").read_text())
    assert written == {"type": COMPONENT, "attributes": {"topology": "assets.top_words:build_topology",
                                                         "app_id": "top-words",
                                                         "topic_partitions": {"word-counts": 2}}}

    # The file loads as it is.
    with create_defs_folder_sandbox() as sandbox:
        sandbox.scaffold_component(KStreamsComponent, defs_path="top_words", defs_yaml_contents=written)
        with sandbox.build_all_defs() as defs:
            keys = {spec.key for item in defs.assets
                    for spec in (item.specs if isinstance(item, dg.AssetsDefinition) else [item])}
    assert dg.AssetKey(["top_words", "subtopology_0"]) in keys
