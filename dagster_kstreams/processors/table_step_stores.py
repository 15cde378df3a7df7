"""A table's ``filter``/``map_values`` that keeps a store of its own (Kafka Streams' ``KTableFilter`` /
``KTableMapValues`` with a ``queryableName``): one mechanism, one predicate (:func:`keeps_own_store`).

Elsewhere the runner keeps no store for a materialized filter or map_values: its value for a key is
the parent table's value through the filter or the mapper, which is what its store would hold, and
its old value the table's old value through it. Where either is not so, the filter or mapper keeps
its store, a key-value store slot like a table's (:class:`TableStepStore`), or, into a versioned
store, a versioned one (:class:`VersionedTableStepStore`), and everything downstream reads it as it
reads any table's store: its current value (:func:`~.value_getters.value_getter`), and the value it
held before the update being forwarded (``GroupState.old_values`` of its slot, Kafka Streams' old
value of the ``Change``: :func:`~.table_old_values.old_value_getter`). When it is kept:

* after a versioned table, Kafka Streams (4.3.1) puts an out-of-order update, forwarded marked not
  latest, into the filter's plain store as the key's latest value, and forwards it marked latest; the
  versioned table's current value stays the newer one. The new value is put into the store (None
  deletes the key), and the update forwarded with the store's previous value as its old one, at once
  or, with the record cache, at the flush;
* into a versioned store (``Materialized.as_(Stores.persistent_versioned_key_value_store(...))``),
  the update is put as a version at its timestamp, by the store's own observed time: dropped when
  expired, forwarded marked not latest when out of order, exactly as a versioned table source does.
  The timestamp is the update's, so the table filtered must forward Kafka Streams' stamps: a table read
  from a topic or made by ``to_table`` (its record's time), a table-table join (both rows' times, read
  in the task-grouped sub-topology this store makes), an aggregation of a grouped stream or of a
  re-grouped table or of a cogroup (which keeps its timestamps:
  :meth:`~.aggregations.KeyValueStoreProcessor.update_context`), a foreign-key join's result (its answer's
  time), a windowed aggregation (a window's time in its store, a session's end; a windowed cogroup's
  too), through filters, map_values and suppressions (which emit a key's latest buffered update with
  its own timestamp); a join of windowed tables is refused (:func:`_check_own_timestamps`). A windowed
  table's step keeps each window as a key of its own, in the window's group of the task's state
  (:mod:`.own_groups`), Kafka Streams' entry in a store whose windowed key serde writes the window
  (:func:`_check_window_keys`); only its to_stream and further steps read it (:func:`_check_windowed_readers`);
* behind a windowed table or a suppression, when its old values are read (by itself, a filter that
  sends old values, or below it: :func:`~.table_behind.old_values_read_below`): its store holds what
  it last forwarded per key (window), which is not the table's old value through it (a window's first
  update has the initializer's old aggregate, and none in the store). Each window is a key of its
  own there, whose group only the task's state holds (:mod:`.own_groups`), so the sub-topology runs
  task-grouped. The runner keeps no record cache for this store: it forwards every update (README,
  "Old values through tables");
* after a plain table's suppression, when a stream-table or table-table join reads it (through
  filters/map_values without a store of their own: :func:`~.suppressed_table_reads.read_by_join_getter`):
  Kafka Streams' join reads its store, what it last forwarded per key with that update's time, where
  reading through it would reach the suppression's buffer (a buffered key's prior value, with the
  unknown timestamp);
* when its store is cached, the table behind it is neither windowed nor suppressed, and a
  stream-stream join of its sub-topology reads its updates (:func:`feeds_stream_join`): Kafka Streams'
  ``TimestampedTupleForwarder`` over the cached store forwards each key's last update at a commit, not
  every update, and which records the join pairs depends on it. The kept store forwards at the
  micro-batch's end, as the other caches do (``program._flush``); behind a cached table too, whose flush
  puts into it first (Kafka Streams flushes its stores in the order it registered them, the table's
  first), so that each key's last value through the step goes out once, and nothing for a key the step
  did not hold at the last flush nor now (filtered out, or created and deleted in between). There reading
  through to the table would give the same (the step's old value, the table's last flushed one through it,
  is what the step's store held): the store is kept alike, one mechanism for both;
* when a user processor names its store (``process(supplier, "kept")``): the processor reads and
  writes the store itself (:class:`~.user_dsl_store.TimestampedKeyValueStore`), so the next update
  reads the store's previous value as its old one, as Kafka Streams' step does. The store then keeps
  each key's timestamp (``keeps_timestamps``): the update's, as ``KTableFilter``/``KTableMapValues``
  put it (an aggregation behind keeps Kafka Streams' stamps:
  :meth:`~.aggregations.KeyValueStoreProcessor.update_context`).

The new value: a filter's is the value if it passes (else None), a map_values' the mapped value of a
non-null one. A filter reading a versioned table never drops an update (``useVersionedSemantics``);
any other filter sending old values drops an update whose new value and old value (its store's
current one) are both None, leaving its store as it is, as ``KTableFilter`` does.
"""

from __future__ import annotations

from dagster_kstreams.processors.aggregations import KeyValueStoreProcessor, read_by_user_processor
from dagster_kstreams.processors.base import reachable
from dagster_kstreams.processors.errors import UnsupportedTopologyError
from dagster_kstreams.processors.state import ABSENT
from dagster_kstreams.processors.suppressed_table_reads import read_by_join_getter
from dagster_kstreams.processors.table_behind import (
    FILTERS_AND_MAP_VALUES, materialized_step, old_values_read_below, sends_old_values, table_behind, table_of,
)
from dagster_kstreams.processors.versioned_tables import (
    VersionedTableSource, check_consumers, reads_versioned_updates, versioned_table,
)
from dagster_kstreams.processors.windowed_store_keys import (
    check_windowed_key_serde, check_windows_kept_by_start, keyed_by_sessions,
)
from dagster_kstreams.processors.windowed_table_reads import is_windowed_table
from dagster_kstreams.topology.node_specs import NodeKind

__all__ = ["keeps_own_store", "caches_own_store", "cache_not_compared", "feeds_stream_join", "TableStepStore",
           "VersionedTableStepStore", "table_step_store"]


def keeps_own_store(ctx, node) -> bool:
    """Whether the table filter/map_values ``node`` keeps a store of its own: it has one (a named
    ``Materialized``), and reading through it to the table behind would not give what Kafka Streams
    reads from it (see the module docstring):

    * its store is versioned, or the table it reads is a versioned one's: Kafka Streams puts an
      out-of-order update into a plain store as its latest value, where the versioned store keeps
      the newer one current;
    * its old values are read (it is a filter that sends them, or a processor after it reads them)
      and the table behind it is windowed or suppressed: its store's value before an update is not
      the table's old value through it;
    * a stream-table or table-table join reads it after a plain table's suppression (Kafka Streams'
      join reads its store, what it last forwarded per key);
    * a user processor reads and writes its store;
    * its store is cached and a stream-stream join of its sub-topology reads its updates, behind a table
      that is neither windowed nor suppressed: the cache's flush decides which records the join pairs."""
    if not materialized_step(node) or node.params.get("store_name") not in node.stores:
        return False
    store = node.params["store_name"]
    if versioned_table(ctx, store) is not None or reads_versioned_updates(ctx, node.parents[0]):
        return True
    if read_by_user_processor(ctx.subtopology, store):
        return True
    sub = ctx.subtopology
    windowed_or_suppressed = table_behind(sub, node).windowed_or_suppressed
    if ctx.cached(store) and feeds_stream_join(sub, node) and not windowed_or_suppressed:
        return True
    if windowed_or_suppressed and not table_behind(sub, node).aggregations and read_by_join_getter(sub, node):
        return True  # a join reads it after a plain table's suppression: what it last forwarded per key
    return (sends_old_values(node) or old_values_read_below(sub, node)) and windowed_or_suppressed


def feeds_stream_join(sub, node) -> bool:
    """Whether what ``node`` forwards reaches a stream-stream join of its sub-topology ``sub`` (a join
    window), by any path."""
    return any(reached.kind is NodeKind.JOIN_WINDOW for reached in reachable(sub, node.children, lambda n: n.children))


def caches_own_store(ctx, node) -> bool:
    """Whether ``node`` keeps its own store with Kafka Streams' record cache on: its store is cached,
    and the table behind it is neither windowed nor suppressed (there the runner forwards every
    update: the record cache is not compared with Kafka Streams yet, README "Old values through
    tables")."""
    return keeps_own_store(ctx, node) and ctx.cached(node.params["store_name"]) \
        and not table_behind(ctx.subtopology, node).windowed_or_suppressed


def cache_not_compared(ctx, node) -> bool:
    """Whether the filter/map_values ``node`` has a cached store whose flush the runner does not compare
    with Kafka Streams before a stream-stream join: a user processor names the store (the cache forwards
    its own writes too), or the table behind it is windowed or suppressed (the runner keeps no record
    cache there: it forwards every update). Compared (test_equivalence_aggregation_joins.py): a store
    kept for the versioned table behind, or for the join (:func:`keeps_own_store`), whose cache forwards
    each key's last update at the micro-batch's end, with that update's time and headers, as a cached
    table's does (``KTableFilter``/``KTableMapValues``' ``TimestampedTupleForwarder`` over a
    ``CachingKeyValueStore``). A versioned store has no record cache in Kafka Streams."""
    if not materialized_step(node) or node.params.get("store_name") not in node.stores:
        return False
    store = node.params["store_name"]
    if not ctx.cached(store) or versioned_table(ctx, store) is not None:
        return False
    return not caches_own_store(ctx, node) or read_by_user_processor(ctx.subtopology, store)


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

    # A versioned table's sub-topology runs task-grouped already; behind a windowed table or a
    # suppression, each key (window) forwarded has its own group only in the task's state.
    task_grouped = True

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


# The tables whose updates the runner stamps as Kafka Streams does wherever a versioned step's store
# reads them (its sub-topology runs task-grouped): a table source's and to_table's keep their record's
# time; a table-table join stamps with both rows' times (TableTableJoin); an aggregation
# of a grouped stream, of a cogroup (one per cogrouped stream, on one store) or of a re-grouped table with
# the larger of its record's and its previous aggregate's (aggregations.KeyValueStoreProcessor.update_context); a
# foreign-key join's result with its answer's time (fk_joins: the larger of the subscription's and the
# right row's for an answer to a subscription, the right update's for an answer to one).
_STAMPED_AS_KAFKA_STREAMS = {NodeKind.TABLE_SOURCE, NodeKind.TO_TABLE, NodeKind.TABLE_TABLE_JOIN_MERGE,
                             NodeKind.AGGREGATE, NodeKind.TABLE_AGGREGATE, NodeKind.FK_JOIN_RESULT}
# A windowed table's: a windowed aggregation (time, sliding or session windows, a windowed cogroup's
# aggregations on one store) forwards a window's update with the window's time in its store, the larger
# of its records' (KStreamWindowAggregate, KStreamSlidingWindowAggregate), a session's with its end
# (KStreamSessionWindowAggregate, a merged-away session's tombstone with that session's end), on every
# update or when the window closes (its stored time); the runner's windowed aggregations give those.
_WINDOWS_STAMPED_AS_KAFKA_STREAMS = {NodeKind.WINDOWED_AGGREGATE}
_WINDOWED_STEPS_OFFERED = ("a windowed table's filter/map_values keeps a versioned store keyed by windows with a "
                           "time-windowed key serde of its window size (time or sliding windows, in a sub-topology "
                           "without session windows) or a session-windowed one (session windows)")


def _check_own_timestamps(factory, ctx) -> None:
    """A versioned store's put is decided by the update's timestamp: refuse a table whose updates the
    runner does not stamp as Kafka Streams, or that is not compared with it yet (a join of windowed
    tables); a windowed table's step keeps its store by window (:func:`_check_window_keys`)."""
    sub = ctx.subtopology
    # The table whose updates the store puts, through the steps that forward them with their stamps:
    # filters and map_values (KTableFilter and KTableMapValues forward the record they get), and a
    # suppression, which emits a key's latest buffered update with that update's record context
    # (KTableSuppressProcessorSupplier's emit). A cogroup's table is its pass-through's: each cogrouped
    # stream's aggregation stamps its updates.
    table = table_of(sub, factory)
    node, writers = table.writer, table.writers
    windowed = is_windowed_table(sub, node)
    stamped = _WINDOWS_STAMPED_AS_KAFKA_STREAMS if windowed else _STAMPED_AS_KAFKA_STREAMS
    if any(writer.kind not in stamped for writer in writers):
        raise UnsupportedTopologyError(
            f"processor {factory.name} ({factory.kind.value}) puts the updates of {node.name} ({node.kind.value}) "
            "into a versioned store by their timestamps; the Spark runner versions only the updates of a table "
            "read from a topic or made by to_table, of a table-table join of tables that are not windowed, of a "
            "grouped stream's, a cogroup's or a re-grouped table's aggregation, of a foreign-key join's result "
            "and of a time-windowed, sliding-window or session aggregation (a windowed cogroup's too; through "
            "filter/map_values and suppressions), whose stamps it gives as Kafka Streams does; a join of "
            "windowed tables: not compared with Kafka Streams in a versioned step's store yet")
    if windowed:
        _check_window_keys(factory, ctx)
        _check_windowed_readers(factory, ctx)


def _check_window_keys(factory, ctx) -> None:
    """A windowed table's step puts each window as a key of its own into its versioned store, written by
    the store's windowed key serde (:mod:`.windowed_store_keys`: Kafka Streams fails at the first put with
    another); a time-windowed one only where the runner keeps windows by their start, as that serde does."""
    sub, store = ctx.subtopology, factory.params["store_name"]
    key_serde = ctx.topology.state_stores[store].key_serde or ctx.default_key_serde
    where = f"processor {factory.name}: versioned store {store}"
    sessions = keyed_by_sessions(sub, factory)
    check_windowed_key_serde(where, factory, key_serde, sessions, _WINDOWED_STEPS_OFFERED)
    if not sessions:
        check_windows_kept_by_start(where, factory, sub, _WINDOWED_STEPS_OFFERED)


def _check_windowed_readers(factory, ctx) -> None:
    """A windowed table's versioned step is compared with Kafka Streams through its ``to_stream`` and
    filter/map_values after it (and a user processor naming its store), and re-grouped when its windows
    are time or sliding windows (its re-grouping reads the old value each update is forwarded with, which
    a processor putting versions into the store on the way leaves as it was); a join, a suppression or a
    re-grouping of session windows reading its windows is refused naming the reader: not compared yet."""
    sub = ctx.subtopology
    regrouping_runs = not keyed_by_sessions(sub, factory)
    for node in reachable(sub, factory.children, lambda node: node.children if node.kind in FILTERS_AND_MAP_VALUES else ()):
        if node.kind in FILTERS_AND_MAP_VALUES or node.kind is NodeKind.TABLE_TO_STREAM \
                or (regrouping_runs and node.kind is NodeKind.TABLE_GROUP_BY_MAP):
            continue
        raise UnsupportedTopologyError(
            f"processor {node.name} ({node.kind.value}) reads the windows {factory.name} puts into its versioned "
            f"store {factory.params['store_name']}; the Spark runner passes a windowed table's versioned "
            "filter/map_values to to_stream, further filter/map_values and, of time or sliding windows, a "
            "re-grouping only: a join, a suppression or a re-grouping of session windows of it is not compared "
            "with Kafka Streams yet")


def table_step_store(factory, ctx):
    """The runnable form of the filter/map_values ``factory``, which keeps its own store
    (:func:`keeps_own_store`)."""
    params = factory.params
    filters = factory.kind is NodeKind.TABLE_FILTER
    fn = ctx.function(factory, params["predicate" if filters else "mapper"]).as_key_value()
    step = _Step(fn, filters, bool(params.get("negate")), sends_old_values(factory))
    store = params["store_name"]
    versioned = versioned_table(ctx, store)
    if versioned is not None:
        _check_own_timestamps(factory, ctx)
        check_consumers(factory, ctx)
        return VersionedTableStepStore(factory.name, store, versioned.retention_ms, step)
    step_store = TableStepStore(factory.name, store, caches_own_store(ctx, factory), step)
    step_store.keeps_timestamps = read_by_user_processor(ctx.subtopology, store)
    return step_store
