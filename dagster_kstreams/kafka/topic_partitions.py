"""What a running task asks the broker itself, through this process's admin client.

:func:`task_admin` is the one admin client per process and client settings, kept across the
micro-batches a reused Python worker runs (creating one costs a connection); its calls wait out a
broker restart. Everything a task looks up through an admin client asks it: here the partition
count of a topic known only when a record goes to it (:func:`partition_count`: a sink whose topic a
function picks, with a stream partitioner; Kafka Streams' ``RecordCollectorImpl.send`` asks its
producer, ``partitionsFor(topic)``, at send time), and a global table's end offsets
(:mod:`.global_topic`). Answers are not cached here: the caller keeps one for as long as Kafka
Streams would (:class:`~dagster_kstreams.processors.partitioners.PickedTopicCounts`: one task batch).
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

from dagster_kstreams.kafka.admin import KafkaAdmin, KafkaAdminError

__all__ = ["partition_count", "settings_key", "task_admin"]

_ADMINS: dict[tuple, KafkaAdmin] = {}
_LOCK = threading.Lock()
# A running task waits out a broker restart this long (Kafka Streams retries a producer's timeout
# until task.timeout.ms, 5 minutes by default); an unknown topic is an answer, not a wait.
_OUTAGE_S = 60.0


def settings_key(kafka_config: Mapping[str, Any]) -> tuple:
    """Client settings as a key of a per-process cache (equal settings, one entry)."""
    return tuple(sorted((str(k), str(v)) for k, v in kafka_config.items()))


def task_admin(kafka_config: Mapping[str, Any], needed_for: str) -> KafkaAdmin:
    """This process's admin client for ``kafka_config`` (created on first use). Settings with no
    ``bootstrap.servers`` are a :class:`~dagster_kstreams.kafka.admin.KafkaAdminError` naming what
    they were ``needed_for``."""
    bootstrap = kafka_config.get("bootstrap.servers")
    if not bootstrap:
        raise KafkaAdminError(f"{needed_for} needs the Kafka settings (bootstrap.servers) to be read")
    key = settings_key(kafka_config)
    with _LOCK:
        admin = _ADMINS.get(key)
        if admin is None:
            config = {k: v for k, v in kafka_config.items() if k != "bootstrap.servers"}
            admin = _ADMINS[key] = KafkaAdmin(str(bootstrap), config, outage_s=_OUTAGE_S)
        return admin


def partition_count(kafka_config: Mapping[str, Any], topic: str) -> int:
    """The partition count of ``topic`` as the broker has it now. A topic that does not exist, or a
    broker that does not answer, is a :class:`~dagster_kstreams.kafka.admin.KafkaAdminError` (one
    line naming the topic and the bootstrap servers); nothing is created."""
    return task_admin(kafka_config, f"the partition count of topic {topic!r}").partition_count(topic)
