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
Kafka (the output goes to Spark's ``noop`` sink; no row goes through its Kafka sink), and the scratch checkpoint is deleted. The
queries run one at a time, each a step of :meth:`WarmUp.advance`, so that a worker polls its tags
in between and :meth:`WarmUp.stop` abandons the rest the moment tasks are granted. A warm-up that
fails (a topic not there yet) only ends the warm-up: it is an optimisation, never a reason to fail.
"""

from __future__ import annotations

import functools
import logging
import shutil
import tempfile
import time
import uuid
from typing import Any, Optional

from dagster_kstreams.kafka.admin import TopicPartition
from dagster_kstreams.spark.checkpoint import normalize_location
from dagster_kstreams.spark.metrics import observe_outputs
from dagster_kstreams.spark.source import kafka_source
from dagster_kstreams.spark.state_location import is_local_location
from dagster_kstreams.spark.strategies import configure_session, strategy_for
from dagster_kstreams.spark.task_runner import TaskRunner
from dagster_kstreams.topology.task_id import TaskId

__all__ = ["WarmUp"]

log = logging.getLogger(__name__)


def _discard(kafka_options: dict[str, str], batch: Any, batch_id: int) -> None:
    batch.write.format("noop").mode("overwrite").save()  # the whole batch computed, then dropped
    # No row through Spark's Kafka sink: its producer is loaded and connected (and pooled, for the
    # task's own writes later), and nothing is written.
    batch.limit(0).selectExpr("topic", "key", "value").write.format("kafka").options(**kafka_options).save()


class WarmUp:
    """Each sub-topology's query run once on ``runner``'s session, output discarded (module docstring)."""

    def __init__(self, runner: TaskRunner, records: int = 100):
        if records < 1:
            raise ValueError(f"records must be >= 1, got {records}")
        self.runner, self.records = runner, records
        self._pending = list(runner.application.subtopology_ids)  # upstream first
        self._query: Any = None
        self._checkpoint: Optional[str] = None
        self._started = 0.0
        self.seconds = 0.0  # spent in warm-up queries so far
        self.error: Optional[str] = None  # why it ended early, if it did

    @property
    def done(self) -> bool:
        return self._query is None and not self._pending

    def advance(self) -> bool:
        """Collect the query that finished and start the next one; True once all have run."""
        try:
            if self._query is not None:
                if self._query.isActive:
                    return False
                self._finish()
            if self._pending:
                self._start(self._pending.pop(0))
        except Exception as error:  # an optimisation only: give up, never fail the worker
            self.error = f"{type(error).__name__}: {str(error).splitlines()[0][:200] if str(error) else ''}"
            log.warning("warm-up of %s ended early: %s", self.runner.application_id, self.error)
            self.stop()
        return self.done

    def stop(self) -> None:
        """Abandon the rest (tasks were granted): stop the running query, delete its checkpoint."""
        self._pending.clear()
        if self._query is not None:
            try:
                self._query.stop()
            except Exception:  # already stopped, or the session is going away
                pass
            self._finish()

    def _start(self, subtopology: int) -> None:
        runner = self.runner
        task = TaskId(subtopology, 0)
        application = runner.partitioned()
        assigned = [TopicPartition(topic, partition) for topic, partition in application.assigned_partitions(task)]
        topics = list(dict.fromkeys(tp.topic for tp in assigned))
        ends, beginnings = runner.admin.end_offsets(topics), runner.admin.beginning_offsets(topics)
        starting = {tp: max(beginnings.get(tp, 0), ends.get(tp, 0) - self.records) for tp in assigned}
        program = runner.compiled.program(subtopology)
        strategy = strategy_for(program)
        session = runner.spark.newSession()
        configure_session(session, runner.state_partitions, runner.arrow_batch_size)
        headers = [tp.topic for tp in assigned
                   if application.is_repartition_topic(tp.topic) and strategy.reads_record_timestamps(program)]
        # The runner's Kafka settings for Spark's source and sink (the Java client's spelling).
        kafka_options = runner._kafka_options()
        source = kafka_source(session, kafka_options, assigned, starting, self.records, headers)
        output = observe_outputs(strategy.build(source, program, runner.dead_letters),
                                 application.sink_topics(subtopology))
        self._checkpoint = self._scratch_directory()
        self._started = time.monotonic()
        self._query = (output.writeStream.foreachBatch(functools.partial(_discard, kafka_options))
                       .option("checkpointLocation", self._checkpoint)
                       .outputMode("update" if program.stateful else "append")
                       .queryName(f"{runner.application_id}-warm-up-{subtopology}")
                       .trigger(availableNow=True).start())

    def _finish(self) -> None:
        self.seconds += time.monotonic() - self._started
        self._query = None
        checkpoint, self._checkpoint = self._checkpoint, None
        if checkpoint is None:
            return
        if is_local_location(checkpoint):
            shutil.rmtree(checkpoint, ignore_errors=True)
        else:
            context = self.runner.spark.sparkContext
            path = context._jvm.org.apache.hadoop.fs.Path(checkpoint)
            path.getFileSystem(context._jsc.hadoopConfiguration()).delete(path, True)

    def _scratch_directory(self) -> str:
        """A local temporary directory when the state is local (the executors are this machine's),
        else a directory under the state location, which the executors can reach."""
        if is_local_location(self.runner.state_location):
            return tempfile.mkdtemp(prefix="kstreams-warm-up-")
        root = normalize_location(self.runner.state_location)
        return f"{root}/{self.runner.application_id}/warm-up/{uuid.uuid4().hex}"
