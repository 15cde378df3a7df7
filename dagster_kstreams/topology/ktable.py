"""The table family: ``KTable`` (a changelog stream) and ``KGroupedTable`` (what ``KTable.group_by``
returns), as Kafka Streams' ``KTableImpl`` and ``KGroupedTableImpl`` build them.

Every method draws names in Kafka Streams' order (see :mod:`.abstract_stream`).
"""
from __future__ import annotations

from typing import ClassVar, Optional, Sequence

from .abstract_stream import (
    KTABLE_AGGREGATE_NAME, KTABLE_FILTER_NAME, KTABLE_JOINOTHER_NAME, KTABLE_JOINTHIS_NAME,
    KTABLE_MAPVALUES_NAME, KTABLE_MERGE_NAME, KTABLE_REDUCE_NAME, KTABLE_SELECT_NAME, KTABLE_SUPPRESS_NAME,
    KTABLE_TOSTREAM_NAME, REPARTITION_TOPIC_SUFFIX, SINK_NAME, SOURCE_NAME, _MS, _AbstractStream, _materialized,
    _name_of, _or_generate, _parse, _suffix_or_generate,
)
from .describe import java_hash_order
from .errors import TopologyException
from .fk_join import ForeignKeyJoinSide, build_foreign_key_join
from .functions import FunctionForm as F
from .functions import UserFunction
from .graph import GraphNode, ProcessorGraphNode, RepartitionNode, TableTableJoinNode
from .grouped_repartitioned import Grouped
from .joined import TableJoined
from .materialized import Materialized
from .named import Named
from .node_specs import KTableSourceSpec, NodeKind, ProcessorSpec, StoreSpec, StoreType
from .serdes import Serdes
from .suppressed import Suppressed
from .value_transformer import KTABLE_TRANSFORMVALUES_NAME, transform_values_arguments, transform_values_node

__all__ = ["KTable", "KGroupedTable"]


class KTable(_AbstractStream):
    """A changelog stream (Kafka Streams' ``KTable``)."""

    # to_stream() returns a KStream, and the stream family sits above this module (KStream.to_table,
    # its joins and group_by return tables). That one edge back up is this class attribute, which
    # kstream.py sets right after defining KStream, so that no import points upward.
    _stream_class: ClassVar[type]

    def __init__(self, name, key_serde, value_serde, source_nodes, queryable_store_name, node, builder,
                 kind: str, source_spec: Optional[KTableSourceSpec] = None, parents: Sequence["KTable"] = (),
                 store_name: Optional[str] = None):
        super().__init__(name, key_serde, value_serde, source_nodes, node, builder)
        self.queryable_store_name = queryable_store_name
        self._kind = kind  # source | filter | map_values | transform_values | aggregate | join | suppress
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
        if self._kind in _STEPS:
            if self.queryable_store_name is not None:
                return [self.queryable_store_name]
            return self._parents[0]._value_getter_store_names()
        if self._kind == "join":
            if self.queryable_store_name is not None:
                return [self.queryable_store_name]
            names = self._parents[0]._value_getter_store_names() + self._parents[1]._value_getter_store_names()
            return java_hash_order(names, max(len(names), 16))
        if self._kind == "suppress":
            return [self._store_name] + self._parents[0]._value_getter_store_names()
        raise AssertionError(self._kind)

    def _versioned_history_retention_ms(self):
        """The history retention of the versioned store this table's values are read from (its
        own, or its filter/map_values' parent's), or None: not a versioned table."""
        if self._kind == "source":
            return self._source_spec.store.history_retention_ms
        if self._kind in ("aggregate", "join"):  # an aggregation's or a join's store may be a versioned one
            return next((store.history_retention_ms for spec in _store_writer_specs(self._node)
                         for store in spec.stores() if store.name == self._store_name), None)
        if self._kind in _STEPS:
            if self.queryable_store_name is None:
                return self._parents[0]._versioned_history_retention_ms()
            (store,) = self._node.spec.stores()
            return store.history_retention_ms
        return None

    def _enable_sending_old_values(self, force: bool) -> bool:
        if self._send_old_values:
            return True
        if self._kind == "source":
            if not force and not self._source_spec.materialized:
                return False
            self._source_spec.materialize()
        elif self._kind in _STEPS:
            if self.queryable_store_name is None and not self._parents[0]._enable_sending_old_values(force):
                return False
            if self._kind in ("filter", "transform_values"):  # KTableFilter's, KTableTransformValues' own flag
                self._node.spec.params["send_old_values"] = True
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
                                  value_serde, queryable=True,
                                  caching=materialized.caching_enabled and not materialized.versioned,
                                  history_retention_ms=materialized.history_retention_ms)
        name = _or_generate(builder, _name_of(named), prefix)
        spec = ProcessorSpec(kind, {**params, "store_name": queryable_name}, [store] if store else [])
        node = ProcessorGraphNode(name, spec)
        if materialized is not None:
            node.output_versioned = materialized.versioned
        builder.add_graph_node(self._node, node)
        return KTable(name, key_serde, value_serde, self._source_nodes, queryable_name, node, builder,
                      kind=table_kind, parents=[self])

    def filter(self, predicate, *args) -> "KTable":
        """``filter(predicate[, named][, materialized])``."""
        named, materialized = _parse(args, Named, Materialized, operation="KTable.filter")
        fn = UserFunction.of(predicate, [F.KEY_VALUE], "KTable.filter", allow_column=True)
        return self._derived(KTABLE_FILTER_NAME, NodeKind.TABLE_FILTER, self._filter_params(fn, False), named,
                             materialized, "filter", self.value_serde)

    def filter_not(self, predicate, *args) -> "KTable":
        named, materialized = _parse(args, Named, Materialized, operation="KTable.filter_not")
        fn = UserFunction.of(predicate, [F.KEY_VALUE], "KTable.filter_not", allow_column=True)
        return self._derived(KTABLE_FILTER_NAME, NodeKind.TABLE_FILTER, self._filter_params(fn, True), named,
                             materialized, "filter", self.value_serde)

    def _filter_params(self, predicate: UserFunction, negate: bool) -> dict:
        """A filter of this table: ``send_old_values`` is ``KTableFilter``'s flag, which decides whether
        it drops an update whose new and old values both fail (else it forwards a tombstone). Its
        constructor asks this table without forcing a store (so: on when this table already sends
        old values or has a store), and it turns on later when a reader of the filter asks for old
        values (:meth:`_enable_sending_old_values`). ``versioned``: the table is read from a
        versioned store, where the filter never drops (``useVersionedSemantics``)."""
        return {"predicate": predicate, "negate": negate,
                "send_old_values": self._enable_sending_old_values(False),
                "versioned": self._versioned_history_retention_ms() is not None}

    def map_values(self, mapper, *args) -> "KTable":
        """``map_values(mapper[, named][, materialized])``; ``mapper(value)`` or ``mapper(key, value)``."""
        named, materialized = _parse(args, Named, Materialized, operation="KTable.map_values")
        fn = UserFunction.of(mapper, [F.VALUE, F.KEY_VALUE], "KTable.map_values", allow_column=True)
        return self._derived(KTABLE_MAPVALUES_NAME, NodeKind.TABLE_MAP_VALUES, {"mapper": fn}, named, materialized,
                             "map_values", None)

    def transform_values(self, supplier, *args) -> "KTable":
        """``transform_values(supplier[, materialized][, named], *store_names)``: ``supplier()`` returns
        a new :class:`~.value_transformer.ValueTransformerWithKey`."""
        arguments = transform_values_arguments(args, "KTable.transform_values")
        materialized = arguments.materialized
        key_serde = materialized.key_serde or self.key_serde if materialized is not None else self.key_serde
        name = _or_generate(self._builder, _name_of(arguments.named), KTABLE_TRANSFORMVALUES_NAME)
        node = transform_values_node(name, supplier, arguments, key_serde, "KTable.transform_values")
        self._builder.add_graph_node(self._node, node)
        return KTable(name, key_serde, materialized.value_serde if materialized is not None else None,
                      self._source_nodes, node.spec.params["store_name"], node, self._builder,
                      kind="transform_values", parents=[self])

    def to_stream(self, *args) -> _AbstractStream:  # a KStream (_stream_class)
        """``to_stream([named])`` or ``to_stream(key_mapper[, named])`` (then ``select_key``)."""
        mapper = None
        if args and not isinstance(args[0], Named) and args[0] is not None:
            mapper, args = args[0], args[1:]
        (named,) = _parse(args, Named, operation="KTable.to_stream")
        name = _or_generate(self._builder, _name_of(named), KTABLE_TOSTREAM_NAME)
        node = ProcessorGraphNode(name, ProcessorSpec(NodeKind.TABLE_TO_STREAM, {}))
        self._builder.add_graph_node(self._node, node)
        stream = self._stream_class(name, self.key_serde, self.value_serde, self._source_nodes, False, node,
                                    self._builder)
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
        """``join(other_table, joiner[, named][, materialized])``, or the foreign-key join
        ``join(other_table, foreign_key_extractor, joiner[, table_joined][, materialized])``
        (``foreign_key_extractor(value)`` or ``foreign_key_extractor(key, value)``)."""
        if args and callable(args[0]):
            return self._foreign_key_join(other, joiner, args[0], args[1:], False, "KTable.join")
        return self._table_join(other, joiner, args, False, False, "KTable.join")

    def left_join(self, other: "KTable", joiner, *args) -> "KTable":
        """As :meth:`join`; a left row with no match (or a null foreign key) is joined with None."""
        if args and callable(args[0]):
            return self._foreign_key_join(other, joiner, args[0], args[1:], True, "KTable.left_join")
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
                              queryable=True, caching=materialized.caching_enabled and not materialized.versioned,
                              history_retention_ms=materialized.history_retention_ms)
        node = TableTableJoinNode(
            merge_name, join_this_name, join_other_name,
            ProcessorSpec(NodeKind.TABLE_TABLE_JOIN, {**common, "side": "this"}),
            ProcessorSpec(NodeKind.TABLE_TABLE_JOIN, {**common, "side": "other"}),
            ProcessorSpec(NodeKind.TABLE_TABLE_JOIN_MERGE, {**common, "store_name": store_name},
                          [store] if store else []),
            self.name, other.name, this_store_names, other_store_names)
        node.output_versioned = materialized is not None and materialized.versioned  # Kafka Streams sets it
        builder.add_graph_node(self._node, node)
        builder.add_graph_node(other._node, node)
        return KTable(merge_name, key_serde, value_serde, all_sources, store_name, node, builder, kind="join",
                      parents=[self, other], store_name=store_name)


    def _foreign_key_join(self, other, extractor, joiner, args, left_join: bool, operation: str) -> "KTable":
        if not isinstance(other, KTable):
            raise TypeError(f"{operation} expects a KTable, got {type(other).__name__}")
        if other._builder is not self._builder:
            raise TopologyException("cannot join tables from different StreamsBuilders")
        table_joined, named, materialized = _parse(args, TableJoined, Named, Materialized, operation=operation)
        if named is not None:
            if table_joined is not None:
                raise TypeError(f"{operation}: give a TableJoined or a Named, not both")
            table_joined = TableJoined.as_(named.name)
        extract = UserFunction.of(extractor, [F.VALUE, F.KEY_VALUE], operation + " foreign_key_extractor")
        fn = UserFunction.of(joiner, [F.VALUE_VALUE], operation, allow_column=False)
        other._enable_sending_old_values(True)
        self._enable_sending_old_values(True)
        right = ForeignKeyJoinSide(other._node, other.key_serde, other.value_serde, set(other._source_nodes),
                                   other._value_getter_store_names())
        left = ForeignKeyJoinSide(self._node, self.key_serde, self.value_serde, set(self._source_nodes),
                                  self._value_getter_store_names())
        result = build_foreign_key_join(self._builder, left, right, extract, fn, table_joined, materialized,
                                        left_join)
        return KTable(result.name, result.key_serde, result.value_serde, result.source_nodes,
                      result.queryable_store_name, result.node, self._builder, kind="source", source_spec=result.spec)


# The table steps whose values are the parent's through a function, unless they keep a store of their own.
_STEPS = ("filter", "map_values", "transform_values")


def _store_writer_specs(node: GraphNode) -> list[ProcessorSpec]:
    """The specs of the processors writing the store of the aggregation's or join's table at ``node``:
    a join's merge, a cogroup's aggregations (before its pass-through merge), or the aggregation."""
    if isinstance(node, TableTableJoinNode):
        return [node.merge_spec]
    if node.spec.kind is NodeKind.COGROUP_MERGE:
        return [parent.spec for parent in node.parents]
    return [node.spec]


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
                                                     self.value_serde, changes=True)
        builder.add_graph_node(self._node, self._repartition_node)
        key_serde = materialized.key_serde or self.key_serde
        store = StoreSpec(store_name, StoreType.KEY_VALUE, materialized.logging_enabled, key_serde, value_serde,
                          queryable=queryable, caching=materialized.caching_enabled and not materialized.versioned,
                          history_retention_ms=materialized.history_retention_ms)
        spec = ProcessorSpec(NodeKind.TABLE_AGGREGATE, {**params, "store_name": store_name}, [store])
        node = ProcessorGraphNode(function_name, spec)
        node.output_versioned = materialized.versioned
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
