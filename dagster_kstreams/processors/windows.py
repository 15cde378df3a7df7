"""Windowed aggregations: ``group_by[_key]().windowed_by(TimeWindows |
SlidingWindows).count()/reduce()/aggregate()``, as Kafka Streams 4.3.1's
``KStreamWindowAggregate`` and ``KStreamSlidingWindowAggregate`` compute them.

State
    A key's windows are one state slot of the task's state row for that key: ``{window_start: (aggregate,
    timestamp)}`` (Kafka Streams' window store holds the same: the aggregate and the largest timestamp of its
    records; a plain RocksDB supplier's, -1: :mod:`.plain_window_store`). A window whose start is at or before
    ``store time - retention`` is dropped when its key is next processed (:func:`.supplier_shape.store_time`).
    Retention: the store's (size + grace unless ``Materialized`` or a supplier sets another); for sliding windows at
    least 3 x time difference + grace + 1, the oldest window a record still within reach reads (not on window close:
    see Emission). A store a user processor names, or a sliding one kept short by its supplier, keeps its own
    retention and expires by Kafka Streams' observed time (the largest window start put into it:
    :mod:`.user_dsl_window_store`, :func:`.supplier_shape.keeps_store_clock`).

Time and lateness
    Every record carries its timestamp (``context.timestamp``) and the task's stream time after it
    (``context.stream_time``: the largest timestamp of the records with a key, and for sliding windows a value,
    processed so far; see :mod:`dagster_kstreams.spark.event_time`). A window closes when ``end <= stream time -
    grace`` (sliding windows: ``end < stream time - grace``, their end is inclusive). A record for a closed window
    is dropped: one row on :data:`~dagster_kstreams.processors.records.DROPPED_LATE_TOPIC` per (record, closed
    window), as Kafka Streams records its dropped-records sensor once per closed window.

Null keys and values
    A record with a null key is skipped (and does not advance stream time). Time windows aggregate null values like
    any other (``count`` counts them, ``reduce`` calls the reducer with ``None``); sliding windows skip them (and
    they do not advance stream time either).

Emission
    Downstream processors receive ``Windowed(key, Window(start, end))`` and the window's new aggregate, with the
    aggregate's timestamp as the record timestamp: with the record cache on (the default) once per changed window
    per micro-batch, all keys' windows in the order of their last updates (not one absent before and after the
    batch); with ``with_caching_disabled()`` in ``Materialized``, on every update. With
    ``emit_strategy(EmitStrategy.on_window_close())`` (time and sliding windows), each window once, when it closes,
    in the order of :mod:`.window_close`; the sub-topology then runs task-grouped (a record of one key closes the
    windows of all keys), and the store (time-ordered, a supplier's or in memory) returns nothing older than its own
    retention (sliding windows: 2 x time difference + grace by default).

Exactness
    Kafka Streams keeps a windowed processor's stream time in the processor, of the records reaching it. The classes
    here read the task's stream time, that processor's when every record of the task reaches it unchanged in key
    (and, sliding windows, value) nullness (:func:`reads_task_stream_time`); otherwise, and for a cogroup's inputs,
    the processor keeps its own clocks (:mod:`.own_stream_time`) and its sub-topology runs task-grouped, as does one
    with a processor keeping or reading keyed state after the windowed table (a window a key there: :mod:`.own_groups`).
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Callable, Optional

from dagster_kstreams.processors.aggregations import read_by_user_processor, user_aggregation
from dagster_kstreams.processors.base import register
from dagster_kstreams.processors.errors import UnsupportedTopologyError
from dagster_kstreams.processors.plain_window_store import stamps_of
from dagster_kstreams.processors.records import DROPPED_LATE_TOPIC
from dagster_kstreams.processors.state import ABSENT
from dagster_kstreams.processors.supplier_shape import expired_puts, keeps_store_clock, reads_nothing_back, store_time
from dagster_kstreams.processors.task_state import task_state_of
from dagster_kstreams.processors.user_dsl_window_store import observed_time_key
from dagster_kstreams.processors.user_time_store import NO_TIME
from dagster_kstreams.processors.window_close import ClosedWindows, supplier_segment_interval
from dagster_kstreams.processors.window_store import (RemovalCut, aggregation_functions, dsl_segment_interval, expire,
                                                      process_sliding_windows, process_time_windows)
from dagster_kstreams.processors.window_stream_time import reads_task_stream_time
from dagster_kstreams.processors.windowed_tables import WindowedTable, check_own_window_reads, keeps_state_downstream
from dagster_kstreams.topology.emit_strategy import ON_WINDOW_CLOSE, ON_WINDOW_UPDATE
from dagster_kstreams.topology.serdes import Window
from dagster_kstreams.topology.windows import SlidingWindows, TimeWindows

__all__ = ["TimeWindowAggregate", "SlidingWindowAggregate", "WINDOW_KINDS", "build", "reads_task_stream_time"]


class _WindowAggregate(WindowedTable):
    """One windowed aggregation; subclasses choose the algorithm (:mod:`.window_store`). Its old
    values (:mod:`.windowed_tables`): the aggregate each update was computed from; with the record
    cache, the window's value at the last flush."""

    uses_stream_time = True
    drops_late_records = True
    algorithm: Callable = None  # process_time_windows or process_sliding_windows
    # Set when a user processor names the store (user_dsl_window_store.py): the store then keeps Kafka
    # Streams' observed time (the largest window start put into it), a task-level value, and keeps and
    # returns the windows that start after it minus the retention. Emitting on window close, the
    # time-ordered store's time is ClosedWindows.store_time (the same, always kept).
    # store_in_memory: an InMemoryWindowStore (user_dsl_window_store.py); reads_nothing_back: supplier_shape.py
    observes_store_time = store_in_memory = reads_nothing_back = False
    closed_segment_interval: Optional[int] = None  # emitting on close from a RocksDB supplier's segmented store
    removal_cut: Optional[RemovalCut] = None  # such a store a processor names, read live by a sliding record
    # Whether the time-ordered store of emit-on-close keeps a key index beside its time-first keys
    # (Kafka Streams' RocksDbIndexedTimeOrderedWindowBytesStoreSupplier, hasIndex: the DSL sets it for
    # sliding windows only): its key-range reads then come through the index (user_dsl_window_store.py).
    key_indexed_on_close = False
    _in_record = False  # process() is storing a record's windows (and holds the key's dict)

    def __init__(self, name: str, store: str, cached: bool, aggregation: str, windows, size: int, grace: int,
                 retention: int, initializer: Optional[Callable] = None, aggregator: Optional[Callable] = None,
                 reducer: Optional[Callable] = None, key_serde=None, emit_on_close: bool = False):
        super().__init__(name, store, cached and not emit_on_close)
        self.aggregation = aggregation
        # on_window_close: the store's key serde orders the windows of one start; emission spans keys
        self.key_serde, self.emit_on_close, self.task_grouped = key_serde, emit_on_close, emit_on_close
        self._closed_key = f"windows.closed.{store}"
        self._batch_stream_time: Optional[int] = None  # the task's stream time at its last record here
        self.windows, self.size, self.grace, self.retention = windows, size, grace, retention
        self.initializer, self.aggregator, self.reducer = initializer, aggregator, reducer
        # (initializer(), aggregator(key, value, aggregate)) as Kafka Streams builds them for the operation
        self.functions = aggregation_functions(aggregation, initializer, aggregator, reducer)

    def process(self, key, value, context, out, state) -> None:
        if key is None or (self.stream_time_skips_null_values and value is None):
            return  # Kafka Streams skips it (dropped-records, not a late record)
        self.needs_state(state)
        if context.timestamp is None or context.stream_time is None:
            raise ValueError(f"processor {self.name} needs record timestamps and stream time")
        slot = self.state_slot
        current = state.values[slot]
        store = {} if current is ABSENT or self.reads_nothing_back else current
        self._batch_stream_time = context.stream_time
        closed = self._closed_windows(state) if self.emit_on_close else None
        if closed is not None:  # what the time-ordered store no longer returns (a window not emitted yet may be older)
            expire(store, closed.visible_from(self.retention) - 1, 0)
        elif self.observes_store_time:
            expire(store, self._observed_time(state), self.retention)
            self.note_store_operation(task_state_of(self, state))  # the record's fetch
        else:
            expire(store, self._store_time(context, state), self.retention)
        initializer, aggregator = self.functions
        pending = self._pending(state, slot) if self.cached else None
        options = {}
        if self.observes_store_time and closed is None:
            # Kafka Streams puts and forwards one window after the other: a processor reading the store
            # while a window is forwarded sees the record's later windows as they were, and the
            # aggregation then reads what it wrote into them. Its writes go into this same dict.
            state.values[slot], state.keys[slot] = store, key
            options = self._store_reads(lambda update: self._stored(key, update, context, out, state))
        self._in_record = True
        try:
            updates, dropped = self.algorithm(
                self.windows, store, key, value, context.timestamp, context.stream_time,
                lambda: self.call(context, initializer),
                lambda k, v, aggregate: self.call(context, aggregator, k, v, aggregate),
                **options,
            )
        finally:
            self._in_record = False
        for _ in range(dropped + expired_puts(self, updates, self._store_time(context, state))):
            out.append(DROPPED_LATE_TOPIC, None, None)
        self._wrote(updates, store, state)
        state.values[slot], state.keys[slot] = (store if store else ABSENT), key
        state.changed = True
        if closed is not None:
            self._emit_closed(closed, key, updates, context, out, state)
            return
        if self.cached:
            for start, _end, new, new_timestamp, _old in updates:
                # The window's latest value, forwarded at the flush (even if it expires meanwhile)
                # with this record's context: Kafka Streams' cache keeps one per windowed key.
                pending.pop(start, None)
                pending[start] = (new, new_timestamp, context)
            if updates:
                state.mark_dirty(slot, context)
            return
        if self.observes_store_time:
            return  # each window was forwarded as it was stored (_stored)
        for start, end, new, new_timestamp, old in updates:
            self._emit(key, start, end, new, new_timestamp, context, out, state, old)

    def _stored(self, key, update, context, out, state) -> None:
        """A window of a store a processor names was stored: the store's time moves; uncached, the
        window is forwarded now, before the record's next window is read."""
        start, end, new, new_timestamp, old = update
        self._observe(state, start)
        if not self.cached:
            self._emit(key, start, end, new, new_timestamp, context, out, state, old)

    def _store_reads(self, on_update: Callable) -> dict:
        """The algorithm's options when a processor shares the store: ``on_update(update)`` after each
        window is put, before the next is read."""
        return {"on_update": on_update}

    def _store_time(self, context, state) -> Optional[int]:
        """The store's time (:func:`.store_time`; a cogroup's store is shared: :mod:`.cogroup`)."""
        return store_time(self.windows, context.stream_time)

    def _wrote(self, updates, store: dict, state) -> None:
        """The record's updates were written to ``store`` (a shared store notes its stream time)."""

    def _observed_time(self, state) -> int:
        return task_state_of(self, state).values.get(observed_time_key(self.store), NO_TIME)

    def _observe(self, state, start: int) -> None:
        self.observe_put(task_state_of(self, state), start)

    def observe_put(self, task, start: int) -> None:
        """A window starting at ``start`` is put into the store (``task``: the task's state): Kafka Streams'
        store takes its start as its observed time if larger, whether the put is kept or not."""
        self.note_store_operation(task)  # the put, before its start is observed
        if self.emit_on_close:
            closed = self._closed_windows_of(task)
            closed.store_time = max(closed.store_time, start)
            return
        task.values[observed_time_key(self.store)] = max(task.values.get(observed_time_key(self.store), NO_TIME), start)

    def first_returned_start(self, task) -> int:
        """The smallest window start the store still returns (and keeps a put of): the segmented store's is
        after its observed time minus the retention; the time-ordered one of emit-on-close, at it."""
        if self.emit_on_close:
            return self._closed_windows_of(task).visible_from(self.retention)
        return task.values.get(observed_time_key(self.store), NO_TIME) - self.retention + 1

    def note_store_operation(self, task) -> None:
        """A fetch, read or put of the store (before the put's start is observed): an in-memory one cuts its map."""
        if self.removal_cut is not None:
            self.removal_cut.note(self.first_returned_start(task))

    def write_window(self, key, start: int, value, timestamp: Optional[int], context, state) -> None:
        """Store ``(value, timestamp)`` as the key's window ``start`` (None: delete it) without forwarding
        it (a user processor's write, :mod:`.user_dsl_window_store`); a cached store forwards the window at
        the flush with ``context``, as Kafka Streams' cache flush listener forwards whoever wrote it."""
        slot = self.state_slot
        pending = self._pending(state, slot) if self.cached else None  # notes the windows before the write
        store = state.values[slot]
        if store is ABSENT:
            store = state.values[slot] = {}
        if value is None:
            store.pop(start, None)
        else:
            store[start] = (value, timestamp)
        if not store and not self._store_mid_record():
            state.values[slot] = ABSENT
        state.keys[slot] = key
        state.changed = True
        if pending is not None:
            pending.pop(start, None)
            pending[start] = (value, context.timestamp if value is None else timestamp, context)
            state.mark_dirty(slot, context)
        if self.emit_on_close:  # what the window-close emit fetches from the store: this window, or not
            self._closed_windows(state).put(start, self.key_serde.serialize(key), state.raw_key, key,
                                            deleted=value is None)

    def _store_mid_record(self) -> bool:
        """Whether a processor of this store is storing a record's windows, so still holds the key's
        dict (a cogroup's inputs share the store: the processor writing may be another input's)."""
        return any(node._in_record for node in self.program.store_processors(self.store))

    def _closed_windows(self, state) -> ClosedWindows:
        return self._closed_windows_of(task_state_of(self, state))

    def _closed_windows_of(self, task) -> ClosedWindows:
        if self._closed_key not in task.values:
            task.values[self._closed_key] = ClosedWindows(self.store_in_memory, self.closed_segment_interval)
        return task.values[self._closed_key]

    def _emit_closed(self, closed: ClosedWindows, key, updates, context, out, state) -> None:
        """Note the windows this record wrote, then forward those that closed (all keys)."""
        key_bytes = self.key_serde.serialize(key)
        for start, _end, new, _timestamp, _old in updates:
            closed.put(start, key_bytes, state.raw_key, key, deleted=new is None)
        task = state.task
        # read before forwarding any: Kafka Streams forwards from a RocksDB iterator (one per segment of
        # the store), which does not see what a processor downstream writes meanwhile
        due = [(start, window_key, *task.group(source_key).values[self.state_slot][start])
               for start, source_key, window_key in self._due(closed, context)]
        for start, window_key, aggregate, timestamp in due:
            self._emit(window_key, start, start + self.size, aggregate, timestamp, context, out, state)

    def _due(self, closed: ClosedWindows, context) -> list:
        """The windows that closed with this record (time windows: after any record with a key)."""
        return closed.due(self.windows, context.stream_time - self.grace, self.retention)

    @staticmethod
    def _pending(state, slot: int) -> dict:
        """``{start: (aggregate, timestamp, context of its last update)}`` of the windows changed in
        this key group; the first call also notes the windows the store held (what Kafka's cache
        flush compares with, and sends as the old values)."""
        entry = state.cache_entry(slot)
        if entry is None:
            current = state.values[slot]
            entry = state.new_cache_entry(slot, ({} if current is ABSENT else dict(current), {}))
        return entry[1]

    def _emit(self, key, start, end, value, timestamp, context, out, state, old=None) -> None:
        record_context = dataclasses.replace(context, timestamp=timestamp)
        self.forward_update(key, Window(start, end), value, old, record_context, out, state)

    def end_task_batch(self, task) -> None:
        """Task-grouped: forget every key's windows the store no longer returns (Kafka Streams drops expired
        segments of all keys; cut by the store's time, as a record's reads are), so the state stays bounded."""
        stream_time, self._batch_stream_time = self._batch_stream_time, None
        if stream_time is None:
            return
        closed = task.values.get(self._closed_key) if self.emit_on_close else None
        horizon, retention = (store_time(self.windows, stream_time), self.retention) if closed is None else (
            closed.visible_from(self.retention) - 1, 0)
        if self.observes_store_time and closed is None:
            horizon = task.values.get(observed_time_key(self.store), NO_TIME)
        for group in task.all_groups():
            windows = group.values[self.state_slot]
            if windows is not ABSENT and any(start <= horizon - retention for start in windows):
                expire(windows, horizon, retention)
                group.values[self.state_slot] = windows if windows else ABSENT

    def flush_entries(self, state, context) -> list:
        """Kafka Streams' cache flush (``CachingWindowStore``, keyed by window): each window changed in
        this key group, once, with its final value and the context of the record that last updated it,
        placed by that record's position among all keys' windows (``context``, the key's last update,
        places nothing: the cache's dirty windows leave it in the order of their own last updates)."""
        slot = self.state_slot
        entry = state.take_cache_entry(slot)
        before, pending = ({}, {}) if entry is None else entry
        key = state.keys[slot]
        entries = []
        for start, (value, timestamp, update_context) in pending.items():
            if value is None and start not in before:
                continue  # never stored: Kafka's caching store forwards nothing
            old = before.get(start, (None,))[0]  # the cache's old value: the store's at the last flush
            entries.append((update_context.position, functools.partial(
                self._flush_window, key, start, value, timestamp, update_context, state, old)))
        return entries

    def _flush_window(self, key, start: int, value, timestamp: int, context, state, old, out) -> None:
        self._emit(key, start, start + self.size, value, timestamp, context, out, state, old)


@register
class TimeWindowAggregate(_WindowAggregate):
    kind = "time_window_aggregate"
    algorithm = staticmethod(process_time_windows)


@register
class SlidingWindowAggregate(_WindowAggregate):
    kind = "sliding_window_aggregate"
    algorithm = staticmethod(process_sliding_windows)
    stream_time_skips_null_values = True
    key_indexed_on_close = True  # BuiltInDslStoreSuppliers: hasIndex = DslWindowParams.isSlidingWindow()

    def _store_reads(self, on_update: Callable) -> dict:
        """A sliding record reads several windows through one iterator of the segmented store, whose
        segments a processor may write while the record's earlier windows are forwarded."""
        return {"on_update": on_update, "segment_interval": dsl_segment_interval(self.retention),
                "live_cut": self.removal_cut}

    def _due(self, closed: ClosedWindows, context) -> list:
        """Kafka Streams checks only after a record it aggregated: not late, not early."""
        close_time = context.stream_time - self.grace
        if context.timestamp + self.size < close_time or context.timestamp < self.size:
            return []
        return closed.due_sliding(self.size, close_time, self.retention)


WINDOW_KINDS = {TimeWindowAggregate.kind, SlidingWindowAggregate.kind}


def build(factory, ctx, classes=(TimeWindowAggregate, SlidingWindowAggregate)) -> _WindowAggregate:
    """The runnable form of a time or sliding windowed aggregation (``classes``: the time and
    sliding classes to build: these, which read the task's stream time, or those with their own
    clocks, :mod:`.own_stream_time`)."""
    params = factory.params
    windows = params["windows"]
    what = f"windowed aggregation {factory.name}"
    if isinstance(windows, TimeWindows):
        cls, size = classes[0], windows.size_ms
    elif isinstance(windows, SlidingWindows):
        cls, size = classes[1], windows.time_difference_ms
    else:
        raise UnsupportedTopologyError(f"{what}: {type(windows).__name__} are not supported by the Spark runner")
    emit_strategy = params.get("emit_strategy", ON_WINDOW_UPDATE)
    if emit_strategy not in (ON_WINDOW_UPDATE, ON_WINDOW_CLOSE):
        raise UnsupportedTopologyError(f"{what}: emit strategy {emit_strategy!r} is not supported by the Spark runner")
    emit_on_close = emit_strategy == ON_WINDOW_CLOSE
    sub = ctx.subtopology
    store = next(s for s in sub.state_stores if s.name == params["store_name"])
    retention = store.retention_ms
    sliding = issubclass(cls, SlidingWindowAggregate)
    if retention is None:
        retention = 2 * size + windows.grace_ms if sliding else size + windows.grace_ms
    # check_dsl_store admits a processor naming the store of time and sliding windows (emitting on update
    # or on close; a cogroup's on update only)
    observes_store_time = read_by_user_processor(sub, store.name)
    if sliding and not (emit_on_close or observes_store_time or keeps_store_clock(windows, store, emit_strategy)):
        # A record not skipped outright (timestamp >= stream time - grace - difference) reads the windows from
        # its timestamp - 2 x difference on: keep those (the segmented store drops whole segments). On window close,
        # a store a processor names or one kept short, the store's own retention cuts, by its time (window_close.py).
        retention = max(retention, 3 * size + windows.grace_ms + 1)
    aggregate = cls(factory.name, params["store_name"], ctx.cached(store.name), params["operation"], windows, size,
                    windows.grace_ms, retention, *user_aggregation(params),
                    key_serde=store.key_serde or ctx.default_key_serde, emit_on_close=emit_on_close)
    # windows are keys of their own for the stores after it: their groups are the task state's
    check_own_window_reads(sub, factory, what)
    aggregate.task_grouped = aggregate.task_grouped or keeps_state_downstream(sub, factory)
    aggregate.observes_store_time, aggregate.store_in_memory = observes_store_time, store.persistent is False
    aggregate.closed_segment_interval = supplier_segment_interval(store) if emit_on_close else None
    aggregate.reads_nothing_back, aggregate.algorithm = reads_nothing_back(store), stamps_of(store, cls.algorithm)
    aggregate.removal_cut = RemovalCut() if sliding and observes_store_time and store.persistent is False else None
    return aggregate
