"""Stream-stream joins (``KStream.join/left_join/outer_join(other, joiner, JoinWindows)``).

The DSL builds a stream-stream join as Kafka Streams does: each side goes through a
``JOIN_WINDOW`` processor (``KStreamJoinWindow``) that buffers the side's records in a window
store, then through a ``STREAM_STREAM_JOIN`` processor (``KStreamKStreamJoin`` left or right
side) that looks the record up in the *other* side's buffer, and both join processors feed a
``STREAM_STREAM_JOIN_MERGE``. Both sides are in one sub-topology (co-partitioned, repartitioned
by the DSL when their keys changed) and every record reaching the join carries the source key
(checked when the topology is defined: a side may pass through stateless key-keeping operations,
a table's ``to_stream``, an aggregation's (a grouped stream's, a cogroup's or a re-grouped table's,
which then keeps its timestamps to stamp its updates as Kafka Streams does), a table-table join's
(stamped with both rows' timestamps, which its stores then keep), a foreign-key join's result or a
stream-table join), so the two buffers of one key are two state slots of that key's state. A side
may also come from a processor that forwards records under other keys than the source record's
(a user processor's punctuators, a suppression's evictions, a windowed table's windows: time,
sliding or session windows, a windowed cogroup's, emitting on every update or on window close): it
hands each record on with the group of *its own* key in the task's state (:mod:`.own_groups`; a
window is a key of its own there), so the join buffers the record under that key and pairs it
with the other side's records of that key, as Kafka Streams' join stores do; a pending left/outer
record is kept under that group's key, ordered as the join's key serde (its ``StreamJoined``'s, else
the default key serde) writes it: a time window's key and start; a session's key, end and start
(:func:`~.join_buffers.outer_store_order`).

A sub-topology may hold any number of joins (a chain such as ``a.join(b).left_join(c)``, whose
second join reads the first one's output, or one stream joined with several others): as in
Kafka Streams, where ``KStreamImplJoin`` gives each join its own stores and its own
``TimeTrackerSupplier``, every piece of join state is named by the join's stores: a buffer is the
slot of its window store, a store's observed stream time is kept under the store's name, and a
join's ``TimeTracker`` with its outer-join store under the name of its left ("this") window store.
A join's output carries the key it joined on, the source key, so a later join keys its state the
same way; records reach the joins depth first, in Kafka Streams' forwarding order.

The sub-topology runs task-grouped (:mod:`dagster_kstreams.processors.task_state`): all records of
the task's micro-batch in processing order, with the task-level state Kafka Streams keeps next
to the per-key buffers. Kafka Streams 4.3.1, as run here:

* ``KStreamJoinWindow`` forwards the record to its join processor first, then stores it, and
  only when key and value are not null (a null value is not stored: a window store that retains
  duplicates ignores it, and its observed stream time does not move).
* A window store's observed stream time is the largest timestamp put into it (all keys). It
  keeps records for ``retention = before + after + grace`` behind that time: a lookup returns no
  record older than ``T - retention + 1``; a record whose segment (``segmentInterval =
  max(retention / 2, 60 s)``) is already expired when it is put is not stored and is counted as
  dropped (here: a row on ``records.DROPPED_LATE_TOPIC``); in an in-memory store (a supplier's or
  ``default.dsl.store=in_memory``), a record at or below ``T - retention`` itself. It is still joined with the other
  buffer first (the lookup runs before the put). Buffers of all keys are pruned at the end of
  every micro-batch (records no lookup can return any more).
* The join processor first advances the join's shared stream time (``TimeTracker``, shared by
  both sides, all records, null keys and values included). On the outer side of a left/outer
  join a record with a null key and a value is joined with null at once (KIP-962; the
  repartition before such a join keeps null keys). Other records with a null key or value are
  skipped. Otherwise, when the record's timestamp is the stream time, the pending non-joined
  records whose window closed are emitted (below). Then the record reads the other buffer for
  the key over ``[max(0, t - before), max(0, t + after)]`` where, for the left ("this") side,
  ``before``/``after`` are the JoinWindows' and, for the right side, swapped; each match is
  joined with the timestamp ``max(t, t_other)``, in the buffer's order (timestamp, then arrival),
  and removes the match's pending entries from the outer-join store. A record of an outer side
  without a match is joined with null at once (with its own timestamp) when ``t + after`` is
  already behind the stream time, otherwise it is put in the outer-join store and lowers the
  tracker's smallest pending time.
* The outer-join store (one per join and task, all keys) is ordered by timestamp, then side
  (right before left), then the serialized key (here: the source key bytes), each entry a list
  in arrival order. It is scanned (:func:`~.join_buffers.closed_outer_records`) unless
  ``min_time + after + grace >= stream time`` (Java ``long`` arithmetic: ``min_time`` starts at ``Long.MAX_VALUE``
  and the sum overflows). The scan emits, in store order, each entry whose window closed
  (``t + after + grace < stream time`` for a left entry, ``t + before + grace`` for a right
  one) as ``joiner(key, left, right)`` with the missing side null and the entry's timestamp;
  it skips open entries and stops at the first entry once both sides had an open one. The
  smallest pending time becomes the timestamp of the last entry visited. Kafka Streams throttles
  this scan to once per second of wall-clock time (internal config
  ``__emit.interval.ms.kstreams.outer.join.spurious.results.fix__``, 1000 ms by default), so its
  output then depends on processing speed; here it runs as with an interval of 0.

The joiner always gets ``(key, left value, right value)`` (Kafka Streams reverses the joiner for
the right side and reverses the values back).

What is kept across micro-batches and restarts (in the task's state) Kafka Streams keeps in
memory and resets on a restart: the join's ``TimeTracker`` (stream time, smallest pending time)
and the window stores' observed stream time. See the README, "Semantics that differ from Kafka
Streams".
"""

from __future__ import annotations

import dataclasses

from dagster_kstreams.processors.base import Processor, StoreProcessor, reachable, register
from dagster_kstreams.processors.errors import UnsupportedTopologyError
from dagster_kstreams.processors.join_buffers import (
    LEFT,
    RIGHT,
    JoinTracker,
    closed_outer_records,
    expire,
    insert,
    stored_when_put,
    visible,
)
from dagster_kstreams.processors.join_feed_caches import check_caches_before
from dagster_kstreams.processors.own_groups import windows_keyed_by_start
from dagster_kstreams.processors.records import DROPPED_LATE_TOPIC
from dagster_kstreams.processors.stateless import Merge
from dagster_kstreams.processors.state import ABSENT
from dagster_kstreams.processors.task_state import task_state_of
from dagster_kstreams.topology.node_specs import NodeKind
from dagster_kstreams.topology.serdes import WindowedSerde
from dagster_kstreams.topology.windows import join_store_retention_ms

__all__ = ["JoinWindow", "StreamStreamJoin", "observed_store_time", "BUILDERS"]

# Task-level values (TaskState.values), one per join: each join store's observed stream time (by
# store name), and each join's tracker (by the name of its left window store).
_STORE_TIMES = "stream_joins.store_times"
_TRACKER = "stream_joins.tracker.{}"


def observed_store_time(task, store: str) -> int:
    """The observed stream time of the join window store ``store`` in ``task`` (-1: nothing put yet)."""
    times = task.values.get(_STORE_TIMES)
    return -1 if times is None else times.get(store, -1)


@register
class JoinWindow(StoreProcessor):
    """``KStreamJoinWindow``: forwards the record to its join processor, then buffers it in its
    side's window store (a slot of the source key's state)."""

    kind = "join_window"
    uses_stream_time = True
    drops_late_records = True

    def __init__(self, name: str, store: str, retention: int, persistent: bool = True):
        super().__init__(name, store)
        self.retention = retention
        self.persistent = persistent  # RocksDB's store drops a put by segment, the in-memory one by retention

    def process(self, key, value, context, out, state) -> None:
        task = task_state_of(self, state)
        timestamp = context.timestamp
        if timestamp is None:
            raise ValueError(f"processor {self.name} needs record timestamps")
        self.forward(key, value, context, out, state)  # forward first, then store
        if key is None or value is None:
            return
        retention = self.retention
        times = task.values.get(_STORE_TIMES)
        if times is None:
            times = task.values[_STORE_TIMES] = {}
        store_time = times[self.store] = max(times.get(self.store, -1), timestamp)
        slot = self.state_slot
        buffer = state.values[slot]
        buffer = [] if buffer is ABSENT else buffer
        if stored_when_put(timestamp, store_time, retention, self.persistent):
            buffer = insert(buffer, timestamp, value)
        else:
            raw_key = state.raw_key  # a window's group: (its key's bytes, start[, end]), own_groups.group_key
            out.append(DROPPED_LATE_TOPIC, raw_key[0] if isinstance(raw_key, tuple) else raw_key, None)
        buffer = expire(buffer, store_time, retention)
        state.values[slot] = buffer if buffer else ABSENT
        state.keys[slot] = key
        state.changed = True

    def end_task_batch(self, task) -> None:
        """Drop every key's buffered records that no lookup can return any more (by the store's
        observed time), as Kafka Streams drops expired segments of all keys."""
        times = task.values.get(_STORE_TIMES, {})
        if self.store not in times:
            return
        store_time, slot = times[self.store], self.state_slot
        for group in task.all_groups():
            buffer = group.values[slot]
            if buffer is ABSENT:
                continue
            kept = expire(buffer, store_time, self.retention)
            if len(kept) != len(buffer):
                group.values[slot] = kept if kept else ABSENT


@register
class StreamStreamJoin(Processor):
    """``KStreamKStreamJoin`` of one side (``this_side``: the left one): looks the record up in the
    other side's buffer; a left/outer side keeps unmatched records in the outer-join store.
    ``before``/``after`` are the calling side's (swapped for the right side)."""

    kind = "stream_stream_join"
    uses_stream_time = True
    task_grouped = True

    def __init__(self, name: str, joiner, this_side: bool, before: int, after: int, retention: int, other_store: str,
                 tracker: str, outer: bool, outer_store: bool, windows_before: int, windows_after: int, grace: int,
                 session_keys: bool = False):
        super().__init__(name)
        # the join's key serde writes session windows (key, end, start), which orders its outer-join store
        self.session_keys = session_keys
        self.fn, self.this_side = joiner, this_side
        self.before, self.after, self.retention = before, after, retention
        self.other_store, self.tracker = other_store, tracker
        self.outer, self.outer_store = outer, outer_store
        self.windows_before, self.windows_after, self.grace = windows_before, windows_after, grace
        self._tracker_key = _TRACKER.format(tracker)
        self._other_slot = -1

    def init(self, program) -> None:
        super().init(program)
        self._other_slot = program.store_slots[self.other_store]

    def _tracker(self, task) -> JoinTracker:
        tracker = task.values.get(self._tracker_key)
        if tracker is None:
            tracker = task.values[self._tracker_key] = JoinTracker()
        return tracker

    def process(self, key, value, context, out, state) -> None:
        task = task_state_of(self, state)
        timestamp = context.timestamp
        if timestamp is None:
            raise ValueError(f"processor {self.name} needs record timestamps")
        this_side = self.this_side
        tracker = self._tracker(task)
        tracker.stream_time = max(tracker.stream_time, timestamp)
        if self.outer and key is None and value is not None:
            self._join_with_null(key, value, context, out, state)  # KIP-962
            return
        if key is None or value is None:
            return  # skipped (Kafka Streams counts it as dropped, not as late)
        if self.outer_store and timestamp == tracker.stream_time:
            self._emit_closed(tracker, context, out, task)
        slot = self._other_slot
        buffer = state.values[slot]
        matches = []
        if buffer is not ABSENT:
            retention = self.retention
            times = task.values.get(_STORE_TIMES)
            other_time = -1 if times is None else times.get(self.other_store, -1)
            matches = visible(buffer, timestamp, self.before, self.after, other_time, retention)
            kept = expire(buffer, other_time, retention)
            if len(kept) != len(buffer):
                state.values[slot] = kept if kept else ABSENT
                state.changed = True
        other_side = RIGHT if this_side else LEFT
        for other_timestamp, other_value in matches:
            if self.outer_store:
                tracker.outer.pop((other_timestamp, other_side, state.raw_key), None)
            if this_side:
                joined = self.call(context, self.fn, key, value, other_value)
            else:
                joined = self.call(context, self.fn, key, other_value, value)
            joined_context = dataclasses.replace(context, timestamp=max(timestamp, other_timestamp))
            self.forward(key, joined, joined_context, out, state)
        if self.outer and not matches:
            time_to = max(0, timestamp + self.after)
            if not self.outer_store or time_to < tracker.stream_time:
                self._join_with_null(key, value, context, out, state)
            else:
                tracker.min_time = min(tracker.min_time, timestamp)
                this_byte = LEFT if this_side else RIGHT
                tracker.outer.setdefault((timestamp, this_byte, state.raw_key), []).append((key, value))

    def _join_with_null(self, key, value, context, out, state) -> None:
        if self.this_side:
            joined = self.call(context, self.fn, key, value, None)
        else:
            joined = self.call(context, self.fn, key, None, value)
        self.forward(key, joined, context, out, state)

    def _emit_closed(self, tracker: JoinTracker, context, out, task) -> None:
        closed = closed_outer_records(tracker, self.after, self.windows_before, self.windows_after, self.grace,
                                      self.session_keys)
        for timestamp, side, raw_key, key, value in closed:
            group = task.group(raw_key)
            emit_context = dataclasses.replace(context, timestamp=timestamp)
            left, right = (value, None) if side == LEFT else (None, value)
            joined = self.call(emit_context, self.fn, key, left, right)
            self.forward(key, joined, emit_context, out, group)


# -- definition time -------------------------------------------------------------------------
# Processors that forward a record under the key of the source record it came from, from within
# that record's own processing: the join's state, kept in the group the record came with (the
# source key's, or the own key's group a regrouping processor before them handed it: _REGROUPING),
# is then the join key's. A stream-stream join forwards its records with the key it joined on, so a join
# may come before another one; a table (read from a topic or made by to_table, then filter,
# map_values, to_stream) forwards each update under its key as it is processed (cached, at the batch's
# end: join_feed_caches); a stream-table or stream-global-table join forwards under the stream
# record's key (the global one maps the record to the table's key only to look it up), with its timestamp; an
# aggregation of a grouped stream (and a cogroup's, through its pass-through) or of a re-grouped
# table forwards under its group's key, which in the join's sub-topology is the source key (a key
# change repartitions before it), stamped as Kafka Streams does (it keeps its timestamps:
# aggregations.KeyValueStoreProcessor.update_context); a table-table join forwards its update under the
# updated table's key, stamped with the larger of both rows' times, as Kafka Streams does (in the
# task-grouped sub-topology its stores keep their timestamps: table_joins.TableTableJoin); a
# foreign-key join's result forwards under the left key, which its answers' topic (a source of the
# left table's sub-topology) is keyed by, with the answer's timestamp, stamped as Kafka Streams does
# (fk_joins.SubscriptionJoin).
_KEY_PRESERVING = {NodeKind.SOURCE, NodeKind.FILTER, NodeKind.MAP_VALUES, NodeKind.FLAT_MAP_VALUES, NodeKind.PEEK,
                   NodeKind.MERGE, NodeKind.BRANCH, NodeKind.BRANCH_CHILD, NodeKind.JOIN_WINDOW,
                   NodeKind.STREAM_STREAM_JOIN, NodeKind.STREAM_STREAM_JOIN_MERGE, NodeKind.STREAM_STREAM_SELF_JOIN,
                   NodeKind.TABLE_SOURCE, NodeKind.TO_TABLE, NodeKind.TABLE_FILTER, NodeKind.TABLE_MAP_VALUES,
                   NodeKind.TABLE_TO_STREAM, NodeKind.STREAM_TABLE_JOIN, NodeKind.STREAM_GLOBAL_TABLE_JOIN,
                   NodeKind.AGGREGATE, NodeKind.COGROUP_MERGE, NodeKind.TABLE_AGGREGATE,
                   NodeKind.TABLE_TABLE_JOIN, NodeKind.TABLE_TABLE_JOIN_MERGE,
                   NodeKind.FK_RESPONSE_JOIN, NodeKind.FK_JOIN_RESULT}
# Processors that forward records under other keys than the source record's: a user processor (its
# punctuators; process() may change keys), a suppression's evictions, a windowed aggregation's windows
# (time, sliding or session windows, a cogroup's too, on every update or at window close: each window
# a key of its own, windowed_tables.WindowedTable). Each record they forward goes on with its own key's
# group of the task's state (own_groups.py: the join reads state, so they regroup in its task-grouped
# sub-topology), so the join buffers it under its own key and pairs it with the other side's records
# of that key, as Kafka Streams' join stores do.
_REGROUPING = {NodeKind.PROCESS, NodeKind.PROCESS_VALUES, NodeKind.SUPPRESS, NodeKind.WINDOWED_AGGREGATE}


def _join_window(factory, ctx) -> JoinWindow:
    params = factory.params
    windows = params["windows"]
    retention = join_store_retention_ms(windows)
    _check_keys_before(ctx, factory)
    persistent = ctx.topology.state_stores[params["store_name"]].persistent is not False
    return JoinWindow(factory.name, params["store_name"], retention, persistent)


def _stream_stream_join(factory, ctx) -> StreamStreamJoin:
    params = factory.params
    windows = params["windows"]
    retention = join_store_retention_ms(windows)
    this_side = params["side"] == "this"
    before, after = (windows.before_ms, windows.after_ms) if this_side else (windows.after_ms, windows.before_ms)
    joiner = ctx.function(factory, params["joiner"]).as_joiner()
    other_store = params["other_store_name"] if this_side else params["this_store_name"]
    return StreamStreamJoin(
        factory.name, joiner, this_side, before, after, retention, other_store, params["this_store_name"],
        bool(params.get("outer")), params.get("outer_store_name") is not None,
        windows.before_ms, windows.after_ms, windows.grace_period_ms(), _session_keys(factory, ctx),
    )


def _session_keys(factory, ctx) -> bool:
    """Whether the join's key serde writes session windows (key, end, start), as Kafka Streams 4.3.1
    takes it: its ``StreamJoined`` key serde, else the application's default key serde (not the left
    stream's). A session serde in a sub-topology that keeps windows by their start only is refused:
    a window's end, which that serde writes, is not kept there."""
    key_serde = ctx.topology.state_stores[factory.params["other_store_name"]].key_serde or ctx.default_key_serde
    session = isinstance(key_serde, WindowedSerde) and key_serde.session
    if session and windows_keyed_by_start(ctx.subtopology):
        raise UnsupportedTopologyError(
            f"the stream-stream join {factory.name} writes its keys with a session-windowed serde in a "
            "sub-topology without session windows; the Spark runner keeps a time window there by its key "
            "and start, without the end that serde writes. Give the join a time-windowed key serde, or add "
            ".repartition() before the join")
    return session


def _regroups(node) -> bool:
    """Whether ``node`` forwards records under other keys than the source record's, each on with its
    own key's group (:data:`_REGROUPING`)."""
    return node.kind in _REGROUPING


def _check_keys_before(ctx, window_node) -> None:
    """What the task-grouped join needs: its join key is the key of the group its state is kept in.
    Every processor between a source and this join window keeps the source key (the DSL repartitions
    before the join otherwise), or forwards each record with its own key's group (:data:`_REGROUPING`:
    the processors before it need not keep the key), and all of them forward while the record is
    processed, or at the batch's end as Kafka Streams' cache at a commit, where that cache is compared
    with Kafka Streams (:func:`~.join_feed_caches.check_caches_before`).
    Any number of joins may share a sub-topology: each keeps its state under its own store names."""
    sub = ctx.subtopology
    to_regrouping = reachable(sub, window_node.parents, lambda node: () if _regroups(node) else node.parents)
    for node in to_regrouping:
        if node.kind not in _KEY_PRESERVING and not _regroups(node):
            raise UnsupportedTopologyError(
                f"processor {node.name} ({node.kind.value}) comes before the stream-stream join {window_node.name} "
                "in its sub-topology; the Spark runner keeps the join's state by the key of the record's group, so "
                "only processors known to forward under the source record's key (filter, map_values, "
                "flat_map_values, peek, merge, branch, a table read from a topic or made by to_table with its "
                "filter, map_values and to_stream, an aggregation of a grouped stream, a cogroup or a re-grouped "
                "table, a table-table join, a foreign-key join's result, a stream-table or stream-global-table "
                "join, stream-stream joins) or each under its own key (a user processor, a suppression, a "
                "windowed aggregation) may come before it. Add .repartition() before the join to give it a "
                "sub-topology of its own")
    check_caches_before(ctx, window_node)


BUILDERS = {
    NodeKind.JOIN_WINDOW: _join_window,
    NodeKind.STREAM_STREAM_JOIN: _stream_stream_join,
    NodeKind.STREAM_STREAM_JOIN_MERGE: lambda factory, ctx: Merge(factory.name),
}
