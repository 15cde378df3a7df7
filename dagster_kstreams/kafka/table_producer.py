"""Send a table of records (``topic, key, value, headers, timestamp_ms``, as Arrow) with a producer.

The exactly-once write of a task's micro-batch (:mod:`dagster_kstreams.spark.transactional_writer`)
collects the batch's output to the driver and sends it here, inside the task's transaction.
``timestamp_ms`` becomes the record's own Kafka timestamp (Kafka Streams' ``ProcessorContext``
timestamp on a repartition topic); without it the producer's clock stamps the record, as Spark's
Kafka sink does. ``headers`` (a list of ``{key, value}``) go out as given.
"""

from __future__ import annotations

from itertools import repeat
from typing import Any, Optional

import pyarrow as pa
from confluent_kafka import Producer

from dagster_kstreams.kafka.timestamp_header import TIMESTAMP_HEADER, encode_timestamp

__all__ = ["produce_table"]

_UNASSIGNED = -1  # librdkafka's RD_KAFKA_PARTITION_UA, confluent-kafka's default partition
_QUEUE_FULL_WAIT_S = 0.05  # librdkafka's queue is full: serve delivery reports this long


def produce_table(producer: Producer, table: pa.Table) -> int:
    """Send every row of ``table`` in row order (each partition keeps that order); returns how
    many. Partitions are the producer's (murmur2 of the key for the task's producers), or the
    ``partition`` column's where it has one (a stream partitioner's choice)."""
    rows = table.num_rows
    if rows == 0:
        return 0
    topics = table.column("topic").to_pylist()
    keys = table.column("key").to_pylist()
    values = table.column("value").to_pylist()
    names = table.column_names
    timestamps = _column(table, "timestamp_ms")
    if "partition" in names:  # a stream partitioner chose (null: the producer's partitioner)
        for row in zip(topics, keys, values, timestamps, _column(table, "headers"), table.column("partition").to_pylist()):
            _send(producer, *row)
        return rows
    # Most batches carry no headers at all: their column is all null, read without a Python list.
    carried = "headers" in names and table.column("headers").null_count < rows
    headers = table.column("headers").to_pylist() if carried else None
    if headers is None or not any(headers):
        # The common case, a record costs one call: millions of them go through this loop.
        send = producer.produce
        for topic, key, value, timestamp in zip(topics, keys, values, timestamps):
            try:
                if timestamp is not None and timestamp > 0:
                    send(topic, value, key, timestamp=timestamp)
                else:
                    _send(producer, topic, key, value, timestamp, None)
            except BufferError:
                _send(producer, topic, key, value, timestamp, None)
        return rows
    for topic, key, value, timestamp, own in zip(topics, keys, values, timestamps, headers):
        _send(producer, topic, key, value, timestamp, own)
    return rows


def _column(table: pa.Table, name: str):
    return table.column(name).to_pylist() if name in table.column_names else repeat(None)


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
            producer.produce(topic, value, key, partition=_UNASSIGNED if partition is None else partition,
                             timestamp=timestamp or 0, headers=headers or None)
            return
        except BufferError:
            producer.poll(_QUEUE_FULL_WAIT_S)  # serve delivery reports, then send again
