"""A table's ``filter``/``map_values`` materialized in a store of its own, after a versioned table
(Kafka Streams' ``KTableFilter`` / ``KTableMapValues`` with a ``queryableName``).

Elsewhere the runner keeps no store for a materialized filter or map_values: its value for a key is
the parent table's value through the filter or the mapper, which is what its store would hold. After
a versioned table it is not: Kafka Streams (4.3.1) puts an out-of-order update, forwarded marked not
latest, into the filter's plain store as the key's latest value, and forwards it marked latest; the
versioned table's current value stays the newer one. So there the filter or mapper keeps its store
(:func:`~.versioned_tables.keeps_own_store`), a key-value store slot like a table's: the new value
(the filtered value, or None when it fails; the mapped value of a non-null one) is put into it, a
None deletes the key, and the update is forwarded (with the store's previous value as its old one),
at once or, with the record cache, at the flush. Versioned semantics: the filter never drops an
update whose new and old values both fail (``useVersionedSemantics``), it forwards the tombstone.
Readers downstream (joins, re-groupings) read the store (:func:`~.table_joins.value_getter`).
"""

from __future__ import annotations

from dagster_kstreams.processors import stateless, table_old_values
from dagster_kstreams.processors.aggregations import KeyValueStoreProcessor
from dagster_kstreams.processors.state import ABSENT
from dagster_kstreams.processors.versioned_tables import keeps_own_store
from dagster_kstreams.topology.node_specs import NodeKind

__all__ = ["TableStepStore", "BUILDERS"]


class TableStepStore(KeyValueStoreProcessor):
    """A table filter (``negate``: ``filter_not``) or map_values (``filters`` false) over its own store
    (not registered: it runs the table-filter and table-map-values kinds)."""

    def __init__(self, name: str, store: str, cached: bool, fn, filters: bool, negate: bool = False):
        super().__init__(name, store, cached)
        self.fn, self.filters, self.negate = fn, filters, negate
        self.kind = NodeKind.TABLE_FILTER.value if filters else NodeKind.TABLE_MAP_VALUES.value

    def process(self, key, value, context, out, state) -> None:
        self.needs_state(state)
        if value is None:
            new = None
        elif self.filters:
            new = value if bool(self.call(context, self.fn, key, value)) != self.negate else None
        else:
            new = self.call(context, self.fn, key, value)
        self._put(key, ABSENT if new is None else new, context, out, state)


def _with_own_store(fallback, filters: bool):
    def build(factory, ctx):
        if not keeps_own_store(ctx, factory):
            return fallback(factory, ctx)
        params = factory.params
        fn = ctx.function(factory, params["predicate" if filters else "mapper"]).as_key_value()
        store = params["store_name"]
        return TableStepStore(factory.name, store, ctx.cached(store), fn, filters, bool(params.get("negate")))

    return build


BUILDERS = {
    NodeKind.TABLE_FILTER: _with_own_store(table_old_values.BUILDERS[NodeKind.TABLE_FILTER], filters=True),
    NodeKind.TABLE_MAP_VALUES: _with_own_store(stateless.BUILDERS[NodeKind.TABLE_MAP_VALUES], filters=False),
}
