"""Warm a SparkSession up for an application's tasks without running any of them.

A worker's first task query costs far more than the next ones: on the same ``local[1]``
SparkSession, the first task took 14 s to start and 24 s more to its first batch, a second task
0.7 s and 2.7 s (2-core machine under load; ``bench/README.md``). The JVM loads and compiles the
Kafka source, the streaming engine, the RocksDB state store and the plans' generated code on first
use, and Spark starts its Python workers. A warm standby has nothing to do until it is promoted,
so it pays that ahead: :class:`WarmUp` runs each sub-topology's query once, as the task runner
builds it (source, execution strategy, output metrics), over at most ``records`` of the last
records of the sub-topology's first task, into a scratch checkpoint, and throws the output away.

Nothing of the application changes: no fence is taken, no offset committed, nothing written to
Kafka (the output goes to Spark's ``noop`` sink, and zero rows through its Kafka sink, which loads
and connects its producer), and the scratch checkpoint is deleted. The queries run one at a time
on a thread of their own, so that a worker goes on polling its tags, and :meth:`WarmUp.stop`
abandons the rest the moment tasks are granted. A warm-up that fails (a topic not there yet) only
ends the warm-up: it is an optimisation, never a reason to fail. With no record in the input yet,
it warms the queries' start only.
"""

from __future__ import annotations

import functools
import logging
import tempfile
import threading
import time
import uuid
from typing import Any, Optional

from dagster_kstreams.kafka.admin import TopicPartition
from dagster_kstreams.processors.timestamps import source_timestamps
from dagster_kstreams.spark.checkpoint import normalize_location
from dagster_kstreams.spark.checkpoint_files import checkpoint_files
from dagster_kstreams.spark.jvm import query_session
from dagster_kstreams.spark.metrics import observe_outputs
from dagster_kstreams.spark.source import kafka_source, on_state_partitions
from dagster_kstreams.spark.state_location import is_local_location
from dagster_kstreams.spark.strategies import strategy_for
from dagster_kstreams.spark.task_runner import TaskRunner
from dagster_kstreams.spark.task_session import configure_session
from dagster_kstreams.topology.task_id import TaskId

__all__ = ["WarmUp"]

log = logging.getLogger(__name__)


def _discard(kafka_options: dict[str, str], batch: Any, batch_id: int) -> None:
    batch.write.format("noop").mode("overwrite").save()  # the whole batch computed, then dropped
    # No row through Spark's Kafka sink: its producer is loaded and connected (and pooled, for the
    # task's own writes later), and nothing is written.
    batch.limit(0).selectExpr("topic", "key", "value").write.format("kafka").options(**kafka_options).save()


class WarmUp:
    """Each sub-topology's query run once on ``runner``'s session, output discarded (module docstring).

    :meth:`start` runs them one after the other on a thread of their own: building a query on a cold
    session takes seconds of Py4J calls, and the worker must go on polling its tags meanwhile.
    """

    def __init__(self, runner: TaskRunner, records: int = 100):
        if records < 1:
            raise ValueError(f"records must be >= 1, got {records}")
        self.runner, self.records = runner, records
        self._stopping = threading.Event()
        self._lock = threading.Lock()  # the running query and its checkpoint, between the two threads
        self._query: Any = None
        self._checkpoint: Optional[str] = None
        self._thread = threading.Thread(target=self._run, name="kstreams-warm-up", daemon=True)
        self.seconds = 0.0  # spent in warm-up queries so far
        self.error: Optional[str] = None  # why it ended early, if it did

    def start(self) -> "WarmUp":
        self._thread.start()
        return self

    @property
    def done(self) -> bool:
        """Every query has run (or the warm-up ended early, or was stopped)."""
        return self._thread.ident is not None and not self._thread.is_alive()

    @property
    def completed(self) -> bool:
        """Done, with every sub-topology's query run to its end."""
        return self.done and not self._stopping.is_set() and self.error is None

    def stop(self) -> None:
        """Abandon the rest at once (tasks were granted): the running query is stopped and its
        checkpoint deleted by the warm-up's thread, which does not start another."""
        self._stopping.set()
        with self._lock:
            query = self._query
        if query is not None:
            try:
                query.stop()
            except Exception:  # already stopped, or the session is going away
                pass

    def _run(self) -> None:
        started = time.monotonic()
        try:
            for subtopology in self.runner.application.subtopology_ids:  # upstream first
                if self._stopping.is_set():
                    break
                try:
                    query = self._start(subtopology)
                    while query.isActive and not self._stopping.is_set():
                        query.awaitTermination(0.2)
                finally:
                    self._finish()
        except Exception as error:  # an optimisation only: give up, never fail the worker
            if not self._stopping.is_set():
                text = str(error).strip()
                self.error = f"{type(error).__name__}: {text.splitlines()[0][:200] if text else ''}"
                log.warning("warm-up of %s ended early: %s", self.runner.application_id, self.error)
        finally:
            self.seconds = time.monotonic() - started

    def _start(self, subtopology: int) -> Any:
        runner = self.runner
        task = TaskId(subtopology, 0)
        application = runner.partitioned()
        assigned = [TopicPartition(topic, partition) for topic, partition in application.assigned_partitions(task)]
        topics = list(dict.fromkeys(tp.topic for tp in assigned))
        ends, beginnings = runner.admin.end_offsets(topics), runner.admin.beginning_offsets(topics)
        starting = {tp: max(beginnings.get(tp, 0), ends.get(tp, 0) - self.records) for tp in assigned}
        program = runner.compiled.program(subtopology)
        strategy = strategy_for(program, stateless_on_driver=runner.stateless_on_driver)
        session = query_session(runner.spark)
        configure_session(session, runner.state_partitions, runner.arrow_batch_size, runner.state_location)
        # No state snapshot: the state store's maintenance thread would upload it after the query
        # stopped, into the scratch checkpoint already deleted.
        session.conf.set("spark.sql.streaming.stateStore.minDeltasForSnapshot", str(2**31 - 1))
        headers = [tp.topic for tp in assigned
                   if application.is_repartition_topic(tp.topic) and strategy.reads_record_timestamps(program)]
        # The runner's Kafka settings for Spark's source and sink (the Java client's spelling).
        kafka_options = runner.spark_kafka_options()
        source = kafka_source(session, kafka_options, assigned, starting, self.records, headers,
                              source_timestamps(program), strategy.carries_headers(program))
        source = on_state_partitions(source, program, runner.state_partitions)
        output = observe_outputs(strategy.build(source, program, runner.dead_letters),
                                 application.sink_topics(subtopology))
        checkpoint = self._scratch_directory()
        with self._lock:
            self._checkpoint = checkpoint  # deleted by _finish whatever happens next
        query = (output.writeStream.foreachBatch(functools.partial(_discard, kafka_options))
                 .option("checkpointLocation", checkpoint)
                 .outputMode("update" if program.stateful else "append")
                 .queryName(f"{runner.application_id}-warm-up-{subtopology}")
                 .trigger(availableNow=True).start())
        with self._lock:
            self._query = query
        return query

    def _finish(self) -> None:
        """Stop the query if it still runs and delete its scratch checkpoint."""
        with self._lock:
            query, checkpoint = self._query, self._checkpoint
            self._query = self._checkpoint = None
        if query is not None and query.isActive:
            query.stop()
        if checkpoint is None:
            return
        checkpoint_files(self.runner.spark, checkpoint).delete(checkpoint)

    def _scratch_directory(self) -> str:
        """A local temporary directory when the state is local (the executors are this machine's),
        else a directory under the state location, which the executors can reach."""
        if is_local_location(self.runner.state_location):
            return tempfile.mkdtemp(prefix="kstreams-warm-up-")
        root = normalize_location(self.runner.state_location)
        return f"{root}/{self.runner.application_id}/warm-up/{uuid.uuid4().hex}"
