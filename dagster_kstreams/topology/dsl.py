"""The public DSL: Kafka Streams' ``StreamsBuilder``, ``KStream``, ``KTable`` ... in snake_case.

Every method follows the Java implementation (``KStreamImpl``, ``KTableImpl``,
``KGroupedStreamImpl``, ``GroupedStreamAggregateBuilder``, ``KStreamImplJoin`` ...) call for call,
because the order in which names are drawn from the shared counter *is* the observable behaviour:
node names, store names and repartition topic names must come out exactly as Kafka Streams'.
"""
from __future__ import annotations

import re
from typing import Any, Callable, Optional, Sequence, Union

from .config import (
    Branched, Consumed, Grouped, Joined, Materialized, Named, Printed, Produced, Repartitioned,
    StreamJoined, Suppressed, TopologyException,
)
from .functions import FunctionForm as F
from .functions import UserFunction
from .graph import (
    GraphNode, InternalStreamsBuilder, KTableSourceSpec, NodeKind, ProcessorGraphNode, ProcessorSpec,
    RepartitionNode, StoreSpec, StoreType, StreamSinkNode, StreamSourceNode, StreamStreamJoinNode,
    TableSourceNode, TableTableJoinNode,
)
from .serdes import Serdes, WindowedSerde
from .windows import JoinWindows, SessionWindows, SlidingWindows, TimeWindows

__all__ = [
    "StreamsBuilder", "KStream", "KTable", "KGroupedStream", "KGroupedTable", "TimeWindowedKStream",
    "SessionWindowedKStream", "BranchedKStream",
]

# Kafka Streams' name prefixes
SOURCE_NAME = "KSTREAM-SOURCE-"
SINK_NAME = "KSTREAM-SINK-"
FILTER_NAME = "KSTREAM-FILTER-"
PEEK_NAME = "KSTREAM-PEEK-"
FLATMAP_NAME = "KSTREAM-FLATMAP-"
FLATMAPVALUES_NAME = "KSTREAM-FLATMAPVALUES-"
MAP_NAME = "KSTREAM-MAP-"
MAPVALUES_NAME = "KSTREAM-MAPVALUES-"
PRINTING_NAME = "KSTREAM-PRINTER-"
KEY_SELECT_NAME = "KSTREAM-KEY-SELECT-"
FOREACH_NAME = "KSTREAM-FOREACH-"
TO_KTABLE_NAME = "KSTREAM-TOTABLE-"
REPARTITION_NAME = "KSTREAM-REPARTITION-"
MERGE_NAME = "KSTREAM-MERGE-"
BRANCH_NAME = "KSTREAM-BRANCH-"
JOINTHIS_NAME = "KSTREAM-JOINTHIS-"
JOINOTHER_NAME = "KSTREAM-JOINOTHER-"
JOIN_NAME = "KSTREAM-JOIN-"
LEFTJOIN_NAME = "KSTREAM-LEFTJOIN-"
OUTERTHIS_NAME = "KSTREAM-OUTERTHIS-"
OUTEROTHER_NAME = "KSTREAM-OUTEROTHER-"
OUTERSHARED_NAME = "KSTREAM-OUTERSHARED-"
WINDOWED_NAME = "KSTREAM-WINDOWED-"
REDUCE_NAME = "KSTREAM-REDUCE-"
AGGREGATE_NAME = "KSTREAM-AGGREGATE-"
KTABLE_SOURCE_NAME = "KTABLE-SOURCE-"
KTABLE_FILTER_NAME = "KTABLE-FILTER-"
KTABLE_JOINTHIS_NAME = "KTABLE-JOINTHIS-"
KTABLE_JOINOTHER_NAME = "KTABLE-JOINOTHER-"
KTABLE_MAPVALUES_NAME = "KTABLE-MAPVALUES-"
KTABLE_MERGE_NAME = "KTABLE-MERGE-"
KTABLE_SELECT_NAME = "KTABLE-SELECT-"
KTABLE_SUPPRESS_NAME = "KTABLE-SUPPRESS-"
KTABLE_TOSTREAM_NAME = "KTABLE-TOSTREAM-"
KTABLE_AGGREGATE_NAME = "KTABLE-AGGREGATE-"
KTABLE_REDUCE_NAME = "KTABLE-REDUCE-"
REPARTITION_TOPIC_SUFFIX = "-repartition"
_GENERATED_NAME = re.compile(r"KSTREAM.*-[0-9]{10}")


def _name_of(named: Optional[Named]) -> Optional[str]:
    return None if named is None else named.name


def _or_generate(builder: InternalStreamsBuilder, name: Optional[str], prefix: str) -> str:
    """``NamedInternal.orElseGenerateWithPrefix``: a given name still burns one index."""
    generated = builder.new_processor_name(prefix)
    return name if name is not None else generated


def _suffix_or_generate(builder: InternalStreamsBuilder, name: Optional[str], suffix: str, prefix: str) -> str:
    generated = builder.new_processor_name(prefix)
    return name + suffix if name is not None else generated


def _parse(args: Sequence[Any], *types: type, operation: str) -> list:
    """Java overloads by type: return one slot per type, filled from ``args`` by isinstance."""
    slots: list = [None] * len(types)
    for arg in args:
        if arg is None:
            continue
        for position, kind in enumerate(types):
            if isinstance(arg, kind) and slots[position] is None:
                slots[position] = arg
                break
        else:
            expected = ", ".join(kind.__name__ for kind in types)
            raise TypeError(f"{operation}: unexpected argument {arg!r}; expected any of {expected}")
    return slots


def _create_repartitioned_source(builder: InternalStreamsBuilder, key_serde, value_serde, prefix: str,
                                 partitioner=None, partitions: Optional[int] = None,
                                 optimizable: bool = True) -> RepartitionNode:
    """``KStreamImpl.createRepartitionedSource``: always burns three indexes (sink, filter, source)."""
    topic = prefix if prefix.endswith(REPARTITION_TOPIC_SUFFIX) else prefix + REPARTITION_TOPIC_SUFFIX
    generated_sink = builder.new_processor_name(SINK_NAME)
    generated_filter = builder.new_processor_name(FILTER_NAME)
    generated_source = builder.new_processor_name(SOURCE_NAME)
    if _GENERATED_NAME.fullmatch(prefix):
        sink, source, null_filter = generated_sink, generated_source, generated_filter
    else:
        sink, source, null_filter = topic + "-sink", topic + "-source", topic + "-filter"
    return RepartitionNode(source, sink, null_filter, topic, key_serde, value_serde, partitions, partitioner,
                           optimizable)


class StreamsBuilder:
    """Entry point of the DSL (Kafka Streams' ``StreamsBuilder``)."""

    def __init__(self) -> None:
        self._builder = InternalStreamsBuilder()
        self._topology = None

    def stream(self, topics: Union[str, Sequence[str], "re.Pattern[str]"], consumed: Optional[Consumed] = None) -> "KStream":
        consumed = consumed or Consumed()
        builder = self._builder
        pattern = None
        if isinstance(topics, re.Pattern):
            pattern, topic_list = topics.pattern, None
        elif isinstance(topics, str):
            topic_list = [topics]
        else:
            topic_list = list(topics)
            if not topic_list:
                raise TopologyException("topics cannot be empty")
        for topic in topic_list or []:
            if not isinstance(topic, str) or not topic:
                raise TypeError(f"stream(): a topic name must be a non-empty str, got {topic!r}")
        name = _or_generate(builder, consumed.processor_name, SOURCE_NAME)
        node = StreamSourceNode(name, topic_list, pattern, consumed)
        builder.add_graph_node(builder.root, node)
        return KStream(name, consumed.key_serde, consumed.value_serde, {name}, False, node, builder)

    def table(self, topic: str, *args) -> "KTable":
        """``table(topic)``, ``table(topic, consumed)``, ``table(topic, materialized)``,
        ``table(topic, consumed, materialized)``."""
        consumed, materialized = _parse(args, Consumed, Materialized, operation="table()")
        builder = self._builder
        if not isinstance(topic, str) or not topic:
            raise TypeError(f"table(): the topic name must be a non-empty str, got {topic!r}")
        if consumed is None:
            consumed = Consumed(materialized.key_serde if materialized else None,
                                materialized.value_serde if materialized else None)
        materialized = materialized or Materialized()
        key_serde = consumed.key_serde or materialized.key_serde
        value_serde = consumed.value_serde or materialized.value_serde
        queryable = materialized.store_name is not None
        store_name = materialized.store_name or builder.new_store_name(topic + "-")
        source_name = _suffix_or_generate(builder, consumed.processor_name, "-source", SOURCE_NAME)
        table_source_name = _or_generate(builder, consumed.processor_name, KTABLE_SOURCE_NAME)
        store = StoreSpec(store_name, StoreType.KEY_VALUE, materialized.logging_enabled, key_serde, value_serde,
                          queryable=queryable, caching=materialized.caching_enabled)
        spec = KTableSourceSpec(NodeKind.TABLE_SOURCE, {"topic": topic, "store_name": store_name}, store, queryable)
        node = TableSourceNode(table_source_name, source_name, topic, consumed, spec)
        builder.add_graph_node(builder.root, node)
        return KTable(table_source_name, key_serde, value_serde, {source_name}, store_name if queryable else None,
                      node, builder, kind="source", source_spec=spec)

    def build(self):
        """Write the graph into a :class:`~dagster_kstreams.topology.view.Topology` (idempotent)."""
        from .view import Topology

        if self._topology is None:
            self._topology = Topology(self._builder.build())
        return self._topology


class _AbstractStream:
    def __init__(self, name: str, key_serde, value_serde, source_nodes: set, node: GraphNode,
                 builder: InternalStreamsBuilder):
        self.name = name
        self.key_serde = key_serde
        self.value_serde = value_serde
        self._source_nodes = set(source_nodes)
        self._node = node
        self._builder = builder

    def _ensure_copartition_with(self, others: Sequence["_AbstractStream"]) -> set:
        all_sources = set(self._source_nodes)
        for other in others:
            if other._builder is not self._builder:
                raise TopologyException("cannot join streams/tables from different StreamsBuilders")
            all_sources |= other._source_nodes
        self._builder.topology_builder.copartition_sources(all_sources)
        return all_sources

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name})"


class KStream(_AbstractStream):
    """A record stream (Kafka Streams' ``KStream``)."""

    def __init__(self, name, key_serde, value_serde, source_nodes, repartition_required, node, builder):
        super().__init__(name, key_serde, value_serde, source_nodes, node, builder)
        self.repartition_required = repartition_required
        self._repartition_node: Optional[RepartitionNode] = None

    def _child(self, name, key_serde, value_serde, repartition_required, node) -> "KStream":
        return KStream(name, key_serde, value_serde, self._source_nodes, repartition_required, node, self._builder)

    def _processor(self, prefix: str, named: Optional[Named], kind: NodeKind, params: dict) -> ProcessorGraphNode:
        name = _or_generate(self._builder, _name_of(named), prefix)
        node = ProcessorGraphNode(name, ProcessorSpec(kind, params))
        self._builder.add_graph_node(self._node, node)
        return node

    # -- stateless -------------------------------------------------------------------
    def filter(self, predicate, named: Optional[Named] = None) -> "KStream":
        fn = UserFunction.of(predicate, [F.KEY_VALUE], "KStream.filter", allow_column=True)
        node = self._processor(FILTER_NAME, named, NodeKind.FILTER, {"predicate": fn, "negate": False})
        return self._child(node.name, self.key_serde, self.value_serde, self.repartition_required, node)

    def filter_not(self, predicate, named: Optional[Named] = None) -> "KStream":
        fn = UserFunction.of(predicate, [F.KEY_VALUE], "KStream.filter_not", allow_column=True)
        node = self._processor(FILTER_NAME, named, NodeKind.FILTER, {"predicate": fn, "negate": True})
        return self._child(node.name, self.key_serde, self.value_serde, self.repartition_required, node)

    def _select_key_node(self, mapper, name: Optional[str], operation: str) -> ProcessorGraphNode:
        fn = UserFunction.of(mapper, [F.KEY_VALUE], operation, allow_column=True)
        node_name = _or_generate(self._builder, name, KEY_SELECT_NAME)
        node = ProcessorGraphNode(node_name, ProcessorSpec(NodeKind.SELECT_KEY, {"mapper": fn}))
        node.key_changing = True
        self._builder.add_graph_node(self._node, node)
        return node

    def select_key(self, mapper, named: Optional[Named] = None) -> "KStream":
        node = self._select_key_node(mapper, _name_of(named), "KStream.select_key")
        return self._child(node.name, None, self.value_serde, True, node)

    def map(self, mapper, named: Optional[Named] = None) -> "KStream":
        """``mapper(key, value) -> (new_key, new_value)``; or a ``(key_column, value_column)`` tuple."""
        fn = UserFunction.of(mapper, [F.KEY_VALUE], "KStream.map", allow_column=True)
        node = self._processor(MAP_NAME, named, NodeKind.MAP, {"mapper": fn})
        node.key_changing = True
        return self._child(node.name, None, None, True, node)

    def map_values(self, mapper, named: Optional[Named] = None) -> "KStream":
        fn = UserFunction.of(mapper, [F.VALUE, F.KEY_VALUE], "KStream.map_values", allow_column=True)
        node = self._processor(MAPVALUES_NAME, named, NodeKind.MAP_VALUES, {"mapper": fn})
        node.value_changing = True
        return self._child(node.name, self.key_serde, None, self.repartition_required, node)

    def flat_map(self, mapper, named: Optional[Named] = None) -> "KStream":
        """``mapper(key, value) -> iterable of (key, value)``."""
        fn = UserFunction.of(mapper, [F.KEY_VALUE], "KStream.flat_map", allow_column=True)
        node = self._processor(FLATMAP_NAME, named, NodeKind.FLAT_MAP, {"mapper": fn})
        node.key_changing = True
        return self._child(node.name, None, None, True, node)

    def flat_map_values(self, mapper, named: Optional[Named] = None) -> "KStream":
        fn = UserFunction.of(mapper, [F.VALUE, F.KEY_VALUE], "KStream.flat_map_values", allow_column=True)
        node = self._processor(FLATMAPVALUES_NAME, named, NodeKind.FLAT_MAP_VALUES, {"mapper": fn})
        node.value_changing = True
        return self._child(node.name, self.key_serde, None, self.repartition_required, node)

    def peek(self, action, named: Optional[Named] = None) -> "KStream":
        fn = UserFunction.of(action, [F.KEY_VALUE], "KStream.peek")
        node = self._processor(PEEK_NAME, named, NodeKind.PEEK, {"action": fn})
        return self._child(node.name, self.key_serde, self.value_serde, self.repartition_required, node)

    def foreach(self, action, named: Optional[Named] = None) -> None:
        fn = UserFunction.of(action, [F.KEY_VALUE], "KStream.foreach")
        self._processor(FOREACH_NAME, named, NodeKind.FOREACH, {"action": fn})

    def print(self, printed: Optional[Printed] = None) -> None:
        printed = printed or Printed()
        label = printed.label if printed.label is not None else self.name
        self._processor(PRINTING_NAME, Named(printed.name) if printed.name else None, NodeKind.PRINT,
                        {"label": label, "file_path": printed.file_path, "mapper": printed.mapper})

    def merge(self, stream: "KStream", named: Optional[Named] = None) -> "KStream":
        if not isinstance(stream, KStream):
            raise TypeError(f"KStream.merge expects a KStream, got {type(stream).__name__}")
        name = _or_generate(self._builder, _name_of(named), MERGE_NAME)
        node = ProcessorGraphNode(name, ProcessorSpec(NodeKind.MERGE, {}))
        node.merge_node = True
        self._builder.add_graph_node([self._node, stream._node], node)
        return KStream(name, None, None, self._source_nodes | stream._source_nodes,
                       self.repartition_required or stream.repartition_required, node, self._builder)

    def split(self, named: Optional[Named] = None) -> "BranchedKStream":
        return BranchedKStream(self, self.repartition_required, _name_of(named))

    def branch(self, *predicates, named: Optional[Named] = None) -> list["KStream"]:
        """Shorthand for ``split(named)`` with one ``branch`` per predicate; returns the branches in order."""
        branched = self.split(named)
        for predicate in predicates:
            branched.branch(predicate)
        branches = branched.no_default_branch()
        return list(branches.values())

    # -- repartitioning --------------------------------------------------------------
    def repartition(self, repartitioned: Optional[Repartitioned] = None) -> "KStream":
        repartitioned = repartitioned or Repartitioned()
        builder = self._builder
        name = repartitioned.name if repartitioned.name is not None else builder.new_processor_name(REPARTITION_NAME)
        value_serde = repartitioned.value_serde or self.value_serde
        key_serde = repartitioned.key_serde or self.key_serde
        node = _create_repartitioned_source(builder, repartitioned.key_serde, value_serde, name,
                                            repartitioned.stream_partitioner, repartitioned.number_of_partitions,
                                            optimizable=False)
        builder.add_graph_node(self._node, node)
        return KStream(node.source_name, key_serde, value_serde, {node.source_name}, False, node, builder)

    def _repartition_for_join(self, repartition_name: str, key_serde_override, value_serde_override) -> "KStream":
        key_serde = key_serde_override or self.key_serde
        value_serde = value_serde_override or self.value_serde
        node = _create_repartitioned_source(self._builder, key_serde, value_serde, repartition_name)
        if self._repartition_node is None or self.name != repartition_name:
            self._repartition_node = node
            self._builder.add_graph_node(self._node, node)
        source = self._repartition_node.source_name
        return KStream(node.source_name, key_serde, value_serde, {source}, False, self._repartition_node,
                       self._builder)

    # -- sinks -----------------------------------------------------------------------
    def to(self, topic: Union[str, Callable], produced: Optional[Produced] = None) -> None:
        """Write to ``topic``; a callable ``topic(key, value) -> str`` picks the topic per record."""
        produced = produced or Produced()
        if produced.key_serde is None:
            produced = produced.with_key_serde(self.key_serde)
        if produced.value_serde is None:
            produced = produced.with_value_serde(self.value_serde)
        name = _or_generate(self._builder, produced.processor_name, SINK_NAME)
        if isinstance(topic, str):
            if not topic:
                raise TopologyException("topic name cannot be empty")
            node = StreamSinkNode(name, topic, None, produced)
        elif callable(topic):
            node = StreamSinkNode(name, None, topic, produced)
        else:
            raise TypeError(f"KStream.to expects a topic name or a topic-name extractor, got {topic!r}")
        self._builder.add_graph_node(self._node, node)

    def to_table(self, *args) -> "KTable":
        """``to_table()``, ``to_table(named)``, ``to_table(materialized)``, ``to_table(named, materialized)``."""
        named, materialized = _parse(args, Named, Materialized, operation="KStream.to_table")
        builder = self._builder
        name = _or_generate(builder, _name_of(named), TO_KTABLE_NAME)
        materialized = materialized or Materialized(key_serde=self.key_serde, value_serde=self.value_serde)
        queryable = materialized.store_name is not None
        store_name = materialized.store_name or builder.new_store_name(TO_KTABLE_NAME)
        key_serde = materialized.key_serde or self.key_serde
        value_serde = materialized.value_serde or self.value_serde
        if self.repartition_required:
            parent = _create_repartitioned_source(builder, key_serde, value_serde, name)
            builder.add_graph_node(self._node, parent)
            source_nodes = {parent.source_name}
        else:
            parent = self._node
            source_nodes = self._source_nodes
        store = StoreSpec(store_name, StoreType.KEY_VALUE, materialized.logging_enabled, key_serde, value_serde,
                          queryable=queryable, caching=materialized.caching_enabled)
        spec = KTableSourceSpec(NodeKind.TO_TABLE, {"store_name": store_name}, store, queryable)
        node = ProcessorGraphNode(name, spec)
        builder.add_graph_node(parent, node)
        return KTable(name, key_serde, value_serde, source_nodes, store_name if queryable else None, node, builder,
                      kind="source", source_spec=spec)

    # -- grouping --------------------------------------------------------------------
    def group_by_key(self, grouped: Optional[Grouped] = None) -> "KGroupedStream":
        grouped = grouped or Grouped(None, self.key_serde, self.value_serde)
        return KGroupedStream(self.name, self._source_nodes, grouped, self.repartition_required, self._node,
                              self._builder)

    def group_by(self, key_selector, grouped: Optional[Grouped] = None) -> "KGroupedStream":
        grouped = grouped or Grouped(None, None, self.value_serde)
        node = self._select_key_node(key_selector, grouped.name, "KStream.group_by")
        return KGroupedStream(node.name, self._source_nodes, grouped, True, node, self._builder)

    # -- joins -----------------------------------------------------------------------
    def join(self, other, joiner, *args) -> "KStream":
        """Stream-stream ``join(other_stream, joiner, join_windows[, stream_joined])`` or
        stream-table ``join(table, joiner[, joined])``."""
        return self._join(other, joiner, args, left=False, outer=False, operation="KStream.join")

    def left_join(self, other, joiner, *args) -> "KStream":
        return self._join(other, joiner, args, left=True, outer=False, operation="KStream.left_join")

    def outer_join(self, other, joiner, *args) -> "KStream":
        if not isinstance(other, KStream):
            raise TypeError("KStream.outer_join is defined for another KStream only")
        return self._join(other, joiner, args, left=True, outer=True, operation="KStream.outer_join")

    def _join(self, other, joiner, args, left: bool, outer: bool, operation: str) -> "KStream":
        fn = UserFunction.of(joiner, [F.VALUE_VALUE, F.KEY_VALUE_VALUE], operation)
        if isinstance(other, KTable):
            (joined,) = _parse(args, Joined, operation=operation)
            return self._stream_table_join(other, fn, joined or Joined(), left)
        if isinstance(other, KStream):
            windows, stream_joined = _parse(args, JoinWindows, StreamJoined, operation=operation)
            if windows is None:
                raise TypeError(f"{operation} of two streams needs JoinWindows")
            return self._stream_stream_join(other, fn, windows, stream_joined or StreamJoined(), left, outer)
        raise TypeError(f"{operation} expects a KStream or a KTable, got {type(other).__name__}")

    def _stream_stream_join(self, other: "KStream", joiner: UserFunction, windows: JoinWindows,
                            stream_joined: StreamJoined, left_outer: bool, right_outer: bool) -> "KStream":
        builder = self._builder
        named = stream_joined.name
        this_stream, other_stream = self, other
        if this_stream.repartition_required:
            this_stream = this_stream._repartition_for_join(
                named + "-left" if named is not None else this_stream.name,
                stream_joined.key_serde, stream_joined.value_serde)
        if other_stream.repartition_required:
            other_stream = other_stream._repartition_for_join(
                named + "-right" if named is not None else other_stream.name,
                stream_joined.key_serde, stream_joined.other_value_serde)
        this_stream._ensure_copartition_with([other_stream])

        join_this_suffix = "-outer-this-join" if right_outer else "-this-join"
        join_other_suffix = "-outer-other-join" if left_outer else "-other-join"
        this_windowed_name = _suffix_or_generate(builder, named, "-this-windowed", WINDOWED_NAME)
        other_windowed_name = _suffix_or_generate(builder, named, "-other-windowed", WINDOWED_NAME)
        join_this_generated = builder.new_processor_name(OUTERTHIS_NAME if right_outer else JOINTHIS_NAME)
        join_other_generated = builder.new_processor_name(OUTEROTHER_NAME if left_outer else JOINOTHER_NAME)
        join_this_name = named + join_this_suffix if named is not None else join_this_generated
        join_other_name = named + join_other_suffix if named is not None else join_other_generated
        join_merge_name = _suffix_or_generate(builder, named, "-merge", MERGE_NAME)

        base = stream_joined.store_name
        retention = windows.size() + windows.grace_ms
        this_store = StoreSpec((base + join_this_suffix if base else join_this_generated) + "-store",
                               StoreType.JOIN_WINDOW, stream_joined.logging_enabled, stream_joined.key_serde,
                               stream_joined.value_serde, windows, retention)
        other_store = StoreSpec((base + join_other_suffix if base else join_other_generated) + "-store",
                                StoreType.JOIN_WINDOW, stream_joined.logging_enabled, stream_joined.key_serde,
                                stream_joined.other_value_serde, windows, retention)
        this_windowed = ProcessorGraphNode(this_windowed_name, ProcessorSpec(
            NodeKind.JOIN_WINDOW, {"store_name": this_store.name, "windows": windows, "side": "this"}, [this_store]))
        builder.add_graph_node(this_stream._node, this_windowed)
        other_windowed = ProcessorGraphNode(other_windowed_name, ProcessorSpec(
            NodeKind.JOIN_WINDOW, {"store_name": other_store.name, "windows": windows, "side": "other"},
            [other_store]))
        builder.add_graph_node(other_stream._node, other_windowed)

        outer_store = None
        if left_outer:
            suffix = "-outer-shared-join" if right_outer else "-left-shared-join"
            if base:
                outer_name = base + suffix
            else:
                prefix = OUTERTHIS_NAME if right_outer else JOINTHIS_NAME
                outer_name = OUTERSHARED_NAME + join_this_generated[len(prefix):]
            outer_store = StoreSpec(outer_name + "-store", StoreType.OUTER_JOIN_SHARED, stream_joined.logging_enabled,
                                    stream_joined.key_serde, None, windows, retention)
        join_type = "outer" if right_outer else ("left" if left_outer else "inner")
        common = {"joiner": joiner, "windows": windows, "join_type": join_type,
                  "this_store_name": this_store.name, "other_store_name": other_store.name,
                  "outer_store_name": outer_store.name if outer_store else None}
        this_spec = ProcessorSpec(NodeKind.STREAM_STREAM_JOIN, {**common, "side": "this", "outer": left_outer},
                                  [other_store] + ([outer_store] if outer_store else []))
        other_spec = ProcessorSpec(NodeKind.STREAM_STREAM_JOIN, {**common, "side": "other", "outer": right_outer},
                                   [this_store] + ([outer_store] if outer_store else []))
        merge_spec = ProcessorSpec(NodeKind.STREAM_STREAM_JOIN_MERGE, dict(common))
        join_node = StreamStreamJoinNode(join_merge_name, join_this_name, join_other_name, this_spec, other_spec,
                                         merge_spec, this_windowed_name, other_windowed_name)
        if left_outer or right_outer:
            join_node.labels.add("NULL_KEY_RELAXED_JOIN")
        builder.add_graph_node([this_stream._node, other_stream._node], join_node)
        return KStream(join_merge_name, stream_joined.key_serde, None,
                       this_stream._source_nodes | other_stream._source_nodes, False, join_node, builder)

    def _stream_table_join(self, table: "KTable", joiner: UserFunction, joined: Joined, left: bool) -> "KStream":
        if table._builder is not self._builder:
            raise TopologyException("cannot join streams/tables from different StreamsBuilders")
        if joined.grace_period is not None:
            raise TopologyException("a stream-table join grace period needs a versioned KTable, which is not supported")
        stream = self
        if self.repartition_required:
            stream = self._repartition_for_join(joined.name if joined.name is not None else self.name,
                                                joined.key_serde, joined.value_serde)
        all_sources = stream._ensure_copartition_with([table])
        name = _or_generate(self._builder, joined.name, LEFTJOIN_NAME if left else JOIN_NAME)
        store_names = table._value_getter_store_names()
        spec = ProcessorSpec(NodeKind.STREAM_TABLE_JOIN, {
            "joiner": joiner, "join_type": "left" if left else "inner", "table_store_names": list(store_names),
            "table": table.name})
        node = ProcessorGraphNode(name, spec, connected_stores=store_names)
        self._builder.add_graph_node(stream._node, node)
        if left:
            node.labels.add("NULL_KEY_RELAXED_JOIN")
        return KStream(name, joined.key_serde or stream.key_serde, None, all_sources, False, node, self._builder)


class BranchedKStream:
    """Result of ``KStream.split()`` (Kafka Streams' ``BranchedKStream``)."""

    def __init__(self, source: KStream, repartition_required: bool, name: Optional[str]):
        self._source = source
        self._builder = source._builder
        self._repartition_required = repartition_required
        self._splitter_name = _or_generate(self._builder, name, BRANCH_NAME)
        self._predicates: list[UserFunction] = []
        self._child_names: list[str] = []
        self._outputs: dict[str, KStream] = {}
        self._spec = ProcessorSpec(NodeKind.BRANCH, {"predicates": self._predicates, "children": self._child_names})
        self._node = ProcessorGraphNode(self._splitter_name, self._spec)
        self._builder.add_graph_node(source._node, self._node)
        self._closed = False

    def branch(self, predicate, branched: Optional[Branched] = None) -> "BranchedKStream":
        if self._closed:
            raise TopologyException("no branch can be added after default_branch()/no_default_branch()")
        self._predicates.append(UserFunction.of(predicate, [F.KEY_VALUE], "BranchedKStream.branch", allow_column=True))
        self._create_branch(branched or Branched(), len(self._predicates))
        return self

    def default_branch(self, branched: Optional[Branched] = None) -> dict[str, KStream]:
        self._create_branch(branched or Branched(), 0)
        self._closed = True
        return self._outputs

    def no_default_branch(self) -> dict[str, KStream]:
        self._closed = True
        return self._outputs

    def _create_branch(self, branched: Branched, index: int) -> None:
        child_name = self._splitter_name + (branched.name if branched.name is not None else str(index))
        self._child_names.append(child_name)
        self._builder.new_processor_name(child_name)
        node = ProcessorGraphNode(child_name, ProcessorSpec(NodeKind.BRANCH_CHILD, {"index": index}))
        self._builder.add_graph_node(self._node, node)
        source = self._source
        branch = KStream(child_name, source.key_serde, source.value_serde, source._source_nodes,
                         self._repartition_required, node, self._builder)
        if branched.chain_function is not None:
            transformed = branched.chain_function(branch)
            if transformed is not None:
                self._outputs[child_name] = transformed
        elif branched.chain_consumer is not None:
            branched.chain_consumer(branch)
        else:
            self._outputs[child_name] = branch


class KTable(_AbstractStream):
    """A changelog stream (Kafka Streams' ``KTable``)."""

    def __init__(self, name, key_serde, value_serde, source_nodes, queryable_store_name, node, builder,
                 kind: str, source_spec: Optional[KTableSourceSpec] = None, parents: Sequence["KTable"] = (),
                 store_name: Optional[str] = None):
        super().__init__(name, key_serde, value_serde, source_nodes, node, builder)
        self.queryable_store_name = queryable_store_name
        self._kind = kind  # source | filter | map_values | aggregate | join | suppress
        self._source_spec = source_spec
        self._parents = list(parents)
        self._store_name = store_name
        self._send_old_values = False

    # Kafka's valueGetterSupplier().storeNames() and enableSendingOldValues(): they decide which
    # table sources get a store.
    def _value_getter_store_names(self) -> list[str]:
        if self._kind == "source":
            self._source_spec.materialize()
            return [self._source_spec.store.name]
        if self._kind == "aggregate":
            return [self._store_name]
        if self._kind in ("filter", "map_values"):
            if self.queryable_store_name is not None:
                return [self.queryable_store_name]
            return self._parents[0]._value_getter_store_names()
        if self._kind == "join":
            if self.queryable_store_name is not None:
                return [self.queryable_store_name]
            from .describe import java_hash_order

            names = self._parents[0]._value_getter_store_names() + self._parents[1]._value_getter_store_names()
            return java_hash_order(names, max(len(names), 16))
        if self._kind == "suppress":
            return [self._store_name] + self._parents[0]._value_getter_store_names()
        raise AssertionError(self._kind)

    def _enable_sending_old_values(self, force: bool) -> bool:
        if self._send_old_values:
            return True
        if self._kind == "source":
            if not force and not self._source_spec.materialized:
                return False
            self._source_spec.materialize()
        elif self._kind in ("filter", "map_values"):
            if self.queryable_store_name is None and not self._parents[0]._enable_sending_old_values(force):
                return False
        elif self._kind == "join":
            self._parents[0]._enable_sending_old_values(True)
            self._parents[1]._enable_sending_old_values(True)
        elif self._kind == "suppress":
            if not self._parents[0]._enable_sending_old_values(force):
                return False
        self._send_old_values = True
        return True

    def _derived(self, prefix: str, kind: NodeKind, params: dict, named: Optional[Named],
                 materialized: Optional[Materialized], table_kind: str, value_serde) -> "KTable":
        builder = self._builder
        store = None
        queryable_name = None
        key_serde = self.key_serde
        if materialized is not None:
            if materialized.store_name is None:
                builder.new_store_name(prefix)  # burned, as Kafka does, though no store is created
            key_serde = materialized.key_serde or self.key_serde
            value_serde = materialized.value_serde or (self.value_serde if table_kind == "filter" else None)
            queryable_name = materialized.store_name
            if queryable_name is not None:
                store = StoreSpec(queryable_name, StoreType.KEY_VALUE, materialized.logging_enabled, key_serde,
                                  value_serde, queryable=True, caching=materialized.caching_enabled)
        name = _or_generate(builder, _name_of(named), prefix)
        spec = ProcessorSpec(kind, {**params, "store_name": queryable_name}, [store] if store else [])
        node = ProcessorGraphNode(name, spec)
        builder.add_graph_node(self._node, node)
        return KTable(name, key_serde, value_serde, self._source_nodes, queryable_name, node, builder,
                      kind=table_kind, parents=[self])

    def filter(self, predicate, *args) -> "KTable":
        """``filter(predicate[, named][, materialized])``."""
        named, materialized = _parse(args, Named, Materialized, operation="KTable.filter")
        fn = UserFunction.of(predicate, [F.KEY_VALUE], "KTable.filter", allow_column=True)
        return self._derived(KTABLE_FILTER_NAME, NodeKind.TABLE_FILTER, {"predicate": fn, "negate": False}, named,
                             materialized, "filter", self.value_serde)

    def filter_not(self, predicate, *args) -> "KTable":
        named, materialized = _parse(args, Named, Materialized, operation="KTable.filter_not")
        fn = UserFunction.of(predicate, [F.KEY_VALUE], "KTable.filter_not", allow_column=True)
        return self._derived(KTABLE_FILTER_NAME, NodeKind.TABLE_FILTER, {"predicate": fn, "negate": True}, named,
                             materialized, "filter", self.value_serde)

    def map_values(self, mapper, *args) -> "KTable":
        """``map_values(mapper[, named][, materialized])``; ``mapper(value)`` or ``mapper(key, value)``."""
        named, materialized = _parse(args, Named, Materialized, operation="KTable.map_values")
        fn = UserFunction.of(mapper, [F.VALUE, F.KEY_VALUE], "KTable.map_values", allow_column=True)
        return self._derived(KTABLE_MAPVALUES_NAME, NodeKind.TABLE_MAP_VALUES, {"mapper": fn}, named, materialized,
                             "map_values", None)

    def to_stream(self, *args) -> KStream:
        """``to_stream([named])`` or ``to_stream(key_mapper[, named])`` (then ``select_key``)."""
        mapper = None
        if args and not isinstance(args[0], Named) and args[0] is not None:
            mapper, args = args[0], args[1:]
        (named,) = _parse(args, Named, operation="KTable.to_stream")
        name = _or_generate(self._builder, _name_of(named), KTABLE_TOSTREAM_NAME)
        node = ProcessorGraphNode(name, ProcessorSpec(NodeKind.TABLE_TO_STREAM, {}))
        self._builder.add_graph_node(self._node, node)
        stream = KStream(name, self.key_serde, self.value_serde, self._source_nodes, False, node, self._builder)
        return stream.select_key(mapper) if mapper is not None else stream

    def group_by(self, selector, grouped: Optional[Grouped] = None) -> "KGroupedTable":
        """``selector(key, value) -> (new_key, new_value)``."""
        grouped = grouped or Grouped()
        fn = UserFunction.of(selector, [F.KEY_VALUE], "KTable.group_by", allow_column=True)
        name = _or_generate(self._builder, grouped.name, KTABLE_SELECT_NAME)
        node = ProcessorGraphNode(name, ProcessorSpec(NodeKind.TABLE_GROUP_BY_MAP, {"selector": fn}))
        self._builder.add_graph_node(self._node, node)
        self._enable_sending_old_values(True)
        return KGroupedTable(self._builder, name, self._source_nodes, grouped, node)

    def suppress(self, suppressed: Suppressed) -> "KTable":
        if not isinstance(suppressed, Suppressed):
            raise TypeError("KTable.suppress expects a Suppressed")
        builder = self._builder
        name = suppressed.name if suppressed.name is not None else builder.new_processor_name(KTABLE_SUPPRESS_NAME)
        grace_ms = None
        if suppressed.kind == "until_window_closes":
            grace_ms = _find_window_grace(self._node)
        store_name = suppressed.name + "-store" if suppressed.name is not None else builder.new_store_name(
            KTABLE_SUPPRESS_NAME)
        store = StoreSpec(store_name, StoreType.SUPPRESSION_BUFFER, suppressed.buffer_config.logging_enabled,
                          self.key_serde, self.value_serde)
        self._enable_sending_old_values(True)
        wait = suppressed.time_to_wait_for_more_events
        spec = ProcessorSpec(NodeKind.SUPPRESS, {
            "suppressed": suppressed, "store_name": store_name, "until_window_closes": grace_ms is not None,
            "grace_ms": grace_ms, "time_to_wait_ms": None if wait is None else wait // _MS,
            "buffer_config": suppressed.buffer_config}, [store])
        node = ProcessorGraphNode(name, spec)
        builder.add_graph_node(self._node, node)
        return KTable(name, self.key_serde, self.value_serde, {self.name}, None, node, builder, kind="suppress",
                      parents=[self], store_name=store_name)

    def join(self, other: "KTable", joiner, *args) -> "KTable":
        """``join(other_table, joiner[, named][, materialized])``."""
        return self._table_join(other, joiner, args, False, False, "KTable.join")

    def left_join(self, other: "KTable", joiner, *args) -> "KTable":
        return self._table_join(other, joiner, args, True, False, "KTable.left_join")

    def outer_join(self, other: "KTable", joiner, *args) -> "KTable":
        return self._table_join(other, joiner, args, True, True, "KTable.outer_join")

    def _table_join(self, other, joiner, args, left_outer: bool, right_outer: bool, operation: str) -> "KTable":
        if not isinstance(other, KTable):
            raise TypeError(f"{operation} expects a KTable, got {type(other).__name__}")
        if other._builder is not self._builder:
            raise TopologyException("cannot join tables from different StreamsBuilders")
        named, materialized = _parse(args, Named, Materialized, operation=operation)
        fn = UserFunction.of(joiner, [F.VALUE_VALUE], operation, allow_column=False)
        builder = self._builder
        store_name = None
        if materialized is not None:
            store_name = materialized.store_name or builder.new_store_name(KTABLE_MERGE_NAME)
        merge_name = _or_generate(builder, _name_of(named), KTABLE_MERGE_NAME)
        all_sources = self._ensure_copartition_with([other])
        if left_outer:
            self._enable_sending_old_values(True)
        if right_outer:
            other._enable_sending_old_values(True)
        this_store_names = self._value_getter_store_names()
        other_store_names = other._value_getter_store_names()
        join_this_name = _suffix_or_generate(builder, _name_of(named), "-join-this", KTABLE_JOINTHIS_NAME)
        join_other_name = _suffix_or_generate(builder, _name_of(named), "-join-other", KTABLE_JOINOTHER_NAME)
        key_serde = (materialized.key_serde if materialized and materialized.key_serde else self.key_serde)
        value_serde = materialized.value_serde if materialized else None
        join_type = "outer" if right_outer else ("left" if left_outer else "inner")
        common = {"joiner": fn, "join_type": join_type, "this_store_names": list(this_store_names),
                  "other_store_names": list(other_store_names)}
        store = None
        if store_name is not None:
            store = StoreSpec(store_name, StoreType.KEY_VALUE, materialized.logging_enabled, key_serde, value_serde,
                              queryable=True, caching=materialized.caching_enabled)
        node = TableTableJoinNode(
            merge_name, join_this_name, join_other_name,
            ProcessorSpec(NodeKind.TABLE_TABLE_JOIN, {**common, "side": "this"}),
            ProcessorSpec(NodeKind.TABLE_TABLE_JOIN, {**common, "side": "other"}),
            ProcessorSpec(NodeKind.TABLE_TABLE_JOIN_MERGE, {**common, "store_name": store_name},
                          [store] if store else []),
            self.name, other.name, this_store_names, other_store_names)
        builder.add_graph_node(self._node, node)
        builder.add_graph_node(other._node, node)
        return KTable(merge_name, key_serde, value_serde, all_sources, store_name, node, builder, kind="join",
                      parents=[self, other])


_MS = __import__("datetime").timedelta(milliseconds=1)


def _find_window_grace(node: GraphNode, chain: str = "") -> int:
    """``GraphGraceSearchUtil.findAndVerifyWindowGrace``."""
    if node is None:
        raise TopologyException(f"Window close time is only defined for windowed computations. Got [{chain}].")
    grace = getattr(node, "grace_ms", None)
    if grace is not None:
        return grace
    new_chain = node.name if chain == "" else node.name + "->" + chain
    if not node.parents:
        raise TopologyException(f"Window close time is only defined for windowed computations. Got [{new_chain}].")
    return max(_find_window_grace(parent, new_chain) for parent in node.parents)


class _GroupedStreamAggregateBuilder:
    """``GroupedStreamAggregateBuilder``: inserts the repartition topic if needed, then the aggregate."""

    def __init__(self, builder: InternalStreamsBuilder, grouped: Grouped, repartition_required: bool,
                 source_nodes: set, name: str, node: GraphNode):
        self.builder = builder
        self.key_serde = grouped.key_serde
        self.value_serde = grouped.value_serde
        self.repartition_required = repartition_required
        self.user_repartition_name = grouped.name
        self.source_nodes = source_nodes
        self.name = name
        self.node = node
        self.repartition_node: Optional[RepartitionNode] = None

    def build(self, function_name: str, store: StoreSpec, spec: ProcessorSpec, queryable_name: Optional[str],
              key_serde, value_serde, grace_ms: Optional[int] = None) -> KTable:
        source_name = self.name
        parent = self.node
        if self.repartition_required:
            prefix = self.user_repartition_name if self.user_repartition_name is not None else store.name
            repartition = _create_repartitioned_source(self.builder, self.key_serde, self.value_serde, prefix)
            if self.repartition_node is None or self.user_repartition_name is None:
                self.repartition_node = repartition
            source_name = repartition.source_name
            self.builder.add_graph_node(parent, self.repartition_node)
            parent = self.repartition_node
        node = ProcessorGraphNode(function_name, spec)
        if grace_ms is not None:
            node.grace_ms = grace_ms
        self.builder.add_graph_node(parent, node)
        source_nodes = self.source_nodes if source_name == self.name else {source_name}
        return KTable(function_name, key_serde, value_serde, source_nodes, queryable_name, node, self.builder,
                      kind="aggregate", store_name=store.name)


def _materialized(materialized: Optional[Materialized], builder: InternalStreamsBuilder, prefix: str):
    """``MaterializedInternal(materialized, builder, prefix)``: (materialized, store name, queryable)."""
    materialized = materialized or Materialized()
    queryable = materialized.store_name is not None
    store_name = materialized.store_name or builder.new_store_name(prefix)
    return materialized, store_name, queryable


class KGroupedStream(_AbstractStream):
    """Result of ``group_by``/``group_by_key`` (Kafka Streams' ``KGroupedStream``)."""

    def __init__(self, name, source_nodes, grouped: Grouped, repartition_required: bool, node, builder):
        super().__init__(name, grouped.key_serde, grouped.value_serde, source_nodes, node, builder)
        self.repartition_required = repartition_required
        self._aggregate_builder = _GroupedStreamAggregateBuilder(builder, grouped, repartition_required,
                                                                 source_nodes, name, node)

    def _aggregate(self, prefix: str, named: Optional[Named], materialized: Materialized, store_name: str,
                   queryable: bool, params: dict, value_serde) -> KTable:
        name = _or_generate(self._builder, _name_of(named), prefix)
        key_serde = materialized.key_serde or self.key_serde
        store = StoreSpec(store_name, StoreType.KEY_VALUE, materialized.logging_enabled, key_serde, value_serde,
                          queryable=queryable, caching=materialized.caching_enabled)
        spec = ProcessorSpec(NodeKind.AGGREGATE, {**params, "store_name": store_name}, [store])
        return self._aggregate_builder.build(name, store, spec, store_name if queryable else None, key_serde,
                                             value_serde)

    def count(self, *args) -> KTable:
        """``count([named][, materialized])``."""
        named, materialized = _parse(args, Named, Materialized, operation="KGroupedStream.count")
        if materialized is not None and materialized.store_name is None:
            self._builder.new_store_name(AGGREGATE_NAME)
        materialized, store_name, queryable = _materialized(materialized, self._builder, AGGREGATE_NAME)
        return self._aggregate(AGGREGATE_NAME, named, materialized, store_name, queryable,
                               {"operation": "count"}, materialized.value_serde or Serdes.Long())

    def reduce(self, reducer, *args) -> KTable:
        """``reduce(reducer[, named][, materialized])``; ``reducer(aggregate, value)``."""
        named, materialized = _parse(args, Named, Materialized, operation="KGroupedStream.reduce")
        fn = UserFunction.of(reducer, [F.REDUCER], "KGroupedStream.reduce")
        materialized, store_name, queryable = _materialized(materialized, self._builder, REDUCE_NAME)
        return self._aggregate(REDUCE_NAME, named, materialized, store_name, queryable,
                               {"operation": "reduce", "reducer": fn}, materialized.value_serde or self.value_serde)

    def aggregate(self, initializer, aggregator, *args) -> KTable:
        """``aggregate(initializer, aggregator[, named][, materialized])``; ``aggregator(key, value, aggregate)``."""
        named, materialized = _parse(args, Named, Materialized, operation="KGroupedStream.aggregate")
        init = UserFunction.of(initializer, [F.NO_ARGS], "KGroupedStream.aggregate initializer")
        agg = UserFunction.of(aggregator, [F.AGGREGATOR], "KGroupedStream.aggregate aggregator")
        materialized, store_name, queryable = _materialized(materialized, self._builder, AGGREGATE_NAME)
        return self._aggregate(AGGREGATE_NAME, named, materialized, store_name, queryable,
                               {"operation": "aggregate", "initializer": init, "aggregator": agg},
                               materialized.value_serde)

    def windowed_by(self, windows) -> Union["TimeWindowedKStream", "SessionWindowedKStream"]:
        if isinstance(windows, SessionWindows):
            return SessionWindowedKStream(self, windows)
        if isinstance(windows, (TimeWindows, SlidingWindows)):
            return TimeWindowedKStream(self, windows)
        raise TypeError(f"windowed_by expects TimeWindows, SlidingWindows or SessionWindows, got {windows!r}")


class _WindowedKStream:
    _store_type = StoreType.WINDOW
    # Kafka's count(named, materialized) burns an index when the store is unnamed, except for
    # sliding windows.
    def __init__(self, grouped: KGroupedStream, windows):
        self._grouped = grouped
        self._builder = grouped._builder
        self.windows = windows

    @property
    def _burns_on_unnamed_count(self) -> bool:
        return not isinstance(self.windows, SlidingWindows)

    def _grace_ms(self) -> int:
        if isinstance(self.windows, SessionWindows):
            return self.windows.grace_ms + self.windows.inactivity_gap_ms
        return self.windows.grace_ms

    def _retention_ms(self, materialized: Materialized) -> int:
        if materialized.retention is not None:
            return materialized.retention // _MS
        windows = self.windows
        if isinstance(windows, TimeWindows):
            return windows.size_ms + windows.grace_ms
        if isinstance(windows, SlidingWindows):
            return 2 * windows.time_difference_ms + windows.grace_ms
        return windows.inactivity_gap_ms + windows.grace_ms

    def _windowed_key_serde(self, key_serde):
        if key_serde is None:
            return None
        if isinstance(self.windows, SessionWindows):
            return WindowedSerde(key_serde, session=True)
        size = self.windows.size_ms if isinstance(self.windows, TimeWindows) else self.windows.time_difference_ms
        return WindowedSerde(key_serde, window_size_ms=size)

    def _aggregate(self, prefix: str, named, materialized, store_name, queryable, params, value_serde) -> KTable:
        grouped = self._grouped
        name = _or_generate(self._builder, _name_of(named), prefix)
        key_serde = materialized.key_serde or grouped.key_serde
        store = StoreSpec(store_name, self._store_type, materialized.logging_enabled, key_serde, value_serde,
                          self.windows, self._retention_ms(materialized), queryable=queryable,
                          caching=materialized.caching_enabled)
        spec = ProcessorSpec(NodeKind.WINDOWED_AGGREGATE,
                             {**params, "store_name": store_name, "windows": self.windows,
                              "emit_strategy": "on_window_update"}, [store])
        return grouped._aggregate_builder.build(name, store, spec, store_name if queryable else None,
                                                self._windowed_key_serde(key_serde), value_serde, self._grace_ms())

    def count(self, *args) -> KTable:
        named, materialized = _parse(args, Named, Materialized, operation="count")
        if materialized is not None and materialized.store_name is None and self._burns_on_unnamed_count:
            self._builder.new_store_name(AGGREGATE_NAME)
        materialized, store_name, queryable = _materialized(materialized, self._builder, AGGREGATE_NAME)
        return self._aggregate(AGGREGATE_NAME, named, materialized, store_name, queryable, {"operation": "count"},
                               materialized.value_serde or Serdes.Long())

    def reduce(self, reducer, *args) -> KTable:
        named, materialized = _parse(args, Named, Materialized, operation="reduce")
        fn = UserFunction.of(reducer, [F.REDUCER], "reduce")
        materialized, store_name, queryable = _materialized(materialized, self._builder, REDUCE_NAME)
        return self._aggregate(REDUCE_NAME, named, materialized, store_name, queryable,
                               {"operation": "reduce", "reducer": fn},
                               materialized.value_serde or self._grouped.value_serde)


class TimeWindowedKStream(_WindowedKStream):
    """``windowed_by(TimeWindows | SlidingWindows)`` (Kafka Streams' ``TimeWindowedKStream``)."""

    def aggregate(self, initializer, aggregator, *args) -> KTable:
        named, materialized = _parse(args, Named, Materialized, operation="aggregate")
        init = UserFunction.of(initializer, [F.NO_ARGS], "aggregate initializer")
        agg = UserFunction.of(aggregator, [F.AGGREGATOR], "aggregate aggregator")
        materialized, store_name, queryable = _materialized(materialized, self._builder, AGGREGATE_NAME)
        return self._aggregate(AGGREGATE_NAME, named, materialized, store_name, queryable,
                               {"operation": "aggregate", "initializer": init, "aggregator": agg},
                               materialized.value_serde)


class SessionWindowedKStream(_WindowedKStream):
    """``windowed_by(SessionWindows)`` (Kafka Streams' ``SessionWindowedKStream``)."""

    _store_type = StoreType.SESSION

    def aggregate(self, initializer, aggregator, session_merger, *args) -> KTable:
        named, materialized = _parse(args, Named, Materialized, operation="aggregate")
        init = UserFunction.of(initializer, [F.NO_ARGS], "aggregate initializer")
        agg = UserFunction.of(aggregator, [F.AGGREGATOR], "aggregate aggregator")
        merger = UserFunction.of(session_merger, [F.MERGER], "aggregate session merger")
        materialized, store_name, queryable = _materialized(materialized, self._builder, AGGREGATE_NAME)
        return self._aggregate(AGGREGATE_NAME, named, materialized, store_name, queryable,
                               {"operation": "aggregate", "initializer": init, "aggregator": agg, "merger": merger},
                               materialized.value_serde)


class KGroupedTable(_AbstractStream):
    """Result of ``KTable.group_by`` (Kafka Streams' ``KGroupedTable``)."""

    def __init__(self, builder, name, source_nodes, grouped: Grouped, node):
        super().__init__(name, grouped.key_serde, grouped.value_serde, source_nodes, node, builder)
        self._user_repartition_name = grouped.name
        self._repartition_node: Optional[RepartitionNode] = None

    def _aggregate(self, function_prefix: str, named: Optional[Named], materialized: Materialized, store_name: str,
                   queryable: bool, params: dict, value_serde) -> KTable:
        builder = self._builder
        name = _name_of(named)
        sink_name = _suffix_or_generate(builder, name, "-sink", SINK_NAME)
        source_name = _suffix_or_generate(builder, name, "-source", SOURCE_NAME)
        function_name = _or_generate(builder, name, function_prefix)
        topic = (self._user_repartition_name if self._user_repartition_name is not None else store_name) \
            + REPARTITION_TOPIC_SUFFIX
        if self._repartition_node is None or self._user_repartition_name is None:
            self._repartition_node = RepartitionNode(source_name, sink_name, None, topic, self.key_serde,
                                                     self.value_serde)
        builder.add_graph_node(self._node, self._repartition_node)
        key_serde = materialized.key_serde or self.key_serde
        store = StoreSpec(store_name, StoreType.KEY_VALUE, materialized.logging_enabled, key_serde, value_serde,
                          queryable=queryable)
        spec = ProcessorSpec(NodeKind.TABLE_AGGREGATE, {**params, "store_name": store_name}, [store])
        node = ProcessorGraphNode(function_name, spec)
        builder.add_graph_node(self._repartition_node, node)
        return KTable(function_name, key_serde, value_serde, {source_name}, store_name if queryable else None, node,
                      builder, kind="aggregate", store_name=store_name)

    def count(self, *args) -> KTable:
        named, materialized = _parse(args, Named, Materialized, operation="KGroupedTable.count")
        materialized, store_name, queryable = _materialized(materialized, self._builder, KTABLE_AGGREGATE_NAME)
        return self._aggregate(KTABLE_AGGREGATE_NAME, named, materialized, store_name, queryable,
                               {"operation": "count"}, materialized.value_serde or Serdes.Long())

    def reduce(self, adder, subtractor, *args) -> KTable:
        named, materialized = _parse(args, Named, Materialized, operation="KGroupedTable.reduce")
        add = UserFunction.of(adder, [F.REDUCER], "KGroupedTable.reduce adder")
        sub = UserFunction.of(subtractor, [F.REDUCER], "KGroupedTable.reduce subtractor")
        materialized, store_name, queryable = _materialized(materialized, self._builder, KTABLE_AGGREGATE_NAME)
        return self._aggregate(KTABLE_REDUCE_NAME, named, materialized, store_name, queryable,
                               {"operation": "reduce", "adder": add, "subtractor": sub},
                               materialized.value_serde or self.value_serde)

    def aggregate(self, initializer, adder, subtractor, *args) -> KTable:
        named, materialized = _parse(args, Named, Materialized, operation="KGroupedTable.aggregate")
        init = UserFunction.of(initializer, [F.NO_ARGS], "KGroupedTable.aggregate initializer")
        add = UserFunction.of(adder, [F.AGGREGATOR], "KGroupedTable.aggregate adder")
        sub = UserFunction.of(subtractor, [F.AGGREGATOR], "KGroupedTable.aggregate subtractor")
        materialized, store_name, queryable = _materialized(materialized, self._builder, KTABLE_AGGREGATE_NAME)
        return self._aggregate(KTABLE_AGGREGATE_NAME, named, materialized, store_name, queryable,
                               {"operation": "aggregate", "initializer": init, "adder": add, "subtractor": sub},
                               materialized.value_serde)
