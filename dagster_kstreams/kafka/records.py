"""Write and read whole topics with confluent-kafka (tests, examples, checks against Kafka Streams).

``produce`` places keyed records with Kafka's Java partitioner (librdkafka's ``murmur2_random``,
the same murmur2 as Java clients) unless a partition is given, so data produced here lands where
Kafka Streams' or Spark's producers would put it. ``read_topic`` reads every partition from the
beginning up to the end offsets seen when it starts, with no consumer group (nothing committed).
Records the broker deleted (retention, ``delete_records``) before or while they are read are
skipped, not waited for: a reader starts at the log's start offset, and is moved there again
if the log is cut under it.

``produce`` keeps one producer per broker and settings for the life of the process: an idempotent
producer waits about 500 ms for its producer id before its first send (librdkafka), which every
call paid when each made a producer of its own (a test writing 16 input topics waited 8 s).
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Optional

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition

__all__ = ["Record", "produce", "read_topic", "read_from", "final_values"]

# Where a reader goes when its offset is no longer in the log (records deleted by retention or
# delete_records): librdkafka's default is the end, where no record comes to say it got there.
_FROM_THE_LOG_START = {"auto.offset.reset": "earliest"}

# Idempotent: records keep their order and are written once even when a send is retried.
_PRODUCER_DEFAULTS = {"partitioner": "murmur2_random", "linger.ms": 5, "enable.idempotence": True}


@dataclass(frozen=True)
class Record:
    topic: str
    partition: int
    offset: int
    key: Optional[bytes]
    value: Optional[bytes]
    headers: tuple[tuple[str, bytes], ...] = ()
    timestamp: Optional[int] = None  # epoch ms


def produce(
    bootstrap_servers: str,
    topic: str,
    records: Iterable[tuple],
    config: Mapping[str, Any] | None = None,
) -> int:
    """Write ``(key, value)``, ``(key, value, partition)``, ``(key, value, partition, timestamp_ms)``
    or ``(key, value, partition, timestamp_ms, headers)`` records (a None partition: the
    partitioner places it; ``headers``: ``(name, bytes or None)`` pairs); returns how many were written."""
    settings = {**_PRODUCER_DEFAULTS, **(config or {})}
    producer = _shared_producer(bootstrap_servers, settings)
    errors: list[str] = []

    def on_delivery(error, message) -> None:
        if error is not None:
            errors.append(f"{message.topic()}: {error}")

    count = 0
    for record in records:
        key, value = record[0], record[1]
        kwargs = {}
        if len(record) > 2 and record[2] is not None:
            kwargs["partition"] = record[2]
        if len(record) > 3 and record[3] is not None:
            kwargs["timestamp"] = record[3]
        if len(record) > 4 and record[4]:
            kwargs["headers"] = list(record[4])
        while True:
            try:
                producer.produce(topic, key=key, value=value, on_delivery=on_delivery, **kwargs)
                break
            except BufferError:  # local queue full: let deliveries drain
                producer.poll(0.1)
        count += 1
    remaining = producer.flush(60)
    if remaining or errors:
        _producers.pop(_producer_key(bootstrap_servers, settings), None)  # the next call starts afresh
        raise KafkaException(f"producing to {topic!r} failed: {remaining} undelivered; {errors[:3]}")
    return count


_producers: dict[tuple, Producer] = {}
_LOG = logging.getLogger(__name__)


def _producer_key(bootstrap_servers: str, settings: Mapping[str, Any]) -> tuple:
    return os.getpid(), bootstrap_servers, tuple(sorted(settings.items()))


def _shared_producer(bootstrap_servers: str, settings: Mapping[str, Any]) -> Producer:
    """This process's producer for the broker and settings (module docstring). Keyed by process id
    too: a forked child must not send through its parent's librdkafka threads, which it has not."""
    key = _producer_key(bootstrap_servers, settings)
    if key not in _producers:
        # Its client logs go to logging, not straight to stderr: a kept producer outlives brokers
        # (a test stops its own), and says so each time it fails to reconnect to one.
        _producers[key] = Producer({"bootstrap.servers": bootstrap_servers, **settings}, logger=_LOG)
    return _producers[key]


def read_topic(
    bootstrap_servers: str,
    topic: str,
    config: Mapping[str, Any] | None = None,
    timeout_s: float = 60.0,
) -> list[Record]:
    """Every record of ``topic`` up to its current end offsets, partition by partition."""
    consumer = Consumer({
        "bootstrap.servers": bootstrap_servers,
        "group.id": "dagster-kstreams-reader",  # required by librdkafka; nothing is committed
        "enable.auto.commit": False,
        "enable.partition.eof": False,
        **_FROM_THE_LOG_START,
        **(config or {}),
    })
    try:
        metadata = consumer.list_topics(topic, timeout=10)
        if topic not in metadata.topics or metadata.topics[topic].error is not None:
            raise KafkaException(f"topic {topic!r} does not exist")
        partitions = sorted(metadata.topics[topic].partitions)
        ends, starts = {}, {}
        for partition in partitions:
            low, high = consumer.get_watermark_offsets(TopicPartition(topic, partition), timeout=10)
            if high > low:
                ends[partition], starts[partition] = high, low
        if not ends:
            return []
        consumer.assign([TopicPartition(topic, partition, starts[partition]) for partition in ends])
        records = _consume_until(consumer, {(topic, p): end for p, end in ends.items()}, timeout_s)
        records.sort(key=lambda record: (record.partition, record.offset))
        return records
    finally:
        consumer.close()


def read_from(
    bootstrap_servers: str,
    starts: Mapping[tuple[str, int], int],
    config: Mapping[str, Any] | None = None,
    timeout_s: float = 120.0,
) -> list[Record]:
    """Records of each ``(topic, partition)`` from the given offset up to its current end offset."""
    consumer = Consumer({
        "bootstrap.servers": bootstrap_servers,
        "group.id": "dagster-kstreams-reader",
        "enable.auto.commit": False,
        **_FROM_THE_LOG_START,
        **(config or {}),
    })
    try:
        ends = {}
        for (topic, partition), start in starts.items():
            _, high = consumer.get_watermark_offsets(TopicPartition(topic, partition), timeout=10)
            if high > start:
                ends[(topic, partition)] = high
        if not ends:
            return []
        consumer.assign([TopicPartition(topic, partition, starts[(topic, partition)]) for topic, partition in ends])
        records = _consume_until(consumer, ends, timeout_s)
        return records
    finally:
        consumer.close()


def _consume_until(consumer: Consumer, ends: Mapping[tuple[str, int], int], timeout_s: float) -> list[Record]:
    """The assigned partitions' records before ``ends``. A partition is done when the consumer's
    position reaches its end: on a transactional topic the last offsets are commit markers and
    aborted records, which are never delivered but do move the position. Or when the broker
    deleted every record before its end: then no record comes to move the position at all."""
    records: list[Record] = []
    done: set[tuple[str, int]] = set()
    deadline = time.monotonic() + timeout_s
    while len(done) < len(ends):
        if time.monotonic() > deadline:
            raise TimeoutError(f"reading {sorted(ends)}: {sorted(done)} reached their end offsets {dict(ends)} "
                               f"in {timeout_s}s")
        messages = consumer.consume(1000, timeout=0.2)
        for message in messages:
            if message.error() is not None:
                raise KafkaException(message.error())
            tp = (message.topic(), message.partition())
            if tp in ends and message.offset() < ends[tp]:
                records.append(Record(message.topic(), message.partition(), message.offset(), message.key(),
                                      message.value(), tuple(message.headers() or ()), message.timestamp()[1]))
        for position in consumer.position([TopicPartition(topic, partition) for topic, partition in ends]):
            if position.offset >= ends[(position.topic, position.partition)]:
                done.add((position.topic, position.partition))
        if not messages:  # idle: a partition may have been emptied under the reader
            done.update(tp for tp in ends if tp not in done and _log_start(consumer, tp) >= ends[tp])
    return records


def _log_start(consumer: Consumer, tp: tuple[str, int]) -> int:
    low, _high = consumer.get_watermark_offsets(TopicPartition(*tp), timeout=10, cached=False)
    return low


def final_values(records: Iterable[Record], key_decoder=None, value_decoder=None) -> dict:
    """The last value per key in offset order (a table read from a changelog); tombstones delete."""
    table: dict = {}
    for record in sorted(records, key=lambda r: (r.partition, r.offset)):
        key = key_decoder(record.key) if key_decoder else record.key
        if record.value is None:
            table.pop(key, None)
        else:
            table[key] = value_decoder(record.value) if value_decoder else record.value
    return table
