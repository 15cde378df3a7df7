"""A DSL operation's key-value store as a user processor sees it: ``process(supplier, "counts")``
on the store of ``count(Materialized.as_("counts"))`` (of a grouped stream, a re-grouped table or a
cogroup), of ``to_table``, of a table read from a topic, of a table-table join or of a table's
``filter``/``map_values`` (Kafka Streams' ``TimestampedKeyValueStore`` behind its read-write decorator).

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

from dagster_kstreams.processors.errors import UnsupportedTopologyError
from dagster_kstreams.processors.state import ABSENT
from dagster_kstreams.processors.user_dsl_view import DslStoreView
from dagster_kstreams.topology.emit_strategy import ON_WINDOW_UPDATE
from dagster_kstreams.topology.node_specs import NodeKind, StoreType
from dagster_kstreams.topology.processor_api import KeyValue, ValueAndTimestamp
from dagster_kstreams.topology.windows import SlidingWindows, TimeWindows

__all__ = ["TimestampedKeyValueStore", "check_dsl_store"]


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
            self._owner.write(key, ABSENT, self._write_context(None), group)
        else:
            self._owner.write(key, self._copy(value), self._write_context(value_and_timestamp.timestamp()), group)

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

    def reverse_all(self) -> Iterator[KeyValue]:
        return iter([entry for _, entry in self._entries()][::-1])

    def approximate_num_entries(self) -> int:
        return len(self._task.slot_entries(self._owner.state_slot))

    def _entries(self) -> list[tuple[bytes, KeyValue]]:
        """``(key as the store writes it, entry)`` of every key, in that order: a snapshot, which
        writes while iterating do not disturb."""
        entries = []
        for raw_key, value in self._task.slot_entries(self._owner.state_slot):
            key = self._store_key_serde.deserialize(raw_key)
            entries.append((self._key_serde.serialize(key), KeyValue(key, self._read(raw_key, value))))
        return sorted(entries, key=lambda entry: entry[0])


# -- definition time -------------------------------------------------------------------------
_DSL_STORES_OFFERED = ("user processors get the key-value stores of count/reduce/aggregate (of grouped streams, "
                       "re-grouped tables and cogroups; versioned ones too), to_table, tables read from a topic (versioned "
                       "ones too), the versioned stores of foreign-key joins, "
                       "table-table joins (not of windowed tables; versioned ones too) and their filter/map_values (versioned "
                       "ones too), the window stores of "
                       "time-windowed (emitting on every update or on window close) and sliding-windowed (emitting on "
                       "every update) and the session stores of session-windowed count/reduce/aggregate (emitting on "
                       "every update or on window close; a cogroup's emitting on every update), and the stores added "
                       "with add_state_store()")

# The DSL operations whose key-value store keeps its timestamps once a processor names it
# (aggregations.KeyValueStoreProcessor.keeps_timestamps; a filter's or map_values' store through
# table_step_stores.TableStepStore; a materialized table-table join's through its merge's ToTable).
_TIMESTAMPED_STORE_KINDS = frozenset({NodeKind.AGGREGATE, NodeKind.TABLE_AGGREGATE, NodeKind.TO_TABLE,
                                      NodeKind.TABLE_SOURCE, NodeKind.TABLE_FILTER, NodeKind.TABLE_MAP_VALUES,
                                      NodeKind.TABLE_TABLE_JOIN_MERGE})
_TABLE_STEPS = (NodeKind.TABLE_FILTER, NodeKind.TABLE_MAP_VALUES)
# The tables whose updates a filter/map_values store stamps as Kafka Streams does: their own
# record's time (a table source, to_table), an aggregation's Kafka Streams' time, which it keeps
# while its updates reach a store a processor reads (aggregations.aggregation_keeping_timestamps), or
# a table-table join's, the larger of both rows' times, read from its tables' stores in the
# task-grouped sub-topology a processor makes (table_joins.TableTableJoin.stamps_both_rows).
_STAMPED_AS_KAFKA_STREAMS = frozenset({NodeKind.TABLE_SOURCE, NodeKind.TO_TABLE, NodeKind.AGGREGATE,
                                       NodeKind.TABLE_AGGREGATE, NodeKind.TABLE_TABLE_JOIN_MERGE})


def check_dsl_store(factory, spec, sub) -> None:
    """A DSL store a processor names must be one the runner keeps as Kafka Streams' timestamped
    key-value store (the store of a stream, cogroup or re-grouped table aggregation, ``to_table``, a
    table source, a table-table join not of windowed tables or their ``filter``/``map_values``), versioned
    key-value store (any writer's: a foreign-key join's too),
    timestamped window store (a time-windowed stream aggregation's, emitting on every update or on window
    close, or a sliding-windowed one's emitting on every update) or session store (a session-windowed
    one's, emitting on every update or on window close)."""
    where = f"processor {factory.name}: store {spec.name}"
    if spec.type is StoreType.WINDOW:
        _check_window_store(where, spec, sub)
        return
    if spec.type is StoreType.SESSION:
        _check_session_store(where, spec, sub)
        return
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
        if spec.name not in owner.stores or owner.kind in (NodeKind.PROCESS, NodeKind.PROCESS_VALUES):
            continue
        if owner.kind not in _TIMESTAMPED_STORE_KINDS:
            raise UnsupportedTopologyError(
                f"{where} belongs to {owner.name} ({owner.kind.value}), whose store the Spark runner keeps "
                f"without the timestamps a processor reads (ValueAndTimestamp); {_DSL_STORES_OFFERED}")
        if owner.kind in _TABLE_STEPS:
            _check_table_step(where, owner, sub)
        elif owner.kind is NodeKind.TABLE_TABLE_JOIN_MERGE:
            _check_join(where, owner, owner, sub)


def _check_table_step(where: str, step, sub) -> None:
    """A filter's or map_values' store keeps the time of the update it stores: the table behind the
    step must stamp its updates as Kafka Streams does, and be neither versioned nor windowed."""
    stores = {store.name: store for store in sub.state_stores}
    node = step
    while node.kind in _TABLE_STEPS:
        (parent,) = node.parents
        node = sub.node(parent)
        if any(stores[name].history_retention_ms is not None for name in node.stores if name in stores):
            raise UnsupportedTopologyError(
                f"{where} belongs to {step.name} ({step.kind.value}), over the versioned table of {node.name}, whose "
                f"out-of-order updates the step's store takes as latest: not compared with Kafka Streams yet; "
                f"{_DSL_STORES_OFFERED}")
    if node.kind is NodeKind.COGROUP_MERGE:  # a cogroup's table: its aggregations write it
        node = sub.node(node.parents[0])
    if node.kind is NodeKind.TABLE_TABLE_JOIN_MERGE:
        _check_join(where, step, node, sub)
    if node.kind in _STAMPED_AS_KAFKA_STREAMS:
        return
    if node.kind is NodeKind.WINDOWED_AGGREGATE:
        why = "a windowed table, whose updates the step would keep by window: not compared with Kafka Streams yet"
    elif node.kind is NodeKind.SUPPRESS:
        why = "a suppressed table: not compared with Kafka Streams yet"
    else:
        why = "a table whose updates the Spark runner stamps with other times than Kafka Streams'"
    raise UnsupportedTopologyError(
        f"{where} belongs to {step.name} ({step.kind.value}), over the table of {node.name} ({node.kind.value}), "
        f"{why}; {_DSL_STORES_OFFERED}")


def _check_join(where: str, owner, merge, sub) -> None:
    """A join's result is stamped as Kafka Streams stamps it, but a join of windowed tables keys its
    store (or a step's after it) by windowed keys, which no view here reads yet."""
    stack = [merge]
    while stack:
        node = stack.pop()
        if node.kind is NodeKind.WINDOWED_AGGREGATE:
            raise UnsupportedTopologyError(
                f"{where} belongs to {owner.name} ({owner.kind.value}), over {merge.name}, a join of the windowed "
                f"table of {node.name}, whose store is keyed by windows: not compared with Kafka Streams yet; "
                f"{_DSL_STORES_OFFERED}")
        if node.kind in (NodeKind.TABLE_TABLE_JOIN_MERGE, NodeKind.TABLE_TABLE_JOIN, NodeKind.COGROUP_MERGE,
                         *_TABLE_STEPS):
            stack.extend(sub.node(parent) for parent in node.parents)


def _check_window_store(where: str, spec, sub) -> None:
    owner = next(node for node in sub.nodes if spec.name in node.stores and node.kind is NodeKind.WINDOWED_AGGREGATE)
    windows = owner.params.get("windows")
    if not isinstance(windows, (TimeWindows, SlidingWindows)):
        why = f"keeps its {type(windows).__name__} in a form of its own, which has no WindowStore view"
    elif isinstance(windows, SlidingWindows) and owner.params.get("emit_strategy", ON_WINDOW_UPDATE) != ON_WINDOW_UPDATE:
        why = "slides and emits on window close, over Kafka Streams' time-ordered window store: no view of it yet"
    elif owner.params.get("cogroup") and owner.params.get("emit_strategy", ON_WINDOW_UPDATE) != ON_WINDOW_UPDATE:
        why = "is a cogroup's aggregate emitting on window close: no view of its time-ordered store compared yet"
    else:
        return
    raise UnsupportedTopologyError(f"{where} belongs to {owner.name}, which {why}; {_DSL_STORES_OFFERED}")


def _check_session_store(where: str, spec, sub) -> None:
    owner = next(node for node in sub.nodes if spec.name in node.stores and node.kind is NodeKind.WINDOWED_AGGREGATE)
    if owner.params.get("cogroup") and owner.params.get("emit_strategy", ON_WINDOW_UPDATE) != ON_WINDOW_UPDATE:
        why = "is a cogroup's aggregate emitting on window close: no view of its time-ordered store compared yet"
    else:
        return
    raise UnsupportedTopologyError(f"{where} belongs to {owner.name}, which {why}; {_DSL_STORES_OFFERED}")

