"""The tasks one worker run keeps running, and their reports (:mod:`.workers` runs the loop).

A worker starts the tasks it is granted at once (:mod:`~dagster_kstreams.spark.task_starts`), each a
continuous query (``TaskRunner.start_task``: the app's ``ElasticWorkers`` give the trigger and the
records per batch), stops a revoked one gracefully, and every report interval logs a materialization
per running task of what it processed since its last one (offsets, records, records per second, lag
left; an idle task at least every ``idle_report_seconds``, so its lag stays plotted), and one per
topic partition its sub-topology wrote.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable
from functools import partial
from typing import Any, Optional

from dagster_kstreams.orchestration.app import KStreamsApp
from dagster_kstreams.orchestration.execution import (
    end_offsets_once_led,
    task_materializations,
    topic_partition_materializations,
    written_topics,
)
from dagster_kstreams.spark.running_task import RunningTask
from dagster_kstreams.spark.task_runner import TaskRunner
from dagster_kstreams.spark.task_starts import start_at_once
from dagster_kstreams.topology.task_id import TaskId

__all__ = ["WorkerTasks"]


class WorkerTasks:
    """The tasks a worker run keeps running, and their reports (module docstring)."""

    def __init__(self, app: KStreamsApp, runner: TaskRunner, admin: Any, elastic: Any,
                 log_event: Callable[[Any], None]):
        self.app, self.runner, self.admin, self.elastic = app, runner, admin, elastic
        self.log_event = log_event
        self.running: dict[TaskId, RunningTask] = {}
        self.reports: Counter = Counter()  # reports of each task in this process: the first ones are cold
        self.records = 0
        self._written_ends: dict[int, dict] = {}  # sub-topology -> end offsets of its outputs at its last report
        self._last_report: dict[TaskId, float] = {}
        self.first_batch_at: Optional[float] = None  # epoch seconds of the first batch any task committed

    def start(self, tasks: list[TaskId]) -> dict[TaskId, BaseException]:
        """Start ``tasks`` at once (:mod:`~dagster_kstreams.spark.task_starts`); the error of each
        that did not start."""
        for sub_id in dict.fromkeys(task.subtopology for task in tasks):
            if sub_id not in self._written_ends:
                self._written_ends[sub_id] = end_offsets_once_led(self.admin, written_topics(self.app, sub_id))
        started, failed = start_at_once({
            task: partial(self.runner.start_task, task, trigger_seconds=self.elastic.trigger_seconds,
                          max_records_per_batch=self.elastic.records_per_task, progress=self._batch_done)
            for task in tasks})
        self.running.update(started)
        return failed

    def _batch_done(self, progress: Any) -> None:
        # Called on Spark's batch thread after each committed batch.
        if self.first_batch_at is None:
            self.first_batch_at = time.time()

    def stop(self, task: TaskId) -> None:
        """Stop gracefully and report what the task did since its last report."""
        running = self.running.pop(task)
        try:
            running.stop()
        finally:
            self._report_task(running)

    def stop_all(self) -> None:
        for task in list(self.running):
            self.stop(task)

    def failed(self) -> list[tuple[TaskId, Exception]]:
        """Tasks whose query stopped on its own (fenced, or a failure), taken out of ``running``.
        A query that ended without either is taken out too, and started again by the next loop."""
        failures = []
        for task, running in list(self.running.items()):
            failure = running.failure()
            if failure is None and running.active:
                continue
            self.stop(task)
            if failure is not None:
                failures.append((task, failure))
        return failures

    def report(self) -> None:
        """A materialization per running task (and per topic partition written) since the last report."""
        for running in list(self.running.values()):
            self._report_task(running)
        for sub_id in {task.subtopology for task in self.running}:
            tasks = ",".join(str(task) for task in sorted(self.running) if task.subtopology == sub_id)
            ends = end_offsets_once_led(self.admin, written_topics(self.app, sub_id))
            for event in topic_partition_materializations(self.app, tasks, self._written_ends[sub_id], ends):
                self.log_event(event)
            self._written_ends[sub_id] = ends

    def _report_task(self, running: RunningTask) -> None:
        """Report what the task did since its last report: whenever it processed records, else
        on its first report (the task shows up at once) and then at least every
        ``idle_report_seconds`` (its lag stays plotted without an event every interval)."""
        task, now = running.task, time.monotonic()
        idle_for = now - self._last_report.get(task, float("-inf"))
        if (running.records_since_report == 0 and self.reports[task] > 0
                and idle_for < self.elastic.idle_report_seconds):
            return
        result = running.take_result()
        self._last_report[task] = now
        self.reports[task] += 1
        self.records += result.records_in
        for event in task_materializations(self.app, result, self.reports[task]):
            self.log_event(event)
