"""One worker run's loop over its tags: steps 1-5 of :mod:`.workers`' docstring, the warm-up's end,
the start-up stages and the periodic progress reports."""

import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Optional

import dagster as dg
from dagster import OpExecutionContext

from dagster_kstreams.orchestration.protocol import (
    STATE_RETIRING,
    STATE_STANDBY,
    TAG_STATE,
    TAG_TASKS,
    parse_tasks,
    report_held,
)
from dagster_kstreams.orchestration.start_timing import StartClock
from dagster_kstreams.orchestration.worker_tasks import WorkerTasks
from dagster_kstreams.spark.errors import TaskFencedError
from dagster_kstreams.spark.warm_up import WarmUp
from dagster_kstreams.topology.task_id import TaskId

__all__ = ["LoopTimes", "LostTasks", "WorkerLoop", "run_tags"]


class LostTasks:
    """Tasks a worker run lost to another process (Kafka fenced its commit).

    A lost task is left alone until the sensor revokes it from the run's tags (a later grant
    starts afresh) or ``pause_seconds`` pass; then the worker takes it again, which fences the
    other process in turn. Pausing rather than retrying at once keeps two holders from taking
    the task from each other batch after batch.
    """

    def __init__(self, pause_seconds: float):
        self.pause_seconds = pause_seconds
        self._since: dict[str, float] = {}

    def lose(self, task_id: str, now: float) -> None:
        self._since[task_id] = now

    def usable(self, tasks: Iterable[str], now: float) -> frozenset[str]:
        """``tasks`` (the run's tags) without those still lost; forgets revoked and expired ones."""
        tasks = frozenset(tasks)
        self._since = {task: since for task, since in self._since.items()
                       if task in tasks and now - since < self.pause_seconds}
        return tasks - self._since.keys()


class _HeldReport:
    """What the run reports holding (protocol ``held``), written only when it changes."""

    def __init__(self, instance: dg.DagsterInstance, run_id: str):
        self._instance, self._run_id = instance, run_id
        self._reported: Optional[frozenset[str]] = None

    def report(self, tasks: Iterable[Any]) -> None:
        held = frozenset(str(task) for task in tasks)
        if held != self._reported:
            report_held(self._instance, self._run_id, held)
            self._reported = held


def run_tags(instance: dg.DagsterInstance, run_id: str) -> Mapping[str, str]:
    run = instance.get_run_by_id(run_id)
    if run is None or run.is_finished:
        # The lag sensor took this run for dead (no heartbeat) and gave its tasks away: a worker
        # that was only stalled stops at its next batch instead of competing for them.
        raise dg.Failure(description=f"worker run {run_id} was marked finished while running; its tasks have moved")
    return run.tags


def _task_ids(tags: Mapping[str, str]) -> set[TaskId]:
    return {TaskId.parse(task) for task in parse_tasks(tags.get(TAG_TASKS))}


@dataclass(frozen=True)
class LoopTimes:
    """The loop's intervals, from :class:`~dagster_kstreams.orchestration.workers.ElasticWorkers`."""

    idle_seconds: float
    standby_poll_seconds: float
    report_interval_seconds: float
    lost_task_pause_seconds: float


class WorkerLoop:
    """The worker run's tasks kept as its tags say, one :meth:`step` at a time. ``task_order``:
    the application's tasks, upstream sub-topologies first, the order new tasks start in (records
    flow through repartition topics from the start)."""

    def __init__(self, context: OpExecutionContext, task_order: Sequence[TaskId], worker: str, tasks: WorkerTasks,
                 clock: StartClock, warm_up: Optional[WarmUp], times: LoopTimes):
        self._context, self._instance, self._run_id = context, context.instance, context.run_id
        self._task_order, self._worker, self._tasks = task_order, worker, tasks
        self._clock, self._warm_up, self._times = clock, warm_up, times
        self._lost = LostTasks(times.lost_task_pause_seconds)
        self._held = _HeldReport(self._instance, self._run_id)
        self._last_report = time.monotonic()

    def step(self) -> Optional[float]:
        """One pass over the tags: the seconds to wait before the next one, or None once retired."""
        keep, tags = self._granted()
        revoked = self._stop_revoked(keep)
        if revoked:
            self._held.report(self._tasks.running)
        if not keep and not self._tasks.running and tags.get(TAG_STATE) == STATE_RETIRING:
            self._held.report(())
            return None
        if keep:
            self._clock.reach("tasks_granted")
        self._end_warm_up(keep)
        self._start(keep)
        if time.monotonic() - self._last_report >= self._times.report_interval_seconds:
            self._tasks.report()
            self._last_report = time.monotonic()
        standby = tags.get(TAG_STATE) == STATE_STANDBY and not self._tasks.running
        return self._times.standby_poll_seconds if standby else self._times.idle_seconds

    def close(self) -> None:
        if self._warm_up is not None:
            self._warm_up.stop()
        self._tasks.stop_all()

    def _granted(self) -> tuple[set[TaskId], Mapping[str, str]]:
        """Steps 1-3: the tasks present in both reads of the tags (not lost), and the second read."""
        first = run_tags(self._instance, self._run_id)
        usable = {TaskId.parse(t) for t in self._lost.usable(map(str, _task_ids(first)), time.monotonic())}
        self._held.report({*self._tasks.running, *usable})
        # Only a task about to start needs the second read (a revocation between the two reads is
        # seen by the next loop, while the task still counts as held).
        second = run_tags(self._instance, self._run_id) if usable - set(self._tasks.running) else first
        return usable & _task_ids(second), second

    def _stop_revoked(self, keep: set[TaskId]) -> list[TaskId]:
        """Step 4: stops the running tasks not kept; a task another process took over (fenced) is
        lost and dropped from ``keep``. Any other failure of a task fails the run."""
        revoked = [task for task in self._tasks.running if task not in keep]
        for task in revoked:
            self._tasks.stop(task)
        for task, failure in self._tasks.failed():
            if not isinstance(failure, TaskFencedError):
                raise failure
            # Another process took the task over; nothing of its batch was committed here.
            self._lost.lose(str(task), time.monotonic())
            keep.discard(task)
            revoked.append(task)
            self._context.log.warning(f"{self._worker} lost task {task} (left alone for "
                                      f"{self._times.lost_task_pause_seconds:.0f}s or until revoked): {failure}")
        return revoked

    def _end_warm_up(self, keep: set[TaskId]) -> None:
        """A standby's warm-up ends when tasks are granted (the cores go to them) or when it is done."""
        if self._warm_up is None or not (keep or self._warm_up.done):
            return
        if self._warm_up.completed and self._clock.reach("warmed_up"):
            self._context.log.info(f"{self._worker} warmed up in {self._warm_up.seconds:.1f}s")
        else:
            why = f"ended early: {self._warm_up.error}" if self._warm_up.error else "cut short: tasks granted"
            self._context.log.info(f"{self._worker} warm-up {why}")
        self._warm_up.stop()
        self._warm_up = None

    def _start(self, keep: set[TaskId]) -> None:
        """Step 5: starts the kept tasks not running yet, at once, in the application's order; one
        that another process holds is lost (fenced), any other error fails the run (the tasks that
        did start are stopped by :meth:`close`)."""
        running = set(self._tasks.running)
        starting = [task for task in self._task_order if task in keep - running]
        for task, error in self._tasks.start(starting).items():
            if not isinstance(error, TaskFencedError):
                raise error
            self._lost.lose(str(task), time.monotonic())
            self._context.log.warning(f"{self._worker} could not take task {task}: {error}")
        if self._tasks.first_batch_at is not None and self._clock.reach("first_batch", self._tasks.first_batch_at):
            self._context.log.info(f"{self._worker} start: {self._clock.describe()}")
