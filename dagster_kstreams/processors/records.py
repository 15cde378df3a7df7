"""What flows through a program: a source record's context, and the sink records it produces."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from dagster_kstreams.topology import topic_name_extractor
from dagster_kstreams.topology.headers import Headers

__all__ = ["RecordContext", "Output", "DROPPED_LATE_TOPIC", "FLUSH_ORDER", "extractor_context", "header_column"]

# A pseudo-topic: one row per record dropped because its window had closed (key: the raw source
# key, or None). The runner counts these rows (TaskResult.records_dropped_late) and writes none of them.
DROPPED_LATE_TOPIC = "__dagster_kstreams.dropped-late"
# Where a cached store's flush goes in a batch's emit order: after every record's direct output
# (Kafka Streams flushes its record cache at the commit), store after store in topological order
# (a store's rank times 2**48, plus the position of the store's own last update of the key: the
# cache's last-update order).
FLUSH_ORDER = 1 << 62


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
    # the key bytes the record's state is kept by (task-grouped programs route records to their key's
    # state by it): the source record's, or the store's when the sources read keys differently
    # (SubtopologyProgram.state_key_serde)
    raw_key: Optional[bytes] = None
    # the record's position in the task's processing order (``seq``, or the offset of a single
    # source partition); what the output it produces is ordered by (None: not tracked)
    position: Optional[int] = None
    # the record's headers as the engine's ``headers`` column holds them (``[{"key", "value"}, ...]``,
    # Kafka's order, duplicate names kept, None values allowed), or None: it has none. Kafka Streams
    # forwards them with whatever the record produces; a sink writes them as they are.
    headers: Optional[list] = None
    # a record a punctuator forwarded: Kafka Streams' context then has no topic, partition -1 and
    # offset -1 (StreamTask.punctuate); the fields above stay the last record's, which error messages
    # go by, and only what a topic-name extractor sees follows it (the output order goes by position)
    from_punctuator: bool = False

    def describe(self) -> str:
        return f"topic {self.topic!r} partition {self.partition} offset {self.offset}"


class Output:
    """Sink records of one pass, column by column (the shape Arrow and pandas want).

    ``headers`` are in the column's form (``[{"key": name, "value": bytes or None}, ...]`` or None,
    as :attr:`RecordContext.headers` holds them), so a record's headers pass through untouched.
    ``placed``: the partitions sinks chose themselves (:meth:`append_to`, a stream partitioner).
    ``timestamp_ms`` is the timestamp the record is written with (None: the time of the write); the
    engine writes it (:mod:`dagster_kstreams.kafka.timestamp_header`), so that the per-record work here
    stays a few list appends.

    With ``ordered``, the output also records each sink record's emit order
    (:meth:`emit_order`): the processing position of the source record that produced it, set by
    :meth:`mark` as the program goes (runs of records share one mark, so appends stay as cheap)."""

    def __init__(self, ordered: bool = False) -> None:
        self.topic: list[str] = []
        self.key: list[Optional[bytes]] = []
        self.value: list[Optional[bytes]] = []
        self.headers: list[Optional[list[dict]]] = []
        self.timestamp_ms: list[Optional[int]] = []
        # index -> partition of the records a sink placed itself (a stream partitioner); the
        # others go where Kafka's default partitioner puts them (partition_column)
        self.placed: dict[int, int] = {}
        # (index of the first record, emit order) of each run of records with one emit order
        self.marks: Optional[list[tuple[int, Optional[int]]]] = [] if ordered else None

    def mark(self, order: Optional[int]) -> None:
        """The records appended from now on were produced at emit order ``order``."""
        if self.marks is not None:
            self.marks.append((len(self.topic), order))

    def emit_order(self) -> list[Optional[int]]:
        """Each record's emit order (all None when the output is not ordered)."""
        orders: list[Optional[int]] = [None] * len(self.topic)
        for (start, order), (end, _) in zip(self.marks or (), [*(self.marks or ())[1:], (len(self.topic), None)]):
            orders[start:end] = [order] * (end - start)
        return orders

    def append(self, topic: str, key: Optional[bytes], value: Optional[bytes], headers: Optional[list] = None,
               timestamp_ms: Optional[int] = None) -> None:
        self.topic.append(topic)
        self.key.append(key)
        self.value.append(value)
        self.headers.append(headers)
        self.timestamp_ms.append(timestamp_ms)

    def append_to(self, partition: int, topic: str, key: Optional[bytes], value: Optional[bytes],
                  headers: Optional[list] = None, timestamp_ms: Optional[int] = None) -> None:
        """:meth:`append` a record to a chosen partition of its topic."""
        self.placed[len(self.topic)] = partition
        self.append(topic, key, value, headers, timestamp_ms)

    def partition_column(self) -> list[Optional[int]]:
        """Each record's partition (None: Kafka's default partitioner places it)."""
        column: list[Optional[int]] = [None] * len(self.topic)
        for index, partition in self.placed.items():
            column[index] = partition
        return column

    def __len__(self) -> int:
        return len(self.topic)


def header_column(pairs) -> Optional[list]:
    """``(name, value)`` pairs in the ``headers`` column's form (None: no headers)."""
    column = [{"key": name, "value": data} for name, data in pairs or ()]
    return column or None


def extractor_context(context: RecordContext) -> topic_name_extractor.RecordContext:
    """What a topic-name extractor is given for the record a sink writes at ``context`` (Kafka
    Streams' ``SinkNode``: the input record's topic, partition and offset, none from a punctuator;
    the written record's timestamp and headers)."""
    headers = Headers.from_column(context.headers)
    if context.from_punctuator:
        return topic_name_extractor.RecordContext(None, -1, -1, context.timestamp, headers)
    return topic_name_extractor.RecordContext(context.topic, context.partition, context.offset, context.timestamp,
                                              headers)
