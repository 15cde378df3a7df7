"""Send a batch of records, column by column (``topic, key, value, headers, timestamp_ms``, and a
``partition`` where a stream partitioner chose), with a producer.

The exactly-once write of a task's micro-batch (:mod:`dagster_kstreams.spark.transactional_writer`)
collects the batch's output to the driver and sends it here, inside the task's transaction
(:func:`produce_columns`): read from Arrow (:meth:`RecordColumns.of_table`), or the Python lists a
pass on the driver produced, with no round trip through Arrow.
``timestamp_ms`` becomes the record's own Kafka timestamp (Kafka Streams' ``ProcessorContext``
timestamp on a repartition topic); without it the producer's clock stamps the record, as Spark's
Kafka sink does. ``headers`` (a list of ``{key, value}``) go out as given.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any, Optional

import pyarrow as pa
import pyarrow.compute as pc
from confluent_kafka import Producer

from dagster_kstreams.kafka.timestamp_header import TIMESTAMP_HEADER, encode_timestamp

__all__ = ["RecordColumns", "produce_columns", "python_list"]

_UNASSIGNED = -1  # librdkafka's RD_KAFKA_PARTITION_UA, confluent-kafka's default partition
_QUEUE_FULL_WAIT_S = 0.05  # librdkafka's queue is full: serve delivery reports this long


@dataclass(frozen=True)
class RecordColumns:
    """A batch of records as one list per field, in send order. ``timestamps``: a record's own
    Kafka timestamp, or None; ``headers``: a record's ``[{"key", "value"}, ...]``, or None;
    ``partitions``: None when the producer's partitioner places every record, else one
    partition or None per record."""

    topics: list[str]
    keys: list[Optional[bytes]]
    values: list[Optional[bytes]]
    timestamps: list[Optional[int]]
    headers: list[Optional[list[dict[str, Any]]]]
    partitions: Optional[list[Optional[int]]] = None

    @classmethod
    def of_table(cls, table: pa.Table) -> "RecordColumns":
        """The records of an Arrow table (the headers read only if some record has any)."""
        rows, names = table.num_rows, table.column_names
        carried = "headers" in names and table.column("headers").null_count < rows
        return cls(
            python_list(table.column("topic")), table.column("key").to_pylist(), table.column("value").to_pylist(),
            python_list(table.column("timestamp_ms")) if "timestamp_ms" in names else [None] * rows,
            table.column("headers").to_pylist() if carried else [None] * rows,
            python_list(table.column("partition")) if "partition" in names else None,
        )

    def __len__(self) -> int:
        return len(self.topics)

    def topic_counts(self) -> dict[str, int]:
        """``{topic: records}``."""
        return dict(Counter(self.topics))


def produce_columns(producer: Producer, records: RecordColumns) -> int:
    """Send every record in order (each partition keeps that order); returns how many.
    Partitions are the producer's (murmur2 of the key for the task's producers), or the
    ``partitions`` column's where it has one (a stream partitioner's choice)."""
    rows = len(records)
    if rows == 0:
        return 0
    topics, keys, values, timestamps = records.topics, records.keys, records.values, records.timestamps
    if records.partitions is not None:  # a stream partitioner chose (None: the producer's partitioner)
        for row in zip(topics, keys, values, timestamps, records.headers, records.partitions):
            _send(producer, *row)
        return rows
    if not any(records.headers):
        # The common case, a record costs one call: millions of them go through this loop. The
        # arguments are positional (topic, value, key, partition, callback, on_delivery, timestamp):
        # a keyword costs librdkafka's binding about a microsecond more per record (bench/README.md).
        send = producer.produce
        for topic, key, value, timestamp in zip(topics, keys, values, timestamps):
            try:
                if timestamp is not None and timestamp > 0:
                    send(topic, value, key, _UNASSIGNED, None, None, timestamp)
                else:
                    _send(producer, topic, key, value, timestamp, None)
            except BufferError:
                _send(producer, topic, key, value, timestamp, None)
        return rows
    for topic, key, value, timestamp, own in zip(topics, keys, values, timestamps, records.headers):
        _send(producer, topic, key, value, timestamp, own)
    return rows


def python_list(column: pa.Array | pa.ChunkedArray) -> list:
    """``column.to_pylist()``, cheaper where it can be: a column of one string throughout (a batch's
    one topic) is that one object repeated, and integers without nulls go through numpy. Building an
    object per row from Arrow costs several times more, per record."""
    rows = len(column)
    if rows and column.null_count == 0:
        if pa.types.is_integer(column.type):
            return column.to_numpy().tolist()
        if pa.types.is_string(column.type) and pc.count_distinct(column).as_py() == 1:
            return [column[0].as_py()] * rows
    return column.to_pylist()


def _send(producer: Producer, topic: str, key: Optional[bytes], value: Optional[bytes],
          timestamp: Optional[int], own: Optional[list[dict[str, Any]]], partition: Optional[int] = None) -> None:
    """One record, however it looks; ``partition`` None is librdkafka's "unassigned" (-1): the
    producer's partitioner places the record."""
    headers = [(header["key"], header["value"]) for header in own] if own else []
    if timestamp is not None and timestamp <= 0:
        # The producer reads a timestamp of 0 as "now": such a one travels in the header that
        # readers of a repartition topic look at first (as from Spark's sink).
        headers.append((TIMESTAMP_HEADER, encode_timestamp(timestamp)))
        timestamp = None
    while True:
        try:
            producer.produce(topic, value, key, _UNASSIGNED if partition is None else partition, None, None,
                             timestamp or 0, headers or None)
            return
        except BufferError:
            producer.poll(_QUEUE_FULL_WAIT_S)  # serve delivery reports, then send again
