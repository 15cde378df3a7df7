"""The stream family: ``KStream`` (a record stream), as Kafka Streams' ``KStreamImpl`` builds it; what
``KStream.split`` returns is in :mod:`.branched_kstream`.

Every method draws names in Kafka Streams' order (see :mod:`.abstract_stream`).
"""
from __future__ import annotations

from typing import Callable, Optional, Union

from .abstract_stream import (
    FILTER_NAME, FLATMAP_NAME, FLATMAPVALUES_NAME, FOREACH_NAME, JOIN_NAME, KEY_SELECT_NAME,
    LEFTJOIN_NAME, MAP_NAME, MAPVALUES_NAME, MERGE_NAME, PEEK_NAME, PRINTING_NAME, REPARTITION_NAME, SINK_NAME,
    TO_KTABLE_NAME, _AbstractStream, _create_repartitioned_source, _name_of, _or_generate, _parse,
)
from .branched_kstream import BranchedKStream
from .branched_printed import Printed
from .consumed_produced import Produced
from .durations import duration_millis
from .errors import TopologyException
from .functions import FunctionForm as F
from .functions import UserFunction
from .global_ktable import GlobalKTable, add_global_table_join
from .graph import ProcessorGraphNode, RepartitionNode, StreamSinkNode
from .grouped import KGroupedStream
from .grouped_repartitioned import Grouped, Repartitioned
from .joined import Joined, StreamJoined
from .kstream_join import add_stream_stream_join
from .ktable import KTable
from .materialized import Materialized
from .named import Named
from .node_specs import KTableSourceSpec, NodeKind, ProcessorSpec, StoreSpec, StoreType
from .processor_api import PROCESSOR_NAME, PROCESSVALUES_NAME, user_processor_spec
from .topic_name_extractor import TopicNameExtractor, topic_name_function
from .windows import JoinWindows

__all__ = ["KStream"]


class KStream(_AbstractStream):
    """A record stream (Kafka Streams' ``KStream``)."""

    def __init__(self, name, key_serde, value_serde, source_nodes, repartition_required, node, builder):
        super().__init__(name, key_serde, value_serde, source_nodes, node, builder)
        self.repartition_required = repartition_required
        self._repartition_node: Optional[RepartitionNode] = None

    def _child(self, name, key_serde, value_serde, repartition_required, node) -> KStream:
        return KStream(name, key_serde, value_serde, self._source_nodes, repartition_required, node, self._builder)

    def _processor(self, prefix: str, named: Optional[Named], kind: NodeKind, params: dict) -> ProcessorGraphNode:
        name = _or_generate(self._builder, _name_of(named), prefix)
        node = ProcessorGraphNode(name, ProcessorSpec(kind, params))
        self._builder.add_graph_node(self._node, node)
        return node

    def _column_serdes(self, fn: UserFunction) -> dict:
        """For a PySpark Column: the serdes this stream's records are known by (None: the default),
        which a runner that hands records after state back to the JVM writes and reads them with."""
        return {"stream_serdes": (self.key_serde, self.value_serde)} if fn.is_column else {}

    # -- stateless -------------------------------------------------------------------
    def filter(self, predicate, named: Optional[Named] = None) -> KStream:
        fn = UserFunction.of(predicate, [F.KEY_VALUE], "KStream.filter", allow_column=True)
        node = self._processor(FILTER_NAME, named, NodeKind.FILTER,
                               {"predicate": fn, "negate": False, **self._column_serdes(fn)})
        return self._child(node.name, self.key_serde, self.value_serde, self.repartition_required, node)

    def filter_not(self, predicate, named: Optional[Named] = None) -> KStream:
        fn = UserFunction.of(predicate, [F.KEY_VALUE], "KStream.filter_not", allow_column=True)
        node = self._processor(FILTER_NAME, named, NodeKind.FILTER,
                               {"predicate": fn, "negate": True, **self._column_serdes(fn)})
        return self._child(node.name, self.key_serde, self.value_serde, self.repartition_required, node)

    def _select_key_node(self, mapper, name: Optional[str], operation: str) -> ProcessorGraphNode:
        fn = UserFunction.of(mapper, [F.KEY_VALUE], operation, allow_column=True)
        node_name = _or_generate(self._builder, name, KEY_SELECT_NAME)
        node = ProcessorGraphNode(node_name, ProcessorSpec(NodeKind.SELECT_KEY, {"mapper": fn}))
        node.key_changing = True
        self._builder.add_graph_node(self._node, node)
        return node

    def select_key(self, mapper, named: Optional[Named] = None) -> KStream:
        node = self._select_key_node(mapper, _name_of(named), "KStream.select_key")
        return self._child(node.name, None, self.value_serde, True, node)

    def map(self, mapper, named: Optional[Named] = None) -> KStream:
        """``mapper(key, value) -> (new_key, new_value)``; or a ``(key_column, value_column)`` tuple."""
        fn = UserFunction.of(mapper, [F.KEY_VALUE], "KStream.map", allow_column=True)
        node = self._processor(MAP_NAME, named, NodeKind.MAP, {"mapper": fn})
        node.key_changing = True
        return self._child(node.name, None, None, True, node)

    def map_values(self, mapper, named: Optional[Named] = None) -> KStream:
        fn = UserFunction.of(mapper, [F.VALUE, F.KEY_VALUE], "KStream.map_values", allow_column=True)
        node = self._processor(MAPVALUES_NAME, named, NodeKind.MAP_VALUES, {"mapper": fn, **self._column_serdes(fn)})
        node.value_changing = True
        return self._child(node.name, self.key_serde, None, self.repartition_required, node)

    def flat_map(self, mapper, named: Optional[Named] = None) -> KStream:
        """``mapper(key, value) -> iterable of (key, value)``."""
        fn = UserFunction.of(mapper, [F.KEY_VALUE], "KStream.flat_map", allow_column=True)
        node = self._processor(FLATMAP_NAME, named, NodeKind.FLAT_MAP, {"mapper": fn})
        node.key_changing = True
        return self._child(node.name, None, None, True, node)

    def flat_map_values(self, mapper, named: Optional[Named] = None) -> KStream:
        fn = UserFunction.of(mapper, [F.VALUE, F.KEY_VALUE], "KStream.flat_map_values", allow_column=True)
        node = self._processor(FLATMAPVALUES_NAME, named, NodeKind.FLAT_MAP_VALUES,
                               {"mapper": fn, **self._column_serdes(fn)})
        node.value_changing = True
        return self._child(node.name, self.key_serde, None, self.repartition_required, node)

    def peek(self, action, named: Optional[Named] = None) -> KStream:
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

    def merge(self, stream: KStream, named: Optional[Named] = None) -> KStream:
        if not isinstance(stream, KStream):
            raise TypeError(f"KStream.merge expects a KStream, got {type(stream).__name__}")
        name = _or_generate(self._builder, _name_of(named), MERGE_NAME)
        node = ProcessorGraphNode(name, ProcessorSpec(NodeKind.MERGE, {}))
        node.merge_node = True
        self._builder.add_graph_node([self._node, stream._node], node)
        return KStream(name, None, None, self._source_nodes | stream._source_nodes,
                       self.repartition_required or stream.repartition_required, node, self._builder)

    def split(self, named: Optional[Named] = None) -> BranchedKStream:
        return BranchedKStream(self, self.repartition_required, _name_of(named))

    def branch(self, *predicates, named: Optional[Named] = None) -> list[KStream]:
        """Shorthand for ``split(named)`` with one ``branch`` per predicate; returns the branches in order."""
        branched = self.split(named)
        for predicate in predicates:
            branched.branch(predicate)
        branches = branched.no_default_branch()
        return list(branches.values())

    # -- the Processor API ----------------------------------------------------------------
    def process(self, supplier, *args) -> KStream:
        """``process(supplier, *store_names)`` or ``process(supplier, named, *store_names)``:
        ``supplier()`` returns a new :class:`~.processor_api.Processor`; the stream it returns holds
        the records it forwards (their key may change: a stateful operation after it repartitions)."""
        node = self._user_processor(supplier, args, PROCESSOR_NAME, NodeKind.PROCESS, "KStream.process")
        return KStream(node.name, None, None, self._source_nodes, True, node, self._builder)

    def process_values(self, supplier, *args) -> KStream:
        """``process_values(supplier, *store_names)`` or ``(supplier, named, *store_names)``: a
        :class:`~.processor_api.FixedKeyProcessor`, which forwards records with the key it got."""
        node = self._user_processor(supplier, args, PROCESSVALUES_NAME, NodeKind.PROCESS_VALUES,
                                    "KStream.process_values")
        return KStream(node.name, self.key_serde, None, self._source_nodes, self.repartition_required, node,
                       self._builder)

    def _user_processor(self, supplier, args: tuple, prefix: str, kind: NodeKind, operation: str) -> ProcessorGraphNode:
        spec = user_processor_spec(supplier, kind, operation)
        named = args[0] if args and isinstance(args[0], Named) else None
        store_names = args[1:] if named is not None else args
        for store_name in store_names:
            if not isinstance(store_name, str) or not store_name:
                raise TypeError(f"{operation}: a state store name must be a non-empty str, got {store_name!r}")
        name = named.name if named is not None else self._builder.new_processor_name(prefix)
        node = ProcessorGraphNode(name, spec, store_names)
        self._builder.add_graph_node(self._node, node)
        return node

    # -- repartitioning --------------------------------------------------------------
    def repartition(self, repartitioned: Optional[Repartitioned] = None) -> KStream:
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

    def _repartition_for_join(self, repartition_name: str, key_serde_override, value_serde_override) -> KStream:
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
    def to(self, topic: Union[str, Callable, TopicNameExtractor], produced: Optional[Produced] = None) -> None:
        """Write to ``topic``; a topic-name extractor picks the topic per record: a
        :class:`~.topic_name_extractor.TopicNameExtractor`, a callable ``topic(key, value, record_context)``
        given the record's :class:`~.topic_name_extractor.RecordContext`, or ``topic(key, value)``."""
        if not isinstance(topic, str):
            topic_name_function(topic, "KStream.to")  # refused before a name is taken if it is no extractor
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
        else:
            node = StreamSinkNode(name, None, topic, produced)
        self._builder.add_graph_node(self._node, node)

    def to_table(self, *args) -> KTable:
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
                          queryable=queryable, caching=materialized.caching_enabled and not materialized.versioned,
                          history_retention_ms=materialized.history_retention_ms)
        spec = KTableSourceSpec(NodeKind.TO_TABLE, {"store_name": store_name}, store, queryable)
        node = ProcessorGraphNode(name, spec)
        node.output_versioned = materialized.versioned
        builder.add_graph_node(parent, node)
        return KTable(name, key_serde, value_serde, source_nodes, store_name if queryable else None, node, builder,
                      kind="source", source_spec=spec)

    # -- grouping --------------------------------------------------------------------
    def group_by_key(self, grouped: Optional[Grouped] = None) -> KGroupedStream:
        grouped = grouped or Grouped(None, self.key_serde, self.value_serde)
        return KGroupedStream(self.name, self._source_nodes, grouped, self.repartition_required, self._node,
                              self._builder)

    def group_by(self, key_selector, grouped: Optional[Grouped] = None) -> KGroupedStream:
        grouped = grouped or Grouped(None, None, self.value_serde)
        node = self._select_key_node(key_selector, grouped.name, "KStream.group_by")
        return KGroupedStream(node.name, self._source_nodes, grouped, True, node, self._builder)

    # -- joins -----------------------------------------------------------------------
    def join(self, other, joiner, *args) -> KStream:
        """Stream-stream ``join(other_stream, joiner, join_windows[, stream_joined])`` or
        stream-table ``join(table, joiner[, joined])``."""
        return self._join(other, joiner, args, left=False, outer=False, operation="KStream.join")

    def left_join(self, other, joiner, *args) -> KStream:
        return self._join(other, joiner, args, left=True, outer=False, operation="KStream.left_join")

    def outer_join(self, other, joiner, *args) -> KStream:
        if not isinstance(other, KStream):
            raise TypeError("KStream.outer_join is defined for another KStream only")
        return self._join(other, joiner, args, left=True, outer=True, operation="KStream.outer_join")

    def _join(self, other, joiner, args, left: bool, outer: bool, operation: str) -> KStream:
        if isinstance(other, GlobalKTable):  # join(global_table, key_selector, joiner[, named])
            if not args or len(args) > 2:
                raise TypeError(f"{operation} with a GlobalKTable takes (global_table, key_selector, joiner[, named])")
            return add_global_table_join(self, other, joiner, args[0], args[1] if len(args) > 1 else None,
                                         left, operation)
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

    def _stream_stream_join(self, other: KStream, joiner: UserFunction, windows: JoinWindows,
                            stream_joined: StreamJoined, left_outer: bool, right_outer: bool) -> KStream:
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

        join_node = add_stream_stream_join(builder, this_stream._node, other_stream._node, joiner, windows,
                                           stream_joined, left_outer, right_outer)
        return KStream(join_node.name, stream_joined.key_serde, None,
                       this_stream._source_nodes | other_stream._source_nodes, False, join_node, builder)

    def _stream_table_join(self, table: KTable, joiner: UserFunction, joined: Joined, left: bool) -> KStream:
        if table._builder is not self._builder:
            raise TopologyException("cannot join streams/tables from different StreamsBuilders")
        grace_ms = duration_millis(joined.grace_period, "grace period")
        if grace_ms is not None and table._node.output_versioned is False:  # unknown counts as versioned
            raise TopologyException("KTable must be versioned to use a grace period in a stream table join.")
        stream = self
        if self.repartition_required:
            stream = self._repartition_for_join(joined.name if joined.name is not None else self.name,
                                                joined.key_serde, joined.value_serde)
        all_sources = stream._ensure_copartition_with([table])
        name = _or_generate(self._builder, joined.name, LEFTJOIN_NAME if left else JOIN_NAME)
        store_names = table._value_getter_store_names()
        buffer = [] if grace_ms is None else [_grace_buffer(name, grace_ms, table, joined)]
        spec = ProcessorSpec(NodeKind.STREAM_TABLE_JOIN, {
            "joiner": joiner, "join_type": "left" if left else "inner", "table_store_names": list(store_names),
            "table": table.name, "grace_ms": grace_ms}, buffer)
        node = ProcessorGraphNode(name, spec, connected_stores=store_names)
        self._builder.add_graph_node(stream._node, node)
        if left:
            node.labels.add("NULL_KEY_RELAXED_JOIN")
        return KStream(name, joined.key_serde or stream.key_serde, None, all_sources, False, node, self._builder)


def _grace_buffer(join_name: str, grace_ms: int, table: KTable, joined: Joined) -> StoreSpec:
    """The buffer of a stream-table join with a grace period (``<join>-Buffer``), after Kafka
    Streams' checks of the table (``StreamTableJoinNode.writeToTopology``)."""
    retention_ms = table._versioned_history_retention_ms()
    if retention_ms is None:
        raise TopologyException("KTable must be versioned to use a grace period in a stream table join.")
    if grace_ms > retention_ms:
        raise TopologyException("History retention must be at least grace period.")
    return StoreSpec(join_name + "-Buffer", StoreType.JOIN_GRACE_BUFFER, True, joined.key_serde, joined.value_serde,
                     retention_ms=grace_ms)


# The one edge from the table family back to this one: KTable.to_stream returns a KStream, and
# ktable.py cannot import this module, which imports it (see KTable._stream_class).
KTable._stream_class = KStream
