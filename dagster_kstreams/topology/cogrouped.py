"""Cogrouped streams: ``KGroupedStream.cogroup(aggregator)`` returns a :class:`CogroupedKStream`;
``.cogroup(other_grouped, aggregator)`` adds more grouped streams, each with its own aggregator;
``.aggregate(initializer)`` (or ``.windowed_by(...)`` then ``.aggregate``) builds one table whose
one store every input updates (Kafka Streams' ``CogroupedKStreamImpl``,
``TimeWindowedCogroupedKStreamImpl``, ``SlidingWindowedCogroupedKStreamImpl``,
``SessionWindowedCogroupedKStreamImpl`` and ``CogroupedStreamAggregateBuilder``).

The graph is Kafka Streams': a grouped stream whose key changed gets its repartition topic (named
after the store unless its ``Grouped`` names it), then one ``COGROUPKSTREAM-AGGREGATE-`` processor
per input stream (``<name>-cogroup-agg-<i>`` when named), all connected to the one store, and a
``COGROUPKSTREAM-MERGE-`` pass-through whose output is the table. Names are drawn in Kafka
Streams' order (see :mod:`.abstract_stream`).
"""
from __future__ import annotations

from typing import Optional

from .abstract_stream import (
    _AbstractStream, _create_repartitioned_source, _materialized, _name_of, _parse, _suffix_or_generate,
)
from .emit_strategy import ON_WINDOW_UPDATE
from .functions import FunctionForm as F
from .functions import UserFunction
from .graph import GraphNode, InternalStreamsBuilder, ProcessorGraphNode
from .ktable import KTable
from .materialized import Materialized
from .named import Named
from .node_specs import NodeKind, ProcessorSpec, StoreSpec, StoreType
from .serdes import WindowedSerde
from .window_store_settings import windowed_store_retention
from .windows import SessionWindows, SlidingWindows, TimeWindows

__all__ = ["CogroupedKStream", "TimeWindowedCogroupedKStream", "SessionWindowedCogroupedKStream"]

COGROUP_AGGREGATE_NAME = "COGROUPKSTREAM-AGGREGATE-"
COGROUP_MERGE_NAME = "COGROUPKSTREAM-MERGE-"


class _CogroupedStreamAggregateBuilder:
    """``CogroupedStreamAggregateBuilder``: repartitions, one aggregate per input, the merge."""

    def __init__(self, builder: InternalStreamsBuilder):
        self.builder = builder
        # grouped stream -> the graph node its aggregate hangs from (itself, or its repartition);
        # kept across aggregations of one cogrouped stream, as Kafka Streams keeps it.
        self.parent_nodes: dict[_AbstractStream, GraphNode] = {}

    def build(self, patterns: dict, initializer: UserFunction, named: Optional[Named], store: StoreSpec,
              queryable_name: Optional[str], key_serde, value_serde, windows=None, merger=None) -> KTable:
        builder = self.builder
        self._process_repartitions(patterns, store.name)
        processors = []
        for counter, (grouped, aggregator) in enumerate(patterns.items()):
            name = _suffix_or_generate(builder, _name_of(named), f"-cogroup-agg-{counter}", COGROUP_AGGREGATE_NAME)
            params = {"operation": "aggregate", "initializer": initializer, "aggregator": aggregator,
                      "store_name": store.name, "cogroup": True}
            if windows is None:
                node = ProcessorGraphNode(name, ProcessorSpec(NodeKind.AGGREGATE, params, [store]))
                node.output_versioned = store.history_retention_ms is not None  # as Kafka Streams sets it
            else:
                params.update(windows=windows, emit_strategy=ON_WINDOW_UPDATE)
                if merger is not None:
                    params["merger"] = merger
                node = ProcessorGraphNode(name, ProcessorSpec(NodeKind.WINDOWED_AGGREGATE, params, [store]))
                node.grace_ms = _grace_ms(windows)
            processors.append(node)
            builder.add_graph_node(self.parent_nodes[grouped], node)
        merge_name = _suffix_or_generate(builder, _name_of(named), "-cogroup-merge", COGROUP_MERGE_NAME)
        merge = ProcessorGraphNode(merge_name, ProcessorSpec(NodeKind.COGROUP_MERGE, {"store_name": store.name}))
        builder.add_graph_node(processors, merge)
        return KTable(merge_name, key_serde, value_serde, {merge_name}, queryable_name, merge, builder,
                      kind="aggregate", store_name=store.name)

    def _process_repartitions(self, patterns: dict, store_name: str) -> None:
        for grouped in patterns:
            if grouped.repartition_required:
                grouping = grouped._aggregate_builder
                prefix = grouping.user_repartition_name or store_name
                # Three names are drawn even for a grouped stream already repartitioned here.
                repartition = _create_repartitioned_source(self.builder, grouping.key_serde, grouping.value_serde,
                                                           prefix)
                if grouped not in self.parent_nodes:
                    self.builder.add_graph_node(grouped._node, repartition)
                    self.parent_nodes[grouped] = repartition
            else:
                self.parent_nodes[grouped] = grouped._node
        first, *others = self.parent_nodes
        first._ensure_copartition_with(others)


def _grace_ms(windows) -> int:
    if isinstance(windows, SessionWindows):
        return windows.grace_ms + windows.inactivity_gap_ms
    return windows.grace_ms


class CogroupedKStream:
    """What ``KGroupedStream.cogroup`` returns (Kafka Streams' ``CogroupedKStream``)."""

    def __init__(self, builder: InternalStreamsBuilder):
        self._builder = builder
        # KGroupedStream -> its aggregator, in cogroup order (annotated by the base class: grouped.py
        # imports this module)
        self._patterns: dict[_AbstractStream, UserFunction] = {}
        self._aggregate_builder = _CogroupedStreamAggregateBuilder(builder)

    def cogroup(self, grouped_stream: _AbstractStream, aggregator) -> "CogroupedKStream":
        """``cogroup(grouped_stream, aggregator)``; ``aggregator(key, value, aggregate)``."""
        if grouped_stream is None:
            raise TypeError("cogroup: groupedStream can't be null")
        if grouped_stream._builder is not self._builder:
            raise TypeError("cogroup: the grouped stream belongs to another StreamsBuilder")
        self._patterns[grouped_stream] = UserFunction.of(aggregator, [F.AGGREGATOR], "CogroupedKStream aggregator")
        return self

    def aggregate(self, initializer, *args) -> KTable:
        """``aggregate(initializer[, named][, materialized])``."""
        named, materialized = _parse(args, Named, Materialized, operation="CogroupedKStream.aggregate")
        init = UserFunction.of(initializer, [F.NO_ARGS], "CogroupedKStream.aggregate initializer")
        materialized, store_name, queryable = _materialized(materialized, self._builder, COGROUP_AGGREGATE_NAME)
        store = StoreSpec(store_name, StoreType.KEY_VALUE, materialized.logging_enabled, materialized.key_serde,
                          materialized.value_serde, queryable=queryable,
                          caching=materialized.caching_enabled and not materialized.versioned,
                          history_retention_ms=materialized.history_retention_ms)
        return self._aggregate_builder.build(dict(self._patterns), init, named, store,
                                             store_name if queryable else None, materialized.key_serde,
                                             materialized.value_serde)

    def windowed_by(self, windows):
        """``windowed_by(TimeWindows | SlidingWindows)`` or ``windowed_by(SessionWindows)``."""
        if isinstance(windows, SessionWindows):
            return SessionWindowedCogroupedKStream(self, windows)
        if isinstance(windows, (TimeWindows, SlidingWindows)):
            return TimeWindowedCogroupedKStream(self, windows)
        raise TypeError(f"windowed_by expects TimeWindows, SlidingWindows or SessionWindows, got {windows!r}")


class _WindowedCogroupedKStream:
    _store_type = StoreType.WINDOW

    def __init__(self, cogrouped: CogroupedKStream, windows):
        self._cogrouped = cogrouped
        self._builder = cogrouped._builder
        self.windows = windows

    def _windowed_key_serde(self, key_serde):
        if key_serde is None:
            return None
        windows = self.windows
        if isinstance(windows, SessionWindows):
            return WindowedSerde(key_serde, session=True)
        size = windows.size_ms if isinstance(windows, TimeWindows) else windows.time_difference_ms
        return WindowedSerde(key_serde, window_size_ms=size)

    def _aggregate(self, initializer, merger, named, materialized) -> KTable:
        init = UserFunction.of(initializer, [F.NO_ARGS], "aggregate initializer")
        materialized, store_name, queryable = _materialized(materialized, self._builder, COGROUP_AGGREGATE_NAME)
        store = StoreSpec(store_name, self._store_type, materialized.logging_enabled, materialized.key_serde,
                          materialized.value_serde, self.windows,
                          windowed_store_retention(self.windows, materialized, store_name,
                                                   f"{type(self).__name__}.aggregate"),
                          queryable=queryable, caching=materialized.caching_enabled, persistent=materialized.persistent,
                          supplier=materialized.supplier)
        cogrouped = self._cogrouped
        return cogrouped._aggregate_builder.build(
            dict(cogrouped._patterns), init, named, store, store_name if queryable else None,
            self._windowed_key_serde(materialized.key_serde), materialized.value_serde, self.windows, merger)


class TimeWindowedCogroupedKStream(_WindowedCogroupedKStream):
    """``windowed_by(TimeWindows | SlidingWindows)`` of a cogrouped stream."""

    def aggregate(self, initializer, *args) -> KTable:
        """``aggregate(initializer[, named][, materialized])``."""
        named, materialized = _parse(args, Named, Materialized, operation="TimeWindowedCogroupedKStream.aggregate")
        return self._aggregate(initializer, None, named, materialized)


class SessionWindowedCogroupedKStream(_WindowedCogroupedKStream):
    """``windowed_by(SessionWindows)`` of a cogrouped stream."""

    _store_type = StoreType.SESSION

    def aggregate(self, initializer, session_merger, *args) -> KTable:
        """``aggregate(initializer, session_merger[, named][, materialized])``;
        ``session_merger(key, aggregate_1, aggregate_2)``."""
        named, materialized = _parse(args, Named, Materialized, operation="SessionWindowedCogroupedKStream.aggregate")
        merger = UserFunction.of(session_merger, [F.MERGER], "aggregate session merger")
        return self._aggregate(initializer, merger, named, materialized)
