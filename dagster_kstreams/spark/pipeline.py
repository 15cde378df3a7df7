"""Every task of an application at once, sub-topologies pipelined (``TaskRunner.run_all``).

A task of a sub-topology that no other sub-topology feeds drains its input to the end offsets
seen at start. A task that reads one repartition topic runs from the start too, processing
records as the upstream tasks write them, and stops once every upstream task is done and it
has reached the end of its input as it is then: the downstream half of a word count counts while
the upstream half still splits. A task that reads several topics, one of them written by another
sub-topology, waits until its upstream is done and then drains: its input then fits one
micro-batch (when ``max_records_per_batch`` allows), which is what Kafka Streams' order across its
partitions needs (README, "Order across co-partitioned inputs").

All tasks are concurrent Spark queries on the runner's SparkSession, so they share its cores; they
are started at once (:mod:`~dagster_kstreams.spark.task_starts`).
With a ``parallelism``, :func:`run_in_waves` runs one sub-topology after another instead.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from typing import Any, Optional

from dagster_kstreams.kafka.admin import TopicPartition
from dagster_kstreams.spark.running_task import RunningTask
from dagster_kstreams.spark.task_result import TaskProgress, TaskResult
from dagster_kstreams.spark.task_starts import start_at_once
from dagster_kstreams.topology.task_id import TaskId

__all__ = ["run_in_waves", "run_pipelined"]

_POLL_SECONDS = 0.05


def run_pipelined(runner: Any, tasks: list[TaskId], max_records: Optional[int],
                  progress: Optional[Callable[[TaskProgress], None]]) -> list[TaskResult]:
    """Run ``tasks`` of ``runner`` (the :class:`~dagster_kstreams.spark.task_runner.TaskRunner`
    that calls this) as the module docstring says; results in the order of ``tasks``."""
    application = runner.application
    # Writers that run before a sub-topology in the execution order (a cycle through topics, where
    # none can, is broken where execution_order breaks it).
    rank = {sub_id: i for i, sub_id in enumerate(application.execution_order())}
    upstream = {sub_id: {writer for topic in application.source_topics(sub_id)
                         for writer in application.writers(topic) if rank[writer] < rank[sub_id]}
                for sub_id in application.subtopology_ids}
    running: dict[TaskId, RunningTask] = {}
    results: dict[TaskId, TaskResult] = {}
    waiting = [task for task in tasks if upstream[task.subtopology]
               and len(set(application.source_topics(task.subtopology))) > 1]
    ends: dict[TaskId, dict[TopicPartition, int]] = {}  # where a following task stops

    def start(starts: dict[TaskId, Callable[[], RunningTask]]) -> None:
        started, failed = start_at_once(starts)
        running.update(started)  # stopped below if another failed
        if failed:
            raise next(iter(failed.values()))

    try:
        start({task: partial(runner.start_task, task, max_records=max_records, progress=progress)
               if upstream[task.subtopology] else partial(runner.start_drain, task, max_records, progress)
               for task in tasks if task not in waiting})
        while running or waiting:
            done = {sub_id for sub_id in application.subtopology_ids
                    if all(task in results for task in tasks if task.subtopology == sub_id)}
            ready = [task for task in waiting if upstream[task.subtopology] <= done]
            waiting = [task for task in waiting if task not in ready]
            start({task: partial(runner.start_drain, task, max_records, progress) for task in ready})
            for task, run in list(running.items()):
                failure = run.failure()
                if failure is not None:
                    raise failure
                if run.active and upstream[task.subtopology] and task not in ends and upstream[task.subtopology] <= done:
                    ends[task] = runner.admin.end_offsets(application.source_topics(task.subtopology))
                reached = task in ends and all(offset >= ends[task].get(tp, 0) for tp, offset in run.processed.items())
                if not run.active or reached or run.reached_max_records:
                    run.stop()
                    results[task] = runner.finish(run)
                    del running[task]
            time.sleep(_POLL_SECONDS)
    finally:
        for run in running.values():
            run.stop()
    return [results[task] for task in tasks]


def run_in_waves(runner: Any, tasks: list[TaskId], max_records: Optional[int],
                 progress: Optional[Callable[[TaskProgress], None]], parallelism: int) -> list[TaskResult]:
    """Run ``tasks`` one sub-topology after another, ``parallelism`` of its tasks at a time, each
    drained to the end offsets it sees at its start; results in the order of ``tasks``."""
    by_subtopology: dict[int, list[TaskId]] = {}
    for task in tasks:
        by_subtopology.setdefault(task.subtopology, []).append(task)
    results: dict[TaskId, TaskResult] = {}
    for group in by_subtopology.values():
        with ThreadPoolExecutor(max_workers=parallelism, thread_name_prefix="task") as pool:
            futures = {task: pool.submit(runner.run_task, task, max_records, progress) for task in group}
            for task, future in futures.items():
                results[task] = future.result()
    return [results[task] for task in tasks]
