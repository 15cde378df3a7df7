"""One run of a task: who owns the task (:class:`RunFence`) and how far the run got (:class:`RunState`).

Fencing: Spark does not lock a checkpoint across applications; Kafka fences instead
(:mod:`dagster_kstreams.kafka.fencing`). A run takes its task with a transactional producer whose
``transactional.id`` is ``<application_id>-task-<task_id>``: its ``init_transactions``, before the
checkpoint is read, fences every process that started the task earlier, so whoever started a
task last owns it. Before a batch writes anything, a transaction that adds the batch's offsets
is opened and aborted (the coordinator checks the producer's epoch); after the write, the
batch's offsets are committed to the application-id group in a transaction of their own
(``send_offsets_to_transaction``); see :mod:`dagster_kstreams.spark.batch_writer`. A fenced run
raises :class:`~dagster_kstreams.spark.errors.TaskFencedError`, naming the task, the application
id and the transactional id, and commits nothing. The lag sensor's handover (revoke, wait until
released, grant) keeps workers from ever being fenced; the fence is the backstop for a worker
taken for dead that was only stalled, or a task also started by hand. Without fencing
(``fencing=False``) offsets are committed with the admin client.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from typing import Any, Optional

from dagster_kstreams.kafka.admin import KafkaAdmin, TopicPartition
from dagster_kstreams.kafka.fencing import FenceError, ProducerFencedError, TaskFence
from dagster_kstreams.spark.errors import TaskFailedError, TaskFencedError
from dagster_kstreams.spark.task_result import TaskProgress
from dagster_kstreams.topology.view import TaskId

__all__ = ["RunFence", "RunState"]

log = logging.getLogger(__name__)


class RunFence:
    """The :class:`TaskFence` of one run (None without fencing) and the commit of its offsets.

    Being fenced becomes a :class:`TaskFencedError`, kept in ``fenced`` for the run to raise
    once its query stopped."""

    def __init__(self, fence: Optional[TaskFence], task: TaskId, application_id: str, admin: KafkaAdmin):
        self.fence, self.task, self.application_id, self.admin = fence, task, application_id, admin
        self.fenced: Optional[TaskFencedError] = None

    def __enter__(self) -> "RunFence":
        if self.fence is not None:
            self._guard(self.fence.start, "before processing anything")
        return self

    def __exit__(self, *exc: Any) -> None:
        if self.fence is not None:
            self.fence.close()

    def check(self, offsets: Mapping[TopicPartition, int], stage: str) -> None:
        """Raise if a newer run of the task fenced this one (``stage`` says where this run is)."""
        if self.fence is not None and offsets:
            self._guard(lambda: self.fence.check(_offset_keys(offsets)), stage)

    def commit(self, offsets: Mapping[TopicPartition, int], stage: str) -> None:
        """Commit ``offsets`` to the application-id group: through the fence, else with the admin client."""
        if not offsets:
            return
        if self.fence is not None:
            self._guard(lambda: self.fence.commit(_offset_keys(offsets)), stage)
        else:
            self.admin.commit_offsets(self.application_id, offsets)

    def _guard(self, call: Callable[[], None], stage: str) -> None:
        if self.fenced is not None:
            raise self.fenced
        try:
            call()
        except ProducerFencedError as error:
            self.fenced = TaskFencedError(self.task, self.application_id, error.transactional_id, stage)
            log.warning("%s", self.fenced)
            raise self.fenced from error
        except FenceError as error:
            raise TaskFailedError(self.task, self.application_id,
                                  f"{error} (a runner with fencing=False commits without a transactional id)") from error


def _offset_keys(offsets: Mapping[TopicPartition, int]) -> dict[tuple[str, int], int]:
    return {(tp.topic, tp.partition): offset for tp, offset in offsets.items()}


class RunState:
    """Progress of one run, updated by the driver after each batch."""

    def __init__(self, task: TaskId, started: float, assigned: list[TopicPartition],
                 offsets_from: Mapping[TopicPartition, int], end_offsets: Mapping[TopicPartition, int], max_records: Optional[int],
                 progress: Optional[Callable[[TaskProgress], None]], fence: RunFence):
        self.task = task
        self.started = started  # time.monotonic() when the run began
        self.assigned = assigned
        self.processed = dict(offsets_from)
        self.end_offsets = end_offsets
        self.max_records = max_records
        self.progress = progress
        self.fence = fence
        self.records_in = 0
        self.batches = 0

    def batch_done(self, batch_id: int, batch_offsets: Mapping[TopicPartition, int]) -> None:
        # Offsets count records (transaction markers and compaction gaps aside).
        self.records_in += sum(max(0, end - self.processed[tp]) for tp, end in batch_offsets.items())
        self.processed.update(batch_offsets)
        self.batches += 1
        if self.progress is not None:
            elapsed = time.monotonic() - self.started
            lag = sum(max(0, self.end_offsets[tp] - self.processed[tp]) for tp in self.assigned)
            self.progress(TaskProgress(str(self.task), batch_id, self.records_in, elapsed,
                                       self.records_in / elapsed if elapsed > 0 else 0.0, lag))
