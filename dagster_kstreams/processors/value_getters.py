"""A table's current value for a key, as a reader reads it (Kafka Streams' ``KTableValueGetter``).

A stream-table join, a table-table join, a re-grouping, a foreign-key join, a suppression and the
old values of a table update all read a table through :class:`ValueGetter`: the store behind the
table (in the key's state, or the task's when the sub-topology runs task-grouped), then the table's
own ``filter``/``map_values`` on the way, or, for a table-table join without a store, both joined
tables and the joiner (:class:`~.joined_tables.JoinedValues`). :func:`value_getter` traces that
path when the topology is defined, refusing a table whose store the runner cannot read.
"""

from __future__ import annotations

from typing import Any, Optional

from dagster_kstreams.processors.aggregations import keep_timestamps
from dagster_kstreams.processors.base import Processor
from dagster_kstreams.processors.errors import UnsupportedTopologyError
from dagster_kstreams.processors.joined_tables import JoinedValues, sent_old_value
from dagster_kstreams.processors.own_groups import group_key
from dagster_kstreams.processors.session_table_reads import SessionReads, is_session_aggregation_on_update
from dagster_kstreams.processors.state import ABSENT
from dagster_kstreams.processors.suppressed_table_reads import SuppressedView
from dagster_kstreams.processors.table_step_stores import keeps_own_store
from dagster_kstreams.processors.transform_values_getter import TransformedView
from dagster_kstreams.processors.versioned_tables import VersionedTable, versioned_table
from dagster_kstreams.processors.table_behind import materialized_step, table_behind
from dagster_kstreams.processors.windowed_table_reads import (
    is_windowed_table, readable_windows_on_update, windowed_store_size,
)
from dagster_kstreams.topology.emit_strategy import ON_WINDOW_UPDATE
from dagster_kstreams.topology.node_specs import NodeKind
from dagster_kstreams.topology.serdes import Window, Windowed

__all__ = ["ValueGetter", "value_getter", "NO_TIMESTAMP"]

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
                 window_size: Optional[int] = None, sessions: Optional[SessionReads] = None):
        self.store = store  # None when the values come from ``joined``
        self.steps = steps  # [(kind, fn(key, value), negate)] in store-to-table order
        self.versioned = versioned  # the store's versions, when it is a versioned store
        # a table read through another one's getter: a join's result without a store (JoinedValues), a
        # suppression's buffer then its parent (suppressed_table_reads.SuppressedView)
        self.joined = joined
        # an uncached materialized join's result: its old values are the ones its join sent
        self.sent_by_join = sent_by_join
        # a time-windowed or sliding-window aggregation's table (its name): one window of the store, by the
        # key's start
        self.windows_of = windows_of
        # a store keyed by windowed keys (a materialized windowed join's, a kept filter/map_values'):
        # the size of its windows, whose groups hold it when the sub-topology runs task-grouped
        self.window_size = window_size
        # a session aggregation's table (``windows_of`` names it) read by a join: one session, by its start
        # and end (fetchSession)
        self.sessions = sessions
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
            if self.sessions is not None:
                self.sessions.bind(aggregation)

    def start_batch(self, reader: Processor, task_id, context) -> None:
        """The start of a micro-batch of ``reader`` (``context``: its first record's): a transform_values
        read through makes its transformer (:class:`~.transform_values_getter.TransformedView`)."""
        if isinstance(self.joined, TransformedView):
            self.joined.start_batch(reader, task_id, context)

    def end_batch(self) -> None:
        if isinstance(self.joined, TransformedView):
            self.joined.end_batch()

    def keep_timestamps(self, program) -> None:
        """Read each value's timestamp too (:meth:`get_timestamped`), after :meth:`bind`: the stores
        behind keep theirs (beside each key's value; a window keeps its own always)."""
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
            stored, timestamp = self.stored(reader, key, state, context), self._stored_timestamp(reader, key, state)
        value = self.through_steps(reader, key, stored, context)
        return value, NO_TIMESTAMP if value is None else timestamp

    def _stored_timestamp(self, reader: Processor, key, state) -> int:
        if self.windows_of is None:
            return self.owner.stored_timestamp(state)
        if self.sessions is not None:
            return key.window.end  # KTableSessionWindowValueGetter stamps a session with its end
        # a window keeps (aggregate, timestamp), in the source key's group as :meth:`stored` reads it (not
        # the group of the window an update travels in, task-grouped)
        stored = _group_of(reader, key.key, state).values[self.slot]
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
            # a materialized join of session tables' store too: the record travels in its session's group
            # (own_groups), the store's entry of the key, the session's start and end
            return state.values[self.slot]
        if self.sessions is not None:
            return self.sessions.fetch(_group_of(reader, key.key, state).values[self.slot], key, context)
        # Kafka Streams' windowed value getter (time and sliding windows): windowStore.fetch(key, window
        # start). A window an update of a table joined with this one reaches is never expired here (see
        # check_windows).
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


# -- definition time -------------------------------------------------------------------------
# Processors whose store the program keeps in the key's state row.
_STORE_KINDS = {NodeKind.TABLE_SOURCE, NodeKind.TO_TABLE, NodeKind.AGGREGATE, NodeKind.TABLE_AGGREGATE,
                NodeKind.FK_JOIN_RESULT}


def value_getter(ctx, factory, table_node_name: str, through_joins: bool = False,
                 windowed: bool = False, sessions: bool = False, suppressions: bool = False,
                 transforms: bool = False) -> ValueGetter:
    """The store behind a table and the table operations applied to its values on the way to
    ``table_node_name`` (``factory``: the processor that reads the table, named in errors).
    ``through_joins``: the reader can read a table-table join's result (its store when it is
    materialized, else both joined tables and the joiner), as joins and re-groupings do.
    ``windowed``: it can read a time-windowed or sliding-window aggregation's table (through
    filters/map_values) and the stores keyed by windowed keys after one (:func:`~.windowed_table_reads.windowed_store_size`), as a
    table-table join and a re-grouping do. ``sessions``: with ``windowed``, a session aggregation's table
    too, one session by its start and end, as a join of two session tables reads it
    (:class:`~.session_table_reads.SessionReads`), through a join's result without a store too (Kafka
    Streams' join value getter asks both tables' getters). ``suppressions``: a suppression of a plain
    table (or of a join's result) too, through its buffer (:class:`~.suppressed_table_reads.SuppressedView`),
    and a filter/map_values with a store of its own after it, as a stream-table or table-table join reads
    them. ``transforms``: a transform_values without a store of its own too, through a transformer of
    the reader's (:class:`~.transform_values_getter.TransformedView`), of a plain table or its
    filter/map_values, as a stream-table join reads it."""
    sub = ctx.subtopology
    names = {node.name for node in sub.nodes}
    steps: list[tuple[str, Any, bool]] = []
    stored_steps = []  # the filters/map_values on the way with a store of their own that is not read
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
        # A join reading suppressions reads such a store after a plain table's suppression (kept for it).
        kept = keeps_own_store(ctx, node) and _kept_store_read(table_behind(sub, node), window_size, suppressions)
        # A plain cogroup's table: its pass-through reads the store its aggregations write (Kafka Streams'
        # KTablePassThrough getter), which the program keeps in the key's state row as an aggregation's.
        cogrouped = node.kind is NodeKind.COGROUP_MERGE and all(
            sub.node(parent).kind is NodeKind.AGGREGATE for parent in node.parents)
        own_store = node.kind in _STORE_KINDS or joined or kept or cogrouped
        if joined and steps and window_size is not None:
            # a materialized filter/map_values there keeps what it last forwarded per window, which the
            # runner does not model after a join (table_behind sees no windowed aggregation behind it)
            raise UnsupportedTopologyError(
                f"processor {factory.name} ({factory.kind.value}) reads the windowed join {node.name} through "
                f"filter/map_values; the Spark runner reads a materialized windowed join's result directly only")
        if joined and stored_steps and windowed and is_windowed_table(sub, node):
            # Kafka Streams reads that store's old value (what it last forwarded for the window), not the
            # join's, which the runner reads through the step
            raise UnsupportedTopologyError(
                f"processor {factory.name} ({factory.kind.value}) reads the windowed join {node.name} through "
                f"{stored_steps[0].name}, a {stored_steps[0].kind.value} with a store of its own; the Spark runner "
                "reads a windowed join's result without a store through filter/map_values without one only")
        if own_store and (node.params.get("store_name") in node.stores or cogrouped):
            steps.reverse()
            store = node.params["store_name"]
            sent_by_join = node.name if joined and not ctx.cached(store) else None
            return ValueGetter(store, tuple(steps), versioned_table(ctx, store), sent_by_join=sent_by_join,
                               window_size=window_size)
        if joined:
            steps.reverse()
            return ValueGetter(None, tuple(steps),
                               joined=_joined_values(ctx, factory, node, windowed, sessions, suppressions))
        if windowed and readable_windows_on_update(node):
            steps.reverse()
            return ValueGetter(node.params["store_name"], tuple(steps), windows_of=node.name)
        if windowed and sessions and is_session_aggregation_on_update(node):
            steps.reverse()
            return ValueGetter(node.params["store_name"], tuple(steps), windows_of=node.name,
                               sessions=SessionReads())
        if windowed and node.kind is NodeKind.WINDOWED_AGGREGATE:
            emits = node.params.get("emit_strategy", ON_WINDOW_UPDATE)
            raise UnsupportedTopologyError(
                f"processor {factory.name} ({factory.kind.value}) reads the windowed table of {node.name} "
                f"({type(node.params['windows']).__name__}, {emits}); "
                "the Spark runner joins and re-groups the tables of time-windowed and sliding-window aggregations "
                "emitting on every update only, and session tables in joins of session tables (read by the "
                "session's start and end, fetchSession) and their re-groupings and joins")
        if suppressions and node.kind is NodeKind.SUPPRESS and not stored_steps:
            # the buffer's prior value of a buffered key, else the plain table behind it, a join's result
            # too (of a suppressed table too; a windowed one is refused there, naming the reader), a
            # suppressed one through its buffer
            steps.reverse()
            parent = value_getter(ctx, factory, node.parents[0], through_joins=True, suppressions=True)
            return ValueGetter(None, tuple(steps), joined=SuppressedView(node.name, parent))
        if transforms and node.kind is NodeKind.TABLE_TRANSFORM_VALUES and node.params.get("store_name") is None:
            if steps:  # KTableFilterValueGetter/KTableMapValuesValueGetter over its getter: not compared yet
                raise UnsupportedTopologyError(
                    f"processor {factory.name} ({factory.kind.value}) reads the transform_values {node.name} through "
                    "filter/map_values; the Spark runner joins a transform_values without a store of its own directly "
                    "only")
            parent = value_getter(ctx, factory, node.parents[0])
            return ValueGetter(None, (), joined=TransformedView(node.name, node.params["supplier"], parent,
                                                                tuple(factory.stores)))
        if materialized_step(node):
            stored_steps.append(node)
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
                "by to_table or an aggregation (a plain cogroup's too, not a windowed one's) (or, to join or re-group "
                "them, a table-table join's result; to join them, their suppression, of a table-table join's result "
                "too, with its filter/map_values, keeping a store of their own or not), and their filter/map_values "
                "(to re-group them after a suppression, with a store of their own or not) (and, to join a stream with "
                "them, their transform_values without a store of its own) only")
        if len(node.parents) != 1:
            raise UnsupportedTopologyError(
                f"table {table_node_name!r} of processor {factory.name}: cannot trace its store")
        name = node.parents[0]


def _kept_store_read(behind, window_size, suppressions: bool) -> bool:
    """Whether a reader reads a filter/map_values' own store, behind the table ``behind``: the table is
    neither windowed nor suppressed, or the store is keyed by windows read as such (``window_size``), or
    the reader reads suppressions (``suppressions``) and the table is a plain one's suppression."""
    return window_size is not None or not behind.windowed_or_suppressed or (suppressions and not behind.aggregations)


def _joined_values(ctx, factory, merge, windowed: bool, sessions: bool, suppressions: bool) -> JoinedValues:
    """The value getter of the table-table join whose result node is ``merge`` (no store); ``windowed``:
    its tables may be windowed (a windowed key's value: each table's window of its start, as Kafka
    Streams' join value getter asks each table's getter with the windowed key); ``sessions``: session
    tables too (each table's session of the key's start and end, ``fetchSession``); ``suppressions``: a
    suppressed table through its buffer (the join's getter asks the suppression's view)."""
    sub = ctx.subtopology
    joins = {sub.node(name).params["side"]: sub.node(name) for name in merge.parents}
    this_join, other_join = joins["this"], joins["other"]
    this = value_getter(ctx, factory, this_join.parents[0], through_joins=True, windowed=windowed, sessions=sessions,
                        suppressions=suppressions)
    other = value_getter(ctx, factory, other_join.parents[0], through_joins=True, windowed=windowed, sessions=sessions,
                         suppressions=suppressions)
    joiner = ctx.function(this_join, this_join.params["joiner"])
    return JoinedValues(merge.name, joiner.as_joiner(), this_join.params["join_type"], this, other)
