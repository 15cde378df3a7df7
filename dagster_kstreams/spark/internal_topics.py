"""A task's internal topics: created, and their consumed records deleted, as Kafka Streams does.

:func:`create_internal_topics` creates the repartition topics and the dead-letter topic that do
not exist yet. Kafka Streams creates its repartition topics with infinite retention
(``retention.ms=-1``, :data:`REPARTITION_TOPIC_CONFIG`, its ``RepartitionTopicConfig``): a record is never lost to the
broker's retention before the downstream task reads it, however old its timestamp (a replay of
last month's input keeps last month's timestamps). What bounds the topic instead is the purge:
every ``repartition.purge.interval.ms`` (30 s) a task deletes the records below the offsets it
committed (``deleteRecords``). The runner does the same, one batch behind: a batch whose
transaction committed may still be read again (the run died before Spark's checkpoint committed
it, and the replay recomputes its state), so only what the batches before it read is deleted.
A purge that fails is said and tried again at the next interval; it never fails the task.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Optional

from dagster_kstreams.kafka.admin import KafkaAdmin, KafkaAdminError, TopicPartition
from dagster_kstreams.topology.application import ApplicationTopology

__all__ = ["PURGE_INTERVAL_S", "REPARTITION_TOPIC_CONFIG", "RepartitionPurge", "create_internal_topics"]

log = logging.getLogger(__name__)

# Kafka Streams' RepartitionTopicConfig: deleted by the purge, never by time; 50 MB segments, so
# that the purge can free a segment soon (the log start moves at once, the files go by segment).
REPARTITION_TOPIC_CONFIG = {"cleanup.policy": "delete", "segment.bytes": "52428800", "retention.ms": "-1"}
# Kafka Streams' repartition.purge.interval.ms.
PURGE_INTERVAL_S = 30.0


def create_internal_topics(admin: KafkaAdmin, application: ApplicationTopology,
                           dead_letter_topic: Optional[str]) -> tuple[dict[str, int], Optional[int]]:
    """Create the repartition topics of ``application`` (partition counts as Kafka Streams sets
    them) and the dead-letter topic that do not exist yet. Returns
    ``({topic: partitions}, the largest record the input topics take)``: the topics the tasks write
    take it too."""
    counts = application.partition_counts
    repartition = {topic: counts[topic] for topic in application.repartition_topics}
    dead_letter = {dead_letter_topic: 1} if dead_letter_topic and dead_letter_topic not in admin.list_topics() else {}
    limits = admin.topic_config(application.external_source_topics, "max.message.bytes")
    largest = max((int(limit) for limit in limits.values()), default=None)
    config = {} if largest is None else {"max.message.bytes": str(largest)}
    admin.create_topics(repartition, topic_config={**REPARTITION_TOPIC_CONFIG, **config})
    admin.create_topics(dead_letter, topic_config=config)
    return {**repartition, **dead_letter}, largest


class RepartitionPurge:
    """Deletes one task's consumed records of its repartition ``partitions``, at most every ``interval_s``."""

    def __init__(self, task: str, admin: KafkaAdmin, partitions: Iterable[TopicPartition],
                 interval_s: float, clock: Callable[[], float] = time.monotonic):
        self.task, self.admin, self.partitions = task, admin, frozenset(partitions)
        self.interval_s = interval_s  # the runner's repartition_purge_interval_s (PURGE_INTERVAL_S by default)
        self._clock = clock
        self._last = clock()

    def after_commit(self, batch_started_at: Mapping[TopicPartition, int]) -> None:
        """A batch that began at ``batch_started_at`` committed: what came before it may go."""
        if not self.partitions or self._clock() - self._last < self.interval_s:
            return
        self._last = self._clock()
        offsets = {tp: offset for tp, offset in batch_started_at.items() if tp in self.partitions and offset > 0}
        try:
            self.admin.delete_records_before(offsets)
        except KafkaAdminError as error:
            log.warning("task %s: purging its consumed repartition records failed (tried again in %.0f s): %s",
                        self.task, self.interval_s, error)
