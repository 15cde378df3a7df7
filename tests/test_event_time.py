"""Event time on the Spark runner (dagster_kstreams.spark.event_time): record timestamps read
from Kafka or from a repartition topic's header, and the task's processing order and stream
time, against a plain-Python model of Kafka Streams' PartitionGroup merge."""

from __future__ import annotations

import datetime
import random

import pytest

from dagster_kstreams.spark.event_time import (
    TIMESTAMP_HEADER,
    encode_timestamp,
    source_columns,
    with_processing_order,
)

pytestmark = pytest.mark.integration

KAFKA_SCHEMA = ("key binary, value binary, topic string, partition int, offset long, timestamp timestamp, "
                "headers array<struct<key: string, value: binary>>")


def _kafka_rows(seed: int):
    """Records of a task reading partition 0 of two topics, timestamps out of order, some null keys."""
    rng = random.Random(seed)
    rows = []
    for topic in ("left", "right"):
        for offset in range(rng.randint(0, 12)):
            millis = 1_000 + rng.randint(0, 50) * 100
            key = None if rng.random() < 0.2 else f"k{rng.randint(0, 3)}".encode()
            stamp = datetime.datetime.fromtimestamp(millis / 1000, tz=datetime.timezone.utc)
            rows.append((key, b"v", topic, 0, offset, stamp, None, millis))
    rng.shuffle(rows)  # Spark hands rows over in any order
    return rows


def _model(rows):
    """Kafka Streams' merge, simulated record by record: take the partition whose head is
    earliest, a head counting as no earlier than what its partition already delivered (ties:
    topic name); stream time is the maximum timestamp of keyed records so far."""
    queues = {}
    for row in sorted(rows, key=lambda row: (row[2], row[4])):
        queues.setdefault(row[2], []).append(row)
    partition_time = {topic: None for topic in queues}
    order, stream_time, stream = [], {}, -(2**63)
    while any(queues.values()):
        def head_time(topic):
            head = queues[topic][0][7]
            return head if partition_time[topic] is None else max(head, partition_time[topic])
        topic = min((t for t in queues if queues[t]), key=lambda t: (head_time(t), t))
        row = queues[topic].pop(0)
        partition_time[topic] = row[7] if partition_time[topic] is None else max(row[7], partition_time[topic])
        if row[0] is not None:
            stream = max(stream, row[7])
        order.append((row[2], row[4]))
        stream_time[(row[2], row[4])] = stream
    return order, stream_time


@pytest.mark.parametrize("seed", range(6))
def test_processing_order_and_stream_time_follow_kafka_streams_merge(spark, seed):
    rows = _kafka_rows(seed)
    frame = spark.createDataFrame([row[:7] for row in rows], KAFKA_SCHEMA)
    result = with_processing_order(source_columns(frame), stream_time=False).collect()
    by_seq = sorted(result, key=lambda row: row["seq"])
    order, stream_time = _model(rows)
    assert [(row["topic"], row["offset"]) for row in by_seq] == order
    assert {(row["topic"], row["offset"]): row["stream_time"] for row in result} == stream_time
    assert sorted(row["seq"] for row in result) == list(range(len(rows)))
    # The stream time before each record: the one after the record that precedes it.
    befores = [row["stream_time_before"] for row in by_seq]
    assert befores == [-(2**63)] + [row["stream_time"] for row in by_seq[:-1]]


def test_repartition_topics_take_the_timestamp_from_the_header(spark):
    written = datetime.datetime(2030, 1, 1, tzinfo=datetime.timezone.utc)  # the write time Kafka holds
    header = [(TIMESTAMP_HEADER, encode_timestamp(1_234_567))]
    frame = spark.createDataFrame([
        (b"k", b"v", "app-x-repartition", 0, 0, written, header),
        (b"k", b"v", "app-x-repartition", 0, 1, written, None),      # no header: the Kafka timestamp
        (b"k", b"v", "user-topic", 0, 0, written, header),            # not internal: header ignored
    ], KAFKA_SCHEMA)
    times = [row["event_time"] for row in source_columns(frame, ["app-x-repartition"]).collect()]
    kafka_ms = int(written.timestamp() * 1000)
    assert times == [1_234_567, kafka_ms, kafka_ms]


def test_stream_time_can_skip_records_with_a_null_value(spark):
    """Sliding windows: a record with a null value does not advance stream time (Kafka Streams'
    KStreamSlidingWindowAggregate skips it before updating its observed stream time)."""
    def at(millis):
        return datetime.datetime.fromtimestamp(millis / 1000, tz=datetime.timezone.utc)

    frame = spark.createDataFrame([
        (b"k", b"v", "in", 0, 0, at(1_000), None),
        (b"k", None, "in", 0, 1, at(5_000), None),   # null value: skipped
        (None, b"v", "in", 0, 2, at(6_000), None),   # null key: skipped
        (b"k", b"v", "in", 0, 3, at(2_000), None),
    ], KAFKA_SCHEMA)
    for skip, expected in ((False, [1_000, 5_000, 5_000, 5_000]), (True, [1_000, 1_000, 1_000, 2_000])):
        rows = with_processing_order(source_columns(frame), stream_time=True, skip_null_values=skip).collect()
        assert [row["stream_time"] for row in sorted(rows, key=lambda row: row["offset"])] == expected, skip
