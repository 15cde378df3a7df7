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
``Materialized`` join keeps the result in its store.

Windowed tables
---------------
Two time-windowed aggregations' tables of the sub-topology may be joined, through their
``filter``/``map_values`` too: a windowed key's value is the other store's window of the same start in
the source key's row (Kafka Streams' ``windowStore.fetch(key, windowStart)``), and the updated
window's old value the one its aggregation forwarded with it (:mod:`.windowed_tables`). Kafka
Streams' store returns nothing for a start at or below its observed stream time (the largest window
start written, by any key) minus its retention, which a key's row cannot see:
:func:`~.windowed_table_reads.check_windows` admits only joins that never read a window that old
(or, for one joined table, a materialized join of two). A store keyed by windowed keys after them (a
materialized join's, a ``filter``/``map_values`` that keeps its own) holds each window in the window's
group of the task's state (:mod:`.own_groups`: the sub-topology then runs task-grouped); Kafka Streams
keys it by the key and the window's start, so a read goes to the group of that start's window of the
store's own size, and the aggregations' windows are read in the source key's group.

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
from typing import Any, Optional

from dagster_kstreams.processors.aggregations import ToTable, keep_timestamps
from dagster_kstreams.processors.base import Processor, register
from dagster_kstreams.processors.errors import UnsupportedTopologyError
from dagster_kstreams.processors.joined_tables import JoinedValues, joined_value, old_value_key, sent_old_value
from dagster_kstreams.processors.own_groups import group_key
from dagster_kstreams.processors.stateless import Merge
from dagster_kstreams.processors.state import ABSENT
from dagster_kstreams.processors.table_behind import table_behind
from dagster_kstreams.processors.table_step_stores import keeps_own_store
from dagster_kstreams.processors.versioned_tables import VersionedTable, reads_versioned_updates, versioned_table
from dagster_kstreams.processors.windowed_table_reads import check_windows, time_windows_on_update, windowed_store_size
from dagster_kstreams.topology.node_specs import NodeKind
from dagster_kstreams.topology.serdes import Window, Windowed

__all__ = ["StreamTableJoin", "TableTableJoin", "ValueGetter", "value_getter", "NO_TIMESTAMP", "BUILDERS"]

# Kafka Streams' UNKNOWN timestamp of a join's missing row: below every record's, so the larger of both
# rows' times is the present row's.
NO_TIMESTAMP = -1


class ValueGetter:
    """A table's current value for a key: the store behind it (or, for a table-table join without
    a store, both joined tables and the joiner: :class:`~.joined_tables.JoinedValues`), then the
    table's own ``filter``/``map_values`` when it is derived from that without a store of its own
    (Kafka Streams' ``KTableValueGetter``)."""

    def __init__(self, store: Optional[str], steps: tuple[tuple[str, Any, bool], ...],
                 versioned: Optional[VersionedTable] = None, joined: Optional[JoinedValues] = None,
                 sent_by_join: Optional[str] = None, windows_of: Optional[str] = None,
                 window_size: Optional[int] = None):
        self.store = store  # None when the values come from ``joined``
        self.steps = steps  # [(kind, fn(key, value), negate)] in store-to-table order
        self.versioned = versioned  # the store's versions, when it is a versioned store
        self.joined = joined
        # an uncached materialized join's result: its old values are the ones its join sent
        self.sent_by_join = sent_by_join
        # a time-windowed aggregation's table (its name): one window of the store, by the key's start
        self.windows_of = windows_of
        # a store keyed by windowed keys (a materialized windowed join's, a kept filter/map_values'):
        # the size of its windows, whose groups hold it when the sub-topology runs task-grouped
        self.window_size = window_size
        self.slot: int = -1  # the store's slot, once bound to a program
        self.owner = None  # the store's processor, once its timestamps are read (keep_timestamps)

    def bind(self, program) -> None:
        if self.joined is not None:
            self.joined.bind(program)
            return
        self.slot = program.store_slots[self.store]
        if self.windows_of is not None:
            (aggregation,) = [node for node in program.nodes if node.name == self.windows_of]
            if not aggregation.uses_stream_time or aggregation.emit_on_close:
                raise UnsupportedTopologyError(
                    f"the windowed table of {aggregation.name} is joined, but the aggregation keeps its own stream "
                    "time or emits on window close; the Spark runner joins windowed tables read by the task's "
                    "stream time, updated on every record")
            aggregation.enable_sending_old_values()  # as the join asks in Kafka Streams

    def keep_timestamps(self, program) -> None:
        """Read each value's timestamp too (:meth:`get_timestamped`), after :meth:`bind`: the stores
        behind keep theirs (in a task-grouped program's task state; a window keeps its own always)."""
        if self.joined is not None:
            self.joined.keep_timestamps(program)
        elif self.windows_of is None:
            keep_timestamps(program, self.store)
            self.owner = program.store_owner(self.store)

    def get(self, reader: Processor, key, state, context):
        """The value, or None; a step's failure names the reading processor."""
        return self.through_steps(reader, key, self.stored(reader, key, state, context), context)

    def get_timestamped(self, reader: Processor, key, state, context) -> tuple[Any, int]:
        """``(value, timestamp)``: :meth:`get` with the timestamp Kafka Streams' value getter gives it
        (``ValueAndTimestamp``): the one stored with the value, unchanged by ``filter``/``map_values``
        (a joined table's: :meth:`~.joined_tables.JoinedValues.get_timestamped`); ``NO_TIMESTAMP``
        with no value. Only once :meth:`keep_timestamps` was called."""
        if self.joined is not None:
            stored, timestamp = self.joined.get_timestamped(reader, key, state, context)
        else:
            stored, timestamp = self.stored(reader, key, state, context), self._stored_timestamp(key, state)
        value = self.through_steps(reader, key, stored, context)
        return value, NO_TIMESTAMP if value is None else timestamp

    def _stored_timestamp(self, key, state) -> int:
        if self.windows_of is None:
            return self.owner.stored_timestamp(state)
        stored = state.values[self.slot]  # a window keeps (aggregate, timestamp)
        window = None if stored is ABSENT else stored.get(key.window.start)
        return NO_TIMESTAMP if window is None else window[1]

    def stored(self, reader: Processor, key, state, context):
        """The value before the table's own steps (ABSENT: none): the store's, or the joined one."""
        if self.joined is not None:
            return self.joined.get(reader, key, state, context)
        if self.window_size is not None:  # the store's entry for the key and the window's start
            start = key.window.start
            window = Windowed(key.key, Window(start, start + self.window_size))
            return _group_of(reader, window, state).values[self.slot]
        if self.windows_of is None:
            return state.values[self.slot]
        # Kafka Streams' windowed value getter: windowStore.fetch(key, window start). A window an
        # update of a table joined with this one reaches is never expired here (see check_windows).
        stored = _group_of(reader, key.key, state).values[self.slot]
        window = None if stored is ABSENT else stored.get(key.window.start)
        return ABSENT if window is None else window[0]

    def get_as_of(self, reader: Processor, key, state, context):
        """A versioned table's value valid at the record's timestamp (Kafka Streams'
        ``KTableValueGetter.get(key, asOfTimestamp)``), or None."""
        return self.through_steps(reader, key, self.versioned.as_of(reader, state, context.timestamp), context)

    def get_old(self, reader: Processor, key, state, context):
        """The table's value before the update being forwarded now (Kafka Streams' old value of
        the ``Change``: the store's, through the same ``filter``/``map_values``), or None."""
        return self.through_steps(reader, key, self.stored_old(key, state), context)

    def stored_old(self, key, state):
        """:meth:`stored` before the update of ``key`` being forwarded now (ABSENT: none)."""
        if self.windows_of is not None:  # what the aggregation forwarded with the window's update
            sent = state.old_values.get(self.slot)
            window = (key.window.start, key.window.end)
            return sent[1] if sent is not None and sent[0] == window and sent[1] is not None else ABSENT
        if self.joined is not None:
            return self.joined.get_old(state)
        if self.sent_by_join is not None:
            return sent_old_value(state, self.sent_by_join)
        return state.old_values.get(self.slot, ABSENT)

    def through_steps(self, reader: Processor, key, value, context):
        """A value of the store (ABSENT: none) as the table shows it, or None."""
        value = None if value is ABSENT else value
        for kind, fn, negate in self.steps:
            if value is None:
                return None
            if kind == "filter":
                if bool(reader.call(context, fn, key, value)) == negate:
                    return None
            else:
                value = reader.call(context, fn, key, value)
        return value


def _group_of(reader: Processor, key, state):
    """The group holding ``key``'s slots: the task state's group of ``key`` when the sub-topology runs
    task-grouped (records forwarded by a windowed table go on with their window's group there), else
    the key group being processed."""
    return state if state.task is None else state.task.group(group_key(reader.program, key))


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
    row's (when the other table has a row for the key; the update's alone otherwise). The other row's
    timestamp is known where the stores keep timestamps: in a task-grouped sub-topology (its task state
    holds them: ``stamps_both_rows``) and for windowed tables; elsewhere the update's timestamp is
    kept (README, "Record timestamps written by the runner")."""

    kind = "table_table_join"

    def __init__(self, name: str, joiner, join_type: str, side: str, this: ValueGetter, other: ValueGetter,
                 merge_name: Optional[str] = None, skips_not_latest: bool = False):
        super().__init__(name)
        self.fn, self.join_type, self.side = joiner, join_type, side
        self.this, self.other = this, other
        self.merge_name = merge_name  # the joined table, when it forwards the old value computed here
        # its table is a versioned one's (useVersionedSemantics): an out-of-order update joins nothing
        self.skips_not_latest = skips_not_latest
        self.stamps_both_rows = False  # set by init: the other row's timestamp is read

    def init(self, program) -> None:
        super().init(program)
        self.this.bind(program)
        self.other.bind(program)
        self.stamps_both_rows = program.task_grouped or self.this.windows_of is not None
        if self.stamps_both_rows:
            self.this.keep_timestamps(program)
            self.other.keep_timestamps(program)

    def process(self, key, value, context, out, state) -> None:
        if key is None:
            return
        if self.skips_not_latest and not state.latest:
            return  # Kafka Streams: "Skipping out-of-order record from versioned table" (KIP-914)
        updated, other = (self.this, self.other) if self.side == "this" else (self.other, self.this)
        new = updated.get(self, key, state, context)
        if self.stamps_both_rows:
            other_value, other_timestamp = other.get_timestamped(self, key, state, context)
        else:
            other_value, other_timestamp = other.get(self, key, state, context), NO_TIMESTAMP
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


# -- definition time -------------------------------------------------------------------------
# Processors whose store the program keeps in the key's state row.
_STORE_KINDS = {NodeKind.TABLE_SOURCE, NodeKind.TO_TABLE, NodeKind.AGGREGATE, NodeKind.TABLE_AGGREGATE,
                NodeKind.FK_JOIN_RESULT}


def value_getter(ctx, factory, table_node_name: str, through_joins: bool = False,
                 windowed: bool = False) -> ValueGetter:
    """The store behind a table and the table operations applied to its values on the way to
    ``table_node_name`` (``factory``: the processor that reads the table, named in errors).
    ``through_joins``: the reader can read a table-table join's result (its store when it is
    materialized, else both joined tables and the joiner), as joins and re-groupings do.
    ``windowed``: it can read a time-windowed aggregation's table (through filters/map_values) and the
    stores keyed by windowed keys after one (:func:`~.windowed_table_reads.windowed_store_size`), as a
    table-table join and a re-grouping do."""
    sub = ctx.subtopology
    names = {node.name for node in sub.nodes}
    steps: list[tuple[str, Any, bool]] = []
    name = table_node_name
    while True:
        if name not in names:
            raise UnsupportedTopologyError(
                f"processor {factory.name} ({factory.kind.value}) reads the table {table_node_name!r}, whose "
                f"store is not in its sub-topology {sub.id}")
        node = sub.node(name)
        joined = through_joins and node.kind is NodeKind.TABLE_TABLE_JOIN_MERGE
        # A store keyed by windowed keys: its windows' size (None: not windowed, or not readable here)
        window_size = windowed_store_size(ctx, node) if windowed else None
        # A filter/map_values that keeps its own store is read there; behind a suppression, or a
        # windowed table that is not read as one, joining or re-grouping it is refused below (its
        # kept store is read for its old values only, table_old_values.old_value_getter).
        kept = keeps_own_store(ctx, node) and (
            window_size is not None or not table_behind(sub, node).windowed_or_suppressed)
        own_store = node.kind in _STORE_KINDS or joined or kept
        if joined and steps and window_size is not None:
            # a materialized filter/map_values there keeps what it last forwarded per window, which the
            # runner does not model after a join (table_behind sees no windowed aggregation behind it)
            raise UnsupportedTopologyError(
                f"processor {factory.name} ({factory.kind.value}) reads the windowed join {node.name} through "
                f"filter/map_values; the Spark runner reads a materialized windowed join's result directly only")
        if own_store and node.params.get("store_name") in node.stores:
            steps.reverse()
            store = node.params["store_name"]
            sent_by_join = node.name if joined and not ctx.cached(store) else None
            return ValueGetter(store, tuple(steps), versioned_table(ctx, store), sent_by_join=sent_by_join,
                               window_size=window_size)
        if joined:
            steps.reverse()
            return ValueGetter(None, tuple(steps), joined=_joined_values(ctx, factory, node))
        if windowed and time_windows_on_update(node):
            steps.reverse()
            return ValueGetter(node.params["store_name"], tuple(steps), windows_of=node.name)
        if node.kind is NodeKind.TABLE_FILTER:
            fn = ctx.function(node, node.params["predicate"])
            steps.append(("filter", fn.as_key_value(), bool(node.params.get("negate"))))
        elif node.kind is NodeKind.TABLE_MAP_VALUES:
            fn = ctx.function(node, node.params["mapper"])
            steps.append(("map_values", fn.as_key_value(), False))
        else:
            raise UnsupportedTopologyError(
                f"processor {factory.name} ({factory.kind.value}) reads the table {table_node_name!r}, whose values "
                f"come from {node.name} ({node.kind.value}); the Spark runner reads tables read from a topic, built "
                "by to_table or an aggregation (or, to join or re-group them, a table-table join's result), and "
                "their filter/map_values only")
        if len(node.parents) != 1:
            raise UnsupportedTopologyError(
                f"table {table_node_name!r} of processor {factory.name}: cannot trace its store")
        name = node.parents[0]


def _joined_values(ctx, factory, merge) -> JoinedValues:
    """The value getter of the table-table join whose result node is ``merge`` (no store)."""
    sub = ctx.subtopology
    joins = {sub.node(name).params["side"]: sub.node(name) for name in merge.parents}
    this_join, other_join = joins["this"], joins["other"]
    this = value_getter(ctx, factory, this_join.parents[0], through_joins=True)
    other = value_getter(ctx, factory, other_join.parents[0], through_joins=True)
    joiner = ctx.function(this_join, this_join.params["joiner"])
    return JoinedValues(merge.name, joiner.as_joiner(), this_join.params["join_type"], this, other)


def _stream_table_join(factory, ctx) -> StreamTableJoin:
    params = factory.params
    table = value_getter(ctx, factory, params["table"], through_joins=True)
    joiner = ctx.function(factory, params["joiner"])
    return StreamTableJoin(factory.name, joiner.as_joiner(), params["join_type"], table)


def _table_table_join(factory, ctx) -> TableTableJoin:
    params = factory.params
    sub = ctx.subtopology
    (merge_name,) = factory.children
    (sibling_name,) = [name for name in sub.node(merge_name).parents if name != factory.name]
    own_table, other_table = factory.parents[0], sub.node(sibling_name).parents[0]
    this_table, that_table = (own_table, other_table) if params["side"] == "this" else (other_table, own_table)
    this = value_getter(ctx, factory, this_table, through_joins=True, windowed=True)
    other = value_getter(ctx, factory, that_table, through_joins=True, windowed=True)
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
    if store is not None and store in factory.stores:
        return ToTable(factory.name, store, ctx.cached(store))  # materialized: the joined table's store
    return Merge(factory.name)


BUILDERS = {
    NodeKind.STREAM_TABLE_JOIN: _stream_table_join,
    NodeKind.TABLE_TABLE_JOIN: _table_table_join,
    NodeKind.TABLE_TABLE_JOIN_MERGE: _table_table_join_merge,
}
