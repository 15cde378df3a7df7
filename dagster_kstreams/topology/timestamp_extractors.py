"""Timestamp extractors (Kafka Streams' ``TimestampExtractor`` and its built-ins), given to a source
with ``Consumed.with_timestamp_extractor(extractor)``.

An extractor is an object with ``extract(record, partition_time) -> int`` (epoch ms), or a callable
``(record, partition_time) -> int``. ``record`` is a :class:`ConsumerRecord` whose key and value are
already deserialized with the source's serdes; ``partition_time`` is the largest timestamp extracted
so far from the record's partition, or -1 when none is known. The extracted timestamp is the
record's timestamp from then on: it drives windows, joins and stream time, and repartition topics
carry it. A record whose extracted timestamp is negative is dropped (Kafka Streams' ``RecordQueue``
drops it, with a warning, before any processor sees it).
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Optional

__all__ = [
    "ConsumerRecord", "FailOnInvalidTimestamp", "LogAndSkipOnInvalidTimestamp", "StreamsTimestampError",
    "UsePartitionTimeOnInvalidTimestamp", "WallclockTimestampExtractor", "extract_function",
]


class StreamsTimestampError(RuntimeError):
    """An extractor refused a record's timestamp (``FailOnInvalidTimestamp``)."""


@dataclass(frozen=True)
class ConsumerRecord:
    """What an extractor sees (the fields of Kafka's ``ConsumerRecord`` it may read)."""

    topic: str
    partition: int
    offset: int
    key: Any
    value: Any
    timestamp: int  # the Kafka record's own timestamp (epoch ms)
    headers: tuple = ()  # ((name, bytes), ...)


class _RecordTimestamp:
    """The Kafka record's own timestamp; a negative one goes to :meth:`on_invalid`."""

    def extract(self, record: ConsumerRecord, partition_time: int) -> int:
        if record.timestamp is not None and record.timestamp >= 0:
            return record.timestamp
        return self.on_invalid(record, -1 if record.timestamp is None else record.timestamp, partition_time)

    def on_invalid(self, record: ConsumerRecord, timestamp: int, partition_time: int) -> int:
        raise NotImplementedError


class FailOnInvalidTimestamp(_RecordTimestamp):
    """Kafka Streams' default: the record's timestamp; a negative one fails the task."""

    def on_invalid(self, record, timestamp, partition_time):
        raise StreamsTimestampError(
            f"record at topic {record.topic!r} partition {record.partition} offset {record.offset} has an invalid "
            f"(negative) timestamp {timestamp}; use another extractor (e.g. LogAndSkipOnInvalidTimestamp) to skip it")


class LogAndSkipOnInvalidTimestamp(_RecordTimestamp):
    """The record's timestamp; a record with a negative one is dropped."""

    def on_invalid(self, record, timestamp, partition_time):
        return timestamp


class UsePartitionTimeOnInvalidTimestamp(_RecordTimestamp):
    """The record's timestamp; a negative one is replaced by the partition time (fails if unknown)."""

    def on_invalid(self, record, timestamp, partition_time):
        if partition_time < 0:
            raise StreamsTimestampError(
                f"record at topic {record.topic!r} partition {record.partition} offset {record.offset} has an "
                f"invalid (negative) timestamp {timestamp} and its partition time is unknown")
        return partition_time


class WallclockTimestampExtractor:
    """The time the record is read (``System.currentTimeMillis()``), whatever its own timestamp."""

    def extract(self, record: ConsumerRecord, partition_time: int) -> int:
        return int(time.time() * 1000)


def extract_function(extractor: Any):
    """``extractor`` as a callable ``(record, partition_time) -> int`` (None: None)."""
    if extractor is None:
        return None
    extract: Optional[Any] = getattr(extractor, "extract", None)
    if callable(extract):
        return extract
    if callable(extractor):
        return extractor
    raise TypeError(f"a timestamp extractor must have extract(record, partition_time) or be a callable, "
                    f"got {type(extractor).__name__}")
