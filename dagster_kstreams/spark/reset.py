"""Kafka Streams' application reset tool for one application: a plan, then its steps.

As ``kafka-streams-application-reset``: the input topics' committed offsets go back to their
earliest offsets (or to the first record at or after a time), and the internal topics are
deleted: the topology's repartition topics and any other topic Kafka Streams would take for the
application's own (``<application.id>-...-repartition`` or ``-changelog``; an input or output
topic that happens to look like one is left alone). Then what Kafka Streams leaves to
``KafkaStreams.cleanUp()`` on every instance: the tasks' state (their Spark checkpoints and
write intents under the state location) is deleted. The application afterwards processes its
input again from there, as a new one would.

Before changing anything, the reset takes every task's transactional id
(:mod:`~dagster_kstreams.kafka.fencing`): a process still running a task is fenced, so it can
neither write output nor commit offsets over the reset ones. Checking that no worker runs is the
caller's job; the fence is the backstop for one it cannot see (a ``dagster-kstreams run`` by
hand), which may still write Spark files under the state location until it stops.

Steps, in order: fence, commit offsets, delete internal topics, delete task state. Each can be
repeated: a reset that stopped half-way is finished by running it again.
"""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Optional

from dagster_kstreams.kafka.admin import KafkaAdmin, KafkaAdminError, TopicPartition
from dagster_kstreams.kafka.fencing import TaskFence, task_transactional_id
from dagster_kstreams.spark.state_location import TaskStateLocation
from dagster_kstreams.topology.application import ApplicationTopology
from dagster_kstreams.topology.task_id import TaskId

__all__ = ["ResetPlan", "apply_reset", "internal_topics", "plan_reset"]

_INTERNAL_SUFFIXES = ("-repartition", "-changelog")


@dataclass(frozen=True)
class ResetPlan:
    """What a reset changes. ``input_offsets``: ``{partition: (committed now or None, new)}``."""

    application_id: str
    bootstrap_servers: str
    to_time: Optional[dt.datetime]  # None: the earliest offsets
    input_offsets: Mapping[TopicPartition, tuple[Optional[int], int]]
    internal_topics: Mapping[str, int]  # existing topic -> partitions
    state_location: str
    task_directories: tuple[str, ...]
    tasks: tuple[TaskId, ...]

    @property
    def finds_the_application(self) -> bool:
        """Whether anything of the application exists: committed offsets, internal topics or task
        state. A reset of an id with none of these is almost surely a mistyped id."""
        committed = any(now is not None for now, _new in self.input_offsets.values())
        return committed or bool(self.internal_topics) or bool(self.task_directories)

    def describe(self) -> list[str]:
        """The plan as lines of text, one change per line."""
        target = ("the earliest offsets" if self.to_time is None
                  else f"the first record at or after {self.to_time.isoformat()}")
        lines = [f"reset of application {self.application_id!r} on {self.bootstrap_servers}",
                 f"input topics: committed offsets of group {self.application_id!r} to {target}"]
        for tp, (now, new) in sorted(self.input_offsets.items()):
            lines.append(f"  {tp}: {'(none)' if now is None else now} -> {new}")
        lines.append("internal topics to delete:" if self.internal_topics else "internal topics to delete: none")
        lines += [f"  {topic} ({_count(count, 'partition')})" for topic, count in sorted(self.internal_topics.items())]
        lines.append(f"task state to delete under {self.state_location}:" if self.task_directories
                     else f"task state to delete under {self.state_location}: none")
        lines += [f"  {directory}" for directory in self.task_directories]
        lines.append(f"tasks to fence (transactional ids {task_transactional_id(self.application_id, '<task>')}): "
                     + ", ".join(str(task) for task in self.tasks))
        return lines


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}{'' if number == 1 else 's'}"


def internal_topics(application: ApplicationTopology, existing: set[str]) -> list[str]:
    """The application's internal topics among ``existing``: its repartition topics, and any topic
    named as Kafka Streams names internal ones for this id that is not one of its inputs or outputs."""
    own = set(application.repartition_topics)
    external = {topic for sub_id in application.subtopology_ids
                for topic in (*application.source_topics(sub_id), *application.sink_topics(sub_id))} - own
    prefix = f"{application.application_id}-"
    return sorted(topic for topic in existing
                  if topic in own or (topic.startswith(prefix) and topic.endswith(_INTERNAL_SUFFIXES)
                                      and topic not in external))


def plan_reset(application: ApplicationTopology, admin: KafkaAdmin, state: TaskStateLocation,
               to_time: Optional[dt.datetime] = None) -> ResetPlan:
    """The reset of ``application`` (whose source partition counts are known) as it stands now."""
    inputs = application.external_source_topics
    committed = admin.committed_offsets(application.application_id, inputs) if inputs else {}
    if not inputs:
        new: dict[TopicPartition, int] = {}
    elif to_time is None:
        new = admin.beginning_offsets(inputs)
    else:
        new = admin.offsets_for_time(inputs, int(to_time.timestamp() * 1000))
    internal = internal_topics(application, admin.list_topics())
    internal_counts = admin.partition_counts(internal) if internal else {}
    return ResetPlan(
        application_id=application.application_id,
        bootstrap_servers=admin.bootstrap_servers,
        to_time=to_time,
        input_offsets={tp: (committed.get(tp), offset) for tp, offset in new.items()},
        internal_topics=internal_counts,
        state_location=state.state_location,
        task_directories=tuple(state.task_directories()),
        tasks=tuple(sorted(application.tasks())),
    )


def apply_reset(plan: ResetPlan, admin: KafkaAdmin, state: TaskStateLocation,
                kafka_config: Optional[Mapping[str, Any]] = None) -> None:
    """Carry ``plan`` out (see the module docstring for the order and why)."""
    for task in plan.tasks:
        fence = TaskFence(plan.bootstrap_servers, task_transactional_id(plan.application_id, str(task)),
                          plan.application_id, kafka_config)
        fence.start()  # init_transactions: an older holder of the task is fenced from now on
        fence.close()
    admin.commit_offsets(plan.application_id, {tp: new for tp, (_now, new) in plan.input_offsets.items()})
    admin.delete_topics(plan.internal_topics)
    _wait_until_gone(admin, set(plan.internal_topics))
    state.delete()


def _wait_until_gone(admin: KafkaAdmin, topics: set[str]) -> None:
    """Until the deleted topics have left the metadata, so that the next run creates them anew
    rather than finding them still there, about to go."""
    deadline = time.monotonic() + admin.timeout_s
    while topics & admin.list_topics():
        if time.monotonic() > deadline:
            raise KafkaAdminError(f"topics {sorted(topics & admin.list_topics())} are still listed on "
                                  f"{admin.bootstrap_servers} {admin.timeout_s:.0f}s after their deletion")
        time.sleep(0.2)
