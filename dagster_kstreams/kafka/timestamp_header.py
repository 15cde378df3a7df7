"""The record timestamp a task writes, as a Kafka header where the writer cannot set it.

Every record a task writes keeps the timestamp Kafka Streams would give it (``Output.timestamp_ms``,
the processors' choice). Spark's Kafka sink cannot set a record's timestamp, so under at-least-once
the batch writer puts it in the header :data:`TIMESTAMP_HEADER` (8 bytes, big-endian, signed epoch
ms) and a producer interceptor makes it the record's own (``RecordTimestampInterceptor``,
:mod:`dagster_kstreams.spark.batch_writer`); the exactly-once producer sets it directly. A timestamp
the producer cannot write (0 or less for librdkafka, negative for Java's) stays in the header, and a
task reading a repartition topic takes the timestamp from that header first
(:mod:`dagster_kstreams.spark.event_time`), as it does from records older versions wrote.
"""

from __future__ import annotations

__all__ = ["INTERNAL_HEADER_PREFIX", "TIMESTAMP_HEADER", "encode_timestamp", "decode_timestamp"]

# Every header the runner writes for itself starts with this (the timestamp here, the batch
# writer's position): a task reading records drops them, so no user (processor) ever sees them.
INTERNAL_HEADER_PREFIX = "__dagster_kstreams."
TIMESTAMP_HEADER = INTERNAL_HEADER_PREFIX + "timestamp"


def encode_timestamp(timestamp_ms: int) -> bytes:
    return int(timestamp_ms).to_bytes(8, "big", signed=True)


def decode_timestamp(data: bytes) -> int:
    return int.from_bytes(data, "big", signed=True)
