"""The partition count of a topic known only when a record goes to it: a sink whose topic a
function picks, with a stream partitioner (Kafka Streams' ``RecordCollectorImpl.send`` asks its
producer, ``partitionsFor(topic)``, at send time).

:func:`partition_count` asks the broker through one admin client per process and client settings,
kept across the micro-batches a reused Python worker runs (creating one costs a connection). The
answer itself is not cached here: the caller keeps it for as long as Kafka Streams' producer would
(:class:`~dagster_kstreams.processors.partitioners.PickedTopicCounts`: one task batch).
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

from dagster_kstreams.kafka.admin import KafkaAdmin, KafkaAdminError

__all__ = ["partition_count"]

_ADMINS: dict[tuple, KafkaAdmin] = {}
_LOCK = threading.Lock()
# A running task waits out a broker restart this long (Kafka Streams retries a producer's timeout
# until task.timeout.ms, 5 minutes by default); an unknown topic is an answer, not a wait.
_OUTAGE_S = 60.0


def partition_count(kafka_config: Mapping[str, Any], topic: str) -> int:
    """The partition count of ``topic`` as the broker has it now. A topic that does not exist, or a
    broker that does not answer, is a :class:`~dagster_kstreams.kafka.admin.KafkaAdminError` (one
    line naming the topic and the bootstrap servers); nothing is created."""
    bootstrap = kafka_config.get("bootstrap.servers")
    if not bootstrap:
        raise KafkaAdminError(f"the partition count of topic {topic!r} needs the Kafka settings "
                              "(bootstrap.servers) to be read")
    key = tuple(sorted((str(k), str(v)) for k, v in kafka_config.items()))
    with _LOCK:
        admin = _ADMINS.get(key)
        if admin is None:
            config = {k: v for k, v in kafka_config.items() if k != "bootstrap.servers"}
            admin = _ADMINS[key] = KafkaAdmin(str(bootstrap), config, outage_s=_OUTAGE_S)
    return admin.partition_count(topic)
