"""Aggregations and materialized tables: ``count``/``reduce``/``aggregate`` of a grouped stream
(``KStreamAggregate``, ``KStreamReduce``) and the latest value per key of ``to_table`` or a table
read from a topic (``KTableSource``).

Each keeps one store: a slot of the source key's state row. Kafka Streams' aggregations skip
records with a null key or a null value; a table skips null keys and deletes its value on a
tombstone.

Emission follows Kafka Streams with its record cache: after the key group's records are applied,
each updated store forwards its final value for the key downstream once, upstream stores first
(``Materialized.with_caching_disabled()`` forwards every update instead, as it happens).
"""

from __future__ import annotations

import dataclasses
from typing import Callable, Optional

from dagster_kstreams.processors.base import Processor, StoreProcessor, register
from dagster_kstreams.processors.stateless import RepartitionFilter
from dagster_kstreams.processors.state import ABSENT
from dagster_kstreams.topology.node_specs import NodeKind

__all__ = ["KeyValueStoreProcessor", "Aggregate", "ToTable", "TableSource", "keep_timestamps",
           "read_by_user_processor", "user_aggregation", "BUILDERS"]


class KeyValueStoreProcessor(StoreProcessor):
    """A processor with a key-value store (a table). What it forwards is a table update: the
    value before it stays readable in ``state.old_values`` while the update is forwarded, as
    Kafka Streams' ``Change.oldValue`` (a re-grouping reads it: :mod:`.table_regroup`)."""

    # Keeps each key's timestamp as well (Kafka Streams' ValueAndTimestamp): always for an aggregation,
    # which stamps its update with the larger of the record's and the aggregate's (update_context);
    # for a table, when a user processor reads the store (user_dsl_store.py) or a table-table join
    # reads it (keep_timestamps: the join stamps with both rows' times). Kept in the key's state row
    # (GroupState.stamps), or task-grouped in the task's state (TaskState.timestamps).
    keeps_timestamps = False
    _flushing = None  # the key group whose cached update the store's flush is forwarding now

    def _put(self, key, new, context, out, state) -> None:
        """Store ``new`` (ABSENT: delete) for ``key``; forward now, or at the flush when cached."""
        self.write(key, new, context, state)
        if not self.cached:
            self.forward(key, None if new is ABSENT else new, context, out, state)

    def write(self, key, new, context, state, by_user_processor: bool = False) -> None:
        """Store ``new`` (ABSENT: delete) for ``key``, stamped with ``context``'s timestamp, without
        forwarding it; a cached store forwards it at the flush with ``context``, whoever wrote it
        (Kafka Streams' cache flush listener forwards a user processor's write as the store's own).
        ``by_user_processor``: the write is a user processor's (:mod:`.user_dsl_store`)."""
        slot = self.state_slot
        # The old value of the update the store forwards: uncached, the value before each update; cached,
        # the value at the last flush (taken at the first write since). A user processor's write into an
        # uncached store is forwarded by no one, so it takes none, nor one into a cached store while the
        # store's flush forwards the key: the update it may be handling keeps the old value it was
        # forwarded with (Kafka Streams fixes the Change's old value before forwarding it to the table's
        # children, a re-grouping or a join after the processor among them), and the store's next update
        # takes this write as its old value (cached: the flushed value, see flush).
        if slot not in state.dirty and not (by_user_processor and (not self.cached or self._flushing is state)):
            state.old_values[slot] = state.values[slot]
        state.values[slot] = new
        state.keys[slot] = key
        state.changed = True
        if self.keeps_timestamps:
            self._store_timestamp(state, None if new is ABSENT else context.timestamp)
        if self.cached:
            state.mark_dirty(slot, context)

    def update_context(self, context, state):
        """The record context of an aggregation's update of ``state``'s key: Kafka Streams
        (``KStreamAggregate``, ``KTableAggregate``, ``KTableReduce``) stamps it with the larger of the
        record's timestamp and the aggregate's previous one."""
        if state.values[self.state_slot] is ABSENT:
            return context
        stored = self.stored_timestamp(state)
        return context if stored <= context.timestamp else dataclasses.replace(context, timestamp=stored)

    def stored_timestamp(self, state) -> int:
        """The timestamp stored with the key's value (-1: none known, a value stored before the
        store kept timestamps); only for a store that keeps them."""
        if state.task is None:
            return state.stamps.get(self.state_slot, -1)
        return state.task.timestamps(self.store).get(state.raw_key, -1)

    def _store_timestamp(self, state, timestamp: Optional[int]) -> None:
        """Keep ``timestamp`` as the key's in this store (None: it has no value any more)."""
        if state.task is None:
            stamps, key = state.stamps, self.state_slot
        else:
            stamps, key = state.task.timestamps(self.store), state.raw_key
        if timestamp is None:
            stamps.pop(key, None)
        else:
            stamps[key] = timestamp

    def flush(self, state, out, context) -> None:
        """Kafka Streams' cache flush (``CachingKeyValueStore``): nothing to forward for a key that
        is absent now and was absent at the last flush (created and deleted in between, or a
        tombstone for a key it never held)."""
        slot = self.state_slot
        if state.values[slot] is ABSENT and state.old_values.get(slot, ABSENT) is ABSENT:
            return
        flushed = state.values[slot]
        self._flushing = state
        try:
            super().flush(state, out, context)
        finally:
            self._flushing = None
        if slot in state.dirty:
            # A user processor wrote the key while the flushed update travelled on (whose old value it left as
            # it was): the next flush's old value is the value this one forwarded, as Kafka Streams' cache
            # reads it from the store beneath (the write stays in the cache until then).
            state.old_values[slot] = flushed


@register
class Aggregate(KeyValueStoreProcessor):
    """``aggregation`` is ``"count"``, ``"reduce"`` (``reducer(aggregate, value)``) or ``"aggregate"``
    (``initializer()``, ``aggregator(key, value, aggregate)``)."""

    kind = "aggregate"
    keeps_timestamps = True  # its update's stamp is the larger of the record's and the aggregate's

    def __init__(self, name: str, store: str, cached: bool, aggregation: str,
                 initializer: Optional[Callable] = None, aggregator: Optional[Callable] = None,
                 reducer: Optional[Callable] = None):
        super().__init__(name, store, cached)
        self.aggregation = aggregation
        self.initializer, self.aggregator, self.reducer = initializer, aggregator, reducer

    def process(self, key, value, context, out, state) -> None:
        self.needs_state(state)
        # Kafka Streams' aggregations skip records with a null key or a null value.
        if key is None or value is None:
            return
        self._put(key, self.aggregated(key, value, context, state), self.update_context(context, state), out, state)

    def aggregated(self, key, value, context, state):
        """The key's aggregate with ``value`` added (the initializer's, or the value, for a new key)."""
        current = state.values[self.state_slot]
        if self.aggregation == "count":
            return (0 if current is ABSENT else current) + 1
        if self.aggregation == "reduce":
            return value if current is ABSENT else self.call(context, self.reducer, current, value)
        base = self.call(context, self.initializer) if current is ABSENT else current
        return self.call(context, self.aggregator, key, value, base)


@register
class ToTable(KeyValueStoreProcessor):
    """The latest value per key; a tombstone deletes it."""

    kind = "to_table"

    def process(self, key, value, context, out, state) -> None:
        self.needs_state(state)
        if key is None:
            return
        self._put(key, ABSENT if value is None else value, context, out, state)


@register
class TableSource(ToTable):
    kind = "table_source"


def user_aggregation(params) -> tuple[Optional[Callable], Optional[Callable], Optional[Callable]]:
    """``(initializer, aggregator, reducer)`` of a ``count``/``reduce``/``aggregate`` (plain or
    windowed): the user's functions its operation calls, None for the others."""
    operation = params["operation"]
    if operation == "reduce":
        return None, None, params["reducer"].fn
    if operation == "aggregate":
        return params["initializer"].fn, params["aggregator"].fn, None
    return None, None, None


# -- definition time -------------------------------------------------------------------------
def _table(factory, ctx) -> Processor:
    store = factory.params["store_name"]
    if store not in factory.stores:
        # Not materialized: Kafka Streams forwards every update as it comes, with no store, and
        # drops a record with a null key as a materialized table does (KTableSource checks first).
        return RepartitionFilter(factory.name)
    cls = ToTable if factory.kind is NodeKind.TO_TABLE else TableSource
    return _keeping_timestamps(cls(factory.name, store, ctx.cached(store)), ctx)


def _aggregate(factory, ctx) -> Aggregate:
    params = factory.params
    initializer, aggregator, reducer = user_aggregation(params)
    return Aggregate(factory.name, params["store_name"], ctx.cached(params["store_name"]), params["operation"],
                     initializer, aggregator, reducer)


def keep_timestamps(program, store: str) -> None:
    """Make every processor of ``program`` that writes ``store`` keep its timestamps, for a reader that
    needs them beside the values (a table-table join stamping with both rows' times)."""
    for node in program.nodes:
        if isinstance(node, KeyValueStoreProcessor) and node.store == store:
            node.keeps_timestamps = True


def read_by_user_processor(subtopology, store: str) -> bool:
    """Whether a user processor of ``subtopology`` names ``store`` in ``process(supplier, *store_names)``."""
    return any(node.kind in (NodeKind.PROCESS, NodeKind.PROCESS_VALUES) and store in node.stores
               for node in subtopology.nodes)


def _keeping_timestamps(processor: KeyValueStoreProcessor, ctx) -> KeyValueStoreProcessor:
    processor.keeps_timestamps = read_by_user_processor(ctx.subtopology, processor.store)
    return processor


BUILDERS = {
    NodeKind.TO_TABLE: _table,
    NodeKind.TABLE_SOURCE: _table,
    NodeKind.AGGREGATE: _aggregate,
}
