"""A ``dagster-kstreams run`` of a test topology in a subprocess, SIGKILLed part way through, and
the rerun in this process that continues from its checkpoints.

The equivalence tests use it to check that a task killed mid-run and run again (in another
process, from the same state location) still gives Kafka Streams' result.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from dagster_kstreams.spark.task_result import TaskResult
from dagster_kstreams.spark.task_runner import TaskRunner

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


@dataclass(frozen=True)
class Rerun:
    """What :func:`kill_and_rerun` gives: the killed run's output lines, the runner of the rerun
    (its stores can be read) and the rerun's task results in task order."""
    killed_lines: list[str]
    runner: TaskRunner
    results: list[TaskResult]

    @property
    def by_task(self) -> dict[str, TaskResult]:
        """The results by task id (a task run twice: its last result)."""
        return {result.task_id: result for result in self.results}


def kill_and_rerun(
    tmp_path: Path,
    build: Callable[[Any], Any],
    topics: object,
    *,
    app_id: str,
    bootstrap: str,
    spark: Any,
    kill_when: Callable[[str], bool],
    grace_seconds: float = 0.0,
    killed_args: tuple[str, ...] = ("--parallelism", "1"),
    **runner_options: Any,
) -> Rerun:
    """Run ``build(topics)`` (a function of a module of the tests directory returning a
    StreamsBuilder) in another process until it is killed (:func:`run_until_killed`, with
    ``killed_args`` added to its command line), then every task of it once more here, from the same
    state location (``tmp_path / "state"``), with a TaskRunner given ``runner_options``."""
    state = tmp_path / "state"
    lines = run_until_killed(tmp_path, f"{build.__module__}:{build.__name__}", topics, app_id=app_id,
                             bootstrap=bootstrap, state=state, kill_when=kill_when, grace_seconds=grace_seconds,
                             extra_args=killed_args)
    runner = TaskRunner(build(topics), app_id, bootstrap, state_location=str(state), spark=spark, **runner_options)
    return Rerun(lines, runner, runner.run_all())
