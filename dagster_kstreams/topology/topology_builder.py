"""The physical processor graph (Kafka Streams' ``InternalTopologyBuilder``): sources, processors,
sinks, state stores, repartition topics and co-partition groups, and the grouping of nodes into
sub-topologies (nodes joined by an edge or a shared store are in one).

It is filled by :class:`~.graph.InternalStreamsBuilder` in build-priority order, which fixes the
node order, the sub-topology split and hence ``describe()``. Nothing here is public API;
:mod:`dagster_kstreams.topology.view` exposes a read-only view.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable, Optional, Sequence

from .errors import TopologyException
from .node_specs import ProcessorSpec, StoreSpec

__all__ = ["NodeFactory", "InternalTopologyBuilder"]


@dataclass
class NodeFactory:
    """A node of the physical processor graph."""

    name: str
    role: str  # "source" | "processor" | "sink"
    predecessors: tuple
    topics: tuple = ()            # source: subscribed topics (in the order given)
    pattern: Optional[str] = None  # source: topic regex
    topic: Optional[str] = None    # sink: static topic
    topic_extractor: Any = None    # sink: dynamic topic (callable(key, value) -> topic)
    spec: Optional[ProcessorSpec] = None
    store_names: list = field(default_factory=list)
    serdes: dict = field(default_factory=dict)  # key_serde/value_serde/partitioner/... as given


class InternalTopologyBuilder:
    def __init__(self) -> None:
        self.node_factories: dict[str, NodeFactory] = {}
        self._parent: dict[str, str] = {}  # union-find over node names (sub-topology grouping)
        self.state_stores: dict[str, StoreSpec] = {}
        self.store_users: dict[str, list[str]] = {}
        self.internal_topics: dict[str, Optional[int]] = {}  # repartition topic -> enforced partitions
        self.source_topic_to_node: dict[str, str] = {}
        self.copartition_source_groups: list[tuple[str, ...]] = []
        self.global_source_nodes: set[str] = set()  # sources of global stores (no task reads them)

    # -- union-find ---------------------------------------------------------------------
    def _root(self, name: str) -> str:
        while self._parent[name] != name:
            self._parent[name] = self._parent[self._parent[name]]
            name = self._parent[name]
        return name

    def _unite(self, a: str, b: str) -> None:
        ra, rb = self._root(a), self._root(b)
        if ra != rb:
            self._parent[ra] = rb

    def _check_new(self, name: str) -> None:
        if name in self.node_factories:
            raise TopologyException(f"Processor {name} is already added.")

    def _check_predecessors(self, name: str, predecessors: Sequence[str], what: str) -> None:
        if not predecessors:
            raise TopologyException(f"{what} {name} must have at least one parent")
        for predecessor in predecessors:
            if predecessor == name:
                raise TopologyException(f"Processor {name} cannot be a predecessor of itself.")
            if predecessor not in self.node_factories:
                raise TopologyException(f"Predecessor processor {predecessor} is not added yet for {name}")
            if self.node_factories[predecessor].role == "sink":
                raise TopologyException(f"Sink {predecessor} cannot be used a parent.")

    # -- building -----------------------------------------------------------------------
    def add_source(self, name: str, topics: Sequence[str] = (), pattern: Optional[str] = None,
                   serdes: Optional[dict] = None) -> None:
        self._check_new(name)
        for topic in topics:
            if topic in self.source_topic_to_node:
                raise TopologyException(f"Topic {topic} has already been registered by another source.")
        for topic in topics:
            self.source_topic_to_node[topic] = name
        self.node_factories[name] = NodeFactory(name, "source", (), topics=tuple(topics), pattern=pattern,
                                                serdes=dict(serdes or {}))
        self._parent[name] = name

    def add_sink(self, name: str, topic: Optional[str], predecessors: Sequence[str],
                 topic_extractor: Any = None, serdes: Optional[dict] = None) -> None:
        self._check_new(name)
        self._check_predecessors(name, predecessors, "Sink")
        self.node_factories[name] = NodeFactory(name, "sink", tuple(predecessors), topic=topic,
                                                topic_extractor=topic_extractor, serdes=dict(serdes or {}))
        self._parent[name] = name
        for predecessor in predecessors:
            self._unite(name, predecessor)

    def add_processor(self, name: str, spec: ProcessorSpec, predecessors: Sequence[str]) -> None:
        self._check_new(name)
        self._check_predecessors(name, predecessors, "Processor")
        self.node_factories[name] = NodeFactory(name, "processor", tuple(predecessors), spec=spec)
        self._parent[name] = name
        for predecessor in predecessors:
            self._unite(name, predecessor)
        for store in spec.stores():
            self.add_state_store(store, name)

    def add_state_store(self, store: StoreSpec, *processor_names: str) -> None:
        existing = self.state_stores.get(store.name)
        if existing is not None and existing is not store:
            raise TopologyException(f"A different StateStore has already been added with the name {store.name}")
        if existing is None:
            self.state_stores[store.name] = store
            self.store_users[store.name] = []
        for processor_name in processor_names:
            self.connect_processor_and_state_store(processor_name, store.name)

    def connect_processor_and_state_store(self, processor_name: str, store_name: str) -> None:
        if store_name not in self.state_stores:
            raise TopologyException(f"StateStore {store_name} is not added yet.")
        if processor_name not in self.node_factories:
            raise TopologyException(f"Processor {processor_name} is not added yet.")
        factory = self.node_factories[processor_name]
        if factory.role != "processor":
            raise TopologyException(f"cannot connect a state store {store_name} to a source node or a sink node.")
        users = self.store_users[store_name]
        if users:
            self._unite(users[0], processor_name)
        if processor_name not in users:
            users.append(processor_name)
        if store_name not in factory.store_names:
            factory.store_names.append(store_name)

    def add_global_store(self, source_name: str, processor_name: str, topic: str, spec: ProcessorSpec,
                         serdes: Optional[dict] = None) -> None:
        """A global store: its source and the processor that owns the store, a group of their own."""
        self.add_source(source_name, [topic], None, serdes)
        self.global_source_nodes.add(source_name)
        self.add_processor(processor_name, spec, [source_name])

    def is_global_group(self, node_names: Iterable[str]) -> bool:
        """Whether a node group is a global store's (``nodeGroupContainsGlobalSourceNode``)."""
        return any(name in self.global_source_nodes for name in node_names)

    def add_internal_topic(self, topic: str, partitions: Optional[int]) -> None:
        self.internal_topics[topic] = partitions

    def copartition_sources(self, source_node_names: Iterable[str]) -> None:
        self.copartition_source_groups.append(tuple(sorted(set(source_node_names))))

    def rename_copartition_source(self, replaced: str, replacement: str) -> None:
        """A merged repartition topic's source replaces the ones it merged in their co-partition
        groups (``maybeUpdateCopartitionSourceGroups``)."""
        self.copartition_source_groups = [
            tuple(sorted({replacement if name == replaced else name for name in group}))
            for group in self.copartition_source_groups]

    # -- grouping -----------------------------------------------------------------------
    def node_groups(self) -> dict[int, list[str]]:
        """Sub-topology id -> node names in insertion order (ids by first appearance)."""
        groups: dict[int, list[str]] = {}
        root_to_group: dict[str, int] = {}
        for name in self.node_factories:
            root = self._root(name)
            if root not in root_to_group:
                root_to_group[root] = len(groups)
                groups[root_to_group[root]] = []
            groups[root_to_group[root]].append(name)
        return groups
