"""Windowed aggregations on the Spark runner: ``group_by[_key]().windowed_by(TimeWindows |
SlidingWindows).count()/reduce()/aggregate()``, as Kafka Streams 4.3.1's
``KStreamWindowAggregate`` and ``KStreamSlidingWindowAggregate`` compute them.

State
    A key's windows are one state slot of the task's state row for that key:
    ``{window_start: (aggregate, timestamp)}`` (Kafka Streams' window store holds the same: the
    aggregate and the largest timestamp of the records in it). A window whose start is at or
    before ``stream time - retention`` is dropped when its key is next processed: no record can
    update it or read it any more. Retention: the store's (size + grace unless ``Materialized``
    sets more); for sliding windows at least 3 x time difference + grace + 1, the oldest window a
    record still within reach reads.

Time and lateness
    Every record carries its timestamp (``context.timestamp``) and the task's stream time after
    it (``context.stream_time``: the largest timestamp of the records with a key, and for sliding
    windows a value, processed so far; see :mod:`dagster_kstreams.spark.event_time`). A window
    closes when ``end <= stream time - grace`` (sliding windows: ``end < stream time - grace``,
    their end is inclusive). A record for a closed window is dropped: one row on
    :data:`~dagster_kstreams.spark.program.DROPPED_LATE_TOPIC` per (record, closed window), as
    Kafka Streams records its dropped-records sensor once per closed window.

Null keys and values
    A record with a null key is skipped (and does not advance stream time). Time windows
    aggregate null values like any other (``count`` counts them, ``reduce`` calls the reducer with
    ``None``); sliding windows skip them (and they do not advance stream time either).

Emission
    Downstream processors receive ``Windowed(key, Window(start, end))`` and the window's new
    aggregate, with the aggregate's timestamp as the record timestamp: with the record cache on
    (the default) once per changed window per micro-batch (a window that did not exist before the
    batch and has no value after it is not forwarded); with ``with_caching_disabled()`` in
    ``Materialized``, on every update.

Exactness
    Kafka Streams keeps the stream time of a windowed processor in the processor: it sees only
    the records reaching that processor. The runner's stream time is the task's, so a windowed
    aggregation is refused (:class:`~dagster_kstreams.spark.compile.UnsupportedTopologyError`)
    when some record of the task may not reach it unchanged in key (and, sliding windows, value)
    nullness: a filter, branch or flat_map between source and aggregation, another source in the
    sub-topology, and so on (``.repartition()`` before grouping moves the aggregation into its own
    sub-topology). So are ``suppress`` and stores downstream of the windowed table in the same
    sub-topology (the state row is keyed by the source key, not the windowed key).
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable, Optional

from dagster_kstreams.spark.program import DROPPED_LATE_TOPIC, ExecNode, STREAM_TIME_KINDS, WINDOW_KINDS, _ABSENT
from dagster_kstreams.topology.graph import NodeKind
from dagster_kstreams.topology.serdes import Window, Windowed
from dagster_kstreams.topology.windows import SlidingWindows, TimeWindows

__all__ = [
    "COMPILED_KINDS", "exec_node", "forward", "flush", "store_entries",
    "process_time_windows", "process_sliding_windows", "expire", "aggregation_functions",
]

COMPILED_KINDS = {NodeKind.WINDOWED_AGGREGATE}

# Between the source and a windowed aggregation in one sub-topology, only processors that pass
# every record on with its key (and value nullness: all but map_values) unchanged.
_PASS_ALL_KINDS = {NodeKind.SOURCE, NodeKind.MERGE, NodeKind.PEEK, NodeKind.PRINT}
_PASS_KEYS_KINDS = _PASS_ALL_KINDS | {NodeKind.MAP_VALUES}
# Processors that keep state per key: wrong downstream of a windowed table in one sub-topology.
_KEYED_STATE_KINDS = {
    NodeKind.AGGREGATE, NodeKind.WINDOWED_AGGREGATE, NodeKind.TO_TABLE, NodeKind.TABLE_SOURCE,
    NodeKind.STREAM_TABLE_JOIN, NodeKind.TABLE_TABLE_JOIN, NodeKind.TABLE_TABLE_JOIN_MERGE,
    NodeKind.TABLE_AGGREGATE, NodeKind.JOIN_WINDOW, NodeKind.STREAM_STREAM_JOIN,
}


def _unsupported(message: str):
    from dagster_kstreams.spark.compile import UnsupportedTopologyError

    return UnsupportedTopologyError(message)


# -- compile time ----------------------------------------------------------------------------
def exec_node(compiled, factory) -> ExecNode:
    """The runnable form of a windowed aggregation (``compiled`` is the CompiledTopology)."""
    params = factory.params
    windows = params["windows"]
    what = f"windowed aggregation {factory.name}"
    if isinstance(windows, TimeWindows):
        kind, size = "time_window_aggregate", windows.size_ms
    elif isinstance(windows, SlidingWindows):
        kind, size = "sliding_window_aggregate", windows.time_difference_ms
    else:
        raise _unsupported(f"{what}: {type(windows).__name__} are not supported by the Spark runner")
    if params.get("emit_strategy", "on_window_update") != "on_window_update":
        raise _unsupported(f"{what}: emit strategy {params['emit_strategy']!r} is not supported; the Spark runner "
                           "emits on window update")
    sub = next(s for s in compiled.topology.subtopologies if any(n.name == factory.name for n in s.nodes))
    _check_upstream(compiled, sub, factory, kind, what)
    _check_downstream(sub, factory, what)
    store = next(s for s in sub.state_stores if s.name == params["store_name"])
    retention = store.retention_ms
    if retention is None:
        retention = size + windows.grace_ms if kind == "time_window_aggregate" else 2 * size + windows.grace_ms
    if kind == "sliding_window_aggregate":
        # A record not skipped outright (timestamp >= stream time - grace - difference) reads the
        # windows from its timestamp - 2 x difference on: keep those, whatever the retention.
        retention = max(retention, 3 * size + windows.grace_ms + 1)
    operation = params["operation"]
    node = ExecNode(factory.name, kind, aggregation=operation, store=params["store_name"],
                    options={"windows": windows, "size": size, "grace": windows.grace_ms, "retention": retention})
    node.cached = store.caching
    from dagster_kstreams.spark.compile import with_aggregation_functions

    return with_aggregation_functions(node, params)


def _check_upstream(compiled, sub, factory, kind: str, what: str) -> None:
    allowed = _PASS_ALL_KINDS if kind == "sliding_window_aggregate" else _PASS_KEYS_KINDS
    ancestors = set()
    for node in _reachable(sub, factory.parents, lambda node: node.parents):
        ancestors.add(node.name)
        if node.kind not in allowed:
            raise _unsupported(
                f"{what}: {node.name} ({node.kind.value}) lies between the source and the aggregation in sub-topology "
                f"{sub.id}. Kafka Streams' windowed processor keeps its own stream time over the records that reach "
                "it; the Spark runner uses the task's stream time, so every record of the task must reach the "
                "aggregation with its key (and, for sliding windows, its value) unchanged. Add .repartition() "
                "before grouping to give the aggregation a sub-topology of its own")
    for node in sub.nodes:
        if node.kind is NodeKind.SOURCE and node.name not in ancestors:
            raise _unsupported(
                f"{what}: the records of source {node.name} in sub-topology {sub.id} do not reach the aggregation but "
                "would advance the task's stream time (Kafka Streams' windowed processor only sees its own records); "
                "add .repartition() before grouping")
    if kind == "sliding_window_aggregate":
        others = [n for n in sub.nodes if n.name != factory.name and (
            n.kind in (NodeKind.JOIN_WINDOW, NodeKind.STREAM_STREAM_JOIN)
            or (n.kind is NodeKind.WINDOWED_AGGREGATE and not isinstance(n.params["windows"], SlidingWindows)))]
        if others:
            raise _unsupported(
                f"{what}: sliding windows skip records with a null value (they do not advance their stream time), "
                f"while {others[0].name} ({others[0].kind.value}) in the same sub-topology {sub.id} counts them; the "
                "Spark runner has one stream time per task. Add .repartition() before grouping")


def _reachable(sub, start, next_names):
    """The nodes of ``sub`` reachable from the names ``start`` by ``next_names`` (parents or
    children), each once, ``start`` included."""
    todo, seen = list(start), set()
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        node = sub.node(name)
        yield node
        todo.extend(next_names(node))


def _check_downstream(sub, factory, what: str) -> None:
    for node in _reachable(sub, factory.children, lambda node: node.children):
        if node.kind is NodeKind.SUPPRESS:
            raise _unsupported(
                f"{what}: {node.name} suppresses its results; suppress emits on stream time across keys, which the "
                "Spark runner's per-key state cannot do")
        if node.kind in _KEYED_STATE_KINDS:
            raise _unsupported(
                f"{what}: {node.name} ({node.kind.value}) keeps state for the windowed keys in the same sub-topology "
                f"{sub.id}; the Spark runner keeps a sub-topology's state by source key. Add .repartition() after "
                "to_stream()")


# -- pure logic ------------------------------------------------------------------------------
# An update: (window_start, window_end, new aggregate or None (deleted), new timestamp).
Update = tuple


def expire(store: dict, stream_time: Optional[int], retention_ms: int) -> None:
    """Forget the windows Kafka Streams' store no longer returns (start <= stream time - retention)."""
    if stream_time is None or not store:
        return
    horizon = stream_time - retention_ms
    for start in [start for start in store if start <= horizon]:
        del store[start]


def process_time_windows(windows: TimeWindows, store: dict, key, value, timestamp: int, stream_time: int,
                         initializer: Callable, aggregator: Callable) -> tuple[list[Update], int]:
    """One record through ``KStreamWindowAggregate``: updates ``store`` (``{start: (agg, ts)}``),
    returns the updates in order and the number of closed windows the record was dropped from."""
    close_time = stream_time - windows.grace_ms
    updates, dropped = [], 0
    for start, end in windows.windows_for(timestamp):
        if end > close_time:
            old = store.get(start)
            if old is None:
                base, new_timestamp = initializer(), timestamp
            else:
                base, new_timestamp = old[0], max(timestamp, old[1])
            new = aggregator(key, value, base)
            _put(store, start, new, new_timestamp)
            updates.append((start, end, new, new_timestamp))
        else:
            dropped += 1
    return updates, dropped


def _put(store: dict, start: int, value, timestamp: int) -> None:
    if value is None:  # ValueTimestamp.make(null, ...) is null: the window is deleted
        store.pop(start, None)
    else:
        store[start] = (value, timestamp)


def _make(value, timestamp: int):
    return None if value is None else (value, timestamp)


class _Sliding:
    """One record through ``KStreamSlidingWindowAggregate`` (the reverse-iterator path, which
    Kafka Streams takes with its RocksDB and in-memory window stores)."""

    def __init__(self, difference: int, grace: int, store: dict, key, value, timestamp: int, stream_time: int,
                 initializer: Callable, aggregator: Callable):
        self.diff, self.store, self.key, self.value, self.ts = difference, store, key, value, timestamp
        self.close = stream_time - grace
        self.initializer, self.aggregator = initializer, aggregator
        self.updates: list[Update] = []
        self.dropped = 0

    def run(self) -> None:
        ts, diff = self.ts, self.diff
        if ts + diff < self.close:
            self.dropped += 1
            return
        if ts < diff:
            self._process_early()
            return
        self._process_reverse()

    def _update(self, start: int, current) -> None:
        """updateWindowAndForward: ``current`` is the window's (agg, ts) or None."""
        end = start + self.diff
        if end >= self.close:
            old = None if current is None else current[0]
            new = self.aggregator(self.key, self.value, old)
            new_timestamp = self.ts if old is None else max(self.ts, current[1])
            _put(self.store, start, new, new_timestamp)
            self.updates.append((start, end, new, new_timestamp))
        else:
            self.dropped += 1

    def _right_window(self, right_agg) -> None:
        """createCurrentRecordRightWindow: a copy of the aggregate of the records after this one."""
        start = self.ts + 1
        self.store[start] = right_agg
        self.updates.append((start, start + self.diff, right_agg[0], right_agg[1]))

    def _previous_right_window(self, start: int) -> None:
        self._update(start, _make(self.initializer(), self.ts))

    def _process_reverse(self) -> None:
        ts, diff = self.ts, self.diff
        low = max(0, ts - 2 * diff)
        starts = sorted((start for start in self.store if low <= start <= ts + 1), reverse=True)
        seen: set[int] = set()
        left_agg = right_agg = None
        left_created = right_created = False
        previous_ts = None
        for start in starts:
            current = self.store[start]
            seen.add(start)
            end = start + diff
            max_ts = current[1]
            if start == ts + 1:
                right_created = True
            elif end > ts:
                if right_agg is None:
                    right_agg = current
                self._update(start, current)
            elif end == ts:
                left_created = True
                self._update(start, current)
                if max_ts < ts:
                    previous_ts = max_ts
                else:
                    return
            else:
                left_agg = current
                previous_ts = max_ts
                break
        self._create_windows(seen, right_agg, left_agg, left_created, right_created, previous_ts)

    def _create_windows(self, seen, right_agg, left_agg, left_created, right_created, previous_ts) -> None:
        ts, diff = self.ts, self.diff
        if previous_ts is not None:
            previous_right_start = previous_ts + 1
            if previous_right_start not in seen and previous_right_start + diff >= ts:
                self._previous_right_window(previous_right_start)
        if not left_created:
            if previous_ts is not None and ts - diff <= previous_ts:
                current = _make(left_agg[0], ts)
            else:
                current = _make(self.initializer(), ts)
            self._update(ts - diff, current)
        if not right_created and right_agg is not None and right_agg[1] > ts:
            self._right_window(right_agg)

    def _process_early(self) -> None:
        """0 <= timestamp < time difference: the record goes into the window [0, difference]."""
        ts = self.ts
        if ts < 0:
            raise ValueError(f"sliding windows: record timestamp {ts} is negative")
        combined = None
        right_agg = None
        right_created = False
        seen: set[int] = set()
        previous_ts = None
        for start in sorted(start for start in self.store if 0 <= start <= ts + 1):
            current = self.store[start]
            seen.add(start)
            if start == 0:
                combined = current
                if current[1] < ts:
                    previous_ts = current[1]
            elif start <= ts:
                right_agg = current
                self._update(start, current)
            else:  # start == ts + 1
                right_created = True
        if right_agg is None and combined is not None and combined[1] > ts:
            right_agg = combined
        if not right_created and right_agg is not None and right_agg[1] > ts:
            self._right_window(right_agg)
        if previous_ts is not None and previous_ts + 1 not in seen:
            self._previous_right_window(previous_ts + 1)
        if combined is None:
            self._update(0, _make(self.initializer(), ts))
        else:
            self._update(0, combined)


def process_sliding_windows(windows: SlidingWindows, store: dict, key, value, timestamp: int, stream_time: int,
                            initializer: Callable, aggregator: Callable) -> tuple[list[Update], int]:
    """One record (key and value not null) through ``KStreamSlidingWindowAggregate``; as
    :func:`process_time_windows`."""
    run = _Sliding(windows.time_difference_ms, windows.grace_ms, store, key, value, timestamp, stream_time,
                   initializer, aggregator)
    run.run()
    return run.updates, run.dropped


def aggregation_functions(operation: str, initializer=None, aggregator=None, reducer=None):
    """``(initializer(), aggregator(key, value, aggregate))`` as Kafka Streams builds them."""
    if operation == "count":
        return (lambda: 0), (lambda key, value, aggregate: aggregate + 1)
    if operation == "reduce":
        return (lambda: None), (lambda key, value, aggregate: value if aggregate is None else reducer(aggregate, value))
    return initializer, aggregator


# -- run time --------------------------------------------------------------------------------
def forward(program, node: ExecNode, key, value, context, out, state) -> None:
    """Process one record arriving at a windowed aggregation (called by ``SubtopologyProgram._forward``)."""
    sliding = node.kind == "sliding_window_aggregate"
    if key is None or (sliding and value is None):
        return  # Kafka Streams skips it (dropped-records, not a late record)
    if state is None:
        raise ValueError(f"processor {node.name} needs state but runs in a stateless pass")
    if context.timestamp is None or context.stream_time is None:
        raise ValueError(f"processor {node.name} needs record timestamps and stream time")
    slot = node.state_slot
    current = state.values[slot]
    store = {} if current is _ABSENT else current
    expire(store, context.stream_time, node.options["retention"])
    functions = node.options.get("_functions")
    if functions is None:
        functions = aggregation_functions(node.aggregation, node.initializer, node.aggregator, node.reducer)
        node.options["_functions"] = functions
    initializer, aggregator = functions
    pending = _pending(state, slot) if node.cached else None
    process = process_sliding_windows if sliding else process_time_windows
    updates, dropped = process(
        node.options["windows"], store, key, value, context.timestamp, context.stream_time,
        lambda: program._call(node, context, initializer),
        lambda k, v, aggregate: program._call(node, context, aggregator, k, v, aggregate),
    )
    for _ in range(dropped):
        out.append(DROPPED_LATE_TOPIC, None, None)
    state.values[slot] = store if store else _ABSENT
    state.keys[slot] = key
    state.changed = True
    if node.cached:
        for start, _end, new, new_timestamp in updates:
            # The window's latest value, forwarded at the flush (even if it expires meanwhile).
            pending.pop(start, None)
            pending[start] = (new, new_timestamp)
        if updates:
            state.dirty.add(slot)
        return
    for start, end, new, new_timestamp in updates:
        _emit(program, node, key, start, end, new, new_timestamp, context, out, state)


def _pending(state, slot: int) -> dict:
    pending = getattr(state, "window_pending", None)
    if pending is None:
        pending = state.window_pending = {}
        state.window_before = {}
    if slot not in pending:
        pending[slot] = {}
        current = state.values[slot]
        # The windows the store held before the key group: what Kafka's cache flush compares with.
        state.window_before[slot] = set() if current is _ABSENT else set(current)
    return pending[slot]


def _emit(program, node, key, start, end, value, timestamp, context, out, state) -> None:
    windowed = Windowed(key, Window(start, end))
    record_context = dataclasses.replace(context, timestamp=timestamp)
    for child in node.children:
        program._forward(child, windowed, value, record_context, out, state)


def flush(program, node: ExecNode, state, out, context) -> None:
    """Kafka Streams' cache flush: each window changed in this key group, once, with its final value."""
    slot = node.state_slot
    pending = state.window_pending.pop(slot, {})
    before = state.window_before.pop(slot, set())
    size = node.options["size"]
    key = state.keys[slot]
    for start, (value, timestamp) in pending.items():
        if value is None and start not in before:
            continue  # never stored: Kafka's caching store forwards nothing
        _emit(program, node, key, start, start + size, value, timestamp, context, out, state)


def store_entries(node: ExecNode, key, windows: Any):
    """A key's stored windows as ``(Windowed(key, Window(start, end)), aggregate)`` pairs (read_store)."""
    size = node.options["size"]
    for start in sorted(windows):
        yield Windowed(key, Window(start, start + size)), windows[start][0]


assert WINDOW_KINDS <= STREAM_TIME_KINDS
