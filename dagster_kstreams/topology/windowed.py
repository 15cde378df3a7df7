"""The windowed forms of a grouped stream: ``TimeWindowedKStream`` (time and sliding windows) and
``SessionWindowedKStream``, which ``KGroupedStream.windowed_by`` returns (:mod:`.grouped`, which
imports this module). Their aggregates go through the grouped stream's aggregate builder, as
Kafka Streams' ``TimeWindowedKStreamImpl`` and ``SessionWindowedKStreamImpl`` do.

Every method draws names in Kafka Streams' order (see :mod:`.abstract_stream`).
"""
from __future__ import annotations

from .abstract_stream import (
    AGGREGATE_NAME, REDUCE_NAME, _AbstractStream, _materialized, _name_of, _or_generate, _parse,
)
from .emit_strategy import EmitStrategy
from .functions import FunctionForm as F
from .functions import UserFunction
from .ktable import KTable
from .materialized import Materialized
from .named import Named
from .node_specs import NodeKind, ProcessorSpec, StoreSpec, StoreType
from .serdes import Serdes, WindowedSerde
from .window_store_settings import windowed_store_retention
from .windows import SessionWindows, SlidingWindows, TimeWindows

__all__ = ["TimeWindowedKStream", "SessionWindowedKStream"]


class _WindowedKStream:
    _store_type = StoreType.WINDOW
    # Kafka's count(named, materialized) burns an index when the store is unnamed, except for
    # sliding windows.
    # ``grouped`` is a KGroupedStream, annotated by its base class: grouped.py imports this module.
    def __init__(self, grouped: _AbstractStream, windows):
        self._grouped = grouped
        self._builder = grouped._builder
        self.windows = windows
        self._emit_strategy = EmitStrategy.on_window_update()

    def emit_strategy(self, emit_strategy: EmitStrategy) -> "_WindowedKStream":
        """``emitStrategy(EmitStrategy)``: when the aggregations defined after it forward their results."""
        if not isinstance(emit_strategy, EmitStrategy):
            raise TypeError(f"emit_strategy expects an EmitStrategy, got {emit_strategy!r}")
        self._emit_strategy = emit_strategy
        return self

    @property
    def _burns_on_unnamed_count(self) -> bool:
        return not isinstance(self.windows, SlidingWindows)

    def _grace_ms(self) -> int:
        if isinstance(self.windows, SessionWindows):
            return self.windows.grace_ms + self.windows.inactivity_gap_ms
        return self.windows.grace_ms

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
                          self.windows, windowed_store_retention(self.windows, materialized, store_name,
                                                                f"{type(self).__name__}.{params['operation']}"),
                          queryable=queryable, caching=materialized.caching_enabled, persistent=materialized.persistent,
                          supplier=materialized.supplier)
        spec = ProcessorSpec(NodeKind.WINDOWED_AGGREGATE,
                             {**params, "store_name": store_name, "windows": self.windows,
                              "emit_strategy": self._emit_strategy.type}, [store])
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
