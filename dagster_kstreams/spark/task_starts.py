"""Several tasks started at once: ``run_all``'s tasks, and the tasks a worker is granted.

A task's start mostly waits: its fence's transactional producer registers with the broker, the
group's offsets and the topics' end offsets are read, its checkpoint is read and Spark plans its
query in the JVM. One after another, the word count's eight tasks took over 12 s to start, each later
one slower while the first ones' batches held the driver; started at once, all eight were running
after about 2 s (bench/README.md, "Session 22: where the word count's wall clock goes").
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor

from dagster_kstreams.spark.running_task import RunningTask
from dagster_kstreams.topology.task_id import TaskId

__all__ = ["STARTING_AT_ONCE", "start_at_once"]

# At most this many starts at a time: a worker granted 64 tasks does not open 64 connections at once.
STARTING_AT_ONCE = 8


def start_at_once(starts: Mapping[TaskId, Callable[[], RunningTask]]) -> tuple[dict[TaskId, RunningTask],
                                                                             dict[TaskId, BaseException]]:
    """Call every start of ``starts`` (submitted in its order), at most :data:`STARTING_AT_ONCE` at a
    time; returns the tasks that started and the error of each that did not, both in that order.
    Every start has ended when this returns, so the caller owns every task that started."""
    if not starts:
        return {}, {}
    with ThreadPoolExecutor(max_workers=min(STARTING_AT_ONCE, len(starts)), thread_name_prefix="task-start") as pool:
        futures = {task: pool.submit(start) for task, start in starts.items()}
    started = {task: future.result() for task, future in futures.items() if future.exception() is None}
    failed = {task: future.exception() for task, future in futures.items() if future.exception() is not None}
    return started, failed
