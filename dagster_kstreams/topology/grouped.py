"""A grouped stream: ``KGroupedStream`` (what ``KStream.group_by``/``group_by_key`` return) and the
aggregate builder it shares with its windowed forms (Kafka Streams' ``KGroupedStreamImpl`` and
``GroupedStreamAggregateBuilder``).

Every method draws names in Kafka Streams' order (see :mod:`.abstract_stream`).
"""
from __future__ import annotations

from typing import Optional, Union

from .abstract_stream import (
    AGGREGATE_NAME, REDUCE_NAME, _AbstractStream, _create_repartitioned_source, _materialized, _name_of,
    _or_generate, _parse,
)
from .cogrouped import CogroupedKStream
from .functions import FunctionForm as F
from .functions import UserFunction
from .graph import GraphNode, InternalStreamsBuilder, ProcessorGraphNode, RepartitionNode
from .grouped_repartitioned import Grouped
from .ktable import KTable
from .materialized import Materialized
from .named import Named
from .node_specs import NodeKind, ProcessorSpec, StoreSpec, StoreType
from .serdes import Serdes
from .windowed import SessionWindowedKStream, TimeWindowedKStream
from .windows import SessionWindows, SlidingWindows, TimeWindows

__all__ = ["KGroupedStream"]


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
                          queryable=queryable, caching=materialized.caching_enabled and not materialized.versioned,
                          history_retention_ms=materialized.history_retention_ms)
        spec = ProcessorSpec(NodeKind.AGGREGATE, {**params, "store_name": store_name}, [store])
        table = self._aggregate_builder.build(name, store, spec, store_name if queryable else None, key_serde,
                                              value_serde)
        table._node.output_versioned = materialized.versioned
        return table

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

    def cogroup(self, aggregator) -> CogroupedKStream:
        """``cogroup(aggregator)``: the first input of a cogrouped aggregation (``aggregator(key,
        value, aggregate)``); ``.cogroup(other_grouped, aggregator)`` adds the others."""
        return CogroupedKStream(self._builder).cogroup(self, aggregator)

    def windowed_by(self, windows) -> Union[TimeWindowedKStream, SessionWindowedKStream]:
        if isinstance(windows, SessionWindows):
            return SessionWindowedKStream(self, windows)
        if isinstance(windows, (TimeWindows, SlidingWindows)):
            return TimeWindowedKStream(self, windows)
        raise TypeError(f"windowed_by expects TimeWindows, SlidingWindows or SessionWindows, got {windows!r}")
