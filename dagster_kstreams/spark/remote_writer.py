"""The ``foreachBatch`` function of a task run through Spark Connect: it carries what it needs.

Over Spark Connect the function is pickled and called in a Python process of the Connect server,
which keeps it for the query's batches; it sees nothing of the worker's process. So
:class:`RemoteBatchWriter` carries the task's facts (its fence, not yet started: transactional id,
Kafka settings; its checkpoint and task directory; the processing guarantee and the writer's
options) and at its first batch builds there what a classic run builds in the worker: the task's
fence, started (its ``init_transactions`` fences every older producer of the task, the worker's
own included, which does not write again), the run's state, and the writer of the guarantee
(:class:`~dagster_kstreams.spark.transactional_writer.TransactionalBatchWriter` or
:class:`~dagster_kstreams.spark.batch_writer.BatchWriter`), then calls it for every batch.

* **A newer run wins.** After its init the writer reads the task's claim
  (:mod:`~dagster_kstreams.spark.task_claim`): another run's claim means a newer run started the
  task, and the writer stops fenced, having written nothing.
* **Crash between the two commits.** The batch whose transaction committed before the checkpoint
  did (:func:`~dagster_kstreams.spark.transactional_writer.committed_before_restart`) is decided
  here, after the writer's init: no older producer can commit anything afterwards.
* **Progress.** The worker learns it from what is durable: the checkpoint's commit log and the
  group's offsets (:mod:`~dagster_kstreams.spark.committed_progress`), never from this process.
* **No transaction left open.** The server stops this process once the query has ended, without
  closing anything. Each batch's transaction is committed before the function returns, and one
  that fails is aborted (:meth:`~dagster_kstreams.kafka.fencing.TaskFence.commit`) and its
  producer closed here. A query stopped during a batch lets that batch's function return first
  (Spark waits for it), so its transaction is committed; the worker cannot make the server's
  writer refuse a batch that starts as it stops, as a classic run's writer does, and such a batch
  is written whole, then replayed by the next run without being sent again.

The checkpoint is read with plain file I/O: the state location is a local directory that the
server sees at the same path (on one machine, or a shared mount).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Optional

from dagster_kstreams.kafka.admin import KafkaAdmin, TopicPartition
from dagster_kstreams.kafka.fencing import TaskFence
from dagster_kstreams.spark.batch_writer import BatchWriter
from dagster_kstreams.spark.checkpoint import CheckpointReader, WriteIntents
from dagster_kstreams.spark.checkpoint_files import checkpoint_files
from dagster_kstreams.spark.errors import TaskFencedError
from dagster_kstreams.spark.run_state import RunFence, RunState
from dagster_kstreams.spark.task_claim import read_claim
from dagster_kstreams.spark.transactional_writer import TransactionalBatchWriter, committed_before_restart
from dagster_kstreams.topology.task_id import TaskId

__all__ = ["RemoteBatchWriter", "AtLeastOnceSink"]


@dataclass(frozen=True)
class AtLeastOnceSink:
    """What :class:`~dagster_kstreams.spark.batch_writer.BatchWriter` needs besides the run."""

    kafka_options: dict[str, str]  # Spark's Kafka sink (the Java client's spelling)
    written_topics: list[str]
    largest_record_bytes: Optional[int]


@dataclass
class RemoteBatchWriter:
    """Spark's ``foreachBatch`` function of one run through Spark Connect (module docstring).

    ``sink`` is None under exactly-once. ``offsets_from``: where the run started (the records of
    a batch are counted from them); ``max_records`` ends the run as in the worker."""

    application_id: str
    task: TaskId
    claim: str
    fence: Optional[TaskFence]  # not started: pickled with its settings only
    kafka_config: dict[str, str]  # librdkafka's: bootstrap.servers and the rest
    task_timeout_s: float
    checkpoint: str
    task_directory: str
    assigned: list[TopicPartition]
    offsets_from: dict[TopicPartition, int]
    max_records: Optional[int]
    drops_late: bool
    ordered: bool
    sink: Optional[AtLeastOnceSink]
    _writer: Any = field(default=None, repr=False)
    _run_fence: Optional[RunFence] = field(default=None, repr=False)

    def __getstate__(self) -> dict[str, Any]:
        # Built in the server's process, never pickled.
        return {**self.__dict__, "_writer": None, "_run_fence": None}

    def __call__(self, batch: Any, batch_id: int) -> None:
        if self._writer is None:
            self._writer = self._start()
        try:
            self._writer(batch, batch_id)
        except BaseException:
            # The query ends with this failure, and the server then stops this process without
            # closing anything: the fence's producer is closed here (its transaction, if the
            # failure left one, was aborted by the fence).
            self._run_fence.__exit__(None, None, None)
            raise

    def _start(self) -> Any:
        admin = KafkaAdmin(self.kafka_config["bootstrap.servers"],
                           {k: v for k, v in self.kafka_config.items() if k != "bootstrap.servers"})
        admin = admin.waiting_out_outages(self.task_timeout_s)
        fence = self._run_fence = RunFence(self.fence, self.task, self.application_id, admin).__enter__()
        claimed = read_claim(checkpoint_files(None, self.task_directory))
        if self.fence is not None and claimed != self.claim:
            fence.__exit__(None, None, None)
            raise TaskFencedError(self.task, self.application_id, self.fence.transactional_id,
                                  "before writing anything (a newer run of the task claimed it)")
        reader = CheckpointReader(None, self.checkpoint)
        run = RunState(self.task, time.monotonic(), self.assigned, self.offsets_from, {}, self.max_records,
                       None, fence)
        if self.sink is None:
            replayed = committed_before_restart(reader, admin, self.application_id, self.assigned)
            return TransactionalBatchWriter(run, reader, self.drops_late, self.ordered, replayed)
        return BatchWriter(run, self.application_id, reader, WriteIntents(None, self.task_directory), admin,
                           self.sink.kafka_options, self.kafka_config, self.sink.written_topics, self.drops_late,
                           self.ordered, self.sink.largest_record_bytes)
