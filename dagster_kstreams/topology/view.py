"""Read-only view of a built topology: what the Spark task runner and the Dagster layer consume.

Contract (stable; other layers rely on it)
-----------------------------------------
``topology = StreamsBuilder(...).build()`` returns a :class:`Topology`:

* ``topology.describe()`` — a description whose ``str()`` is Kafka Streams 4.x's
  ``Topology.describe().toString()`` byte for byte.
* ``topology.subtopologies`` — tuple of :class:`Subtopology`, ordered by ``id`` (0, 1, ...).
  Each has:

  - ``id``: int, Kafka Streams' sub-topology number.
  - ``nodes``: tuple of :class:`ProcessorNode` in topological order (every node after all
    its parents; this is the order Kafka Streams added them).
  - ``source_topics``: tuple of :class:`TopicRef` (``name``, ``is_repartition``), in node order;
    ``external_source_topics`` / ``repartition_source_topics``: names only.
  - ``source_pattern``: regex of a pattern subscription or None.
  - ``sink_topics`` / ``repartition_sink_topics``: static sink topic names (a dynamic sink has
    ``topic_extractor`` on its node instead).
  - ``state_stores``: tuple of :class:`~.node_specs.StoreSpec` used by its processors
    (``name``, ``type`` (StoreType), ``changelog`` (bool), serdes, ``window``, ``retention_ms``).
  - ``node(name)``: lookup.

* :class:`ProcessorNode` (frozen): ``name``, ``kind`` (:class:`NodeKind`), ``parents`` and
  ``children`` (tuples of node names, within the sub-topology; children in the order records are
  forwarded), ``stores`` (store names), ``params`` (read-only mapping), and for sources
  ``topics``/``pattern``, for sinks ``topic``/``topic_extractor``; ``serdes`` (key_serde,
  value_serde, partitioner, timestamp_extractor, offset_reset as given, or None = use the
  application defaults; ``changes`` True on the sink/source of a re-grouped table's repartition
  topic, whose values are table updates with their old values); ``is_repartition`` for the
  sink/source of a repartition topic.

  ``params`` per kind (user functions are :class:`~.functions.UserFunction`: ``fn`` and
  ``form``; a ``FunctionForm.COLUMN`` function holds a PySpark Column to run in the JVM):

  ============================ ======================================================================
  FILTER / TABLE_FILTER        predicate (key, value) -> bool, negate (filter_not)
  MAP                          mapper (key, value) -> (key, value) [COLUMN: (key_col, value_col)]
  MAP_VALUES/TABLE_MAP_VALUES  mapper (value) or (key, value) -> value
  TABLE_TRANSFORM_VALUES       supplier () -> ValueTransformerWithKey, store_name (own store or None)
  FLAT_MAP                     mapper (key, value) -> iterable of (key, value)
  FLAT_MAP_VALUES              mapper (value) or (key, value) -> iterable of values
  SELECT_KEY                   mapper (key, value) -> key      (also group_by's key selector)
  PEEK / FOREACH               action (key, value)
  PRINT                        label, file_path, mapper
  MERGE, BRANCH_CHILD,         pass records through unchanged (BRANCH_CHILD: index, 0 = default)
  TABLE_TO_STREAM, STREAM_STREAM_JOIN_MERGE
  REPARTITION_FILTER           drop_null_keys: drop null-key records before the repartition topic
                               (Kafka's rule: unless a left/outer join is downstream)
  BRANCH                       predicates (list), children (child node names, same order; a record
                               goes to the first matching child; default branch has index 0)
  TO_TABLE / TABLE_SOURCE      store_name (the store exists only if listed in ``stores``), topic
  AGGREGATE                    operation count|reduce|aggregate, store_name, reducer (aggregate,
                               value), initializer (), aggregator (key, value, aggregate)
  WINDOWED_AGGREGATE           as AGGREGATE + windows (TimeWindows | SlidingWindows |
                               SessionWindows), merger (session), emit_strategy
                               (on_window_update | on_window_close)
  COGROUP_MERGE                store_name: passes the cogroup's table updates through (the
                               aggregates before it, all on that one store, carry ``cogroup``)
  TABLE_GROUP_BY_MAP           selector (key, value) -> (key, value)
  TABLE_AGGREGATE              operation count|reduce|aggregate, store_name, adder, subtractor
                               (reduce: (aggregate, value); aggregate: (key, value, aggregate)),
                               initializer ()
  JOIN_WINDOW                  store_name, windows (JoinWindows), side this|other
  STREAM_STREAM_JOIN           joiner, windows, join_type inner|left|outer, side, outer (this side
                               emits unmatched), this_store_name, other_store_name, outer_store_name
  STREAM_STREAM_SELF_JOIN      as STREAM_STREAM_JOIN's merge: the single-store self-join (topology.optimization)
  STREAM_TABLE_JOIN            joiner (value, table_value) or (key, value, table_value), join_type
                               inner|left, table_store_names
  TABLE_TABLE_JOIN(_MERGE)     joiner, join_type, side, this/other_store_names, store_name (merge)
  SUPPRESS                     suppressed, store_name, until_window_closes, grace_ms,
                               time_to_wait_ms, buffer_config
  FK_SUBSCRIPTION_SEND /       a foreign-key join's processors (all: join_type inner|left,
  FK_SUBSCRIPTION_RECEIVE /    left_table, right_table, left_key_serde, left_value_serde,
  FK_SUBSCRIPTION_JOIN /       foreign_key_serde, foreign_value_serde, registration_topic;
  FK_FOREIGN_TABLE_JOIN /      send: extractor (value) or (key, value); receive/foreign table join:
  FK_RESPONSE_JOIN             subscription_store; response join: joiner (value, foreign value))
  FK_JOIN_RESULT               store_name (the joined table, a table source: its store exists only
                               if listed in ``stores``)
  ============================ ======================================================================

* ``topology.global_stores``: tuple of :class:`GlobalStore` (a global table: ``id`` as describe()
  numbers it, ``topic``, ``store_name``, ``store``, ``serdes``); no sub-topology and no task is made
  of one. ``topology.global_topics(subtopology_id)``: the global topics a sub-topology joins.
  STREAM_GLOBAL_TABLE_JOIN params: key_selector (key, value) -> table key, joiner, join_type
  inner|left, global_topic, global_store_name, global_key_serde, global_value_serde.
* ``topology.repartition_topics``: ``{topic name: partitions or None}`` (None = inherit).
  Topic names in the view are Kafka's *unprefixed* names (``count-store-repartition``); the real
  topic is ``internal_topic_name(application_id, name)`` =
  ``<application_id>-count-store-repartition``. Changelogs: ``changelog_topic_name(app, store)``.
* ``topology.source_topics()``: external source topics (sorted); ``sink_topics()`` likewise.
* ``topology.partition_counts(source_partition_counts)``: partitions of every topic the topology
  reads, including repartition topics (Kafka Streams' rules: a repartition topic gets the largest
  partition count of the sub-topology writing it unless ``Repartitioned`` fixes it; co-partitioned
  repartition topics follow the external topics they join; :mod:`.partition_counts`). Raises
  :class:`CopartitionError` (a TopologyException) naming both topics and counts when joined inputs differ.
* ``topology.tasks(source_partition_counts)``: sorted list of :class:`~.task_id.TaskId`
  (``str(TaskId(1, 3)) == "1_3"``); tasks of a sub-topology = largest partition count of its
  source topics.
* ``topology.changelog_topics(application_id, source_partition_counts)``: ``{topic: partitions}``.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Mapping, Optional, Sequence

from .describe import TopologyDescription, describe_global_store, describe_subtopology
from .low_level import LowLevelTopologyMethods
from .node_specs import NodeKind, StoreSpec
from .partition_counts import CopartitionError, partition_counts, pattern_subscriptions
from .task_id import TaskId
from .topology_builder import InternalTopologyBuilder

__all__ = [
    "Topology", "Subtopology", "GlobalStore", "ProcessorNode", "TopicRef", "CopartitionError",
    "internal_topic_name", "changelog_topic_name", "as_topology",
]


def internal_topic_name(application_id: str, name: str) -> str:
    """``<application_id>-<name>`` (``name`` already ends with ``-repartition``/``-changelog``)."""
    if not application_id:
        raise ValueError("application_id must be a non-empty string")
    return f"{application_id}-{name}"


def changelog_topic_name(application_id: str, store_name: str) -> str:
    return internal_topic_name(application_id, f"{store_name}-changelog")


@dataclass(frozen=True)
class TopicRef:
    name: str
    is_repartition: bool


@dataclass(frozen=True)
class ProcessorNode:
    name: str
    kind: NodeKind
    parents: tuple
    children: tuple
    stores: tuple = ()
    params: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))
    topics: tuple = ()
    pattern: Optional[str] = None
    topic: Optional[str] = None
    topic_extractor: Any = None
    serdes: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))
    is_repartition: bool = False


@dataclass(frozen=True)
class Subtopology:
    id: int
    nodes: tuple
    source_topics: tuple
    source_pattern: Optional[str]
    sink_topics: tuple
    repartition_sink_topics: tuple
    state_stores: tuple

    @property
    def external_source_topics(self) -> tuple:
        return tuple(ref.name for ref in self.source_topics if not ref.is_repartition)

    @property
    def repartition_source_topics(self) -> tuple:
        return tuple(ref.name for ref in self.source_topics if ref.is_repartition)

    @property
    def source_topic_names(self) -> tuple:
        return tuple(ref.name for ref in self.source_topics)

    def node(self, name: str) -> ProcessorNode:
        for node in self.nodes:
            if node.name == name:
                return node
        raise KeyError(f"sub-topology {self.id} has no node {name!r}")


@dataclass(frozen=True)
class GlobalStore:
    """A global table's store (Kafka Streams' global store): its group id in describe(), the topic
    read whole into it, the store, its two nodes and the source's serdes as given."""

    id: int
    topic: str
    store_name: str
    source_name: str
    processor_name: str
    store: StoreSpec
    serdes: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))


class Topology(LowLevelTopologyMethods):
    """A built topology (Kafka Streams' ``Topology``); ``Topology()`` starts an empty one for the
    Processor API's low-level methods (:mod:`.low_level`)."""

    def __init__(self, builder: Optional[InternalTopologyBuilder] = None):
        self._builder = InternalTopologyBuilder() if builder is None else builder
        self._refresh()

    def _refresh(self) -> None:
        builder = self._builder
        self.repartition_topics: Mapping[str, Optional[int]] = MappingProxyType(dict(builder.internal_topics))
        self._groups = builder.node_groups()
        # A global store's group keeps its id (Kafka Streams numbers it) but is no sub-topology: no task runs it.
        self.global_stores: tuple = tuple(
            self._make_global_store(gid, names) for gid, names in self._groups.items() if builder.is_global_group(names))
        self.subtopologies: tuple = tuple(self._make_subtopology(gid, names) for gid, names in self._groups.items()
                                          if not builder.is_global_group(names))
        self.state_stores: Mapping[str, StoreSpec] = MappingProxyType(dict(builder.state_stores))
        self.copartition_groups: tuple = self._copartition_topic_groups()

    # -- structure --------------------------------------------------------------------
    def _make_subtopology(self, group_id: int, names: Sequence[str]) -> Subtopology:
        factories = self._builder.node_factories
        in_group = set(names)
        children: dict[str, list[str]] = {name: [] for name in names}
        for name in names:
            for predecessor in factories[name].predecessors:
                children[predecessor].append(name)
        nodes = []
        source_topics: list[TopicRef] = []
        sink_topics: list[str] = []
        repartition_sinks: list[str] = []
        pattern = None
        store_names: list[str] = []
        for name in names:
            factory = factories[name]
            if factory.role == "source":
                kind, params = NodeKind.SOURCE, {}
                is_repartition = any(topic in self.repartition_topics for topic in factory.topics)
                source_topics.extend(TopicRef(topic, topic in self.repartition_topics) for topic in factory.topics)
                pattern = pattern or factory.pattern
            elif factory.role == "sink":
                kind, params = NodeKind.SINK, {}
                is_repartition = factory.topic in self.repartition_topics
                if factory.topic is not None:
                    (repartition_sinks if is_repartition else sink_topics).append(factory.topic)
            else:
                kind, params, is_repartition = factory.spec.kind, dict(factory.spec.params), False
            for store in factory.store_names:
                if store not in store_names:
                    store_names.append(store)
            nodes.append(ProcessorNode(
                name=name, kind=kind, parents=tuple(p for p in factory.predecessors if p in in_group),
                children=tuple(children[name]), stores=tuple(factory.store_names),
                params=MappingProxyType(params), topics=tuple(factory.topics), pattern=factory.pattern,
                topic=factory.topic, topic_extractor=factory.topic_extractor,
                serdes=MappingProxyType(dict(factory.serdes)), is_repartition=is_repartition,
            ))
        return Subtopology(group_id, tuple(nodes), tuple(source_topics), pattern, tuple(sink_topics),
                           tuple(repartition_sinks), tuple(self._builder.state_stores[s] for s in store_names))

    def _make_global_store(self, group_id: int, names: Sequence[str]) -> "GlobalStore":
        factories = self._builder.node_factories
        source = next(factories[name] for name in names if factories[name].role == "source")
        processor = next(factories[name] for name in names if factories[name].role == "processor")
        return GlobalStore(group_id, source.topics[0], processor.store_names[0], source.name, processor.name,
                           self._builder.state_stores[processor.store_names[0]], MappingProxyType(dict(source.serdes)))

    def _copartition_topic_groups(self) -> tuple:
        factories = self._builder.node_factories
        groups = []
        for node_names in self._builder.copartition_source_groups:
            topics = []
            for node_name in node_names:
                factory = factories.get(node_name)
                if factory is not None and factory.role == "source":
                    topics.extend(factory.topics)
            if topics:
                groups.append(tuple(sorted(set(topics))))
        return tuple(groups)

    def describe(self) -> TopologyDescription:
        factories = self._builder.node_factories
        return TopologyDescription(
            [describe_subtopology(gid, names, factories) for gid, names in self._groups.items()
             if not self._builder.is_global_group(names)],
            [describe_global_store(store.id, store.source_name, store.processor_name, store.topic, store.store_name)
             for store in self.global_stores])

    def subtopology(self, subtopology_id: int) -> Subtopology:
        for subtopology in self.subtopologies:
            if subtopology.id == subtopology_id:
                return subtopology
        raise KeyError(f"no sub-topology {subtopology_id}; this topology has "
                       f"{[subtopology.id for subtopology in self.subtopologies]}")

    def global_topics(self, subtopology_id: int) -> list[str]:
        """The global tables' topics a sub-topology joins (every one of its tasks reads them whole)."""
        return list(dict.fromkeys(
            node.params["global_topic"] for node in self.subtopology(subtopology_id).nodes
            if node.kind is NodeKind.STREAM_GLOBAL_TABLE_JOIN))

    def source_topics(self) -> list[str]:
        return sorted({t for s in self.subtopologies for t in s.external_source_topics})

    def sink_topics(self) -> list[str]:
        return sorted({t for s in self.subtopologies for t in s.sink_topics})

    def subtopology_of_store(self, store_name: str) -> Subtopology:
        for subtopology in self.subtopologies:
            if any(store.name == store_name for store in subtopology.state_stores):
                return subtopology
        raise KeyError(f"no state store {store_name!r}")

    # -- partitions and tasks ---------------------------------------------------------------
    def partition_counts(self, source_partition_counts: Mapping[str, int]) -> dict[str, int]:
        """Partitions of every topic read by the topology, repartition topics included
        (:mod:`.partition_counts`: Kafka Streams' ``RepartitionTopics`` and ``CopartitionedTopicsEnforcer``)."""
        return partition_counts(self.subtopologies, self.repartition_topics, self.copartition_groups,
                                source_partition_counts)

    def validate(self, source_partition_counts: Mapping[str, int]) -> None:
        """Raise :class:`CopartitionError` if joined inputs are not co-partitioned for these counts."""
        self.partition_counts(source_partition_counts)

    def task_counts(self, source_partition_counts: Mapping[str, int]) -> dict[int, int]:
        counts = self.partition_counts(source_partition_counts)
        result = {}
        for subtopology in self.subtopologies:
            subscribed = pattern_subscriptions(subtopology, source_partition_counts).values()
            inputs = [*subtopology.source_topic_names, *(topic for topics in subscribed for topic in topics)]
            result[subtopology.id] = max(counts[t] for t in inputs)
        return result

    def tasks(self, source_partition_counts: Mapping[str, int]) -> list[TaskId]:
        return [TaskId(sid, p) for sid, n in self.task_counts(source_partition_counts).items() for p in range(n)]

    def changelog_topics(self, application_id: str, source_partition_counts: Mapping[str, int]) -> dict[str, int]:
        task_counts = self.task_counts(source_partition_counts)
        result = {}
        for subtopology in self.subtopologies:
            for store in subtopology.state_stores:
                if store.changelog:
                    result[changelog_topic_name(application_id, store.name)] = task_counts[subtopology.id]
        return result

    def __str__(self) -> str:
        return str(self.describe())

    def __repr__(self) -> str:
        return f"Topology({len(self.subtopologies)} sub-topologies)"


def as_topology(obj: Any) -> Topology:
    """``obj`` if it is a built :class:`Topology`; a ``StreamsBuilder`` (anything whose ``build()``
    returns a Topology) is built first. Anything else raises ``TypeError``.

    This module cannot name ``StreamsBuilder`` (the builder module imports this one to build), hence
    the duck typing; every layer that takes "a topology or its builder" asks here.
    """
    if isinstance(obj, Topology):
        return obj
    build = getattr(obj, "build", None)
    if callable(build):
        built = build()
        if isinstance(built, Topology):
            return built
    raise TypeError(f"expected a Topology from StreamsBuilder.build() (or the StreamsBuilder), got {type(obj).__name__}")
