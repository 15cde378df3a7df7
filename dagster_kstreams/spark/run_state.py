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
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Optional

from dagster_kstreams.kafka.admin import KafkaAdmin, TopicPartition
from dagster_kstreams.kafka.fencing import FenceError, FenceTimeoutError, ProducerFencedError, TaskFence
from dagster_kstreams.spark.busy_clock import SharedBusyClock
from dagster_kstreams.spark.errors import TaskFailedError, TaskFencedError
from dagster_kstreams.spark.task_result import TaskProgress
from dagster_kstreams.topology.task_id import TaskId

__all__ = ["RunFence", "RunState", "RunWindow"]

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

    def commit(self, offsets: Mapping[TopicPartition, int], stage: str, metadata: Optional[str] = None,
               produce: Optional[Callable[[Any], None]] = None) -> None:
        """Commit ``offsets`` to the application-id group: through the fence, else with the admin
        client. ``produce(producer)`` sends records in the same transaction (exactly-once; needs the fence)."""
        if not offsets:
            return
        if self.fence is not None:
            self._guard(lambda: self.fence.commit(_offset_keys(offsets), metadata, produce), stage)
        elif produce is not None:
            raise TaskFailedError(self.task, self.application_id, "exactly-once writes need fencing")
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
        except FenceTimeoutError as error:
            raise TaskFailedError(self.task, self.application_id, f"{error}; a task waits task_timeout_s "
                                  f"for Kafka to come back") from error
        except FenceError as error:
            raise TaskFailedError(self.task, self.application_id,
                                  f"{error} (a runner with fencing=False commits without a transactional id)") from error


def _offset_keys(offsets: Mapping[TopicPartition, int]) -> dict[tuple[str, int], int]:
    return {(tp.topic, tp.partition): offset for tp, offset in offsets.items()}


@dataclass(frozen=True)
class RunWindow:
    """What a run processed between two :meth:`RunState.take_window` calls."""

    offsets_from: dict[TopicPartition, int]
    offsets_to: dict[TopicPartition, int]
    records_in: int
    batches: int
    busy_seconds: float  # the time its batches took
    worker_seconds: float  # its share of the process's time (busy_clock), busy_seconds if run alone


class RunState:
    """Progress of one run, updated by the driver around each batch (:class:`BatchWriter
    <dagster_kstreams.spark.batch_writer.BatchWriter>`), read by whoever runs the task.

    A run ends as asked, never in the middle of a batch's write: :meth:`begin_batch` says no once
    ``max_records`` are done or :meth:`request_stop` was called, and :meth:`request_stop` returns
    once the batch being written (if any) is committed."""

    def __init__(self, task: TaskId, started: float, assigned: list[TopicPartition],
                 offsets_from: Mapping[TopicPartition, int], end_offsets: Mapping[TopicPartition, int],
                 max_records: Optional[int], progress: Optional[Callable[[TaskProgress], None]], fence: RunFence,
                 busy_clock: Optional[SharedBusyClock] = None,
                 after_commit: Optional[Callable[[Mapping[TopicPartition, int]], None]] = None):
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
        self.busy_seconds = 0.0
        self.busy_clock = busy_clock
        self.after_commit = after_commit  # given where each committed batch began (the repartition purge)
        self._lock = threading.Lock()
        self._idle = threading.Event()
        self._idle.set()
        self._stop_requested = False
        self._batch_started = 0.0
        self._records_out: dict[str, int] = {}  # counted by the writer (a pass on the driver)
        # processed, records, batches, busy and the process-time share at the last take
        self._window = (dict(offsets_from), 0, 0, 0.0, self._share())

    def begin_batch(self) -> bool:
        """Called before a batch is computed; False: the run ends here (nothing of it is written)."""
        with self._lock:
            if self._stop_requested or (self.max_records is not None and self.records_in >= self.max_records):
                return False
            self._idle.clear()
            self._batch_started = time.monotonic()
            if self.busy_clock is not None:
                self.busy_clock.begin(self.task)
            return True

    def end_batch(self) -> None:
        """Called when a begun batch is over (committed or failed)."""
        with self._lock:
            # The shared clock stops first: the share never counts time the busy time does not.
            if self.busy_clock is not None:
                self.busy_clock.end(self.task)
            self.busy_seconds += time.monotonic() - self._batch_started
            self._idle.set()

    def request_stop(self, timeout: Optional[float] = None) -> bool:
        """No batch begins after this; returns once the batch in progress (if any) is over
        (False: still running after ``timeout`` seconds)."""
        with self._lock:
            self._stop_requested = True
        return self._idle.wait(timeout)

    def batch_done(self, batch_id: int, batch_offsets: Mapping[TopicPartition, int]) -> None:
        # Offsets count records (transaction markers and compaction gaps aside).
        with self._lock:
            began = {tp: self.processed[tp] for tp in batch_offsets}
            self.records_in += sum(max(0, end - began[tp]) for tp, end in batch_offsets.items())
            self.processed.update(batch_offsets)
            self.batches += 1
        if self.after_commit is not None:
            self.after_commit(began)
        if self.progress is not None:
            elapsed = time.monotonic() - self.started
            lag = sum(max(0, self.end_offsets.get(tp, 0) - self.processed[tp]) for tp in self.assigned)
            self.progress(TaskProgress(str(self.task), batch_id, self.records_in, elapsed,
                                       self.records_in / elapsed if elapsed > 0 else 0.0, lag))

    def count_records_out(self, counts: Mapping[str, int]) -> None:
        """Records a batch sent per topic, when the writer counts them (not Spark's metrics)."""
        with self._lock:
            for topic, count in counts.items():
                self._records_out[topic] = self._records_out.get(topic, 0) + count

    def take_records_out(self) -> dict[str, int]:
        """What :meth:`count_records_out` added up since the last call."""
        with self._lock:
            counts, self._records_out = self._records_out, {}
        return counts

    def batch_done_elsewhere(self, batch_id: int, batch_offsets: Mapping[TopicPartition, int],
                             busy_seconds: float) -> None:
        """A batch written in another process (the Connect server's writer), learnt from the
        checkpoint's commit log: counted as :meth:`batch_done`, with the time Spark says it took."""
        with self._lock:
            self.busy_seconds += busy_seconds
        self.batch_done(batch_id, batch_offsets)

    @property
    def records_since_window(self) -> int:
        return self.records_in - self._window[1]

    def take_window(self) -> RunWindow:
        """What was processed since the last call (or the start of the run)."""
        with self._lock:
            offsets_from, records, batches, busy, share = self._window
            # Both clocks count a batch in progress up to one instant, so a window's share never
            # exceeds its busy time (the share charges the running batch as it goes; the busy clock's
            # time is the process's monotonic clock, as the batches' own).
            if self.busy_clock is not None:
                clock_share, now = self.busy_clock.share_and_time(self.task)
            else:
                clock_share, now = None, time.monotonic()
            now_busy = self.busy_seconds + (0.0 if self._idle.is_set() else now - self._batch_started)
            now_share = now_busy if clock_share is None else clock_share
            window = RunWindow(offsets_from, dict(self.processed), self.records_in - records,
                               self.batches - batches, now_busy - busy, now_share - share)
            self._window = (dict(self.processed), self.records_in, self.batches, now_busy, now_share)
        return window

    def _share(self) -> float:
        """The process-time share so far; the run's own busy time when it runs alone."""
        return self.busy_clock.share(self.task) if self.busy_clock is not None else self.busy_seconds
