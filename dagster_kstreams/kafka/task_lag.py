"""Where each task of an application stands in its input: end offset, committed offset, lag.

Task ``s_p`` reads partition ``p`` of every source topic of sub-topology ``s``
(:meth:`ApplicationTopology.assigned_partitions`). Its position in a partition is the offset
committed to the consumer group ``application.id``; where the group committed nothing, it is
where the task would start, as the Spark source starts it: the log start (``auto.offset.reset``
earliest, Kafka Streams' default) or, for a source declared ``latest``, the end. Lag is end minus
position, never negative. A topic that does not exist yet (a repartition topic before the first
run) holds nothing: its partitions are left out.

The lag sensor and ``dagster-kstreams lag`` both ask :func:`task_positions`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Optional

from dagster_kstreams.kafka.admin import KafkaAdmin, TopicPartition
from dagster_kstreams.topology.application import ApplicationTopology
from dagster_kstreams.topology.task_id import TaskId

__all__ = ["PartitionPosition", "TaskPosition", "first_offsets", "task_positions", "with_broker_partitions"]


@dataclass(frozen=True)
class PartitionPosition:
    """One input partition of a task."""

    topic: str
    partition: int
    end: int
    committed: Optional[int]  # None: the group committed nothing for this partition
    position: int             # the committed offset, else where the task would start

    @property
    def lag(self) -> int:
        return max(0, self.end - self.position)


@dataclass(frozen=True)
class TaskPosition:
    """A task and its input partitions (those that exist), with their sums."""

    task: TaskId
    partitions: tuple[PartitionPosition, ...]

    @property
    def end(self) -> int:
        return sum(partition.end for partition in self.partitions)

    @property
    def position(self) -> int:
        return sum(partition.position for partition in self.partitions)

    @property
    def lag(self) -> int:
        return sum(partition.lag for partition in self.partitions)


def with_broker_partitions(application: ApplicationTopology, admin: KafkaAdmin) -> ApplicationTopology:
    """``application`` with its external source topics' (and global tables' topics') partition counts
    as the broker has them (a missing one is a :class:`~dagster_kstreams.kafka.admin.KafkaAdminError` naming it).

    A pattern source keeps the topics it was resolved to (the definitions' declared topics); one not
    resolved yet (a command line given only the topology) matches the topics the broker has now."""
    topics = [*application.external_source_topics, *application.global_topics, *application.subscribed_topics]
    if application.patterns_pending:
        topics += application.pattern_matches(admin.list_topics())
    return application.with_source_partitions(admin.partition_counts(list(dict.fromkeys(topics))))


def first_offsets(application: ApplicationTopology, admin: KafkaAdmin, committed: Mapping[TopicPartition, int],
                  end: Mapping[TopicPartition, int]) -> dict[TopicPartition, int]:
    """Where a task with no checkpoint starts reading each partition of ``end``: the group's
    ``committed`` offset, else the end with ``offset_reset="latest"``, else the beginning (Kafka
    Streams' ``auto.offset.reset``)."""
    from_start = sorted({tp.topic for tp in end if tp not in committed and application.offset_reset(tp.topic) != "latest"})
    beginning = admin.beginning_offsets(from_start) if from_start else {}
    return {tp: committed[tp] if tp in committed else beginning.get(tp, offset) for tp, offset in end.items()}


def task_positions(application: ApplicationTopology, admin: KafkaAdmin) -> list[TaskPosition]:
    """Every task of ``application`` (whose source partition counts are known), by sub-topology
    and partition, with its input partitions' end and committed offsets and lag."""
    existing = admin.list_topics()
    assigned = {task: [TopicPartition(topic, partition) for topic, partition in application.assigned_partitions(task)
                       if topic in existing]
                for task in sorted(application.tasks(), key=lambda task: (task.subtopology, task.partition))}
    topics = sorted({tp.topic for partitions in assigned.values() for tp in partitions})
    end = admin.end_offsets(topics) if topics else {}
    committed = admin.committed_offsets(application.application_id, topics) if topics else {}
    starts = first_offsets(application, admin, committed, end)

    def position(tp: TopicPartition) -> PartitionPosition:
        return PartitionPosition(tp.topic, tp.partition, end[tp], committed.get(tp), starts[tp])

    return [TaskPosition(task, tuple(position(tp) for tp in partitions if tp in end))
            for task, partitions in assigned.items()]
