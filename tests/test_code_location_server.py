"""A code location served by its own gRPC server (dagster_kstreams/local/code_location_server.py):
a workspace file pointing at it loads the definitions, as the daemon of the latency bench does."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from dagster_kstreams.local.code_location_server import DAGSTER, CodeLocationServer

DEFINITIONS = """
import dagster as dg

@dg.asset
def served_asset():
    return 1

defs = dg.Definitions(assets=[served_asset], jobs=[dg.define_asset_job("served_job")])
"""


def test_a_workspace_pointing_at_the_server_loads_its_definitions(tmp_path: Path):
    code = tmp_path / "served_defs.py"
    code.write_text(DEFINITIONS)
    home = tmp_path / "home"
    home.mkdir()
    env = {**os.environ, "DAGSTER_HOME": str(home)}
    with (tmp_path / "server.log").open("wb") as log:
        server = CodeLocationServer(code, "served", log, cwd=tmp_path, env=env)
        try:
            server.wait_ready(timeout_seconds=120)
            workspace = server.write_workspace(tmp_path / "workspace.yaml")
            listed = subprocess.run([DAGSTER, "job", "list", "-w", str(workspace)], cwd=tmp_path, env=env,
                                    capture_output=True, text=True, timeout=120)
            assert listed.returncode == 0, listed.stderr[-2000:]
            assert "served_job" in listed.stdout
        finally:
            assert server.stop() is not None
    assert server.process.poll() is not None


def test_a_server_whose_code_fails_to_load_says_so_instead_of_waiting(tmp_path: Path):
    code = tmp_path / "broken_defs.py"
    code.write_text("raise RuntimeError('no definitions here')\n")
    with (tmp_path / "server.log").open("wb") as log:
        server = CodeLocationServer(code, "broken", log, cwd=tmp_path, env=os.environ)
        try:
            with pytest.raises(RuntimeError, match=r"^code server for 'broken' exited with \d+ before it served"):
                server.wait_ready(timeout_seconds=120)
        finally:
            server.stop()
