"""Stream-table and table-table joins: how a join processor is built and how it runs.

A join reads the state of its co-partitioned inputs. The task reads partition ``p`` of every
source topic of the sub-topology in one query; the stateful pass groups the records by their
source key (``applyInPandasWithState``), so the stores of all joined inputs for one key are the
slots of one state row, kept in the task's checkpoint (RocksDB). A join processor keeps no store
of its own here: it reads the slot of the store behind the joined table, or, when that table is a
table-table join's result without a store, both of that join's tables and its joiner
(:mod:`.joined_tables`).

Stream-table join (``KStream.join/left_join(KTable)``)
------------------------------------------------------
Kafka Streams' ``KStreamKTableJoinProcessor``: a stream record whose value is null is dropped;
so is one whose key is null, except in a left join (KIP-962: the joiner gets a null table value);
otherwise the table's current value for the key is looked up through the table's value getter
(the store, then the table's own ``filter``/``map_values`` if the table is derived from it without a
store of its own) and the joiner's result is forwarded; an inner join forwards nothing when the
table has no value. Table updates never trigger output (Kafka's stream-table join is not
symmetric). A versioned table (:mod:`.versioned_tables`) is read as of the stream record's
timestamp instead of its current value, as ``KStreamKTableJoinProcessor`` does with a versioned
value getter.

Table-table join (``KTable.join/left_join/outer_join``)
------------------------------------------------------
An update of either table (after the table's cache, i.e. once per key and micro-batch; every
update without it) reads the other table's current value through its value getter and forwards
the joined table's new value, as ``KTableKTable{Inner,Left,Right,Outer}Join`` of Kafka Streams
4.3.1 do (``new``/``old``: the updated table's value after and before the update, ``other``: the
other table's value; a left join's left table and both tables of an outer join send old values):

* inner, either side: nothing when ``other`` is null; else ``joiner(new, other)``, or a
  tombstone when ``new`` is null;
* left, an update of the left table: nothing when ``other``, ``new`` and ``old`` are all null;
  else ``joiner(new, other)``, or a tombstone when ``new`` is null. An update of the right table:
  nothing when the left value is null; else ``joiner(left, new)`` (``new`` may be null);
* outer, either side: nothing when ``other``, ``new`` and ``old`` are all null; else
  ``joiner(new, other)`` when either is not null, else a tombstone.

An update a versioned table forwards marked not latest (out of order: :mod:`.versioned_tables`) is
skipped by the join processor of that table's side, as Kafka Streams' do with versioned semantics.

So a delete (or update) on one side of an inner join forwards nothing while the other side has
no row, and a tombstone for a key the updated table never held forwards nothing either (with the
record cache on, the table's cache never forwards such a tombstone in the first place). A
``Materialized`` join keeps the result in its store; a versioned one
(``Stores.persistent_versioned_key_value_store``) puts each update as a version at the join's stamp,
by that store's observed time (:class:`~.versioned_tables.VersionedJoinMerge`: expired puts dropped,
out-of-order ones forwarded marked not latest), and so runs task-grouped, where the stamp is Kafka
Streams'.

Windowed tables
---------------
Two time-windowed aggregations' tables of the sub-topology may be joined, through their
``filter``/``map_values`` too: a windowed key's value is the other store's window of the same start in
the source key's row (Kafka Streams' ``windowStore.fetch(key, windowStart)``), and the updated
window's old value the one its aggregation forwarded with it (:mod:`.windowed_tables`). Kafka
Streams' store returns nothing for a start at or below its observed stream time (the largest window
start written, by any key) minus its retention, which a key's row cannot see:
:func:`~.windowed_table_reads.check_windows` admits only joins that never read a window that old
(or, for one joined table, a join of two: materialized, or read through both tables and the joiner,
:mod:`.joined_tables`). A store keyed by windowed keys after them (a
materialized join's, a ``filter``/``map_values`` that keeps its own) holds each window in the window's
group of the task's state (:mod:`.own_groups`: the sub-topology then runs task-grouped); Kafka Streams
keys it by the key and the window's start, as the groups are kept (windows of two sizes write one
entry), so a read goes to the group of that start, and the aggregations' windows are read in the
source key's group. Other state after them (a count of the join's stream) is kept in the window's
group too. Beside session windows the groups keep the window's end as well: a materialized join of
windows of two sizes, or state they both reach, is refused there
(:func:`~.windowed_table_reads.check_windows`, :func:`~.windowed_tables.check_own_window_reads`).
Two session aggregations' tables (or joins of them) may be joined too, materialized or not: a session's
value is the other store's session of the same start and end (``fetchSession``), by that store's
observed time, or a join's of it (:mod:`.session_table_reads`); a materialized one keeps each session in
the session's group.

Order across inputs
-------------------
Kafka Streams' task merges its input partitions by the timestamp of their head records. Within
one micro-batch the runner orders the records of one key by ``(merge_time, topic, offset)``
(:func:`dagster_kstreams.spark.event_time.with_processing_order`), which is the same order for
the records of a batch whenever no two input partitions hold equal timestamps.
See the README, "Semantics that differ from Kafka Streams", for where that differs.
"""

from __future__ import annotations

import dataclasses
from typing import Optional

from dagster_kstreams.processors.aggregations import ToTable, read_by_user_processor
from dagster_kstreams.processors.base import Processor, register
from dagster_kstreams.processors.joined_tables import joined_value, old_value_key
from dagster_kstreams.processors.session_table_reads import check_session_join
from dagster_kstreams.processors.stateless import Merge
from dagster_kstreams.processors.value_getters import ValueGetter, value_getter
from dagster_kstreams.processors.versioned_tables import (
    VersionedJoinMerge, check_consumers, reads_versioned_updates, versioned_table,
)
from dagster_kstreams.processors.windowed_table_reads import check_windows
from dagster_kstreams.topology.node_specs import NodeKind
from dagster_kstreams.topology.task_id import TaskId

__all__ = ["StreamTableJoin", "TableTableJoin", "BUILDERS"]


@register
class StreamTableJoin(Processor):
    """``KStreamKTableJoinProcessor``: a stream record joined with the table's current value."""

    kind = "stream_table_join"

    def __init__(self, name: str, joiner, join_type: str, table: ValueGetter):
        super().__init__(name)
        self.fn, self.join_type, self.table = joiner, join_type, table

    def init(self, program) -> None:
        super().init(program)
        self.table.bind(program)

    def start_task_batch(self, task, out, first_context) -> None:
        self.table.start_batch(self, TaskId(self.program.subtopology_id, first_context.partition), first_context)

    def end_task_batch(self, task) -> None:
        self.table.end_batch()

    def process(self, key, value, context, out, state) -> None:
        left = self.join_type == "left"
        if value is None or (key is None and not left):
            return  # Kafka Streams drops it (and counts it as skipped)
        if state is None:
            raise ValueError(f"processor {self.name} needs its table's state but runs in a stateless pass")
        if key is None:
            table_value = None
        elif self.table.versioned is not None:
            table_value = self.table.get_as_of(self, key, state, context)
        else:
            table_value = self.table.get(self, key, state, context)
        if table_value is None and not left:
            return
        joined = self.call(context, self.fn, key, value, table_value)
        self.forward(key, joined, context, out, state)


@register
class TableTableJoin(Processor):
    """``KTableKTable{Inner,Left,Outer}Join``: an update of either table joins its new value with
    the other table's current one; forwards the joined table's value for the key afterwards.

    Kafka Streams stamps what it forwards with the larger of the update's timestamp and the other
    row's (when the other table has a row for the key; the update's alone otherwise): the tables'
    stores keep their timestamps for it (:meth:`ValueGetter.keep_timestamps`; a window keeps its own)."""

    kind = "table_table_join"

    def __init__(self, name: str, joiner, join_type: str, side: str, this: ValueGetter, other: ValueGetter,
                 merge_name: Optional[str] = None, skips_not_latest: bool = False):
        super().__init__(name)
        self.fn, self.join_type, self.side = joiner, join_type, side
        self.this, self.other = this, other
        self.merge_name = merge_name  # the joined table, when it forwards the old value computed here
        # its table is a versioned one's (useVersionedSemantics): an out-of-order update joins nothing
        self.skips_not_latest = skips_not_latest

    def init(self, program) -> None:
        super().init(program)
        self.this.bind(program)
        self.other.bind(program)
        self.this.keep_timestamps(program)
        self.other.keep_timestamps(program)

    def start_task_batch(self, task, out, first_context) -> None:
        task_id = TaskId(self.program.subtopology_id, first_context.partition)
        self.this.start_batch(self, task_id, first_context)
        self.other.start_batch(self, task_id, first_context)

    def end_task_batch(self, task) -> None:
        self.this.end_batch()
        self.other.end_batch()

    def process(self, key, value, context, out, state) -> None:
        if key is None:
            return
        if self.skips_not_latest and not state.latest:
            return  # Kafka Streams: "Skipping out-of-order record from versioned table" (KIP-914)
        updated, other = (self.this, self.other) if self.side == "this" else (self.other, self.this)
        # The update's own value, as Kafka Streams joins change.newValue: not the store's now, which a user
        # processor before the join among the table's children may have written; a session merge deletes a
        # session and puts it again (one window), the store already holding the put while the delete travels
        # here; a join of session tables' update, which reading both stores again would not give
        new = value
        other_value, other_timestamp = other.get_timestamped(self, key, state, context)
        if not self._forwards(new, other_value, lambda: updated.get_old(self, key, state, context)):
            return
        if other_timestamp > context.timestamp:  # Kafka Streams: max(record's, other row's timestamp)
            context = dataclasses.replace(context, timestamp=other_timestamp)
        joined = self._joined(context, key, new, other_value)
        if self.merge_name is not None:  # the joined table's old value, for readers through the join
            state.old_values[old_value_key(self.merge_name)] = \
                lambda: self._joined(context, key, updated.get_old(self, key, state, context), other_value)
        self.forward(key, joined, context, out, state)

    def _joined(self, context, key, updated_value, other_value):
        """The joined table's value for the updated table's value and the other's (None: no row)."""
        this_value, that_value = (updated_value, other_value) if self.side == "this" else (other_value, updated_value)
        return joined_value(self, context, self.fn, self.join_type, key, this_value, that_value)

    def _forwards(self, new, other_value, old) -> bool:
        """Whether Kafka Streams' join processor for this side forwards anything for the update
        (``old()``: the updated table's value before it, read only when the rule needs it)."""
        join_type = self.join_type
        if join_type == "inner" or (join_type == "left" and self.side == "other"):
            return other_value is not None
        return other_value is not None or new is not None or old() is not None


def _stream_table_join(factory, ctx) -> StreamTableJoin:
    params = factory.params
    # a suppressed plain table through its buffer (KTableSuppressProcessorSupplier's view)
    # a transform_values without a store through a transformer of the join's (KTableTransformValuesGetter)
    table = value_getter(ctx, factory, params["table"], through_joins=True, suppressions=True, transforms=True)
    joiner = ctx.function(factory, params["joiner"])
    return StreamTableJoin(factory.name, joiner.as_joiner(), params["join_type"], table)


def _table_table_join(factory, ctx) -> TableTableJoin:
    params = factory.params
    sub = ctx.subtopology
    (merge_name,) = factory.children
    (sibling_name,) = [name for name in sub.node(merge_name).parents if name != factory.name]
    own_table, other_table = factory.parents[0], sub.node(sibling_name).parents[0]
    this_table, that_table = (own_table, other_table) if params["side"] == "this" else (other_table, own_table)
    # a suppressed plain table through its buffer (KTableSuppressProcessorSupplier's view)
    # an inner join's transform_values without a store through a transformer of the join's (table_transform_values
    # admits no other join of it)
    reads = dict(through_joins=True, windowed=True, sessions=True, suppressions=True, transforms=True)
    this = value_getter(ctx, factory, this_table, **reads)
    other = value_getter(ctx, factory, that_table, **reads)
    if not check_session_join(ctx, factory, this_table, that_table, sub.node(merge_name)):
        check_windows(ctx, factory, this_table, that_table, sub.node(merge_name))
    joiner = ctx.function(factory, params["joiner"])
    merge = sub.node(merge_name)
    store = merge.params.get("store_name")
    cached = store is not None and store in merge.stores and ctx.cached(store)
    # Readers through the join's result read the old value it sends, unless its cache sends the store's.
    return TableTableJoin(factory.name, joiner.as_joiner(), params["join_type"], params["side"], this, other,
                          None if cached else merge_name, reads_versioned_updates(ctx, own_table))


def _table_table_join_merge(factory, ctx) -> Processor:
    store = factory.params.get("store_name")
    if store is None or store not in factory.stores:
        return Merge(factory.name)
    versioned = versioned_table(ctx, store)
    if versioned is not None:  # the update is put at the join's stamp (task-grouped: both rows' times known)
        check_consumers(factory, ctx)
        return VersionedJoinMerge(factory.name, store, versioned.retention_ms)
    merge = ToTable(factory.name, store, ctx.cached(store))  # materialized: the joined table's store
    # A user processor reads and writes it with Kafka Streams' stamps: the join's, the larger of both
    # rows' times (its sub-topology is task-grouped, so the join reads them: TableTableJoin.init).
    merge.keeps_timestamps = read_by_user_processor(ctx.subtopology, store)
    return merge


BUILDERS = {
    NodeKind.STREAM_TABLE_JOIN: _stream_table_join,
    NodeKind.TABLE_TABLE_JOIN: _table_table_join,
    NodeKind.TABLE_TABLE_JOIN_MERGE: _table_table_join_merge,
}
