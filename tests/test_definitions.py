"""The Dagster entry point: `dagster definitions validate` on workspace.yaml, and its Kafka resource."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import definitions

REPO_ROOT = Path(__file__).resolve().parent.parent
DAGSTER = str(Path(sys.executable).parent / "dagster")


def _validate(workspace: Path, tmp_path: Path, extra_env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "DAGSTER_HOME": str(tmp_path / "dagster_home"), **(extra_env or {})}
    (tmp_path / "dagster_home").mkdir(exist_ok=True)
    return subprocess.run(
        [DAGSTER, "definitions", "validate", "-w", str(workspace)],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=workspace.parent,
        env=env,
        stdin=subprocess.DEVNULL,
    )


def test_workspace_definitions_validate(tmp_path: Path):
    result = _validate(REPO_ROOT / "workspace.yaml", tmp_path)
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    assert "All code locations passed validation" in output


def test_validation_fails_on_broken_definitions(tmp_path: Path):
    # The same workspace layout with a definitions.py that cannot load: the check must catch it.
    shutil.copy(REPO_ROOT / "workspace.yaml", tmp_path / "workspace.yaml")
    (tmp_path / "definitions.py").write_text("import dagster as dg\nraise RuntimeError('broken example')\n")
    result = _validate(tmp_path / "workspace.yaml", tmp_path)
    assert result.returncode == 1
    assert "broken example" in result.stdout + result.stderr


@pytest.mark.integration
def test_kafka_resource_reaches_the_configured_broker(kafka_bootstrap: str, kafka_admin, unique_topic, monkeypatch):
    monkeypatch.setenv("DAGSTER_KSTREAMS_BOOTSTRAP_SERVERS", kafka_bootstrap)
    kafka = definitions.build_definitions().resources["kafka"]
    assert kafka.bootstrap_servers == kafka_bootstrap

    topic = unique_topic("resource")
    kafka_admin.create_topic(topic, 2)
    assert kafka.admin().partition_count(topic) == 2
