"""Stream-stream joins (``KStream.join(other, joiner, JoinWindows)``) on the Spark runner.

The DSL builds a stream-stream join as Kafka Streams does: each side goes through a
``JOIN_WINDOW`` processor (``KStreamJoinWindow``) that buffers the side's records in a window
store, then through a ``STREAM_STREAM_JOIN`` processor (``KStreamKStreamJoin`` left or right
side) that looks the record up in the *other* side's buffer, and both join processors feed a
``STREAM_STREAM_JOIN_MERGE``. Both sides are in one sub-topology (co-partitioned, repartitioned
by the DSL when their keys changed) and every record reaching the join carries the source key,
so the two buffers of one key are two state slots of that key's state row.

Kafka Streams 4.3.1, as run here (inner joins):

* ``KStreamJoinWindow`` forwards the record to its join processor first, then stores it, and
  only when key and value are not null (a null value is not stored: a window store that retains
  duplicates ignores it).
* The join processor skips records with a null key or a null value. Otherwise it reads the
  other buffer for the key over ``[max(0, t - before), max(0, t + after)]`` where, for the left
  ("this") side, ``before``/``after`` are the JoinWindows' and, for the right side, swapped; each
  match is joined (``joiner(key, left_value, right_value)``) with the timestamp
  ``max(t, t_other)``, in the buffer's order (timestamp, then arrival).
* A window store keeps records for ``retention = before + after + grace`` behind its observed
  stream time ``T``: a lookup returns no record older than ``T - retention + 1``; a record whose
  segment (``segmentInterval = max(retention / 2, 60 s)``) is already expired when it is put is
  not stored and is counted as dropped (here: a row on ``program.DROPPED_LATE_TOPIC``). It is
  still joined with the other buffer first (the lookup runs before the put).

Observed stream time: Kafka Streams keeps one per window store (the largest timestamp stored
in it). The runner carries one stream time per task (``context.stream_time``: the largest
timestamp of any keyed record of the task), so both buffers are expired by the task's stream
time; see the README, "Semantics that differ from Kafka Streams". The compile step refuses
topologies where that task stream time would see records the join's stores do not (other
sources, processors between a source and its join window).

A key's buffers are pruned (records no lookup can return any more) whenever the key is
processed; Kafka Streams drops whole expired segments of all keys instead. Results are the same.

Left and outer joins are refused at compile time: Kafka Streams emits a left/outer record that
found no partner only once the task's stream time closes its window (plus grace), when a
record of *any* key advances it, by scanning one store shared by all keys in timestamp order
(throttled by the smallest pending timestamp, itself a task-wide value). Here a key's state is
only visited when that key has records in a micro-batch. Spark's event-time timeouts could visit
idle keys, but only in a later micro-batch, with one carried time, never after the last
micro-batch while no-data micro-batches are off, and they drop every record behind the
watermark (late records that Kafka Streams still joins within the grace period). Processing-time
timeouts follow the wall clock, not stream time.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from dagster_kstreams.spark.program import DROPPED_LATE_TOPIC, ExecNode
from dagster_kstreams.topology.graph import NodeKind

__all__ = ["COMPILED_KINDS", "RUN_KINDS", "exec_node", "forward", "visible", "segment_live", "expire"]

COMPILED_KINDS = {NodeKind.JOIN_WINDOW, NodeKind.STREAM_STREAM_JOIN, NodeKind.STREAM_STREAM_JOIN_MERGE}
RUN_KINDS = {"join_window", "stream_stream_join"}

# Processors that pass records through unchanged (and see every record of their parent).
_TRANSPARENT = {NodeKind.SOURCE}


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
        (parent,) = factory.parents
        source = sub.node(parent)
        return ExecNode(
            factory.name, "join_window", store=params["store_name"],
            options={"retention": retention,
                     "key_serde": source.serdes.get("key_serde") or compiled.default_key_serde},
        )
    if factory.kind is NodeKind.STREAM_STREAM_JOIN:
        join_type = params["join_type"]
        if join_type != "inner":
            raise _unsupported(
                f"processor {factory.name} ({factory.kind.value}) is a {join_type} stream-stream join: Kafka Streams "
                "emits a record without a partner once the task's stream time (advanced by a record of any key) "
                "closes its window; the Spark runner visits a key's state only when that key has records (Spark's "
                "event-time timeouts drop late records and never fire after the last micro-batch), so only inner "
                "stream-stream joins are supported")
        this_side = params["side"] == "this"
        before, after = (windows.before_ms, windows.after_ms) if this_side else (windows.after_ms, windows.before_ms)
        joiner = compiled._function(factory, params["joiner"]).as_joiner()
        other_store = params["other_store_name"] if this_side else params["this_store_name"]
        return ExecNode(
            factory.name, "stream_stream_join", fn=joiner,
            options={"this_side": this_side, "before": before, "after": after, "retention": retention,
                     "other_store": other_store},
        )
    raise _unsupported(f"processor {factory.name} ({factory.kind.value}) is not supported by the Spark runner yet")


def _check_subtopology(compiled, sub, window_node) -> None:
    """The join's buffers expire by the task's stream time: every record the task reads must
    reach a join window unchanged, as it does in Kafka Streams' stores (see the module docstring)."""
    windows = [node for node in sub.nodes if node.kind is NodeKind.JOIN_WINDOW]
    for node in windows:
        for parent_name in node.parents:
            parent = sub.node(parent_name)
            if parent.kind not in _TRANSPARENT:
                raise _unsupported(
                    f"processor {node.name} ({node.kind.value}) buffers the records of {parent.name} "
                    f"({parent.kind.value}) for a stream-stream join; the Spark runner expires join buffers by the "
                    "task's stream time, which is only the buffers' own time when every record the task reads "
                    "goes straight from a source into a join window: put the processors before the join into "
                    "their own sub-topology (e.g. repartition()) or after the join")
    for node in sub.nodes:
        if node.kind is NodeKind.SOURCE:
            for child in node.children:
                if sub.node(child).kind is not NodeKind.JOIN_WINDOW:
                    raise _unsupported(
                        f"source {node.name} of sub-topology {sub.id} feeds {child} ({sub.node(child).kind.value}) "
                        f"besides the stream-stream join {window_node.name}; the Spark runner expires join buffers "
                        "by the task's stream time, which would count these records too")
    if len(windows) != 2:
        raise _unsupported(
            f"sub-topology {sub.id} holds {len(windows)} join windows; the Spark runner runs one stream-stream join "
            "per sub-topology")


# -- run time -----------------------------------------------------------------------------
def forward(program, node: ExecNode, key, value, context, out, state) -> None:
    """Process one record arriving at a join window or join processor
    (called by ``SubtopologyProgram._forward``)."""
    from dagster_kstreams.spark.program import _ABSENT

    if state is None:
        raise ValueError(f"processor {node.name} needs its join buffers but runs in a stateless pass")
    options = node.options
    stream_time = context.stream_time
    if stream_time is None or context.timestamp is None:
        raise ValueError(f"processor {node.name} needs record timestamps and the task's stream time")
    if node.kind == "join_window":
        for child in node.children:  # KStreamJoinWindow: forward first, then store
            program._forward(child, key, value, context, out, state)
        if key is None or value is None:
            return
        retention = options["retention"]
        slot = node.state_slot
        buffer = state.values[slot]
        buffer = [] if buffer is _ABSENT else buffer
        if segment_live(context.timestamp, stream_time, retention):
            buffer = insert(buffer, context.timestamp, value)
        else:
            out.append(DROPPED_LATE_TOPIC, options["key_serde"].serialize(key), None)
        buffer = expire(buffer, stream_time, retention)
        state.values[slot] = buffer if buffer else _ABSENT
        state.keys[slot] = key
        state.changed = True
        return
    if node.kind == "stream_stream_join":
        if key is None or value is None:
            return  # skipped (Kafka Streams counts it as dropped, not as late)
        slot = program.store_slots[options["other_store"]]
        buffer = state.values[slot]
        if buffer is _ABSENT:
            return
        retention = options["retention"]
        matches = visible(buffer, context.timestamp, options["before"], options["after"], stream_time, retention)
        kept = expire(buffer, stream_time, retention)
        if len(kept) != len(buffer):
            state.values[slot] = kept if kept else _ABSENT
            state.changed = True
        for other_time, other_value in matches:
            if options["this_side"]:
                joined = program._call(node, context, node.fn, key, value, other_value)
            else:
                joined = program._call(node, context, node.fn, key, other_value, value)
            joined_context = dataclasses.replace(context, timestamp=max(context.timestamp, other_time))
            for child in node.children:
                program._forward(child, key, joined, joined_context, out, state)
        return
    raise ValueError(f"processor {node.name}: unknown stream-stream join kind {node.kind!r}")
