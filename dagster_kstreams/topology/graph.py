"""The logical graph under the DSL (Kafka Streams' ``InternalStreamsBuilder`` and its graph nodes):

* :class:`InternalStreamsBuilder` — the naming counter (``KSTREAM-FILTER-0000000003``) and a
  logical graph of :class:`GraphNode` objects built by the DSL calls, each with a *build
  priority* (the order it was added).
* Its ``build()`` writes the graph nodes into an :class:`~.topology_builder.InternalTopologyBuilder`
  in build-priority order (as ``InternalStreamsBuilder.buildAndOptimizeTopology`` does), which
  fixes the node order, the sub-topology split and hence ``describe()``.

Nothing here is public API; :mod:`dagster_kstreams.topology.view` exposes a read-only view.
"""
from __future__ import annotations

import heapq
import itertools
from typing import Callable, Optional, Sequence

from .errors import TopologyException
from .node_specs import KTableSourceSpec, NodeKind, ProcessorSpec
from .topology_builder import InternalTopologyBuilder

__all__ = [
    "GraphNode", "RootNode", "StreamSourceNode", "TableSourceNode", "ProcessorGraphNode", "RepartitionNode",
    "StreamSinkNode", "StreamStreamJoinNode", "TableTableJoinNode", "InternalStreamsBuilder",
]


class GraphNode:
    """A node of the logical graph; ``write`` adds its processors to the topology builder."""

    def __init__(self, name: str):
        self.name = name
        self.parents: list[GraphNode] = []
        self.children: list[GraphNode] = []
        self.build_priority = 0
        self.written = False
        self.key_changing = False
        self.value_changing = False
        self.merge_node = False
        self.labels: set[str] = set()
        self.output_versioned: Optional[bool] = None

    def add_child(self, child: "GraphNode") -> None:
        if child not in self.children:
            self.children.append(child)
        if self not in child.parents:
            child.parents.append(self)

    def remove_child(self, child: "GraphNode") -> None:
        if child in self.children:
            self.children.remove(child)
        if self in child.parents:
            child.parents.remove(self)

    def parent_names(self) -> list[str]:
        return [parent.name for parent in self.parents]

    def all_parents_written(self) -> bool:
        return all(parent.written for parent in self.parents)

    def write(self, builder: InternalTopologyBuilder) -> None:
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name})"


class RootNode(GraphNode):
    def write(self, builder):
        pass


class StreamSourceNode(GraphNode):
    def __init__(self, name: str, topics: Optional[list[str]], pattern: Optional[str], consumed):
        super().__init__(name)
        self.topics = list(topics) if topics is not None else None
        self.pattern = pattern
        self.consumed = consumed

    def merge(self, other: "StreamSourceNode") -> None:
        for child in list(other.children):
            other.remove_child(child)
            self.add_child(child)

    def write(self, builder):
        builder.add_source(self.name, self.topics or (), self.pattern, _consumed_serdes(self.consumed))


class TableSourceNode(GraphNode):
    def __init__(self, node_name: str, source_name: str, topic: str, consumed, spec: KTableSourceSpec):
        super().__init__(node_name)
        self.source_name = source_name
        self.topic = topic
        self.consumed = consumed
        self.spec = spec

    def write(self, builder):
        builder.add_source(self.source_name, [self.topic], None, _consumed_serdes(self.consumed))
        builder.add_processor(self.name, self.spec, [self.source_name])


class ProcessorGraphNode(GraphNode):
    def __init__(self, name: str, spec: ProcessorSpec, connected_stores: Sequence[str] = ()):
        super().__init__(name)
        self.spec = spec
        self.connected_stores = list(connected_stores)

    def write(self, builder):
        builder.add_processor(self.name, self.spec, self.parent_names())
        for store_name in self.connected_stores:
            builder.connect_processor_and_state_store(self.name, store_name)


class RepartitionNode(GraphNode):
    """Sink to and source from a repartition topic (Kafka Streams' Optimizable/Unoptimizable
    repartition nodes, and the grouped-table one, which has no null-key filter and carries table
    updates with their old values: ``changes``, Kafka Streams' ``ChangedSerializer``)."""

    def __init__(self, source_name: str, sink_name: str, filter_name: Optional[str], topic: str,
                 key_serde=None, value_serde=None, partitions: Optional[int] = None,
                 partitioner=None, optimizable: bool = True, changes: bool = False):
        super().__init__(source_name)
        self.source_name = source_name
        self.sink_name = sink_name
        self.filter_name = filter_name
        self.topic = topic
        self.key_serde = key_serde
        self.value_serde = value_serde
        self.partitions = partitions
        self.partitioner = partitioner
        self.optimizable = optimizable
        self.changes = changes
        # Kafka Streams drops null-key records before a repartition topic unless a left/outer
        # join downstream needs them (InternalStreamsBuilder.rewriteRepartitionNodes).
        self.drop_null_keys = False

    def write(self, builder):
        builder.add_internal_topic(self.topic, self.partitions)
        serdes = {"key_serde": self.key_serde, "value_serde": self.value_serde, "partitioner": self.partitioner}
        source_serdes = {"key_serde": self.key_serde, "value_serde": self.value_serde}
        if self.changes:
            serdes["changes"] = source_serdes["changes"] = True
        if self.filter_name is not None:
            builder.add_processor(self.filter_name, ProcessorSpec(NodeKind.REPARTITION_FILTER, {"drop_null_keys": self.drop_null_keys}),
                                  self.parent_names())
            builder.add_sink(self.sink_name, self.topic, [self.filter_name], serdes=serdes)
        else:
            builder.add_sink(self.sink_name, self.topic, self.parent_names(), serdes=serdes)
        builder.add_source(self.source_name, [self.topic], None, source_serdes)


class StreamSinkNode(GraphNode):
    def __init__(self, name: str, topic: Optional[str], topic_extractor, produced):
        super().__init__(name)
        self.topic = topic
        self.topic_extractor = topic_extractor
        self.produced = produced

    def write(self, builder):
        serdes = {"key_serde": self.produced.key_serde, "value_serde": self.produced.value_serde,
                  "partitioner": self.produced.stream_partitioner}
        builder.add_sink(self.name, self.topic, self.parent_names(), self.topic_extractor, serdes)


class StreamStreamJoinNode(GraphNode):
    def __init__(self, merge_name: str, this_name: str, other_name: str, this_spec: ProcessorSpec,
                 other_spec: ProcessorSpec, merge_spec: ProcessorSpec,
                 this_windowed_name: str, other_windowed_name: str, self_join_spec: ProcessorSpec):
        super().__init__(merge_name)
        self.this_name, self.other_name = this_name, other_name
        self.this_spec, self.other_spec, self.merge_spec = this_spec, other_spec, merge_spec
        self.this_windowed_name, self.other_windowed_name = this_windowed_name, other_windowed_name
        # Written instead of the two join processors and their merge once the single-store self-join
        # rewrite (topology.optimization, :mod:`.self_join`) marks this join.
        self.self_join_spec = self_join_spec
        self.self_join = False

    def write(self, builder):
        if self.self_join:
            builder.add_processor(self.name, self.self_join_spec, [self.this_windowed_name])
            return
        builder.add_processor(self.this_name, self.this_spec, [self.this_windowed_name])
        builder.add_processor(self.other_name, self.other_spec, [self.other_windowed_name])
        builder.add_processor(self.name, self.merge_spec, [self.this_name, self.other_name])


class TableTableJoinNode(GraphNode):
    def __init__(self, merge_name: str, this_name: str, other_name: str, this_spec, other_spec, merge_spec,
                 this_side: str, other_side: str, this_store_names: Sequence[str], other_store_names: Sequence[str]):
        super().__init__(merge_name)
        self.this_name, self.other_name = this_name, other_name
        self.this_spec, self.other_spec, self.merge_spec = this_spec, other_spec, merge_spec
        self.this_side, self.other_side = this_side, other_side
        self.this_store_names, self.other_store_names = list(this_store_names), list(other_store_names)

    def write(self, builder):
        builder.add_processor(self.this_name, self.this_spec, [self.this_side])
        builder.add_processor(self.other_name, self.other_spec, [self.other_side])
        builder.add_processor(self.name, self.merge_spec, [self.this_name, self.other_name])
        for store in self.other_store_names:
            builder.connect_processor_and_state_store(self.this_name, store)
        for store in self.this_store_names:
            builder.connect_processor_and_state_store(self.other_name, store)


def _consumed_serdes(consumed) -> dict:
    if consumed is None:
        return {}
    return {"key_serde": consumed.key_serde, "value_serde": consumed.value_serde,
            "timestamp_extractor": consumed.timestamp_extractor, "offset_reset": consumed.offset_reset}


class InternalStreamsBuilder:
    """Counter, logical graph and the write into :class:`InternalTopologyBuilder`."""

    def __init__(self) -> None:
        self._index = itertools.count()
        self._priority = itertools.count()
        self.root = RootNode("root")
        self.topology_builder = InternalTopologyBuilder()
        self.built = False
        # every add, in order (a node once per call): the optimizations read the order of first adds
        self.added_nodes: list[GraphNode] = []

    def new_processor_name(self, prefix: str) -> str:
        return f"{prefix}{next(self._index):010d}"

    def new_store_name(self, prefix: str) -> str:
        return f"{prefix}STATE-STORE-{next(self._index):010d}"

    def add_graph_node(self, parents: GraphNode | Sequence[GraphNode], child: GraphNode) -> None:
        if isinstance(parents, GraphNode):
            parents = [parents]
        if not parents:
            raise TopologyException("Parent node collection can't be empty")
        self.added_nodes.append(child)
        for parent in parents:
            parent.add_child(child)
            child.build_priority = next(self._priority)

    def _merge_duplicate_source_nodes(self) -> None:
        topics_to_node: dict[str, StreamSourceNode] = {}
        patterns_to_node: dict[str, StreamSourceNode] = {}
        for node in list(self.root.children):
            if not isinstance(node, StreamSourceNode):
                continue
            if node.pattern is not None:
                main = patterns_to_node.get(node.pattern)
                if main is None:
                    patterns_to_node[node.pattern] = node
                else:
                    main.merge(node)
                    self.root.remove_child(node)
                continue
            for topic in node.topics:
                main = topics_to_node.get(topic)
                if main is None:
                    topics_to_node[topic] = node
                elif main is not node:
                    if main.topics != node.topics:
                        raise TopologyException("Two source nodes are subscribed to overlapping but not equal input topics")
                    main.merge(node)
                    self.root.remove_child(node)
                    break

    def _rewrite_repartition_null_key_filters(self) -> None:
        """Repartition nodes with no null-key-relaxed join (left/outer) downstream drop null keys."""
        visited: set[int] = set()
        keeps_nulls: set[int] = set()
        repartition_nodes: list[RepartitionNode] = []
        # iterative post-order walk (deep topologies must not hit Python's recursion limit)
        stack: list[tuple[GraphNode, int]] = [(self.root, 0)]
        while stack:
            node, next_child = stack.pop()
            if next_child == 0 and id(node) in visited:
                continue
            if next_child > 0:
                child = node.children[next_child - 1]
                if "NULL_KEY_RELAXED_JOIN" in child.labels or id(child) in keeps_nulls:
                    keeps_nulls.add(id(node))
            if next_child < len(node.children):
                stack.append((node, next_child + 1))
                stack.append((node.children[next_child], 0))
                continue
            visited.add(id(node))
            if isinstance(node, RepartitionNode):
                repartition_nodes.append(node)
        for node in repartition_nodes:
            node.drop_null_keys = id(node) not in keeps_nulls

    def build(self, optimize: Optional[Callable[["InternalStreamsBuilder"], None]] = None) -> InternalTopologyBuilder:
        """Write the graph; ``optimize`` rewrites it first, once duplicate sources are merged, as Kafka
        Streams' ``buildAndOptimizeTopology`` runs ``optimizeTopology`` (see :mod:`.optimization`)."""
        if self.built:
            return self.topology_builder
        self._merge_duplicate_source_nodes()
        if optimize is not None:
            optimize(self)
        self._rewrite_repartition_null_key_filters()
        queue: list[tuple[int, int, GraphNode]] = []
        tie = itertools.count()
        heapq.heappush(queue, (-1, next(tie), self.root))
        while queue:
            _, _, node = heapq.heappop(queue)
            if node.all_parents_written() and not node.written:
                node.write(self.topology_builder)
                node.written = True
            for child in node.children:
                heapq.heappush(queue, (child.build_priority, next(tie), child))
        self.built = True
        return self.topology_builder
