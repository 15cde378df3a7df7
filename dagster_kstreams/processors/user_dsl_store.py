"""A DSL operation's key-value store as a user processor sees it: ``process(supplier, "counts")``
on the store of ``count(Materialized.as_("counts"))`` (of a grouped stream, a re-grouped table or a
cogroup), of ``to_table``, of a table read from a topic, of a table-table join or of a table's
``filter``/``map_values`` (Kafka Streams' ``TimestampedKeyValueStore`` behind its read-write decorator).
A join of windowed tables, and a ``filter``/``map_values`` of one or of a windowed aggregation's table, keep
their stores by window (``Windowed`` keys): :mod:`.user_dsl_windowed_keys` views them.

The view reads and writes the operation's own state, not a copy: each key's value is the store's
slot of the key's group in the task's state (:mod:`.task_state`; a sub-topology with a user processor
runs task-grouped), and its timestamp the store's task-level timestamps, which the operation keeps
once a processor names its store (``KeyValueStoreProcessor.keeps_timestamps``; a filter's or
map_values' store is then kept, as :class:`~.table_step_stores.TableStepStore`; a join's is its
merge's, stamped with the larger of both rows' times: :class:`~.table_joins.TableTableJoin`). So what
a processor puts is what the next record's aggregation adds to, and a table's update is what the
processor reads, within a batch, across batches and after a rerun from the checkpoint. A join never
reads its own store (Kafka Streams' merger puts the join's new value whatever the store holds): its
next update of the key overwrites a processor's write.

Values are :class:`~dagster_kstreams.topology.processor_api.ValueAndTimestamp`; reads give a copy
made through the store's value serde (as Kafka Streams deserializes stored bytes), writes store one
(the aggregation later sees what Kafka Streams would read back). ``range``/``all`` iterate in the
order of the keys as the store's key serde writes them. A write goes through the operation's own
:meth:`~.aggregations.KeyValueStoreProcessor.write`: an uncached store forwards nothing (as Kafka
Streams' store, written by another processor, forwards nothing); a cached one forwards the key's
final value at the batch's flush as the operation's own update, with the timestamp written (or, for
a delete, the record's or the punctuation's), as Kafka Streams' record cache flushes it.
"""

from __future__ import annotations

from typing import Any, Callable, Iterator, Optional

from dagster_kstreams.processors.base import reachable
from dagster_kstreams.processors.errors import UnsupportedTopologyError
from dagster_kstreams.processors.state import ABSENT
from dagster_kstreams.processors.table_behind import table_of
from dagster_kstreams.processors.user_dsl_view import DslStoreView
from dagster_kstreams.processors.windowed_store_keys import (
    check_windowed_key_serde, check_windows_kept_by_start, keyed_by_sessions,
)
from dagster_kstreams.processors.windowed_table_reads import is_windowed_table
from dagster_kstreams.topology.node_specs import NodeKind, StoreType
from dagster_kstreams.topology.processor_api import KeyValue, ValueAndTimestamp
from dagster_kstreams.topology.windows import SlidingWindows, TimeWindows

__all__ = ["TimestampedKeyValueStore", "check_dsl_store", "keyed_by_windows"]


class TimestampedKeyValueStore(DslStoreView):
    """A user processor's view of a DSL key-value store (:class:`~.user_dsl_view.DslStoreView`;
    ``owner``: the store's processor, its slot, timestamps and :meth:`write`)."""

    def __init__(self, name: str, key_serde, value_serde, owner, store_key_serde, task,
                 write_context: Callable[[Optional[int]], Any]):
        super().__init__(name, key_serde, value_serde, owner, store_key_serde, task, write_context)
        self._timestamps = task.timestamps(owner.store)

    def _read(self, raw_key: Optional[bytes], value) -> Optional[ValueAndTimestamp]:
        if value is ABSENT:
            return None
        return ValueAndTimestamp(self._copy(value), self._timestamps.get(raw_key, -1))

    def get(self, key) -> Optional[ValueAndTimestamp]:
        group = self._group(key)
        return self._read(group.raw_key, group.values[self._owner.state_slot])

    def put(self, key, value_and_timestamp: Optional[ValueAndTimestamp]) -> None:
        """Store the value with its timestamp (None, or a None value: delete the key)."""
        if value_and_timestamp is not None and not isinstance(value_and_timestamp, ValueAndTimestamp):
            raise TypeError(f"store {self.name}: put() takes a ValueAndTimestamp (ValueAndTimestamp.make(value, "
                            f"timestamp)), got {type(value_and_timestamp).__name__}")
        group = self._group(key)
        value = None if value_and_timestamp is None else value_and_timestamp.value()
        if value is None:
            self._owner.write(key, ABSENT, self._write_context(None), group, by_user_processor=True)
        else:
            self._owner.write(key, self._copy(value), self._write_context(value_and_timestamp.timestamp()), group,
                              by_user_processor=True)

    def put_if_absent(self, key, value_and_timestamp: Optional[ValueAndTimestamp]) -> Optional[ValueAndTimestamp]:
        """Store it unless ``key`` has a value; returns the one it had (None: none)."""
        old = self.get(key)
        if old is None:
            self.put(key, value_and_timestamp)
        return old

    def put_all(self, entries) -> None:
        for key, value_and_timestamp in entries:
            self.put(key, value_and_timestamp)

    def delete(self, key) -> Optional[ValueAndTimestamp]:
        """Remove ``key``; returns what it had (None: nothing)."""
        old = self.get(key)
        if old is not None:
            self.put(key, None)
        return old

    def range(self, from_key=None, to_key=None) -> Iterator[KeyValue]:
        """The entries with ``from_key <= key <= to_key`` in serialized-key order (None: unbounded)."""
        low = None if from_key is None else self._key_serde.serialize(from_key)
        high = None if to_key is None else self._key_serde.serialize(to_key)
        return iter([entry for raw, entry in self._entries()
                     if (low is None or raw >= low) and (high is None or raw <= high)])

    def reverse_range(self, from_key=None, to_key=None) -> Iterator[KeyValue]:
        return iter(list(self.range(from_key, to_key))[::-1])

    def all(self) -> Iterator[KeyValue]:
        return iter([entry for _, entry in self._entries()])

    def prefix_scan(self, prefix, prefix_key_serializer) -> Iterator[KeyValue]:
        """Kafka Streams' ``prefixScan``: the entries whose key, as the store writes it, starts with
        ``prefix`` as ``prefix_key_serializer`` (a serde) writes it, in that order."""
        start = prefix_key_serializer.serialize(prefix)
        return iter([entry for raw, entry in self._entries() if raw.startswith(start)])

    def reverse_all(self) -> Iterator[KeyValue]:
        return iter([entry for _, entry in self._entries()][::-1])

    def approximate_num_entries(self) -> int:
        return len(self._task.slot_entries(self._owner.state_slot))

    def _entries(self) -> list[tuple[bytes, KeyValue]]:
        """``(key as the store writes it, entry)`` of every key, in that order: a snapshot, which
        writes while iterating do not disturb."""
        entries = []
        for raw_key, value in self._task.slot_entries(self._owner.state_slot):
            key = self._key_of_group(raw_key)
            entries.append((self._key_serde.serialize(key), KeyValue(key, self._read(raw_key, value))))
        return sorted(entries, key=lambda entry: entry[0])

    def _key_of_group(self, raw_key):
        """The key whose group the task's state keeps under ``raw_key``."""
        return self._store_key_serde.deserialize(raw_key)


# -- definition time -------------------------------------------------------------------------
_DSL_STORES_OFFERED = ("user processors get the key-value stores of count/reduce/aggregate (of grouped streams, "
                       "re-grouped tables and cogroups; versioned ones too), to_table, tables read from a topic (versioned "
                       "ones too), the versioned stores of foreign-key joins, table-table joins (of windowed tables too; "
                       "versioned ones too) and their filter/map_values (versioned ones too), the filter/map_values "
                       "of suppressed tables and of time-windowed, sliding-windowed and session aggregations (a "
                       "cogroup's too, emitting on every update or on window close), the window "
                       "stores of time-windowed and sliding-windowed (emitting on every update or on window close) "
                       "and the session stores of session-windowed count/reduce/aggregate (emitting on every update or "
                       "on window close), a windowed cogroup's too, and the stores added with add_state_store()")

# The DSL operations whose key-value store keeps its timestamps once a processor names it
# (aggregations.KeyValueStoreProcessor.keeps_timestamps; a filter's or map_values' store through
# table_step_stores.TableStepStore; a materialized table-table join's through its merge's ToTable).
_TIMESTAMPED_STORE_KINDS = frozenset({NodeKind.AGGREGATE, NodeKind.TABLE_AGGREGATE, NodeKind.TO_TABLE,
                                      NodeKind.TABLE_SOURCE, NodeKind.TABLE_FILTER, NodeKind.TABLE_MAP_VALUES,
                                      NodeKind.TABLE_TABLE_JOIN_MERGE})
_TABLE_STEPS = (NodeKind.TABLE_FILTER, NodeKind.TABLE_MAP_VALUES)
# Processors that name a table's store without writing it: the user processors themselves, and the joins
# reading a table through its value getter (a table-table join's other side, a stream-table join, a
# foreign-key join's subscription join reading the foreign table and its response join reading the left
# one): the store's writer decides how it is kept.
_STORE_READERS = frozenset({NodeKind.PROCESS, NodeKind.PROCESS_VALUES, NodeKind.TABLE_TABLE_JOIN,
                            NodeKind.STREAM_TABLE_JOIN, NodeKind.FK_SUBSCRIPTION_JOIN, NodeKind.FK_RESPONSE_JOIN})
# The tables whose updates a filter/map_values store stamps as Kafka Streams does: their own
# record's time (a table source, to_table), an aggregation's Kafka Streams' time, which it keeps
# (aggregations.KeyValueStoreProcessor.update_context), a
# table-table join's, the larger of both rows' times, read from its tables' stores
# (table_joins.TableTableJoin), or a
# windowed aggregation's: a window's time in its store (the largest of its records', every input's for
# a cogroup, whose inputs share the store), a session's end, forwarded on every update or when the
# window closes (Kafka Streams' fetchAndEmit forwards the stored time); the step keeps each window in
# the window's group, Kafka Streams' entry (the key and the start; a session's end too).
_STAMPED_AS_KAFKA_STREAMS = frozenset({NodeKind.TABLE_SOURCE, NodeKind.TO_TABLE, NodeKind.AGGREGATE,
                                       NodeKind.TABLE_AGGREGATE, NodeKind.TABLE_TABLE_JOIN_MERGE,
                                       NodeKind.WINDOWED_AGGREGATE})


def check_dsl_store(factory, spec, sub, key_serde) -> None:
    """A DSL store a processor names must be one the runner keeps as Kafka Streams' timestamped
    key-value store (the store of a stream, cogroup or re-grouped table aggregation, ``to_table``, a
    table source, a table-table join or their ``filter``/``map_values``, a ``filter``/``map_values`` of a
    suppressed table or of a time-windowed, sliding-windowed or session aggregation, a cogroup's too,
    emitting on every update or on window close: the windowed ones written by ``key_serde``, the store's
    key serde, a time-windowed one in a sub-topology without session windows, or over sessions a
    session-windowed one), versioned key-value store (any writer's: a foreign-key join's too),
    timestamped window store (a time- or sliding-windowed stream aggregation's, emitting on every update
    or on window close) or session store (a session-windowed one's, emitting on every update or on window
    close). A windowed or session cogroup's store is always one of these: Kafka Streams 4.3.1 builds a
    cogroup's windowed processors emitting on every update (``CogroupedStreamAggregateBuilder``; its
    cogrouped windowed streams have no ``emitStrategy``), and so does :mod:`~dagster_kstreams.topology.cogrouped`."""
    where = f"processor {factory.name}: store {spec.name}"
    if spec.type is StoreType.WINDOW:
        _check_window_store(where, spec, sub)
        return
    if spec.type is StoreType.SESSION:
        return  # every session aggregation's, a cogroup's too (which always emits on every update)
    if spec.type is not StoreType.KEY_VALUE:
        raise UnsupportedTopologyError(
            f"{where} belongs to a DSL operation ({spec.type.value}) whose store the Spark runner keeps in a form "
            f"of its own; {_DSL_STORES_OFFERED}")
    if spec.history_retention_ms is not None:
        # Every writer of a versioned store (versioned_tables.VersionedStoreWriter: a table source,
        # to_table, a foreign-key join's result, a table-table join's merge, an aggregation, a
        # filter/map_values) keeps its versions as the task's values, which the processor's view
        # (user_dsl_versioned_store.VersionedTableStore) reads and writes.
        return
    for owner in sub.nodes:
        if spec.name not in owner.stores or owner.kind in _STORE_READERS:
            continue
        if owner.kind not in _TIMESTAMPED_STORE_KINDS:
            raise UnsupportedTopologyError(
                f"{where} belongs to {owner.name} ({owner.kind.value}), whose store the Spark runner keeps "
                f"without the timestamps a processor reads (ValueAndTimestamp); {_DSL_STORES_OFFERED}")
        if owner.kind in _TABLE_STEPS:
            _check_table_step(where, owner, sub)
        if is_windowed_table(sub, owner):
            sessions = keyed_by_sessions(sub, owner)
            check_windowed_key_serde(where, owner, key_serde, sessions, _DSL_STORES_OFFERED)
            if not sessions:
                check_windows_kept_by_start(where, owner, sub, _DSL_STORES_OFFERED)
        else:
            _check_keys_not_windows(where, owner, sub)


def keyed_by_windows(spec, sub) -> bool:
    """Whether the DSL key-value store ``spec`` (one ``check_dsl_store`` admits) is keyed by windows:
    a table-table join's or a ``filter``/``map_values``' over windowed tables."""
    return any(spec.name in node.stores and node.kind in (NodeKind.TABLE_TABLE_JOIN_MERGE, *_TABLE_STEPS)
               and is_windowed_table(sub, node) for node in sub.nodes)


def _check_table_step(where: str, step, sub) -> None:
    """A filter's or map_values' store keeps the time of the update it stores: the table behind the
    step must stamp its updates as Kafka Streams does. A suppression on the way forwards each evicted
    update with its latest timestamp (``KTableSuppressProcessorSupplier`` forwards the buffered record's
    context), so the table behind it is the one whose stamps must be Kafka Streams' (the step then keeps
    each key, or window, in the evicted record's own group). Over a versioned table, the step's plain
    store takes an out-of-order update as the key's latest, at the update's own time, as
    ``KTableFilter``/``KTableMapValues`` put ``record.timestamp()`` (:mod:`.table_step_stores`)."""
    node = table_of(sub, step).writers[0]  # a cogroup's table: its aggregations write it
    if node.kind in _STAMPED_AS_KAFKA_STREAMS:
        return
    raise UnsupportedTopologyError(
        f"{where} belongs to {step.name} ({step.kind.value}), over the table of {node.name} ({node.kind.value}), "
        f"a table whose updates the Spark runner stamps with other times than Kafka Streams'; {_DSL_STORES_OFFERED}")


def _check_keys_not_windows(where: str, owner, sub) -> None:
    """A store not over windowed tables (:func:`keyed_by_windows`) downstream of a windowed aggregation in
    its sub-topology (an aggregation or ``to_table`` of the windowed table's stream, a step or join after
    that ``to_table``) is keyed by the windows too, whose groups the task's state keeps by key and start
    (own_groups.py), which the plain key-value view would look up by its key serde's bytes: not compared
    with Kafka Streams."""
    for node in reachable(sub, owner.parents, lambda node: node.parents):
        if node.kind is NodeKind.WINDOWED_AGGREGATE:
            raise UnsupportedTopologyError(
                f"{where} belongs to {owner.name} ({owner.kind.value}), whose keys are windows (of {node.name}'s "
                f"table, in its sub-topology): not compared with Kafka Streams yet; {_DSL_STORES_OFFERED}")


def _check_window_store(where: str, spec, sub) -> None:
    owner = next(node for node in sub.nodes if spec.name in node.stores and node.kind is NodeKind.WINDOWED_AGGREGATE)
    windows = owner.params.get("windows")
    if not isinstance(windows, (TimeWindows, SlidingWindows)):
        raise UnsupportedTopologyError(
            f"{where} belongs to {owner.name}, which keeps its {type(windows).__name__} in a form of its own, "
            f"which has no WindowStore view; {_DSL_STORES_OFFERED}")

