"""Run one stream task (sub-topology ``s``, partition ``p``) on Spark: :class:`TaskRunner`.

A run of a task is one Structured Streaming query (started by :mod:`~dagster_kstreams.spark.task_start`,
wired by :mod:`~dagster_kstreams.spark.task_query`):
a drain (``run_task``) or a continuous run that a worker keeps going until it stops it (``start_task``):

* **Source** (:mod:`~dagster_kstreams.spark.source`) — Spark's Kafka source with ``assign`` =
  partition ``p`` of every source topic of ``s``. A drain (``trigger(availableNow=True)``)
  processes everything up to the end offsets seen when the run starts, in batches of at most
  ``max_records_per_batch`` records, then stops. A new checkpoint starts from the group's
  committed offsets (else earliest, as Kafka Streams' ``auto.offset.reset``).
* **Processors** (:mod:`~dagster_kstreams.spark.strategies`) — compiled by
  :mod:`dagster_kstreams.spark.compile` and run by one execution strategy: Column plans and
  Spark's own count on the JVM, one Python pass per batch, per key, or per task with its state.
* **Event time** (:mod:`~dagster_kstreams.spark.event_time`) — each record's timestamp (carried
  in a header through repartition topics), Kafka Streams' processing order across the task's
  partitions, and the task's stream time, carried between batches by a watermark.
* **State** — Spark's state store with the RocksDB provider, in the task's checkpoint
  (:mod:`~dagster_kstreams.spark.checkpoint`): ``<state_location>/<app>/tasks/<task>/checkpoint``.
* **Sinks and offsets** — under exactly-once (the default,
  :mod:`~dagster_kstreams.spark.transactional_writer`) each batch's output and end offsets in one
  transaction of the task's producer; under at-least-once
  (:mod:`~dagster_kstreams.spark.batch_writer`) Spark's Kafka sink, then the offsets. Either way
  the offsets go to the consumer group named by the application id, so Kafka's tools see the lag.
* **Fencing** (:mod:`~dagster_kstreams.spark.run_state`) — a run takes its task with a
  transactional producer, so whoever started a task last owns it.
* **Spark Connect** (an ``sc://`` session) — the writer runs in the server and takes the task
  over from the run by its claim (:mod:`~dagster_kstreams.spark.remote_writer`); the run reads
  its progress from the commit log (:mod:`~dagster_kstreams.spark.committed_progress`).

:class:`TaskRunner` also refuses to run a task twice at once within one process. The
application's facts (real topic names, source and sink topics, task counts, execution order) come
from its :class:`~dagster_kstreams.topology.application.ApplicationTopology`; the runner reads only
the external source topics' partition counts from the broker.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from typing import Any, Optional

from pyspark.sql import SparkSession

from dagster_kstreams.kafka.admin import KafkaAdmin
from dagster_kstreams.kafka.dead_letter import DeadLetterPolicy, DeserializationHandler
from dagster_kstreams.kafka.fencing import TaskFence, task_transactional_id
from dagster_kstreams.kafka.task_lag import with_broker_partitions
from dagster_kstreams.processors.record_cache import DEFAULT_CACHE_MAX_BYTES, check_cache_max_bytes
from dagster_kstreams.spark.busy_clock import SharedBusyClock
from dagster_kstreams.spark.checkpoint import default_state_location, task_checkpoint, task_directory
from dagster_kstreams.spark.client_timeouts import DEFAULT_TASK_TIMEOUT_S
from dagster_kstreams.spark.compile import CompiledTopology, compile_topology
from dagster_kstreams.spark.errors import TaskFailedError
from dagster_kstreams.spark.internal_topics import PURGE_INTERVAL_S, create_internal_topics
from dagster_kstreams.spark.jvm import honor_pyspark_python, is_connect
from dagster_kstreams.spark.pipeline import run_in_waves, run_pipelined
from dagster_kstreams.spark.running_task import RunningTask
from dagster_kstreams.spark.session import build_spark_session
from dagster_kstreams.spark.store_reader import read_store
from dagster_kstreams.spark.strategies import DEFAULT_STATELESS_PASS, check_stateless_pass
from dagster_kstreams.spark.task_result import TaskProgress, TaskResult
from dagster_kstreams.spark.task_start import start_running_task
from dagster_kstreams.spark.transactional_writer import (
    DEFAULT_PROCESSING_GUARANTEE,
    EXACTLY_ONCE_V2,
    check_processing_guarantee,
)
from dagster_kstreams.spark.triggers import AVAILABLE_NOW, ProcessingTime, Trigger
from dagster_kstreams.topology.application import ApplicationTopology, check_application_id
from dagster_kstreams.topology.task_id import TaskId

__all__ = ["TaskRunner"]


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
    ``source_partitions``: the source topics' partition counts the definitions declared, which fix
    the topics a source subscribed by a pattern reads (a worker run reads what its definitions
    resolved). Without, a pattern matches the topics the broker has when the runner is made. The
    counts a task runs with are the broker's either way.
    ``fencing`` (default on) commits offsets through a per-task transactional producer, so that a
    task started in another process fences this one (:mod:`~dagster_kstreams.spark.run_state`); it
    needs a broker that allows transactions (and, with ACLs, WRITE on the transactional ids
    ``<app>-task-*``).
    ``processing_guarantee`` is ``"exactly_once_v2"`` (the default: each batch's output and offsets
    in one transaction of the task's producer, read ``read_committed``:
    :mod:`~dagster_kstreams.spark.transactional_writer`) or ``"at_least_once"`` (Spark's Kafka sink;
    replays deduplicated: :mod:`~dagster_kstreams.spark.batch_writer`).
    ``stateless_pass`` is where a stateless sub-topology's Python pass runs under exactly-once:
    ``"driver"`` (the default: on the batch the driver collects anyway, one core, no round trip
    through a Python worker) or ``"executors"`` (Spark's Python workers, every executor core: for
    costly functions on a worker with many cores). Under at-least-once, and through Spark Connect,
    it runs in the workers.
    ``statestore_cache_max_bytes``: Kafka Streams' setting; 0 turns every store's record cache off (each
    forwards every update), any other size leaves it to each store (:mod:`~dagster_kstreams.processors.record_cache`).
    ``repartition_purge_interval_s``: Kafka Streams' ``repartition.purge.interval.ms``, in seconds (30 by
    default): how often a task deletes what it consumed of its repartition topics; ``math.inf`` never
    (:mod:`~dagster_kstreams.spark.internal_topics`).
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
        processing_guarantee: str = DEFAULT_PROCESSING_GUARANTEE,
        task_timeout_s: float = DEFAULT_TASK_TIMEOUT_S,
        stateless_pass: str = DEFAULT_STATELESS_PASS,
        source_partitions: Optional[Mapping[str, int]] = None,
        statestore_cache_max_bytes: int = DEFAULT_CACHE_MAX_BYTES,
        repartition_purge_interval_s: float = PURGE_INTERVAL_S,
    ):
        check_application_id(application_id)  # before anything else starts
        self.processing_guarantee = check_processing_guarantee(processing_guarantee, fencing)
        self.stateless_pass = check_stateless_pass(stateless_pass)
        self.cache_max_bytes = check_cache_max_bytes(statestore_cache_max_bytes)
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
        if task_timeout_s <= 0:
            raise ValueError(f"task_timeout_s must be > 0, got {task_timeout_s}")
        if not repartition_purge_interval_s >= 0:
            raise ValueError(f"repartition_purge_interval_s must be >= 0, got {repartition_purge_interval_s}")
        self.application_id = application_id
        self.state_location = state_location or default_state_location()
        self.dead_letters = DeadLetterPolicy(deserialization_exception_handler, dead_letter_topic)
        self.max_records_per_batch = max_records_per_batch
        self.state_partitions = state_partitions
        self.arrow_batch_size = arrow_batch_size
        self.fencing = fencing
        self.task_timeout_s = task_timeout_s
        self.repartition_purge_interval_s = repartition_purge_interval_s
        self.admin = KafkaAdmin(self.kafka_config["bootstrap.servers"], self._client_config())
        unresolved = ApplicationTopology(topology, application_id)
        if source_partitions is None and unresolved.patterns_pending:
            source_partitions = with_broker_partitions(unresolved, self.admin).source_partitions
        self.compiled: CompiledTopology = compile_topology(
            unresolved.topology, application_id, self.dead_letters,
            default_key_serde=default_key_serde, default_value_serde=default_value_serde,
            kafka_config=self.kafka_config, source_partitions=source_partitions,
            statestore_cache_max_bytes=self.cache_max_bytes,
        ).check()  # an operation the runner cannot run fails now, not in the middle of a run
        self.application: ApplicationTopology = self.compiled.application
        # A started task's Kafka calls wait out a broker restart (up to task_timeout_s); the checks
        # before a task starts fail fast.
        self.running_admin = self.admin.waiting_out_outages(task_timeout_s)
        self._spark = spark
        if spark is not None:
            honor_pyspark_python(spark)
        self._running: set[TaskId] = set()
        # Tasks of one runner share its process: each is charged its share of the process's time.
        self.busy_clock = SharedBusyClock()
        self._lock = threading.Lock()
        self._internal_topics_ready = False
        self.max_record_bytes: Optional[int] = None  # the input topics' max.message.bytes

    # -- plumbing -----------------------------------------------------------------------
    @property
    def spark(self) -> SparkSession:
        if self._spark is None:
            self._spark = build_spark_session()
        return self._spark

    @property
    def exactly_once(self) -> bool:
        return self.processing_guarantee == EXACTLY_ONCE_V2

    @property
    def stateless_on_driver(self) -> bool:
        """Whether a stateless pass runs on the driver, which collects every batch under
        exactly-once (:func:`~dagster_kstreams.spark.strategies.strategy_for`). Never through Spark
        Connect: the batch is collected in the server's process, whose counts of what it sent
        would not reach this run; the pass runs on the server's executors instead."""
        return self.exactly_once and self.stateless_pass == "driver" and not is_connect(self.spark)

    def spark_kafka_options(self) -> dict[str, str]:
        """Settings of Spark's Kafka source and sink (the Java client)."""
        return {f"kafka.{key}": value for key, value in self.spark_kafka_config.items()}

    def _client_config(self) -> dict[str, str]:
        return {k: v for k, v in self.kafka_config.items() if k != "bootstrap.servers"}

    def task_directory(self, task: TaskId | str) -> str:
        return task_directory(self.state_location, self.application_id, str(task))

    def checkpoint_location(self, task: TaskId | str) -> str:
        return task_checkpoint(self.state_location, self.application_id, str(task))

    # -- topics -------------------------------------------------------------------------
    def partitioned(self) -> ApplicationTopology:
        """The application with its external source topics' partition counts, as the broker has them now."""
        return with_broker_partitions(self.application, self.admin)

    def partition_counts(self) -> dict[str, int]:
        """Partition count of every topic the topology reads or writes (internal ones computed)."""
        return self.partitioned().partition_counts

    def tasks(self) -> list[TaskId]:
        """All tasks, sub-topology by sub-topology (upstream first)."""
        return self.partitioned().tasks()

    def task_ids(self) -> list[str]:
        """All tasks as strings (``"<subtopology>_<partition>"``), in :meth:`tasks` order."""
        return [str(task) for task in self.tasks()]

    def ensure_internal_topics(self) -> dict[str, int]:
        """Create the repartition topics (and the dead-letter topic) that do not exist yet.

        Partition counts follow Kafka Streams: the count set with ``Repartitioned``, else the
        task count of the sub-topology that writes the topic. Returns ``{topic: partitions}``.
        """
        created, self.max_record_bytes = create_internal_topics(self.admin, self.partitioned(),
                                                                self.dead_letters.dead_letter_topic)
        self._internal_topics_ready = True
        return created

    def _check_sink_topics(self, subtopology: int) -> None:
        sinks = [t for t in self.application.sink_topics(subtopology) if not self.application.is_repartition_topic(t)]
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
    def start_task(
        self,
        task: TaskId | str,
        *,
        trigger_seconds: float = 0.0,
        max_records_per_batch: Optional[int] = None,
        max_records: Optional[int] = None,
        progress: Optional[Callable[[TaskProgress], None]] = None,
    ) -> RunningTask:
        """Start ``task`` and keep it running (:class:`RunningTask`): a micro-batch every
        ``trigger_seconds`` (0: as soon as the last one is done) with what has arrived, at most
        ``max_records_per_batch`` records (default: the runner's), until :meth:`RunningTask.stop`
        or the first batch that reaches ``max_records``."""
        return self._start(task, ProcessingTime(trigger_seconds), max_records, progress, max_records_per_batch)

    def start_drain(
        self,
        task: TaskId | str,
        max_records: Optional[int] = None,
        progress: Optional[Callable[[TaskProgress], None]] = None,
    ) -> RunningTask:
        """Start processing ``task``'s backlog up to the end offsets seen now; the query ends by
        itself there (or after the first batch that reaches ``max_records``)."""
        if max_records is not None and max_records < 1:
            raise ValueError(f"max_records must be >= 1 or None, got {max_records}")
        return self._start(task, AVAILABLE_NOW, max_records, progress, None)

    def run_task(
        self,
        task: TaskId | str,
        max_records: Optional[int] = None,
        progress: Optional[Callable[[TaskProgress], None]] = None,
    ) -> TaskResult:
        """Process ``task``'s backlog (a :class:`TaskId` or its string ``"1_3"``): everything up
        to the end offsets seen at start.

        ``max_records`` stops the run after the first batch that reaches it (batches are then
        at most ``max_records`` long). ``progress`` is called after every batch.
        """
        running = self.start_drain(task, max_records, progress)
        try:
            running.await_end()
        finally:
            running.close()
        return self.finish(running)

    def run_all(
        self,
        max_records: Optional[int] = None,
        progress: Optional[Callable[[TaskProgress], None]] = None,
        parallelism: Optional[int] = None,
    ) -> list[TaskResult]:
        """Run every task once, so that records written to a repartition topic are processed
        downstream in the same call. Results come in task order (upstream first). The tasks of a
        sub-topology that reads a topic written back to it (a foreign-key join's answers:
        :meth:`~dagster_kstreams.topology.application.ApplicationTopology.written_back`) then run
        once more, and their second results follow.

        By default every task runs at once, pipelined (:func:`~dagster_kstreams.spark.pipeline.run_pipelined`).
        ``parallelism=n`` runs one sub-topology after another instead, ``n`` of its tasks at a time.
        """
        if parallelism is not None and parallelism < 1:
            raise ValueError(f"parallelism must be >= 1 or None, got {parallelism}")
        if not self._internal_topics_ready:
            self.ensure_internal_topics()
        application = self.partitioned()
        run_again = application.run_again()
        again = [task for task in self.tasks() if task.subtopology in run_again]
        results = self._run_tasks(self.tasks(), max_records, progress, parallelism)
        return results + (self._run_tasks(again, max_records, progress, parallelism) if again else [])

    def _run_tasks(self, tasks: list[TaskId], max_records: Optional[int],
                   progress: Optional[Callable[[TaskProgress], None]], parallelism: Optional[int]) -> list[TaskResult]:
        if parallelism is None:
            return run_pipelined(self, tasks, max_records, progress)
        return run_in_waves(self, tasks, max_records, progress, parallelism)

    def _start(self, task: TaskId | str, trigger: Trigger, max_records: Optional[int],
               progress: Optional[Callable[[TaskProgress], None]],
               max_records_per_batch: Optional[int]) -> RunningTask:
        task = task if isinstance(task, TaskId) else TaskId.parse(task)
        application = self.partitioned()
        application.check_task(task)
        with self._lock:
            if task in self._running:
                raise TaskFailedError(task, self.application_id, "the task is already running in this process")
            self._running.add(task)
        try:
            started = time.monotonic()
            if not self._internal_topics_ready:
                self.ensure_internal_topics()
            self._check_sink_topics(task.subtopology)
            return start_running_task(self, application, task, trigger, max_records, progress, max_records_per_batch,
                                      started, self._released)
        except BaseException:
            self._released(task)
            raise

    def _released(self, task: TaskId) -> None:
        with self._lock:
            self._running.discard(task)

    def finish(self, running: RunningTask) -> TaskResult:
        """The whole run of a stopped task as one result (``seconds``: wall clock since its start);
        raises what stopped it if that was not a request (fenced, failed)."""
        failure = running.failure()
        if failure is not None:
            raise failure
        return running.take_result(seconds=time.monotonic() - running.started)

    def task_fence(self, task_id: str) -> Optional[TaskFence]:
        """The (not yet started) transactional producer that stands for the task (named by its
        string form, as its transactional id is); None without fencing."""
        if not self.fencing:
            return None
        config = self._client_config()
        if self.exactly_once and self.max_record_bytes is not None and "message.max.bytes" not in config:
            # The producer writes the task's records: the largest record an input topic takes gets through.
            config["message.max.bytes"] = str(max(self.max_record_bytes, 1_000_000) + 65_536)
        return TaskFence(self.kafka_config["bootstrap.servers"], task_transactional_id(self.application_id, task_id),
                         self.application_id, config, timeout_s=self.task_timeout_s)

    # -- state ------------------------------------------------------------------------
    def read_store(self, store_name: str) -> dict[Any, Any]:
        """The content of a state store across all tasks: ``{key: value}``, deserialized
        (:func:`~dagster_kstreams.spark.store_reader.read_store`)."""
        return read_store(self, store_name)
