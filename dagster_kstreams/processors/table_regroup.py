"""Re-grouping a table: ``KTable.group_by(selector)`` then ``count``, ``reduce(adder, subtractor)`` or
``aggregate(initializer, adder, subtractor)`` (Kafka Streams' ``KTableRepartitionMap``,
``KTableAggregate``, ``KTableReduce``).

A table row that changes group must leave its old group before it joins the new one, so every
table update travels as a :class:`~dagster_kstreams.processors.changes.Change` (new and old
value) through the repartition topic, in Kafka Streams' own record format
(:class:`~dagster_kstreams.processors.changes.ChangedSerde`).

Upstream (:class:`TableRepartitionMap`): for each update the table forwards (every update, or
once per key and micro-batch with the record cache, its old value being then the value at the
last flush) the selector maps the new value and the old value to ``(group, value)`` pairs. An update a
versioned table forwards marked not latest (out of order) is skipped, so that the aggregate holds
the latest values only (Kafka Streams' versioned semantics). A windowed table's old value is the one
its aggregation sends with the update; a session table's (:mod:`.session_table_reads`) is a merged
session's with its delete, none with the merged session's put, so merged sessions are subtracted; a
transform_values' with a store of its own is that store's value before the update's put, without one its
transformer's result on the old value of the table behind (which it leaves for the re-grouping either way:
:mod:`.table_transform_values`). A pair
with a null group or a null value is dropped. When both pairs select the same group, one record
``Change(new, old)`` goes to it; otherwise the subtraction ``Change(None, old)`` goes to the old
group first, then the addition ``Change(new, None)`` to the new one (Kafka Streams 4.x; keys are
compared with ``==``, except ``bytes``, which Java compares by identity, so never equal). A
tombstone only subtracts; a new row only adds.

Downstream (:class:`TableAggregate`): the subtractor on the old value (only when the group has an
aggregate), then the adder on the new value (the initializer, or for ``reduce`` the value itself,
when there is no aggregate). ``count`` is ``aggregate(0, +1, -1)``, so a group whose rows all
left keeps the count 0; a ``reduce`` or ``aggregate`` whose result is None deletes the group's
row and forwards a tombstone.

Timestamps: Kafka Streams gives an aggregate's update the larger of the record's timestamp and
the aggregate's previous one (whenever there was one: after a subtraction, an addition, or both);
so does the runner, its store keeping each key's timestamp beside the aggregate
(:meth:`~.aggregations.KeyValueStoreProcessor.update_context`), or in a versioned store as the
latest version's (:class:`VersionedTableAggregate`, whose puts that stamp decides).
"""

from __future__ import annotations

from typing import Callable, Optional

from dagster_kstreams.processors.aggregations import KeyValueStoreProcessor
from dagster_kstreams.processors.base import Processor, register
from dagster_kstreams.processors.changes import Change
from dagster_kstreams.processors.errors import ProcessingError
from dagster_kstreams.processors.session_table_reads import check_session_regrouping, is_session_table
from dagster_kstreams.processors.state import ABSENT
from dagster_kstreams.processors.stateless import pair
from dagster_kstreams.processors.table_behind import table_behind
from dagster_kstreams.processors.table_old_values import old_value_getter
from dagster_kstreams.processors.value_getters import ValueGetter, value_getter
from dagster_kstreams.processors.versioned_tables import (
    VersionedStoreWriter, VersionedTable, check_consumers, reads_versioned_updates, versioned_table,
)
from dagster_kstreams.topology.node_specs import NodeKind

__all__ = ["TableRepartitionMap", "TableAggregate", "VersionedTableAggregate", "same_group", "BUILDERS"]


def same_group(old_key, new_key) -> bool:
    """Whether two selected keys are one group as Kafka Streams decides (``equals``; a ``byte[]``
    key, our ``bytes``, equals only itself)."""
    if isinstance(old_key, (bytes, bytearray)):
        return False
    return old_key == new_key


@register
class TableRepartitionMap(Processor):
    """``KTableRepartitionMap``: a table update as the subtraction from its old group and the
    addition to its new one; ``table`` reads the old value behind the update."""

    kind = "table_group_by_map"

    def __init__(self, name: str, selector: Callable, table: ValueGetter, skips_not_latest: bool = False):
        super().__init__(name)
        self.fn, self.table = selector, table
        # its table is a versioned one's (useVersionedSemantics): the aggregate takes latest updates only
        self.skips_not_latest = skips_not_latest

    def init(self, program) -> None:
        super().init(program)
        self.table.bind(program)

    def process(self, key, value, context, out, state) -> None:
        if key is None:
            raise ProcessingError(f"processor {self.name} ({self.kind}): the key of a table update is null "
                                  f"(record at {context.describe()})")
        self.needs_state(state)
        if self.skips_not_latest and not state.latest:
            return  # Kafka Streams sends an out-of-order update of a versioned table to no group
        old_value = self.table.get_old(self, key, state, context)
        # Kafka Streams maps the new value first, then the old one.
        new_key, new_value = self._select(key, value, context)
        old_key, old_mapped = self._select(key, old_value, context)
        adds = new_key is not None and new_value is not None
        subtracts = old_key is not None and old_mapped is not None
        if adds and subtracts and same_group(old_key, new_key):
            self.forward(old_key, Change(new_value, old_mapped), context, out, state)
            return
        if subtracts:
            self.forward(old_key, Change(None, old_mapped), context, out, state)
        if adds:
            self.forward(new_key, Change(new_value, None), context, out, state)

    def _select(self, key, value, context) -> tuple:
        """The selector's ``(group, value)`` for a table value (None, or a None result: ``(None, None)``)."""
        if value is None:
            return None, None
        selected = self.call(context, self.fn, key, value)
        return (None, None) if selected is None else pair(self, selected)


@register
class TableAggregate(KeyValueStoreProcessor):
    """``KTableAggregate`` / ``KTableReduce``: ``aggregation`` is ``"count"``, ``"reduce"``
    (``adder(aggregate, value)``, ``subtractor(aggregate, value)``) or ``"aggregate"``
    (``initializer()``, ``adder(key, value, aggregate)``, ``subtractor(key, value, aggregate)``)."""

    kind = "table_aggregate"
    keeps_timestamps = True  # its update's stamp is the larger of the record's and the aggregate's

    def __init__(self, name: str, store: str, cached: bool, aggregation: str, adder: Optional[Callable] = None,
                 subtractor: Optional[Callable] = None, initializer: Optional[Callable] = None):
        super().__init__(name, store, cached)
        self.aggregation = aggregation
        self.adder, self.subtractor, self.initializer = adder, subtractor, initializer

    def process(self, key, change: Change, context, out, state) -> None:
        self.needs_state(state)
        if key is None:
            raise self._null_key(context)
        aggregate = self.aggregated(key, change, context, state)
        self._put(key, ABSENT if aggregate is None else aggregate, self.update_context(context, state), out, state)

    def aggregated(self, key, change: Change, context, state):
        """The group's aggregate after the change (None: none, the group's row deleted)."""
        current = state.values[self.state_slot]
        aggregate = None if current is ABSENT else current
        if change.old is not None and aggregate is not None:
            aggregate = self._subtract(context, key, change.old, aggregate)
        if change.new is not None:
            aggregate = self._add(context, key, change.new, aggregate)
        return aggregate

    def _null_key(self, context) -> ProcessingError:
        return ProcessingError(f"processor {self.name} ({self.kind}): the key of a re-grouped table update is "
                               f"null (record at {context.describe()})")

    def _subtract(self, context, key, value, aggregate):
        if self.aggregation == "count":
            return aggregate - 1
        if self.aggregation == "reduce":
            return self.call(context, self.subtractor, aggregate, value)
        return self.call(context, self.subtractor, key, value, aggregate)

    def _add(self, context, key, value, aggregate):
        if self.aggregation == "count":
            return (0 if aggregate is None else aggregate) + 1
        if self.aggregation == "reduce":
            return value if aggregate is None else self.call(context, self.adder, aggregate, value)
        base = self.call(context, self.initializer) if aggregate is None else aggregate
        return self.call(context, self.adder, key, value, base)


class VersionedTableAggregate(VersionedStoreWriter, TableAggregate):
    """``KTableAggregate`` / ``KTableReduce`` over a versioned store (not registered: it runs the
    table-aggregate kind). The update is stamped with the larger of the record's timestamp and the
    group's aggregate's (its latest version's), and put as a version at that time: dropped when older
    than the store's observed time minus its history retention (nothing forwarded, the aggregate
    stays as it was: the change is lost to it, as in Kafka Streams 4.3.1), else the latest, unless
    the group's latest version is a tombstone newer than the record (a reduce or aggregate that
    returned None): then it is history only, forwarded marked not latest."""

    def __init__(self, name: str, store: str, retention_ms: int, aggregation: str, adder: Optional[Callable] = None,
                 subtractor: Optional[Callable] = None, initializer: Optional[Callable] = None):
        TableAggregate.__init__(self, name, store, False, aggregation, adder, subtractor, initializer)
        self.table = VersionedTable(store, retention_ms)

    def process(self, key, change: Change, context, out, state) -> None:
        self.needs_state(state)
        if key is None:
            raise self._null_key(context)
        stamped = self.update_context(context, state)
        self.put_version(key, self.aggregated(key, change, context, state), stamped, out, state)


# -- definition time -------------------------------------------------------------------------
# The tables whose suppression a re-grouping reads (the old value the suppression sends): a table read
# from a topic, by to_table or an aggregation, or a table-table join's result (of plain tables).
_SUPPRESSED_WRITERS = frozenset({NodeKind.TABLE_SOURCE, NodeKind.TO_TABLE, NodeKind.AGGREGATE, NodeKind.TABLE_AGGREGATE,
                                 NodeKind.TABLE_TABLE_JOIN_MERGE})


def suppressed_plain_table(behind) -> bool:
    """Whether a suppression is on the way from a plain (not windowed) table written by one of
    :data:`_SUPPRESSED_WRITERS`: the last step that sends its own old values is that suppression, or a
    filter/map_values with a store of its own after it (Kafka Streams' ``KTableFilter``/``KTableMapValues``
    with a ``queryableName`` sends the old value its store held, what it last forwarded for the key, not
    the suppression's: it keeps its store for it, :func:`~.table_step_stores.keeps_own_store`)."""
    return behind.writer is not None and behind.writer.kind in _SUPPRESSED_WRITERS \
        and behind.old_value_sender() is not None


def _repartition_map(factory, ctx) -> TableRepartitionMap:
    (table,) = factory.parents
    selector = ctx.function(factory, factory.params["selector"])
    behind = table_behind(ctx.subtopology, factory)
    if is_session_table(behind):
        # the old value its session aggregation sends with each update: a merged session's with its delete
        check_session_regrouping(ctx.subtopology, factory, behind)
        table_values = old_value_getter(ctx, factory, behind)
    elif behind.writer is not None and behind.writer.kind is NodeKind.TABLE_TRANSFORM_VALUES:
        # the old value a transform_values reads from its own store before the put, or without one transforms,
        # through the filters/map_values without a store between (transform_values_steps)
        table_values = old_value_getter(ctx, factory, behind)
    elif suppressed_plain_table(behind):
        # the old value the suppression sends with each update it forwards (its latest buffered update's),
        # or the one a filter/map_values keeping its store after it held
        table_values = old_value_getter(ctx, factory, behind)
    else:
        # A windowed table's old value: the one its aggregation forwards with the window's update.
        table_values = value_getter(ctx, factory, table, through_joins=True, windowed=True, sessions=True)
    return TableRepartitionMap(factory.name, selector.as_key_value(), table_values, reads_versioned_updates(ctx, table))


def _table_aggregate(factory, ctx) -> TableAggregate:
    params = factory.params
    operation = params["operation"]
    adder = subtractor = initializer = None
    if operation != "count":
        adder, subtractor = params["adder"].fn, params["subtractor"].fn
    if operation == "aggregate":
        initializer = params["initializer"].fn
    store = params["store_name"]
    versioned = versioned_table(ctx, store)
    if versioned is not None:
        check_consumers(factory, ctx)
        return VersionedTableAggregate(factory.name, store, versioned.retention_ms, operation, adder, subtractor,
                                       initializer)
    return TableAggregate(factory.name, store, ctx.cached(store), operation, adder, subtractor, initializer)


BUILDERS = {
    NodeKind.TABLE_GROUP_BY_MAP: _repartition_map,
    NodeKind.TABLE_AGGREGATE: _table_aggregate,
}
