"""Timestamp extraction at a sub-topology's sources (Kafka Streams' ``RecordQueue`` calling the
source's ``TimestampExtractor``), engine-neutral: the engine hands over a batch of one task's source
records, column by column, and gets each record's timestamp back.

A record's key and value are deserialized with its source's serdes for the extractor, as Kafka
Streams does (a record that cannot be deserialized keeps its own timestamp: the dead-letter policy
decides its fate when the program reaches it). ``partition_time`` is the largest timestamp extracted
so far from the record's partition, -1 before the first (the engine keeps it across its batches).
A negative result means "drop the record" (:data:`DROP`).
"""

from __future__ import annotations

import logging
from typing import Any, Callable, Optional, Sequence

from dagster_kstreams.processors.errors import ProcessingError
from dagster_kstreams.topology.timestamp_extractors import ConsumerRecord

__all__ = ["SourceTimestamps", "source_timestamps"]

log = logging.getLogger(__name__)


class SourceTimestamps:
    """The extractors of a sub-topology's sources, by real topic name."""

    def __init__(self, by_topic: dict[str, tuple[Callable, Any, Any]]):
        self.by_topic = by_topic  # topic -> (extract(record, partition_time), key serde, value serde)

    def extract(self, topics: Sequence[str], partitions: Sequence[int], offsets: Sequence[int],
                keys: Sequence[Optional[bytes]], values: Sequence[Optional[bytes]], timestamps: Sequence[int],
                headers: Sequence[Any], partition_times: dict[tuple[str, int], int]) -> list[int]:
        """Each record's timestamp (records in offset order per partition); updates ``partition_times``."""
        result = []
        for topic, partition, offset, key, value, timestamp, header in zip(
                topics, partitions, offsets, keys, values, timestamps, headers):
            found = self.by_topic.get(topic)
            if found is None:
                result.append(timestamp)
                continue
            extract, key_serde, value_serde = found
            try:
                record_key = key_serde.deserialize(None if key is None else bytes(key))
                record_value = value_serde.deserialize(None if value is None else bytes(value))
            except Exception:  # noqa: BLE001 - the program's dead-letter policy judges this record
                result.append(timestamp)
                continue
            known = partition_times.get((topic, partition), -1)
            record = ConsumerRecord(topic, partition, offset, record_key, record_value, timestamp,
                                    tuple((h["key"], h["value"]) for h in header or ()))
            try:
                extracted = int(extract(record, known))
            except Exception as cause:  # noqa: BLE001 - one line naming the record
                raise ProcessingError(
                    f"the timestamp extractor of topic {topic!r} failed on the record at partition {partition} "
                    f"offset {offset}: {type(cause).__name__}: {cause}") from cause
            if extracted < 0:
                log.warning("skipping the record at topic %r partition %d offset %d: negative extracted "
                            "timestamp %d", topic, partition, offset, extracted)
            else:
                partition_times[(topic, partition)] = max(known, extracted)
            result.append(extracted)
        return result


def source_timestamps(program) -> Optional[SourceTimestamps]:
    """The extractors of ``program``'s sources (None: every source uses the record timestamps)."""
    by_topic = {}
    for node in program.nodes:
        if node.kind == "source" and getattr(node, "timestamp_extractor", None) is not None:
            for topic in node.topics:
                by_topic[topic] = (node.timestamp_extractor, node.key_serde, node.value_serde)
    return SourceTimestamps(by_topic) if by_topic else None
