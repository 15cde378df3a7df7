"""A table's ``filter``/``map_values`` materialized in a store of its own, after a versioned table or
into a versioned store (Kafka Streams' ``KTableFilter`` / ``KTableMapValues`` with a ``queryableName``).

Elsewhere the runner keeps no store for a materialized filter or map_values: its value for a key is
the parent table's value through the filter or the mapper, which is what its store would hold. Two
cases differ, and there the filter or mapper keeps its store (:func:`~.versioned_tables.keeps_own_store`):

* after a versioned table, Kafka Streams (4.3.1) puts an out-of-order update, forwarded marked not
  latest, into the filter's plain store as the key's latest value, and forwards it marked latest; the
  versioned table's current value stays the newer one. The store is a key-value store slot like a
  table's (:class:`TableStepStore`): the new value is put into it (None deletes the key), and the
  update forwarded with the store's previous value as its old one, at once or, with the record
  cache, at the flush;
* into a versioned store (``Materialized.as_(Stores.persistent_versioned_key_value_store(...))``),
  the update is put as a version at its timestamp, by the store's own observed time: dropped when
  expired, forwarded marked not latest when out of order, exactly as a versioned table source does
  (:class:`VersionedTableStepStore`). The timestamp is the update's: so the table filtered must
  forward updates with their own record's timestamp (a table read from a topic or made by
  ``to_table``, through filters and map_values); after an aggregation or a join, whose updates Kafka
  Streams stamps with other times than the runner (README, "Record timestamps written by the
  runner"), it is refused.

The new value: a filter's is the value if it passes (else None), a map_values' the mapped value of a
non-null one. A filter reading a versioned table never drops an update (``useVersionedSemantics``);
any other filter sending old values drops an update whose new value and old value (its store's
current one) are both None, as ``KTableFilter`` does. Readers downstream (joins, re-groupings,
stream-table joins) read the store (:func:`~.table_joins.value_getter`).
"""

from __future__ import annotations

from dagster_kstreams.processors import table_old_values
from dagster_kstreams.processors.aggregations import KeyValueStoreProcessor
from dagster_kstreams.processors.errors import UnsupportedTopologyError
from dagster_kstreams.processors.state import ABSENT
from dagster_kstreams.processors.versioned_tables import (
    VersionedTableSource, check_consumers, keeps_own_store, versioned_table,
)
from dagster_kstreams.topology.node_specs import NodeKind

__all__ = ["TableStepStore", "VersionedTableStepStore", "BUILDERS"]

_STEPS = {NodeKind.TABLE_FILTER, NodeKind.TABLE_MAP_VALUES}


class _Step:
    """What a filter (``negate``: ``filter_not``) or a map_values (``filters`` false) makes of an
    update, and whether the filter drops it (``drops_double_tombstones``: it sends old values and
    its table is not a versioned one's)."""

    def __init__(self, fn, filters: bool, negate: bool, drops_double_tombstones: bool):
        self.fn, self.filters, self.negate = fn, filters, negate
        self.drops_double_tombstones = drops_double_tombstones

    def new_value(self, processor, key, value, context):
        if value is None:
            return None
        if self.filters:
            return value if bool(processor.call(context, self.fn, key, value)) != self.negate else None
        return processor.call(context, self.fn, key, value)

    def drops(self, new, state, slot) -> bool:
        return self.drops_double_tombstones and new is None and state.values[slot] is ABSENT


class TableStepStore(KeyValueStoreProcessor):
    """A table filter or map_values over its own plain store (not registered: it runs the
    table-filter and table-map-values kinds)."""

    def __init__(self, name: str, store: str, cached: bool, step: _Step):
        super().__init__(name, store, cached)
        self.step = step
        self.kind = NodeKind.TABLE_FILTER.value if step.filters else NodeKind.TABLE_MAP_VALUES.value

    def process(self, key, value, context, out, state) -> None:
        self.needs_state(state)
        new = self.step.new_value(self, key, value, context)
        if not self.step.drops(new, state, self.state_slot):
            self._put(key, ABSENT if new is None else new, context, out, state)


class VersionedTableStepStore(VersionedTableSource):
    """A table filter or map_values over its own versioned store."""

    def __init__(self, name: str, store: str, retention_ms: int, step: _Step):
        kind = NodeKind.TABLE_FILTER.value if step.filters else NodeKind.TABLE_MAP_VALUES.value
        super().__init__(name, store, retention_ms, kind)
        self.step = step

    def process(self, key, value, context, out, state) -> None:
        self.needs_state(state)
        new = self.step.new_value(self, key, value, context)
        if not self.step.drops(new, state, self.state_slot):
            self.put_version(key, new, context, out, state)


def _check_own_timestamps(factory, ctx) -> None:
    """A versioned store's put is decided by the update's timestamp: refuse a table whose updates the
    runner stamps otherwise than Kafka Streams."""
    sub = ctx.subtopology
    node = factory
    while node.kind in _STEPS:
        (parent,) = node.parents
        node = sub.node(parent)
    if node.kind not in (NodeKind.TABLE_SOURCE, NodeKind.TO_TABLE):
        raise UnsupportedTopologyError(
            f"processor {factory.name} ({factory.kind.value}) puts the updates of {node.name} ({node.kind.value}) "
            "into a versioned store by their timestamps; Kafka Streams stamps that table's updates with other "
            "times than the Spark runner, which versions only the updates of a table read from a topic or made "
            "by to_table (through filter/map_values)")


def _with_own_store(fallback, filters: bool):
    def build(factory, ctx):
        if not keeps_own_store(ctx, factory):
            return fallback(factory, ctx)
        params = factory.params
        fn = ctx.function(factory, params["predicate" if filters else "mapper"]).as_key_value()
        drops = filters and bool(params.get("send_old_values")) and not params.get("versioned")
        step = _Step(fn, filters, bool(params.get("negate")), drops)
        store = params["store_name"]
        versioned = versioned_table(ctx, store)
        if versioned is None:
            return TableStepStore(factory.name, store, ctx.cached(store), step)
        _check_own_timestamps(factory, ctx)
        check_consumers(factory, ctx)
        return VersionedTableStepStore(factory.name, store, versioned.retention_ms, step)

    return build


BUILDERS = {
    NodeKind.TABLE_FILTER: _with_own_store(table_old_values.BUILDERS[NodeKind.TABLE_FILTER], filters=True),
    NodeKind.TABLE_MAP_VALUES: _with_own_store(table_old_values.BUILDERS[NodeKind.TABLE_MAP_VALUES], filters=False),
}
