"""Stream-stream joins (``KStream.join/left_join/outer_join(other, joiner, JoinWindows)``) on the
Spark runner.

The DSL builds a stream-stream join as Kafka Streams does: each side goes through a
``JOIN_WINDOW`` processor (``KStreamJoinWindow``) that buffers the side's records in a window
store, then through a ``STREAM_STREAM_JOIN`` processor (``KStreamKStreamJoin`` left or right
side) that looks the record up in the *other* side's buffer, and both join processors feed a
``STREAM_STREAM_JOIN_MERGE``. Both sides are in one sub-topology (co-partitioned, repartitioned
by the DSL when their keys changed) and every record reaching the join carries the source key,
so the two buffers of one key are two state slots of that key's state.

The sub-topology runs task-grouped (:mod:`dagster_kstreams.spark.task_state`): all records of
the task's micro-batch in processing order, with the task-level state Kafka Streams keeps next
to the per-key buffers. Kafka Streams 4.3.1, as run here:

* ``KStreamJoinWindow`` forwards the record to its join processor first, then stores it, and
  only when key and value are not null (a null value is not stored: a window store that retains
  duplicates ignores it, and its observed stream time does not move).
* A window store's observed stream time is the largest timestamp put into it (all keys). It
  keeps records for ``retention = before + after + grace`` behind that time: a lookup returns no
  record older than ``T - retention + 1``; a record whose segment (``segmentInterval =
  max(retention / 2, 60 s)``) is already expired when it is put is not stored and is counted as
  dropped (here: a row on ``program.DROPPED_LATE_TOPIC``). It is still joined with the other
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
  in arrival order. It is scanned (:func:`closed_outer_records`) unless ``min_time + after +
  grace >= stream time`` (Java ``long`` arithmetic: ``min_time`` starts at ``Long.MAX_VALUE``
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
import struct
from typing import Any, Optional

from dagster_kstreams.spark.program import DROPPED_LATE_TOPIC, ExecNode
from dagster_kstreams.topology.graph import NodeKind

__all__ = ["COMPILED_KINDS", "RUN_KINDS", "exec_node", "forward", "visible", "segment_live", "expire",
           "JoinTracker", "closed_outer_records", "prune_task"]

COMPILED_KINDS = {NodeKind.JOIN_WINDOW, NodeKind.STREAM_STREAM_JOIN, NodeKind.STREAM_STREAM_JOIN_MERGE}
RUN_KINDS = {"join_window", "stream_stream_join"}

# Processors that keep the record key (the join key must be the source key).
_KEY_PRESERVING = {NodeKind.SOURCE, NodeKind.FILTER, NodeKind.MAP_VALUES, NodeKind.FLAT_MAP_VALUES, NodeKind.PEEK,
                   NodeKind.MERGE, NodeKind.BRANCH, NodeKind.BRANCH_CHILD}


def _unsupported(message: str):
    from dagster_kstreams.spark.compile import UnsupportedTopologyError

    return UnsupportedTopologyError(message)


# -- pure logic (Kafka Streams' window store and join bounds) ------------------------------
def segment_interval(retention_ms: int) -> int:
    """``Stores.persistentWindowStore``'s default segment interval."""
    return max(retention_ms // 2, 60_000)


def segment_live(timestamp: int, stream_time: int, retention_ms: int) -> bool:
    """Whether a window store with observed stream time ``stream_time`` (already including
    ``timestamp``) stores a record put at ``timestamp`` (``AbstractSegments.getOrCreateSegmentIfLive``).
    Java's ``long`` division truncates toward zero."""
    interval = segment_interval(retention_ms)
    return _jdiv(timestamp, interval) >= _jdiv(stream_time - retention_ms, interval)


def _jdiv(a: int, b: int) -> int:
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


def visible(buffer, timestamp: int, before_ms: int, after_ms: int, stream_time: int, retention_ms: int):
    """The buffered ``(timestamp, value)`` entries a record at ``timestamp`` joins: Kafka Streams'
    ``fetch(key, max(0, t - before), max(0, t + after))`` on a store whose observed stream time
    is ``stream_time`` (nothing older than ``stream_time - retention + 1``), in store order."""
    low = max(0, timestamp - before_ms, stream_time - retention_ms + 1)
    high = max(0, timestamp + after_ms)
    return [entry for entry in buffer if low <= entry[0] <= high]


def expire(buffer, stream_time: int, retention_ms: int):
    """The entries any later lookup can still return (store time only grows)."""
    low = stream_time - retention_ms + 1
    return [entry for entry in buffer if entry[0] >= low]


def insert(buffer, timestamp: int, value) -> list:
    """``buffer`` plus the new entry, in store order: timestamp, then arrival (stable)."""
    position = len(buffer)
    while position and buffer[position - 1][0] > timestamp:
        position -= 1
    return [*buffer[:position], (timestamp, value), *buffer[position:]]


# Java's Long.MAX_VALUE and the join side byte of Kafka Streams' TimestampedKeyAndJoinSide.
LONG_MAX = (1 << 63) - 1
LEFT, RIGHT = 1, 0


def jlong(value: int) -> int:
    """``value`` as a Java ``long`` (two's complement overflow)."""
    return ((value + (1 << 63)) % (1 << 64)) - (1 << 63)


@dataclasses.dataclass
class JoinTracker:
    """Kafka Streams' ``TimeTracker`` of one join in one task, and the join's outer-join store:
    ``outer`` maps ``(timestamp, side, raw key)`` to the list of pending ``(key, value)``."""

    stream_time: int = -1
    min_time: int = LONG_MAX
    outer: dict = dataclasses.field(default_factory=dict)


def outer_store_order(store_key) -> bytes:
    """The outer-join store's byte order: 8-byte timestamp, side byte, serialized key."""
    timestamp, side, raw_key = store_key
    return struct.pack(">q", timestamp) + bytes((side,)) + raw_key


def closed_outer_records(tracker: JoinTracker, this_after_ms: int, before_ms: int, after_ms: int, grace_ms: int):
    """``emitNonJoinedOuterRecords`` (with no emit interval): the pending entries whose window
    closed, as ``[(timestamp, side, raw key, key, value)]`` in emission order, removed from
    ``tracker.outer``; ``tracker.min_time`` updated. ``this_after_ms`` is the calling side's
    ``after`` (the left side's is the windows' ``after``, the right side's their ``before``)."""
    if jlong(tracker.min_time + this_after_ms + grace_ms) >= tracker.stream_time:
        return []
    tracker.min_time = LONG_MAX
    emitted = []
    open_sides: set[int] = set()
    previous = None
    finished = False
    for store_key in sorted(tracker.outer, key=outer_store_order):
        timestamp, side, raw_key = store_key
        for key, value in tracker.outer[store_key]:
            tracker.min_time = timestamp
            if len(open_sides) == 2:
                finished = True
                break
            look_back = after_ms if side == LEFT else before_ms
            if jlong(timestamp + look_back + grace_ms) >= tracker.stream_time:
                open_sides.add(side)
                continue
            emitted.append((timestamp, side, raw_key, key, value))
            if previous is not None and previous != store_key:
                del tracker.outer[previous]
            previous = store_key
        if finished:
            break
    if previous is not None:
        del tracker.outer[previous]
    return emitted


# -- compile time -------------------------------------------------------------------------
def exec_node(compiled, factory) -> ExecNode:
    """The runnable form of a stream-stream join processor (``compiled``: the CompiledTopology)."""
    params = factory.params
    sub = next(s for s in compiled.topology.subtopologies if any(n.name == factory.name for n in s.nodes))
    if factory.kind is NodeKind.STREAM_STREAM_JOIN_MERGE:
        return ExecNode(factory.name, "merge")
    windows = params["windows"]
    retention = windows.size() + windows.grace_period_ms()
    if factory.kind is NodeKind.JOIN_WINDOW:
        _check_subtopology(compiled, sub, factory)
        return ExecNode(factory.name, "join_window", store=params["store_name"], options={"retention": retention})
    if factory.kind is NodeKind.STREAM_STREAM_JOIN:
        this_side = params["side"] == "this"
        before, after = (windows.before_ms, windows.after_ms) if this_side else (windows.after_ms, windows.before_ms)
        joiner = compiled._function(factory, params["joiner"]).as_joiner()
        other_store = params["other_store_name"] if this_side else params["this_store_name"]
        return ExecNode(
            factory.name, "stream_stream_join", fn=joiner,
            options={"this_side": this_side, "before": before, "after": after, "retention": retention,
                     "other_store": other_store, "tracker": params["this_store_name"],
                     "outer": bool(params.get("outer")), "outer_store": params.get("outer_store_name") is not None,
                     "windows_before": windows.before_ms, "windows_after": windows.after_ms,
                     "grace": windows.grace_period_ms()},
        )
    raise _unsupported(f"processor {factory.name} ({factory.kind.value}) is not supported by the Spark runner yet")


def _check_subtopology(compiled, sub, window_node) -> None:
    """What the task-grouped join needs: the join key is the source key (every processor between
    a source and a join window keeps the key; the DSL repartitions before the join otherwise),
    record timestamps, and one join per sub-topology."""
    windows = [node for node in sub.nodes if node.kind is NodeKind.JOIN_WINDOW]
    if len(windows) != 2:
        raise _unsupported(
            f"sub-topology {sub.id} holds {len(windows)} join windows; the Spark runner runs one stream-stream join "
            "per sub-topology")
    pending = [parent for node in windows for parent in node.parents]
    seen: set[str] = set()
    while pending:
        node = sub.node(pending.pop())
        if node.name in seen:
            continue
        seen.add(node.name)
        if node.kind not in _KEY_PRESERVING:
            raise _unsupported(
                f"processor {node.name} ({node.kind.value}) comes before the stream-stream join {window_node.name} "
                "in its sub-topology; the Spark runner keeps the join's state by source key, so only processors "
                "that keep the key (filter, map_values, flat_map_values, peek, merge, branch) may come before it")
        if node.kind is NodeKind.SOURCE and node.serdes.get("timestamp_extractor") is not None:
            raise _unsupported(
                f"source {node.name} of the stream-stream join {window_node.name} has a custom timestamp "
                "extractor; the Spark runner uses the record timestamps (FailOnInvalidTimestamp)")
        pending.extend(node.parents)


# -- run time -----------------------------------------------------------------------------
_STORE_TIMES = "stream_joins.store_times"


def _tracker(task, name: str) -> JoinTracker:
    return task.values.setdefault(f"stream_joins.tracker.{name}", JoinTracker())


def forward(program, node: ExecNode, key, value, context, out, state) -> None:
    """Process one record arriving at a join window or join processor
    (called by ``SubtopologyProgram._forward``; ``state`` is the source key's group of a
    task-grouped pass)."""
    from dagster_kstreams.spark.program import _ABSENT

    task = None if state is None else state.task
    if task is None:
        raise ValueError(f"processor {node.name} needs the task's state: its sub-topology runs task-grouped")
    options = node.options
    timestamp = context.timestamp
    if timestamp is None:
        raise ValueError(f"processor {node.name} needs record timestamps")
    if node.kind == "join_window":
        for child in node.children:  # KStreamJoinWindow: forward first, then store
            program._forward(child, key, value, context, out, state)
        if key is None or value is None:
            return
        retention = options["retention"]
        times = task.values.setdefault(_STORE_TIMES, {})
        store_time = times[node.store] = max(times.get(node.store, -1), timestamp)
        slot = node.state_slot
        buffer = state.values[slot]
        buffer = [] if buffer is _ABSENT else buffer
        if segment_live(timestamp, store_time, retention):
            buffer = insert(buffer, timestamp, value)
        else:
            out.append(DROPPED_LATE_TOPIC, state.raw_key, None)  # the source key's bytes
        buffer = expire(buffer, store_time, retention)
        state.values[slot] = buffer if buffer else _ABSENT
        state.keys[slot] = key
        state.changed = True
        return
    if node.kind == "stream_stream_join":
        this_side = options["this_side"]
        tracker = _tracker(task, options["tracker"])
        tracker.stream_time = max(tracker.stream_time, timestamp)
        if options["outer"] and key is None and value is not None:
            _join_with_null(program, node, key, value, context, out, state)  # KIP-962
            return
        if key is None or value is None:
            return  # skipped (Kafka Streams counts it as dropped, not as late)
        if options["outer_store"] and timestamp == tracker.stream_time:
            _emit_closed(program, node, tracker, context, out, task)
        slot = program.store_slots[options["other_store"]]
        buffer = state.values[slot]
        matches = []
        if buffer is not _ABSENT:
            retention = options["retention"]
            other_time = task.values.get(_STORE_TIMES, {}).get(options["other_store"], -1)
            matches = visible(buffer, timestamp, options["before"], options["after"], other_time, retention)
            kept = expire(buffer, other_time, retention)
            if len(kept) != len(buffer):
                state.values[slot] = kept if kept else _ABSENT
                state.changed = True
        other_side = RIGHT if this_side else LEFT
        for other_timestamp, other_value in matches:
            if options["outer_store"]:
                tracker.outer.pop((other_timestamp, other_side, state.raw_key), None)
            if this_side:
                joined = program._call(node, context, node.fn, key, value, other_value)
            else:
                joined = program._call(node, context, node.fn, key, other_value, value)
            joined_context = dataclasses.replace(context, timestamp=max(timestamp, other_timestamp))
            for child in node.children:
                program._forward(child, key, joined, joined_context, out, state)
        if options["outer"] and not matches:
            time_to = max(0, timestamp + options["after"])
            if not options["outer_store"] or time_to < tracker.stream_time:
                _join_with_null(program, node, key, value, context, out, state)
            else:
                tracker.min_time = min(tracker.min_time, timestamp)
                this_byte = LEFT if this_side else RIGHT
                tracker.outer.setdefault((timestamp, this_byte, state.raw_key), []).append((key, value))
        return
    raise ValueError(f"processor {node.name}: unknown stream-stream join kind {node.kind!r}")


def _join_with_null(program, node: ExecNode, key, value, context, out, state) -> None:
    if node.options["this_side"]:
        joined = program._call(node, context, node.fn, key, value, None)
    else:
        joined = program._call(node, context, node.fn, key, None, value)
    for child in node.children:
        program._forward(child, key, joined, context, out, state)


def _emit_closed(program, node: ExecNode, tracker: JoinTracker, context, out, task) -> None:
    options = node.options
    closed = closed_outer_records(tracker, options["after"], options["windows_before"], options["windows_after"],
                                  options["grace"])
    for timestamp, side, raw_key, key, value in closed:
        group = task.group(raw_key)
        emit_context = dataclasses.replace(context, timestamp=timestamp)
        if group.last_context is None:
            group.last_context = emit_context
        left, right = (value, None) if side == LEFT else (None, value)
        joined = program._call(node, emit_context, node.fn, key, left, right)
        for child in node.children:
            program._forward(child, key, joined, emit_context, out, group)


def prune_task(program, task) -> None:
    """Drop every key's buffered records that no lookup can return any more (by each store's
    observed time), as Kafka Streams drops expired segments of all keys."""
    from dagster_kstreams.spark.program import _ABSENT

    times = task.values.get(_STORE_TIMES, {})
    windows = [node for node in program.nodes if node.kind == "join_window" and node.store in times]
    if not windows:
        return
    for group in task.all_groups():
        for node in windows:
            buffer = group.values[node.state_slot]
            if buffer is _ABSENT:
                continue
            kept = expire(buffer, times[node.store], node.options["retention"])
            if len(kept) != len(buffer):
                group.values[node.state_slot] = kept if kept else _ABSENT
