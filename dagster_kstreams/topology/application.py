"""One application's facts: a topology bound to its application id, and partition counts.

Kafka Streams keeps these facts in one place once ``application.id`` is set
(``InternalTopologyBuilder`` with its ``TopologyMetadata``); so does this: the Spark runner,
the Dagster assets, the worker runs and the lag sensor all ask :class:`ApplicationTopology`
rather than recompute real topic names, who writes and reads a topic, task counts, or the
order in which sub-topologies run.

Topic names here are real Kafka names: a repartition topic of the graph
(``count-store-repartition``) is ``<application_id>-count-store-repartition``.
:meth:`ApplicationTopology.topic_name` maps a graph name to its real name.

A source subscribed by a pattern (``builder.stream(re.compile("orders-.*"))``) reads the topics
its pattern matches among those whose partition counts are given, resolved once, here, when they
are: from then on :meth:`ApplicationTopology.source_topics` names them as it names a source's
listed topics, and its tasks are partitions ``0..max-1`` over them, as for
``builder.stream(["a", "b"])``. Kafka Streams matches again at each rebalance; here a topic
created later is read once the counts are given again (a code location reload).
"""
from __future__ import annotations

import re
from types import MappingProxyType
from typing import Any, Iterable, Mapping, Optional

from .errors import TopologyException
from .node_specs import NodeKind
from .partition_counts import pattern_subscriptions
from .task_id import TaskId
from .view import ProcessorNode, Subtopology, Topology, as_topology, internal_topic_name

__all__ = ["ApplicationTopology", "check_application_id"]

_APPLICATION_ID = re.compile(r"[a-zA-Z0-9._-]+")


def check_application_id(application_id: str) -> str:
    """Kafka Streams' rule: the id names the consumer group and prefixes internal topics."""
    if not isinstance(application_id, str) or not _APPLICATION_ID.fullmatch(application_id):
        raise ValueError(
            f"application_id {application_id!r} must be non-empty ASCII alphanumerics, '.', '_' or '-' "
            "(it names the consumer group and prefixes internal topics)")
    return application_id


class ApplicationTopology:
    """A topology as one application runs it.

    ``source_partitions`` are the partition counts of the external topics (declared, or read
    from the broker); the facts that depend on them (:attr:`partition_counts`,
    :meth:`task_count`, :meth:`tasks`) need them, the others do not. Immutable:
    :meth:`with_source_partitions` returns a new one.
    """

    def __init__(self, topology: Any, application_id: str,
                 source_partitions: Optional[Mapping[str, int]] = None):
        self.topology: Topology = as_topology(topology)
        self.application_id = check_application_id(application_id)
        self._source_partitions = None if source_partitions is None else MappingProxyType(dict(source_partitions))
        # Pattern source node -> the topics it reads; empty until the source partitions are known.
        self._subscribed: dict[str, tuple[str, ...]] = {}
        if self._source_partitions is not None:
            self._subscribed = self._resolve_patterns(self._source_partitions)
        self._writers: dict[str, list[int]] = {}
        self._readers: dict[str, list[int]] = {}
        for sub in self.topology.subtopologies:
            for topic in self.sink_topics(sub.id):
                self._writers.setdefault(topic, []).append(sub.id)
            for topic in self.source_topics(sub.id):
                self._readers.setdefault(topic, []).append(sub.id)
        self._order = self._upstream_first()
        self._partition_counts: Optional[dict[str, int]] = None
        self._task_counts: dict[int, int] = {}
        if self._source_partitions is not None:
            self._partition_counts = self._count_partitions(self._source_partitions)

    def with_source_partitions(self, source_partitions: Mapping[str, int]) -> "ApplicationTopology":
        return ApplicationTopology(self.topology, self.application_id, source_partitions)

    # -- topics ---------------------------------------------------------------------------
    def topic_name(self, topic: str) -> str:
        """The real Kafka topic behind a topic name of the graph (internal ones get the app id prefix)."""
        if topic in self.topology.repartition_topics:
            return internal_topic_name(self.application_id, topic)
        return topic

    def graph_topic_name(self, topic: str) -> str:
        """The graph's name of a real topic (the inverse of :meth:`topic_name`)."""
        for name in self.topology.repartition_topics:
            if topic == internal_topic_name(self.application_id, name):
                return name
        return topic

    @property
    def repartition_topics(self) -> list[str]:
        return [self.topic_name(name) for name in self.topology.repartition_topics]

    def is_repartition_topic(self, topic: str) -> bool:
        return topic in self.repartition_topics

    @property
    def external_source_topics(self) -> list[str]:
        """Topics the application reads and does not write, in the order sub-topologies read them."""
        return [topic for topic in self._readers if topic not in self._writers]

    @property
    def global_topics(self) -> list[str]:
        """Topics read whole into global tables (every task joining one reads all its partitions)."""
        return list(dict.fromkeys(self.topic_name(store.topic) for store in self.topology.global_stores))

    def global_topics_of(self, subtopology_id: int) -> list[str]:
        """The global tables' topics a sub-topology joins."""
        return [self.topic_name(topic) for topic in self.topology.global_topics(subtopology_id)]

    def source_topics(self, subtopology_id: int) -> list[str]:
        """Real topics the sub-topology reads, source node by source node: the topics a source
        lists, and those a pattern source subscribes to (none until the source partitions are known)."""
        return [topic for node in self.subtopology(subtopology_id).nodes if node.kind is NodeKind.SOURCE
                for topic in self.source_node_topics(node)]

    def source_node_topics(self, node: ProcessorNode) -> list[str]:
        """Real topics one source node reads: those it lists, or those its pattern matched."""
        if node.pattern is not None:
            return list(self._subscribed.get(node.name, ()))
        return [self.topic_name(topic) for topic in node.topics]

    @property
    def subscribed_topics(self) -> list[str]:
        """Every topic a pattern source reads (sorted), fixed when the source partitions were given."""
        return sorted({topic for topics in self._subscribed.values() for topic in topics})

    @property
    def patterns_pending(self) -> bool:
        """Whether a source subscribes by a pattern not matched yet (the source partitions are not known)."""
        return self._source_partitions is None and any(
            node.pattern is not None for sub in self.topology.subtopologies for node in sub.nodes)

    def pattern_matches(self, topics: Iterable[str]) -> list[str]:
        """The topics among ``topics`` that a pattern source would read (sorted); KeyError naming the
        pattern and its sub-topology if one matches none."""
        return sorted({topic for sub in self.topology.subtopologies
                       for matched in pattern_subscriptions(sub, topics).values() for topic in matched})

    def _resolve_patterns(self, source_partitions: Mapping[str, int]) -> dict[str, tuple[str, ...]]:
        """Each pattern source's topics among ``source_partitions``; a topic two sources would read
        is an error naming it (Kafka Streams': a topic is matched by one source only)."""
        subscribed: dict[str, tuple[str, ...]] = {}
        listed = {self.topic_name(topic): node.name for sub in self.topology.subtopologies for node in sub.nodes
                  if node.kind is NodeKind.SOURCE for topic in node.topics}
        for sub in self.topology.subtopologies:
            for name, topics in pattern_subscriptions(sub, source_partitions).items():
                for topic in topics:
                    if topic in listed:
                        raise TopologyException(
                            f"topic {topic!r} matches the source pattern {sub.node(name).pattern!r} of "
                            f"sub-topology {sub.id} and is already read by source {listed[topic]}")
                    listed[topic] = name
                subscribed[name] = topics
        return subscribed

    def sink_topics(self, subtopology_id: int) -> list[str]:
        """Every static topic the sub-topology writes: output topics, then repartition topics."""
        sub = self.subtopology(subtopology_id)
        return [self.topic_name(topic) for topic in (*sub.sink_topics, *sub.repartition_sink_topics)]

    def writers(self, topic: str) -> list[int]:
        """Sub-topologies writing a real topic."""
        return list(self._writers.get(topic, ()))

    def readers(self, topic: str) -> list[int]:
        return list(self._readers.get(topic, ()))

    def upstreams(self, subtopology_id: int) -> list[int]:
        """The sub-topologies that write what this one reads, when every topic it reads is written
        by others of the application (repartition topics, output topics read back): all of its
        input is their output. Empty when it reads a topic from outside or one it writes itself
        (what the lag sensor bounds a downstream's input rate by: ``scaling.selectivity``)."""
        topics = self.source_topics(subtopology_id)
        writers = [self.writers(topic) for topic in topics]
        if not topics or not all(writers) or any(subtopology_id in found for found in writers):
            return []
        return sorted({writer for found in writers for writer in found})

    def offset_reset(self, topic: str) -> str:
        """Where a task starts on a partition with no committed offset ("earliest" by default,
        as Kafka Streams' ``auto.offset.reset``)."""
        for sub in self.topology.subtopologies:
            for node in sub.nodes:
                if node.kind is NodeKind.SOURCE and topic in {self.topic_name(t) for t in node.topics}:
                    return node.serdes.get("offset_reset") or "earliest"
        return "earliest"

    # -- sub-topologies ---------------------------------------------------------------------
    @property
    def subtopology_ids(self) -> list[int]:
        return [sub.id for sub in self.topology.subtopologies]

    def subtopology(self, subtopology_id: int) -> Subtopology:
        return self.topology.subtopology(subtopology_id)

    def subtopology_of_store(self, store_name: str) -> int:
        try:
            return self.topology.subtopology_of_store(store_name).id
        except KeyError:
            raise KeyError(f"application {self.application_id!r} has no state store {store_name!r} "
                           f"(it has {sorted(self.topology.state_stores)})") from None

    def execution_order(self) -> list[int]:
        """Sub-topology ids, each after every sub-topology that writes a topic it reads (Kafka
        Streams' numbering does not promise that), so one pass moves records end to end."""
        return list(self._order)

    def written_back(self, subtopology_id: int) -> list[str]:
        """The topics the sub-topology reads that a sub-topology at or after it in
        :meth:`execution_order` writes: a cycle through topics (a foreign-key join's answers go
        back to the left table's sub-topology). One pass in execution order leaves their records
        for the next pass of the reader."""
        rank = {sub_id: i for i, sub_id in enumerate(self._order)}
        return [topic for topic in dict.fromkeys(self.source_topics(subtopology_id))
                if any(rank[writer] >= rank[subtopology_id] for writer in self.writers(topic))]

    def run_again(self) -> list[int]:
        """The sub-topologies a second pass in :meth:`execution_order` runs so that what the first
        pass left on topics written back is processed end to end: each that reads such a topic, and
        each after those that reads a topic they write from it (a foreign-key join's right table
        answers a second left table's subscriptions in its second pass, and that left table, whose
        sub-topology comes after the right one's, resolves the answers in the same pass). What a
        sub-topology writes from a topic: the sinks its records reach from that topic's source."""
        again: list[int] = []
        written: set[str] = set()  # by the second pass so far
        for subtopology_id in self._order:
            reading = [*self.written_back(subtopology_id),
                       *(topic for topic in self.source_topics(subtopology_id) if topic in written)]
            if reading:
                again.append(subtopology_id)
                written.update(self._written_from(subtopology_id, reading))
        return again

    def _written_from(self, subtopology_id: int, topics: list[str]) -> set[str]:
        """The static topics the sinks write that records read from ``topics`` reach."""
        nodes = {node.name: node for node in self.subtopology(subtopology_id).nodes}
        reached = [name for name, node in nodes.items()
                   if node.kind is NodeKind.SOURCE and set(self.source_node_topics(node)) & set(topics)]
        seen: set[str] = set()
        written: set[str] = set()
        while reached:
            name = reached.pop()
            if name in seen:
                continue
            seen.add(name)
            node = nodes[name]
            if node.kind is NodeKind.SINK and node.topic is not None:
                written.add(self.topic_name(node.topic))
            reached.extend(node.children)
        return written

    def _upstream_first(self) -> list[int]:
        ordered: list[int] = []
        remaining = self.subtopology_ids
        while remaining:
            ready = [sub_id for sub_id in remaining
                     if all(writer in ordered or writer == sub_id
                            for topic in self.source_topics(sub_id) for writer in self.writers(topic))]
            if not ready:  # a cycle through topics: keep Kafka Streams' order for the rest
                ready = remaining[:1]
            ordered.append(ready[0])
            remaining.remove(ready[0])
        return ordered

    # -- partitions and tasks -----------------------------------------------------------------
    @property
    def source_partitions(self) -> Mapping[str, int]:
        if self._source_partitions is None:
            raise ValueError(f"application {self.application_id!r}: the source topics' partition counts are "
                             "not known yet (with_source_partitions)")
        return self._source_partitions

    @property
    def partition_counts(self) -> dict[str, int]:
        """Partitions of every real topic the application reads or writes: external sources as
        given, repartition topics by Kafka Streams' rules (co-partitioning enforced), and output
        topics as given, else the largest task count of the sub-topologies writing them."""
        if self._partition_counts is None:
            self.source_partitions  # raises: not known yet
        return dict(self._partition_counts)

    def _count_partitions(self, source_partitions: Mapping[str, int]) -> dict[str, int]:
        graph_counts = self.topology.partition_counts(source_partitions)
        counts = {self.topic_name(topic): count for topic, count in graph_counts.items()}
        self._task_counts = self.topology.task_counts(source_partitions)
        for topic in self.global_topics:
            if topic not in source_partitions:
                raise KeyError(f"application {self.application_id!r}: no partition count given for the global "
                               f"table's topic {topic!r}; given: {sorted(source_partitions)}")
            counts.setdefault(topic, source_partitions[topic])
        for topic, writers in self._writers.items():
            if topic not in counts:
                counts[topic] = source_partitions.get(topic, max(self._task_counts[sub] for sub in writers))
        return counts

    def task_count(self, subtopology_id: int) -> int:
        """Tasks of a sub-topology: the largest partition count among its source topics."""
        self.source_partitions  # raises: not known yet
        try:
            return self._task_counts[subtopology_id]
        except KeyError:
            raise KeyError(f"application {self.application_id!r} has no sub-topology {subtopology_id} "
                           f"(it has {self.subtopology_ids})") from None

    @property
    def task_counts(self) -> dict[int, int]:
        return {sub_id: self.task_count(sub_id) for sub_id in self.subtopology_ids}

    def tasks(self, subtopology_id: Optional[int] = None) -> list[TaskId]:
        """Every task (or one sub-topology's), sub-topologies in :meth:`execution_order`."""
        ids = self.execution_order() if subtopology_id is None else [subtopology_id]
        return [TaskId(sub_id, partition) for sub_id in ids for partition in range(self.task_count(sub_id))]

    def check_task(self, task: TaskId) -> TaskId:
        """``task`` if the application has it, else ValueError naming what it has."""
        if task.subtopology not in self.subtopology_ids:
            raise ValueError(f"task {task}: application {self.application_id!r} has no sub-topology "
                             f"{task.subtopology} (it has {self.subtopology_ids})")
        count = self.task_count(task.subtopology)
        if not 0 <= task.partition < count:
            raise ValueError(f"task {task}: sub-topology {task.subtopology} has {count} tasks "
                             f"(partitions 0..{count - 1})")
        return task

    def assigned_partitions(self, task: TaskId) -> list[tuple[str, int]]:
        """``(topic, partition)`` a task reads: partition ``p`` of each source topic that has it
        (Kafka Streams assigns a task only the partitions that exist)."""
        counts = self.partition_counts
        return [(topic, task.partition) for topic in self.source_topics(task.subtopology)
                if task.partition < counts[topic]]

    def __repr__(self) -> str:
        return f"ApplicationTopology({self.application_id!r}, {len(self.topology.subtopologies)} sub-topologies)"
