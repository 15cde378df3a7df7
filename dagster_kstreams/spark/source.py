"""A task's source: Spark's Kafka source, assigned partition ``p`` of every source topic of
sub-topology ``s``, and where the task starts reading.

``trigger(availableNow=True)`` (set by the runner) processes everything up to the end offsets
seen when the run starts, in batches of at most ``maxOffsetsPerTrigger`` records, then stops.
Where a run starts: Spark's checkpoint is the source of truth; a new checkpoint starts from
the consumer group's committed offsets (the group named by the application id), else from the
earliest offset, or the latest with ``offset_reset="latest"`` (Kafka Streams'
``auto.offset.reset``). Records deleted by retention before they were processed are skipped,
as Kafka Streams' consumer does after an out-of-range reset, instead of stopping the task for good.

Rows come out as :func:`~dagster_kstreams.spark.event_time.source_columns` has them; a
sub-topology that reads several topics (it needs Kafka Streams' order across the task's
partitions), or a stateful one that needs stream time, gets them through :func:`in_processing_order`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Optional

from pyspark.sql import DataFrame, SparkSession

from dagster_kstreams.kafka.admin import KafkaAdmin, TopicPartition
from dagster_kstreams.kafka.task_lag import first_offsets
from dagster_kstreams.spark.event_time import source_columns, with_extracted_timestamps, with_processing_order
from dagster_kstreams.spark.state_keys import state_key_column_of
from dagster_kstreams.topology.application import ApplicationTopology

__all__ = ["StartingPoint", "starting_point", "kafka_source", "on_state_partitions", "in_processing_order",
           "CONSUMER_DEFAULTS"]

# Spark's Kafka reader asks the broker for the partition's first and last offsets after every
# poll (two ListOffsets round trips, ``InternalKafkaConsumer.fetch``), and a poll returns at most
# ``max.poll.records`` (500 by default): small records paid more for those round trips than for
# the records. Polls of up to a whole fetch (1 MB a partition, Kafka's default), unless the user's
# settings say otherwise (bench/README.md). Larger fetches (8 MB) ran the word count's driver out of
# its 1 GB heap.
CONSUMER_DEFAULTS = {"kafka.max.poll.records": "20000"}


@dataclass(frozen=True)
class StartingPoint:
    """``offsets_from``: the next offset to process per assigned partition. ``starting``: the
    Kafka source's ``startingOffsets`` for a new checkpoint; None when the checkpoint continues
    (then the group may lag behind it: ``offsets_from`` is to be committed before processing)."""

    offsets_from: dict[TopicPartition, int]
    starting: Optional[dict[TopicPartition, int]]

    @property
    def from_checkpoint(self) -> bool:
        return self.starting is None


def starting_point(application: ApplicationTopology, admin: KafkaAdmin, checkpointed: Mapping[tuple[str, int], int],
                   assigned: list[TopicPartition], end_offsets: Mapping[TopicPartition, int]) -> StartingPoint:
    """Where the task continues: its checkpoint's committed offsets (``checkpointed``), else
    the group's committed offsets, else ``offset_reset`` of the source topic."""
    if checkpointed:
        return StartingPoint({tp: checkpointed.get((tp.topic, tp.partition), 0) for tp in assigned}, None)
    topics = list(dict.fromkeys(tp.topic for tp in assigned))
    committed = admin.committed_offsets(application.application_id, topics)
    starting = first_offsets(application, admin, committed, {tp: end_offsets[tp] for tp in assigned})
    return StartingPoint(dict(starting), starting)


def kafka_source(session: SparkSession, kafka_options: Mapping[str, Any], assigned: list[TopicPartition],
                 starting: Optional[Mapping[TopicPartition, int]], max_records_per_batch: Optional[int],
                 timestamp_header_topics: list[str], timestamps=None, carry_headers: bool = False) -> DataFrame:
    """The task's streaming source rows. ``timestamp_header_topics`` are the repartition topics
    among the assigned ones whose records' timestamps the task uses: they travel in a header, so
    headers are read (only then, for a timestamp extractor, or with ``carry_headers``: it costs).
    ``timestamps``: the sub-topology's timestamp extractors
    (:func:`~dagster_kstreams.processors.timestamps.source_timestamps`), None for the record
    timestamps. ``carry_headers``: the rows keep their records' headers (the runner's own left
    out), which the records they produce carry, as in Kafka Streams."""
    assign: dict[str, list[int]] = {}
    for tp in assigned:
        assign.setdefault(tp.topic, []).append(tp.partition)
    options = {**CONSUMER_DEFAULTS, **kafka_options}
    reader = session.readStream.format("kafka").options(**options).option("assign", json.dumps(assign))
    if starting is not None:
        start_json: dict[str, dict[str, int]] = {}
        for tp, offset in starting.items():
            start_json.setdefault(tp.topic, {})[str(tp.partition)] = offset
        reader = reader.option("startingOffsets", json.dumps(start_json))
    reader = reader.option("failOnDataLoss", "false")  # skip what retention deleted (module docstring)
    if max_records_per_batch is not None:
        reader = reader.option("maxOffsetsPerTrigger", str(max_records_per_batch))
    if timestamp_header_topics or timestamps is not None or carry_headers:
        reader = reader.option("includeHeaders", "true")
    if timestamps is None:
        return source_columns(reader.load(), timestamp_header_topics, keep_headers=carry_headers)
    return with_extracted_timestamps(source_columns(reader.load(), timestamp_header_topics, keep_headers=True),
                                     timestamps, keep_headers=carry_headers)


def on_state_partitions(source: DataFrame, program: Any, state_partitions: int) -> DataFrame:
    """``source`` as the state of a stateful sub-topology with ``state_partitions`` partitions
    takes it: with one, the task's rows already sit in one Spark partition per source topic, and
    saying so (``coalesce(1)``) spares the shuffle Spark would otherwise put before its state: one
    stage and its disk writes less per batch (no gain measured on one query alone: bench/README.md).
    With more, Spark shuffles by key. (A checkpoint keeps its own count; for another than one, Spark still shuffles.)"""
    if program.stateful and state_partitions == 1:
        return source.coalesce(1)
    return source


def in_processing_order(source: DataFrame, program: Any) -> DataFrame:
    """``source`` in Kafka Streams' processing order across the task's partitions, with stream
    time, when the sub-topology needs them (:mod:`dagster_kstreams.spark.event_time`); with the
    key each record's state is kept by when that is not the source key's bytes, computed in the
    same pass (:mod:`dagster_kstreams.spark.state_keys`)."""
    if not program.needs_processing_order:  # one topic: one key serde, the key's bytes group the state
        return source
    return with_processing_order(source, stream_time=program.uses_stream_time,
                                 skip_null_values=program.stream_time_skips_null_values,
                                 extra_column=state_key_column_of(program))
