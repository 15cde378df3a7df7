"""The record timestamp a task carries through a repartition topic, as a Kafka header.

Spark's Kafka sink cannot set a record's timestamp (records it writes carry the write time), so
whatever a task writes to a repartition topic carries the timestamp of the record that produced
it in the header :data:`TIMESTAMP_HEADER` (8 bytes, big-endian, signed epoch ms), and a task
reading a repartition topic takes the timestamp from that header
(:mod:`dagster_kstreams.spark.event_time`). The processors say which timestamp a record keeps
(``Output.timestamp_ms``); the Spark layer writes the header (its batch writer) and reads it.
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
