"""The write of one micro-batch under ``processing_guarantee="exactly_once_v2"``: one transaction.

As Kafka Streams' EOS v2, a task's output and its input offsets are committed together by the
task's transactional producer (``transactional.id`` = ``<app>-task-<task>``, the producer that
also fences the task: :mod:`dagster_kstreams.kafka.fencing`). Each micro-batch is collected to
the driver as Arrow and sent inside one transaction that also commits the batch's end offsets to
the application-id group, then committed. Readers of the output, the tasks downstream included,
read ``read_committed``: they see a batch's records all at once with its offsets, or never.

* **A zombie's writes are aborted.** A run that another process fenced fails at its next send or
  commit, and the coordinator aborts its open transaction: two processes on one task can never
  both land a batch (with at-least-once, one window is left: :mod:`~dagster_kstreams.spark.batch_writer`).
* **Crash between the two commits.** Spark's checkpoint commits a batch after ``foreachBatch``
  returned, so a run killed after its transaction committed but before Spark's commit log was
  written replays that batch. The committed offsets decide: each commit carries
  ``<query id>:<batch>`` as offset metadata, and a replayed batch whose mark is in the group is
  computed again (its state must be rebuilt) but not sent (:func:`committed_before_restart`).
* **No write intents, no position headers.** What an aborted attempt sent is invisible, so the
  replay dedup of at-least-once is not needed, and a repartition record carries its timestamp
  as its own Kafka timestamp (:mod:`dagster_kstreams.kafka.table_producer`), as in Kafka Streams.

Cost: the batch's output goes through the driver (Arrow, then librdkafka, one record per Python
call). The word-count bench measures it against at-least-once (``bench/README.md``). Since the
driver holds each batch anyway, a stateless Python pass runs here too, on the collected source
rows (``on_driver``: :class:`~dagster_kstreams.spark.strategies.StatelessOnDriver`), and its
records go to the producer as the pass's lists, never through Arrow.
"""

from __future__ import annotations

import logging
from typing import Callable, Optional

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import DataFrame

from dagster_kstreams.kafka.admin import KafkaAdmin, TopicPartition
from dagster_kstreams.kafka.table_producer import RecordColumns, produce_columns
from dagster_kstreams.processors.records import DROPPED_LATE_TOPIC
from dagster_kstreams.spark.batch_writer import within_run
from dagster_kstreams.spark.checkpoint import CheckpointReader
from dagster_kstreams.spark.run_state import RunState

__all__ = ["AT_LEAST_ONCE", "DEFAULT_PROCESSING_GUARANTEE", "EXACTLY_ONCE_V2", "PROCESSING_GUARANTEES",
           "TransactionalBatchWriter", "check_processing_guarantee", "commit_mark", "committed_before_restart",
           "topic_counts"]

log = logging.getLogger(__name__)

# Kafka Streams' processing.guarantee values (EOS v2 is its only exactly-once mode since 4.0).
AT_LEAST_ONCE = "at_least_once"
EXACTLY_ONCE_V2 = "exactly_once_v2"
PROCESSING_GUARANTEES = (AT_LEAST_ONCE, EXACTLY_ONCE_V2)
# The default: on the word-count bench exactly-once costs less than at-least-once (bench/README.md).
DEFAULT_PROCESSING_GUARANTEE = EXACTLY_ONCE_V2


def check_processing_guarantee(guarantee: str, fencing: bool) -> str:
    """``guarantee``, if it is one and the runner can give it (exactly-once writes through the fence)."""
    if guarantee not in PROCESSING_GUARANTEES:
        raise ValueError(f"processing_guarantee must be one of {', '.join(PROCESSING_GUARANTEES)}, got {guarantee!r}")
    if guarantee == EXACTLY_ONCE_V2 and not fencing:
        raise ValueError("processing_guarantee='exactly_once_v2' (the default) writes through the task's "
                         "transactional producer: it needs fencing=True (or set processing_guarantee='at_least_once')")
    return guarantee


def topic_counts(table: pa.Table) -> dict[str, int]:
    """``{topic: rows}`` of a collected batch."""
    if not table.num_rows:
        return {}
    counts = pc.value_counts(table["topic"])
    return {str(topic): int(count) for topic, count in zip(counts.field("values").to_pylist(),
                                                           counts.field("counts").to_pylist())}


def commit_mark(query_id: Optional[str], batch_id: int) -> str:
    """The offset metadata a batch's transaction commits: which checkpoint, which batch."""
    return f"dagster-kstreams:{query_id}:{batch_id}"


def committed_before_restart(checkpoint: CheckpointReader, admin: KafkaAdmin, group: str,
                             assigned: list[TopicPartition]) -> Optional[int]:
    """The batch the checkpoint planned but did not commit whose transaction did commit (the
    run died between the two), or None. Read after the task's fence started, so no older run of
    the task can commit anything meanwhile."""
    planned, committed = checkpoint.last_planned_batch(), checkpoint.last_committed_batch()
    if planned is None or planned == committed:
        return None
    ends = checkpoint.batch_source_offsets(planned)
    mark = commit_mark(checkpoint.query_id(), planned)
    group_offsets = admin.committed_with_metadata(group, sorted({tp.topic for tp in assigned}))
    if all(group_offsets.get(tp) == (ends.get((tp.topic, tp.partition)), mark) for tp in assigned):
        return planned
    return None


class TransactionalBatchWriter:
    """Spark's ``foreachBatch`` function of one run under exactly-once (module docstring).

    ``replayed`` is the batch whose transaction committed before the run restarted
    (:func:`committed_before_restart`); ``drops_late`` and ``ordered`` as for
    :class:`~dagster_kstreams.spark.batch_writer.BatchWriter`. ``on_driver``: what turns the
    collected batch into its output records (the strategy's :meth:`~dagster_kstreams.spark.strategies.Strategy.on_driver`),
    None when the batch's rows are those records. Every batch's records are counted here, per topic."""

    def __init__(self, run: RunState, checkpoint: CheckpointReader, drops_late: bool, ordered: bool,
                 replayed: Optional[int], on_driver: Optional[Callable[[pa.Table], RecordColumns]] = None):
        self.run, self.checkpoint = run, checkpoint
        self.drops_late, self.ordered, self.replayed = drops_late, ordered, replayed
        self.on_driver = on_driver
        self._query_id: Optional[str] = None

    def __call__(self, batch: DataFrame, batch_id: int) -> None:
        within_run(self.run, self._write, batch, batch_id)

    def _write(self, batch: DataFrame, batch_id: int) -> None:
        run = self.run
        batch_offsets = self.checkpoint.batch_end_offsets(batch_id, run.assigned)
        table = batch.toArrow()  # computes the batch, its state included
        if self.on_driver is None:
            # Counted here from the rows themselves, dropped-late ones included (reported as such):
            # exact for every batch, where Spark's observed metrics may miss a run's last one.
            run.count_records_out(topic_counts(table))
            records = RecordColumns.of_table(self._records(table))
        else:
            records = self.on_driver(table)
            run.count_records_out(records.topic_counts())
        if batch_id == self.replayed:
            log.warning("task %s: batch %d was committed to Kafka before the run restarted; its records are not "
                        "sent again", run.task, batch_id)
        else:
            if self._query_id is None:
                self._query_id = self.checkpoint.query_id()  # written by Spark before the first batch
            run.fence.commit(batch_offsets, f"at the commit of batch {batch_id}",
                             metadata=commit_mark(self._query_id, batch_id),
                             produce=lambda producer: produce_columns(producer, records))
        run.batch_done(batch_id, batch_offsets)

    def _records(self, table: pa.Table) -> pa.Table:
        if self.drops_late and table.num_rows:
            table = table.filter(pc.not_equal(table["topic"], DROPPED_LATE_TOPIC))  # counted, never written
        if self.ordered and table.num_rows:
            # Stable, nulls first as Spark sorts: rows with the same emit_order keep the batch's order.
            emit_order = pc.fill_null(table["emit_order"], np.iinfo(np.int64).min).to_numpy()
            table = table.take(np.argsort(emit_order, kind="stable"))
        return table
