"""A ``dagster-kstreams run`` of a test topology in a subprocess, SIGKILLed part way through, and
the rerun in this process that continues from its checkpoints.

The equivalence tests use it to check that a task killed mid-run and run again (in another
process, from the same state location) still gives Kafka Streams' result.

The killed process is started ahead (:mod:`killed_run_process`): by the time a test needs it, it has
imported the command, started its SparkSession and warmed it up; the first one starts when the tests
are collected, each next one when the last is killed. A cold process cost each killed run a Python
start, a JVM start, a SparkSession and a cold first query (about 13 s to the first batch at a load
of 3-4 on the 2-core machine, 2 s warm); the run itself, its kill and the rerun are the same.
"""

from __future__ import annotations

import atexit
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from dagster_kstreams.spark.task_result import TaskResult
from dagster_kstreams.spark.task_runner import TaskRunner

TESTS_DIR = Path(__file__).resolve().parent
# The killed runs' Spark master: the one the warm processes start their sessions on.
KILLED_RUN_MASTER = "local[2]"


class _WarmProcesses:
    """At most one :mod:`killed_run_process` waiting for its command line, started ahead."""

    def __init__(self) -> None:
        self.waiting: subprocess.Popen | None = None
        self.bootstrap: str | None = None  # the broker the last killed run used: the next warms up on it
        # The JVMs' working and scratch directory: a SIGKILLed JVM cannot delete its own scratch files
        # (Spark's /tmp/spark-*, tens of MB each), so they are kept here and removed with it at exit.
        self.directory = tempfile.mkdtemp(prefix="killed-runs-")
        atexit.register(self.remove_scratch)

    def _start(self) -> subprocess.Popen:
        # The factories' modules (tests/) must be importable by the driver and by its Python
        # workers, whose environment is the JVM's: on PYTHONPATH from the start.
        env = {**os.environ, "PYSPARK_PYTHON": sys.executable,
               "PYTHONPATH": os.pathsep.join([str(TESTS_DIR), os.environ.get("PYTHONPATH", "")]),
               "SPARK_LOCAL_DIRS": self.directory, "TMPDIR": self.directory,
               "JAVA_TOOL_OPTIONS": f"{os.environ.get('JAVA_TOOL_OPTIONS', '')} -Djava.io.tmpdir={self.directory}".strip()}
        warm_up = [self.bootstrap] if self.bootstrap else []
        return subprocess.Popen([sys.executable, str(TESTS_DIR / "killed_run_process.py"), KILLED_RUN_MASTER, *warm_up],
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                                env=env, start_new_session=True, cwd=self.directory)

    def take(self, argv: list[str], cwd: Path, path: list[str]) -> subprocess.Popen:
        """A process running ``dagster-kstreams <argv>`` in ``cwd`` with ``path`` first on sys.path."""
        if "--bootstrap-servers" in argv:
            self.bootstrap = argv[argv.index("--bootstrap-servers") + 1]
        process = self.waiting if self.waiting is not None and self.waiting.poll() is None else self._start()
        self.waiting = None
        process.stdin.write(json.dumps({"argv": argv, "cwd": str(cwd), "path": path}) + "\n")
        process.stdin.flush()
        return process

    def start_next(self, bootstrap: str | None = None) -> None:
        """Start the next one (once the last is killed, so that it never slows the run being killed),
        warming up on ``bootstrap`` (else on the broker of the last killed run, if any)."""
        self.bootstrap = bootstrap or self.bootstrap
        if self.waiting is None:
            self.waiting = self._start()

    def stop(self) -> None:
        if self.waiting is not None and self.waiting.poll() is None:
            os.killpg(self.waiting.pid, signal.SIGKILL)
            self.waiting.wait(timeout=60)
        self.waiting = None

    def remove_scratch(self) -> None:
        self.stop()
        shutil.rmtree(self.directory, ignore_errors=True)


_WARM = _WarmProcesses()


def start_killed_run(argv: list[str], cwd: Path, path: tuple[str, ...] = ()) -> subprocess.Popen:
    """``dagster-kstreams <argv>`` (with ``--master`` ``KILLED_RUN_MASTER``) in a process group of its
    own, its progress lines on its stdout; ``path`` goes first on its sys.path. The caller kills it
    (:func:`kill_group`)."""
    master = argv[argv.index("--master") + 1]
    if master != KILLED_RUN_MASTER:
        raise ValueError(f"a killed run runs on {KILLED_RUN_MASTER}, not {master}")
    return _WARM.take(argv, cwd, [str(entry) for entry in path])


def start_next_killed_run(bootstrap: str | None = None) -> None:
    """Start the process the next killed run will take, if none waits yet; it warms its SparkSession
    up on ``bootstrap``'s broker if given."""
    _WARM.start_next(bootstrap)


def kill_group(victim: subprocess.Popen) -> None:
    """SIGKILL the process and everything it started (its JVM, its Python workers); the next killed
    run's process starts."""
    os.killpg(victim.pid, signal.SIGKILL)
    victim.wait(timeout=60)
    _WARM.start_next()


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
    argv = ["run", "killed_topology:build", "--app-id", app_id, "--all", "--bootstrap-servers", bootstrap,
            "--state-location", str(state), "--master", KILLED_RUN_MASTER, *extra_args]
    victim = start_killed_run(argv, tmp_path, (str(tmp_path),))
    lines: list[str] = []
    try:
        for line in victim.stdout:
            lines.append(line)
            if kill_when(line):
                time.sleep(grace_seconds)
                break
    finally:
        kill_group(victim)
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


def kill_after_first_batch_at_least_once(tmp_path: Path, build: Callable[[Any], Any], topics: object, *,
                                         app_id: str, bootstrap: str, spark: Any) -> Rerun:
    """:func:`kill_and_rerun` killed once task 0_0 has committed its first batch, its tasks run one at a
    time in batches of 60 records, at-least-once in both runs (under exactly-once the upstream commit
    markers would count as offsets and move the cuts)."""
    return kill_and_rerun(tmp_path, build, topics, app_id=app_id, bootstrap=bootstrap, spark=spark,
                          kill_when=lambda line: line.startswith("task 0_0 batch"),
                          killed_args=("--parallelism", "1", "--max-records-per-batch", "60",
                                       "--processing-guarantee", "at_least_once"),
                          max_records_per_batch=60, processing_guarantee="at_least_once")
