"""Tables materialized in a versioned store (``Materialized.as_(Stores.persistent_versioned_key_value_store(
name, history_retention))`` on ``StreamsBuilder.table`` or ``KStream.to_table``), as Kafka Streams'
``KTableSource`` writes one (KIP-889, KIP-914); and the other writers of a versioned store, which put
their updates the same way (:class:`VersionedStoreWriter`): a table's filter/map_values
(:mod:`.table_step_stores`), a table-table join's merge (:class:`VersionedJoinMerge`), a foreign-key
join's result (a :class:`VersionedTableSource` at its answers' times: :mod:`.fk_joins`), a grouped
stream's or a cogroup's aggregation (:class:`VersionedAggregate`) and a re-grouped table's
(:mod:`.table_regroup`).

The key's slot holds its latest value, exactly as for a plain table, so that everything reading
a table's current value (``to_stream``, a re-grouping, a stream-stream join's inputs, the store
reader) is unchanged. The versions behind it and the store's observed stream time (the largest
timestamp put into the store, all keys: :mod:`.version_history`) are task-level values, so a
sub-topology with a versioned table runs task-grouped (:mod:`.task_state`): ``TaskState.values``
holds ``{raw key: versions}`` and the time under the store's name. A key's versions are pruned
to the history retention whenever the key is written.

Per record, as Kafka Streams 4.3.1 does: a null key is skipped; a record older than the store's
observed time minus the history retention is dropped (not stored, not forwarded); any other is
stored as a version and forwarded at once (versioned stores have no record cache), also when it
is out of order (older than the key's latest version): Kafka Streams forwards those too, marked
not latest (:attr:`GroupState.latest <dagster_kstreams.processors.state.GroupState.latest>` false while
one is forwarded), and ``to_stream`` emits them; only the latest version changes the key's current
value. A table-table join and a re-grouping reading the table (through its filter/map_values without a
store) skip those, as Kafka Streams' processors with ``useVersionedSemantics`` do
(:func:`reads_versioned_updates`); a filter/map_values with a store of its own puts them into it as its
latest value (:func:`~.table_step_stores.keeps_own_store`).
A stream-table join reads the version valid at the stream record's timestamp
(:meth:`VersionedTable.as_of`).
"""
from __future__ import annotations

import dataclasses
from typing import Any, Optional

from dagster_kstreams.processors import version_history
from dagster_kstreams.processors.aggregations import BUILDERS as TABLE_BUILDERS
from dagster_kstreams.processors.aggregations import Aggregate, KeyValueStoreProcessor, user_aggregation
from dagster_kstreams.processors.base import reachable
from dagster_kstreams.processors.errors import UnsupportedTopologyError
from dagster_kstreams.processors.state import ABSENT
from dagster_kstreams.processors.task_state import task_state_of
from dagster_kstreams.topology.node_specs import NodeKind

__all__ = ["VersionedTable", "VersionedStoreWriter", "VersionedTableSource", "VersionedAggregate", "VersionedJoinMerge",
           "versioned_table", "reads_versioned_updates", "check_consumers", "BUILDERS"]


class VersionedTable:
    """Where one versioned store keeps its versions and observed time in the task's state."""

    def __init__(self, store: str, retention_ms: int):
        self.store = store
        self.retention_ms = retention_ms
        # Task-level value names: the names a task's checkpoint holds, keep them.
        self.history_key = f"versioned.history.{store}"
        self.time_key = f"versioned.store_time.{store}"

    def store_time(self, values: dict) -> int:
        return values.get(self.time_key, version_history.NO_TIME)

    def versions(self, values: dict, raw_key: Optional[bytes]) -> Optional[list]:
        return values.get(self.history_key, {}).get(raw_key)

    def expired(self, values: dict, timestamp: int) -> bool:
        """Whether a put at ``timestamp`` is refused (older than the history retention allows)."""
        return version_history.expired(timestamp, self.store_time(values), self.retention_ms)

    def put(self, values: dict, raw_key: Optional[bytes], timestamp: int, value: Any) -> Optional[int]:
        """Put the key's version at ``timestamp`` (the caller checked it is not :meth:`expired`; value
        None: a tombstone), advance the observed time and prune the key's history; the version's
        validTo (None: it is the key's latest)."""
        store_time = max(self.store_time(values), timestamp)
        values[self.time_key] = store_time
        versions = values.setdefault(self.history_key, {}).setdefault(raw_key, [])
        version_history.put(versions, timestamp, value)
        valid_to = version_history.valid_to(versions, timestamp)
        version_history.prune(versions, store_time, self.retention_ms)
        return valid_to

    def version_as_of(self, values: dict, raw_key: Optional[bytes], timestamp: Optional[int]) -> Optional[list]:
        """The key's version ``[timestamp, value]`` valid at ``timestamp`` (None: the latest), as
        :func:`.version_history.version_as_of` finds it."""
        versions = self.versions(values, raw_key)
        if timestamp is None:
            return versions[-1] if versions else None
        return version_history.version_as_of(versions, timestamp, self.store_time(values), self.retention_ms)

    def as_of(self, reader, state, timestamp: int) -> Any:
        """The key's value valid at ``timestamp`` (ABSENT: none), for ``reader``'s record."""
        values = task_state_of(reader, state).values
        value = version_history.as_of(self.versions(values, state.raw_key), timestamp, self.store_time(values),
                                      self.retention_ms)
        return ABSENT if value is None else value


class VersionedStoreWriter(KeyValueStoreProcessor):
    """A processor writing a versioned store (``table``): :meth:`put_version` is the put and forward of
    every writer of one (a table source's, a filter's or map_values': :mod:`.table_step_stores`, a
    table-table join's merge, an aggregation's: of a grouped stream, a cogroup or a re-grouped table,
    :mod:`.table_regroup`). The store's observed time and the versions are task-level values."""

    task_grouped = True
    keeps_timestamps = False  # its versions hold them (an aggregation's too: update_context)
    table: VersionedTable

    def update_context(self, context, state):
        """An aggregation's update stamped as Kafka Streams' (``KStreamAggregate``, ``KTableAggregate``,
        ``KTableReduce``) with the larger of the record's timestamp and the key's aggregate's, which it
        reads from the versioned store's latest version (none when the latest is a tombstone)."""
        if state.values[self.state_slot] is ABSENT:
            return context
        versions = self.table.versions(task_state_of(self, state).values, state.raw_key)
        return dataclasses.replace(context, timestamp=max(context.timestamp, versions[-1][0]))

    def put_version(self, key, value, context, out, state) -> None:
        """Put ``value`` (None: a tombstone) as the key's version at the record's timestamp, and
        forward it unless the put is expired (Kafka Streams' ``PUT_RETURN_CODE_NOT_PUT``)."""
        table, timestamp = self.table, context.timestamp
        values = task_state_of(self, state).values
        if table.expired(values, timestamp):
            return  # Kafka Streams: "Skipping record for expired put", nothing forwarded
        if table.put(values, state.raw_key, timestamp, value) is None:  # the key's latest version
            self._put(key, ABSENT if value is None else value, context, out, state)
            return
        # Out of order: stored in the history only; forwarded with the key's latest as its old value,
        # marked not latest (Change.isLatest false) for the processors that skip it.
        slot = self.state_slot
        state.old_values[slot] = state.values[slot]
        state.changed = True
        state.latest = False
        try:
            self.forward(key, value, context, out, state)
        finally:
            state.latest = True


class VersionedTableSource(VersionedStoreWriter):
    """``KTableSource`` over a versioned store (not registered: it runs the table-source, to-table and
    foreign-key join result kinds)."""

    def __init__(self, name: str, store: str, retention_ms: int, kind: str = NodeKind.TABLE_SOURCE.value):
        super().__init__(name, store, cached=False)
        self.kind = kind  # table_source or to_table, as the processor it stands for
        self.table = VersionedTable(store, retention_ms)

    def process(self, key, value, context, out, state) -> None:
        self.needs_state(state)
        if key is None:
            return
        self.put_version(key, value, context, out, state)


class VersionedAggregate(VersionedStoreWriter, Aggregate):
    """``KStreamAggregate`` (count, reduce, aggregate of a grouped stream) over a versioned store (not
    registered: it runs the aggregate kind). Its update is stamped with the larger of the record's
    timestamp and the key's latest version's (:meth:`update_context`), and put as a version at that
    time: never out of order, so always the latest, but dropped (not stored, not forwarded: the key's
    aggregate stays as it was) when older than the store's observed time minus its history retention,
    as Kafka Streams 4.3.1 drops a put it reports ``PUT_RETURN_CODE_NOT_PUT``."""

    def __init__(self, name: str, store: str, retention_ms: int, aggregation: str, initializer=None,
                 aggregator=None, reducer=None):
        Aggregate.__init__(self, name, store, False, aggregation, initializer, aggregator, reducer)
        self.table = VersionedTable(store, retention_ms)

    def process(self, key, value, context, out, state) -> None:
        self.needs_state(state)
        if key is None or value is None:
            return
        self.put_version(key, self.aggregated(key, value, context, state), self.update_context(context, state),
                         out, state)


class VersionedJoinMerge(VersionedTableSource):
    """``KTableKTableJoinMerger`` over a versioned store (not registered: it runs the table-table join
    merge kind, :mod:`.table_joins`). The join processors stamp an update with the larger of both rows'
    times (their stores keep timestamps: the sub-topology runs task-grouped); the merge puts it as a
    version at that time, as a table source puts a record: dropped when expired, forwarded marked not
    latest when older than the key's latest version (a row of one table updated out of its order with
    the other's), and then the joined table's current value stays the newer one."""

    def __init__(self, name: str, store: str, retention_ms: int):
        super().__init__(name, store, retention_ms, NodeKind.TABLE_TABLE_JOIN_MERGE.value)


def versioned_table(ctx, store: str) -> Optional[VersionedTable]:
    """The versioned store ``store`` of the topology (None: a plain key-value store)."""
    retention_ms = ctx.topology.state_stores[store].history_retention_ms
    return None if retention_ms is None else VersionedTable(store, retention_ms)


# What forwards a versioned table's updates as they are (its filter and map_values without a store),
# and what may consume them: its to_stream (which drops the mark), a table-table join, a re-grouping
# and a foreign-key join's either side (which skip an update marked not latest: reads_versioned_updates),
# a filter/map_values with a store (which keeps its own store: table_step_stores.keeps_own_store).
# Kafka Streams refuses a suppression of a versioned table; the runner refuses processors.
_PASSING = {NodeKind.TABLE_FILTER, NodeKind.TABLE_MAP_VALUES}
_CONSUMERS = {NodeKind.TABLE_TO_STREAM, NodeKind.TABLE_TABLE_JOIN, NodeKind.TABLE_GROUP_BY_MAP,
              NodeKind.FK_SUBSCRIPTION_SEND, NodeKind.FK_FOREIGN_TABLE_JOIN}
_VERSIONED_WRITERS = {NodeKind.TABLE_SOURCE, NodeKind.TO_TABLE, NodeKind.TABLE_FILTER, NodeKind.TABLE_MAP_VALUES,
                      NodeKind.AGGREGATE, NodeKind.TABLE_TABLE_JOIN_MERGE, NodeKind.TABLE_AGGREGATE,
                      NodeKind.FK_JOIN_RESULT}


def reads_versioned_updates(ctx, table_node_name: str) -> bool:
    """Whether the table at ``table_node_name`` forwards a versioned store's updates, out-of-order ones
    marked not latest: a table read from a topic or made by ``to_table``, or a filter/map_values with a
    store, into a versioned store; or its filter/map_values without a store (Kafka Streams'
    ``isVersionedOrVersionedUpstream``, which turns on ``useVersionedSemantics`` in the processor
    reading it)."""
    sub = ctx.subtopology
    node = sub.node(table_node_name)
    while node.kind in _PASSING and node.params.get("store_name") not in node.stores:
        if len(node.parents) != 1:
            return False
        node = sub.node(node.parents[0])
    store = node.params.get("store_name")
    return (node.kind in _VERSIONED_WRITERS and store in node.stores
            and versioned_table(ctx, store) is not None)


def check_consumers(factory, ctx) -> None:
    """Refuses a consumer of the versioned store ``factory`` writes that the runner cannot give the
    "not latest" mark to (names it)."""
    sub = ctx.subtopology

    def passes(node) -> bool:  # a cogroup's pass-through forwards its aggregations' updates
        return (node.kind in _PASSING and node.params.get("store_name") not in node.stores) \
            or node.kind is NodeKind.COGROUP_MERGE

    def step(node):
        return node.children if node is factory or passes(node) else ()

    for node in reachable(sub, [factory.name], step):
        if node is factory or passes(node) or node.kind in _PASSING or node.kind in _CONSUMERS:
            continue
        raise UnsupportedTopologyError(
            f"processor {node.name} ({node.kind.value}) consumes the updates of the versioned table "
            f"{factory.name}; the Spark runner passes a versioned table's updates (through filter/map_values) "
            "to to_stream, a table-table join, a foreign-key join, a group_by and a filter/map_values with a store "
            "only, and reads it in stream-table joins")


def _table(factory, ctx):
    store = factory.params["store_name"]
    versioned = versioned_table(ctx, store) if store in factory.stores else None
    if versioned is None:
        return TABLE_BUILDERS[factory.kind](factory, ctx)
    check_consumers(factory, ctx)
    return VersionedTableSource(factory.name, store, versioned.retention_ms, factory.kind.value)


def _aggregate(factory, ctx):
    params = factory.params
    versioned = versioned_table(ctx, params["store_name"])
    if versioned is None:
        return TABLE_BUILDERS[factory.kind](factory, ctx)
    check_consumers(factory, ctx)
    return VersionedAggregate(factory.name, versioned.store, versioned.retention_ms, params["operation"],
                              *user_aggregation(params))


BUILDERS = {
    NodeKind.TABLE_SOURCE: _table,
    NodeKind.TO_TABLE: _table,
    NodeKind.AGGREGATE: _aggregate,  # a grouped stream's count/reduce/aggregate over a versioned store
}
