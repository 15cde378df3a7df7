"""The write of one micro-batch: fence check, write intent, replay dedup, Kafka write, offset commit.

Sinks: Spark's Kafka sink; one query writes every sink topic of the sub-topology (output topics,
repartition topics, the dead-letter topic) through a ``topic`` column. The producer's default
partitioner (murmur2 of the key bytes) places each record, so a repartition topic is
co-partitioned with any other Kafka-written topic; only a sub-topology with a stream partitioner
adds a ``partition`` column (null where its partitioner left the choice to the default).

Offsets: Spark's checkpoint is the source of truth. After each batch's output is in Kafka, its end
offsets are committed to the consumer group named by the application id (through the task's
transactional producer: :mod:`dagster_kstreams.spark.run_state`), so ``kafka-consumer-groups
--describe`` and lag monitors see the task's progress.

Guarantee: at-least-once towards the consumer group, and no duplicates from replays. Spark's
Kafka writes are not transactional: a run killed while writing batch ``N`` leaves part of its
output in Kafka, and the next run replays ``N`` from the checkpoint (same offsets, same state).
Before a batch writes, the end offsets of its sink topics are recorded
(:class:`~dagster_kstreams.spark.checkpoint.WriteIntents`), and every record carries one header,
:data:`HEADER_WRITTEN` = ``<app>/<task>@<batch>:<position>``, naming its task and its position in
the batch; a replay reads back what the killed attempt wrote and skips those positions. (One
short header rather than several: Spark's Kafka sink pays per header of every record.) This
needs deterministic user functions. Records written by a topic extractor to topics not known in
advance are not covered, nor records of the killed attempt on a repartition topic that its
downstream task consumed and purged before the replay
(:mod:`~dagster_kstreams.spark.internal_topics`): those are written again, a duplicate as Kafka
Streams' at-least-once gives one, never a loss.

Fencing at the write: fenced before its write, a run wrote nothing; fenced during its write, its
commit fails and the batch stays uncommitted in the checkpoint, so the new owner replays it, and
the replay skips what the fenced run wrote (write intent and position headers, above). One window
is left: a fenced run whose write began before the takeover may still be writing while the new
owner reads that batch back; records it writes after that are duplicated (never lost). Two Spark
queries planning the same batch of one checkpoint at the same moment can also fail the newer with
``CONCURRENT_STREAM_LOG_UPDATE``; the next run continues.

Order: the records go out in the order of the batch's rows; a batch whose rows are not in the
task's processing order (``ordered``: grouped by key, or branch by branch) is first brought to one
partition and sorted by ``emit_order`` (ties: the rows' order before, itself deterministic), so
each output partition gets its records in Kafka Streams' order and positions stay the same on a
replay.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Optional

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from dagster_kstreams.kafka.admin import KafkaAdmin
from dagster_kstreams.kafka.records import read_from
from dagster_kstreams.kafka.timestamp_header import TIMESTAMP_HEADER
from dagster_kstreams.spark.checkpoint import CheckpointReader, WriteIntents
from dagster_kstreams.processors.records import DROPPED_LATE_TOPIC
from dagster_kstreams.spark.run_state import RunState

__all__ = ["BatchWriter", "HEADER_WRITTEN", "RUN_ENDED", "ended_as_asked", "within_run", "written_position"]

log = logging.getLogger(__name__)

# Every record a task writes says which task and which position of which batch wrote it:
# ``<app>/<task>@<batch>:<position>`` (an application id has no ``@``).
HEADER_WRITTEN = "__dagster_kstreams.written"
# Earlier versions wrote the same facts as two headers: ``<app>/<task>`` and ``<batch>:<position>``.
# A replay still reads them, so a batch written by an older version is deduplicated all the same.
_LEGACY_HEADER_TASK = "__dagster_kstreams.task"
_LEGACY_HEADER_POSITION = "__dagster_kstreams.position"

# Spark's sink writes a whole batch at once and flushes at its end, so larger producer batches
# cost no latency and save about a quarter of the write's CPU (bench/README.md). A setting in the
# runner's Kafka config wins.
SINK_PRODUCER_DEFAULTS = {"kafka.batch.size": "262144", "kafka.linger.ms": "20"}
# Spark's sink has no timestamp column: each record's timestamp goes in a header, which this
# producer interceptor (dagster_kstreams/base/jvm/spark-kafka/src) makes the record's own. It is
# added to any interceptors the runner's Kafka config names.
TIMESTAMP_INTERCEPTOR = "dagster.kstreams.RecordTimestampInterceptor"
_INTERCEPTORS = "kafka.interceptor.classes"
_DEFAULT_MAX_REQUEST_SIZE = 1048576  # the Java producer's
_REQUEST_OVERHEAD = 65536  # room for the record batch's framing and our headers

_NO_HEADERS = "cast(array() AS array<struct<key: string, value: binary>>)"

RUN_ENDED = "dagster-kstreams: the run ended as asked (max_records reached, or stopped)"


def ended_as_asked(error: BaseException) -> bool:
    """Whether a query stopped because its run reached ``max_records`` or was asked to stop
    (:meth:`RunState.begin_batch <dagster_kstreams.spark.run_state.RunState.begin_batch>`), not a failure."""
    return RUN_ENDED in str(error)


def within_run(run: RunState, write: Callable[[DataFrame, int], None], batch: DataFrame, batch_id: int) -> None:
    """``write(batch, batch_id)`` as a batch of ``run``, unless the run is to end first.

    Runs on the driver between batches. Stopping here, before the batch is computed, leaves no
    partial output: the planned batch is replayed whole by the next run."""
    if not run.begin_batch():
        raise RuntimeError(RUN_ENDED)
    try:
        write(batch, batch_id)
    finally:
        run.end_batch()


class BatchWriter:
    """Spark's ``foreachBatch`` function of one run: writes each batch once and commits its offsets.

    ``written_topics`` are the topics the batch may write (their end offsets are the write
    intent); ``kafka_config`` is the librdkafka client config that reads back a replayed batch;
    ``drops_late`` says whether the output has rows on ``DROPPED_LATE_TOPIC``
    (counted by the metrics, never written); ``largest_record_bytes`` (the input topics'
    ``max.message.bytes``) sizes the producer's ``max.request.size`` unless the config sets it."""

    def __init__(self, run: RunState, application_id: str, checkpoint: CheckpointReader, intents: WriteIntents,
                 admin: KafkaAdmin, kafka_options: Mapping[str, str], kafka_config: Mapping[str, str],
                 written_topics: list[str], drops_late: bool, ordered: bool = False,
                 largest_record_bytes: Optional[int] = None):
        self.run, self.checkpoint, self.intents, self.admin = run, checkpoint, intents, admin
        self.kafka_options = {**SINK_PRODUCER_DEFAULTS, **kafka_options}
        self.kafka_options[_INTERCEPTORS] = ",".join(
            [*filter(None, kafka_options.get(_INTERCEPTORS, "").split(",")), TIMESTAMP_INTERCEPTOR])
        if largest_record_bytes is not None and "kafka.max.request.size" not in kafka_options:
            # The largest record the input topics take gets through (Kafka's default is 1 MB).
            size = max(largest_record_bytes, _DEFAULT_MAX_REQUEST_SIZE) + _REQUEST_OVERHEAD
            self.kafka_options["kafka.max.request.size"] = str(size)
        self.kafka_config = dict(kafka_config)
        self.written_topics, self.drops_late, self.ordered = written_topics, drops_late, ordered
        self.task_tag = f"{application_id}/{run.task}".encode()

    def __call__(self, batch: DataFrame, batch_id: int) -> None:
        within_run(self.run, self._write, batch, batch_id)

    def _write(self, batch: DataFrame, batch_id: int) -> None:
        run = self.run
        batch_offsets = self.checkpoint.batch_end_offsets(batch_id, run.assigned)
        # A run fenced by a newer one of the task stops here, before it writes anything.
        run.fence.check(batch_offsets, f"before writing batch {batch_id}")
        if self.drops_late:
            batch = batch.where(F.col("topic") != DROPPED_LATE_TOPIC)  # counted, never written
        if self.ordered:
            # A static DataFrame here: it can be sorted (streaming ones cannot).
            batch = (batch.withColumn("_emitted", F.monotonically_increasing_id()).repartition(1)
                     .sortWithinPartitions("emit_order", "_emitted"))
        records, position = self._unwritten(batch, batch_id)
        # One projection, written as SQL: each DataFrame call in a batch costs Spark an analysis
        # of the whole batch plan and the driver a round of Py4J calls.
        # A ``partition`` column (null: the producer's default partitioner) where a sink chose one.
        placed = ("partition",) if "partition" in batch.columns else ()
        records = records.selectExpr("topic", "key", "value", self._headers(batch_id, position), *placed)
        records.write.format("kafka").options(**self.kafka_options).save()
        # The batch's output is in Kafka: its offsets can be committed (at-least-once), unless a
        # newer run of the task fenced this one meanwhile.
        run.fence.commit(batch_offsets, f"at the commit of batch {batch_id}, after writing its output")
        self.intents.forget_before(batch_id)
        run.batch_done(batch_id, batch_offsets)

    def _unwritten(self, batch: DataFrame, batch_id: int) -> tuple[DataFrame, str]:
        """The batch's records less those an earlier attempt wrote, and the SQL of their position.

        Each record's position in the batch (``monotonically_increasing_id()`` of the batch's
        rows) is deterministic (same input order, same state, same plan on a replay), so a
        replay of a batch that a killed run had partly written skips what is already in Kafka.
        The first attempt records its write intent instead."""
        intent = self.intents.read(batch_id)
        if intent is None:
            ends = self.admin.end_offsets(self.written_topics) if self.written_topics else {}
            self.intents.write(batch_id, {(tp.topic, tp.partition): offset for tp, offset in ends.items()})
            return batch, "monotonically_increasing_id()"
        already = self._positions_written(intent, batch_id)
        if not already:
            return batch, "monotonically_increasing_id()"
        log.warning("task %s: batch %d is a replay; %d records of it are already in Kafka",
                    self.run.task, batch_id, len(already))
        records = batch.withColumn("_position", F.monotonically_increasing_id())
        skip = batch.sparkSession.createDataFrame([(p,) for p in sorted(already)], "_position long")
        return records.join(F.broadcast(skip), "_position", "left_anti"), "_position"

    def _headers(self, batch_id: int, position: str) -> str:
        """SQL of the record's headers: its own, then its timestamp (``timestamp_ms``, 8 bytes
        big-endian: :mod:`dagster_kstreams.kafka.timestamp_header`, which
        :data:`TIMESTAMP_INTERCEPTOR` makes the record's own), then :data:`HEADER_WRITTEN` for
        ``position`` (SQL)."""
        prefix = (self.task_tag + f"@{batch_id}:".encode()).hex()
        written = (f"named_struct('key', '{HEADER_WRITTEN}', "
                   f"'value', concat(X'{prefix}', cast(cast({position} AS string) AS binary)))")
        timestamp = f"named_struct('key', '{TIMESTAMP_HEADER}', 'value', unhex(lpad(hex(timestamp_ms), 16, '0')))"
        return (f"concat(coalesce(headers, {_NO_HEADERS}), "
                f"CASE WHEN timestamp_ms IS NULL THEN {_NO_HEADERS} ELSE array({timestamp}) END, "
                f"array({written})) AS headers")

    def _positions_written(self, intent: Mapping[tuple[str, int], int], batch_id: int) -> set[int]:
        """Positions of batch ``batch_id`` that an earlier attempt of this task already wrote."""
        positions: set[int] = set()
        bootstrap = self.kafka_config["bootstrap.servers"]
        config = {k: v for k, v in self.kafka_config.items() if k != "bootstrap.servers"}
        for record in read_from(bootstrap, intent, config):
            position = written_position(dict(record.headers), self.task_tag, batch_id)
            if position is not None:
                positions.add(position)
        return positions


def written_position(headers: Mapping[str, bytes], task_tag: bytes, batch_id: int) -> int | None:
    """The position in batch ``batch_id`` of task ``task_tag`` (``<app>/<task>``) of a record with
    these ``headers``, or None if that batch of that task did not write it."""
    written = headers.get(HEADER_WRITTEN)
    if written is not None:
        prefix = task_tag + f"@{batch_id}:".encode()
        return int(written[len(prefix):]) if written.startswith(prefix) else None
    position = headers.get(_LEGACY_HEADER_POSITION)
    prefix = f"{batch_id}:".encode()
    if headers.get(_LEGACY_HEADER_TASK) == task_tag and position is not None and position.startswith(prefix):
        return int(position[len(prefix):])
    return None
