"""A task that keeps running: one long-lived Structured Streaming query, stopped gracefully.

:meth:`TaskRunner.start_task <dagster_kstreams.spark.task_runner.TaskRunner.start_task>` starts a
task's query with a processing-time trigger: each micro-batch takes what has arrived since the
last one (at most ``max_records_per_batch``), so a record is processed within about one trigger
interval plus one batch of its arrival. The same query drains a backlog with ``until`` (the end
offsets to reach) or ``availableNow`` (:meth:`TaskRunner.run_task`).

What the query does between batches goes through one :class:`~dagster_kstreams.spark.run_state.RunState`:
its :class:`~dagster_kstreams.spark.batch_writer.BatchWriter` writes and commits each batch, and
:meth:`RunningTask.take_result` hands out what was processed since the last call (offsets,
records in and out, busy seconds), for a worker to report as a materialization at an interval.

:meth:`RunningTask.stop` is graceful: a batch being written is finished and committed (our offset
commit, then Spark's commit log), a batch that starts afterwards stops before it writes anything
(so it is replayed whole by whoever runs the task next), and only then is the query stopped. The
task's fence is released last.

Spark takes no lock on a checkpoint: when two processes that started the task at the same moment
plan the same batch, Spark fails the slower one (``CONCURRENT_STREAM_LOG_UPDATE``, or "Multiple
streaming queries are concurrently using" the offset log when both wrote the entry at once, or
``STATE_STORE_CHECKPOINT_LOCATION_NOT_EMPTY`` when its query found the other's first entry being
written: :func:`~dagster_kstreams.spark.errors.used_concurrently`), which may be the one that owns
the task (started it last). The other would then be
fenced at its next batch, and both would stop. So a run whose query failed that way asks its
fence whether it still owns the task: if so it starts its query again on the checkpoint as the
other left it (running the batch the other planned), else it stops fenced
(:class:`~dagster_kstreams.spark.errors.TaskFencedError`, one line). Of the two, one goes on.

A query whose batch failed because Spark lost work it had done (a Python worker killed while it
ran the batch, a task's result lost, an executor gone: :func:`~dagster_kstreams.spark.errors.lost_work`)
is started again the same way: the batch was not committed, so running it again from the
checkpoint is what a rerun after a crash does, without failing the task. (On a cluster Spark
retries a lost task itself; in local mode it does not.)
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any, Optional

from dagster_kstreams.kafka.admin import KafkaAdmin
from dagster_kstreams.processors.records import DROPPED_LATE_TOPIC
from dagster_kstreams.spark.batch_writer import ended_as_asked
from dagster_kstreams.spark.committed_progress import CommittedProgress
from dagster_kstreams.spark.errors import TaskFailedError, failure_reason, lost_work, used_concurrently
from dagster_kstreams.spark.metrics import records_written_since
from dagster_kstreams.spark.run_state import RunFence, RunState
from dagster_kstreams.spark.task_result import TaskResult

__all__ = ["RunningTask"]

log = logging.getLogger(__name__)

# How many times in a row, with no batch committed between, a run starts its query again after
# another process planned the same batch at the same moment (once is what a simultaneous start
# needs; more would mean a process that keeps planning without being fenced, which the fence rules
# out) or after Spark lost a batch's work (more would mean a worker that dies on every try of the
# same batch: the task fails, naming why; a loss now and then in a long run is started again each
# time), and how long it lets the other process's write of the offset log end first.
_STARTS_AGAIN = 3
_PAUSE_BEFORE_STARTING_AGAIN_S = 0.5


class RunningTask:
    """One task's running query (see the module docstring)."""

    def __init__(self, application_id: str, query: Any, run: RunState, fence: RunFence, admin: KafkaAdmin,
                 source_topics: list[str], on_exit: Any, start_again: Optional[Callable[[], Any]] = None,
                 committed: Optional[CommittedProgress] = None):
        self.application_id = application_id
        self.task = run.task
        self._query, self._run, self._fence, self._admin = query, run, fence, admin
        self._source_topics = source_topics
        self._on_exit = on_exit  # called once the query has stopped and the fence is closed
        self._start_again = start_again  # a new query on the task's checkpoint (None: without fencing)
        # Batches written in another process (Spark Connect), read back from the checkpoint; None:
        # the run's own writer counts them as they are written.
        self._committed = committed
        self._starts_left = _STARTS_AGAIN
        self._processed_at_last_start = dict(run.processed)
        self._failed: Optional[TaskFailedError] = None  # starting again failed
        self.started = run.started
        self._reported_batch = -1
        self._closed = False

    # -- state -----------------------------------------------------------------------------
    @property
    def active(self) -> bool:
        return self._query.isActive

    def recent_progress(self) -> list[Any]:
        """Spark's progress reports of the query's recent micro-batches (``StreamingQueryProgress``:
        input rows, per-phase durations, state store metrics), oldest first."""
        return list(self._query.recentProgress)

    def _refresh(self) -> None:
        if self._committed is not None:
            self._committed.refresh(self._query)

    @property
    def reached_max_records(self) -> bool:
        self._refresh()
        return self._run.max_records is not None and self._run.records_in >= self._run.max_records

    @property
    def records_since_report(self) -> int:
        """Records processed since the last :meth:`take_result`."""
        self._refresh()
        return self._run.records_since_window

    @property
    def processed(self) -> dict:
        """The next offset to process per assigned partition (what the group holds)."""
        self._refresh()
        return dict(self._run.processed)

    def failure(self) -> Optional[TaskFailedError]:
        """Why the query stopped on its own (a fence, a record it could not process), or None.
        A query that another process raced on the checkpoint is started again first, if this run
        still owns the task (module docstring): None then, and the task is active."""
        if self._fence.fenced is not None:
            return self._fence.fenced
        if self._query.isActive or self._started_again():
            return None
        if self._fence.fenced is not None or self._failed is not None:  # found when starting again
            return self._fence.fenced or self._failed
        error = self._query.exception()
        if error is None or ended_as_asked(error):
            return None
        log.debug("task %s: its query ended with %s", self.task, error)  # Spark's whole text (jvm.py)
        return TaskFailedError(self.task, self.application_id, failure_reason(error))

    def _started_again(self) -> bool:
        """Start the query again if it stopped because another process planned the same batch at
        the same moment, or because Spark lost the batch's work, and this run still owns the task;
        whether it did."""
        if (self._start_again is None or self._failed is not None or self._closed or self._query.isActive
                or not self._may_start_again()):
            return False
        error = self._query.exception()
        if error is None:
            return False
        lost = lost_work(error)
        if used_concurrently(error):
            stage, why = ("when another process planned the same batch at the same moment",
                          "another process planned the same batch at the same moment")
        elif lost is not None:
            stage, why = "when Spark lost a batch's work", f"Spark lost {lost}, before the batch was committed"
        else:
            return False
        self._starts_left -= 1
        try:
            # Raises, and keeps the error in the fence, if another process took the task.
            self._fence.check(self._run.processed, stage)
            time.sleep(_PAUSE_BEFORE_STARTING_AGAIN_S)
            self._query = self._start_again()
        except TaskFailedError as error:
            self._failed = error
            return False
        except Exception as error:  # Kafka unreachable while reading the group's offsets
            self._failed = TaskFailedError(self.task, self.application_id, failure_reason(error))
            return False
        log.warning("task %s of application %r: %s; this run still owns the task and starts again on its "
                    "checkpoint", self.task, self.application_id, why)
        return True

    def _may_start_again(self) -> bool:
        """Whether fewer than ``_STARTS_AGAIN`` starts came in a row: a batch committed since the last
        start begins a new row."""
        processed = dict(self._run.processed)
        if processed != self._processed_at_last_start:
            self._starts_left, self._processed_at_last_start = _STARTS_AGAIN, processed
        return self._starts_left > 0

    def take_result(self, seconds: Optional[float] = None) -> TaskResult:
        """What the task processed since the last call (or its start): offsets, records in and
        out, batches, and ``seconds``: by default the time its batches took (busy time, so
        records per second is its capacity). ``lag_left``: against the end offsets now."""
        self._refresh()
        window = self._run.take_window()
        records_out, self._reported_batch = records_written_since(self._query, self._reported_batch)
        for topic, count in self._run.take_records_out().items():  # a pass on the driver counts its own
            records_out[topic] = records_out.get(topic, 0) + count
        dropped_late = records_out.pop(DROPPED_LATE_TOPIC, 0)
        ends = self._admin.end_offsets(self._source_topics)
        return TaskResult(
            task_id=str(self.task), subtopology=self.task.subtopology, partition=self.task.partition,
            offsets_from=window.offsets_from, offsets_to=window.offsets_to, records_in=window.records_in,
            records_out=records_out, batches=window.batches,
            seconds=window.busy_seconds if seconds is None else seconds,
            lag_left={tp: max(0, ends.get(tp, offset) - offset) for tp, offset in window.offsets_to.items()},
            records_dropped_late=dropped_late, worker_seconds=window.worker_seconds,
        )

    # -- stopping ---------------------------------------------------------------------------
    def await_end(self) -> None:
        """Wait until the query ends on its own (a drain reached its end, or it failed:
        :meth:`failure` says which)."""
        while True:
            try:
                if self._committed is None:
                    self._query.awaitTermination()
                else:  # batches written elsewhere: their progress is read back as they commit
                    while not self._query.awaitTermination(0.5):
                        self._refresh()
            except Exception:  # StreamingQueryException: failure() reads it from the query
                pass
            self._refresh()
            if not self._started_again():
                return

    def stop(self, timeout: float = 300.0) -> None:
        """Stop gracefully (module docstring): finish and commit the batch being written, then
        stop the query and release the task."""
        if self._closed:
            return
        try:
            if self._query.isActive:
                deadline = time.monotonic() + timeout
                self._run.request_stop(timeout)
                # The batch's own function has returned; Spark still writes its commit log (and
                # the state store's version) before the trigger ends. Stopping before that would
                # leave the batch to be replayed, and its state unreadable until then.
                while (self._query.isActive and self._query.status.get("isTriggerActive")
                       and time.monotonic() < deadline):
                    time.sleep(0.01)
                self._query.stop()
        finally:
            self._refresh()
            self.close()

    def close(self) -> None:
        """Release the task (its fence) once the query has stopped; idempotent."""
        if self._closed:
            return
        self._closed = True
        deadline = time.monotonic() + 30
        while self._query.isActive and time.monotonic() < deadline:
            time.sleep(0.05)
        self._fence.__exit__(None, None, None)
        self._on_exit(self.task)
