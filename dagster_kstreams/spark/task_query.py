"""The streaming query of one task run: source, processors and writer, wired (``TaskRunner``).

Spark's Kafka source over the task's partitions (``read_committed`` under exactly-once, so an
aborted attempt's records are never read), the sub-topology's program run by its execution
strategy, each batch's outputs counted per topic, and ``foreachBatch`` with the writer of the
processing guarantee: one transaction per batch (:mod:`.transactional_writer`, which also runs
what the strategy leaves to the driver) or Spark's Kafka sink, then the offsets
(:mod:`.batch_writer`). The query's checkpoint is the task's.
"""

from __future__ import annotations

from typing import Any, Optional

from dagster_kstreams.kafka.admin import TopicPartition
from dagster_kstreams.processors.records import DROPPED_LATE_TOPIC
from dagster_kstreams.processors.timestamps import source_timestamps
from dagster_kstreams.spark.batch_writer import BatchWriter
from dagster_kstreams.spark.checkpoint import CheckpointReader, WriteIntents, start_on_checkpoint, task_directory
from dagster_kstreams.spark.client_timeouts import sink_timeouts, source_timeouts
from dagster_kstreams.spark.errors import TaskFailedError, failure_reason
from dagster_kstreams.spark.metrics import observe_outputs
from dagster_kstreams.spark.remote_writer import AtLeastOnceSink, RemoteBatchWriter
from dagster_kstreams.spark.run_state import RunState
from dagster_kstreams.spark.source import kafka_source, on_state_partitions
from dagster_kstreams.spark.strategies import strategy_for
from dagster_kstreams.spark.task_session import configure_session
from dagster_kstreams.spark.transactional_writer import TransactionalBatchWriter
from dagster_kstreams.spark.triggers import Trigger

__all__ = ["start_task_query"]


def start_task_query(runner: Any, session: Any, checkpoint_reader: CheckpointReader, run: RunState,
                     starting: Optional[dict[TopicPartition, int]], checkpoint: str, trigger: Trigger,
                     max_records_per_batch: Optional[int], replayed: Optional[int],
                     claim: Optional[str] = None) -> Any:
    """Start the query of ``run``'s task on ``session`` (``runner``: the
    :class:`~dagster_kstreams.spark.task_runner.TaskRunner` that calls this); a failure to start
    is one :class:`~dagster_kstreams.spark.errors.TaskFailedError` line. ``claim``: the run's claim
    of the task when its batches are written in a Spark Connect server (:mod:`.remote_writer`)."""
    program = runner.compiled.program(run.task.subtopology)
    if program.placed_topics:  # a stream partitioner's num_partitions, as the broker has it now
        # (None: a sink whose topic a function picks, which reads the count when it sends there)
        program.sink_partition_counts = runner.running_admin.partition_counts(
            [topic for topic in program.placed_topics if topic is not None])
    strategy = strategy_for(program, stateless_on_driver=runner.stateless_on_driver) \
        .on_checkpoint(checkpoint_reader.files)
    configure_session(session, runner.state_partitions, runner.arrow_batch_size, runner.state_location)
    # Repartition topics carry their records' timestamps in a header: read only if used.
    timestamp_headers = [tp.topic for tp in run.assigned if runner.application.is_repartition_topic(tp.topic)
                         and strategy.reads_record_timestamps(program)]
    source_options = {**source_timeouts(runner.task_timeout_s), **runner.spark_kafka_options()}
    if runner.exactly_once:
        source_options["kafka.isolation.level"] = "read_committed"  # never an aborted attempt's records
    source = kafka_source(session, source_options, run.assigned, starting, max_records_per_batch,
                          timestamp_headers, source_timestamps(program), strategy.carries_headers(program))
    source = on_state_partitions(source, program, runner.state_partitions)
    output = strategy.build(source, program, runner.dead_letters)

    written = runner.application.sink_topics(run.task.subtopology)
    if runner.dead_letters.dead_letter_topic:
        written = [*written, runner.dead_letters.dead_letter_topic]
    counted = [*written, DROPPED_LATE_TOPIC] if program.drops_late_records else written
    on_driver = strategy.on_driver(program)
    # An exactly-once writer in this process collects each batch and counts its records itself; one
    # in a Spark Connect server (``claim``) cannot report them here, so Spark's observed metrics do.
    if not runner.exactly_once or claim is not None:
        output = observe_outputs(output, counted)
    drops_late, ordered = program.drops_late_records, strategy.orders_output(program)
    directory = task_directory(runner.state_location, runner.application_id, str(run.task))
    sink = None if runner.exactly_once else AtLeastOnceSink(
        {**sink_timeouts(runner.task_timeout_s), **runner.spark_kafka_options()}, written, runner.max_record_bytes)
    if claim is not None:
        writer: Any = RemoteBatchWriter(
            runner.application_id, run.task, claim, runner.task_fence(str(run.task)), runner.kafka_config,
            runner.task_timeout_s, checkpoint, directory, run.assigned, dict(run.processed), run.max_records,
            drops_late, ordered, sink)
    elif sink is None:
        writer = TransactionalBatchWriter(run, checkpoint_reader, drops_late, ordered, replayed, on_driver)
    else:
        writer = BatchWriter(run, runner.application_id, checkpoint_reader, WriteIntents(session, directory),
                             runner.running_admin, sink.kafka_options, runner.kafka_config, sink.written_topics,
                             drops_late, ordered, sink.largest_record_bytes)
    stream = (
        output.writeStream.foreachBatch(writer)
        .option("checkpointLocation", checkpoint)
        .outputMode("update" if program.stateful else "append")
        .queryName(f"{runner.application_id}-task-{run.task}")
    )
    try:
        return start_on_checkpoint(trigger.apply(stream), f"task {run.task} of application {runner.application_id!r}",
                                   runner.task_timeout_s)
    except Exception as error:  # from the JVM: said in one line, as a running query's failure is
        raise TaskFailedError(run.task, runner.application_id, failure_reason(error)) from error
