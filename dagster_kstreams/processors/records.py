"""What flows through a program: a source record's context, and the sink records it produces."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

__all__ = ["RecordContext", "Output", "DROPPED_LATE_TOPIC"]

# A pseudo-topic: one row per record dropped because its window had closed (key: the raw source
# key, or None). The runner counts these rows (TaskResult.records_dropped_late) and writes none of them.
DROPPED_LATE_TOPIC = "__dagster_kstreams.dropped-late"


@dataclass
class RecordContext:
    """Where the record being processed came from (Kafka Streams' ``RecordContext``)."""

    topic: str
    partition: int
    offset: int
    # the record's timestamp (epoch ms) and the task's stream time after it (None: not read)
    timestamp: Optional[int] = None
    stream_time: Optional[int] = None
    stream_time_before: Optional[int] = None  # the task's stream time before this record
    # the source record's key bytes (task-grouped programs route records to their key's state by it)
    raw_key: Optional[bytes] = None

    def describe(self) -> str:
        return f"topic {self.topic!r} partition {self.partition} offset {self.offset}"


class Output:
    """Sink records of one pass, column by column (the shape Arrow and pandas want).

    ``timestamp_ms`` is the timestamp a record keeps on a repartition topic (None elsewhere); the
    engine writes it (Spark: as a header, :mod:`dagster_kstreams.kafka.timestamp_header`), so that
    the per-record work here stays a few list appends."""

    def __init__(self) -> None:
        self.topic: list[str] = []
        self.key: list[Optional[bytes]] = []
        self.value: list[Optional[bytes]] = []
        self.headers: list[Optional[list[dict]]] = []
        self.timestamp_ms: list[Optional[int]] = []

    def append(self, topic: str, key: Optional[bytes], value: Optional[bytes], headers=None,
               timestamp_ms: Optional[int] = None) -> None:
        self.topic.append(topic)
        self.key.append(key)
        self.value.append(value)
        self.headers.append(
            None if headers is None else [{"key": name, "value": data} for name, data in headers]
        )
        self.timestamp_ms.append(timestamp_ms)

    def __len__(self) -> int:
        return len(self.topic)
