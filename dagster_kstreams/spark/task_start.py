"""Starting one task's run (``TaskRunner``): take the task, read where it stands, start its query.

In this order, each step needing the one before: the fence (the task's transactional producer,
which fences any other process running the task, :mod:`.run_state`) before the checkpoint is read;
the checkpoint's committed offsets and a torn first batch; under exactly-once, the batch whose
transaction committed before a restart (replayed without sending it again); the group's offsets
repaired to where the task stands; then the query (:mod:`.task_query`). A query that Spark loses
part way starts again the same way (:class:`~dagster_kstreams.spark.running_task.RunningTask`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Optional

from dagster_kstreams.kafka.admin import TopicPartition
from dagster_kstreams.spark.checkpoint import CheckpointReader
from dagster_kstreams.spark.checkpoint_files import checkpoint_files
from dagster_kstreams.spark.committed_progress import CommittedProgress
from dagster_kstreams.spark.internal_topics import RepartitionPurge
from dagster_kstreams.spark.jvm import is_connect, quiet_task_logs, query_session
from dagster_kstreams.spark.run_state import RunFence, RunState
from dagster_kstreams.spark.running_task import RunningTask
from dagster_kstreams.spark.source import starting_point
from dagster_kstreams.spark.task_claim import new_claim, write_claim
from dagster_kstreams.spark.task_query import start_task_query
from dagster_kstreams.spark.task_result import TaskProgress
from dagster_kstreams.spark.transactional_writer import committed_before_restart
from dagster_kstreams.spark.triggers import Trigger
from dagster_kstreams.topology.application import ApplicationTopology
from dagster_kstreams.topology.task_id import TaskId

__all__ = ["start_running_task"]


def start_running_task(runner: Any, application: ApplicationTopology, task: TaskId, trigger: Trigger,
                       max_records: Optional[int], progress: Optional[Callable[[TaskProgress], None]],
                       max_records_per_batch: Optional[int], started: float,
                       released: Callable[[TaskId], None]) -> RunningTask:
    """Start ``task`` of ``application`` (``runner``: the
    :class:`~dagster_kstreams.spark.task_runner.TaskRunner` that calls this, ``started``: when it
    began to); ``released`` is called when the run lets the task go. A failure to start lets the
    fence go and raises."""
    fence: Optional[RunFence] = None
    try:
        checkpoint = runner.checkpoint_location(task)
        session = query_session(runner.spark)
        quiet_task_logs(session)
        # Through Spark Connect the batches are written in the server (remote_writer.py), whose
        # writer hands the task over from this run by its claim, written before the fence's init.
        claim = new_claim() if is_connect(session) else None
        if claim is not None:
            write_claim(checkpoint_files(session, runner.task_directory(task)), claim)
        # Taking the task fences any other process that runs it, before its checkpoint is read.
        fence = RunFence(runner.task_fence(str(task)), task, runner.application_id, runner.running_admin).__enter__()
        source_topics = application.source_topics(task.subtopology)
        assigned = [TopicPartition(topic, partition) for topic, partition in application.assigned_partitions(task)]
        reader = CheckpointReader(session, checkpoint)
        reader.discard_torn_first_batch()  # after the fence: an older run of the task is fenced
        checkpointed = reader.committed_source_offsets()
        end_offsets = {tp: offset for tp, offset in runner.admin.end_offsets(source_topics).items() if tp in assigned}
        start = starting_point(application, runner.admin, checkpointed, assigned, end_offsets)

        def batch_to_replay() -> Optional[int]:
            return (committed_before_restart(reader, runner.admin, runner.application_id, assigned)
                    if runner.exactly_once else None)

        replayed = batch_to_replay()
        if replayed is None:
            # The group shows where the task stands from its start: the checkpoint's offsets (the
            # truth: this repairs a group a previous run died before committing to), or where a new
            # checkpoint starts, so a partition that never gets a record still shows its offset.
            # (Not when the group is already past the checkpoint by the batch to replay.)
            fence.commit(start.offsets_from, "before processing anything")
        purge = RepartitionPurge(str(task), runner.running_admin,
                                 [tp for tp in assigned if application.is_repartition_topic(tp.topic)],
                                 runner.repartition_purge_interval_s)
        run = RunState(task, started, assigned, start.offsets_from, end_offsets, max_records, progress, fence,
                       runner.busy_clock, purge.after_commit)
        limits = [limit for limit in (max_records_per_batch or runner.max_records_per_batch, max_records)
                  if limit is not None]
        batch_limit = min(limits) if limits else None

        def start_query(replayed: Optional[int]) -> Any:
            return start_task_query(runner, session, reader, run, start.starting, checkpoint, trigger, batch_limit,
                                    replayed, claim)

        # Counts the batches the server writes from the commit log, from the last one before the query.
        committed = CommittedProgress(reader, run) if claim is not None else None
        query = start_query(replayed)

        def start_again() -> Any:
            # On the checkpoint as the other process left it: the batch it planned is run here,
            # and one whose transaction it committed is not sent twice.
            return start_query(batch_to_replay())
    except BaseException:
        if fence is not None:
            fence.__exit__(None, None, None)
        raise
    # Through Connect a race on the checkpoint is not started again: the server's writer has
    # taken the task from this run's fence, which can no longer ask whether it owns it.
    return RunningTask(runner.application_id, query, run, fence, runner.running_admin, source_topics, released,
                       start_again=start_again if runner.fencing and claim is None else None,
                       committed=committed)

