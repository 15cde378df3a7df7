"""Run one task on Spark inside a Dagster step and report what it did as materializations.

Materializing partition ``p`` of sub-topology ``s`` runs task ``s_p`` (:class:`TaskRunner`): it
processes the task's backlog up to the end offsets seen when it starts. The step then reports

* the sub-topology asset, partition ``p``: offsets from/to, records in/out, seconds, records per
  second, lag left (numbers, so the UI plots them over time);
* its queryable stores, partition ``p``;
* every partition of a repartition or sink topic whose end offset moved while the task ran (the
  partitions it wrote to), with the offsets and the number of records added.

A worker run (the lag sensor's) reports through :func:`run_task_and_report` the same way.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Optional

import dagster as dg
from pyspark import cloudpickle

from dagster_kstreams.kafka.admin import KafkaAdminError, TopicPartition
from dagster_kstreams.orchestration.app import KStreamsApp
from dagster_kstreams.orchestration.protocol import TASK_BATCH_METADATA, WORKER_SECONDS_METADATA
from dagster_kstreams.spark.task_result import TaskProgress, TaskResult
from dagster_kstreams.spark.task_runner import TaskRunner
from dagster_kstreams.topology.functions import UserFunction
from dagster_kstreams.topology.task_id import TaskId

__all__ = ["PartitionCountMismatch", "TaskReport", "check_partition_counts", "materialize_task_partition",
           "prepare_topics", "run_task_and_report", "task_materializations", "task_metadata", "task_runner",
           "topic_partition_materializations", "written_topics", "end_offsets_once_led"]


class PartitionCountMismatch(dg.Failure):
    """The broker's topics do not have the partition counts the definitions declare."""


def check_partition_counts(app: KStreamsApp, broker_counts: Mapping[str, int]) -> None:
    """Fail naming the topic and both counts if the broker disagrees with the declared counts."""
    declared_counts = app.declared_topics()
    # An output topic missing may be created on first run; an input topic may not.
    problems = [f"topic {topic!r} does not exist on the broker (declared with {declared_counts[topic]} partitions)"
                for topic in app.missing_input_topics(broker_counts)]
    for topic, declared in sorted(declared_counts.items()):
        if topic in broker_counts and broker_counts[topic] != declared:
            problems.append(f"topic {topic!r} has {broker_counts[topic]} partitions on the broker but "
                            f"{declared} in the definitions of {app.app_id!r}")
    if problems:
        raise PartitionCountMismatch(
            description="; ".join(problems) + ". Fix the topic or the declared topic_partitions: tasks map to "
                        "partitions, so the counts must agree.")


def prepare_topics(app: KStreamsApp, admin: Any, subtopology_ids: list[int], log: Callable[[str], None]) -> None:
    """Before running tasks: the declared partition counts hold on the broker, and (if the app
    says so) the output topics of these sub-topologies exist."""
    existing = admin.list_topics()
    check_partition_counts(app, admin.partition_counts([t for t in app.declared_topics() if t in existing]))
    if app.create_sink_topics:
        application = app.application
        sinks = {topic for sub_id in subtopology_ids for topic in application.sink_topics(sub_id)
                 if not application.is_repartition_topic(topic)}
        counts = application.partition_counts
        missing = {topic: counts[topic] for topic in sorted(sinks) if topic not in existing}
        if missing:
            log(f"creating output topic(s) {missing}")
            admin.create_topics(missing)


def _user_function_modules(app: KStreamsApp) -> set[str]:
    """Modules defining the topology's functions that are not installed packages (a project's
    ``assets/`` files): Spark's Python workers on a cluster cannot import them."""
    modules = set()
    for sub in app.topology.subtopologies:
        for node in sub.nodes:
            values = list(node.params.values())
            for value in values:
                if isinstance(value, (list, tuple)):
                    values.extend(value)
                fn = value.fn if isinstance(value, UserFunction) else None
                module = sys.modules.get(getattr(fn, "__module__", None) or "")
                path = getattr(module, "__file__", None) or ""
                if module is not None and path and "-packages" + os.sep not in path and \
                        not module.__name__.startswith("dagster_kstreams"):
                    modules.add(module.__name__)
    return modules


def task_runner(app: KStreamsApp, kafka: Any, spark: Any) -> TaskRunner:
    """A :class:`TaskRunner` for ``app`` on ``spark`` that reaches Kafka as the :class:`KafkaResource` says:
    its admin client with librdkafka's settings, Spark's Kafka source and sink with the Java
    client's (SASL and SSL settings are spelled differently by the two).

    The project modules defining the topology's functions are shipped to Spark by value, as the
    ``dagster-kstreams run`` command does, so workers need not have the project installed.
    """
    for module in _user_function_modules(app):
        cloudpickle.register_pickle_by_value(sys.modules[module])
    return TaskRunner(app.topology, app.app_id, kafka.client_settings(), state_location=app.state_location,
                      spark=spark, max_records_per_batch=app.max_records_per_batch,
                      processing_guarantee=app.processing_guarantee, task_timeout_s=app.task_timeout_s,
                      stateless_pass=app.stateless_pass, spark_kafka_config=kafka.java_client_settings(),
                      source_partitions=app.topic_partitions,
                      statestore_cache_max_bytes=app.statestore_cache_max_bytes,
                      repartition_purge_interval_s=app.repartition_purge_interval_s)


def task_metadata(result: TaskResult) -> dict[str, dg.MetadataValue]:
    """A :class:`TaskResult` as Dagster metadata (numbers are plotted by the UI)."""
    summary = result.as_dict()
    metadata = {
        "task": dg.MetadataValue.text(str(result.task_id)),
        "records_in": dg.MetadataValue.int(result.records_in),
        "records_out": dg.MetadataValue.int(sum(result.records_out.values())),
        "seconds": dg.MetadataValue.float(round(result.seconds, 3)),
        "records_per_second": dg.MetadataValue.float(round(result.records_per_second, 1)),
        "lag_left": dg.MetadataValue.int(result.total_lag_left),
        "batches": dg.MetadataValue.int(result.batches),
        "records_dropped_late": dg.MetadataValue.int(result.records_dropped_late),
        # Summed over the task's source partitions: one number per run that the UI can plot.
        "offset_from": dg.MetadataValue.int(sum(result.offsets_from.values())),
        "offset_to": dg.MetadataValue.int(sum(result.offsets_to.values())),
        "offsets_from": dg.MetadataValue.json(summary["offsets_from"]),
        "offsets_to": dg.MetadataValue.json(summary["offsets_to"]),
        "records_out_by_topic": dg.MetadataValue.json(summary["records_out"]),
        "lag_left_by_partition": dg.MetadataValue.json(summary["lag_left"]),
    }
    if result.worker_seconds is not None:  # a worker's report: the task's share of the worker's time
        metadata[WORKER_SECONDS_METADATA] = dg.MetadataValue.float(round(result.worker_seconds, 3))
    return metadata


@dataclass
class TaskReport:
    """One task run and the materializations that describe it.

    ``task_events``: the sub-topology partition, then its stores' partitions. ``topic_events``: every
    repartition/sink topic partition the run wrote to. A worker logs them all with
    ``context.log_event``; the sub-topology asset yields the selected ones as ``MaterializeResult``.
    """

    result: TaskResult
    task_events: list[dg.AssetMaterialization]
    topic_events: list[dg.AssetMaterialization]


def run_task_and_report(app: KStreamsApp, runner: TaskRunner, admin: Any, task: TaskId,
                        progress: Optional[Callable[[TaskProgress], None]] = None,
                        max_records: Optional[int] = None) -> TaskReport:
    """Run ``task`` to the end offsets it sees at start (or to the first batch that reaches
    ``max_records``) and describe what it did."""
    written = written_topics(app, task.subtopology)
    ends_before = end_offsets_once_led(admin, written)
    result = runner.run_task(task, max_records=max_records, progress=progress)
    ends_after = end_offsets_once_led(admin, written)
    return TaskReport(result, task_materializations(app, result),
                      topic_partition_materializations(app, str(task), ends_before, ends_after))


def task_materializations(app: KStreamsApp, result: TaskResult,
                          report_number: Optional[int] = None) -> list[dg.AssetMaterialization]:
    """The sub-topology partition of ``result``'s task, then its stores' partitions. A worker
    passes ``report_number``, the how-manieth report of this task in its process this is
    (:data:`TASK_BATCH_METADATA`)."""
    task = result.task
    partition = str(task.partition)
    metadata = task_metadata(result)
    if report_number is not None:
        metadata[TASK_BATCH_METADATA] = dg.MetadataValue.int(report_number)
    events = [dg.AssetMaterialization(app.subtopology_key(task.subtopology), partition=partition, metadata=metadata)]
    events += [
        dg.AssetMaterialization(app.store_key(store), partition=partition,
                                metadata={"task": metadata["task"], "records_in": metadata["records_in"]})
        for store in app.queryable_stores(task.subtopology)
    ]
    return events


def written_topics(app: KStreamsApp, subtopology_id: int) -> list[str]:
    return list(dict.fromkeys(app.application.sink_topics(subtopology_id)))


def topic_partition_materializations(app: KStreamsApp, written_by: str, ends_before: Mapping[TopicPartition, int],
                                     ends_after: Mapping[TopicPartition, int]) -> list[dg.AssetMaterialization]:
    """One materialization per topic partition whose end offset moved while the task(s)
    ``written_by`` names ran. ``records`` counts offsets, as Kafka's tools do: under exactly-once
    that includes one commit marker per transaction that wrote the partition."""
    events = []
    for tp, end in sorted(ends_after.items()):
        start = ends_before.get(tp, 0)
        if end > start:
            events.append(dg.AssetMaterialization(
                app.topic_key(tp.topic), partition=str(tp.partition),
                metadata={
                    "written_by_task": dg.MetadataValue.text(written_by),
                    "offset_from": dg.MetadataValue.int(start),
                    "offset_to": dg.MetadataValue.int(end),
                    "records": dg.MetadataValue.int(end - start),
                },
            ))
    return events


def end_offsets_once_led(admin: Any, topics: list[str], timeout_s: float = 30.0) -> dict[TopicPartition, int]:
    """End offsets of topics that may have just been created: their partitions get a leader a
    moment after creation, and until then the broker answers "not leader"."""
    if not topics:
        return {}
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            return admin.end_offsets(topics)
        except KafkaAdminError as error:
            if "leader" not in str(error).lower() or time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def materialize_task_partition(
    context: dg.AssetExecutionContext, app: KStreamsApp, subtopology_id: int
) -> Iterator[dg.MaterializeResult]:
    """Partition ``p`` of sub-topology ``s``: runs task ``s_p`` and yields the selected assets'
    materializations (the others, and the topic partitions it wrote, are logged as events)."""
    task = TaskId(subtopology_id, int(context.partition_key))
    kafka = getattr(context.resources, app.kafka_resource_key)
    spark = getattr(context.resources, app.spark_resource_key).spark_session
    admin = kafka.admin()
    context.log.info(f"task {task} of {app.app_id!r}: {kafka.describe_safely()}")

    prepare_topics(app, admin, [subtopology_id], context.log.info)
    runner = task_runner(app, kafka, spark)
    runner.ensure_internal_topics()

    def log_progress(progress: TaskProgress) -> None:
        context.log.info(f"task {progress.task_id} batch {progress.batch_id}: {progress.records_done} records in "
                         f"{progress.seconds:.1f}s ({progress.records_per_second:.0f}/s), lag left {progress.lag_left}")

    report = run_task_and_report(app, runner, admin, task, log_progress)
    result = report.result
    for event in report.topic_events:
        context.log_event(event)
    context.log.info(f"task {task}: {result.records_in} records in, {sum(result.records_out.values())} out, "
                     f"{result.seconds:.1f}s, lag left {result.total_lag_left}")
    # The task updates its stores whether or not they were selected (`--select <sub-topology>`
    # alone): an unselected one is reported as an event rather than as a step output.
    for event in report.task_events:
        if event.asset_key in context.selected_asset_keys:
            yield dg.MaterializeResult(asset_key=event.asset_key, metadata=event.metadata)
        else:
            context.log_event(event)
