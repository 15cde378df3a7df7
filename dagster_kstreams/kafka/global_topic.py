"""A global table's topic, replicated whole into one process: what every task joining a
``GlobalKTable`` reads (Kafka Streams' global store, filled by its global stream thread).

:func:`replica` returns the process's copy of a topic (one per bootstrap servers, topic and client
settings), kept across the micro-batches a reused Python worker runs; :meth:`GlobalTopicReplica.catch_up`
reads every partition, one after another, from where the copy stands up to the end offsets of now, so a batch processed
after it sees every record written to the topic before the batch began. Keys and values stay
serialized (the store holds bytes, as Kafka Streams' does); a record with a null key is skipped, as
Kafka Streams' global ``KTableSource`` skips it; a null value deletes the key.

Cost: the copy holds one entry per live key of the topic (its compacted size) in every Python worker
process that ran a task joining it; the first batch of such a process reads the whole topic, every
later batch only what was appended since.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping
from typing import Any, Optional

from confluent_kafka import Consumer, KafkaException, TopicPartition

from dagster_kstreams.kafka.topic_partitions import settings_key, task_admin

__all__ = ["GlobalTopicReplica", "replica"]

_REPLICAS: dict[tuple, "GlobalTopicReplica"] = {}
_LOCK = threading.Lock()


class GlobalTopicReplica:
    """The latest value of every key of one topic, as of the last :meth:`catch_up`."""

    def __init__(self, kafka_config: Mapping[str, Any], topic: str, timeout_s: float = 120.0):
        self.topic = topic
        self.timeout_s = timeout_s
        self.values: dict[bytes, bytes] = {}
        self.records_read = 0
        config = {str(k): str(v) for k, v in kafka_config.items()}
        self._admin = task_admin(config, f"the global table's topic {topic!r}")  # the process's, shared
        self._consumer = Consumer({
            "group.id": "dagster-kstreams-global",  # librdkafka needs one; nothing is committed
            **config,
            "enable.auto.commit": False,
            "isolation.level": "read_committed",
            "auto.offset.reset": "earliest",
        })
        metadata = self._consumer.list_topics(topic, timeout=30)
        if topic not in metadata.topics or metadata.topics[topic].error is not None:
            raise KafkaException(f"the global table's topic {topic!r} does not exist")
        self.partitions = sorted(metadata.topics[topic].partitions)
        self._positions = {partition: 0 for partition in self.partitions}

    def catch_up(self) -> int:
        """Read every partition up to its end offset of now (the last stable offset: records of
        transactions still open are not read); returns how many records were read.

        One partition after another, in partition order, as Kafka Streams restores a global store
        (``GlobalStateManagerImpl.restoreState``): where one key was written to several partitions,
        the copy ends with the value of the highest such partition, not with whichever fetch
        happened to arrive last."""
        ends = {tp.partition: end for tp, end in self._admin.end_offsets(self.topic, "read_committed").items()
                if tp.partition in self._positions and end > self._positions[tp.partition]}
        deadline = time.monotonic() + self.timeout_s
        read = sum(self._read_partition(partition, ends[partition], deadline) for partition in sorted(ends))
        self.records_read += read
        return read

    def _read_partition(self, partition: int, end: int, deadline: float) -> int:
        self._consumer.assign([TopicPartition(self.topic, partition, self._positions[partition])])
        read = 0
        while self._positions[partition] < end:
            if time.monotonic() > deadline:
                raise TimeoutError(f"the global table's topic {self.topic!r}: partition {partition} did not reach "
                                   f"its end offset {end} within {self.timeout_s:.0f}s (at {self._positions[partition]})")
            for message in self._consumer.consume(1000, timeout=0.2):
                if message.error() is not None:
                    raise KafkaException(message.error())
                self._positions[partition] = message.offset() + 1
                read += 1
                self._apply(message.key(), message.value())
            # Commit markers are never delivered but move the position: it decides when the partition is done.
            position = self._consumer.position([TopicPartition(self.topic, partition)])[0].offset
            if position >= 0:
                self._positions[partition] = max(self._positions[partition], position)
        return read

    def _apply(self, key: Optional[bytes], value: Optional[bytes]) -> None:
        if key is None:
            return  # Kafka Streams' KTableSource skips (and counts) a null key
        if value is None:
            self.values.pop(key, None)
        else:
            self.values[key] = value

    def get(self, key: bytes) -> Optional[bytes]:
        return self.values.get(key)

    def close(self) -> None:
        self._consumer.close()


def replica(kafka_config: Mapping[str, Any], topic: str) -> GlobalTopicReplica:
    """This process's replica of ``topic`` (created, and read whole, on first use)."""
    key = (topic, settings_key(kafka_config))
    with _LOCK:
        found = _REPLICAS.get(key)
        if found is None:
            found = _REPLICAS[key] = GlobalTopicReplica(kafka_config, topic)
        return found
