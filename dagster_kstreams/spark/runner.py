"""Run one stream task (sub-topology ``s``, partition ``p``) on Spark.

A task is one Structured Streaming query, started, drained and stopped for each run:

* **Source** — Spark's Kafka source with ``assign`` = partition ``p`` of every source topic of
  ``s``. ``trigger(availableNow=True)`` processes everything up to the end offsets seen when the
  run starts, in batches of at most ``max_records_per_batch`` records, then stops.
* **Processors** — compiled by :mod:`dagster_kstreams.spark.compile` into one Python pass per
  batch (``mapInArrow``) for a stateless sub-topology, or one pass per key and batch
  (``applyInPandasWithState`` grouped by the source key) when the sub-topology keeps state, or
  one pass per batch with the task's whole state when its semantics span keys (stream-stream
  joins: :mod:`dagster_kstreams.spark.task_state`).
  A sub-topology that is exactly ``source -> count -> to_stream -> to`` (the downstream half
  of a word count) runs as Spark's own streaming aggregation, with no Python at all.
* **Event time** — :mod:`dagster_kstreams.spark.event_time`: each record's timestamp (carried
  in a header through repartition topics), Kafka Streams' processing order across the task's
  partitions, and the task's stream time, carried between batches by a watermark.
* **State** — Spark's state store with the RocksDB provider, in the task's checkpoint
  (:mod:`dagster_kstreams.spark.checkpoint`): ``<state_location>/<app>/tasks/<task>/checkpoint``.
  Any process that sees the same location continues the task where it stopped.
* **Sinks** — Spark's Kafka sink; one query writes every sink topic of the sub-topology (output
  topics, repartition topics, the dead-letter topic) through a ``topic`` column. There is no
  ``partition`` column: the producer's default partitioner (murmur2 of the key bytes) places
  each record, so a repartition topic is co-partitioned with any other Kafka-written topic.
* **Offsets** — Spark's checkpoint is the source of truth. After each batch's output is in
  Kafka, its end offsets are committed to the consumer group named by the application id
  (through the task's transactional producer, see Fencing), so ``kafka-consumer-groups
  --describe`` and lag monitors see the task's progress. A new
  checkpoint starts from that group's committed offsets (else earliest, as Kafka Streams'
  ``auto.offset.reset``).

Guarantee: at-least-once towards the consumer group, and no duplicates from replays. Spark's
Kafka writes are not transactional: a run killed while writing batch ``N`` leaves part of its
output in Kafka, and the next run replays ``N`` from the checkpoint (same offsets, same state).
Before a batch writes, the end offsets of its sink topics are recorded
(:class:`~dagster_kstreams.spark.checkpoint.WriteIntents`), and every record carries headers
naming its task and its position in the batch; a replay reads back what the killed attempt
wrote and skips those positions. This needs deterministic user functions. Records written
by a topic extractor to topics not known in advance are not covered.

Fencing: Spark does not lock a checkpoint across applications; Kafka fences instead
(:mod:`dagster_kstreams.kafka.fencing`). A run takes its task with a transactional producer whose
``transactional.id`` is ``<application_id>-task-<task_id>``: its ``init_transactions``, before the
checkpoint is read, fences every process that started the task earlier, so whoever started a
task last owns it. Before a batch writes anything, a transaction that adds the batch's offsets
is opened and aborted (the coordinator checks the producer's epoch); after the write, the
batch's offsets are committed to the application-id group in a transaction of their own
(``send_offsets_to_transaction``). A fenced run raises :class:`TaskFencedError`, naming the task,
the application id and the transactional id, and commits nothing. Fenced before its write, it
wrote nothing; fenced during its write, its commit fails and the batch stays uncommitted in the
checkpoint, so the new owner replays it, and the replay skips what the fenced run wrote (write
intent and position headers, above). One window is left: a fenced run whose write began before
the takeover may still be writing while the new owner reads that batch back; records it writes
after that are duplicated (never lost). The lag sensor's handover (revoke, wait until released,
grant) keeps workers out of that window; the fence is the backstop for a worker taken for dead
that was only stalled, or a task also started by hand. Two Spark queries planning the same batch
of one checkpoint at the same moment can also fail the newer with ``CONCURRENT_STREAM_LOG_UPDATE``;
the next run continues. :class:`TaskRunner` also refuses to run a task twice at once within one
process. ``fencing=False`` commits offsets with the admin client, without fencing.
"""

from __future__ import annotations

import json
import logging
import pickle
import re
import threading
import time
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Optional

from dagster_kstreams.kafka.admin import KafkaAdmin, TopicPartition
from dagster_kstreams.kafka.dead_letter import DeadLetterPolicy, DeserializationHandler
from dagster_kstreams.kafka.fencing import FenceError, ProducerFencedError, TaskFence, task_transactional_id
from dagster_kstreams.kafka.records import read_from
from dagster_kstreams.spark.checkpoint import (
    CheckpointReader,
    WriteIntents,
    default_state_location,
    task_checkpoint,
    task_directory,
)
from dagster_kstreams.spark.compile import CompiledTopology, compile_topology, parse_task_id
from dagster_kstreams.spark.event_time import source_columns, with_processing_order
from dagster_kstreams.spark.session import honor_pyspark_python
from dagster_kstreams.spark import sessions, windows
from dagster_kstreams.spark.program import DROPPED_LATE_TOPIC, OUTPUT_SPARK_SCHEMA, WINDOW_KINDS
from dagster_kstreams.spark.task_state import TaskState

__all__ = ["TaskRunner", "TaskResult", "TaskProgress", "TaskFailedError", "TaskFencedError"]

log = logging.getLogger(__name__)

# Every record a task writes says which task and which position of which batch wrote it.
HEADER_TASK = "__dagster_kstreams.task"
HEADER_POSITION = "__dagster_kstreams.position"

_TASK_GROUP = "_task_group"  # the constant a task-grouped sub-topology is grouped by
ROCKSDB_PROVIDER = "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"


class TaskFailedError(RuntimeError):
    """A task's run failed. ``reason`` is the one-line cause (it names the record's topic,
    partition and offset when a record could not be deserialized or processed)."""

    def __init__(self, task_id: str, application_id: str, reason: str):
        self.task_id, self.application_id, self.reason = task_id, application_id, reason
        super().__init__(f"task {task_id} of application {application_id!r} failed: {reason}")


class TaskFencedError(TaskFailedError):
    """Another process started this task while this run had it: Kafka fenced this run's
    transactional id (``transactional_id``), so the run stopped without committing (``stage``
    says where). The task is lost to this process; whoever started it last owns it."""

    def __init__(self, task_id: str, application_id: str, transactional_id: str, stage: str):
        self.task_id, self.application_id = task_id, application_id
        self.transactional_id, self.stage = transactional_id, stage
        self.reason = (f"another process took the task over: it started the task after this run did, and Kafka "
                       f"fenced this run's transactional id {transactional_id!r}; this run stopped {stage}")
        RuntimeError.__init__(
            self, f"task {task_id} of application {application_id!r} was taken over by another process: "
                  f"it started the task after this run did, and Kafka fenced this run's transactional id "
                  f"{transactional_id!r}; this run stopped {stage}")


@dataclass(frozen=True)
class TaskProgress:
    """Reported after every batch of a run."""

    task_id: str
    batch_id: int
    records_done: int
    seconds: float
    records_per_second: float
    lag_left: int


@dataclass
class TaskResult:
    """What one run of a task did.

    ``offsets_from``/``offsets_to`` map each source partition to the next offset to process
    before/after the run (``offsets_to`` is also what the consumer group holds afterwards).
    ``records_out`` counts written records per sink topic. ``records_dropped_late`` counts
    records a windowed processor dropped because their window had closed (beyond its grace
    period). ``lag_left`` is end offset minus ``offsets_to`` per source partition, measured
    when the run ended.
    """

    task_id: str
    subtopology: int
    partition: int
    offsets_from: dict[TopicPartition, int]
    offsets_to: dict[TopicPartition, int]
    records_in: int
    records_out: dict[str, int]
    batches: int
    seconds: float
    lag_left: dict[TopicPartition, int] = field(default_factory=dict)
    records_dropped_late: int = 0

    @property
    def records_per_second(self) -> float:
        return self.records_in / self.seconds if self.seconds > 0 else 0.0

    @property
    def total_lag_left(self) -> int:
        return sum(self.lag_left.values())

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready (for Dagster metadata and the CLI)."""

        def offsets(mapping: Mapping[TopicPartition, int]) -> dict[str, int]:
            return {f"{tp.topic}-{tp.partition}": offset for tp, offset in mapping.items()}

        return {
            "task_id": self.task_id,
            "subtopology": self.subtopology,
            "partition": self.partition,
            "offsets_from": offsets(self.offsets_from),
            "offsets_to": offsets(self.offsets_to),
            "records_in": self.records_in,
            "records_out": dict(self.records_out),
            "batches": self.batches,
            "seconds": round(self.seconds, 3),
            "records_per_second": round(self.records_per_second, 1),
            "lag_left": offsets(self.lag_left),
            "total_lag_left": self.total_lag_left,
            "records_dropped_late": self.records_dropped_late,
        }


class TaskRunner:
    """Runs the tasks of one topology for one application id on one SparkSession.

    ``kafka_config`` holds ``bootstrap.servers`` and any other client setting (``security.protocol``,
    ``sasl.mechanism`` ...) for the admin client (librdkafka); prefixed with ``kafka.`` they also
    go to Spark's Kafka source and sink (the Java client) unless ``spark_kafka_config`` gives
    those separately (needed when the two spell a setting differently, e.g. SASL/SSL).
    ``state_location`` is the root of the tasks' checkpoints and state (a local directory or a
    Hadoop-compatible URI); by default ``<DAGSTER_KSTREAMS_HOME or ./.kstreams>/state``.
    ``deserialization_exception_handler`` is ``"fail"`` (default) or ``"log_and_continue"``;
    with ``dead_letter_topic`` set, records that fail to deserialize are written there raw.
    ``max_records_per_batch`` bounds a micro-batch (offsets are committed after each batch).
    ``state_partitions`` is the number of state store partitions of a new stateful task
    (Spark's shuffle partitions; fixed in the checkpoint afterwards).
    ``arrow_batch_size`` is the number of records per Arrow batch handed to Python (Spark's
    ``spark.sql.execution.arrow.maxRecordsPerBatch``, 10,000 by default).
    ``fencing`` (default on) commits offsets through a per-task transactional producer, so that a
    task started in another process fences this one (see the module docstring); it needs a broker
    that allows transactions (and, with ACLs, WRITE on the transactional ids ``<app>-task-*``).
    """

    def __init__(
        self,
        topology: Any,
        application_id: str,
        kafka_config: Mapping[str, Any] | str,
        state_location: Optional[str] = None,
        spark: Any = None,
        *,
        deserialization_exception_handler: str | DeserializationHandler = DeserializationHandler.FAIL,
        dead_letter_topic: Optional[str] = None,
        max_records_per_batch: Optional[int] = 200_000,
        state_partitions: int = 1,
        arrow_batch_size: Optional[int] = None,
        default_key_serde: Any = None,
        default_value_serde: Any = None,
        spark_kafka_config: Optional[Mapping[str, Any]] = None,
        fencing: bool = True,
    ):
        if not application_id or not re.fullmatch(r"[a-zA-Z0-9._-]+", application_id):
            raise ValueError(
                f"application_id {application_id!r} must be non-empty ASCII alphanumerics, '.', '_' or '-' "
                "(it names the consumer group and prefixes internal topics)"
            )
        if isinstance(kafka_config, str):
            kafka_config = {"bootstrap.servers": kafka_config}
        self.kafka_config = {str(k): str(v) for k, v in kafka_config.items()}
        # Spark's source and sink use the Java client, whose SASL/SSL settings are spelled
        # differently from librdkafka's: they may be given separately.
        self.spark_kafka_config = (
            {str(k): str(v) for k, v in spark_kafka_config.items()} if spark_kafka_config is not None
            else dict(self.kafka_config)
        )
        if not self.kafka_config.get("bootstrap.servers"):
            raise ValueError("kafka_config must set 'bootstrap.servers'")
        if max_records_per_batch is not None and max_records_per_batch < 1:
            raise ValueError(f"max_records_per_batch must be >= 1 or None, got {max_records_per_batch}")
        if state_partitions < 1:
            raise ValueError(f"state_partitions must be >= 1, got {state_partitions}")
        self.application_id = application_id
        self.state_location = state_location or default_state_location()
        self.dead_letters = DeadLetterPolicy(deserialization_exception_handler, dead_letter_topic)
        self.max_records_per_batch = max_records_per_batch
        self.state_partitions = state_partitions
        self.arrow_batch_size = arrow_batch_size
        self.fencing = fencing
        self.compiled: CompiledTopology = compile_topology(
            topology, application_id, self.dead_letters,
            default_key_serde=default_key_serde, default_value_serde=default_value_serde,
        ).check()  # an operation the runner cannot run fails now, not in the middle of a run
        extra = {k: v for k, v in self.kafka_config.items() if k != "bootstrap.servers"}
        self.admin = KafkaAdmin(self.kafka_config["bootstrap.servers"], extra)
        self._spark = spark
        if spark is not None:
            honor_pyspark_python(spark)
        self._running: set[str] = set()
        self._lock = threading.Lock()
        self._internal_topics_ready = False

    # -- plumbing -----------------------------------------------------------------------
    @property
    def spark(self):
        if self._spark is None:
            from dagster_kstreams.spark.session import build_spark_session

            self._spark = build_spark_session()
        return self._spark

    def _kafka_options(self) -> dict[str, str]:
        return {f"kafka.{key}": value for key, value in self.spark_kafka_config.items()}

    def checkpoint_location(self, task_id: str) -> str:
        return task_checkpoint(self.state_location, self.application_id, task_id)

    # -- topics -------------------------------------------------------------------------
    def partition_counts(self) -> dict[str, int]:
        """Partition count of every topic the topology reads or writes (internal ones computed)."""
        external = self.admin.partition_counts(self.compiled.external_source_topics)
        return self.compiled.partition_counts(external)

    def task_ids(self) -> list[str]:
        """All tasks (``"<subtopology>_<partition>"``), sub-topology by sub-topology."""
        return self.compiled.task_ids(self.partition_counts())

    def ensure_internal_topics(self) -> dict[str, int]:
        """Create the repartition topics (and the dead-letter topic) that do not exist yet.

        Partition counts follow Kafka Streams: the count set with ``Repartitioned``, else the
        task count of the sub-topology that writes the topic. Returns ``{topic: partitions}``.
        """
        counts = self.partition_counts()
        wanted = {topic: counts[topic] for topic in self.compiled.repartition_topics}
        if self.dead_letters.dead_letter_topic and self.dead_letters.dead_letter_topic not in self.admin.list_topics():
            wanted[self.dead_letters.dead_letter_topic] = 1
        self.admin.create_topics(wanted)
        self._internal_topics_ready = True
        return wanted

    def _check_sink_topics(self, subtopology: int) -> None:
        sinks = [t for t in self.compiled.sink_topics(subtopology) if t not in self.compiled.repartition_topics]
        if not sinks:
            return
        existing = self.admin.list_topics()
        missing = [topic for topic in sinks if topic not in existing]
        if missing:
            raise TaskFailedError(
                f"{subtopology}_*", self.application_id,
                f"output topic(s) {', '.join(repr(t) for t in missing)} of sub-topology {subtopology} do not exist; "
                "create them first (Kafka Streams does not create output topics either)",
            )

    # -- running ------------------------------------------------------------------------
    def run_task(
        self,
        task_id: str,
        max_records: Optional[int] = None,
        progress: Optional[Callable[[TaskProgress], None]] = None,
    ) -> TaskResult:
        """Process task ``task_id``'s backlog: everything up to the end offsets seen at start.

        ``max_records`` stops the run after the first batch that reaches it (batches are then
        at most ``max_records`` long). ``progress`` is called after every batch.
        """
        subtopology, partition = parse_task_id(task_id)
        if subtopology not in self.compiled.subtopology_ids:
            raise ValueError(
                f"task {task_id}: the topology has no sub-topology {subtopology} "
                f"(it has {sorted(self.compiled.subtopology_ids)})"
            )
        if max_records is not None and max_records < 1:
            raise ValueError(f"max_records must be >= 1 or None, got {max_records}")
        with self._lock:
            if task_id in self._running:
                raise TaskFailedError(task_id, self.application_id, "the task is already running in this process")
            self._running.add(task_id)
        try:
            # Taking the task fences any other process that runs it, before its checkpoint is read.
            fence = self._task_fence(task_id)
            with _RunFence(fence, task_id, self.application_id) as run_fence:
                return self._run(task_id, subtopology, partition, max_records, progress, run_fence)
        finally:
            with self._lock:
                self._running.discard(task_id)

    def run_all(
        self,
        max_records: Optional[int] = None,
        progress: Optional[Callable[[TaskProgress], None]] = None,
        parallelism: int = 1,
    ) -> list[TaskResult]:
        """Run every task once, sub-topology by sub-topology (upstream first), so that records
        written to a repartition topic are processed downstream in the same call.

        ``parallelism`` tasks of one sub-topology run at a time, as concurrent Spark queries on
        the shared SparkSession. Results come in task order.
        """
        if parallelism < 1:
            raise ValueError(f"parallelism must be >= 1, got {parallelism}")
        task_ids = self.task_ids()
        by_subtopology: dict[int, list[str]] = {}
        for task_id in task_ids:
            by_subtopology.setdefault(parse_task_id(task_id)[0], []).append(task_id)
        results: dict[str, TaskResult] = {}
        if not self._internal_topics_ready:
            self.ensure_internal_topics()
        for tasks in by_subtopology.values():
            if parallelism == 1 or len(tasks) == 1:
                for task_id in tasks:
                    results[task_id] = self.run_task(task_id, max_records, progress)
                continue
            with ThreadPoolExecutor(max_workers=parallelism, thread_name_prefix="task") as pool:
                futures = {task_id: pool.submit(self.run_task, task_id, max_records, progress) for task_id in tasks}
                for task_id, future in futures.items():
                    results[task_id] = future.result()
        return [results[task_id] for task_id in task_ids]

    def _run(self, task_id, subtopology, partition, max_records, progress, fence: "_RunFence") -> TaskResult:
        started = time.monotonic()
        if not self._internal_topics_ready:
            self.ensure_internal_topics()
        self._check_sink_topics(subtopology)
        counts = self.partition_counts()
        source_topics = self.compiled.source_topics(subtopology)
        task_count = max(counts[topic] for topic in source_topics)
        if not 0 <= partition < task_count:
            raise ValueError(
                f"task {task_id}: sub-topology {subtopology} has {task_count} tasks (partitions 0..{task_count - 1})"
            )
        # A source topic with fewer partitions than the task count has no partition p (Kafka
        # Streams assigns a task only the partitions that exist).
        assigned = [TopicPartition(topic, partition) for topic in source_topics if partition < counts[topic]]
        checkpoint = self.checkpoint_location(task_id)
        session = self.spark.newSession()
        reader = CheckpointReader(session, checkpoint)
        checkpointed = reader.committed_source_offsets()
        end_offsets = {tp: offset for tp, offset in self.admin.end_offsets(source_topics).items() if tp in assigned}
        if checkpointed:
            # The checkpoint is the truth; repair the group if a previous run died before committing.
            offsets_from = {tp: checkpointed.get((tp.topic, tp.partition), 0) for tp in assigned}
            self._commit(offsets_from, fence, "before processing anything")
            starting = None
        else:
            committed = self.admin.committed_offsets(self.application_id, source_topics)
            beginning = self.admin.beginning_offsets(source_topics)
            offsets_from = {}
            starting = {}
            for tp in assigned:
                if tp in committed:
                    offsets_from[tp] = starting.setdefault(tp, committed[tp])
                elif self.compiled.offset_reset(tp.topic) == "latest":
                    offsets_from[tp] = starting.setdefault(tp, end_offsets[tp])
                else:
                    offsets_from[tp] = starting.setdefault(tp, beginning[tp])

        run = _RunState(task_id, started, assigned, offsets_from, end_offsets, max_records, progress)
        run.fence = fence
        query = self._start_query(session, reader, run, subtopology, starting, checkpoint)
        failure: Optional[BaseException] = None
        try:
            query.awaitTermination()
        except Exception as error:  # StreamingQueryException: a batch failed, or the bound was reached
            if _BOUND_REACHED not in str(error):
                failure = error
        finally:
            if query.isActive:
                query.stop()
        records_out: dict[str, int] = {}
        for report in query.recentProgress:
            for topic, count in _observed_outputs(report).items():
                records_out[topic] = records_out.get(topic, 0) + count
        dropped_late = records_out.pop(DROPPED_LATE_TOPIC, 0)
        if fence.fenced is not None:
            raise fence.fenced
        if failure is not None:
            raise TaskFailedError(task_id, self.application_id, _failure_reason(failure)) from failure
        final_ends = self.admin.end_offsets(source_topics)
        lag_left = {tp: max(0, final_ends[tp] - run.processed[tp]) for tp in assigned}
        return TaskResult(
            task_id=task_id,
            subtopology=subtopology,
            partition=partition,
            offsets_from=offsets_from,
            offsets_to=dict(run.processed),
            records_in=run.records_in,
            records_out=records_out,
            batches=run.batches,
            seconds=time.monotonic() - started,
            lag_left=lag_left,
            records_dropped_late=dropped_late,
        )

    # -- state ------------------------------------------------------------------------
    def read_store(self, store_name: str) -> dict[Any, Any]:
        """The content of a state store across all tasks: ``{key: value}``, deserialized; a
        windowed or session store's keys are ``Windowed(key, Window(start, end))``.

        Read with Spark's state data source (``format("statestore")``) from each task's
        checkpoint, at its last committed batch; tasks that never ran contribute nothing.
        """
        subtopology = self.compiled.subtopology_of_store(store_name)
        program = self.compiled.program(subtopology)
        slot = program.store_slots[store_name]
        key_serde = self.compiled.store_key_serde(subtopology)
        jvm_count = program.jvm_count() is not None
        store_node = next(program.nodes[i] for i in program.stateful_nodes if program.nodes[i].state_slot == slot)
        # The RocksDB provider reports to the driver's StateStoreCoordinator, which Spark creates
        # with the session's StreamingQueryManager: make sure it exists in a fresh session.
        self.spark.streams.active
        table: dict[Any, Any] = {}
        for task_id in self.task_ids():
            if parse_task_id(task_id)[0] != subtopology:
                continue
            checkpoint = self.checkpoint_location(task_id)
            if CheckpointReader(self.spark, checkpoint).last_committed_batch() is None:
                continue
            rows = self.spark.read.format("statestore").load(checkpoint).collect()
            if program.task_grouped:  # one row per task: every key's slots (spark/task_state.py)
                for row in rows:
                    blob = _state_columns(row.value)[0]
                    content = TaskState.store_content(None if blob is None else bytes(blob), slot)
                    for raw_key, value in content.items():
                        table[key_serde.deserialize(raw_key)] = value
                continue
            for row in rows:
                key = key_serde.deserialize(bytes(row.key[0]) if row.key[0] is not None else None)
                if jvm_count:  # Spark's aggregation state: the count itself
                    table[key] = int(row.value[0])
                    continue
                blob = _state_columns(row.value)[slot]
                if blob is not None:
                    if store_node.kind in WINDOW_KINDS:  # one row holds the key's windows
                        table.update(windows.store_entries(store_node, key, pickle.loads(bytes(blob))))
                        continue
                    if store_node.kind == sessions.KIND:  # one row holds the key's sessions
                        table.update(sessions.store_entries(key, pickle.loads(bytes(blob))))
                        continue
                    table[key] = pickle.loads(bytes(blob))
        return table

    def _positions_written(self, intent: Mapping[tuple[str, int], int], task_tag: bytes, batch_id: int) -> set[int]:
        """Positions of batch ``batch_id`` that an earlier attempt of this task already wrote."""
        prefix = f"{batch_id}:".encode()
        positions: set[int] = set()
        for record in read_from(self.kafka_config["bootstrap.servers"], intent, self._client_config()):
            headers = dict(record.headers)
            position = headers.get(HEADER_POSITION)
            if headers.get(HEADER_TASK) == task_tag and position is not None and position.startswith(prefix):
                positions.add(int(position[len(prefix):]))
        return positions

    def _client_config(self) -> dict[str, str]:
        return {k: v for k, v in self.kafka_config.items() if k != "bootstrap.servers"}

    def _task_fence(self, task_id: str) -> Optional[TaskFence]:
        """The (not yet started) transactional producer that stands for ``task_id``; None without fencing."""
        if not self.fencing:
            return None
        return TaskFence(self.kafka_config["bootstrap.servers"], task_transactional_id(self.application_id, task_id),
                         self.application_id, self._client_config())

    def _commit(self, offsets: Mapping[TopicPartition, int], fence: Optional["_RunFence"] = None,
                stage: str = "") -> None:
        if not offsets:
            return
        if fence is not None and fence.fence is not None:
            fence.commit(offsets, stage)
        else:
            self.admin.commit_offsets(self.application_id, offsets)

    def _start_query(self, session, checkpoint_reader, run: "_RunState", subtopology, starting, checkpoint):
        from pyspark.sql import functions as F
        from pyspark.sql.streaming.state import GroupStateTimeout

        program = self.compiled.program(subtopology)
        session.conf.set("spark.sql.streaming.stateStore.providerClass", ROCKSDB_PROVIDER)
        session.conf.set("spark.sql.shuffle.partitions", str(self.state_partitions))
        # Spark would otherwise add a no-op batch; Kafka Streams has no such thing.
        session.conf.set("spark.sql.streaming.noDataMicroBatches.enabled", "false")
        if self.arrow_batch_size is not None:
            session.conf.set("spark.sql.execution.arrow.maxRecordsPerBatch", str(self.arrow_batch_size))

        task_id, max_records = run.task_id, run.max_records
        assign: dict[str, list[int]] = {}
        for tp in run.assigned:
            assign.setdefault(tp.topic, []).append(tp.partition)
        reader = session.readStream.format("kafka").options(**self._kafka_options())
        reader = reader.option("assign", json.dumps(assign))
        if starting is not None:
            start_json: dict[str, dict[str, int]] = {}
            for tp, offset in starting.items():
                start_json.setdefault(tp.topic, {})[str(tp.partition)] = offset
            reader = reader.option("startingOffsets", json.dumps(start_json))
        # Records deleted by retention before they were processed: skip ahead, as Kafka Streams'
        # consumer does after an out-of-range reset, instead of stopping the task for good.
        reader = reader.option("failOnDataLoss", "false")
        limit = min(x for x in (self.max_records_per_batch, max_records) if x is not None) if (
            self.max_records_per_batch or max_records) else None
        if limit is not None:
            reader = reader.option("maxOffsetsPerTrigger", str(limit))
        internal_sources = [tp.topic for tp in run.assigned if tp.topic in self.compiled.repartition_partitions]
        if internal_sources:
            reader = reader.option("includeHeaders", "true")  # their timestamps travel in a header
        source = source_columns(reader.load(), internal_sources)

        jvm_count = program.jvm_count()
        column_plan = getattr(program, "column_plan", None)
        if column_plan is not None:  # Column expressions only: DataFrame operations, no Python pass
            output = column_plan.build(source, self.dead_letters)
        elif jvm_count is not None:
            _, _, sink = jvm_count
            # Kafka Streams' count skips null keys and null values; the count goes out as a
            # big-endian Long, as Serdes.Long() writes it.
            output = (
                source.where(F.col("key").isNotNull() & F.col("value").isNotNull())
                .groupBy("key").agg(F.count(F.lit(1)).alias("count"))
                .select(
                    F.lit(sink.topic).alias("topic"),
                    F.col("key"),
                    F.unhex(F.lpad(F.hex(F.col("count")), 16, "0")).alias("value"),
                    F.lit(None).cast("array<struct<key: string, value: binary>>").alias("headers"),
                )
            )
        elif program.stateful:
            if program.needs_processing_order:  # Kafka Streams' order across partitions, stream time
                source = with_processing_order(source, stream_time=program.uses_stream_time,
                                               skip_null_values=program.stream_time_skips_null_values)
            uses_stream_time = program.uses_stream_time
            state_schema = ", ".join(f"store_{slot} binary" for slot in range(len(program.store_names)))

            def run_key_group(key, frames, state):
                import pandas as pd

                frames = list(frames)
                records = frames[0] if len(frames) == 1 else pd.concat(frames, ignore_index=True)
                stored = state.get if state.exists else None
                watermark = state.getCurrentWatermarkMs() if uses_stream_time else None
                output, new_state = program.process_key_group(records, stored, watermark)
                if new_state is None:
                    if state.exists:
                        state.remove()
                elif new_state is not stored:
                    state.update(new_state)
                if output is not None:
                    yield output

            if program.task_grouped:  # the task's whole micro-batch is one group (spark/task_state.py)

                def run_task(key, frames, state):
                    import pandas as pd

                    frames = list(frames)
                    records = frames[0] if len(frames) == 1 else pd.concat(frames, ignore_index=True)
                    stored = state.get[0] if state.exists else None
                    watermark = state.getCurrentWatermarkMs() if uses_stream_time else None
                    output, new_state = program.process_task_batch(records, stored, watermark)
                    if new_state is None:
                        if state.exists:
                            state.remove()
                    else:
                        state.update((new_state,))
                    if output is not None:
                        yield output

                output = source.withColumn(_TASK_GROUP, F.lit(0)).groupBy(_TASK_GROUP).applyInPandasWithState(
                    run_task, OUTPUT_SPARK_SCHEMA, "task binary", "Update", GroupStateTimeout.NoTimeout
                )
            else:
                output = source.groupBy("key").applyInPandasWithState(
                    run_key_group, OUTPUT_SPARK_SCHEMA, state_schema, "Update", GroupStateTimeout.NoTimeout
                )
        else:

            def run_batches(batches):
                for batch in batches:
                    yield program.process_arrow_batch(batch)

            output = source.mapInArrow(run_batches, OUTPUT_SPARK_SCHEMA)

        # Records written per sink topic, counted by Spark as the batch runs (observed metrics).
        topics = self.compiled.sink_topics(subtopology)
        if self.dead_letters.dead_letter_topic:
            topics = [*topics, self.dead_letters.dead_letter_topic]
        if program.uses_stream_time:
            topics = [*topics, DROPPED_LATE_TOPIC]
        metrics = [F.count(F.lit(1)).alias("__all__")] + [
            F.sum(F.when(F.col("topic") == topic, 1).otherwise(0)).alias(topic) for topic in dict.fromkeys(topics)
        ]
        output = output.observe("records_out", *metrics)
        kafka_options = self._kafka_options()
        intents = WriteIntents(session, task_directory(self.state_location, self.application_id, task_id))
        written_topics = [t for t in topics if t is not None and t != DROPPED_LATE_TOPIC]
        task_tag = f"{self.application_id}/{task_id}".encode()

        def write_batch(batch, batch_id: int) -> None:
            # Runs on the driver between batches. Stopping here, before the batch is computed,
            # leaves no partial output: the planned batch is replayed whole by the next run.
            if run.max_records is not None and run.records_in >= run.max_records:
                raise RuntimeError(_BOUND_REACHED)
            ends = checkpoint_reader.batch_source_offsets(batch_id)
            batch_offsets = {tp: ends[(tp.topic, tp.partition)] for tp in run.assigned if (tp.topic, tp.partition) in ends}
            # A run fenced by a newer one of the task stops here, before it writes anything.
            run.fence.check(batch_offsets, f"before writing batch {batch_id}")
            # Each record is tagged with its position in the batch (deterministic: same input
            # order, same state, same plan on a replay), so a replay of a batch that a killed
            # run had partly written skips what is already in Kafka.
            if program.uses_stream_time:
                batch = batch.where(F.col("topic") != DROPPED_LATE_TOPIC)  # counted, never written
            records = batch.withColumn("_position", F.monotonically_increasing_id())
            intent = intents.read(batch_id)
            if intent is None:
                ends = self.admin.end_offsets(written_topics) if written_topics else {}
                intents.write(batch_id, {(tp.topic, tp.partition): offset for tp, offset in ends.items()})
            else:
                already = self._positions_written(intent, task_tag, batch_id)
                if already:
                    log.warning("task %s: batch %d is a replay; %d records of it are already in Kafka",
                                task_id, batch_id, len(already))
                    skip = batch.sparkSession.createDataFrame([(p,) for p in sorted(already)], "_position long")
                    records = records.join(F.broadcast(skip), "_position", "left_anti")
            tag = F.array(
                F.struct(F.lit(HEADER_TASK).alias("key"), F.lit(task_tag).alias("value")),
                F.struct(F.lit(HEADER_POSITION).alias("key"),
                         F.concat_ws(":", F.lit(str(batch_id)), F.col("_position").cast("string")).cast("binary")
                         .alias("value")),
            )
            records = records.withColumn(
                "headers", F.when(F.col("headers").isNull(), tag).otherwise(F.concat(F.col("headers"), tag))
            ).drop("_position")
            records.write.format("kafka").options(**kafka_options).save()
            # The batch's output is in Kafka: its offsets can be committed (at-least-once), unless a
            # newer run of the task fenced this one meanwhile.
            self._commit(batch_offsets, run.fence, f"at the commit of batch {batch_id}, after writing its output")
            intents.forget_before(batch_id)
            run.batch_done(batch_id, batch_offsets)

        writer = (
            output.writeStream.foreachBatch(write_batch)
            .option("checkpointLocation", checkpoint)
            .outputMode("update" if program.stateful else "append")
            .queryName(f"{self.application_id}-task-{task_id}")
            .trigger(availableNow=True)
        )
        return writer.start()


class _RunFence:
    """The :class:`TaskFence` of one run (or None without fencing); being fenced becomes a
    :class:`TaskFencedError`, kept in ``fenced`` for the run to raise once its query stopped."""

    def __init__(self, fence: Optional[TaskFence], task_id: str, application_id: str):
        self.fence, self.task_id, self.application_id = fence, task_id, application_id
        self.fenced: Optional[TaskFencedError] = None

    def __enter__(self) -> "_RunFence":
        if self.fence is not None:
            self._guard(self.fence.start, "before processing anything")
        return self

    def __exit__(self, *exc: Any) -> None:
        if self.fence is not None:
            self.fence.close()

    def check(self, offsets: Mapping[TopicPartition, int], stage: str) -> None:
        if self.fence is not None and offsets:
            self._guard(lambda: self.fence.check(_offset_keys(offsets)), stage)

    def commit(self, offsets: Mapping[TopicPartition, int], stage: str) -> None:
        self._guard(lambda: self.fence.commit(_offset_keys(offsets)), stage)

    def _guard(self, call: Callable[[], None], stage: str) -> None:
        if self.fenced is not None:
            raise self.fenced
        try:
            call()
        except ProducerFencedError as error:
            self.fenced = TaskFencedError(self.task_id, self.application_id, error.transactional_id, stage)
            log.warning("%s", self.fenced)
            raise self.fenced from error
        except FenceError as error:
            raise TaskFailedError(self.task_id, self.application_id,
                                  f"{error} (a runner with fencing=False commits without a transactional id)") from error


def _offset_keys(offsets: Mapping[TopicPartition, int]) -> dict[tuple[str, int], int]:
    return {(tp.topic, tp.partition): offset for tp, offset in offsets.items()}


class _RunState:
    """Progress of one run, updated by the driver after each batch."""

    def __init__(self, task_id, started, assigned, offsets_from, end_offsets, max_records, progress):
        self.task_id = task_id
        self.started = started
        self.assigned = assigned
        self.processed = dict(offsets_from)
        self.end_offsets = end_offsets
        self.max_records = max_records
        self.progress = progress
        self.records_in = 0
        self.batches = 0
        self.fence: _RunFence = _RunFence(None, task_id, "")

    def batch_done(self, batch_id: int, batch_offsets: Mapping[TopicPartition, int]) -> None:
        # Offsets count records (transaction markers and compaction gaps aside).
        self.records_in += sum(max(0, end - self.processed[tp]) for tp, end in batch_offsets.items())
        self.processed.update(batch_offsets)
        self.batches += 1
        if self.progress is not None:
            elapsed = time.monotonic() - self.started
            lag = sum(max(0, self.end_offsets[tp] - self.processed[tp]) for tp in self.assigned)
            self.progress(TaskProgress(self.task_id, batch_id, self.records_in, elapsed,
                                       self.records_in / elapsed if elapsed > 0 else 0.0, lag))


_BOUND_REACHED = "dagster-kstreams: the run reached max_records"


def _state_columns(value) -> tuple:
    """The store columns of an ``applyInPandasWithState`` state row as the state reader returns it
    (the user's state struct, possibly wrapped in ``groupState``)."""
    if value is not None and "groupState" in value.__fields__:
        value = value["groupState"]
    return tuple(value) if value is not None else ()


def _observed_outputs(report) -> dict[str, int]:
    metrics = getattr(report, "observedMetrics", None) or {}
    row = metrics.get("records_out")
    if row is None:
        return {}
    values = row.asDict() if hasattr(row, "asDict") else dict(row)
    return {topic: int(count or 0) for topic, count in values.items() if topic != "__all__" and count}


_REASON = re.compile(r"(DeserializationError|ProcessingError): (.+)")


def _failure_reason(error: BaseException) -> str:
    """The one line a user needs from a failed streaming query (Python or JVM)."""
    text = str(error)
    match = _REASON.search(text)
    if match:
        return f"{match.group(1)}: {match.group(2).strip()}"
    for line in text.splitlines():
        line = line.strip()
        if line and ("Exception" in line or "Error" in line):
            return line[:500]
    return text.strip().splitlines()[0][:500] if text.strip() else type(error).__name__
