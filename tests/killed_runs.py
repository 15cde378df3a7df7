"""A ``dagster-kstreams run`` of a test topology in a subprocess, SIGKILLed part way through.

The equivalence tests use it to check that a task killed mid-run and run again (in another
process, from the same state location) still gives Kafka Streams' result.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable

TESTS_DIR = Path(__file__).resolve().parent


def run_until_killed(
    tmp_path: Path,
    factory: str,
    factory_args: object,
    *,
    app_id: str,
    bootstrap: str,
    state: Path,
    kill_when: Callable[[str], bool],
    grace_seconds: float = 0.0,
    extra_args: tuple[str, ...] = (),
) -> list[str]:
    """Run ``<test module>.<function>(factory_args)`` (``factory`` = ``"test_module:function"``, a
    function of the tests directory returning a StreamsBuilder) with every task, and SIGKILL the
    whole process group ``grace_seconds`` after a line of its progress output satisfies
    ``kill_when``. Returns the lines it printed; asserts it died of the kill."""
    module_name, function = factory.split(":")
    module = tmp_path / "killed_topology.py"
    module.write_text(f"from {module_name} import {function}\n\n\ndef build():\n    return {function}({factory_args!r})\n")
    command = [
        sys.executable, "-m", "dagster_kstreams.cli", "run", "killed_topology:build", "--app-id", app_id, "--all",
        "--bootstrap-servers", bootstrap, "--state-location", str(state), "--master", "local[2]", *extra_args,
    ]
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable,
           "PYTHONPATH": os.pathsep.join([str(tmp_path), str(TESTS_DIR), os.environ.get("PYTHONPATH", "")])}
    victim = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env,
                              start_new_session=True, cwd=str(tmp_path))
    lines: list[str] = []
    try:
        for line in victim.stdout:
            lines.append(line)
            if kill_when(line):
                time.sleep(grace_seconds)
                break
    finally:
        os.killpg(victim.pid, signal.SIGKILL)
        victim.wait(timeout=60)
    assert victim.returncode == -signal.SIGKILL, lines
    return lines
